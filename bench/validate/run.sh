#!/usr/bin/env bash
# Throughput of `openwop validate` beside Python `jsonschema` on the same discovery documents.
#
#   bench/validate/run.sh [COUNT]     (default 4000 documents)
#
# The batch is the discovery vectors (valid and invalid) repeated to COUNT. The Rust side is
# the whole `openwop validate` process: start-up, compiling the schemas, reading and parsing
# every file, the JSON Schema and every rule, rendering JSON. The Python side is only its
# validation loop over documents already in memory, JSON Schema only, with the same schema
# files in its registry and formats checked. Everything the Rust side does beyond Python's
# counts against it. Not part of the test suite: timings depend on the machine.
set -euo pipefail

count=${1:-4000}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"

# The dev profile, like every other build here; the numbers are a floor for a release build.
# OPENWOP_BIN names another binary to measure instead (no build then).
target_dir=${CARGO_TARGET_DIR:-$root/target}
bin=${OPENWOP_BIN:-}
if [ -z "$bin" ]; then
  cargo build --quiet -p openwop
  bin="$target_dir/debug/openwop"
fi

venv="$target_dir/bench-validate-venv"
jsonschema_version=4.26.0
if ! "$venv/bin/python" -c "import jsonschema" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet "jsonschema==$jsonschema_version"
fi
py="$venv/bin/python"

mapfile -t files < <(ls tests/vectors/discovery/valid/*.json tests/vectors/discovery/invalid/*.json)
batch=()
while [ "${#batch[@]}" -lt "$count" ]; do batch+=("${files[@]}"); done
batch=("${batch[@]:0:$count}")

# Sanity first: both sides must agree on which distinct documents the schema rejects.
rust_schema=$("$bin" validate --now 2026-12-01 --format json "${files[@]}" \
  | "$py" -c 'import json,sys; print(len({f["path"] for f in json.load(sys.stdin) if f["rule"] == "schema"}))' || true)
py_schema=$("$py" bench/validate/schema_check.py "$root" "${files[@]}" | cut -d: -f1 | sort -u | wc -l)
echo "distinct documents: ${#files[@]}; failing the schema: openwop $rust_schema, python $py_schema"
if [ "$rust_schema" != "$py_schema" ]; then
  echo "warning: the two validators disagree on the schema; the comparison below is suspect" >&2
fi

start=$(date +%s.%N)
status=0
"$bin" validate --now 2026-12-01 --format json "${batch[@]}" >/dev/null || status=$?
end=$(date +%s.%N)
if [ "$status" -ne 1 ]; then
  echo "openwop validate exited $status (expected 1: the batch holds invalid documents)" >&2
  exit 2
fi

read -r py_docs _py_invalid py_seconds < <("$py" bench/validate/schema_check.py --bench "$count" "$root" "${files[@]}")

"$py" - "$count" "$start" "$end" "$py_docs" "$py_seconds" "$jsonschema_version" <<'PY'
import sys
count, start, end, py_docs, py_seconds, version = sys.argv[1:]
rust_seconds = float(end) - float(start)
rust_rate = int(count) / rust_seconds
py_rate = int(py_docs) / float(py_seconds)
print(f"openwop validate (schema + rules, whole process): {count} documents in {rust_seconds:.3f} s = {rust_rate:,.0f} documents/s")
print(f"python jsonschema {version} (schema only, in memory): {py_docs} documents in {float(py_seconds):.3f} s = {py_rate:,.0f} documents/s")
print(f"ratio: {rust_rate / py_rate:.1f}x (aim: at least 20x)")
PY
