//! Reads the corpus from disk: every file the generator looks at, parsed, with the digest
//! that goes into the corpus hash (the generated `corpus` module).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

pub(crate) const ERRORS: &str = "spec/v2/errors.json";
pub(crate) const INTEROP_MAP: &str = "spec/v2/interop-map.json";
pub(crate) const OPENAPI: &str = "api/v2/openapi.yaml";
pub(crate) const FACETS_DIR: &str = "spec/v2/facets";
/// The validation rule catalogue; optional (upstream's corpus has none).
pub(crate) const RULES: &str = "spec/v2/validation-rules.json";
/// The upstream version registry; optional (upstream's corpus has none).
pub(crate) const UPSTREAM_VERSIONS: &str = "spec/v2/upstream-versions.json";

/// Folders whose `*.schema.json` files are embedded, validated with and typed.
const SCHEMA_DIRS: &[&str] = &["schemas/v2", "spec/v2/facets", "spec/v2"];

/// One parsed corpus file.
#[derive(Debug, Clone)]
pub(crate) struct CorpusFile {
    pub text: String,
    pub value: Value,
    pub sha256: String,
}

/// Every file of the corpus the generator reads, keyed by path relative to the spec root
/// (forward slashes, so headers and keys are the same on every machine).
#[derive(Debug, Clone)]
pub(crate) struct Corpus {
    pub files: BTreeMap<String, CorpusFile>,
    /// Schema files in the order they are embedded (sorted by relative path).
    pub schema_files: Vec<String>,
}

impl Corpus {
    pub fn load(root: &Path) -> Result<Self> {
        let mut files = BTreeMap::new();
        for rel in [ERRORS, INTEROP_MAP] {
            files.insert(rel.to_owned(), read_json(root, rel)?);
        }
        files.insert(OPENAPI.to_owned(), read_yaml(root, OPENAPI)?);
        if root.join(RULES).is_file() {
            files.insert(RULES.to_owned(), read_json(root, RULES)?);
        }
        if root.join(UPSTREAM_VERSIONS).is_file() {
            files.insert(
                UPSTREAM_VERSIONS.to_owned(),
                read_json(root, UPSTREAM_VERSIONS)?,
            );
        }
        let mut schema_files = Vec::new();
        for dir in SCHEMA_DIRS {
            for rel in list_schema_files(root, dir)? {
                files.insert(rel.clone(), read_json(root, &rel)?);
                schema_files.push(rel);
            }
        }
        schema_files.sort();
        Ok(Self {
            files,
            schema_files,
        })
    }

    /// A corpus with no file, for tests that build one by hand.
    #[cfg(test)]
    pub fn empty() -> Self {
        Self {
            files: BTreeMap::new(),
            schema_files: Vec::new(),
        }
    }

    /// Adds a schema file (tests).
    #[cfg(test)]
    pub fn insert_schema(&mut self, rel: &str, value: Value) {
        let text = value.to_string();
        self.files.insert(
            rel.to_owned(),
            CorpusFile {
                sha256: digest(&text),
                text,
                value,
            },
        );
        self.schema_files.push(rel.to_owned());
        self.schema_files.sort();
    }

    pub fn value(&self, rel: &str) -> &Value {
        // Only paths that `load` inserted are asked for; an absent one is a generator bug,
        // and answering Null turns it into a Shape error at the caller.
        self.files.get(rel).map_or(&Value::Null, |f| &f.value)
    }

    pub fn has(&self, rel: &str) -> bool {
        self.files.contains_key(rel)
    }

    /// What the header of a file generated from `inputs` names: the paths, or their count
    /// when there are many. No digest: the one place that carries the corpus hash is the
    /// generated `corpus` module (see [`Corpus::sha256`]), so an edit to one corpus file
    /// rewrites only the files whose content it changes, plus that one.
    pub fn provenance(&self, inputs: &[&str]) -> String {
        let present: Vec<&str> = inputs
            .iter()
            .copied()
            .filter(|rel| self.files.contains_key(*rel))
            .collect();
        if present.len() > 4 {
            format!("{} corpus files", present.len())
        } else {
            present.join(", ")
        }
    }

    /// The corpus hash: sha256 over every corpus file in path order, each contributing its
    /// relative path and the hex sha256 of its text. The same for the same files on every
    /// machine (paths use forward slashes; CRLF line ends are read as LF).
    pub fn sha256(&self) -> String {
        let mut hasher = Sha256::new();
        for (rel, f) in &self.files {
            hasher.update(rel.as_bytes());
            hasher.update(f.sha256.as_bytes());
        }
        hex::encode(hasher.finalize())
    }
}

/// A corpus file's text, with CRLF line ends read as LF: a checkout made with
/// `core.autocrlf` generates (and hashes) the same as any other.
fn read_text(root: &Path, rel: &str) -> Result<String> {
    let path = root.join(rel);
    fs::read_to_string(&path)
        .map(|text| text.replace("\r\n", "\n"))
        .map_err(|source| Error::Read { path, source })
}

fn digest(text: &str) -> String {
    hex::encode(Sha256::digest(text.as_bytes()))
}

fn read_json(root: &Path, rel: &str) -> Result<CorpusFile> {
    let text = read_text(root, rel)?;
    let Unique(value) = serde_json::from_str(&text).map_err(|e| Error::Parse {
        file: rel.to_owned(),
        format: "JSON",
        message: e.to_string(),
    })?;
    Ok(CorpusFile {
        sha256: digest(&text),
        text,
        value,
    })
}

fn read_yaml(root: &Path, rel: &str) -> Result<CorpusFile> {
    let text = read_text(root, rel)?;
    let Unique(value) = yaml_serde::from_str(&text).map_err(|e| Error::Parse {
        file: rel.to_owned(),
        format: "YAML",
        message: e.to_string(),
    })?;
    Ok(CorpusFile {
        sha256: digest(&text),
        text,
        value,
    })
}

/// A corpus document read from JSON or YAML, refusing an object that names a member twice:
/// both parsers keep the last one silently, and a second `properties` would wipe a
/// model's fields (or a second `summary:` change a doc) with nothing said.
struct Unique(Value);

impl<'de> serde::Deserialize<'de> for Unique {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        d.deserialize_any(UniqueVisitor)
    }
}

struct UniqueVisitor;

impl<'de> serde::de::Visitor<'de> for UniqueVisitor {
    type Value = Unique;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> std::result::Result<Unique, E> {
        Ok(Unique(Value::Bool(v)))
    }
    fn visit_i64<E>(self, v: i64) -> std::result::Result<Unique, E> {
        Ok(Unique(Value::from(v)))
    }
    fn visit_u64<E>(self, v: u64) -> std::result::Result<Unique, E> {
        Ok(Unique(Value::from(v)))
    }
    fn visit_f64<E>(self, v: f64) -> std::result::Result<Unique, E> {
        Ok(Unique(Value::from(v)))
    }
    fn visit_str<E>(self, v: &str) -> std::result::Result<Unique, E> {
        Ok(Unique(Value::String(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> std::result::Result<Unique, E> {
        Ok(Unique(Value::String(v)))
    }
    fn visit_unit<E>(self) -> std::result::Result<Unique, E> {
        Ok(Unique(Value::Null))
    }
    fn visit_none<E>(self) -> std::result::Result<Unique, E> {
        Ok(Unique(Value::Null))
    }
    fn visit_some<D: serde::Deserializer<'de>>(
        self,
        d: D,
    ) -> std::result::Result<Unique, D::Error> {
        serde::Deserialize::deserialize(d)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(
        self,
        mut seq: A,
    ) -> std::result::Result<Unique, A::Error> {
        let mut items = Vec::new();
        while let Some(Unique(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Unique(Value::Array(items)))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(
        self,
        mut map: A,
    ) -> std::result::Result<Unique, A::Error> {
        let mut object = serde_json::Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if object.contains_key(&key) {
                return Err(serde::de::Error::custom(format!(
                    "`{key}` is named twice in one object (a parser would keep the last in silence)"
                )));
            }
            let Unique(value) = map.next_value()?;
            object.insert(key, value);
        }
        Ok(Unique(Value::Object(object)))
    }
}

fn list_schema_files(root: &Path, dir: &str) -> Result<Vec<String>> {
    let path: PathBuf = root.join(dir);
    let entries = match fs::read_dir(&path) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(Error::Read { path, source }),
    };
    let mut out = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| Error::Read {
            path: path.clone(),
            source,
        })?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.ends_with(".schema.json") && entry.path().is_file() {
            out.push(format!("{dir}/{name}"));
        }
    }
    out.sort();
    Ok(out)
}

/// Pointer-carrying accessors, so every shape error names file and place.
pub(crate) struct At<'a> {
    pub file: &'a str,
}

impl<'a> At<'a> {
    pub fn shape(&self, pointer: &str, message: impl Into<String>) -> Error {
        Error::Shape {
            file: self.file.to_owned(),
            pointer: pointer.to_owned(),
            message: message.into(),
        }
    }

    pub fn array<'v>(&self, v: &'v Value, pointer: &str) -> Result<&'v [Value]> {
        match v.pointer(pointer) {
            Some(Value::Array(a)) => Ok(a),
            _ => Err(self.shape(pointer, "expected an array here")),
        }
    }

    /// An array that may be absent (an empty slice then).
    pub fn opt_array<'v>(&self, v: &'v Value, pointer: &str) -> Result<&'v [Value]> {
        match v.pointer(pointer) {
            None | Some(Value::Null) => Ok(&[]),
            Some(Value::Array(a)) => Ok(a),
            Some(_) => Err(self.shape(pointer, "expected an array here")),
        }
    }

    pub fn str<'v>(&self, v: &'v Value, pointer: &str) -> Result<&'v str> {
        v.pointer(pointer)
            .and_then(Value::as_str)
            .ok_or_else(|| self.shape(pointer, "expected a string here"))
    }

    /// A string that may be absent, null or empty (all three mean "none").
    pub fn opt_str<'v>(&self, v: &'v Value, pointer: &str) -> Result<Option<&'v str>> {
        match v.pointer(pointer) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) if s.is_empty() => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.shape(pointer, "expected a string or null here")),
        }
    }

    pub fn i64(&self, v: &Value, pointer: &str) -> Result<i64> {
        v.pointer(pointer)
            .and_then(Value::as_i64)
            .ok_or_else(|| self.shape(pointer, "expected an integer here"))
    }

    pub fn bool(&self, v: &Value, pointer: &str) -> Result<bool> {
        v.pointer(pointer)
            .and_then(Value::as_bool)
            .ok_or_else(|| self.shape(pointer, "expected a boolean here"))
    }

    pub fn strings(&self, v: &Value, pointer: &str) -> Result<Vec<String>> {
        self.opt_array(v, pointer)?
            .iter()
            .enumerate()
            .map(|(i, item)| {
                item.as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| self.shape(&format!("{pointer}/{i}"), "expected a string here"))
            })
            .collect()
    }
}
