#!/usr/bin/env bash
# Builds the root Containerfile as an operator does, from a static binary: nothing
# compiles in a container and no base image is pulled (FROM scratch). The operator's one
# preparation step is a release build (the Containerfile's default BINARY); tests use the
# quicker debug build of the same static target, passed as BINARY.
#
# Usage: tests/container/build.sh [BINARY]
#   BINARY   default: $OPENWOP_STATIC_BIN, else
#            $CARGO_TARGET_DIR/x86_64-unknown-linux-gnu/debug/openwop (target/ without
#            CARGO_TARGET_DIR), built if absent with
#            RUSTFLAGS='-C target-feature=+crt-static' cargo build -p openwop --target x86_64-unknown-linux-gnu
#   OPENWOP_IMAGE  the tag (default localhost/openwop:dev)
# The binary is copied, debug info stripped, to target/container-image/openwop in this
# repository (the build context: .containerignore lets only that and image/ in).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
target_dir=${CARGO_TARGET_DIR:-$root/target}
triple=x86_64-unknown-linux-gnu
bin=${1:-${OPENWOP_STATIC_BIN:-$target_dir/$triple/debug/openwop}}
image=${OPENWOP_IMAGE:-localhost/openwop:dev}

if ! command -v podman >/dev/null; then
  echo "build.sh: podman is not installed (apt-get install podman runc)" >&2
  exit 1
fi
if [[ ! -x $bin ]]; then
  if [[ $# -gt 0 || -n ${OPENWOP_STATIC_BIN:-} ]]; then
    echo "build.sh: $bin is not an executable" >&2
    exit 1
  fi
  echo "build.sh: building $bin (static, debug)" >&2
  # --target keeps RUSTFLAGS off build scripts and proc-macros, which must stay dynamic.
  RUSTFLAGS='-C target-feature=+crt-static' \
    cargo build --locked -p openwop --bin openwop --target "$triple"
fi
# An image FROM scratch has no loader and no libraries: the binary must need none.
if ! ldd "$bin" 2>&1 | grep -qE 'not a dynamic executable|statically linked'; then
  echo "build.sh: $bin is dynamically linked; build it with RUSTFLAGS='-C target-feature=+crt-static' and --target $triple" >&2
  ldd "$bin" >&2 || true
  exit 1
fi

staged=target/container-image/openwop
mkdir -p "$(dirname "$staged")"
# Debug info is most of a debug build's size and no use in an image.
if command -v objcopy >/dev/null; then
  objcopy --strip-debug "$bin" "$staged"
else
  cp "$bin" "$staged"
fi
echo "build.sh: $(du -h "$staged" | cut -f1) binary from $bin" >&2
podman build --quiet --format docker --build-arg "BINARY=$staged" \
  --tag "$image" --file Containerfile . >/dev/null
echo "build.sh: built $image from ./Containerfile" >&2
