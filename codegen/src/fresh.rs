//! Writing the output directory, and comparing it with what the generator would write.

use std::fs;
use std::path::{Path, PathBuf};

use crate::Output;
use crate::error::{Error, Result};

/// How an output file differs from what the corpus gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StaleKind {
    /// The generator would write it, but it is not there.
    Missing,
    /// It is there with other content; a short unified diff (on disk → generated).
    Differs { diff: String },
    /// It is there, but the generator would not write it.
    Extra,
}

/// One stale file, relative to the output directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stale {
    pub path: String,
    pub kind: StaleKind,
}

/// The generated file that carries the corpus hash.
const CORPUS_FILE: &str = "src/corpus.rs";

/// The rename order's key: every file before the one naming the corpus.
fn renamed_last(rel: &str) -> bool {
    rel == CORPUS_FILE
}

/// Writes every output file (only those whose content changed) and removes files the
/// generator no longer writes. Returns the relative paths it wrote or removed. A
/// directory that holds files but no generated crate is refused before anything is
/// written: `--out runtime` would otherwise replace its `Cargo.toml` and `src/lib.rs`.
pub fn write(out_dir: &Path, output: &Output) -> Result<Vec<String>> {
    if !is_generated_crate(out_dir) {
        let present = existing_files(out_dir)?;
        if let Some(first) = present.first() {
            return Err(Error::NotOurs {
                path: out_dir.to_owned(),
                why: format!(
                    "{} file(s), {first} among them, and no Cargo.toml with the generated header",
                    present.len()
                ),
            });
        }
    }
    // Staged: each changed file is written beside its place first, and only once all are
    // written are they renamed into place, so a failure on the way (a full disk, a
    // directory where a file goes) leaves the crate as it was, not half new.
    let mut staged: Vec<(PathBuf, PathBuf, &String)> = Vec::new();
    let unstage = |staged: &[(PathBuf, PathBuf, &String)]| {
        for (tmp, _, _) in staged {
            let _ = fs::remove_file(tmp);
        }
    };
    for (rel, text) in &output.files {
        let path = out_dir.join(rel);
        if fs::read_to_string(&path).ok().as_deref() == Some(text.as_str()) {
            continue;
        }
        let tmp = path.with_file_name(format!(
            ".{}.codegen-tmp",
            path.file_name().unwrap_or_default().to_string_lossy()
        ));
        let written = path
            .parent()
            .map_or(Ok(()), fs::create_dir_all)
            .and_then(|()| {
                if path.is_dir() {
                    Err(std::io::Error::other("a directory is where the file goes"))
                } else {
                    fs::write(&tmp, text)
                }
            });
        if let Err(source) = written {
            unstage(&staged);
            let _ = fs::remove_file(&tmp);
            return Err(Error::Write { path, source });
        }
        staged.push((tmp, path, rel));
    }
    // `src/corpus.rs` (the corpus hash) goes last: a run killed between two renames leaves
    // a crate that still names the corpus it was generated from before, so `--check` and
    // the source-hash gate see it as stale instead of as this corpus's.
    staged.sort_by_key(|(_, _, rel)| renamed_last(rel));
    let mut touched = Vec::new();
    for (i, (tmp, path, rel)) in staged.iter().enumerate() {
        if let Err(source) = fs::rename(tmp, path) {
            unstage(&staged[i..]);
            return Err(Error::Write {
                path: path.clone(),
                source,
            });
        }
        touched.push((*rel).clone());
    }
    // Pruned only here, in a directory that held a generated crate or nothing (above).
    for rel in existing_files(out_dir)? {
        if !output.files.contains_key(&rel) {
            let path = out_dir.join(&rel);
            fs::remove_file(&path).map_err(|source| Error::Write { path, source })?;
            touched.push(rel);
        }
    }
    Ok(touched)
}

/// Every file of `out_dir` that differs from `output`, sorted by path. Writes nothing.
pub fn stale(out_dir: &Path, output: &Output) -> Result<Vec<Stale>> {
    let mut found = Vec::new();
    for (rel, text) in &output.files {
        // CRLF checkouts are not drift.
        match fs::read_to_string(out_dir.join(rel)) {
            Err(_) => found.push(Stale {
                path: rel.clone(),
                kind: StaleKind::Missing,
            }),
            Ok(on_disk) if on_disk.replace("\r\n", "\n") == *text => {}
            Ok(on_disk) => found.push(Stale {
                path: rel.clone(),
                kind: StaleKind::Differs {
                    diff: diff(rel, &on_disk, text),
                },
            }),
        }
    }
    for rel in existing_files(out_dir)? {
        if !output.files.contains_key(&rel) {
            found.push(Stale {
                path: rel,
                kind: StaleKind::Extra,
            });
        }
    }
    found.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
}

fn diff(rel: &str, old: &str, new: &str) -> String {
    const MAX_LINES: usize = 40;
    let text = similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(2)
        .header(&format!("{rel} (on disk)"), &format!("{rel} (generated)"))
        .to_string();
    let lines: Vec<&str> = text.lines().collect();
    if lines.len() <= MAX_LINES {
        return text;
    }
    format!(
        "{}\n… {} more diff lines\n",
        lines[..MAX_LINES].join("\n"),
        lines.len() - MAX_LINES
    )
}

/// True when `dir` holds a crate this generator wrote (its `Cargo.toml` starts with the
/// generated header).
pub fn is_generated_crate(dir: &Path) -> bool {
    fs::read_to_string(dir.join("Cargo.toml")).is_ok_and(|text| {
        text.lines()
            .next()
            .is_some_and(|l| l.contains("@generated by cargo xtask codegen"))
    })
}

/// Relative paths (forward slashes, sorted) of the files under `dir`, skipping the build
/// output a crate may hold at its top (`target/`, `Cargo.lock`; deeper, such names are
/// files like any other); a missing `dir` has none. A symbolic link is listed as itself,
/// never followed: pruning removes the link, not what it points to.
pub fn existing_files(dir: &Path) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = vec![dir.to_owned()];
    while let Some(current) = stack.pop() {
        let entries = match fs::read_dir(&current) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(source) => {
                return Err(Error::Read {
                    path: current,
                    source,
                });
            }
        };
        for entry in entries {
            let entry = entry.map_err(|source| Error::Read {
                path: current.clone(),
                source,
            })?;
            let path = entry.path();
            let name = entry.file_name();
            if current == dir && (name == "target" || name == "Cargo.lock") {
                continue;
            }
            let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
            if is_dir {
                stack.push(path);
            } else if let Ok(rel) = path.strip_prefix(dir) {
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run killed between renames must not leave a crate that claims the new corpus:
    /// the corpus hash is renamed into place after every other file, and a rerun writes
    /// what is missing and removes a leftover staged file.
    #[test]
    fn the_corpus_hash_is_renamed_last_and_a_rerun_cleans_up() {
        let mut rels = ["src/corpus.rs", "Cargo.toml", "src/models.rs", "README.md"];
        rels.sort_by_key(|rel| renamed_last(rel));
        assert_eq!(rels.last(), Some(&"src/corpus.rs"));

        let dir = std::env::temp_dir().join(format!("openwop-fresh-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let mut output = Output::default();
        output.files.insert(
            "Cargo.toml".to_owned(),
            "# @generated by cargo xtask codegen\n".to_owned(),
        );
        output
            .files
            .insert(CORPUS_FILE.to_owned(), "// new corpus\n".to_owned());
        write(&dir, &output).expect("first write");
        // What a kill after staging leaves: a staged file beside its place, the old text in it.
        fs::write(dir.join("src/.corpus.rs.codegen-tmp"), "// newer\n").unwrap();
        fs::write(dir.join(CORPUS_FILE), "// old corpus\n").unwrap();
        let found = stale(&dir, &output).expect("stale");
        let paths: Vec<&str> = found.iter().map(|s| s.path.as_str()).collect();
        assert_eq!(paths, ["src/.corpus.rs.codegen-tmp", CORPUS_FILE]);
        write(&dir, &output).expect("rerun");
        assert!(stale(&dir, &output).expect("stale").is_empty());
        let _ = fs::remove_dir_all(&dir);
    }
}
