#!/usr/bin/env bash
# A2A: blocking JSON-RPC SendMessage round trips on our host (`openwop serve`, release)
# beside the Python a2a-sdk's own server with an echo agent (sdk_echo_server.py), in one
# run, the same compiled load generator against both. Each server in turn is pinned to
# SERVER_CPU, the generator to LOADGEN_CPU; server CPU per request is read from
# /proc/<pid>/stat over the measured interval. Prints both rows and the ratios.
#   bench/a2a/run.sh            (DURATION, WARMUP, CONCURRENCY, SERVER_CPU, LOADGEN_CPU)
source "$(dirname "$0")/../lib.sh"
ours_port=${OURS_PORT:-18181}
sdk_port=${SDK_PORT:-18182}
venv=$target_dir/bench-a2a-venv
[[ -x $venv/bin/python ]] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r bench/a2a/requirements.txt
build_release

machine_header "A2A blocking SendMessage (echo), concurrency $CONCURRENCY, ${DURATION}s after ${WARMUP}s warm-up"
out=$bench_tmp/a2a.jsonl
for round in $(seq 1 "$ROUNDS"); do
  start_openwop ours "$ours_port"
  http_load openwop a2a "$server_pid" "http://127.0.0.1:$ours_port/a2a/jsonrpc" \
    --auth "$bench_auth" --a2a-skill echo >>"$out"
  stop_server "$server_pid"

  start_server sdk "$venv/bin/python" bench/a2a/sdk_echo_server.py "$sdk_port"
  wait_http "http://127.0.0.1:$sdk_port/.well-known/agent-card.json"
  http_load a2a-sdk-1.3.0 a2a "$server_pid" "http://127.0.0.1:$sdk_port/a2a/jsonrpc" >>"$out"
  stop_server "$server_pid"
done

report_rows "$out"
compare "$out" openwop a2a-sdk-1.3.0
echo "  targets: throughput >= 5x, server CPU per request <= 0.1x"
machine_footer
