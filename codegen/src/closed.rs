//! Closed `allOf` records: where `unevaluatedProperties: false` can be validated as
//! `additionalProperties: false` over the names the record declares.
//!
//! The discovery schema closes each family record with `allOf: [record header, facet file]`
//! and `unevaluatedProperties: false`. jsonschema implements that keyword by re-validating
//! every `allOf` branch to learn which properties it evaluated, and when any branch fails,
//! JSON Schema discards that branch's annotations: every property of the record then reads as
//! "unexpected" as well. So one wrong value yields a second, misleading finding on the whole
//! record, and collecting errors costs several times the verdict (issue #29).
//!
//! When the names a record can evaluate are known statically (its own `properties`, those of
//! every `allOf` branch and `$ref` target, recursively, and no keyword that evaluates names
//! by pattern or wholesale), the two forms give the same verdict on every document:
//! - every branch valid: the evaluated names are exactly the instance's names the branches
//!   declare, so an unevaluated name is one no branch declares, which is what
//!   `additionalProperties: false` beside `properties: {<each declared name>: true}` rejects;
//! - some branch invalid: the document fails under both forms.
//!
//! Only the errors differ: the rewritten form reports an undeclared name, and never the
//! echo. The generated validators apply [`Closed`] patches to the schemas they register
//! (`generated/src/validators/mod.rs`, `CLOSED_RECORDS`); the embedded corpus files stay as
//! they are. A record whose names cannot be known statically keeps `unevaluatedProperties`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::load::Corpus;
use crate::uris::{SchemaUris, join};

/// One record to rewrite: where it sits, and the names it declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Closed {
    /// The schema file's URI.
    pub uri: String,
    /// JSON pointer of the record inside the file.
    pub pointer: String,
    /// Every property name the record's branches declare.
    pub names: BTreeSet<String>,
}

/// Keywords that evaluate instance names without declaring them (by pattern, wholesale, or
/// dynamically): a record whose branches use one keeps `unevaluatedProperties`.
const OPAQUE: &[&str] = &[
    "additionalProperties",
    "patternProperties",
    "unevaluatedProperties",
    "dependentSchemas",
    "$dynamicRef",
    "$recursiveRef",
];
/// Keywords whose subschemas apply conditionally: names they declare must also be declared
/// unconditionally, or the verdicts could differ.
const CONDITIONAL: &[&str] = &["if", "then", "else", "anyOf", "oneOf"];

/// Every record of the corpus that can be rewritten, in file and document order.
pub(crate) fn find(corpus: &Corpus, uris: &SchemaUris) -> Vec<Closed> {
    let by_uri: BTreeMap<&str, &str> = uris
        .by_file
        .iter()
        .map(|(rel, uri)| (uri.as_str(), rel.as_str()))
        .collect();
    let resolver = Resolver {
        corpus,
        uris,
        by_uri,
    };
    let mut out = Vec::new();
    for rel in &corpus.schema_files {
        let Some(uri) = uris.by_file.get(rel) else {
            continue;
        };
        let mut records = Vec::new();
        collect(corpus.value(rel), String::new(), &mut records);
        for pointer in records {
            let node = corpus.value(rel).pointer(&pointer).unwrap_or(&Value::Null);
            let mut seen = BTreeSet::new();
            let mut names = Names::default();
            if resolver
                .declared(uri, node, true, &mut seen, &mut names)
                .is_some()
                && names.conditional.is_subset(&names.always)
            {
                out.push(Closed {
                    uri: uri.clone(),
                    pointer,
                    names: names.always,
                });
            }
        }
    }
    out
}

/// Pointers of every object schema carrying `unevaluatedProperties: false`.
fn collect(v: &Value, pointer: String, out: &mut Vec<String>) {
    match v {
        Value::Object(obj) => {
            if obj.get("unevaluatedProperties") == Some(&Value::Bool(false)) {
                out.push(pointer.clone());
            }
            for (k, child) in obj {
                collect(
                    child,
                    format!("{pointer}/{}", crate::uris::pointer_token(k)),
                    out,
                );
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                collect(child, format!("{pointer}/{i}"), out);
            }
        }
        _ => {}
    }
}

struct Resolver<'a> {
    corpus: &'a Corpus,
    uris: &'a SchemaUris,
    by_uri: BTreeMap<&'a str, &'a str>,
}

/// The names a record declares: on every branch that applies, and under a condition.
#[derive(Default)]
struct Names {
    always: BTreeSet<String>,
    conditional: BTreeSet<String>,
}

impl Resolver<'_> {
    /// Adds the names `node` (in the file at `base`) declares for the instance it applies to
    /// to `names` (to `names.conditional` under a condition); `None` when they cannot be
    /// known statically. `root` is the record itself, whose own `unevaluatedProperties` is
    /// the keyword being replaced.
    fn declared(
        &self,
        base: &str,
        node: &Value,
        root: bool,
        seen: &mut BTreeSet<String>,
        names: &mut Names,
    ) -> Option<()> {
        let obj = match node {
            Value::Bool(_) => return Some(()),
            Value::Object(obj) => obj,
            _ => return None,
        };
        if OPAQUE
            .iter()
            .any(|k| obj.contains_key(*k) && !(root && *k == "unevaluatedProperties"))
        {
            return None;
        }
        match obj.get("properties") {
            Some(Value::Object(props)) => names.always.extend(props.keys().cloned()),
            Some(_) => return None,
            None => {}
        }
        if let Some(reference) = obj.get("$ref") {
            self.referenced(base, reference.as_str()?, seen, names)?;
        }
        if let Some(branches) = obj.get("allOf") {
            for branch in branches.as_array()? {
                self.declared(base, branch, false, seen, names)?;
            }
        }
        for key in CONDITIONAL {
            let Some(sub) = obj.get(*key) else { continue };
            let subs: Vec<&Value> = match sub {
                Value::Array(items) => items.iter().collect(),
                one => vec![one],
            };
            for s in subs {
                let mut inner = Names::default();
                self.declared(base, s, false, seen, &mut inner)?;
                names.conditional.extend(inner.always);
                names.conditional.extend(inner.conditional);
            }
        }
        Some(())
    }

    /// Adds the names the schema a `$ref` names declares; a file the corpus lacks is
    /// registered as `{}`, which declares none.
    fn referenced(
        &self,
        base: &str,
        reference: &str,
        seen: &mut BTreeSet<String>,
        names: &mut Names,
    ) -> Option<()> {
        let (path, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        let uri = if path.is_empty() {
            base.to_owned()
        } else {
            join(base, path)
        };
        let key = format!("{uri}#{fragment}");
        // A cycle cannot be resolved statically.
        if !seen.insert(key.clone()) {
            return None;
        }
        let Some(rel) = self.by_uri.get(uri.as_str()) else {
            return self.uris.missing.contains_key(&uri).then_some(());
        };
        // Only JSON-pointer fragments; an anchor name is left to the runtime.
        if !(fragment.is_empty() || fragment.starts_with('/')) {
            return None;
        }
        let node = self.corpus.value(rel).pointer(fragment)?;
        let found = self.declared(&uri, node, false, seen, names);
        // `seen` is the current chain of references: the same definition reached again on
        // another branch is not a cycle.
        seen.remove(&key);
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn resolve(doc: Value, pointer: &str) -> Option<BTreeSet<String>> {
        let mut corpus = Corpus::empty();
        corpus.insert_schema("schemas/v2/x.schema.json", doc);
        let uris = crate::uris::resolve(&corpus);
        let found = find(&corpus, &uris);
        found
            .into_iter()
            .find(|c| c.pointer == pointer)
            .map(|c| c.names)
    }

    fn names(list: &[&str]) -> Option<BTreeSet<String>> {
        Some(list.iter().map(|s| (*s).to_owned()).collect())
    }

    #[test]
    fn a_closed_all_of_declares_the_union_of_its_branches() {
        let doc = json!({
            "$id": "https://x.example/schemas/v2/x.schema.json",
            "$defs": {
                "head": {"properties": {"status": {}}, "allOf": [{"if": {"properties": {"status": {"const": "a"}}}, "then": {"required": ["b"]}}]},
                "rec": {"allOf": [{"$ref": "#/$defs/head"}, {"properties": {"b": {}, "c": {}}}], "unevaluatedProperties": false}
            }
        });
        assert_eq!(resolve(doc, "/$defs/rec"), names(&["b", "c", "status"]));
    }

    #[test]
    fn a_record_evaluating_names_by_pattern_or_condition_is_left_alone() {
        let by_pattern = json!({"$defs": {"rec": {"allOf": [{"patternProperties": {"^x": {}}}], "unevaluatedProperties": false}}});
        assert_eq!(resolve(by_pattern, "/$defs/rec"), None);
        let conditional = json!({"$defs": {"rec": {"properties": {"a": {}}, "anyOf": [{"properties": {"b": {}}}], "unevaluatedProperties": false}}});
        assert_eq!(resolve(conditional, "/$defs/rec"), None);
        let cycle = json!({"$defs": {"rec": {"allOf": [{"$ref": "#/$defs/rec"}], "unevaluatedProperties": false}}});
        assert_eq!(resolve(cycle, "/$defs/rec"), None);
    }
}
