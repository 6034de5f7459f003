#!/usr/bin/env bash
# Starts the host with two tenants on a free port and drives it with the pinned Python
# openwop-client. Usage: run.sh [PATH_TO_OPENWOP_BINARY]  (needs python3 with venv).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${1:-$here/../../../../target/debug/openwop}"
work="$(mktemp -d)"
trap 'kill "$pid" 2>/dev/null || true; rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q -r "$here/requirements.txt"
key_a="check-a-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
key_b="check-b-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
"$bin" serve --listen 127.0.0.1:0 --data-dir "$work/data" --api-key "acme:$key_a" --api-key "globex:$key_b" >"$work/out" 2>"$work/err" &
pid=$!
for _ in $(seq 1 100); do
  base="$(sed -n 's/^openwop listening on //p' "$work/out")"
  [ -n "$base" ] && break
  sleep 0.1
done
[ -n "$base" ] || { cat "$work/err"; exit 1; }
"$work/venv/bin/python" "$here/check.py" "$base" "$key_a" "$key_b"
