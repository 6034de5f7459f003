//! The discovery document's JSON Schema pass, split at the root object.
//!
//! `capabilities.schema.json` is a closed object (`type`, `required`, `properties`,
//! `additionalProperties: false`) whose properties are checked independently of each
//! other: each family record (`a2a`, `mcp`, …) is `allOf: [record, facet]` closed by
//! `unevaluatedProperties: false`. jsonschema's error walk (`iter_errors`) costs about five
//! times its verdict (`is_valid`) on such a record, even on one that is valid, because
//! `unevaluatedProperties` re-validates every `allOf` branch to find what it evaluated. So
//! the verdict is taken per property, and errors are collected only under the properties
//! that fail: the same errors, in the same order, as `iter_errors` on the whole document,
//! at a fraction of the cost when one family of several is wrong.
//!
//! The root's errors come in jsonschema's keyword order: `type` and `required` first, then
//! `properties` (the members' errors, in document order), then `additionalProperties`;
//! [`Split::findings`] rebuilds that order. If the schema ever takes another shape the split
//! does not apply to, [`findings`] falls back to the generated validator.

use std::fmt::Write;
use std::sync::{LazyLock, OnceLock};

use jsonschema::error::ValidationErrorKind;
use openwop_generated::validators::{self, Finding, Options};
use serde_json::{Map, Value};

/// The URI the generated discovery validator compiles.
const CAPABILITIES_URI: &str = "https://openwop.dev/spec/v2/capabilities.schema.json";

/// Root keywords the split reproduces exactly; any other keeps the generated validator.
const ROOT_KEYWORDS: &[&str] = &[
    "type",
    "required",
    "properties",
    "additionalProperties",
    "title",
    "description",
    "$comment",
];

/// The discovery schema as a root-only validator and one validator per declared property.
struct Split {
    /// The root object with every property schema replaced by `true`: `type`, `required`
    /// and `additionalProperties` alone.
    root: jsonschema::Validator,
    /// Each declared property, in the schema's order.
    properties: Vec<Property>,
}

/// A declared property and its validator, compiled when a document first has the property:
/// compiled one by one they cost twice what the whole schema does (shared definitions are
/// compiled again for each), and a document has a handful of the twenty-odd properties.
struct Property {
    name: String,
    /// `$ref` to the property's schema.
    schema: Value,
    /// `None` when it does not compile; the document then goes to the generated validator.
    validator: OnceLock<Option<jsonschema::Validator>>,
}

static SPLIT: LazyLock<Option<Split>> = LazyLock::new(|| Split::compile().ok());

/// What `validators::validate_discovery` returns, the same findings in the same order.
pub fn findings(doc: &Value, opts: &Options) -> Vec<Finding> {
    let Some(mut findings) = SPLIT.as_ref().and_then(|split| split.findings(doc)) else {
        return validators::validate_discovery(doc, opts);
    };
    findings.extend(validators::discovery_rules::check(doc, opts));
    findings
}

impl Split {
    /// Compiles the split from the embedded capabilities schema, each part with the
    /// generated validators' own registry and options (`validators::compile_schema`); an
    /// error when the schema is not of the shape the split reproduces.
    fn compile() -> Result<Split, String> {
        let file = openwop_generated::schemas::ALL
            .iter()
            .find(|f| f.uri == CAPABILITIES_URI)
            .ok_or("no capabilities schema")?;
        let file: Value = serde_json::from_str(file.text).map_err(|e| e.to_string())?;
        // The file is `{"$ref": "#/$defs/<name>", "$defs": …}` plus annotations.
        let Some(Value::String(target)) = file.get("$ref") else {
            return Err("the capabilities schema has no root $ref".into());
        };
        let Some(pointer) = target.strip_prefix('#') else {
            return Err("the root $ref leaves the file".into());
        };
        let wrapper = [
            "$ref",
            "$defs",
            "$schema",
            "$id",
            "title",
            "description",
            "$comment",
        ];
        if file
            .as_object()
            .is_none_or(|o| o.keys().any(|k| !wrapper.contains(&k.as_str())))
        {
            return Err("the capabilities file has keywords beside its $ref".into());
        }
        let Some(Value::Object(object)) = file.pointer(pointer) else {
            return Err("the root $ref does not name an object schema".into());
        };
        if object.keys().any(|k| !ROOT_KEYWORDS.contains(&k.as_str()))
            || !matches!(
                object.get("additionalProperties"),
                None | Some(Value::Bool(false))
            )
        {
            return Err("the root schema has keywords the split does not reproduce".into());
        }
        let Some(Value::Object(declared)) = object.get("properties") else {
            return Err("the root schema declares no properties".into());
        };
        let properties = declared
            .keys()
            .map(|name| {
                let at = format!("{CAPABILITIES_URI}#{pointer}/properties/{}", escape(name));
                let mut reference = Map::new();
                reference.insert("$ref".to_owned(), Value::String(at));
                Property {
                    name: name.clone(),
                    schema: Value::Object(reference),
                    validator: OnceLock::new(),
                }
            })
            .collect();
        let mut root = object.clone();
        let open = declared.keys().map(|k| (k.clone(), Value::Bool(true)));
        root.insert("properties".to_owned(), Value::Object(open.collect()));
        let root = validators::compile_schema(&Value::Object(root))?;
        Ok(Split { root, properties })
    }

    /// The validator of a declared property: `None` when `name` is not declared,
    /// `Some(None)` when its schema does not compile. A linear scan: `==` compares lengths
    /// before bytes, which a sorted search's `cmp` does not, and there are some twenty names.
    fn property(&self, name: &str) -> Option<Option<&jsonschema::Validator>> {
        let property = self.properties.iter().find(|p| p.name == name)?;
        let validator = property
            .validator
            .get_or_init(|| validators::compile_schema(&property.schema).ok());
        Some(validator.as_ref())
    }

    /// `None` when a property of `doc` has a schema that does not compile.
    fn findings(&self, doc: &Value) -> Option<Vec<Finding>> {
        let root_valid = self.root.is_valid(doc);
        let mut failing = Vec::new();
        if let Value::Object(members) = doc {
            for (name, value) in members {
                if let Some(validator) = self.property(name) {
                    let validator = validator?;
                    if !validator.is_valid(value) {
                        failing.push((name, validator, value));
                    }
                }
            }
        }
        if root_valid && failing.is_empty() {
            return Some(Vec::new());
        }
        let mut findings = Vec::new();
        let mut additional = Vec::new();
        if !root_valid {
            for e in self.root.iter_errors(doc) {
                let finding = finding(String::new(), &e);
                if matches!(e.kind(), ValidationErrorKind::AdditionalProperties { .. }) {
                    additional.push(finding);
                } else {
                    findings.push(finding);
                }
            }
        }
        for (name, validator, value) in failing {
            let mut prefix = String::with_capacity(name.len() + 1);
            prefix.push('/');
            prefix.push_str(&escape(name));
            findings.extend(
                validator
                    .iter_errors(value)
                    .map(|e| finding(prefix.clone(), &e)),
            );
        }
        findings.extend(additional);
        Some(findings)
    }
}

/// A `schema` finding whose pointer is `prefix` followed by the error's instance path.
fn finding(mut pointer: String, e: &jsonschema::ValidationError<'_>) -> Finding {
    // Formatting straight into a buffer of a typical message's size spares the reallocations
    // `to_string` makes while a message grows.
    let mut message = String::with_capacity(128);
    let _ = write!(pointer, "{}", e.instance_path());
    let _ = write!(message, "{e}");
    Finding {
        pointer,
        rule: "schema".to_owned(),
        message,
    }
}

/// A property name as a JSON pointer token.
fn escape(name: &str) -> std::borrow::Cow<'_, str> {
    if name.contains(['~', '/']) {
        name.replace('~', "~0").replace('/', "~1").into()
    } else {
        name.into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    const TODAY: Options = Options {
        today: Some((2026, 12, 1)),
    };

    fn vectors(sub: &str) -> Vec<Value> {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/vectors/discovery")
            .join(sub);
        let mut paths: Vec<_> = std::fs::read_dir(&dir)
            .expect("vectors")
            .map(|e| e.expect("entry").path())
            .collect();
        paths.sort();
        paths
            .iter()
            .map(|p| {
                serde_json::from_str(&std::fs::read_to_string(p).expect("read")).expect("json")
            })
            .collect()
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

    /// Each member of `object` removed, replaced by junk, and an unknown member added.
    fn mutations(object: &Map<String, Value>) -> Vec<Map<String, Value>> {
        let mut out = Vec::new();
        for key in object.keys() {
            let mut without = object.clone();
            without.shift_remove(key);
            out.push(without);
            for value in junk() {
                let mut changed = object.clone();
                changed.insert(key.clone(), value);
                out.push(changed);
            }
        }
        let mut extra = object.clone();
        extra.insert("zz/unknown~".to_owned(), json!(1));
        out.push(extra);
        out
    }

    /// The documents to compare: every vector, and the valid ones broken at the root, one
    /// level down, and in several places at once.
    fn corpus() -> Vec<Value> {
        let valid = vectors("valid");
        let mut docs = vectors("invalid");
        for doc in &valid {
            let Value::Object(root) = doc else { continue };
            docs.extend(mutations(root).into_iter().map(Value::Object));
            for (key, member) in root {
                let Value::Object(inner) = member else {
                    continue;
                };
                for changed in mutations(inner) {
                    let mut copy = root.clone();
                    copy.insert(key.clone(), Value::Object(changed));
                    docs.push(Value::Object(copy));
                }
            }
            let mut several = root.clone();
            several.shift_remove("preferredVersion");
            several.insert("unknownRoot".to_owned(), json!({}));
            for member in several.values_mut() {
                if let Value::Object(inner) = member {
                    inner.insert("zz".to_owned(), json!(1));
                    inner.shift_remove("status");
                }
            }
            docs.push(Value::Object(several));
        }
        docs.extend(valid);
        docs.extend(junk());
        docs
    }

    #[test]
    fn the_split_finds_what_the_generated_validator_finds_in_the_same_order() {
        let split = Split::compile();
        let Ok(split) = split.as_ref() else {
            panic!("the discovery schema no longer splits: {:?}", split.err());
        };
        for property in &split.properties {
            let compiled = validators::compile_schema(&property.schema);
            assert!(compiled.is_ok(), "{}: {:?}", property.name, compiled.err());
        }
        let docs = corpus();
        assert!(docs.len() > 1000, "{} documents", docs.len());
        let mut failing = 0;
        for doc in &docs {
            let expected = validators::validate_discovery(doc, &TODAY);
            failing += usize::from(expected.iter().any(|f| f.rule == "schema"));
            assert_eq!(findings(doc, &TODAY), expected, "{doc}");
        }
        assert!(failing > docs.len() / 2, "{failing} of {} fail", docs.len());
    }

    #[test]
    fn pointer_tokens_are_escaped() {
        assert_eq!(escape("a2a"), "a2a");
        assert_eq!(escape("a/b~c"), "a~1b~0c");
    }
}
