#!/usr/bin/env bash
# Instructions per request (valgrind's callgrind), for the host's release build and a
# baseline build, on each path: a count, so it does not move with the machine's load the
# way CPU time does on shared cores. One request at a time (a Python keep-alive client):
# every commit is its own group, so the writer's share is larger than under concurrency,
# and kernel time (system calls, the WAL's writes) is not counted at all. Use it to judge a
# change of the host's own code; the other benchmarks give the ratios against the peers.
# Counting starts after 100 warm-up requests and stops after N more.
#   bench/instructions/run.sh                  (N=300, PATHS="rest-get rest-create a2a mcp")
#   BASELINE_BIN=/path/to/saved/openwop bench/instructions/run.sh
# Needs valgrind (Debian package valgrind); OPENWOP_BIN as in bench/lib.sh.
source "$(dirname "$0")/../lib.sh"
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
n=${N:-300}
paths=${PATHS:-rest-get rest-create a2a mcp}
port=${OURS_PORT:-18795}
build_release

# count BIN PATH: instructions per request of BIN on PATH.
count() {
  local bin=$1 path=$2 dir=$bench_tmp/callgrind-$RANDOM
  mkdir -p "$dir"
  RUST_LOG=warn timeout -k 5 "$MAX_SERVER_SECONDS" valgrind --tool=callgrind --instr-atstart=no \
    --callgrind-out-file="$dir/cg.out" "$bin" serve --listen "127.0.0.1:$port" \
    --data-dir "$dir/data" --api-key "acme:$bench_key" --rate-limit 0 >"$dir/log" 2>&1 &
  local wrapper=$! vg=
  bench_wrappers+=("$wrapper")
  wait_http "http://127.0.0.1:$port/.well-known/openwop"
  # callgrind_control talks to valgrind itself, not to the `timeout` around it.
  vg=$(pgrep -P "$wrapper" | head -n1)
  python3 - "$port" "$bench_key" "$path" "$n" "$vg" <<'PY'
import http.client, json, subprocess, sys, time
port, key, path, n, pid = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
def req(method, url, body=None, headers=()):
    h = {"Authorization": "Bearer " + key, "Content-Type": "application/json", **dict(headers)}
    conn.request(method, url, body=json.dumps(body) if body is not None else None, headers=h)
    r = conn.getresponse()
    data = r.read()
    assert r.status < 300, (r.status, data[:300])
    return data
# The same requests as bench/loadgen's scenarios.
status_url = json.loads(req("POST", "/runs", {"workflowId": "echo", "inputs": {"n": 1}}))["statusUrl"]
mcp_headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2026-07-28",
               "Mcp-Method": "tools/call", "Mcp-Name": "echo"}
def one(i):
    if path == "rest-get":
        req("GET", status_url)
    elif path == "rest-create":
        req("POST", "/runs", {"workflowId": "echo", "inputs": {"n": i}})
    elif path == "a2a":
        message = {"messageId": f"ir-{time.time_ns()}-{i}", "role": "ROLE_USER", "parts": [{"data": {"n": i}}],
                   "metadata": {"openwop": {"skill": "echo"}}}
        req("POST", "/a2a/jsonrpc", {"jsonrpc": "2.0", "id": i, "method": "SendMessage",
                                     "params": {"message": message}}, {"A2A-Version": "1.0"})
    elif path == "mcp":
        meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}}
        req("POST", "/mcp", {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                             "params": {"name": "echo", "arguments": {"hello": f"n{i}"}, "_meta": meta}}, mcp_headers)
    else:
        raise SystemExit(f"unknown path {path}")
for i in range(100):
    one(i)
subprocess.run(["callgrind_control", "-i", "on", pid], check=True, capture_output=True)
for i in range(n):
    one(100 + i)
subprocess.run(["callgrind_control", "-i", "off", pid], check=True, capture_output=True)
PY
  callgrind_control -d "$vg" >/dev/null 2>&1
  sleep 1
  stop_server "$vg"
  # The dump taken on request holds the counted interval (the file ending in .1).
  python3 - "$dir/cg.out.1" "$n" <<'PY'
import sys
total = 0
for line in open(sys.argv[1]):
    if line.startswith("totals:"):
        total = int(line.split()[1])
print(total // int(sys.argv[2]))
PY
}

machine_header "instructions per request (callgrind), one request at a time, N=$n"
baseline=${BASELINE_BIN:-}
for path in $paths; do
  ours=$(count "$openwop_bin" "$path")
  if [[ -n $baseline ]]; then
    base=$(count "$baseline" "$path")
    python3 -c 'import sys; o, b = int(sys.argv[2]), int(sys.argv[3]); print(f"  {sys.argv[1]:<12} {o:>10,} vs {b:>10,} instructions per request (baseline {sys.argv[4]}): {o / b:.2f}x")' \
      "$path" "$ours" "$base" "$baseline"
  else
    printf '  %-12s %10s instructions per request\n' "$path" "$ours"
  fi
done
