//! `generated/src/models.rs`: serde types for the bundled schemas, written by typify.
//!
//! typify 0.8 panics on some schemas instead of returning an error, so every run is wrapped
//! in `catch_unwind`. When the whole namespace panics, each type is tried alone (its
//! neighbours stubbed as `serde_json::Value`); a type that panics alone is replaced by
//! `serde_json::Value` and a warning names it. If the namespace still panics after that,
//! generation fails naming the types involved.

use std::collections::BTreeMap;
use std::panic::{AssertUnwindSafe, catch_unwind};

use proc_macro2::TokenStream;
use quote::quote;
use schemars::schema::{RootSchema, Schema, SchemaObject};
use serde_json::{Map, Value};
use typify::{TypeSpace, TypeSpaceImpl, TypeSpaceSettings};

use crate::bundle::Bundle;
use crate::shapes::OpenEnum;

use super::models_post as post;
use crate::error::{Error, Result};
use crate::format::ident;

/// What the models step produced.
pub(crate) struct Models {
    pub tokens: TokenStream,
    pub warnings: Vec<String>,
    /// Every named type typify emitted, plus the aliases and the generator's own types.
    pub type_names: std::collections::BTreeSet<String>,
    /// Bundle name → emitted name, for definitions renamed to dodge a clash.
    pub renames: BTreeMap<String, String>,
    pub count: usize,
    /// typify's items after post-processing, for the client (body fields, enum or not).
    pub items: syn::File,
    /// The open enums, by emitted name.
    pub open_enums: std::collections::BTreeSet<String>,
    /// Closed enums emitted in another module and re-exported here (`RunStatus`).
    pub reexported_enums: std::collections::BTreeSet<String>,
}

/// What the models step needs beyond the bundle.
pub(crate) struct Inputs<'a> {
    /// The open enums found in the bundle (already hoisted into its definitions).
    pub open_enums: &'a [OpenEnum],
    /// Types named by an OpenAPI request body: they, and what they reach, stay closed.
    pub request_roots: &'a std::collections::BTreeSet<String>,
    /// The codes of `errors.json`, to find the open enum that bridges to `errors::ErrorCode`.
    pub registry_codes: &'a [String],
    /// The definition that is the run-status enum `dispatch::RunStatus` is generated from
    /// (same values): it is not typed again, `models` re-exports the dispatch type under
    /// its name, so a run status has one Rust type in the models, the tables and any code
    /// built on both.
    pub run_status: Option<&'a str>,
    /// The types of documents the host reads from its operator (`crate::HOST_READS`).
    pub host_reads: &'a std::collections::BTreeSet<String>,
}

pub(crate) fn emit(bundle: &Bundle, inputs: &Inputs<'_>) -> Result<Models> {
    REPLACED.with(|r| {
        *r.borrow_mut() = inputs
            .open_enums
            .iter()
            .map(|e| e.name.clone())
            .chain(inputs.run_status.map(str::to_owned))
            .collect();
    });
    let result = emit_inner(bundle, inputs);
    REPLACED.with(|r| r.borrow_mut().clear());
    result
}

fn emit_inner(bundle: &Bundle, inputs: &Inputs<'_>) -> Result<Models> {
    let mut renames = BTreeMap::new();
    let mut warnings = Vec::new();
    let mut defs: BTreeMap<String, Schema> = BTreeMap::new();
    for (name, value) in &bundle.defs {
        // Descriptions become doc comments: as prose, never as doctests or HTML.
        let value = &crate::prose::schema(value.clone());
        match serde_json::from_value::<Schema>(value.clone()) {
            Ok(schema) => {
                defs.insert(name.clone(), schema);
            }
            Err(e) => {
                warnings.push(format!(
                    "{}: not a schema typify reads ({e}); {name} is serde_json::Value",
                    origin(bundle, name)
                ));
                defs.insert(name.clone(), untyped(value));
            }
        }
    }

    let (stream, type_names) = match typify_unique(&mut defs, &mut renames)? {
        Ok(done) => done,
        Err(first_panic) => {
            let names: Vec<String> = defs.keys().cloned().collect();
            for name in names {
                let mut alone: BTreeMap<String, Schema> =
                    defs.keys().map(|k| (k.clone(), any())).collect();
                alone.insert(name.clone(), defs[&name].clone());
                if let Err(message) = typify_all(&alone).map(|_| ()) {
                    let whole = serde_json::to_value(&defs[&name]).unwrap_or(Value::Null);
                    if let Some((narrowed, parts)) = narrow(&whole, &alone, &name) {
                        warnings.push(format!(
                            "{}: typify cannot type part of {name}: {message}; {} is serde_json::Value",
                            origin(bundle, &name),
                            parts.iter().map(|p| format!("{name}#{p}")).collect::<Vec<_>>().join(", ")
                        ));
                        defs.insert(name, narrowed);
                        continue;
                    }
                    warnings.push(format!(
                        "{}: typify cannot type {name}: {message}; it is serde_json::Value",
                        origin(bundle, &name)
                    ));
                    let doc = crate::prose::schema(
                        bundle.defs.get(&name).cloned().unwrap_or(Value::Null),
                    );
                    defs.insert(name, untyped(&doc));
                }
            }
            typify_unique(&mut defs, &mut renames)?.map_err(|message| Error::Typify {
                schema: format!("the bundled namespace (first failure: {first_panic})"),
                message,
            })?
        }
    };
    let mut type_names: std::collections::BTreeSet<String> = type_names.into_iter().collect();
    let renamed = |name: &str| {
        renames
            .get(name)
            .cloned()
            .unwrap_or_else(|| name.to_owned())
    };

    let resolved: Vec<(String, String)> = bundle
        .aliases
        .iter()
        .map(|(alias, target)| (alias.clone(), renamed(target)))
        .filter(|(alias, target)| type_names.contains(target) && !type_names.contains(alias))
        .collect();
    type_names.extend(resolved.iter().map(|(alias, _)| alias.clone()));
    let aliases = resolved.iter().map(|(alias, target)| {
        let (alias, target) = (ident(alias), ident(target));
        let doc = format!(" Another name for [`{target}`].");
        quote!(#[doc = #doc] pub type #alias = #target;)
    });

    // typify's items, then the rules it has no settings for: fields in schema order,
    // openness by position, `Default` for request bodies that need nothing.
    let mut items: syn::File = syn::parse2(stream).map_err(|e| Error::Format {
        file: "src/models.rs".to_owned(),
        message: format!("typify's output does not parse: {e}"),
    })?;
    let schemas: BTreeMap<String, Value> = bundle
        .defs
        .iter()
        .map(|(name, schema)| (renamed(name), schema.clone()))
        .collect();
    post::order_fields(&mut items, &schemas);
    post::optional_objects(&mut items);
    let host_reads: std::collections::BTreeSet<String> =
        inputs.host_reads.iter().map(|n| renamed(n)).collect();
    post::optional_lists(&mut items, &host_reads);
    let roots: std::collections::BTreeSet<String> =
        inputs.request_roots.iter().map(|n| renamed(n)).collect();
    post::apply_openness(&mut items, &roots, &resolved);
    post::default_for_bodies(&mut items, &roots);
    post::string_newtype_impls(&mut items);
    crate::emit::patterns::rewrite(&mut items);

    let open_enums: std::collections::BTreeSet<String> =
        inputs.open_enums.iter().map(|e| renamed(&e.name)).collect();
    let own_enums = inputs.open_enums.iter().map(|e| {
        let registry = !inputs.registry_codes.is_empty()
            && inputs.registry_codes.iter().all(|c| e.values.contains(c));
        let mut e = e.clone();
        e.name = renamed(&e.name);
        crate::shapes::emit_open_enum(&e, registry)
    });
    let mut payloads = Vec::new();
    for (owner, d) in &bundle.discriminators {
        let mut d = d.clone();
        for (_, target) in d.variants.iter_mut() {
            *target = renamed(target);
        }
        match post::typed_payload(&items, &renamed(owner), &d, &open_enums, &type_names) {
            Ok((name, tokens)) => {
                let wanted = post::view_name(&renamed(owner), &d);
                if name != wanted {
                    // A definition took the view's name: code (and a template's `requires
                    // model`) naming it now gets the definition, not the view.
                    let holder = bundle
                        .origin
                        .iter()
                        .find(|(def, _)| renamed(def) == wanted)
                        .map_or_else(|| "another type".to_owned(), |(_, o)| o.clone());
                    warnings.push(format!(
                        "{}: the typed view of {owner}'s `{}` is named {name}, not {wanted}: {holder} takes that name, so `models::{wanted}` is that definition and not the view. Rename the definition",
                        d.origin, d.payload
                    ));
                }
                type_names.insert(name);
                payloads.push(tokens);
            }
            Err(why) => warnings.push(format!(
                "{}: the `{}` → `{}` binding of {owner} has no typed view: {why}",
                d.origin, d.tag, d.payload
            )),
        }
    }
    type_names.extend(open_enums.iter().cloned());
    let reexported_enums: std::collections::BTreeSet<String> =
        inputs.run_status.map(renamed).into_iter().collect();
    type_names.extend(reexported_enums.iter().cloned());
    let reexports = reexported_enums.iter().map(|name| {
        let doc = " A run's lifecycle status: the same type as [`crate::dispatch::RunStatus`], so \
                   a status read from a model indexes the dispatch tables as it is.";
        if name == "RunStatus" {
            quote!(#[doc = #doc] pub use crate::dispatch::RunStatus;)
        } else {
            let name = ident(name);
            quote!(#[doc = #doc] pub use crate::dispatch::RunStatus as #name;)
        }
    });

    let count = defs.len();
    let tokens = quote! {
        //! serde types for every corpus schema definition and OpenAPI component.
        //!
        //! A type reachable from an OpenAPI request body keeps the schema's closedness
        //! (`deny_unknown_fields`); every other type ignores members it does not know, so a
        //! host that adds a field does not break older clients. Open enums (a listed value or
        //! any string) have an `Other(String)` variant. A payload whose schema is chosen by a
        //! tag (`type`, `kind`) has a typed view: `RunEvent::typed_payload()` and the like.

        #items

        #(#aliases)*

        #(#reexports)*

        #(#own_enums)*

        #(#payloads)*
    };
    Ok(Models {
        tokens,
        warnings,
        type_names: type_names.into_iter().collect(),
        renames,
        count,
        items,
        open_enums,
        reexported_enums,
    })
}

/// The schema with only its smallest panicking parts untyped, and their pointers; `None`
/// when the culprit is the schema itself or the narrowed schema still panics.
fn narrow(
    schema: &Value,
    alone: &BTreeMap<String, Schema>,
    name: &str,
) -> Option<(Schema, Vec<String>)> {
    let mut parts = Vec::new();
    culprits(schema, String::new(), &mut parts);
    if parts.is_empty() || parts.iter().any(String::is_empty) {
        return None;
    }
    let mut narrowed = schema.clone();
    for pointer in &parts {
        if let Some(slot) = narrowed.pointer_mut(pointer) {
            *slot = serde_json::to_value(untyped(slot)).unwrap_or(Value::Bool(true));
        }
    }
    let narrowed: Schema = serde_json::from_value(narrowed).ok()?;
    let mut defs = alone.clone();
    defs.insert(name.to_owned(), narrowed.clone());
    typify_all(&defs).ok().map(|_| (narrowed, parts))
}

/// Post-order search: a subschema is a culprit when it panics typify on its own and none
/// of its own subschemas does.
fn culprits(v: &Value, pointer: String, out: &mut Vec<String>) -> bool {
    let mut found = false;
    for (child_pointer, child) in subschemas(v, &pointer) {
        found |= culprits(child, child_pointer, out);
    }
    if found {
        return true;
    }
    if panics_alone(v) {
        out.push(pointer);
        return true;
    }
    false
}

/// Probes one subschema as the only definition, with what it references stubbed out.
fn panics_alone(v: &Value) -> bool {
    let Ok(schema) = serde_json::from_value::<Schema>(v.clone()) else {
        return true;
    };
    let mut refs = Vec::new();
    referenced_defs(v, &mut refs);
    let mut defs: BTreeMap<String, Schema> = refs.into_iter().map(|r| (r, any())).collect();
    defs.insert("OpenwopProbe".to_owned(), schema);
    typify_all(&defs).is_err()
}

fn referenced_defs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(obj) => {
            for (k, child) in obj {
                if k == "$ref"
                    && let Some(name) = child.as_str().and_then(|r| r.strip_prefix("#/$defs/"))
                {
                    out.push(name.to_owned());
                }
                referenced_defs(child, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| referenced_defs(i, out)),
        _ => {}
    }
}

/// The subschemas directly under `v`, with their pointers.
fn subschemas<'a>(v: &'a Value, pointer: &str) -> Vec<(String, &'a Value)> {
    let Some(obj) = v.as_object() else {
        return Vec::new();
    };
    let escape = crate::uris::pointer_token;
    let mut out = Vec::new();
    for key in ["properties", "patternProperties"] {
        if let Some(map) = obj.get(key).and_then(Value::as_object) {
            for (k, s) in map {
                out.push((format!("{pointer}/{key}/{}", escape(k)), s));
            }
        }
    }
    for key in [
        "items",
        "additionalItems",
        "additionalProperties",
        "allOf",
        "anyOf",
        "oneOf",
    ] {
        match obj.get(key) {
            Some(s @ Value::Object(_)) => out.push((format!("{pointer}/{key}"), s)),
            Some(Value::Array(items)) => {
                for (i, s) in items.iter().enumerate() {
                    out.push((format!("{pointer}/{key}/{i}"), s));
                }
            }
            _ => {}
        }
    }
    out
}

fn origin(bundle: &Bundle, name: &str) -> String {
    bundle
        .origin
        .get(name)
        .cloned()
        .unwrap_or_else(|| name.to_owned())
}

fn any() -> Schema {
    Schema::Bool(true)
}

/// A schema that types as `serde_json::Value`, keeping the description as the doc comment.
fn untyped(original: &Value) -> Schema {
    let mut obj = Map::new();
    if let Some(description) = original.get("description") {
        obj.insert("description".to_owned(), description.clone());
    }
    serde_json::from_value(Value::Object(obj)).unwrap_or(Schema::Bool(true))
}

/// Runs typify until no two types share a name. typify names an inline schema after its
/// parent and property without looking at definitions of that name; the definition yields
/// and becomes `<Name>Def`, references included. (The shapes the generator hoists itself,
/// such as `HostEvent.type`, never clash: see `crate::shapes`.)
/// The outer error is a name clash no rename can fix; the inner one is a typify panic.
fn typify_unique(
    defs: &mut BTreeMap<String, Schema>,
    renames: &mut BTreeMap<String, String>,
) -> Result<std::result::Result<(TokenStream, Vec<String>), String>> {
    for _ in 0..8 {
        let (stream, names) = match typify_all(defs) {
            Ok(done) => done,
            Err(message) => return Ok(Err(message)),
        };
        let mut seen = std::collections::BTreeSet::new();
        let clashes: Vec<String> = names
            .iter()
            .filter(|n| !seen.insert((*n).clone()))
            .cloned()
            .collect();
        if clashes.is_empty() {
            return Ok(Ok((stream, names)));
        }
        for clash in clashes {
            let Some(schema) = defs.remove(&clash) else {
                return Err(Error::Typify {
                    schema: clash.clone(),
                    message: "typify gives two inline types this name".to_owned(),
                });
            };
            // Nothing is lost: both types stay typed, under names fixed by the corpus.
            let renamed = format!("{clash}Def");
            defs.insert(renamed.clone(), schema);
            rename_refs(defs, &clash, &renamed);
            renames.insert(clash.clone(), renamed.clone());
        }
    }
    Err(Error::Typify {
        schema: "the bundled namespace".to_owned(),
        message: "type names still clash after renaming".to_owned(),
    })
}

fn rename_refs(defs: &mut BTreeMap<String, Schema>, from: &str, to: &str) {
    let (old, new) = (format!("#/$defs/{from}"), format!("#/$defs/{to}"));
    for schema in defs.values_mut() {
        let Ok(mut value) = serde_json::to_value(&*schema) else {
            continue;
        };
        if replace_ref(&mut value, &old, &new)
            && let Ok(updated) = serde_json::from_value(value)
        {
            *schema = updated;
        }
    }
}

fn replace_ref(v: &mut Value, old: &str, new: &str) -> bool {
    match v {
        Value::Object(obj) => {
            let mut changed = false;
            for (k, child) in obj.iter_mut() {
                if k == "$ref" && child.as_str() == Some(old) {
                    *child = Value::String(new.to_owned());
                    changed = true;
                } else {
                    changed |= replace_ref(child, old, new);
                }
            }
            changed
        }
        Value::Array(items) => items
            .iter_mut()
            // Every item must be visited, so no short-circuiting `any`.
            .fold(false, |acc, item| replace_ref(item, old, new) | acc),
        _ => false,
    }
}

thread_local! {
    /// The open-enum names of the current generation, and the run-status definition
    /// (typify replaces them with the generator's own types). Per thread, so parallel
    /// generations in tests do not mix.
    static REPLACED: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// One typify run over the whole namespace: the code and the name of every type it made.
fn typify_all(
    defs: &BTreeMap<String, Schema>,
) -> std::result::Result<(TokenStream, Vec<String>), String> {
    let replaced = REPLACED.with(|r| r.borrow().clone());
    let root = RootSchema {
        meta_schema: None,
        schema: SchemaObject::default(),
        definitions: defs.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
    };
    let mut settings = TypeSpaceSettings::default();
    settings.with_struct_builder(false);
    // Maps serialize in key order: the same document comes out byte for byte on every run
    // (a card's, a config's), which `HashMap`'s per-process seed would not give.
    settings.with_map_type("::std::collections::BTreeMap");
    // Open enums are emitted by the generator (crate::shapes), the run status by
    // `emit::dispatch`; typify only refers to them.
    for name in &replaced {
        settings.with_replacement(
            name,
            name,
            [TypeSpaceImpl::FromStr, TypeSpaceImpl::Display].into_iter(),
        );
    }
    // Keep typify's panic messages off stderr; they come back as the error string.
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let result = catch_unwind(AssertUnwindSafe(|| {
        let mut space = TypeSpace::new(&settings);
        space.add_root_schema(root).map_err(|e| e.to_string())?;
        // Only named types can clash; builtins (`Vec<String>`, `Option<T>`) repeat harmlessly.
        let names: Vec<String> = space
            .iter_types()
            .map(|t| t.name())
            .filter(|n| n.chars().all(|c| c.is_alphanumeric() || c == '_'))
            .collect();
        Ok::<_, String>((space.to_stream(), names))
    }));
    std::panic::set_hook(previous);
    match result {
        Ok(inner) => inner,
        Err(payload) => Err(payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| (*s).to_owned()))
            .unwrap_or_else(|| "typify panicked".to_owned())),
    }
}
