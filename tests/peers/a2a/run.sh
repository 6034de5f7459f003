#!/usr/bin/env bash
# Runs the real A2A peers (Python a2a-sdk, JS @a2a-js/sdk; pinned) against the README's
# host (`openwop serve`), unless OPENWOP_BASE_URL already names a host to drive; then the
# A2A TCK (tck.sh: its own host with the TCK fixture pack; skipped loudly without
# ../shared/a2a-tck).
# Usage: tests/peers/a2a/run.sh
set -euo pipefail
cd "$(dirname "$0")/../../.."
root=$PWD
target_dir=${CARGO_TARGET_DIR:-$root/target}
step() { printf '\n==> %s\n' "$*" >&2; }

if [[ -z ${OPENWOP_BASE_URL:-} ]]; then
  step "building and starting openwop serve"
  cargo build --locked -p openwop --bin openwop >&2
  export OPENWOP_BIN=${OPENWOP_BIN:-$target_dir/debug/openwop}
  source tests/peers/host.sh
  # Push receivers in the peer tests listen on loopback: open the guard for them (the
  # host logs it and advertises the relaxation).
  start_openwop "${OPENWOP_A2A_PEER_PORT:-18180}" "$target_dir/a2a-peer-host.log" --egress-allow-loopback
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

# The A2A TCK starts its own host: the README's, with the TCK's fixture pack and config
# (built here, outside the TCK's time bound, when a host was given by OPENWOP_BASE_URL).
if [[ -z ${OPENWOP_BIN:-} ]]; then
  cargo build --locked -p openwop --bin openwop >&2
  export OPENWOP_BIN=$target_dir/debug/openwop
fi
step "the A2A TCK (MUST, SHOULD and MAY; JSON-RPC and HTTP+JSON)"
timeout 660 tests/peers/a2a/tck.sh
