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
//! only written when the corpus has what it names (another corpus may lack it).

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::format::header;

#[derive(Debug, Clone)]
pub(crate) struct Template {
    /// Module name: the file stem (or the relative path, for crate files).
    pub name: String,
    /// The rendered output file.
    pub rendered: String,
    /// `requires` lines: `("operation" | "model", name)`.
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
