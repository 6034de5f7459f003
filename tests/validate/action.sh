#!/usr/bin/env bash
# Runs the composite action .github/actions/openwop-validate the way a runner would
# (tests/validate/run_action.py: inputs and defaults, `if:` expressions, GITHUB_OUTPUT /
# GITHUB_PATH / GITHUB_STEP_SUMMARY, bash steps) on a workspace with an invalid discovery
# document, then on a valid one. The install step really runs `cargo install --path
# validate` (with `--debug` so it reuses the test build) on the first run; the Actions cache
# is played by a directory (run_action.py --cache-dir), so the second run, like a later job,
# restores that build and installs nothing. The upload step, another action fetched by a
# real runner, is checked by what it would be given: a SARIF file that exists.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
target_dir=${CARGO_TARGET_DIR:-$root/target}
export CARGO_TARGET_DIR=$target_dir
pin=4.7.0
venv=$target_dir/validate-tools/pre-commit-venv
if [[ ! -x $venv/bin/python ]] || ! "$venv/bin/python" -c 'import yaml' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "pre-commit==$pin"
fi
py=$venv/bin/python

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/public/.well-known" "$work/actions-cache"
cp tests/vectors/discovery/invalid/discovery.no-grpc.json "$work/public/.well-known/openwop"

run() {
  (cd "$work" && "$py" "$root/tests/validate/run_action.py" "$root/.github/actions/openwop-validate" \
    --input "paths=public/.well-known/openwop" --input "args=--now 2026-12-01" \
    --input "install-args=--debug" --cache-dir "$work/actions-cache" --report "$work/report.json")
}

if run >"$work/log" 2>&1; then
  cat "$work/log" >&2; echo "the action passed an invalid document" >&2; exit 1
fi
"$py" - "$work/report.json" "$work" <<'PY'
import json, os, sys
report, work = json.load(open(sys.argv[1])), sys.argv[2]
steps = {s["name"]: s for s in report["steps"]}
assert report["status"] == "failure", report
validate = steps["Validate"]
assert validate["ran"] and validate["exit"] == 0, validate
assert validate["outputs"]["exit-code"] == "1", validate
assert report["outputs"]["exit-code"] == "1", report["outputs"]
assert steps["Install openwop-validate"]["ran"], "the first job found a cache it cannot have"
saved = steps["Save the build for later jobs"]
assert saved["ran"], saved
entries = os.listdir(os.path.join(work, "actions-cache"))
assert len(entries) == 1 and entries[0].startswith("openwop-validate-Linux-"), entries
assert os.access(os.path.join(work, "actions-cache", entries[0], "bin", "openwop-validate"), os.X_OK), entries
upload = next(u for u in report["uses"] if u["uses"].startswith("github/codeql-action/upload-sarif@"))
assert upload["uses"].startswith("github/codeql-action/upload-sarif@"), upload
# One code-scanning category per kind: a discovery job and a card job keep their own alerts.
assert upload["with"]["category"] == "openwop-validate-discovery", upload
sarif = os.path.join(work, upload["with"]["sarif_file"])
log = json.load(open(sarif))
results = log["runs"][0]["results"]
assert any(r["ruleId"] == "discovery.no-grpc" for r in results), results
region = results[0]["locations"][0]["physicalLocation"]["region"]
assert region["startLine"] >= 1 and region["startColumn"] >= 1, region
rules = log["runs"][0]["tool"]["driver"]["rules"]
assert all(r["helpUri"].startswith("https://github.com/example/site/blob/") for r in rules), rules[0]
assert "| public/.well-known/openwop |" in report["summary"], report["summary"]
assert steps["Fail on findings"]["exit"] == 1, steps["Fail on findings"]
PY
grep -q "^::error file=public/.well-known/openwop,line=[0-9]*,col=[0-9]*,title=discovery.no-grpc::" "$work/log" \
  || { cat "$work/log" >&2; echo "no annotation for the finding" >&2; exit 1; }

cp tests/vectors/discovery/valid/minimal.json "$work/public/.well-known/openwop"
run >"$work/log" 2>&1 || { cat "$work/log" >&2; echo "the action failed on a valid document" >&2; exit 1; }
"$py" - "$work/report.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
steps = {s["name"]: s for s in report["steps"]}
assert steps["Restore a cached build"]["outputs"].get("cache-hit") == "true", steps["Restore a cached build"]
assert not steps["Install openwop-validate"]["ran"], "a later job rebuilt what the cache held"
assert not steps["Save the build for later jobs"]["ran"], steps["Save the build for later jobs"]
assert steps["Validate"]["outputs"]["exit-code"] == "0", steps["Validate"]
PY
echo "composite action: installs, annotates and fails on an invalid document, passes a valid one, hands SARIF to the upload step under its kind's category; a later job restores the build from the cache and installs nothing"
