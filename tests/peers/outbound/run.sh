#!/usr/bin/env bash
# The host as a client against real third-party peers: starts pinned peer servers on
# loopback (Python a2a-sdk and @a2a-js/sdk agents; Python mcp 2.3.0, a legacy mcp 1.12.4
# and @modelcontextprotocol/sdk servers), then `openwop serve` with `peers:` pointing at
# them (host-config.yaml), and drives workflows that call them over the REST API
# (drive.py). Every process it starts is stopped when it exits.
# Usage: tests/peers/outbound/run.sh [check names...]
set -euo pipefail
cd "$(dirname "$0")/../../.."
root=$PWD
suite=$root/tests/peers/outbound
target_dir=${CARGO_TARGET_DIR:-$root/target}
step() { printf '\n==> %s\n' "$*" >&2; }

step "building openwop"
cargo build --locked -p openwop --bin openwop >&2
export OPENWOP_BIN=${OPENWOP_BIN:-$target_dir/debug/openwop}

venv=$target_dir/outbound-peer-venv
legacy=$target_dir/outbound-legacy-venv
[[ -x $venv/bin/python ]] || python3 -m venv "$venv"
[[ -x $legacy/bin/python ]] || python3 -m venv "$legacy"
step "installing the pinned peers (Python a2a-sdk + mcp, legacy mcp, JS)"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r "$suite/python/requirements.txt"
"$legacy/bin/pip" install --quiet --disable-pip-version-check -r "$suite/legacy/requirements.txt"
(cd "$suite/js" && npm ci --no-audit --no-fund --silent)

# The host and its peers; the trap in host.sh stops everything in openwop_pids.
source tests/peers/host.sh
logs=$target_dir/outbound-peers
rm -rf "$logs" && mkdir -p "$logs"
export OUTBOUND_RECORD_DIR=$logs/records
mkdir -p "$OUTBOUND_RECORD_DIR"
# One credential per peer, each distinct from the caller's key: drive.py checks every
# peer received its own and nothing else.
export OUTBOUND_PY_AGENT_TOKEN=py-agent-token-$RANDOM$RANDOM
export OUTBOUND_JS_AGENT_TOKEN=js-agent-token-$RANDOM$RANDOM
export OUTBOUND_PY_MCP_TOKEN=py-mcp-token-$RANDOM$RANDOM
export OUTBOUND_LEGACY_MCP_TOKEN=legacy-mcp-token-$RANDOM$RANDOM
export OUTBOUND_TS_MCP_TOKEN=ts-mcp-token-$RANDOM$RANDOM

start_peer() { # NAME PORT command...
  local name=$1 port=$2
  shift 2
  # The trap stops it; `timeout` is the backstop should the trap never run (SIGKILL).
  timeout 600 "$@" >"$logs/$name.log" 2>&1 &
  openwop_pids+=($!)
  for _ in $(seq 1 150); do
    (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return 0
    kill -0 "${openwop_pids[-1]}" 2>/dev/null || break
    sleep 0.1
  done
  echo "peer $name did not come up on port $port; its log:" >&2
  cat "$logs/$name.log" >&2
  return 1
}

step "starting the peers"
start_peer py-a2a 18881 "$venv/bin/python" "$suite/python/a2a_agent.py" 18881
start_peer js-a2a 18882 node "$suite/js/a2a_agent.mjs" 18882
start_peer py-mcp 18883 "$venv/bin/python" "$suite/python/mcp_server.py" 18883
start_peer legacy-mcp 18884 "$legacy/bin/python" "$suite/legacy/mcp_legacy.py" 18884
start_peer ts-mcp 18885 node "$suite/js/mcp_server.mjs" 18885

step "starting openwop serve with the peers configured"
# Debug logs (every crate, the HTTP client's included): drive.py checks no peer credential
# reaches the host's log even at this level.
export RUST_LOG=${RUST_LOG:-debug}
start_openwop "${OPENWOP_OUTBOUND_PORT:-18880}" "$logs/openwop.log" \
  --config "$suite/host-config.yaml" --egress-allow-loopback

step "driving workflows that call the peers"
export OUTBOUND_HOST_LOG=$logs/openwop.log
"$venv/bin/python" "$suite/drive.py" "$@"
