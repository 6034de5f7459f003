//! Reading a directory of definition files (workflows, agents): every `*.json`, `*.yaml`
//! and `*.yml` file, in name order so that loading is deterministic.

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
