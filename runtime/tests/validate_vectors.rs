//! Walks `tests/vectors/` and holds every vector to its name.
//!
//! - `*/valid/*.json`: no finding at all.
//! - `*/invalid/<rule>[--variant].json`: at least one finding of `<rule>` and no finding of
//!   any other rule id. A rule that restates a schema constraint (see [`ALSO_SCHEMA`]) must
//!   come with a `schema` finding too, because interop.md requires such a document to fail
//!   the schema itself; `schema--*.json` vectors must fail the schema and no rule of ours.
//! - An agent card is checked against `agent-card/discovery.json`, or against
//!   `<name>.discovery.json` beside it when that file exists.
//!
//! "Today" is fixed at 2026-12-01 so the refresh-window vectors never age.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

#[path = "support/schema_errors.rs"]
mod schema_errors;

use openwop::validate::{Kind, validate};
use openwop_generated::validators::Options;
use serde_json::Value;

const TODAY: Options = Options {
    today: Some((2026, 12, 1)),
};

/// Rules that restate a schema constraint: their vectors must fail the schema as well.
const ALSO_SCHEMA: &[&str] = &[
    "discovery.no-supported-transports",
    "discovery.no-grpc",
    "discovery.no-legacy-profile",
    "discovery.required-field",
    "discovery.mrtr-max-rounds",
    "discovery.refresh-window-range",
];
/// Rules whose vectors may also fail the schema: an impossible date such as 2026-02-30 is
/// caught by `format: date` only when the schema validator checks formats; a card's missing
/// or mistyped required field fails the card's schema too, an empty one (`tags: []`) only
/// the rule.
const MAYBE_SCHEMA: &[&str] = &["discovery.invalid-date", "agent-card.required-field"];

fn vectors() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/vectors")
}

fn read(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The vectors of one folder, leaving out `*.discovery.json` companions.
fn documents(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            entry
                .map(|e| e.path())
                .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        })
        .filter(|p| {
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            name.ends_with(".json") && !name.ends_with(".discovery.json")
        })
        .collect();
    paths.sort();
    paths
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or_default()
        .to_owned()
}

fn findings(kind: Kind, path: &Path) -> Vec<(String, String, String)> {
    let doc = read(path);
    let discovery = match kind {
        Kind::Discovery => None,
        Kind::AgentCard => {
            let own = path.with_file_name(format!("{}.discovery.json", stem(path)));
            let shared = vectors().join("agent-card/discovery.json");
            Some(read(if own.exists() { &own } else { &shared }))
        }
    };
    validate(kind, &doc, discovery.as_ref(), &TODAY)
        .into_iter()
        .map(|f| (f.rule, f.pointer, f.message))
        .collect()
}

fn check_valid(kind: Kind, folder: &str) -> usize {
    let paths = documents(&vectors().join(folder).join("valid"));
    for path in &paths {
        let found = findings(kind, path);
        assert!(
            found.is_empty(),
            "{} should be valid but has {found:#?}",
            path.display()
        );
    }
    paths.len()
}

fn check_invalid(kind: Kind, folder: &str) -> BTreeSet<String> {
    let mut rules = BTreeSet::new();
    for path in documents(&vectors().join(folder).join("invalid")) {
        let name = stem(&path);
        let rule = name.split("--").next().unwrap_or_default().to_owned();
        let found = findings(kind, &path);
        let ids: BTreeSet<&str> = found.iter().map(|(r, _, _)| r.as_str()).collect();
        let others: Vec<&&str> = ids
            .iter()
            .filter(|r| **r != rule && **r != "schema")
            .collect();
        assert!(
            ids.contains(rule.as_str()),
            "{} should fail {rule} but has {found:#?}",
            path.display()
        );
        assert!(
            others.is_empty(),
            "{} breaks more than {rule}: {found:#?}",
            path.display()
        );
        let schema = ids.contains("schema");
        // `90.0` where an integer goes: the schema's `integer` accepts it, the rule (for the
        // typed readers that refuse it) does not.
        if name.ends_with("--zero-fraction") {
            assert!(
                !schema,
                "{} should pass the JSON Schema: {found:#?}",
                path.display()
            );
        } else if rule != "schema" && ALSO_SCHEMA.contains(&rule.as_str()) {
            assert!(
                schema,
                "{} should also fail the JSON Schema: {found:#?}",
                path.display()
            );
        } else if rule != "schema" && !MAYBE_SCHEMA.contains(&rule.as_str()) {
            assert!(
                !schema,
                "{} should pass the JSON Schema: {found:#?}",
                path.display()
            );
        }
        for (r, pointer, message) in &found {
            assert!(
                pointer.is_empty() || pointer.starts_with('/'),
                "{}: bad pointer {pointer:?} for {r}",
                path.display()
            );
            assert!(
                !message.trim().is_empty(),
                "{}: {r} has no sentence",
                path.display()
            );
        }
        rules.insert(rule);
    }
    rules
}

#[test]
fn valid_discovery_documents_have_no_finding() {
    assert!(check_valid(Kind::Discovery, "discovery") >= 5);
}

#[test]
fn each_invalid_discovery_document_fails_exactly_its_rule() {
    let rules = check_invalid(Kind::Discovery, "discovery");
    let count = documents(&vectors().join("discovery/invalid")).len();
    assert!(count >= 40, "only {count} invalid discovery vectors");
    // Every rule the discovery template can report has a vector.
    let template = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../codegen/templates/discovery_rules.rs"),
    )
    .unwrap_or_default();
    for rule in rule_ids(&template, "discovery.") {
        assert!(rules.contains(&rule), "rule {rule} has no failing vector");
    }
}

#[test]
fn valid_agent_cards_have_no_finding() {
    assert!(check_valid(Kind::AgentCard, "agent-card") >= 2);
}

#[test]
fn each_invalid_agent_card_fails_exactly_its_rule() {
    let rules = check_invalid(Kind::AgentCard, "agent-card");
    let template = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../codegen/templates/agent_card_rules.rs"),
    )
    .unwrap_or_default();
    for rule in rule_ids(&template, "agent-card.") {
        assert!(rules.contains(&rule), "rule {rule} has no failing vector");
    }
}

/// The quoted rule ids (`"<prefix>name"`) a template's source mentions.
fn rule_ids(source: &str, prefix: &str) -> BTreeSet<String> {
    let needle = format!("\"{prefix}");
    let mut ids = BTreeSet::new();
    let mut rest = source;
    while let Some(at) = rest.find(&needle) {
        let tail = &rest[at + 1..];
        let end = tail.find('"').unwrap_or(0);
        let id = &tail[..end];
        if id.len() > prefix.len()
            && id
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'-' || b == b'.')
        {
            ids.insert(id.to_owned());
        }
        rest = &tail[end..];
    }
    assert!(
        !ids.is_empty(),
        "no {prefix}* rule id found in the template"
    );
    ids
}

/// `validate_discovery` asks the schema for a verdict first and collects every error only
/// when the document fails (issue #17, validation throughput). This holds it to the full
/// path (every schema error, then the rules) on every discovery vector and on every
/// document one member or item away from one, so the two paths cannot drift apart.
#[test]
fn discovery_fast_path_matches_the_full_path() {
    use openwop_generated::validators::{self, discovery_rules};
    use serde_json::json;

    // The schema compiled the way the generated validators compile it (the same registry,
    // closed records included).
    let schema = validators::compile_schema(
        &json!({"$ref": "https://openwop.dev/spec/v2/capabilities.schema.json"}),
    )
    .expect("compile");

    let mut docs = Vec::new();
    for sub in ["valid", "invalid"] {
        for path in documents(&vectors().join("discovery").join(sub)) {
            let doc = read(&path);
            docs.extend(one_away(&doc));
            docs.push(doc);
        }
    }
    let (mut failing, mut passing) = (0, 0);
    for doc in &docs {
        let errors = schema_errors::as_findings(&schema, doc);
        assert_eq!(
            schema.is_valid(doc),
            errors.is_empty(),
            "is_valid and iter_errors disagree on {doc}: {errors:?}"
        );
        let mut full: Vec<(String, String, String)> = errors
            .into_iter()
            .map(|(pointer, message)| ("schema".to_owned(), pointer, message))
            .collect();
        full.extend(
            discovery_rules::check(doc, &TODAY)
                .into_iter()
                .map(|f| (f.rule, f.pointer, f.message)),
        );
        let fast: Vec<(String, String, String)> = validators::validate_discovery(doc, &TODAY)
            .into_iter()
            .map(|f| (f.rule, f.pointer, f.message))
            .collect();
        assert_eq!(
            fast, full,
            "validate_discovery differs from the full path on {doc}"
        );
        if full.iter().any(|(rule, _, _)| rule == "schema") {
            failing += 1;
        } else {
            passing += 1;
        }
    }
    // Both paths were exercised, many times over.
    assert!(
        failing > 100 && passing > 100,
        "{failing} failing, {passing} passing"
    );
}

/// Every document that differs from `doc` by one removed member or array item, at any depth.
fn one_away(doc: &Value) -> Vec<Value> {
    let mut out = Vec::new();
    match doc {
        Value::Object(map) => {
            for key in map.keys() {
                let mut without = map.clone();
                without.shift_remove(key);
                out.push(Value::Object(without));
                for inner in one_away(&map[key]) {
                    let mut changed = map.clone();
                    changed.insert(key.clone(), inner);
                    out.push(Value::Object(changed));
                }
            }
        }
        Value::Array(items) => {
            for i in 0..items.len() {
                let mut without = items.clone();
                without.remove(i);
                out.push(Value::Array(without));
                for inner in one_away(&items[i]) {
                    let mut changed = items.clone();
                    changed[i] = inner;
                    out.push(Value::Array(changed));
                }
            }
        }
        _ => {}
    }
    out
}
