//! Helpers shared by the generator's integration tests.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use openwop_codegen::{Config, Output, generate_with};

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

/// A scratch directory, removed with everything in it when dropped (a test that fails
/// leaves nothing behind either: unwinding drops it), so test runs do not pile corpora up
/// in the machine's temp dir.
pub struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// A fresh empty directory under the system temp dir, unique per test.
pub fn scratch(name: &str) -> Scratch {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "openwop-codegen-{}-{}-{name}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).expect("create scratch dir");
    Scratch(dir)
}

/// Copies the mini corpus so a test can edit it.
pub fn mini_copy(name: &str) -> Scratch {
    let dst = scratch(name);
    copy_dir(&fixtures().join("mini"), &dst);
    dst
}

/// Copies this checkout's own corpus (`spec/`, `schemas/`, `api/`, and the vectors the rule
/// catalogue names) so a test can edit it.
pub fn corpus_copy(name: &str) -> Scratch {
    let dst = scratch(name);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    // `tests/vectors/`: the rule catalogue's examples are paths there.
    for part in ["spec", "schemas", "api", "tests/vectors"] {
        fs::create_dir_all(dst.join(part)).expect("create dir");
        copy_dir(&root.join(part), &dst.join(part));
    }
    dst
}

/// The generator's real templates (`codegen/templates/`) on a corpus.
pub fn real_config(spec_root: &Path) -> Config {
    Config {
        spec_root: spec_root.to_owned(),
        templates_dir: Path::new(env!("CARGO_MANIFEST_DIR")).join("templates"),
    }
}

fn copy_dir(src: &Path, dst: &Path) {
    for entry in fs::read_dir(src).expect("read fixture dir") {
        let entry = entry.expect("fixture entry");
        let target = dst.join(entry.file_name());
        if entry.path().is_dir() {
            fs::create_dir_all(&target).expect("create dir");
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target).expect("copy fixture file");
        }
    }
}

pub fn config(spec_root: &Path) -> Config {
    Config {
        spec_root: spec_root.to_owned(),
        templates_dir: fixtures().join("mini-templates"),
    }
}

pub fn gen_mini(spec_root: &Path) -> openwop_codegen::Result<Output> {
    generate_with(&config(spec_root), &mut |_| {})
}

/// Edits a JSON file of a copied corpus in place.
pub fn edit_json(path: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let text = fs::read_to_string(path).expect("read json");
    let mut value: serde_json::Value = serde_json::from_str(&text).expect("parse json");
    edit(&mut value);
    fs::write(
        path,
        serde_json::to_string_pretty(&value).expect("print json"),
    )
    .expect("write json");
}
