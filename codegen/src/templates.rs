//! Rule modules written by hand under `codegen/templates/`, copied into
//! `generated/src/validators/` after a parse-and-print round trip (so a template that is not
//! Rust fails generation, and the output has the same layout as the rest of the crate).

use std::fs;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::format::header;

#[derive(Debug, Clone)]
pub(crate) struct Template {
    /// Module name: the file stem.
    pub name: String,
    /// The rendered output file (header + prettyplease text).
    pub rendered: String,
}

pub(crate) fn load(dir: &Path) -> Result<Vec<Template>> {
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
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "rs") {
            paths.push(path);
        }
    }
    paths.sort();
    let mut out = Vec::new();
    for path in paths {
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let label = format!("codegen/templates/{name}.rs");
        let text = fs::read_to_string(&path).map_err(|source| Error::Read {
            path: path.clone(),
            source,
        })?;
        let mut file = syn::parse_file(&text).map_err(|e| Error::Template {
            file: label.clone(),
            message: e.to_string(),
        })?;
        crate::format::skip_rustfmt(&mut file);
        let provenance = format!(
            "{label} (sha256 {})",
            hex::encode(Sha256::digest(text.as_bytes()))
        );
        out.push(Template {
            rendered: format!(
                "{}{}",
                header("//", &provenance),
                prettyplease::unparse(&file)
            ),
            name,
        });
    }
    Ok(out)
}
