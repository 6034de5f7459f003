//! Which checkout a task works on, found at run time.
//!
//! The xtask binary may have been built in another checkout: with a shared
//! `CARGO_TARGET_DIR`, cargo reuses a binary built in checkout A when checkout B's sources
//! are no newer, and a compile-time `env!("CARGO_MANIFEST_DIR")` then names A (a
//! `cargo xtask codegen` in B once read A's corpus and would have rewritten A's
//! `generated/`). So the checkout is the one holding the working directory: the nearest
//! directory, walking up, with a workspace `Cargo.toml` beside `spec/`, `schemas/` and
//! `api/`. `cargo xtask` is `cargo run`, which keeps the caller's working directory.
//! Nothing is taken from the environment either: a `CARGO_MANIFEST_DIR` inherited from
//! a parent cargo process can name yet another checkout.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

/// The corpus directories a checkout holds (the layout `openwop-codegen` reads).
pub(crate) const CORPUS_DIRS: [&str; 3] = ["spec", "schemas", "api"];

/// The checkout holding `start`: `start` or its nearest ancestor that is one.
pub(crate) fn find_from(start: &Path) -> anyhow::Result<PathBuf> {
    for dir in start.ancestors() {
        if is_checkout(dir) {
            return Ok(dir.to_owned());
        }
    }
    bail!(
        "{} is not inside an OpenWOP checkout (no directory above it holds a workspace \
         Cargo.toml beside spec/, schemas/ and api/); run the task from inside one, \
         for example `cd path/to/checkout && cargo xtask codegen`",
        start.display()
    )
}

/// The checkout holding the working directory.
pub(crate) fn current() -> anyhow::Result<PathBuf> {
    let cwd = std::env::current_dir().context("reading the working directory")?;
    find_from(&cwd)
}

fn is_checkout(dir: &Path) -> bool {
    let is_workspace = fs::read_to_string(dir.join("Cargo.toml"))
        .is_ok_and(|text| text.lines().any(|l| l.trim() == "[workspace]"));
    is_workspace && CORPUS_DIRS.iter().all(|d| dir.join(d).is_dir())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("openwop-xtask-ws-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap_or_default();
        dir
    }

    fn checkout(dir: &Path) {
        for d in CORPUS_DIRS {
            fs::create_dir_all(dir.join(d)).unwrap_or_default();
        }
        fs::write(dir.join("Cargo.toml"), "[workspace]\nmembers = []\n").unwrap_or_default();
    }

    #[test]
    fn the_nearest_checkout_above_the_start_wins() {
        let outer = scratch("nested");
        checkout(&outer);
        let inner = outer.join("vendor/other");
        checkout(&inner);
        let deep = inner.join("spec/v2");
        fs::create_dir_all(&deep).unwrap_or_default();
        assert_eq!(find_from(&deep).ok(), Some(inner.clone()));
        assert_eq!(find_from(&outer.join("vendor")).ok(), Some(outer.clone()));
        let _ = fs::remove_dir_all(&outer);
    }

    #[test]
    fn a_member_manifest_or_a_missing_corpus_dir_is_not_a_checkout() {
        let dir = scratch("member");
        for d in ["spec", "schemas"] {
            fs::create_dir_all(dir.join(d)).unwrap_or_default();
        }
        fs::write(dir.join("Cargo.toml"), "[workspace]\n").unwrap_or_default();
        assert!(!is_checkout(&dir), "no api/");
        fs::create_dir_all(dir.join("api")).unwrap_or_default();
        fs::write(dir.join("Cargo.toml"), "[package]\nname = \"x\"\n").unwrap_or_default();
        assert!(!is_checkout(&dir), "a package manifest, not a workspace");
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn outside_any_checkout_the_error_says_what_to_do() {
        let err = match find_from(Path::new("/")) {
            Ok(found) => panic!("/ is no checkout, found {}", found.display()),
            Err(e) => e.to_string(),
        };
        assert!(err.contains("not inside an OpenWOP checkout"), "{err}");
        assert!(err.contains("cargo xtask codegen"), "{err}");
    }
}

/// Where one run reads and writes; all found at run time (see [`find_from`]).
#[derive(Debug, Clone)]
pub(crate) struct Paths {
    /// The corpus root (holds `spec/`, `schemas/`, `api/`).
    pub spec_root: PathBuf,
    /// The generated crate's directory.
    pub out: PathBuf,
    /// The generator's hand-written templates: the checkout's `codegen/templates/`.
    pub templates: PathBuf,
    /// The checkout the run works in: its `Cargo.lock` pins the API diff's rustdoc builds.
    pub workspace: PathBuf,
    /// The target directory for those builds: `CARGO_TARGET_DIR` when set, else the
    /// checkout's `target/` (see [`target_dir`]).
    pub target: PathBuf,
}

/// The target directory cargo uses in `workspace`.
pub(crate) fn target_dir(workspace: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| workspace.join("target"), PathBuf::from)
}
