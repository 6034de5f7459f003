//! Validation as a library call, per document, on documents already in memory: the
//! discovery vectors (valid and invalid) and the agent-card vectors of `tests/vectors/`.
//! Prints one JSON object; `bench/validate/run.sh` puts it beside ajv 8 on the same
//! documents.
//!
//! - `library`: `openwop_validate::validate`, what `openwop validate` and `openwop-validate`
//!   run per discovery document: the generated `validate_discovery` (the JSON Schema with
//!   formats, every error collected, plus the rules a schema cannot state; the schema's
//!   verdict taken per root property and errors collected only under the failing ones).
//! - `schema_iter_errors` / `schema_is_valid`: the same JSON Schema alone, compiled the way
//!   the generated validators compile it (`validators::compile_schema`: every corpus file in
//!   one registry, closed records rewritten, formats checked), collecting every error /
//!   stopping at the first (ajv's `allErrors: true` and
//!   its default).
//! - `validate_agent_card`: the per-card rules (the corpus has no JSON Schema for cards),
//!   each card with its discovery document as the tests give it.
//!
//! `OPENWOP_BENCH_PROFILE=valid|invalid` measures only the library call on those documents
//! (for `perf record`). It lives in the validate-only package so measuring it builds none of the host.
//!
//! Run: `cargo bench -p openwop-validate --bench validate` (`OPENWOP_BENCH_SECONDS` per measurement,
//! default 3).

use openwop_generated::validators::{self, Options};
use openwop_validate::{self as validate, Kind};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn vectors() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors")
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("json")
}

/// The documents of `kind/{valid,invalid}`, without `*.discovery.json` companions.
fn documents(kind: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for sub in ["valid", "invalid"] {
        let dir = vectors().join(kind).join(sub);
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .expect("vectors")
            .map(|e| e.expect("entry").path())
            .filter(|p| {
                let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
                name.ends_with(".json") && !name.ends_with(".discovery.json")
            })
            .collect();
        files.sort();
        out.extend(files);
    }
    out
}

/// Calls `f` over `docs` round-robin after a warm-up, in five rounds of `seconds / 5`;
/// nanoseconds per call in the fastest round (the machine is shared: the slower rounds are
/// the ones something else ran in), and the calls made in all.
fn per_doc<T>(docs: &[T], seconds: f64, mut f: impl FnMut(&T) -> usize) -> (f64, usize) {
    let mut sink = 0usize;
    for d in docs.iter().cycle().take(docs.len() * 20) {
        sink = sink.wrapping_add(f(d));
    }
    let limit = Duration::from_secs_f64(seconds / 5.0);
    let mut best = f64::INFINITY;
    let mut total = 0usize;
    for _ in 0..5 {
        let start = Instant::now();
        let mut calls = 0usize;
        while start.elapsed() < limit {
            for d in docs {
                sink = sink.wrapping_add(f(d));
            }
            calls += docs.len();
        }
        best = best.min(start.elapsed().as_nanos() as f64 / calls as f64);
        total += calls;
    }
    std::hint::black_box(sink);
    (best, total)
}

/// The schema as the generated validators compile it: every corpus file in one registry
/// (closed records registered as `additionalProperties` over their declared names), formats
/// checked.
fn compile_schema(uri: &str) -> jsonschema::Validator {
    validators::compile_schema(&json!({"$ref": uri})).expect("compile")
}

fn main() {
    let seconds: f64 = std::env::var("OPENWOP_BENCH_SECONDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3.0);
    let opts = Options {
        today: Some((2026, 12, 1)),
    };
    let discovery: Vec<Value> = documents("discovery").iter().map(|p| read(p)).collect();
    let valid_count = std::fs::read_dir(vectors().join("discovery/valid"))
        .expect("vectors")
        .count();
    let (valid, invalid) = discovery.split_at(valid_count);
    let schema = compile_schema("https://openwop.dev/spec/v2/capabilities.schema.json");
    let invalid_by_schema = discovery.iter().filter(|d| !schema.is_valid(d)).count();

    let library = |d: &Value| validate::validate(Kind::Discovery, d, None, &opts).len();
    // `OPENWOP_BENCH_PROFILE=valid|invalid`: only the library call on those documents, for
    // a profiler (`perf record` on this binary), and no JSON.
    if let Ok(which) = std::env::var("OPENWOP_BENCH_PROFILE") {
        let docs = if which == "valid" { valid } else { invalid };
        let (ns, _) = per_doc(docs, seconds, library);
        eprintln!("{which}: {ns:.0} ns per document");
        return;
    }
    let (lib_ns, lib_n) = per_doc(&discovery, seconds, library);
    let (lib_valid_ns, _) = per_doc(valid, seconds, library);
    let (lib_invalid_ns, _) = per_doc(invalid, seconds, library);
    let (iter_ns, iter_n) = per_doc(&discovery, seconds, |d| schema.iter_errors(d).count());
    // Where the rest goes: the errors' messages (ajv's are short templates; jsonschema's
    // quote the offending value), and the rules alone.
    let (messages_ns, _) = per_doc(&discovery, seconds, |d| {
        schema.iter_errors(d).map(|e| e.to_string().len()).sum()
    });
    let (rules_ns, _) = per_doc(&discovery, seconds, |d| {
        validators::discovery_rules::check(d, &opts).len()
    });
    let (valid_ns, valid_n) = per_doc(&discovery, seconds, |d| usize::from(schema.is_valid(d)));

    let shared = read(&vectors().join("agent-card/discovery.json"));
    let cards: Vec<(Value, Value)> = documents("agent-card")
        .iter()
        .map(|p| {
            let stem = p.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            let own = p.with_file_name(format!("{stem}.discovery.json"));
            let disc = if own.exists() {
                read(&own)
            } else {
                shared.clone()
            };
            (read(p), disc)
        })
        .collect();
    let (card_ns, card_n) = per_doc(&cards, seconds, |(c, d)| {
        validators::validate_agent_card(c, Some(d), &opts).len()
    });

    let r = |x: f64| (x * 10.0).round() / 10.0;
    println!(
        "{}",
        json!({
            "discovery_documents": discovery.len(),
            "discovery_failing_schema": invalid_by_schema,
            "library_ns_per_doc": r(lib_ns),
            "library_calls": lib_n,
            "library_valid_ns_per_doc": r(lib_valid_ns),
            "library_invalid_ns_per_doc": r(lib_invalid_ns),
            "valid_documents": valid.len(),
            "schema_iter_errors_ns_per_doc": r(iter_ns),
            "schema_iter_errors_calls": iter_n,
            "schema_errors_with_messages_ns_per_doc": r(messages_ns),
            "rules_only_ns_per_doc": r(rules_ns),
            "schema_is_valid_ns_per_doc": r(valid_ns),
            "schema_is_valid_calls": valid_n,
            "agent_cards": cards.len(),
            "validate_agent_card_ns_per_doc": r(card_ns),
            "validate_agent_card_calls": card_n,
            "schema_files": openwop_generated::schemas::ALL.iter().map(|f| f.path).collect::<Vec<_>>(),
        })
    );
}
