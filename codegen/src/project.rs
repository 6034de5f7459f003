//! Keyword projection: one schema object rewritten into the subset typify 0.8 types
//! correctly. The originals stay with the validators, which enforce everything dropped here.

use serde_json::{Map, Value};

/// Keywords that only constrain values (typify panics on some and ignores the rest).
const VALIDATION_ONLY: &[&str] = &[
    "if",
    "then",
    "else",
    "not",
    "unevaluatedProperties",
    "unevaluatedItems",
    "dependentRequired",
    "dependentSchemas",
    "dependencies",
    "contains",
    "minContains",
    "maxContains",
    "$comment",
    "$schema",
    "$id",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$vocabulary",
    "$defs",
    "definitions",
];

/// String formats typify would map to crates the generated crate does not depend on.
const CRATE_FORMATS: &[&str] = &["date-time", "date", "time", "duration", "uuid"];

pub(crate) fn project_keywords(v: Value) -> Value {
    let Value::Object(obj) = v else { return v };
    let mut out = Map::new();
    let mut prefix_items = None;
    let mut items_after_prefix = None;
    for (k, child) in obj {
        match k.as_str() {
            k if VALIDATION_ONLY.contains(&k) => {}
            "const" => {
                out.insert("enum".to_owned(), Value::Array(vec![child]));
            }
            "format" if child.as_str().is_some_and(|f| CRATE_FORMATS.contains(&f)) => {}
            "prefixItems" => prefix_items = Some(child),
            "items" => items_after_prefix = Some(child),
            _ => {
                out.insert(k, child);
            }
        }
    }
    match (prefix_items, items_after_prefix) {
        // 2020-12 tuples are draft-07 `items: [...]`, and 2020-12 `items` beside them is
        // draft-07 `additionalItems`.
        (Some(prefix), rest) => {
            out.insert("items".to_owned(), prefix);
            out.insert(
                "additionalItems".to_owned(),
                rest.unwrap_or(Value::Bool(true)),
            );
        }
        (None, Some(Value::Bool(_))) => {}
        (None, Some(items)) => {
            out.insert("items".to_owned(), items);
        }
        (None, None) => {}
    }
    Value::Object(out)
}

/// True when a schema only checks values the model's type already admits: annotations,
/// `const`/`enum`, bounds, `required`, and `not`/`contains`/`if`/`properties`/`allOf`… over
/// such checks. Anything that would type a member (`$ref`, `type`, `items`, …) is not.
pub(crate) fn validation_only(v: &Value) -> bool {
    match v {
        Value::Bool(_) => true,
        Value::Object(o) => o.iter().all(|(k, child)| match k.as_str() {
            "description" | "title" | "$comment" | "examples" | "default" | "deprecated"
            | "readOnly" | "writeOnly" => true,
            "const" | "enum" | "pattern" | "minLength" | "maxLength" | "minimum" | "maximum"
            | "exclusiveMinimum" | "exclusiveMaximum" | "multipleOf" | "format" | "minItems"
            | "maxItems" | "uniqueItems" | "minProperties" | "maxProperties" | "required"
            | "dependentRequired" | "minContains" | "maxContains" => true,
            "not" | "contains" | "propertyNames" | "if" | "then" | "else" => validation_only(child),
            "properties" => child
                .as_object()
                .is_some_and(|m| m.values().all(validation_only)),
            "allOf" | "anyOf" | "oneOf" => child
                .as_array()
                .is_some_and(|a| a.iter().all(validation_only)),
            _ => false,
        }),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn const_becomes_a_one_value_enum() {
        assert_eq!(
            project_keywords(json!({"const": "v2"})),
            json!({"enum": ["v2"]})
        );
    }

    #[test]
    fn validation_only_keywords_go() {
        let v = json!({"type": "object", "if": {}, "then": {}, "else": {}, "not": {}, "unevaluatedProperties": false, "dependentRequired": {}});
        assert_eq!(project_keywords(v), json!({"type": "object"}));
    }

    #[test]
    fn prefix_items_become_a_draft07_tuple() {
        let v = json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}], "items": false});
        assert_eq!(
            project_keywords(v),
            json!({"type": "array", "items": [{"type": "string"}, {"type": "integer"}], "additionalItems": false})
        );
    }

    #[test]
    fn crate_formats_go_other_formats_stay() {
        assert_eq!(
            project_keywords(json!({"type": "string", "format": "date-time"})),
            json!({"type": "string"})
        );
        assert_eq!(
            project_keywords(json!({"type": "string", "format": "uri"})),
            json!({"type": "string", "format": "uri"})
        );
    }
}
