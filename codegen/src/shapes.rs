//! Schema shapes the generator types itself instead of leaving them to typify:
//!
//! - **open enums**: "a known value or an open string" (`anyOf`/`oneOf` whose branches are
//!   all strings, at least one an `enum` and one without), and a tag property that is an
//!   open string while an `if`/`then` binding lists its known values. Each becomes a Rust
//!   enum with one variant per known value and `Other(String)` for the rest;
//! - which dropped keywords are only value checks (silent) and which would have typed
//!   something (a warning, see [`crate::bundle`]).

use heck::ToUpperCamelCase;
use proc_macro2::TokenStream;
use quote::quote;
use serde_json::{Map, Value, json};

use crate::bundle::Bundle;
use crate::format::{ident, unique_name, variant_name};
use crate::project::validation_only;

/// One open enum: the known values, in schema order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OpenEnum {
    pub name: String,
    pub values: Vec<String>,
    pub doc: Option<String>,
    /// `file#pointer` (or the owner type and property) it came from.
    pub origin: String,
}

/// Finds every open enum of the bundle. One that is a definition keeps its name; one inline
/// is hoisted to a definition named after its parent and property (`HostEvent.type` →
/// `HostEventType`), or, when a definition already holds that name, with a `Value` suffix,
/// so an authored name is never taken from its definition. The hoisted schema is left in
/// place for typify to see, but the type is replaced by the emitted enum.
pub(crate) fn open_enums(bundle: &mut Bundle) -> Vec<OpenEnum> {
    let mut found = Vec::new();
    let mut hoisted: Vec<(String, Value, String)> = Vec::new();
    let names: Vec<String> = bundle.defs.keys().cloned().collect();
    for name in &names {
        let Some(mut schema) = bundle.defs.get(name).cloned() else {
            continue;
        };
        let origin = bundle.origin.get(name).cloned().unwrap_or_default();
        if let Some(values) = open_values(&schema, &bundle.defs) {
            found.push(OpenEnum {
                name: name.clone(),
                values,
                doc: description(&schema),
                origin,
            });
            continue;
        }
        let mut ctx = Hoist {
            defs: &bundle.defs,
            hoisted: &mut hoisted,
            found: &mut found,
            origin: &origin,
        };
        // A tag that is an open string, with the known values of its bindings.
        if let Some(d) = bundle.discriminators.get(name)
            && let Some(slot) = schema
                .get_mut("properties")
                .and_then(|p| p.get_mut(d.tag.as_str()))
            && is_open_string(slot)
        {
            let values: Vec<String> = d.variants.iter().map(|(v, _)| v.clone()).collect();
            let wanted = format!("{name}{}", d.tag.to_upper_camel_case());
            ctx.hoist(
                slot,
                &wanted,
                values,
                &format!("{origin}/properties/{}", d.tag),
            );
        }
        ctx.walk(&mut schema, name, &origin);
        bundle.defs.insert(name.clone(), schema);
    }
    for (name, schema, origin) in hoisted {
        bundle.origin.insert(name.clone(), origin);
        bundle.defs.insert(name, schema);
    }
    found.sort_by(|a, b| a.name.cmp(&b.name));
    found
}

/// Closed unions: a definition that is a `oneOf` of references to closed objects (each
/// `additionalProperties: false`) which all fix one shared property to a single value (the
/// tag, e.g. `kind: const "wait"`), optionally with the shared members also stated beside
/// the `oneOf`. typify merges those shared members into every branch and names the result
/// `Variant0..n` of an untagged enum; written as the plain `oneOf`, it emits an internally
/// tagged enum whose variants are named after the tag values, which is what a reader wants
/// (`Node::Wait { .. }`). Branch members that are only `true` ("as stated beside the
/// `oneOf`") take the shared member's schema, so `id` keeps its type. Returns the rewritten
/// definitions' names. Validators still use the corpus as written.
pub(crate) fn closed_unions(bundle: &mut Bundle) -> Vec<String> {
    let mut rewritten = Vec::new();
    let names: Vec<String> = bundle.defs.keys().cloned().collect();
    for name in names {
        // An earlier union may have taken this definition inline.
        let Some(schema) = bundle.defs.get(&name) else {
            continue;
        };
        let Some(branches) = schema.get("oneOf").and_then(Value::as_array) else {
            continue;
        };
        let targets: Option<Vec<String>> = branches
            .iter()
            .map(|b| {
                let reference = b.get("$ref")?.as_str()?;
                (b.as_object()?.len() == 1).then_some(())?;
                reference.strip_prefix("#/$defs/").map(str::to_owned)
            })
            .collect();
        let Some(targets) = targets.filter(|t| t.len() > 1) else {
            continue;
        };
        let closed = |t: &String| {
            bundle.defs.get(t).is_some_and(|b| {
                b.get("additionalProperties") == Some(&Value::Bool(false))
                    && b.get("properties").is_some_and(Value::is_object)
            })
        };
        if !targets.iter().all(closed) {
            continue;
        }
        let single = |v: &Value| -> Option<String> {
            if let Some(c) = v.get("const") {
                return c.as_str().map(str::to_owned);
            }
            match v.get("enum")?.as_array()?.as_slice() {
                [only] => only.as_str().map(str::to_owned),
                _ => None,
            }
        };
        let first = &bundle.defs[&targets[0]]["properties"];
        let tag = first.as_object().and_then(|props| {
            props.keys().find(|key| {
                targets.iter().all(|t| {
                    bundle.defs[t]["properties"]
                        .get(key.as_str())
                        .and_then(single)
                        .is_some()
                })
            })
        });
        let Some(_tag) = tag.cloned() else {
            continue;
        };
        let shared = schema
            .get("properties")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        // Whatever else sits beside the `oneOf` must be what the branches restate.
        let beside_ok = schema.as_object().is_some_and(|o| {
            o.keys().all(|k| {
                matches!(
                    k.as_str(),
                    "oneOf" | "type" | "properties" | "required" | "description" | "title"
                )
            })
        });
        if !beside_ok {
            continue;
        }
        for t in &targets {
            let Some(props) = bundle
                .defs
                .get_mut(t)
                .and_then(|b| b.get_mut("properties"))
                .and_then(Value::as_object_mut)
            else {
                continue;
            };
            for (key, member) in props.iter_mut() {
                if member == &Value::Bool(true)
                    && let Some(s) = shared.get(key)
                {
                    *member = s.clone();
                }
            }
        }
        // typify recognises the tag only on inline branches, so the branches move inline;
        // a branch definition nothing else names goes (it would be an unused second type).
        let mut plain = Map::new();
        if let Some(d) = bundle.defs[&name].get("description") {
            plain.insert("description".into(), d.clone());
        }
        // Member counts and presence rules ("one of `ms` and `seconds`") are value checks
        // typify reads as "not a plain object"; they change no member's type, and the
        // validators keep them.
        let inline: Vec<Value> = targets
            .iter()
            .map(|t| {
                let mut branch = bundle.defs[t].clone();
                if let Some(o) = branch.as_object_mut() {
                    o.remove("minProperties");
                    o.remove("maxProperties");
                    for key in ["anyOf", "oneOf", "not"] {
                        let check = o.get(key).map(|c| json!({ key: c }));
                        if check.as_ref().is_some_and(validation_only) {
                            o.remove(key);
                        }
                    }
                }
                branch
            })
            .collect();
        plain.insert("oneOf".into(), Value::Array(inline));
        bundle.defs.insert(name.clone(), Value::Object(plain));
        for t in &targets {
            let needle = Value::String(format!("#/$defs/{t}"));
            let named_elsewhere = bundle
                .defs
                .iter()
                .any(|(other, schema)| other != t && mentions(schema, &needle));
            if !named_elsewhere {
                bundle.defs.remove(t);
                bundle.origin.remove(t);
            }
        }
        rewritten.push(name);
    }
    rewritten
}

fn mentions(schema: &Value, needle: &Value) -> bool {
    match schema {
        Value::Object(o) => o
            .iter()
            .any(|(k, v)| (k == "$ref" && v == needle) || mentions(v, needle)),
        Value::Array(a) => a.iter().any(|v| mentions(v, needle)),
        _ => false,
    }
}

struct Hoist<'a> {
    defs: &'a std::collections::BTreeMap<String, Value>,
    hoisted: &'a mut Vec<(String, Value, String)>,
    found: &'a mut Vec<OpenEnum>,
    origin: &'a str,
}

impl Hoist<'_> {
    /// Inline positions typify would name after the parent: properties, items, map values.
    fn walk(&mut self, schema: &mut Value, parent: &str, at: &str) {
        let Some(obj) = schema.as_object_mut() else {
            return;
        };
        if obj.contains_key("$ref") {
            return;
        }
        if let Some(props) = obj.get_mut("properties").and_then(Value::as_object_mut) {
            for (prop, sub) in props.iter_mut() {
                let wanted = format!("{parent}{}", prop.to_upper_camel_case());
                self.visit(sub, &wanted, &format!("{at}/properties/{prop}"));
            }
        }
        if let Some(sub) = obj.get_mut("items").filter(|s| s.is_object()) {
            self.visit(sub, &format!("{parent}Item"), &format!("{at}/items"));
        }
        if let Some(sub) = obj
            .get_mut("additionalProperties")
            .filter(|s| s.is_object())
        {
            self.visit(
                sub,
                &format!("{parent}Value"),
                &format!("{at}/additionalProperties"),
            );
        }
    }

    fn visit(&mut self, sub: &mut Value, wanted: &str, at: &str) {
        if let Some(values) = open_values(sub, self.defs) {
            self.hoist(sub, wanted, values, at);
        } else {
            self.walk(sub, wanted, at);
        }
    }

    fn hoist(&mut self, slot: &mut Value, wanted: &str, values: Vec<String>, at: &str) {
        let taken = |n: &str| self.defs.contains_key(n) || self.hoisted.iter().any(|h| h.0 == n);
        let base = if taken(wanted) {
            format!("{wanted}Value")
        } else {
            wanted.to_owned()
        };
        let name = unique_name(&base, taken);
        let doc = description(slot);
        let mut reference = Map::new();
        reference.insert("$ref".to_owned(), Value::String(format!("#/$defs/{name}")));
        if let Some(d) = &doc {
            reference.insert("description".to_owned(), Value::String(d.clone()));
        }
        let schema = std::mem::replace(slot, Value::Object(reference));
        let origin = if at.contains('#') {
            at.to_owned()
        } else {
            format!("{}{at}", self.origin)
        };
        self.hoisted.push((name.clone(), schema, origin.clone()));
        self.found.push(OpenEnum {
            name,
            values,
            doc,
            origin,
        });
    }
}

fn description(v: &Value) -> Option<String> {
    v.get("description")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// A string with no list of values: `{type: string}` with at most checks beside it.
fn is_open_string(v: &Value) -> bool {
    let Some(o) = v.as_object() else { return false };
    o.get("type").and_then(Value::as_str) == Some("string")
        && o.keys().all(|k| {
            matches!(
                k.as_str(),
                "type"
                    | "pattern"
                    | "description"
                    | "title"
                    | "minLength"
                    | "maxLength"
                    | "format"
                    | "$comment"
                    | "examples"
            )
        })
}

/// The known values of an open-enum shape, in order: `anyOf`/`oneOf` of string branches,
/// at least one listing values (`enum`, or a `$ref` to a string enum) and one not.
fn open_values(v: &Value, defs: &std::collections::BTreeMap<String, Value>) -> Option<Vec<String>> {
    let o = v.as_object()?;
    let branches = match (o.get("anyOf"), o.get("oneOf")) {
        (Some(Value::Array(b)), None) | (None, Some(Value::Array(b))) => b,
        _ => return None,
    };
    let beside_ok = o.iter().all(|(k, val)| match k.as_str() {
        "anyOf" | "oneOf" | "description" | "title" | "$comment" | "examples" => true,
        "type" => val.as_str() == Some("string"),
        _ => false,
    });
    if !beside_ok || branches.len() < 2 {
        return None;
    }
    let mut values = Vec::new();
    let (mut listed, mut open) = (false, false);
    for branch in branches {
        let branch = match branch.get("$ref").and_then(Value::as_str) {
            Some(r) => defs.get(r.strip_prefix("#/$defs/")?)?,
            None => branch,
        };
        let b = branch.as_object()?;
        let stringy = match b.get("type") {
            None => b.contains_key("enum"),
            Some(t) => t.as_str() == Some("string"),
        };
        if !stringy {
            return None;
        }
        match b.get("enum") {
            Some(Value::Array(list)) => {
                listed = true;
                for item in list {
                    let s = item.as_str()?.to_owned();
                    if !values.contains(&s) {
                        values.push(s);
                    }
                }
            }
            Some(_) => return None,
            None if is_open_string(branch) => open = true,
            None => return None,
        }
    }
    (listed && open).then_some(values)
}

/// Variant names for `values`, unique, never `Other` (the catch-all's name).
fn variants(values: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for v in values {
        let mut name = variant_name(v);
        if name == "Other" {
            name = "OtherValue".to_owned();
        }
        let name = unique_name(&name, |n| out.iter().any(|o| o == n));
        out.push(name);
    }
    out
}

/// The emitted enum and its impls. `registry` is set on the open enum whose known values
/// include every code of `errors.json`: it gets the bridge to `crate::errors::ErrorCode`.
pub(crate) fn emit_open_enum(e: &OpenEnum, registry: bool) -> TokenStream {
    let name = ident(&e.name);
    let variant_idents: Vec<_> = variants(&e.values).iter().map(|v| ident(v)).collect();
    let values = &e.values;
    let variant_docs: Vec<String> = values.iter().map(|v| format!(" `{v}`")).collect();
    let mut docs: Vec<String> = crate::prose::lines(
        e.doc
            .as_deref()
            .unwrap_or("A known value or an open string."),
    )
    .into_iter()
    .map(|l| format!(" {l}"))
    .collect();
    docs.push(String::new());
    docs.push(" An open enum: one variant per value the corpus lists, [`Self::Other`] for any other string (a vendor value, or one newer than this crate). It is the plain string on the wire; decoding a listed value never gives `Other`, and equality, hashing and order go by the string. `#[non_exhaustive]`: a value the corpus lists later becomes a variant of its own, which a `match` with a wildcard arm keeps compiling through.".to_owned());
    let bridge = registry.then(|| {
        quote! {
            impl #name {
                /// The registry code this value is, when it is one (`spec/v2/errors.json`).
                pub fn registered(&self) -> Option<crate::errors::ErrorCode> {
                    self.as_str().parse().ok()
                }
            }

            impl From<crate::errors::ErrorCode> for #name {
                fn from(code: crate::errors::ErrorCode) -> Self {
                    Self::from(code.as_str())
                }
            }

            impl PartialEq<crate::errors::ErrorCode> for #name {
                fn eq(&self, other: &crate::errors::ErrorCode) -> bool {
                    self.as_str() == other.as_str()
                }
            }
        }
    });
    quote! {
        #(#[doc = #docs])*
        #[derive(Clone, Debug)]
        #[non_exhaustive]
        pub enum #name {
            #( #[doc = #variant_docs] #variant_idents, )*
            /// Any other string, as sent.
            Other(::std::string::String),
        }

        impl #name {
            /// Every listed value, in schema order.
            pub const KNOWN: &'static [#name] = &[ #( #name::#variant_idents ),* ];

            /// The value as it is on the wire.
            pub fn as_str(&self) -> &str {
                match self {
                    #( #name::#variant_idents => #values, )*
                    #name::Other(value) => value.as_str(),
                }
            }

            /// True for a value the corpus lists (after normalising, so `Other("x")` with a
            /// listed `x` counts as known).
            pub fn is_known(&self) -> bool {
                matches!(Self::from(self.as_str()), #( #name::#variant_idents )|*)
            }
        }

        impl From<&str> for #name {
            fn from(value: &str) -> Self {
                match value {
                    #( #values => #name::#variant_idents, )*
                    other => #name::Other(other.to_owned()),
                }
            }
        }

        impl From<::std::string::String> for #name {
            fn from(value: ::std::string::String) -> Self {
                match #name::from(value.as_str()) {
                    #name::Other(_) => #name::Other(value),
                    known => known,
                }
            }
        }

        impl From<&::std::string::String> for #name {
            fn from(value: &::std::string::String) -> Self {
                #name::from(value.as_str())
            }
        }

        impl ::std::str::FromStr for #name {
            type Err = ::std::convert::Infallible;
            fn from_str(value: &str) -> Result<Self, Self::Err> {
                Ok(#name::from(value))
            }
        }

        impl ::std::fmt::Display for #name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl AsRef<str> for #name {
            fn as_ref(&self) -> &str {
                self.as_str()
            }
        }

        impl PartialEq for #name {
            fn eq(&self, other: &Self) -> bool {
                self.as_str() == other.as_str()
            }
        }

        impl Eq for #name {}

        impl PartialEq<str> for #name {
            fn eq(&self, other: &str) -> bool {
                self.as_str() == other
            }
        }

        impl PartialEq<&str> for #name {
            fn eq(&self, other: &&str) -> bool {
                self.as_str() == *other
            }
        }

        impl ::std::hash::Hash for #name {
            fn hash<H: ::std::hash::Hasher>(&self, state: &mut H) {
                self.as_str().hash(state)
            }
        }

        impl PartialOrd for #name {
            fn partial_cmp(&self, other: &Self) -> Option<::std::cmp::Ordering> {
                Some(self.cmp(other))
            }
        }

        impl Ord for #name {
            fn cmp(&self, other: &Self) -> ::std::cmp::Ordering {
                self.as_str().cmp(other.as_str())
            }
        }

        impl ::serde::Serialize for #name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for #name {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                ::std::string::String::deserialize(deserializer).map(#name::from)
            }
        }

        #bridge
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn open_enum_shapes() {
        let defs = std::collections::BTreeMap::new();
        let shape = json!({"anyOf": [
            {"type": "string", "enum": ["a.b", "c"]},
            {"type": "string", "pattern": "^x\\."}
        ], "description": "d"});
        assert_eq!(
            open_values(&shape, &defs),
            Some(vec!["a.b".into(), "c".into()])
        );
        // Every branch listing values is a closed enum, typify's business.
        let closed = json!({"oneOf": [{"enum": ["a"]}, {"enum": ["b"]}]});
        assert_eq!(open_values(&closed, &defs), None);
        // A non-string branch is not this shape.
        let mixed = json!({"anyOf": [{"type": "string", "enum": ["a"]}, {"type": "integer"}]});
        assert_eq!(open_values(&mixed, &defs), None);
    }

    #[test]
    fn narrowing_is_validation_only_typing_is_not() {
        assert!(validation_only(&json!({"not": {"required": ["until"]}})));
        assert!(validation_only(
            &json!({"properties": {"delivery": {"const": "durable"}}, "required": ["x"]})
        ));
        assert!(validation_only(&json!({"not": {}})));
        assert!(!validation_only(
            &json!({"properties": {"payload": {"$ref": "#/$defs/x"}}})
        ));
        assert!(!validation_only(
            &json!({"not": {"type": "object", "properties": {"a": {"type": "string"}}}})
        ));
    }

    #[test]
    fn closed_unions_go_inline_with_shared_members_typed() {
        let mut bundle = Bundle::default();
        bundle.defs.insert(
            "Node".into(),
            json!({"type": "object", "required": ["id", "kind"],
                "properties": {"id": {"$ref": "#/$defs/NodeId"}, "kind": {"enum": ["a", "b"]}},
                "oneOf": [{"$ref": "#/$defs/A"}, {"$ref": "#/$defs/B"}]}),
        );
        bundle.defs.insert(
            "A".into(),
            json!({"type": "object", "additionalProperties": false,
                "properties": {"id": true, "kind": {"const": "a"}, "ms": {}, "s": {}},
                "maxProperties": 3,
                "anyOf": [{"required": ["ms"]}, {"required": ["s"]}],
                "not": {"required": ["ms", "s"]}}),
        );
        bundle.defs.insert(
            "B".into(),
            json!({"type": "object", "additionalProperties": false,
                "properties": {"id": true, "kind": {"enum": ["b"]}, "x": {"type": "integer"}}}),
        );
        // B is also named elsewhere, so its definition stays.
        bundle
            .defs
            .insert("Holder".into(), json!({"$ref": "#/$defs/B"}));
        assert_eq!(closed_unions(&mut bundle), ["Node"]);
        let node = &bundle.defs["Node"];
        assert!(node.get("properties").is_none());
        assert_eq!(
            node["oneOf"][0]["properties"]["id"],
            json!({"$ref": "#/$defs/NodeId"})
        );
        for check in ["maxProperties", "anyOf", "not"] {
            assert!(node["oneOf"][0].get(check).is_none(), "{check}");
        }
        assert!(!bundle.defs.contains_key("A"));
        assert!(bundle.defs.contains_key("B"));

        // An open branch is not a closed union: left to typify as written.
        let mut open = Bundle::default();
        open.defs.insert(
            "U".into(),
            json!({"oneOf": [{"$ref": "#/$defs/P"}, {"$ref": "#/$defs/Q"}]}),
        );
        open.defs.insert(
            "P".into(),
            json!({"type": "object", "properties": {"k": {"const": "p"}}}),
        );
        open.defs.insert(
            "Q".into(),
            json!({"type": "object", "additionalProperties": false, "properties": {"k": {"const": "q"}}}),
        );
        assert!(closed_unions(&mut open).is_empty());
    }

    #[test]
    fn variant_names_are_unique_and_never_other() {
        assert_eq!(
            variants(&["a.b".into(), "a-b".into(), "other".into(), "2x".into()]),
            ["AB", "AB2", "OtherValue", "V2x"]
        );
    }
}
