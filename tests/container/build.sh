#!/usr/bin/env bash
# Builds the openwop container image from an already-built binary: nothing compiles in
# a container. Stages a root filesystem (the binary, stripped of debug info; the dynamic
# loader and every library `ldd` lists; the host's CA bundle; /etc/passwd and /etc/group
# with the non-root user 10001 `openwop`; /data owned by it; /tmp) and runs
# `podman build` on tests/container/Containerfile FROM scratch.
#
# Usage: tests/container/build.sh [BINARY]
#   BINARY   default: $OPENWOP_BIN, else $CARGO_TARGET_DIR/debug/openwop (target/ without
#            CARGO_TARGET_DIR); built with `cargo build -p openwop --bin openwop` if absent
#   OPENWOP_IMAGE  the tag (default localhost/openwop:dev)
# The binary must have been built for this machine's libc (it is copied from here).
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
target_dir=${CARGO_TARGET_DIR:-$root/target}
bin=${1:-${OPENWOP_BIN:-$target_dir/debug/openwop}}
image=${OPENWOP_IMAGE:-localhost/openwop:dev}

if ! command -v podman >/dev/null; then
  echo "build.sh: podman is not installed (apt-get install podman runc)" >&2
  exit 1
fi
if [[ ! -x $bin ]]; then
  if [[ $# -gt 0 || -n ${OPENWOP_BIN:-} ]]; then
    echo "build.sh: $bin is not an executable" >&2
    exit 1
  fi
  echo "build.sh: building $bin" >&2
  cargo build --locked -p openwop --bin openwop
fi

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
rootfs=$ctx/rootfs
mkdir -p "$rootfs"/{usr/local/bin,etc/ssl/certs,tmp} "$ctx/data"

# The binary: debug info is most of a debug build's size and no use in an image.
if command -v objcopy >/dev/null; then
  objcopy --strip-debug "$bin" "$rootfs/usr/local/bin/openwop"
else
  cp "$bin" "$rootfs/usr/local/bin/openwop"
fi
chmod 0755 "$rootfs/usr/local/bin/openwop"

# Its shared libraries and the loader, at the paths the binary asks for (ldd prints
# `name => /path (addr)` for each library, and the loader as `/path (addr)`).
libs=$(ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u)
if [[ -z $libs ]]; then
  echo "build.sh: ldd found no libraries for $bin (a static binary needs none, but this one is not)" >&2
  ldd "$bin" >&2 || true
  exit 1
fi
for lib in $libs; do
  mkdir -p "$rootfs$(dirname "$lib")"
  cp -L "$lib" "$rootfs$lib"
done

# TLS clients (egress, PostgreSQL over TLS, peers) verify against the host's CA bundle.
ca=/etc/ssl/certs/ca-certificates.crt
if [[ ! -r $ca ]]; then
  echo "build.sh: $ca is missing (apt-get install ca-certificates)" >&2
  exit 1
fi
cp "$ca" "$rootfs/etc/ssl/certs/ca-certificates.crt"

cat > "$rootfs/etc/passwd" <<'PASSWD'
root:x:0:0:root:/:/sbin/nologin
openwop:x:10001:10001:openwop:/data:/sbin/nologin
PASSWD
cat > "$rootfs/etc/group" <<'GROUP'
root:x:0:
openwop:x:10001:
GROUP
echo 'hosts: files dns' > "$rootfs/etc/nsswitch.conf"
chmod 0700 "$ctx/data"
chmod 1777 "$rootfs/tmp"

cp tests/container/Containerfile "$ctx/Containerfile"
echo "build.sh: $(du -sh "$rootfs" | cut -f1) staged from $bin (libraries: $(echo $libs))" >&2
podman build --quiet --format docker --tag "$image" --file "$ctx/Containerfile" "$ctx" >/dev/null
echo "build.sh: built $image" >&2
