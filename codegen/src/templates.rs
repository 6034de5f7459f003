//! Files written by hand under `codegen/templates/`, copied into the generated crate:
//!
//! - `*.rs` (top level): validator rule modules, written to `src/validators/<name>.rs` after
//!   a parse-and-print round trip (so a template that is not Rust fails generation, and the
//!   output has the same layout as the rest of the crate);
//! - `client/*.rs`: the client's hand-written convenience layer, written to
//!   `src/client/<name>.rs` verbatim (comments kept) after a parse check;
//! - `crate/**`: files of the crate itself (`README.md`, `LICENSE`, `examples/*.rs`),
//!   written at the same relative path; `.rs` and `.md` files get the `@generated` header.
//!
//! A client or crate template may start with lines
//! `// openwop-codegen: requires operation <operationId>` or `… requires model <Name>`: it is
//! only written when the corpus has what it names (another corpus may lack it). It also
//! declares the members of the models it uses, `… requires field <Model>.<field>` (the Rust
//! field name, `RunEvent.node_id`) and `… requires variant <Enum>::<Variant>`
//! (`RunEventPayload::InterruptRequested`): a model the corpus lacks leaves the template out
//! like a missing model, but a model that is there without the member is an error naming the
//! template, the member and the corpus schema (a corpus edit broke the template, and the
//! crate would not compile).

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::format::header;

/// A `requires` entry: `(kind, name)`, `("field", "RunEvent.node_id")`.
pub(crate) type Requirement = (String, String);

#[derive(Debug, Clone)]
pub(crate) struct Template {
    /// Module name: the file stem (or the relative path, for crate files).
    pub name: String,
    /// Where it is written by hand (`codegen/templates/client/convenience.rs`), for messages.
    pub label: String,
    /// The rendered output file.
    pub rendered: String,
    /// `requires` lines: `("operation" | "model" | "field" | "variant", name)`.
    pub requires: Vec<(String, String)>,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Templates {
    pub validators: Vec<Template>,
    pub client: Vec<Template>,
    /// Crate files keyed by relative output path.
    pub files: Vec<Template>,
}

fn read_dir_sorted(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(Error::Read {
                path: dir.to_owned(),
                source,
            });
        }
    };
    let mut paths = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| Error::Read {
            path: dir.to_owned(),
            source,
        })?;
        paths.push(entry.path());
    }
    paths.sort();
    Ok(paths)
}

/// A template's text, CRLF line ends read as LF (as the corpus's are).
fn read(path: &Path) -> Result<String> {
    fs::read_to_string(path)
        .map(|text| text.replace("\r\n", "\n"))
        .map_err(|source| Error::Read {
            path: path.to_owned(),
            source,
        })
}

fn requires(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("// openwop-codegen: requires "))
        .filter_map(|rest| {
            let (kind, name) = rest.trim().split_once(' ')?;
            Some((kind.to_owned(), name.trim().to_owned()))
        })
        .collect()
}

/// The text of a template with sections: a line `<!-- openwop-codegen: section requires
/// <kind> <name>[, <kind> <name>…] -->` opens one, `<!-- openwop-codegen: end section -->`
/// closes it (no nesting); `keep(n, requires)` says whether section `n` (from 1) stays. The
/// marker lines are dropped either way. `None` for a text without sections.
pub(crate) fn sections(
    text: &str,
    keep: &mut dyn FnMut(usize, &[Requirement]) -> bool,
) -> Option<String> {
    const OPEN: &str = "<!-- openwop-codegen: section requires ";
    const CLOSE: &str = "<!-- openwop-codegen: end section -->";
    if !text.contains(OPEN) {
        return None;
    }
    let mut out = String::with_capacity(text.len());
    // `Some(kept)` inside a section.
    let mut inside: Option<bool> = None;
    let mut n = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix(OPEN) {
            n += 1;
            let list = rest.trim_end_matches("-->").trim();
            let requires: Vec<Requirement> = list
                .split(',')
                .filter_map(|r| {
                    let (kind, name) = r.trim().split_once(' ')?;
                    Some((kind.to_owned(), name.trim().to_owned()))
                })
                .collect();
            inside = Some(keep(n, &requires));
            continue;
        }
        if trimmed == CLOSE {
            inside = None;
            continue;
        }
        if inside != Some(false) {
            out.push_str(line);
        }
    }
    Some(out)
}

fn parse_check(label: &str, text: &str) -> Result<syn::File> {
    syn::parse_file(text).map_err(|e| Error::Template {
        file: label.to_owned(),
        message: e.to_string(),
    })
}

pub(crate) fn load(dir: &Path) -> Result<Templates> {
    let mut out = Templates::default();
    for path in read_dir_sorted(dir)? {
        if path.extension().is_none_or(|e| e != "rs") || !path.is_file() {
            continue;
        }
        let name = stem(&path);
        let label = format!("codegen/templates/{name}.rs");
        let text = read(&path)?;
        let mut file = parse_check(&label, &text)?;
        crate::format::skip_rustfmt(&mut file);
        out.validators.push(Template {
            rendered: format!("{}{}", header("//", &label), prettyplease::unparse(&file)),
            requires: requires(&text),
            name,
            label,
        });
    }
    for path in read_dir_sorted(&dir.join("client"))? {
        if path.extension().is_none_or(|e| e != "rs") || !path.is_file() {
            continue;
        }
        let name = stem(&path);
        let label = format!("codegen/templates/client/{name}.rs");
        let text = read(&path)?;
        parse_check(&label, &text)?;
        out.client.push(Template {
            rendered: format!("{}{text}", header("//", &label)),
            requires: requires(&text),
            name,
            label,
        });
    }
    let root = dir.join("crate");
    let mut stack = vec![root.clone()];
    while let Some(d) = stack.pop() {
        for path in read_dir_sorted(&d)? {
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let rel = path
                .strip_prefix(&root)
                .map(|p| p.to_string_lossy().replace('\\', "/"))
                .unwrap_or_default();
            let label = format!("codegen/templates/crate/{rel}");
            let text = read(&path)?;
            let rendered = match path.extension().and_then(|e| e.to_str()) {
                Some("rs") => {
                    parse_check(&label, &text)?;
                    format!("{}{text}", header("//", &label))
                }
                Some("md") => format!(
                    "<!-- @generated by cargo xtask codegen from {label} — do not edit -->\n{text}"
                ),
                // A licence stays the exact text of the licence.
                _ => text.clone(),
            };
            out.files.push(Template {
                name: rel,
                rendered,
                requires: requires(&text),
                label,
            });
        }
    }
    out.files.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sections_keep_or_drop_their_lines_and_never_their_markers() {
        let text = "a\n<!-- openwop-codegen: section requires model X, template convenience -->\nb\n<!-- openwop-codegen: end section -->\nc\n<!-- openwop-codegen: section requires operation y -->\nd\n<!-- openwop-codegen: end section -->\ne\n";
        let mut seen = Vec::new();
        let out = sections(text, &mut |n, requires| {
            seen.push((n, requires.to_vec()));
            n == 2
        })
        .expect("has sections");
        assert_eq!(out, "a\nc\nd\ne\n");
        assert_eq!(
            seen[0].1,
            [
                ("model".to_owned(), "X".to_owned()),
                ("template".to_owned(), "convenience".to_owned())
            ]
        );
        assert_eq!(seen[1].0, 2);
        assert!(sections("no markers", &mut |_, _| true).is_none());
    }

    #[test]
    fn requires_lines_of_every_kind() {
        let text = "// openwop-codegen: requires field RunEvent.node_id\n// openwop-codegen: requires answer listRuns RunList\n";
        assert_eq!(
            requires(text),
            [
                ("field".to_owned(), "RunEvent.node_id".to_owned()),
                ("answer".to_owned(), "listRuns RunList".to_owned())
            ]
        );
    }
}
