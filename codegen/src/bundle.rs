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
use crate::load::{Corpus, OPENAPI};
use crate::project::project_keywords;
use crate::uris::SchemaUris;

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
    /// `(file, pointer)` → type name, for naming schemas found later (client operations).
    index: BTreeMap<(String, String), String>,
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
        };
        let projected = b.schema(OPENAPI, schema, 0);
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
}

pub(crate) fn bundle(corpus: &Corpus, uris: &SchemaUris) -> Result<Bundle> {
    // Every source of a named type, in a fixed order: schema files (sorted), then components.
    let mut sources: Vec<(String, String, String)> = Vec::new();
    for rel in corpus.schema_files.iter().filter(|r| is_model_file(r)) {
        let doc = corpus.value(rel);
        if root_is_type(doc) {
            sources.push((rel.clone(), String::new(), root_name(rel)));
        }
        if let Some(defs) = doc.get("$defs").and_then(Value::as_object) {
            for key in defs.keys() {
                let pointer = format!("/$defs/{}", escape(key));
                sources.push((rel.clone(), pointer, key.to_upper_camel_case()));
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
            let pointer = format!("/components/schemas/{}", escape(key));
            if is_pure_ref(schema) {
                alias_sources.push((pointer, key.clone()));
            } else {
                sources.push((OPENAPI.to_owned(), pointer, key.to_upper_camel_case()));
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
        let projected = b.schema(rel, &raw, 0);
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
        let projected = b.schema(OPENAPI, &raw, 0);
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
    out.warnings = b.warnings;
    out.index = b.index;
    Ok(out)
}

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn dir_of(rel: &str) -> &str {
    rel.rsplit_once('/').map_or("", |(d, _)| d)
}

/// `dir` + a relative path, with `.` and `..` folded.
fn join_rel(dir: &str, path: &str) -> String {
    let mut parts: Vec<&str> = dir.split('/').filter(|s| !s.is_empty()).collect();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    parts.join("/")
}

impl Bundler<'_> {
    /// Rewrites one schema found in `file`: references first, then keyword projection.
    fn schema(&mut self, file: &str, v: &Value, depth: usize) -> Value {
        match v {
            Value::Object(obj) => {
                let mut out = Map::new();
                for (k, child) in obj {
                    let child = match k.as_str() {
                        "$ref" => continue,
                        "properties" | "patternProperties" | "$defs" | "definitions"
                        | "dependentSchemas" => {
                            Value::Object(child.as_object().map_or_else(Map::new, |m| {
                                m.iter()
                                    .map(|(name, s)| (name.clone(), self.schema(file, s, depth)))
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
                                items.iter().map(|s| self.schema(file, s, depth)).collect(),
                            ),
                            other => self.schema(file, other, depth),
                        },
                        "allOf" | "anyOf" | "oneOf" | "prefixItems" => match child {
                            Value::Array(items) => Value::Array(
                                items.iter().map(|s| self.schema(file, s, depth)).collect(),
                            ),
                            other => other.clone(),
                        },
                        _ => child.clone(),
                    };
                    out.insert(k.clone(), child);
                }
                if let Some(reference) = obj.get("$ref").and_then(Value::as_str) {
                    match self.reference(file, reference, depth) {
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

    fn reference(&mut self, file: &str, reference: &str, depth: usize) -> Target {
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
            let warning = format!(
                "{file}: `$ref` {reference} names a file the corpus lacks; typed as serde_json::Value"
            );
            // Schema files' missing references are already reported once, with their pointer.
            if file == OPENAPI && !self.warnings.contains(&warning) {
                self.warnings.push(warning);
            }
            return Target::Inline(Value::Object(Map::new()));
        };
        if let Some(name) = self.index.get(&(target_file.clone(), fragment.to_owned())) {
            return Target::Named(name.clone());
        }
        let Some(raw) = self.corpus.value(&target_file).pointer(fragment).cloned() else {
            let warning =
                format!("{file}: `$ref` {reference} points at nothing; typed as serde_json::Value");
            if !self.warnings.contains(&warning) {
                self.warnings.push(warning);
            }
            return Target::Inline(Value::Object(Map::new()));
        };
        if depth >= MAX_INLINE_DEPTH {
            return Target::Inline(Value::Object(Map::new()));
        }
        // A document root that only points at its main definition, or a deep pointer.
        let mut inlined = self.schema(&target_file, &raw, depth + 1);
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

enum Target {
    Named(String),
    Inline(Value),
}
