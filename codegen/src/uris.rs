//! Where each corpus schema lives by URI, and which referenced schemas the corpus lacks.
//!
//! A file's URI is its `$id`. A file without one gets the URI its relative path gives when
//! resolved against a sibling's `$id` (the corpus promises that relative references resolve
//! the same on disk and by `$id`), or `file:///corpus/<path>` when no file has an `$id`.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::load::Corpus;

#[derive(Debug, Clone, Default)]
pub(crate) struct SchemaUris {
    /// Relative path → URI (no fragment).
    pub by_file: BTreeMap<String, String>,
    /// URIs referenced by some corpus schema that no corpus file provides, with one referrer
    /// (`file#pointer`) each.
    pub missing: BTreeMap<String, String>,
}

/// The URI the served OpenAPI document (as JSON) is registered and served under: beside
/// the schema files' origin, at `/api/v2/openapi.json`.
pub(crate) fn openapi_uri(uris: &SchemaUris) -> String {
    let any = uris
        .by_file
        .values()
        .next()
        .map(String::as_str)
        .unwrap_or("");
    match any.find("://") {
        Some(i) => {
            let host_end = any[i + 3..].find('/').map_or(any.len(), |j| i + 3 + j);
            format!("{}/api/v2/openapi.json", &any[..host_end])
        }
        None => "file:///corpus/api/v2/openapi.json".to_owned(),
    }
}

/// The OpenAPI document with every `$ref` to a corpus file rewritten to that file's URI
/// (the fragment kept), so the document stands alone: served as `/openapi.json` and
/// registered beside the schemas for response validation.
pub(crate) fn openapi_standalone(corpus: &Corpus, uris: &SchemaUris) -> Value {
    fn walk(v: &mut Value, uris: &SchemaUris) {
        match v {
            Value::Object(obj) => {
                for (k, child) in obj.iter_mut() {
                    if k == "$ref"
                        && let Value::String(r) = child
                        && !r.starts_with('#')
                    {
                        let (path, fragment) = r.split_once('#').unwrap_or((r.as_str(), ""));
                        let rel = join_rel("api/v2", path);
                        if let Some(uri) = uris.by_file.get(&rel) {
                            *r = if fragment.is_empty() {
                                uri.clone()
                            } else {
                                format!("{uri}#{fragment}")
                            };
                        }
                    } else {
                        walk(child, uris);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|i| walk(i, uris)),
            _ => {}
        }
    }
    let mut doc = corpus.value(crate::load::OPENAPI).clone();
    walk(&mut doc, uris);
    doc
}

pub(crate) fn resolve(corpus: &Corpus) -> SchemaUris {
    let anchor = corpus.schema_files.iter().find_map(|rel| {
        let id = corpus.value(rel).get("$id")?.as_str()?;
        (id.starts_with("http://") || id.starts_with("https://"))
            .then(|| (rel.clone(), id.to_owned()))
    });
    let mut by_file = BTreeMap::new();
    for rel in &corpus.schema_files {
        let uri = match corpus.value(rel).get("$id").and_then(Value::as_str) {
            Some(id) => strip_fragment(id).to_owned(),
            None => match &anchor {
                Some((anchor_rel, anchor_id)) => join(anchor_id, &relative_path(anchor_rel, rel)),
                None => format!("file:///corpus/{rel}"),
            },
        };
        by_file.insert(rel.clone(), uri);
    }
    let known: BTreeSet<&str> = by_file.values().map(String::as_str).collect();
    let mut missing = BTreeMap::new();
    for (rel, base) in &by_file {
        let mut refs = Vec::new();
        collect_refs(corpus.value(rel), String::new(), &mut refs);
        for (pointer, reference) in refs {
            if reference.starts_with('#') {
                continue;
            }
            let target = join(base, strip_fragment(&reference));
            if !known.contains(target.as_str()) {
                missing
                    .entry(target)
                    .or_insert_with(|| format!("{rel}#{pointer}"));
            }
        }
    }
    SchemaUris { by_file, missing }
}

/// The URI a corpus-relative path has (or would have, for a file the corpus lacks): its
/// own when it is a corpus file, else its path resolved against any corpus file's URI, as
/// [`resolve`] names a file without `$id`. An absolute URI is itself.
pub(crate) fn uri_of(uris: &SchemaUris, rel: &str) -> String {
    if rel.contains("://") {
        return rel.to_owned();
    }
    if let Some(uri) = uris.by_file.get(rel) {
        return uri.clone();
    }
    match uris.by_file.iter().next() {
        Some((anchor_rel, anchor_uri)) => join(anchor_uri, &relative_path(anchor_rel, rel)),
        None => format!("file:///corpus/{rel}"),
    }
}

fn strip_fragment(s: &str) -> &str {
    s.split_once('#').map_or(s, |(head, _)| head)
}

/// The path from `from`'s directory to `to`, both relative to the spec root.
fn relative_path(from: &str, to: &str) -> String {
    let from_dir: Vec<&str> = from
        .split('/')
        .collect::<Vec<_>>()
        .split_last()
        .map_or(Vec::new(), |(_, d)| d.to_vec());
    let to_parts: Vec<&str> = to.split('/').collect();
    let common = from_dir
        .iter()
        .zip(&to_parts)
        .take_while(|(a, b)| a == b)
        .count();
    let mut parts: Vec<&str> = vec![".."; from_dir.len() - common];
    parts.extend(&to_parts[common..]);
    parts.join("/")
}

/// `key` as one reference token of a JSON pointer (RFC 6901: `~` and `/` escaped).
pub(crate) fn pointer_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// RFC 3986 reference resolution, enough for the path references schemas use.
pub(crate) fn join(base: &str, reference: &str) -> String {
    if reference.is_empty() {
        return strip_fragment(base).to_owned();
    }
    if reference.contains("://") || reference.starts_with("urn:") {
        return reference.to_owned();
    }
    let base = strip_fragment(base);
    let (origin, path) = match base.find("://") {
        Some(i) => match base[i + 3..].find('/') {
            Some(j) => base.split_at(i + 3 + j),
            None => (base, ""),
        },
        None => ("", base),
    };
    let mut segments: Vec<&str> = if reference.starts_with('/') {
        Vec::new()
    } else {
        let mut s: Vec<&str> = path.split('/').collect();
        s.pop();
        s
    };
    for seg in reference.split('/') {
        match seg {
            "." => {}
            ".." => {
                if segments.len() > 1 {
                    segments.pop();
                }
            }
            _ => segments.push(seg),
        }
    }
    let joined = segments.join("/");
    if joined.starts_with('/') || origin.is_empty() {
        format!("{origin}{joined}")
    } else {
        format!("{origin}/{joined}")
    }
}

fn collect_refs(v: &Value, pointer: String, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(obj) => {
            for (k, child) in obj {
                let p = format!("{pointer}/{}", pointer_token(k));
                if k == "$ref"
                    && let Some(r) = child.as_str()
                {
                    out.push((p.clone(), r.to_owned()));
                }
                collect_refs(child, p, out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                collect_refs(child, format!("{pointer}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// `dir` + a relative path, with `.` and `..` folded.
pub(crate) fn join_rel(dir: &str, path: &str) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joins_like_a_browser() {
        let base = "https://openwop.dev/spec/v2/capabilities.schema.json";
        assert_eq!(
            join(base, "ids.schema.json"),
            "https://openwop.dev/spec/v2/ids.schema.json"
        );
        assert_eq!(
            join(base, "./ids.schema.json"),
            "https://openwop.dev/spec/v2/ids.schema.json"
        );
        assert_eq!(
            join(base, "../../spec/v2/facets/a2a.schema.json"),
            "https://openwop.dev/spec/v2/facets/a2a.schema.json"
        );
        assert_eq!(join(base, "https://x.test/a.json"), "https://x.test/a.json");
    }

    #[test]
    fn relative_paths() {
        assert_eq!(
            relative_path("schemas/v2/a.json", "spec/v2/facets/b.json"),
            "../../spec/v2/facets/b.json"
        );
        assert_eq!(
            relative_path("schemas/v2/a.json", "schemas/v2/c.json"),
            "c.json"
        );
    }
}
