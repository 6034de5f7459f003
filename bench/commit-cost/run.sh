#!/usr/bin/env bash
# Commit cost vs open streams: the server CPU (from /proc/<pid>/stat) of one unrelated echo
# run (an A2A blocking SendMessage, RUNS of them one at a time) while 0, 1,000 and 10,000
# SSE streams are open on other, waiting runs (spread over 100 `approval` runs), then
# again with none (a control). The idle
# CPU of the open streams (keep-alive comments) is measured at each step and shown
# separately. Our host (`openwop serve`, release) pinned to SERVER_CPU, the generator (which
# holds every stream on one thread) to LOADGEN_CPU.
# The host caps open connections at 10,000 and the echo runs need one: the top step holds
# 9,999 streams.
#   bench/commit-cost/run.sh    (LEVELS=0,1000,9999,0 RUNS=2000 IDLE=15; the last 0 is a
#   control: the same runs after the streams closed, against drift such as the database growing)
source "$(dirname "$0")/../lib.sh"
port=${OURS_PORT:-18681}
ulimit -n "$(ulimit -Hn)"
(( $(ulimit -n) > 10100 )) || { echo "ulimit -n $(ulimit -n) is too low" >&2; exit 1; }
build_release

machine_header "commit cost vs open streams"
start_openwop ours "$port"
loadgen commit-cost --base "http://127.0.0.1:$port" --auth "$bench_auth" --pid "$server_pid" \
  --levels "${LEVELS:-0,1000,9999,0}" --runs "${RUNS:-2000}" --idle "${IDLE:-15}" | tee "$bench_tmp/commit.jsonl"
stop_server "$server_pid"
python3 - "$bench_tmp/commit.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for r in rows[:-1]:
    print(f'  {r["streams_open"]:>6} streams: {r["server_cpu_ms_per_run"]:.3f} ms CPU per echo run '
          f'({r["server_cpu_ms_per_run_net_of_idle"]:.3f} net of {r["idle_cpu_ms_per_s"]:.2f} ms/s idle), '
          f'p50 {r["echo_latency_ms"]["p50"]:.2f} ms')
s = rows[-1]["summary"]
print('  ratio to 0 streams: ' + ', '.join(f'{x["streams"]}: {x["ratio_to_first"]:.2f}x (net {x["net_ratio_to_first"]:.2f}x)' for x in s)
      + '   target: flat')
PY
machine_footer
