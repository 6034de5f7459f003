#!/usr/bin/env bash
# Runs the A2A benchmark: our host (the ignored a2a_peer_host test serving on a loopback
# port) beside the a2a-sdk echo server, in one run, then prints both rates and the ratio.
# Usage: bench/a2a/run.sh [requests] [concurrency]
set -euo pipefail
cd "$(dirname "$0")/../.."
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
venv=$target_dir/bench-a2a-venv
ours_port=${OURS_PORT:-38181}
sdk_port=${SDK_PORT:-38182}
[[ -x $venv/bin/python ]] || python3 -m venv "$venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check -r bench/a2a/requirements.txt

# Build first and run the test binary itself, so the pid we stop is the server's own.
host_bin=$(cargo test --locked -p openwop --test a2a_peer_host --no-run 2>&1 | sed -n 's/.*Executable .*(\(.*\))$/\1/p' | tail -1)
[[ -x $host_bin ]] || { echo "could not build the a2a_peer_host test binary" >&2; exit 1; }
OPENWOP_A2A_PEER_PORT=$ours_port OPENWOP_A2A_PEER_SECONDS=600 "$host_bin" --ignored --exact serve_for_peers >/dev/null 2>&1 &
ours_pid=$!
"$venv/bin/python" bench/a2a/sdk_echo_server.py "$sdk_port" &
sdk_pid=$!
trap 'kill $ours_pid $sdk_pid 2>/dev/null || true' EXIT

for url in "http://127.0.0.1:$ours_port/.well-known/agent-card.json" "http://127.0.0.1:$sdk_port/.well-known/agent-card.json"; do
  for _ in $(seq 1 600); do curl -fsS "$url" >/dev/null 2>&1 && break; sleep 0.5; done
done
"$venv/bin/python" bench/a2a/bench.py \
  --ours "http://127.0.0.1:$ours_port/a2a/jsonrpc" --key acme-key-0123456789abcdef \
  --sdk "http://127.0.0.1:$sdk_port/a2a/jsonrpc" \
  --requests "${1:-400}" --concurrency "${2:-4}"
