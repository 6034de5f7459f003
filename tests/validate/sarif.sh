#!/usr/bin/env bash
# Holds openwop-validate's SARIF to the SARIF 2.1.0 standard with Microsoft's own checker:
# `sarif-multitool validate` (npm @microsoft/sarif-multitool, pinned in package.json here)
# over the SARIF written for valid, invalid, unreadable and malformed inputs. Fails on any
# error or warning the multitool reports. Skips, saying why, only when npm is absent.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
here=$root/tests/validate
target_dir=${CARGO_TARGET_DIR:-$root/target}

if ! command -v npm >/dev/null; then
  echo "SKIP tests/validate/sarif.sh: npm is not installed, so the SARIF multitool cannot be" >&2
  echo "     fetched; install Node.js and npm to run this check" >&2
  exit 0
fi
tools=$target_dir/validate-tools/sarif
if [[ ! -x $tools/node_modules/.bin/sarif-multitool ]]; then
  mkdir -p "$tools"
  cp "$here/package.json" "$here/package-lock.json" "$tools/"
  (cd "$tools" && npm ci --no-audit --no-fund --silent)
fi
multitool=$tools/node_modules/.bin/sarif-multitool

cargo build --quiet --locked -p openwop-validate --bin openwop-validate
bin=$target_dir/debug/openwop-validate

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '{ "protocolVersions": ["2.0"],, }\n' >"$work/broken.json"
vectors=tests/vectors/discovery
set +e
"$bin" --now 2026-12-01 --docs-url https://example.test/openwop/blob/main/ \
  --format "sarif=$work/findings.sarif" --format json \
  "$vectors/valid/minimal.json" "$vectors"/invalid/*.json "$work/broken.json" /nonexistent.json \
  >"$work/findings.json"
code=$?
"$bin" --now 2026-12-01 --format "sarif=$work/clean.sarif" "$vectors/valid/minimal.json" >/dev/null
set -e
[[ $code == 2 ]] || { echo "expected exit 2 (an unreadable input), got $code" >&2; exit 1; }

failed=0
for log in findings clean; do
  "$multitool" validate --output "$work/$log.check.sarif" "$work/$log.sarif" >"$work/$log.check.log" 2>&1 || true
  # The multitool's own output is SARIF: its results are the problems it found.
  problems=$(python3 - "$work/$log.check.sarif" <<'PY'
import json, sys
log = json.load(open(sys.argv[1]))
for run in log.get("runs", []):
    for r in run.get("results", []):
        if r.get("level", "warning") in ("error", "warning"):
            print(r.get("ruleId"), r.get("message", {}).get("text", ""))
    for inv in run.get("invocations", []):
        for n in inv.get("toolExecutionNotifications", []):
            if n.get("level") == "error":
                print("tool error:", n.get("message", {}).get("text", ""))
PY
)
  if [[ -n $problems ]]; then
    echo "sarif-multitool validate found problems in $log.sarif:" >&2
    echo "$problems" >&2
    failed=1
  fi
done
results=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["runs"][0]["results"]))' "$work/findings.sarif")
(( results > 40 )) || { echo "only $results results in findings.sarif" >&2; exit 1; }
(( failed == 0 )) || exit 1
echo "sarif-multitool validate: 2 logs ($results results) pass SARIF 2.1.0"
