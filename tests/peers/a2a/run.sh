#!/usr/bin/env bash
# Runs the real A2A peers (Python a2a-sdk, JS @a2a-js/sdk; pinned) against a host serving
# the A2A interface. Starts the ignored `a2a_peer_host` test as that host unless
# OPENWOP_BASE_URL is already set.
# Usage: tests/peers/a2a/run.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
root=$PWD
target_dir=${CARGO_TARGET_DIR:-$root/target}
step() { printf '\n==> %s\n' "$*" >&2; }

if [[ -z ${OPENWOP_BASE_URL:-} ]]; then
  port=${OPENWOP_A2A_PEER_PORT:-38180}
  step "building the A2A peer host"
  host_bin=$(cargo test --locked -p openwop --test a2a_peer_host --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\))$/\1/p' | tail -1)
  [[ -x $host_bin ]] || { echo "could not build the a2a_peer_host test binary" >&2; exit 1; }
  OPENWOP_A2A_PEER_PORT=$port OPENWOP_A2A_PEER_SECONDS=900 "$host_bin" --ignored --exact serve_for_peers >"$target_dir/a2a-peer-host.log" 2>&1 &
  host_pid=$!
  trap 'kill $host_pid 2>/dev/null || true' EXIT
  export OPENWOP_BASE_URL=http://127.0.0.1:$port
  export OPENWOP_API_KEY=acme-key-0123456789abcdef
  for _ in $(seq 1 120); do curl -fsS "$OPENWOP_BASE_URL/.well-known/agent-card.json" >/dev/null 2>&1 && break; sleep 0.5; done
fi

venv=$target_dir/a2a-peer-venv
[[ -x $venv/bin/python ]] || python3 -m venv "$venv"
step "installing the pinned Python A2A peer"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r tests/peers/a2a/python/requirements.txt
step "peer: Python a2a-sdk"
(cd tests/peers/a2a/python && "$venv/bin/python" -m pytest -q -p no:cacheprovider)

step "installing the pinned JS A2A peer"
(cd tests/peers/a2a/js && npm ci --no-audit --no-fund --silent)
step "peer: JS @a2a-js/sdk"
(cd tests/peers/a2a/js && node --test)
