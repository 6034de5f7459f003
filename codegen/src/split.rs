//! Split schemas: a closed root object validated one declared property at a time.
//!
//! `capabilities.schema.json` is a closed object (`type`, `required`, `properties`,
//! `additionalProperties: false`) whose properties are checked independently of each other.
//! Collecting every error (`iter_errors`) costs several times the verdict (`is_valid`), even
//! where the document is valid, so the generated validator takes the verdict per property
//! and collects errors only under the properties that fail: the same errors, in the same
//! order, as `iter_errors` on the whole document, at a fraction of the cost when one family of
//! several is wrong (issue #29).
//!
//! The generator decides here, from the corpus, whether a schema has the one shape the split
//! reproduces exactly; a schema of any other shape keeps the whole-document validator. The
//! split's algorithm is emitted with the validators (`emit::validators`), so the CLI, the
//! host and every SDK user run one validator, and `runtime/tests/validate_differential.rs`
//! holds it to jsonschema's own whole-document errors.

use serde_json::{Map, Value};

use crate::load::Corpus;

/// Root keywords the split reproduces exactly (the rest are annotations).
const ROOT_KEYWORDS: &[&str] = &[
    "type",
    "required",
    "properties",
    "additionalProperties",
    "title",
    "description",
    "$comment",
];

/// Keywords a schema file may carry beside its root `$ref`.
const WRAPPER: &[&str] = &[
    "$ref",
    "$defs",
    "$schema",
    "$id",
    "title",
    "description",
    "$comment",
];

/// A root object schema taken apart.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Split {
    /// The root object with every property schema replaced by `true`: `type`, `required` and
    /// `additionalProperties` alone, as JSON text.
    pub root: String,
    /// Each declared property, in the schema's order, with a `$ref` to its schema.
    pub properties: Vec<(String, String)>,
}

/// The split of the schema file `rel` (served under `uri`), or why it does not apply.
pub(crate) fn find(corpus: &Corpus, rel: &str, uri: &str) -> Result<Split, String> {
    if !corpus.has(rel) {
        return Err(format!("the corpus has no {rel}"));
    }
    let file = corpus.value(rel);
    let Some(Value::String(target)) = file.get("$ref") else {
        return Err("the schema has no root $ref".into());
    };
    let Some(pointer) = target.strip_prefix('#') else {
        return Err("the root $ref leaves the file".into());
    };
    if file
        .as_object()
        .is_none_or(|o| o.keys().any(|k| !WRAPPER.contains(&k.as_str())))
    {
        return Err("the file has keywords beside its root $ref".into());
    }
    let Some(Value::Object(object)) = file.pointer(pointer) else {
        return Err("the root $ref does not name an object schema".into());
    };
    if let Some(k) = object.keys().find(|k| !ROOT_KEYWORDS.contains(&k.as_str())) {
        return Err(format!(
            "the root schema has `{k}`, which the split does not reproduce"
        ));
    }
    if !matches!(
        object.get("additionalProperties"),
        None | Some(Value::Bool(false))
    ) {
        return Err("the root schema's additionalProperties is a schema".into());
    }
    let Some(Value::Object(declared)) = object.get("properties") else {
        return Err("the root schema declares no properties".into());
    };
    let properties = declared
        .keys()
        .map(|name| {
            let token = crate::uris::pointer_token(name);
            (name.clone(), format!("{uri}#{pointer}/properties/{token}"))
        })
        .collect();
    let mut root = object.clone();
    let open: Map<String, Value> = declared
        .keys()
        .map(|k| (k.clone(), Value::Bool(true)))
        .collect();
    root.insert("properties".to_owned(), Value::Object(open));
    Ok(Split {
        root: Value::Object(root).to_string(),
        properties,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn corpus(file: Value) -> Corpus {
        let mut corpus = Corpus::empty();
        corpus.insert_schema("schemas/x.schema.json", file);
        corpus
    }

    #[test]
    fn a_closed_root_object_splits_into_its_properties() {
        let c = corpus(json!({
            "$id": "u", "$ref": "#/$defs/r",
            "$defs": {"r": {"type": "object", "required": ["a"], "additionalProperties": false,
                            "properties": {"a": {"type": "string"}, "b/c": {"$ref": "#/$defs/x"}}}}
        }));
        let split = find(&c, "schemas/x.schema.json", "u").expect("splits");
        assert_eq!(
            split.properties,
            vec![
                ("a".to_owned(), "u#/$defs/r/properties/a".to_owned()),
                ("b/c".to_owned(), "u#/$defs/r/properties/b~1c".to_owned()),
            ]
        );
        let root: Value = serde_json::from_str(&split.root).expect("json");
        assert_eq!(root["properties"], json!({"a": true, "b/c": true}));
        assert_eq!(root["required"], json!(["a"]));
    }

    #[test]
    fn any_other_shape_keeps_the_whole_validator() {
        for file in [
            json!({"type": "object"}),
            json!({"$ref": "#/$defs/r", "allOf": [], "$defs": {"r": {"type": "object", "properties": {}}}}),
            json!({"$ref": "#/$defs/r", "$defs": {"r": {"type": "object", "properties": {}, "if": {}}}}),
            json!({"$ref": "#/$defs/r", "$defs": {"r": {"properties": {}, "additionalProperties": {}}}}),
            json!({"$ref": "#/$defs/r", "$defs": {"r": {"type": "object"}}}),
            json!({"$ref": "other.json", "$defs": {}}),
        ] {
            assert!(
                find(&corpus(file.clone()), "schemas/x.schema.json", "u").is_err(),
                "{file}"
            );
        }
    }
}
