#!/usr/bin/env bash
# The entry of the pre-commit hooks in .pre-commit-hooks.yaml: builds openwop-validate from
# the checkout this script sits in (cargo's up-to-date check makes every run after the
# first take a moment), then checks the files pre-commit passes. pre-commit's `rust`
# language cannot be used: it runs `cargo install --path .` at the repository root, a
# virtual workspace manifest.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
target=${CARGO_TARGET_DIR:-$repo/target}
cargo build --quiet --locked --manifest-path "$repo/Cargo.toml" --target-dir "$target" \
  -p openwop-validate --bin openwop-validate >&2
exec "$target/debug/openwop-validate" "$@"
