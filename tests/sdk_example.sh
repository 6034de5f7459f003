#!/usr/bin/env bash
# The SDK's quickstart (generated/examples/quickstart.rs) against the README's host:
# `openwop serve`, started by tests/peers/host.sh. It creates an echo and an approval run,
# streams their events, accepts the interrupt and checks the outcomes; any failure exits
# non-zero. Uses OPENWOP_BIN when set (tests/run.sh --peers builds it), else builds it.
set -euo pipefail
cd "$(dirname "$0")/.."
target_dir=${CARGO_TARGET_DIR:-$PWD/target}
export OPENWOP_BIN=${OPENWOP_BIN:-$target_dir/debug/openwop}
[[ -x $OPENWOP_BIN ]] || cargo build --locked -p openwop --bin openwop
cargo build --locked -p openwop-sdk --example quickstart

# shellcheck source=peers/host.sh
source tests/peers/host.sh
log=$(mktemp)
start_openwop "${SDK_EXAMPLE_PORT:-18090}" "$log"
OPENWOP_URL=$OPENWOP_BASE_URL "$target_dir/debug/examples/quickstart"
