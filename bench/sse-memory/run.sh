#!/usr/bin/env bash
# Memory of idle event streams: our host (`openwop serve`, release, pinned to SERVER_CPU)
# with STREAMS (default 10,000) idle SSE subscribers on GET /runs/{id}/events of one
# waiting run (the `approval` workflow), all held by the load generator on one core
# (LOADGEN_CPU). Prints the server's RSS before and after, per stream, and the latency of
# GET /.well-known/openwop with 0 and with PROBE_AT (default 2,000) streams open.
# The host caps open connections at 10,000; so does this benchmark.
#   bench/sse-memory/run.sh
source "$(dirname "$0")/../lib.sh"
port=${OURS_PORT:-18581}
# Each side needs a descriptor per stream, and then some.
ulimit -n "$(ulimit -Hn)"
(( $(ulimit -n) > ${STREAMS:-10000} + 100 )) || { echo "ulimit -n $(ulimit -n) is too low" >&2; exit 1; }
build_release

machine_header "SSE memory: ${STREAMS:-10000} idle subscribers on one waiting run"
start_openwop ours "$port"
loadgen sse-memory --base "http://127.0.0.1:$port" --auth "$bench_auth" --pid "$server_pid" \
  --streams "${STREAMS:-10000}" --probe-at "${PROBE_AT:-2000}" | tee "$bench_tmp/sse.json"
stop_server "$server_pid"
python3 - "$bench_tmp/sse.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
d0, d1 = r["discovery_latency_ms_0_streams"], r["discovery_latency_ms_at"]["latency"]
print(f'  {r["streams"]} streams: RSS {r["server_rss_mib_before"]} -> {r["server_rss_mib_after"]} MiB '
      f'(+{r["server_rss_mib_delta"]} MiB, {r["bytes_per_stream"]} bytes per stream); target < 200 MB for 10k')
print(f'  GET /.well-known/openwop p50/p99: {d0["p50"]:.3f}/{d0["p99"]:.3f} ms with 0 streams, '
      f'{d1["p50"]:.3f}/{d1["p99"]:.3f} ms with {r["discovery_latency_ms_at"]["streams"]}')
PY
machine_footer
