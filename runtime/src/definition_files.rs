//! Reading definition files (workflows, agents, the config file): a directory's `*.json`,
//! `*.yaml` and `*.yml` files in name order, so that loading is deterministic; a file's
//! text as a JSON value; a finding's pointer as lines show it.

use std::path::Path;

/// A file that could not be listed or read: its path and the reason.
#[derive(Debug)]
pub struct Unreadable {
    pub path: String,
    pub message: String,
}

/// `(path, text)` of each definition file in `dir`, sorted by path.
pub fn read(dir: &Path) -> Result<Vec<(String, String)>, Unreadable> {
    let unreadable = |path: &Path, e: std::io::Error| Unreadable {
        path: path.display().to_string(),
        message: e.to_string(),
    };
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .map_err(|e| unreadable(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("json" | "yaml" | "yml")
            )
        })
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let text = std::fs::read_to_string(&path).map_err(|e| unreadable(&path, e))?;
            Ok((path.display().to_string(), text))
        })
        .collect()
}

/// A definition or config file's text as a JSON value: JSON when it starts with `{`, else
/// YAML (JSON is YAML too, but the JSON parser's messages name JSON's own mistakes).
pub fn parse_value(text: &str) -> Result<serde_json::Value, String> {
    if text.trim_start().starts_with('{') {
        serde_json::from_str(text).map_err(|e| e.to_string())
    } else {
        yaml_serde::from_str(text).map_err(|e| e.to_string())
    }
}

/// A finding's JSON pointer as a line shows it: `/` for the whole document.
pub fn shown_pointer(pointer: &str) -> &str {
    if pointer.is_empty() { "/" } else { pointer }
}
