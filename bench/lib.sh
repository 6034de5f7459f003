# Sourced by bench/*/run.sh: the release build, core pinning, servers that stop by
# themselves, the load generator, and the machine's state around a run.
#
#   SERVER_CPU   the core every server under test is pinned to (default 1)
#   LOADGEN_CPU  the core the load generator is pinned to (default 0)
#   DURATION     seconds measured per scenario (default 10), WARMUP seconds before (3)
#   CONCURRENCY  requests in flight (default 16)
#   ROUNDS       a2a, mcp, rest: how many times each side is measured, alternating
#                (default 1; a fresh host and data dir each time); the ratios
#                pool the rounds (against drift in what else the shared machine runs)
#   BENCH_NICE   niceness of every server and of the generator (default -10): the cores are
#                shared with other people's builds, and a process with more threads gets
#                more of a contended core; a raised priority keeps a single-threaded
#                baseline (axum with one worker, Python, Node) from being starved beside a
#                host with store threads. 0 measures them as the machine schedules them.
#   BENCH_SCHED  "rr": run every server and the generator under SCHED_RR (chrt -r 10)
#                instead, so each pinned core is in effect theirs while they want it (the
#                kernel still leaves 5% of every second to others). Only for a quick run:
#                it slows whatever else the machine runs on those cores meanwhile.
#   MAX_SERVER_SECONDS  every server is killed after this long whatever happens (900)
#   OPENWOP_BIN  the host binary to measure instead of the release build (a saved build of
#                an earlier commit, to compare two builds under the same machine load)
set -euo pipefail
bench_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$bench_root"
target_dir=${CARGO_TARGET_DIR:-$bench_root/target}
SERVER_CPU=${SERVER_CPU:-1}
LOADGEN_CPU=${LOADGEN_CPU:-0}
DURATION=${DURATION:-10}
WARMUP=${WARMUP:-3}
CONCURRENCY=${CONCURRENCY:-16}
MAX_SERVER_SECONDS=${MAX_SERVER_SECONDS:-900}
ROUNDS=${ROUNDS:-1}
BENCH_NICE=${BENCH_NICE:--10}
BENCH_SCHED=${BENCH_SCHED:-}
if [[ $BENCH_SCHED == rr ]]; then
  bench_prio=(chrt -r 10)
  bench_prio_text="SCHED_RR priority 10"
else
  bench_prio=(nice -n "$BENCH_NICE")
  bench_prio_text="nice $BENCH_NICE"
fi
bench_key=bench-key-0123456789abcdef
bench_auth="Bearer $bench_key"
bench_tmp=$(mktemp -d "${TMPDIR:-/tmp}/openwop-bench.XXXXXX")
bench_wrappers=()

stop_servers() {
  local p
  for p in "${bench_wrappers[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${bench_wrappers[@]}"; do wait "$p" 2>/dev/null || true; done
  bench_wrappers=()
}
bench_exit() {
  stop_servers
  rm -rf "$bench_tmp"
}
trap bench_exit EXIT

# The host and the load generator, release profile.
build_release() {
  echo "building (release profile) ..." >&2
  cargo build --release --locked -p openwop -p openwop-loadgen "$@" >&2
  openwop_bin=${OPENWOP_BIN:-$target_dir/release/openwop}
  loadgen_bin=$target_dir/release/openwop-loadgen
  bare_bin=$target_dir/release/openwop-bare-axum
}

# start_server NAME COMMAND... — runs COMMAND pinned to SERVER_CPU under `timeout`, so it
# ends by itself; sets server_pid to the process itself (not the wrapper).
start_server() {
  local name=$1
  shift
  "${bench_prio[@]}" taskset -c "$SERVER_CPU" timeout -k 5 "$MAX_SERVER_SECONDS" "$@" >"$bench_tmp/$name.log" 2>&1 &
  local wrapper=$!
  bench_wrappers+=("$wrapper")
  server_pid=
  for _ in $(seq 1 100); do
    server_pid=$(pgrep -P "$wrapper" | head -n1 || true)
    [[ -n $server_pid ]] && break
    sleep 0.05
  done
  if [[ -z $server_pid ]]; then
    echo "$name did not start; its log:" >&2
    cat "$bench_tmp/$name.log" >&2
    return 1
  fi
}

# stop_server PID — ends one server started by start_server.
stop_server() {
  kill "$1" 2>/dev/null || true
  for _ in $(seq 1 100); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.05; done
  kill -9 "$1" 2>/dev/null || true
}

# wait_http URL [tries] — until URL answers 2xx.
wait_http() {
  local url=$1 tries=${2:-600}
  for _ in $(seq 1 "$tries"); do
    curl -fsS -o /dev/null "$url" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "no answer from $url" >&2
  return 1
}

# start_openwop NAME PORT [serve flags...] — our host, release build, one tenant, no
# per-key rate limit (the load generator is one key).
start_openwop() {
  local name=$1 port=$2
  shift 2
  rm -rf "$bench_tmp/$name-data"
  mkdir -p "$bench_tmp/$name-data"
  RUST_LOG=${RUST_LOG:-warn} start_server "$name" "$openwop_bin" serve --listen "127.0.0.1:$port" \
    --data-dir "$bench_tmp/$name-data" --api-key "acme:$bench_key" --rate-limit 0 "$@"
  wait_http "http://127.0.0.1:$port/.well-known/openwop"
}

# loadgen ARGS... — the load generator pinned to LOADGEN_CPU.
loadgen() {
  "${bench_prio[@]}" taskset -c "$LOADGEN_CPU" "$loadgen_bin" "$@"
}

# http_load LABEL SCENARIO PID URL [more loadgen args...] — one measurement, one JSON line.
http_load() {
  local label=$1 scenario=$2 pid=$3 url=$4
  shift 4
  loadgen http --label "$label" --scenario "$scenario" --url "$url" --pid "$pid" \
    --concurrency "$CONCURRENCY" --duration "$DURATION" --warmup "$WARMUP" "$@"
}

machine_header() {
  echo "== $1"
  # A saved build (OPENWOP_BIN) is named as itself: HEAD is not what is measured then.
  local measured="commit: $(git rev-parse --short HEAD)"
  [[ -n ${OPENWOP_BIN:-} ]] && measured="host binary: $OPENWOP_BIN (not HEAD's build)"
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)   $measured   profile: release"
  echo "cores: $(nproc)   server pinned to CPU $SERVER_CPU, load generator to CPU $LOADGEN_CPU, both at $bench_prio_text"
  echo "loadavg before: $(cut -d' ' -f1-3 /proc/loadavg)"
}

machine_footer() {
  echo "loadavg after: $(cut -d' ' -f1-3 /proc/loadavg)"
}

# report FILE — prints each JSON line of FILE as one row.
report_rows() {
  python3 - "$1" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    lat = r["latency_ms"]
    print(f'  {r["label"]:<28} {r["rps"]:>9.1f} req/s  cpu {r["server_cpu_ms_per_req"] or 0:>7.3f} ms/req'
          f'  (server util {r["server_cpu_util"]:.2f}, loadgen util {r["loadgen_cpu_util"]:.2f})'
          f'  p50 {lat["p50"]:.2f} p99 {lat["p99"]:.2f} ms  errors {r["errors"]}'
          f'  per req: {r["server_context_switches_per_req"]} ctx switches, {r["server_write_syscalls_per_req"]} write/pwrite syscalls'
          + (f'  {r["also_name"]} {r["also_cpu_ms_per_req"]:.3f} ms/req' if r.get("also_name") else '')
          + (f'  steal {r["machine_steal"]:.0%}' if r.get("machine_steal") is not None else ''))
PY
}

# compare FILE OURS PEER — throughput and CPU-per-request ratios of two labels of FILE
# (several rows of one label, from ROUNDS > 1, are pooled: requests, seconds and CPU summed).
compare() {
  python3 - "$@" <<'PY'
import json, sys
path, ours, peer = sys.argv[1:4]
pooled, each = {}, {}
for r in map(json.loads, open(path)):
    p = pooled.setdefault(r["label"], {"requests": 0, "seconds": 0.0, "cpu": 0.0, "rounds": 0})
    p["requests"] += r["requests"]; p["seconds"] += r["seconds"]; p["cpu"] += r["server_cpu_ms"]; p["rounds"] += 1
    each.setdefault(r["label"], []).append((r["requests"] / r["seconds"], r.get("machine_steal") or 0.0))
a, b = pooled[ours], pooled[peer]
ra, rb = a["requests"] / a["seconds"], b["requests"] / b["seconds"]
ca, cb = a["cpu"] / max(a["requests"], 1), b["cpu"] / max(b["requests"], 1)
rounds = f" over {a['rounds']} rounds" if a["rounds"] > 1 else ""
print(f"  {ours} / {peer}{rounds}: throughput {ra / rb:.2f}x ({ra:.0f} vs {rb:.0f} req/s), "
      f"server CPU per request {ca / cb:.3f}x ({ca:.3f} vs {cb:.3f} ms)")
if a["rounds"] > 1 and len(each[ours]) == len(each[peer]):
    # Round by round (the i-th row of each label): the spread pooling hides, with the
    # larger steal of the two rows (a round with much of it measured the neighbours).
    print("    each round: " + ", ".join(
        f"{x / y:.2f}x" + (f" (steal {max(sx, sy):.0%})" if max(sx, sy) >= 0.05 else "")
        for (x, sx), (y, sy) in zip(each[ours], each[peer])))
if max(st for label in (ours, peer) for _, st in each[label]) >= 0.05:
    print("    (5% or more of the machine stolen in some rows: those rows measured the neighbours too)")
PY
}
