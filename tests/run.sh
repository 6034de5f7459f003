#!/usr/bin/env bash
# Runs every test of the project: the Rust workspace tests, then the real peers against
# the real `openwop` binary: Python openwop-client, the A2A clients (a2a-sdk, @a2a-js/sdk)
# and the A2A TCK (from ../shared/a2a-tck),
# the MCP clients and the MCP conformance suite, then real A2A agents and MCP servers
# as the remotes a workflow calls, then the container image built from the binary. Installs
# the pinned peers into venvs and node_modules under the target directory and the peer
# folders. Needs python3 (venv), node >= 20 with npm, curl, and podman with runc.
# Usage: tests/run.sh                 (everything)
#        tests/run.sh --rust          (Rust tests only)
#        tests/run.sh --validate      (openwop-validate's SARIF, pre-commit hooks and CI action)
#        tests/run.sh --peers         (peer tests only; builds the binary first)
#        tests/run.sh --schemathesis  (REST against api/v2/openapi.yaml only)
#        tests/run.sh --container     (the root Containerfile's image from the static binary, run and restarted)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target_dir=${CARGO_TARGET_DIR:-$root/target}
what=${1:-all}

step() { printf '\n==> %s\n' "$*" >&2; }

if [[ $what == all || $what == --rust ]]; then
  step "cargo test --workspace"
  cargo test --workspace --locked
fi

if [[ $what == all || $what == --validate ]]; then
  # Each bounded by `timeout`: the first run installs pinned tools (npm, pip) and builds the
  # validate-only package; later runs reuse both from the target dir.
  step "openwop-validate: its SARIF through @microsoft/sarif-multitool validate"
  timeout 900 tests/validate/sarif.sh
  step "openwop-validate: the pre-commit hooks through pre-commit try-repo"
  timeout 900 tests/validate/pre-commit.sh
  step "openwop-validate: the composite CI action, its steps run as a runner runs them"
  timeout 1200 tests/validate/action.sh
fi

if [[ $what == all || $what == --peers ]]; then
  step "building the openwop binary"
  cargo build --locked -p openwop --bin openwop
  export OPENWOP_BIN=$target_dir/debug/openwop

  venv=$target_dir/peer-venv
  if [[ ! -x $venv/bin/python ]]; then
    step "creating the peer venv at $venv"
    python3 -m venv "$venv"
  fi
  step "installing pinned Python peers"
  "$venv/bin/pip" install --quiet --disable-pip-version-check -r tests/peers/openwop_client/requirements.txt

  step "peer: Python openwop-client"
  (cd tests/peers/openwop_client && "$venv/bin/python" -m pytest -q -p no:cacheprovider)

  step "SDK: the generated client's quickstart example against the host"
  tests/sdk_example.sh
  step "peers: A2A (the SDK clients, then the A2A TCK)"
  tests/peers/a2a/run.sh
  step "peers: MCP (clients and the conformance suite)"
  tests/peers/mcp/run.sh
  step "peers: the host as a client (real A2A agents and MCP servers as remotes)"
  tests/peers/outbound/run.sh
fi

if [[ $what == all || $what == --schemathesis ]]; then
  step "schemathesis: REST against its own OpenAPI (every check, fixed seed)"
  if [[ -z ${OPENWOP_BIN:-} ]]; then
    cargo build --locked -p openwop --bin openwop
    export OPENWOP_BIN=$target_dir/debug/openwop
  fi
  tests/schemathesis.sh
fi

if [[ $what == all || $what == --container ]]; then
  step "container: the root Containerfile from the static binary, run, restarted and health-checked with podman"
  # The image is FROM scratch, so its binary is the static one (glibc, crt-static): a
  # second debug build of the host for --target x86_64-unknown-linux-gnu (build scripts
  # and proc-macros stay dynamic), in its own directory of the target dir.
  RUSTFLAGS='-C target-feature=+crt-static' \
    cargo build --locked -p openwop --bin openwop --target x86_64-unknown-linux-gnu
  timeout 300 tests/container/run.sh "$target_dir/x86_64-unknown-linux-gnu/debug/openwop"
fi
