#!/usr/bin/env bash
# REST: GET /runs/{id} (get-only) and POST /runs + GET (create+get) on our host
# (`openwop serve`, release, SQLite) beside a bare axum handler answering a fixed JSON
# body (openwop-bare-axum, release), in one run, the same compiled load generator against
# both. Each server in turn is pinned to SERVER_CPU, the generator to LOADGEN_CPU; server
# CPU per request is read from /proc/<pid>/stat over the measured interval.
#   bench/rest/run.sh           (DURATION, WARMUP, CONCURRENCY, SERVER_CPU, LOADGEN_CPU)
source "$(dirname "$0")/../lib.sh"
ours_port=${OURS_PORT:-18390}
bare_port=${BARE_PORT:-18391}
build_release

machine_header "REST get-only and create+get vs a bare axum handler, concurrency $CONCURRENCY, ${DURATION}s after ${WARMUP}s warm-up"
out=$bench_tmp/rest.jsonl
for round in $(seq 1 "$ROUNDS"); do
  start_server bare "$bare_bin" --listen "127.0.0.1:$bare_port" --max-seconds "$MAX_SERVER_SECONDS"
  wait_http "http://127.0.0.1:$bare_port/fixed"
  http_load bare-axum bare "$server_pid" "http://127.0.0.1:$bare_port/fixed" >>"$out"
  stop_server "$server_pid"

  start_openwop ours "$ours_port"
  http_load openwop-get-only rest-get "$server_pid" "http://127.0.0.1:$ours_port" --auth "$bench_auth" >>"$out"
  http_load openwop-create+get rest-create-get "$server_pid" "http://127.0.0.1:$ours_port" --auth "$bench_auth" >>"$out"
  stop_server "$server_pid"
done

report_rows "$out"
compare "$out" openwop-get-only bare-axum
compare "$out" openwop-create+get bare-axum
echo "  targets: get-only >= 0.5x, create+get >= 0.3x the bare handler's throughput"
machine_footer
