//! One verdict (issue #29): the generated validator and what `openwop validate` reports
//! find the same findings, on every discovery vector, on every single mistake derived from
//! the valid vectors, and on every pair of independent semantic mistakes. The CLI calls the
//! generated `validate_discovery` itself (its fast path, the split schema pass, is generated
//! with it: codegen/src/split.rs), so what can differ is only what the report does.
//!
//! "What the CLI reports" is the library path the CLI prints from: `validate` for the
//! findings, then the report's per-document step (`report::entries`), compared as sets because
//! the report sorts. A finding the report drops because another is present fails here.
//! `report::entries` keeps the schema findings a rule restates; what a run shows is
//! `report::document`, which holds those back on purpose (one defect, one finding) and is
//! tested in `validate/`.
//!
//! The same documents also hold the generated validator's schema verdict to the corpus
//! schema as written (closed records keep `unevaluatedProperties`): the generator registers
//! closed records as `additionalProperties` over their declared names
//! (codegen/src/closed.rs), which must never change a verdict.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

#[path = "support/schema_errors.rs"]
mod schema_errors;

use openwop::validate::report;
use openwop::validate::rules::{Docs, default_severity};
use openwop::validate::{Kind, validate};
use openwop_generated::validators::{self, Options};
use serde_json::{Map, Value, json};

const TODAY: Options = Options {
    today: Some((2026, 12, 1)),
};

fn vectors(sub: &str) -> Vec<Value> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/vectors/discovery")
        .join(sub);
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("vectors")
        .map(|e| e.expect("entry").path())
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|p| serde_json::from_str(&std::fs::read_to_string(p).expect("read")).expect("json"))
        .collect()
}

/// One edit of a document: the JSON pointer of the value it changes and what it does.
#[derive(Debug, Clone)]
enum Edit {
    /// Remove the member or item.
    Drop(String),
    /// Put `Value` at the pointer (its parent must exist).
    Set(String, Value),
}

impl Edit {
    fn pointer(&self) -> &str {
        match self {
            Edit::Drop(p) | Edit::Set(p, _) => p,
        }
    }

    fn apply(&self, doc: &mut Value) -> bool {
        let pointer = self.pointer();
        let Some((parent, last)) = pointer.rsplit_once('/') else {
            return false;
        };
        let key = last.replace("~1", "/").replace("~0", "~");
        match (doc.pointer_mut(parent), self) {
            (Some(Value::Object(map)), Edit::Drop(_)) => map.shift_remove(&key).is_some(),
            (Some(Value::Object(map)), Edit::Set(_, v)) => {
                map.insert(key, v.clone());
                true
            }
            (Some(Value::Array(items)), Edit::Drop(_)) => match key.parse::<usize>() {
                Ok(i) if i < items.len() => {
                    items.remove(i);
                    true
                }
                _ => false,
            },
            (Some(Value::Array(items)), Edit::Set(_, v)) => match key.parse::<usize>() {
                Ok(i) if i < items.len() => {
                    items[i] = v.clone();
                    true
                }
                _ => false,
            },
            _ => false,
        }
    }
}

/// Values of every JSON type, to put where the schema wants something else.
fn junk() -> [Value; 6] {
    [
        Value::Null,
        json!(1),
        json!("x"),
        json!([]),
        json!({}),
        json!(true),
    ]
}

/// Structural mistakes at every depth: each member or item dropped or replaced by a value of
/// each other type, and an unknown member added to each object.
fn structural(v: &Value, pointer: &str, out: &mut Vec<Edit>) {
    let children: Vec<(String, &Value)> = match v {
        Value::Object(map) => {
            out.push(Edit::Set(format!("{pointer}/zzUnknown"), json!(1)));
            map.iter()
                .map(|(k, c)| (k.replace('~', "~0").replace('/', "~1"), c))
                .collect()
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, c)| (i.to_string(), c))
            .collect(),
        _ => return,
    };
    for (key, child) in children {
        let here = format!("{pointer}/{key}");
        out.push(Edit::Drop(here.clone()));
        out.extend(junk().into_iter().map(|j| Edit::Set(here.clone(), j)));
        structural(child, &here, out);
    }
}

/// Mistakes a reader makes on purpose-built fields: versions not offered or malformed,
/// stale, future and impossible dates, out-of-range numbers, enum values that do not exist,
/// forbidden blocks, legacy profiles, unknown features. Those whose parent is absent from
/// a document are skipped for it.
fn semantic() -> Vec<Edit> {
    let set = |p: &str, v: Value| Edit::Set(p.to_owned(), v);
    let mut edits = vec![
        set("/preferredVersion", json!("3.0")),
        set("/preferredVersion", json!("2.0.1")),
        set("/protocolVersion", json!("9.9")),
        set("/protocolVersions", json!(["2.0", "2.0"])),
        set("/protocolVersions", json!([])),
        set("/supportedTransports", json!(["http"])),
        set("/grpc", json!({})),
        set("/profiles", json!(["a2a-1.0"])),
        set("/extensions/Bad_Key", json!({})),
        set("/engineVersion", json!(-1)),
    ];
    for (facet, offered, floor, version, later, profile) in [
        ("a2a", "versions", "minimumVersion", "1.0", "9.0", "a2a-"),
        (
            "mcp",
            "revisions",
            "minimumRevision",
            "2026-07-28",
            "2099-01-01",
            "mcp-",
        ),
    ] {
        let at = |k: &str| format!("/{facet}/{k}");
        edits.extend([
            set(&at("preferredVersion"), json!(later)),
            set(&at(floor), json!(later)),
            set(&at(offered), json!([later])),
            set(&at("refreshedAt"), json!("2020-01-01")),
            set(&at("refreshedAt"), json!("2027-06-01")),
            set(&at("refreshedAt"), json!("2026-02-30")),
            set(&at("refreshWindowDays"), json!(0)),
            set(&at("refreshWindowDays"), json!(91)),
            set(
                &at("profiles"),
                json!([format!("{profile}{version}-legacy")]),
            ),
            set(&at("profiles"), json!([format!("{profile}{later}")])),
            set(&at("status"), json!("experimental")),
            set(&at("until"), json!("3.0")),
            set(&at("witness"), json!("trust-me")),
            set(&at("supportedTransports"), json!(["http"])),
            Edit::Drop(at("preferredVersion")),
            Edit::Drop(at(offered)),
        ]);
    }
    edits.extend([
        set("/a2a/agentCards", json!(true)),
        set("/a2a/agentCards", json!(false)),
        set("/mcp/features", json!(["server-discover", "telepathy"])),
        set("/mcp/features", json!(["extensions"])),
        Edit::Drop("/mcp/serverMount".to_owned()),
        set("/mcp/mrtr", json!({"maxRounds": 17})),
        set("/mcp/serverMount/transports", json!(["carrier-pigeon"])),
        set(
            "/hostEvents/types",
            json!([{"type": "negotiation.decided", "delivery": "ephemeral"}]),
        ),
        set("/hostEvents/types", json!([])),
        Edit::Drop("/hostEvents".to_owned()),
        set("/auth/lanes/0/revocation", json!("crl")),
        set("/auth/lanes/0/revocation", json!("exp-only")),
        set("/auth/lanes/1/revocation", json!("ocsp")),
        set("/auth/lanes/1/lane", json!("carrier")),
    ]);
    edits
}

/// Whether neither pointer is the other or inside it.
fn independent(a: &str, b: &str) -> bool {
    let inside = |p: &str, parent: &str| p == parent || p.starts_with(&format!("{parent}/"));
    !inside(a, b) && !inside(b, a)
}

/// Every document to compare: the vectors, each valid vector with each structural and each
/// semantic mistake, and with each pair of independent semantic mistakes.
fn documents() -> (Vec<Value>, usize) {
    let valid = vectors("valid");
    let mut docs = vectors("invalid");
    docs.extend(junk());
    let semantic = semantic();
    let mut pairs = 0;
    for doc in &valid {
        let mut singles = Vec::new();
        structural(doc, "", &mut singles);
        for edit in &singles {
            let mut changed = doc.clone();
            if edit.apply(&mut changed) {
                docs.push(changed);
            }
        }
        let applicable: Vec<&Edit> = semantic
            .iter()
            .filter(|e| e.apply(&mut doc.clone()))
            .collect();
        for (i, a) in applicable.iter().enumerate() {
            let mut one = doc.clone();
            a.apply(&mut one);
            docs.push(one.clone());
            for b in &applicable[i + 1..] {
                if independent(a.pointer(), b.pointer()) {
                    let mut two = one.clone();
                    b.apply(&mut two);
                    docs.push(two);
                    pairs += 1;
                }
            }
        }
    }
    docs.extend(valid);
    (docs, pairs)
}

type Key = (String, String, String);

fn generated(doc: &Value) -> BTreeSet<Key> {
    // The CLI cuts a long message (a schema sentence quoting a whole record) the same way
    // in every format, and rewords the schema's sentence for a forbidden member (`not:
    // {}`); the finding is the same.
    validators::validate_discovery(doc, &TODAY)
        .into_iter()
        .map(|f| {
            let message = report::entry_message(&f.rule, &f.pointer, f.message);
            (f.pointer, f.rule, message)
        })
        .collect()
}

fn reported(doc: &Value) -> BTreeSet<Key> {
    // What the CLI renders: findings placed on the text, at the catalogue's severity.
    let findings = validate(Kind::Discovery, doc, None, &TODAY);
    let docs = Docs::new(None);
    let level = |rule: &str| Some(default_severity(rule));
    report::entries("doc.json", &doc.to_string(), findings, level, &docs)
        .into_iter()
        .map(|e| (e.pointer, e.rule, e.message))
        .collect()
}

#[test]
fn the_cli_reports_what_the_generated_validator_finds() {
    let (docs, pairs) = documents();
    assert!(
        docs.len() > 5_000 && pairs > 1_000,
        "{} documents, {pairs} pairs",
        docs.len()
    );
    let mut differing = Vec::new();
    for doc in &docs {
        let (want, got) = (generated(doc), reported(doc));
        if want != got {
            differing.push(format!(
                "{doc}\n  missing from the CLI: {:?}\n  only in the CLI: {:?}",
                want.difference(&got).collect::<Vec<_>>(),
                got.difference(&want).collect::<Vec<_>>()
            ));
        }
    }
    assert!(
        differing.is_empty(),
        "{} of {} documents differ; the first:\n{}",
        differing.len(),
        docs.len(),
        differing
            .iter()
            .take(3)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// The documents that made issue #29: two independent mistakes in the `a2a` record, each
/// reported alone and both reported together.
#[test]
fn a_finding_is_not_dropped_because_another_is_present() {
    let base = vectors("valid")
        .into_iter()
        .find(|d| d.get("a2a").is_some() && d.get("mcp").is_some())
        .expect("a vector with both facets");
    let transports = Edit::Set("/a2a/supportedTransports".into(), json!(["http"]));
    let stale = Edit::Set("/a2a/refreshedAt".into(), json!("2020-01-01"));
    let with = |edits: &[&Edit]| {
        let mut doc = base.clone();
        for e in edits {
            assert!(e.apply(&mut doc));
        }
        doc
    };
    let alone: BTreeSet<Key> = reported(&with(&[&transports]))
        .union(&reported(&with(&[&stale])))
        .cloned()
        .collect();
    let both = reported(&with(&[&transports, &stale]));
    assert!(
        alone
            .iter()
            .any(|(p, r, _)| p == "/a2a/supportedTransports" && r == "schema"),
        "{alone:?}"
    );
    assert_eq!(both, alone);
}

#[test]
fn closed_records_keep_the_schema_verdict() {
    // The corpus schema exactly as written, with no closed-record rewrite.
    let mut resources: Vec<(&'static str, Value)> = Vec::new();
    for file in openwop_generated::schemas::ALL {
        resources.push((file.uri, serde_json::from_str(file.text).expect("schema")));
    }
    for uri in openwop_generated::schemas::MISSING {
        resources.push((*uri, Value::Object(Map::new())));
    }
    let registry = jsonschema::Registry::new()
        .extend(resources)
        .and_then(|b| b.prepare())
        .expect("registry");
    let uri = "https://openwop.dev/spec/v2/capabilities.schema.json";
    let as_written = jsonschema::options()
        .with_registry(&registry)
        .should_validate_formats(true)
        .build(&json!({"$ref": uri}))
        .expect("compile");
    let rewritten = validators::compile_schema(&json!({"$ref": uri})).expect("compile");
    let (docs, _) = documents();
    let mut failing = 0;
    for doc in &docs {
        let verdict = as_written.is_valid(doc);
        assert_eq!(rewritten.is_valid(doc), verdict, "{doc}");
        failing += usize::from(!verdict);
    }
    assert!(failing > docs.len() / 2, "{failing} of {} fail", docs.len());
}

/// The generated validator takes a closed root object apart (codegen/src/split.rs): the
/// verdict per declared property, errors collected only where one fails. Its schema findings
/// must be exactly jsonschema's own errors on the whole document, in the same order.
#[test]
fn the_split_schema_pass_reports_the_whole_schemas_errors_in_order() {
    let uri = "https://openwop.dev/spec/v2/capabilities.schema.json";
    let whole = validators::compile_schema(&json!({"$ref": uri})).expect("compile");
    let (mut docs, _) = documents();
    // Several mistakes at once, at the root and in every family, and member names that need
    // escaping in a pointer.
    for doc in vectors("valid") {
        let Value::Object(mut root) = doc else {
            continue;
        };
        root.shift_remove("preferredVersion");
        root.insert("zz/unknown~".to_owned(), json!({}));
        for member in root.values_mut() {
            if let Value::Object(inner) = member {
                inner.insert("zz".to_owned(), json!(1));
                inner.shift_remove("status");
            }
        }
        docs.push(Value::Object(root));
    }
    let mut failing = 0;
    for doc in &docs {
        let want = schema_errors::as_findings(&whole, doc);
        let got: Vec<(String, String)> = validators::validate_discovery(doc, &TODAY)
            .into_iter()
            .filter(|f| f.rule == "schema")
            .map(|f| (f.pointer, f.message))
            .collect();
        assert_eq!(got, want, "{doc}");
        failing += usize::from(!want.is_empty());
    }
    assert!(failing > docs.len() / 2, "{failing} of {} fail", docs.len());
}

/// Every string and number of a document replaced, one at a time, by values that sit on
/// the edges of the corpus's patterns, formats and bounds.
fn leaf_edits(v: &Value, pointer: &str, out: &mut Vec<Edit>) {
    match v {
        Value::Object(map) => {
            for (k, c) in map {
                let token = k.replace('~', "~0").replace('/', "~1");
                leaf_edits(c, &format!("{pointer}/{token}"), out);
            }
        }
        Value::Array(items) => {
            for (i, c) in items.iter().enumerate() {
                leaf_edits(c, &format!("{pointer}/{i}"), out);
            }
        }
        Value::String(_) => {
            for s in [
                "",
                "a",
                "A-b",
                "0.0",
                "01.0",
                "1.01",
                "10.20",
                "1.",
                ".1",
                "1.0.0",
                "2.0x",
                "2026-02-28",
                "2026-02-29",
                "2024-02-29",
                "2026-13-01",
                "2026-1-01",
                "mcp-2026-07-28",
                "a2a-1.0",
                "é",
                "https://example.com/x",
                "not a uri",
                "stable",
                "acme.feature",
                "acme.feature-x.y",
            ] {
                out.push(Edit::Set(pointer.to_owned(), json!(s)));
            }
        }
        Value::Number(_) => {
            for n in [
                json!(-1),
                json!(0),
                json!(1),
                json!(1.0),
                json!(1.5),
                json!(16),
                json!(17),
                json!(365),
                json!(1e30),
            ] {
                out.push(Edit::Set(pointer.to_owned(), n));
            }
        }
        _ => {}
    }
}

/// The schema's verdict is generated from the schema (the codegen's `verdict`), and only
/// where it fails are errors collected: it must be jsonschema's own verdict on every
/// document, or a finding would go missing (or errors be collected for nothing).
#[test]
fn the_generated_verdict_is_jsonschemas() {
    let uri = "https://openwop.dev/spec/v2/capabilities.schema.json";
    let whole = validators::compile_schema(&json!({"$ref": uri})).expect("compile");
    let (mut docs, _) = documents();
    for doc in vectors("valid") {
        let mut edits = Vec::new();
        leaf_edits(&doc, "", &mut edits);
        for edit in edits {
            let mut changed = doc.clone();
            if edit.apply(&mut changed) {
                docs.push(changed);
            }
        }
    }
    let (mut valid, mut invalid) = (0, 0);
    for doc in &docs {
        let want = whole.is_valid(doc);
        assert_eq!(validators::is_valid_discovery(doc), want, "{doc}");
        if want {
            valid += 1;
        } else {
            invalid += 1;
        }
    }
    assert!(
        valid > 100 && invalid > 1000,
        "{valid} valid, {invalid} invalid documents"
    );
}
