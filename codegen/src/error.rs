//! The one error type of the generator. Every variant names the file it is about and,
//! where the problem sits inside a document, a JSON pointer into it.

use std::path::PathBuf;

/// Why generation failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A corpus file could not be read. (The cause is the `source`, not repeated here: a
    /// chain printer such as anyhow's `{:#}` would print it twice.)
    #[error("cannot read {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A corpus file is not well-formed JSON or YAML.
    #[error("{file}: not valid {format}: {message}")]
    Parse {
        file: String,
        format: &'static str,
        message: String,
    },
    /// A document lacks a member the generator needs, or the member has the wrong type.
    #[error("{file}#{pointer}: {message}")]
    Shape {
        file: String,
        pointer: String,
        message: String,
    },
    /// Two corpus files disagree: `file#pointer` names something `wanted` says is absent.
    #[error("{file}#{pointer}: {message}")]
    CrossCheck {
        file: String,
        pointer: String,
        message: String,
    },
    /// Two different schemas want the same model name.
    #[error("model name `{name}` is defined differently by {first} and {second}")]
    Collision {
        name: String,
        first: String,
        second: String,
    },
    /// typify could not type a schema, even after the fallback.
    #[error("typify failed on {schema}: {message}")]
    Typify { schema: String, message: String },
    /// The emitted tokens are not a Rust file; a generator bug, reported with the file.
    #[error("emitted code for {file} does not parse: {message}")]
    Format { file: String, message: String },
    /// A template under `codegen/templates/` does not parse as Rust.
    #[error("template {file} does not parse as Rust: {message}")]
    Template { file: String, message: String },
    /// A template uses a member (field, variant) of a model the corpus has, and the model
    /// lacks it: the corpus changed under the template, and the crate would not compile.
    #[error("template {template} uses {member}, which the corpus no longer gives: {why}")]
    TemplateMember {
        template: String,
        member: String,
        why: String,
    },
    /// `--strict`: the generator worked around something (each warning names where).
    #[error("{} warning(s) under --strict:\n{}", warnings.len(), warnings.iter().map(|w| format!("  {w}")).collect::<Vec<_>>().join("\n"))]
    Strict { warnings: Vec<String> },
    /// An output file could not be written or listed.
    #[error("cannot write {path}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The output directory holds files this generator did not write: nothing is written
    /// there, so a mistyped `--out` never overwrites anyone's files.
    #[error(
        "{path} is not empty and holds no crate this generator wrote ({why}); nothing was written: name an empty or new directory, or the generated crate's"
    )]
    NotOurs { path: PathBuf, why: String },
    /// Files of the generated crate this run would overwrite or remove were edited by hand
    /// since the last run wrote them, or never written by it: nothing is written, so the
    /// edit is not lost without a word (`--force` discards them).
    #[error(
        "{} file(s) in {} would be overwritten or removed, but the last `cargo xtask codegen` did not leave them so; nothing was written:\n{}\n{}",
        files.len(),
        path.display(),
        files.iter().map(|f| format!("  {} ({})", f.path, f.why)).collect::<Vec<_>>().join("\n"),
        hand_edit_advice(files)
    )]
    HandEdited { path: PathBuf, files: Vec<HandEdit> },
}

/// One file [`Error::HandEdited`] names, relative to the output directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandEdit {
    pub path: String,
    /// "edited since it was generated" or "not written by the generator".
    pub why: &'static str,
}

/// Shorthand used across the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What to do about [`Error::HandEdited`]'s files: an edited file's change is in `git diff`
/// and belongs in the corpus or the templates; a file the generator never wrote is not in
/// any diff of a generated file, and `--force` deletes it.
pub fn hand_edit_advice(files: &[HandEdit]) -> String {
    let edited = files.iter().any(|f| f.why == crate::fresh::EDITED);
    let foreign: Vec<&str> = files
        .iter()
        .filter(|f| f.why != crate::fresh::EDITED)
        .map(|f| f.path.as_str())
        .collect();
    let mut out = Vec::new();
    if edited {
        out.push(
            "generated code is regenerated, never edited: move the change into the corpus (spec/, schemas/, api/) or codegen/templates/ (`git diff` shows it), then rerun with --force to discard the edit"
                .to_owned(),
        );
    }
    if !foreign.is_empty() {
        out.push(format!(
            "{} the generator never wrote (no diff of a generated file shows {}): --force deletes {}, so move {} out of the crate first to keep {}",
            foreign.join(", "),
            if foreign.len() == 1 { "it" } else { "them" },
            if foreign.len() == 1 { "it" } else { "them" },
            if foreign.len() == 1 { "it" } else { "them" },
            if foreign.len() == 1 { "it" } else { "them" },
        ));
    }
    out.join("\n")
}
