//! The generator's front half for models: every schema file's `$defs` and every OpenAPI
//! component hoisted into one flat namespace, with every `$ref` rewritten to
//! `#/$defs/<Name>`, then projected (see [`crate::project`]) into what typify can type.
//!
//! Naming: a `$defs` entry keeps its key in UpperCamelCase; a document whose root is a
//! schema of its own (not a `$ref`) is named after its file (`run-snapshot.schema.json` →
//! `RunSnapshot`, facets get a `Facet` suffix, and a root whose name an authored definition
//! already holds gets a `Document` suffix); an OpenAPI component keeps its key. Two
//! sources that want one name must project to the same schema (they merge), else generation
//! fails. A component that is only a `$ref` becomes a type alias. A `$ref` to a file the
//! corpus lacks becomes `serde_json::Value` with a warning; a `$ref` deeper than `$defs/X`
//! is inlined.

use std::collections::BTreeMap;

use heck::ToUpperCamelCase;
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::format::unique_name;
use crate::load::{Corpus, OPENAPI};
use crate::project::project_keywords;
use crate::uris::{SchemaUris, join_rel, pointer_token};

/// How deep inlined references may nest before the bundler gives up and says `Value`.
const MAX_INLINE_DEPTH: usize = 12;

#[derive(Debug, Clone, Default)]
pub(crate) struct Bundle {
    /// Type name → projected schema, ready for typify.
    pub defs: BTreeMap<String, Value>,
    /// Type name → where it came from (`file#pointer`), for messages.
    pub origin: BTreeMap<String, String>,
    /// Alias name → target type name (components that are only a `$ref`).
    pub aliases: BTreeMap<String, String>,
    pub warnings: Vec<String>,
    /// Payloads bound to a tag by `allOf: [{if: {tag: const}, then: {payload: …}}]`, by owner.
    pub discriminators: BTreeMap<String, Discriminator>,
    /// `(file, pointer)` → type name, for naming schemas found later (client operations).
    index: BTreeMap<(String, String), String>,
}

/// A payload property whose schema a tag property selects (see [`crate::shapes`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Discriminator {
    /// The tag property (`type`, `kind`).
    pub tag: String,
    /// The payload property (`payload`, `data`).
    pub payload: String,
    /// Tag value → the type its payload is, in schema order.
    pub variants: Vec<(String, String)>,
    /// `file#pointer` of the `allOf`, for messages.
    pub origin: String,
}

impl Bundle {
    /// The type a schema written in the OpenAPI document names, when it is a reference to
    /// one (directly, or through a component that is only a reference).
    pub(crate) fn named_in_openapi(
        &self,
        corpus: &Corpus,
        uris: &SchemaUris,
        schema: &Value,
    ) -> Option<String> {
        let mut b = Bundler {
            corpus,
            uris,
            index: self.index.clone(),
            warnings: Vec::new(),
            // A probe: the bundle itself reported any dangling reference already.
            dangling: None,
            discriminators: BTreeMap::new(),
            hoisted: Vec::new(),
            judged: Default::default(),
        };
        let projected = b.schema(OPENAPI, "", schema, 0);
        let name = projected.get("$ref")?.as_str()?.strip_prefix("#/$defs/")?;
        is_pure_ref(&projected).then(|| {
            self.aliases
                .get(name)
                .cloned()
                .unwrap_or_else(|| name.to_owned())
        })
    }
}

/// Files whose definitions become models: the documents and the facets, not the schemas of
/// the corpus's own data files.
fn is_model_file(rel: &str) -> bool {
    rel.starts_with("schemas/") || rel.starts_with("spec/v2/facets/")
}

fn root_name(rel: &str) -> String {
    let file = rel.rsplit('/').next().unwrap_or(rel);
    let stem = file.strip_suffix(".schema.json").unwrap_or(file);
    let base = stem.to_upper_camel_case();
    if rel.starts_with("spec/v2/facets/") {
        format!("{base}Facet")
    } else {
        base
    }
}

/// The type names `client::*` exports (the hand-written client templates' public types,
/// and the ones the client emitter writes beside them). A model of the same name would make
/// `use openwop_sdk::{client::*, models::*}` ambiguous (`ambiguous_glob_imports`), so the
/// model yields: see [`clear_of_client`].
pub(crate) const CLIENT_NAMES: &[&str] = &[
    "Client",
    "ClientBuilder",
    "Conditional",
    "Error",
    "EventFlow",
    "EventStream",
    "FollowRun",
    "HeaderMap",
    "Hook",
    "HookFuture",
    "Items",
    "Pages",
    "RaisedInterrupt",
    "RequestInfo",
    "ResponseValue",
    "RetryPolicy",
    "SseEvent",
];

/// A model's name, prefixed with the (singular) stem of the file that defines it when the
/// client exports the same name: `webhooks.schema.json#/$defs/retryPolicy` is
/// `WebhookRetryPolicy`, beside `client::RetryPolicy`.
fn clear_of_client(rel: &str, name: String) -> String {
    if !CLIENT_NAMES.contains(&name.as_str()) {
        return name;
    }
    let file = rel.rsplit('/').next().unwrap_or(rel);
    let stem = file.split('.').next().unwrap_or(file);
    // `webhooks` → `Webhook`; `status`, `address`, `analysis` stay as they are.
    let plural = stem.ends_with('s') && !["ss", "us", "is"].iter().any(|e| stem.ends_with(e));
    let singular = if plural && stem.len() > 1 {
        &stem[..stem.len() - 1]
    } else {
        stem
    };
    format!("{}{name}", singular.to_upper_camel_case())
}

fn is_pure_ref(v: &Value) -> bool {
    v.as_object().is_some_and(|o| {
        o.contains_key("$ref")
            && o.keys()
                .all(|k| matches!(k.as_str(), "$ref" | "description" | "title" | "$comment"))
    })
}

/// A root worth a type of its own: it says something beyond pointing at a definition.
fn root_is_type(v: &Value) -> bool {
    let Some(o) = v.as_object() else { return false };
    !is_pure_ref(v)
        && [
            "type",
            "properties",
            "oneOf",
            "anyOf",
            "allOf",
            "enum",
            "items",
        ]
        .iter()
        .any(|k| o.contains_key(*k))
}

struct Bundler<'a> {
    corpus: &'a Corpus,
    uris: &'a SchemaUris,
    /// `(file, pointer)` → type name.
    index: BTreeMap<(String, String), String>,
    warnings: Vec<String>,
    /// References into a file the corpus has, at a pointer it lacks: a typo, never a gap
    /// of a smaller corpus, and one that would leave every validator of the schema failing
    /// on a pointer that does not exist. An error, the first one found.
    dangling: Option<crate::error::Error>,
    /// Recognised tag → payload bindings, by owner type name.
    discriminators: BTreeMap<String, Discriminator>,
    /// Inline payload schemas of recognised bindings, to become types of their own:
    /// `(suggested name, projected schema, file#pointer)`.
    hoisted: Vec<(String, Value, String)>,
    /// Conditionals already judged as an `allOf` item of their parent.
    judged: std::collections::BTreeSet<(String, String)>,
}

impl Bundler<'_> {
    fn warn(&mut self, warning: String) {
        if !self.warnings.contains(&warning) {
            self.warnings.push(warning);
        }
    }
}

pub(crate) fn bundle(corpus: &Corpus, uris: &SchemaUris) -> Result<Bundle> {
    // Every source of a named type, in a fixed order: schema files (sorted), then components.
    let mut sources: Vec<(String, String, String)> = Vec::new();
    for rel in corpus.schema_files.iter().filter(|r| is_model_file(r)) {
        let doc = corpus.value(rel);
        if root_is_type(doc) {
            sources.push((
                rel.clone(),
                String::new(),
                clear_of_client(rel, root_name(rel)),
            ));
        }
        if let Some(defs) = doc.get("$defs").and_then(Value::as_object) {
            for key in defs.keys() {
                let pointer = format!("/$defs/{}", pointer_token(key));
                let name = clear_of_client(rel, key.to_upper_camel_case());
                sources.push((rel.clone(), pointer, name));
            }
        }
    }
    let mut alias_sources = Vec::new();
    if let Some(components) = corpus
        .value(OPENAPI)
        .pointer("/components/schemas")
        .and_then(Value::as_object)
    {
        for (key, schema) in components {
            let pointer = format!("/components/schemas/{}", pointer_token(key));
            if is_pure_ref(schema) {
                alias_sources.push((pointer, key.clone()));
            } else {
                let name = clear_of_client(OPENAPI, key.to_upper_camel_case());
                sources.push((OPENAPI.to_owned(), pointer, name));
            }
        }
    }

    // A root's name is derived, a `$defs` key or component name is the author's: when they
    // meet, the root yields and becomes `<Name>Document`.
    let authored: std::collections::BTreeSet<String> = sources
        .iter()
        .filter(|(_, p, _)| !p.is_empty())
        .map(|(_, _, n)| n.clone())
        .collect();
    for (_, pointer, name) in sources.iter_mut() {
        if pointer.is_empty() && authored.contains(name.as_str()) {
            name.push_str("Document");
        }
    }

    let mut b = Bundler {
        corpus,
        uris,
        index: BTreeMap::new(),
        warnings: Vec::new(),
        dangling: None,
        discriminators: BTreeMap::new(),
        hoisted: Vec::new(),
        judged: Default::default(),
    };
    let mut first_owner: BTreeMap<String, (String, String)> = BTreeMap::new();
    for (rel, pointer, name) in &sources {
        first_owner
            .entry(name.clone())
            .or_insert_with(|| (rel.clone(), pointer.clone()));
        b.index.insert((rel.clone(), pointer.clone()), name.clone());
    }

    let mut out = Bundle::default();
    for (rel, pointer, name) in &sources {
        let raw = corpus
            .value(rel)
            .pointer(pointer)
            .cloned()
            .unwrap_or(Value::Null);
        let projected = b.schema(rel, pointer, &raw, 0);
        let here = format!("{rel}#{pointer}");
        match out.defs.get(name) {
            None => {
                out.defs.insert(name.clone(), projected);
                out.origin.insert(name.clone(), here);
            }
            Some(existing) if *existing == projected => {}
            Some(_) => {
                return Err(Error::Collision {
                    name: name.clone(),
                    first: out.origin.get(name).cloned().unwrap_or_default(),
                    second: here,
                });
            }
        }
    }
    for (pointer, name) in alias_sources {
        let raw = corpus
            .value(OPENAPI)
            .pointer(&pointer)
            .cloned()
            .unwrap_or(Value::Null);
        let projected = b.schema(OPENAPI, &pointer, &raw, 0);
        let alias = name.to_upper_camel_case();
        match projected
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix("#/$defs/"))
        {
            Some(target) if target == alias => {}
            Some(target) if !out.defs.contains_key(&alias) => {
                out.aliases.insert(alias, target.to_owned());
            }
            // A component pointing at a missing file, or whose name another type holds.
            _ => {
                if !out.defs.contains_key(&alias) {
                    out.origin
                        .insert(alias.clone(), format!("{OPENAPI}#{pointer}"));
                    out.defs.insert(alias, projected);
                }
            }
        }
    }
    // Inline payload schemas of tag → payload bindings become types of their own, so the
    // typed payload view can name them.
    for (suggested, schema, here) in std::mem::take(&mut b.hoisted) {
        let name = unique_name(&suggested, |n| out.defs.contains_key(n));
        for d in b.discriminators.values_mut() {
            for (_, target) in d.variants.iter_mut() {
                if *target == format!("{HOISTED}{suggested}") {
                    *target = name.clone();
                }
            }
        }
        out.origin.insert(name.clone(), here);
        out.defs.insert(name, schema);
    }
    if let Some(e) = b.dangling {
        return Err(e);
    }
    out.discriminators = b.discriminators;
    out.warnings = b.warnings;
    out.index = b.index;
    Ok(out)
}

fn dir_of(rel: &str) -> &str {
    rel.rsplit_once('/').map_or("", |(d, _)| d)
}

impl Bundler<'_> {
    /// Rewrites one schema found at `file#pointer`: references first, then keyword
    /// projection. Keywords the projection drops are classified on the way (see
    /// [`crate::project::validation_only`]): a tag → payload binding is recorded, anything
    /// else that would have typed something is a warning naming where it is.
    fn schema(&mut self, file: &str, pointer: &str, v: &Value, depth: usize) -> Value {
        match v {
            Value::Object(obj) => {
                self.classify(file, pointer, obj, depth);
                let mut out = Map::new();
                for (k, child) in obj {
                    let here = format!("{pointer}/{}", pointer_token(k));
                    let child = match k.as_str() {
                        "$ref" => continue,
                        "properties" | "patternProperties" | "$defs" | "definitions"
                        | "dependentSchemas" => {
                            Value::Object(child.as_object().map_or_else(Map::new, |m| {
                                m.iter()
                                    .map(|(name, s)| {
                                        let p = format!("{here}/{}", pointer_token(name));
                                        (name.clone(), self.schema(file, &p, s, depth))
                                    })
                                    .collect()
                            }))
                        }
                        "items"
                        | "additionalItems"
                        | "additionalProperties"
                        | "unevaluatedProperties"
                        | "unevaluatedItems"
                        | "propertyNames"
                        | "contains"
                        | "not"
                        | "if"
                        | "then"
                        | "else" => match child {
                            Value::Array(items) => Value::Array(
                                items
                                    .iter()
                                    .enumerate()
                                    .map(|(i, s)| {
                                        self.schema(file, &format!("{here}/{i}"), s, depth)
                                    })
                                    .collect(),
                            ),
                            other => self.schema(file, &here, other, depth),
                        },
                        "allOf" | "anyOf" | "oneOf" | "prefixItems" => match child {
                            Value::Array(items) => Value::Array(
                                items
                                    .iter()
                                    .enumerate()
                                    .map(|(i, s)| {
                                        self.schema(file, &format!("{here}/{i}"), s, depth)
                                    })
                                    .collect(),
                            ),
                            other => other.clone(),
                        },
                        _ => child.clone(),
                    };
                    out.insert(k.clone(), child);
                }
                if let Some(reference) = obj.get("$ref").and_then(Value::as_str) {
                    match self.reference(file, pointer, reference, depth) {
                        Target::Named(name) => {
                            out.insert("$ref".to_owned(), Value::String(format!("#/$defs/{name}")));
                        }
                        Target::Inline(schema) => {
                            // The referenced schema, with this object's own keywords on top.
                            let mut merged = schema.as_object().cloned().unwrap_or_default();
                            merged.extend(out);
                            out = merged;
                        }
                    }
                }
                project_keywords(Value::Object(out))
            }
            other => other.clone(),
        }
    }

    /// Looks at the keywords of one schema object that the projection drops.
    fn classify(&mut self, file: &str, pointer: &str, obj: &Map<String, Value>, depth: usize) {
        // Dynamic references resolve per evaluation path, which a type cannot follow: the
        // projection drops them, so the value is typed loosely (`serde_json::Value`) and only
        // the validators hold it to the schema. Said, so `--strict` can refuse it.
        for key in ["$dynamicRef", "$recursiveRef"] {
            if let Some(target) = obj.get(key).and_then(Value::as_str) {
                self.warn(format!(
                    "{file}#{pointer}: `{key}` ({target}) is not followed by the models; they type this value as serde_json::Value (the validators enforce it)"
                ));
            }
        }
        let owner = self
            .index
            .get(&(file.to_owned(), pointer.to_owned()))
            .cloned();
        // Conditionals: the object's own `if` and every `allOf` item that is one.
        let mut clauses: Vec<(String, &Map<String, Value>)> = Vec::new();
        if (obj.contains_key("if") || obj.contains_key("then") || obj.contains_key("else"))
            && !self.judged.contains(&(file.to_owned(), pointer.to_owned()))
        {
            clauses.push((pointer.to_owned(), obj));
        }
        if let Some(items) = obj.get("allOf").and_then(Value::as_array) {
            for (i, item) in items.iter().enumerate() {
                if let Some(o) = item.as_object()
                    && (o.contains_key("if") || o.contains_key("then") || o.contains_key("else"))
                {
                    let at = format!("{pointer}/allOf/{i}");
                    self.judged.insert((file.to_owned(), at.clone()));
                    clauses.push((at, o));
                }
            }
        }
        let mut bindings: Vec<(String, Binding)> = Vec::new();
        for (at, clause) in &clauses {
            let quiet = ["then", "else"]
                .iter()
                .all(|k| clause.get(*k).is_none_or(crate::project::validation_only));
            if quiet {
                continue;
            }
            match binding(obj, clause) {
                Some(b) if owner.is_some() => bindings.push((at.clone(), b)),
                _ => self.warn(format!(
                    "{file}#{at}: `if`/`then`/`else` that types a member outside the recognised tag → payload pattern; the models do not type it (the validators enforce it)"
                )),
            }
        }
        if let (Some(owner), Some((first_at, first))) = (owner, bindings.first()) {
            let (tag, payload) = (first.tag.clone(), first.payload.clone());
            let origin = format!(
                "{file}#{}",
                first_at
                    .rsplit_once("/allOf/")
                    .map_or(first_at.as_str(), |(head, _)| head)
            );
            let mut variants = Vec::new();
            for (at, b) in &bindings {
                if b.tag != tag
                    || b.payload != payload
                    || variants.iter().any(|(v, _)| *v == b.value)
                {
                    self.warn(format!(
                        "{file}#{at}: a second tag → payload binding (`{}` → `{}`) beside `{tag}` → `{payload}`; the models do not type it (the validators enforce it)",
                        b.tag, b.payload
                    ));
                    continue;
                }
                let schema_at = format!("{at}/then/properties/{}", pointer_token(&payload));
                let target = match b.schema.get("$ref").and_then(Value::as_str) {
                    Some(reference) if is_pure_ref(&b.schema) => {
                        match self.reference(file, &schema_at, reference, depth) {
                            Target::Named(name) => name,
                            Target::Inline(_) => {
                                self.hoist(file, &schema_at, &b.schema, &b.value, &payload, depth)
                            }
                        }
                    }
                    _ => self.hoist(file, &schema_at, &b.schema, &b.value, &payload, depth),
                };
                variants.push((b.value.clone(), target));
            }
            self.discriminators.insert(
                owner,
                Discriminator {
                    tag,
                    payload,
                    variants,
                    origin,
                },
            );
        }

        // `contains` and `propertyNames` only ever check values (an item somewhere, the keys);
        // `not` over a schema with structure excludes a shape the model cannot express.
        for key in ["not"] {
            if let Some(child) = obj.get(key)
                && !crate::project::validation_only(child)
            {
                self.warn(format!(
                    "{file}#{pointer}/{key}: `{key}` over a schema with structure; the models do not type it (the validators enforce it)"
                ));
            }
        }
        for key in ["unevaluatedProperties", "unevaluatedItems"] {
            if obj.get(key).is_some_and(|v| !v.is_boolean()) {
                self.warn(format!(
                    "{file}#{pointer}/{key}: a schema for unevaluated members; the models do not type it (the validators enforce it)"
                ));
            }
        }
        for key in ["dependentSchemas", "dependencies"] {
            if let Some(map) = obj.get(key).and_then(Value::as_object) {
                for (name, child) in map {
                    if !child.is_array() && !crate::project::validation_only(child) {
                        self.warn(format!(
                            "{file}#{pointer}/{key}/{}: a dependent schema with structure; the models do not type it (the validators enforce it)",
                            pointer_token(name)
                        ));
                    }
                }
            }
        }
    }

    /// An inline payload schema of a binding: projected now, named when bundling ends.
    fn hoist(
        &mut self,
        file: &str,
        pointer: &str,
        schema: &Value,
        value: &str,
        payload: &str,
        depth: usize,
    ) -> String {
        let projected = self.schema(file, pointer, schema, depth);
        let suggested = format!(
            "{}{}",
            crate::format::variant_name(value),
            payload.to_upper_camel_case()
        );
        self.hoisted
            .push((suggested.clone(), projected, format!("{file}#{pointer}")));
        format!("{HOISTED}{suggested}")
    }

    fn reference(&mut self, file: &str, pointer: &str, reference: &str, depth: usize) -> Target {
        let (path, fragment) = reference.split_once('#').unwrap_or((reference, ""));
        let target_file = if path.is_empty() {
            Some(file.to_owned())
        } else if path.contains("://") {
            self.uris
                .by_file
                .iter()
                .find(|(_, uri)| uri.as_str() == path)
                .map(|(rel, _)| rel.clone())
        } else {
            let rel = join_rel(dir_of(file), path);
            self.corpus.has(&rel).then_some(rel)
        };
        let Some(target_file) = target_file else {
            // Missing files are already reported once, with their referrer's pointer
            // (`uris::resolve` for schema files, `openapi::file_refs` for the document).
            return Target::Inline(Value::Object(Map::new()));
        };
        if let Some(name) = self.index.get(&(target_file.clone(), fragment.to_owned())) {
            return Target::Named(name.clone());
        }
        let Some(raw) = self.corpus.value(&target_file).pointer(fragment).cloned() else {
            self.dangling.get_or_insert_with(|| crate::error::Error::Shape {
                file: file.to_owned(),
                pointer: pointer.to_owned(),
                message: format!(
                    "`$ref` {reference} points at nothing in {target_file} (the file is there; the pointer is not)"
                ),
            });
            return Target::Inline(Value::Object(Map::new()));
        };
        if depth >= MAX_INLINE_DEPTH {
            return Target::Inline(Value::Object(Map::new()));
        }
        // A document root that only points at its main definition, or a deep pointer.
        let mut inlined = self.schema(&target_file, fragment, &raw, depth + 1);
        if let Some(o) = inlined.as_object_mut() {
            o.remove("$defs");
        }
        match inlined
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix("#/$defs/"))
        {
            Some(name) if is_pure_ref(&inlined) => Target::Named(name.to_owned()),
            _ => Target::Inline(inlined),
        }
    }
}

/// Marks a variant target that is a hoisted schema still waiting for its final name.
const HOISTED: &str = "\u{0}hoisted:";

/// One `if: {tag: const}` / `then: {payload: schema}` clause.
struct Binding {
    tag: String,
    value: String,
    payload: String,
    schema: Value,
}

/// The clause as a tag → payload binding: `if` holds exactly `properties: {tag: {const}}`
/// (and may require the tag), `then` gives exactly one property of the owner a schema
/// with structure and otherwise only narrows (a sibling's `const`, `required`). No `else`.
fn binding(owner: &Map<String, Value>, clause: &Map<String, Value>) -> Option<Binding> {
    if clause.contains_key("else")
        || clause
            .keys()
            .any(|k| !matches!(k.as_str(), "if" | "then" | "$comment" | "description"))
    {
        return None;
    }
    let cond = clause.get("if")?.as_object()?;
    if cond
        .keys()
        .any(|k| !matches!(k.as_str(), "properties" | "required" | "$comment"))
    {
        return None;
    }
    let props = cond.get("properties")?.as_object()?;
    let (tag, test) = match props.iter().collect::<Vec<_>>().as_slice() {
        [(tag, test)] => ((*tag).clone(), *test),
        _ => return None,
    };
    let value = match (
        test.get("const"),
        test.get("enum").and_then(Value::as_array),
    ) {
        (Some(Value::String(v)), _) => v.clone(),
        (None, Some(values)) if values.len() == 1 => values[0].as_str()?.to_owned(),
        _ => return None,
    };
    if let Some(required) = cond.get("required").and_then(Value::as_array)
        && required.iter().any(|r| r.as_str() != Some(tag.as_str()))
    {
        return None;
    }
    let then = clause.get("then")?.as_object()?;
    if then.keys().any(|k| {
        !matches!(
            k.as_str(),
            "properties" | "required" | "$comment" | "description"
        )
    }) {
        return None;
    }
    let declared = owner.get("properties").and_then(Value::as_object)?;
    let mut typed = then
        .get("properties")?
        .as_object()?
        .iter()
        .filter(|(_, s)| !crate::project::validation_only(s));
    let (payload, schema) = typed.next()?;
    if typed.next().is_some() || !declared.contains_key(payload) || !declared.contains_key(&tag) {
        return None;
    }
    Some(Binding {
        tag,
        value,
        payload: payload.clone(),
        schema: schema.clone(),
    })
}

enum Target {
    Named(String),
    Inline(Value),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_named_as_a_client_type_takes_its_files_stem() {
        assert_eq!(
            clear_of_client(
                "spec/v2/facets/webhooks.schema.json",
                "RetryPolicy".to_owned()
            ),
            "WebhookRetryPolicy"
        );
        assert_eq!(
            clear_of_client("spec/v2/run.schema.json", "RunEvent".to_owned()),
            "RunEvent"
        );
        assert_eq!(
            clear_of_client("spec/v2/status.schema.json", "Error".to_owned()),
            "StatusError"
        );
    }

    /// Every public type of the client templates `client::*` re-exports is in
    /// `CLIENT_NAMES` (the testkit's are in their own module).
    #[test]
    fn client_names_cover_the_client_templates() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("templates/client");
        for entry in std::fs::read_dir(dir).expect("templates") {
            let path = entry.expect("entry").path();
            if path.file_stem().is_some_and(|s| s == "testkit") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("template");
            for line in text.lines() {
                let Some(rest) = ["pub struct ", "pub enum ", "pub trait ", "pub type "]
                    .iter()
                    .find_map(|p| line.strip_prefix(p))
                else {
                    continue;
                };
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                assert!(
                    CLIENT_NAMES.contains(&name.as_str()),
                    "{}: {name} is missing from CLIENT_NAMES",
                    path.display()
                );
            }
        }
    }
}
