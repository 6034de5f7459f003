#!/usr/bin/env bash
# Runs the A2A benchmark: our host (`openwop serve` on a loopback port) beside the
# a2a-sdk echo server, in one run, then prints both rates and the ratio.
# Usage: bench/a2a/run.sh [requests] [concurrency]
set -euo pipefail
cd "$(dirname "$0")/../.."
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
venv=$target_dir/bench-a2a-venv
ours_port=${OURS_PORT:-38181}
sdk_port=${SDK_PORT:-38182}
[[ -x $venv/bin/python ]] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r bench/a2a/requirements.txt

cargo build --locked -p openwop --bin openwop >&2
export OPENWOP_BIN=$target_dir/debug/openwop
source tests/peers/host.sh
start_openwop "$ours_port" /dev/null
"$venv/bin/python" bench/a2a/sdk_echo_server.py "$sdk_port" &
openwop_pids+=($!)

for url in "http://127.0.0.1:$ours_port/.well-known/agent-card.json" "http://127.0.0.1:$sdk_port/.well-known/agent-card.json"; do
  for _ in $(seq 1 600); do curl -fsS "$url" >/dev/null 2>&1 && break; sleep 0.5; done
done
"$venv/bin/python" bench/a2a/bench.py \
  --ours "http://127.0.0.1:$ours_port/a2a/jsonrpc" --key "$OPENWOP_API_KEY" \
  --sdk "http://127.0.0.1:$sdk_port/a2a/jsonrpc" \
  --requests "${1:-400}" --concurrency "${2:-4}"
