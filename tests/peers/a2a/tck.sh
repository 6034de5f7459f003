#!/usr/bin/env bash
# Runs the A2A TCK (a2aproject/a2a-tck, branch 1.0-dev, in place from ../shared/a2a-tck; never
# copied here) at the MUST, SHOULD and MAY levels over both bindings the host serves (JSON-RPC
# and HTTP+JSON; no gRPC), against the README's host (`openwop serve`) started with the
# TCK fixture pack (tests/fixtures/a2a-tck), then checks the outcomes against
# tests/peers/a2a/tck/known-defects.toml: any other failure fails the run, and so does a
# listed defect that passes (the list only shrinks). Prints a summary.
# Needs python3 (venv); installs the TCK's pinned dependencies into a venv under the
# target dir. Bounded: every step runs under `timeout`.
# Usage: tests/peers/a2a/tck.sh            (A2A_TCK_DIR overrides ../shared/a2a-tck)
set -euo pipefail
cd "$(dirname "$0")/../../.."
root=$PWD
target_dir=${CARGO_TARGET_DIR:-$root/target}
here=$root/tests/peers/a2a/tck
step() { printf '\n==> %s\n' "$*" >&2; }

tck_dir=${A2A_TCK_DIR:-$root/../shared/a2a-tck}
if [[ ! -f $tck_dir/run_tck.py ]]; then
  # Loud, not silent: CI has ../shared beside the checkout, so this is a set-up problem.
  printf '\n!!! A2A TCK SKIPPED: no TCK at %s (expected ../shared/a2a-tck beside the checkout, or set A2A_TCK_DIR)\n\n' "$tck_dir" >&2
  [[ ${A2A_TCK_REQUIRED:-0} == 1 ]] && exit 1
  exit 0
fi
tck_dir=$(cd "$tck_dir" && pwd)
# The TCK has no version of its own; the note beside the export names its commit.
pinned=357c4a87afa2818731590647cccbea31c31733a2
if ! grep -qs "$pinned" "$tck_dir/../a2a-tck.SOURCES.md"; then
  printf '\n!!! the TCK at %s is not recorded as commit %s: known-defects.toml was written for that one\n\n' "$tck_dir" "$pinned" >&2
fi

if [[ -z ${OPENWOP_BIN:-} ]]; then
  step "building openwop"
  cargo build --locked -p openwop --bin openwop >&2
  export OPENWOP_BIN=$target_dir/debug/openwop
fi

venv=$target_dir/a2a-tck-venv
[[ -x $venv/bin/python ]] || python3 -m venv "$venv"
step "installing the TCK's pinned dependencies"
timeout 180 "$venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"

step "starting openwop serve with the TCK fixture pack"
source tests/peers/host.sh
# The TCK's webhook receiver listens on 127.0.0.1: open the egress guard to loopback
# (logged, advertised as a relaxation), as the other push peers do.
start_openwop "${OPENWOP_A2A_TCK_PORT:-18380}" "$target_dir/a2a-tck-host.log" \
  --egress-allow-loopback --workflows "$root/tests/fixtures/a2a-tck" --config "$here/host-config.yaml"

out=$target_dir/a2a-tck-reports
rm -rf "$out"
mkdir -p "$out"
# Seconds each level may take (a debug host on 2 cores needs about 70, 10 and 2): with
# the install, the whole script stays under 10 minutes even when every step times out.
declare -A level_timeout=([must]=240 [should]=120 [may]=60)
for level in must should may; do
  step "A2A TCK: ${level^^} level, JSON-RPC and HTTP+JSON"
  # Run from the TCK's (read-only) directory: no bytecode, no pytest cache, every report
  # written under the target dir. pytest's own exit status is not the verdict: compare.py is.
  (cd "$tck_dir" && PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=$here OPENWOP_TCK_RESULTS=$out/$level.json \
    timeout "${level_timeout[$level]}" "$venv/bin/python" -m pytest tests/compatibility/ -p no:cacheprovider -p openwop_tck \
    --sut-host="$OPENWOP_BASE_URL" --transport=jsonrpc,http_json --webhook-host=127.0.0.1 \
    -m "$level" -q --tb=line --junitxml="$out/$level.xml" \
    --compatibility-report="$out/compatibility-$level" >"$out/$level.log" 2>&1) || true
  [[ -s $out/$level.json ]] || { echo "the TCK wrote no results at the $level level; its log:" >&2; tail -40 "$out/$level.log" >&2; exit 1; }
done

step "A2A TCK: outcomes against tests/peers/a2a/tck/known-defects.toml"
python3 "$here/compare.py" "$here/known-defects.toml" "$out/must.json" "$out/should.json" "$out/may.json"
