//! Which sources a build of the generator was made from, and whether they are a checkout's.
//!
//! With a `CARGO_TARGET_DIR` shared by two checkouts, cargo hashes path packages relative
//! to their workspace, so both checkouts' builds of `xtask` and `openwop-codegen` land on
//! the same artifacts, and freshness is judged by modification times: an artifact built
//! from checkout A is reused in checkout B whenever B's sources are no newer. `cargo xtask`
//! finds its paths at run time, but its *code* would still be A's, writing B's
//! `generated/` as A's generator does. So each crate's build embeds a digest of its own
//! sources (its `build.rs` includes this file): `openwop-codegen` as [`crate::BUILT_FROM`],
//! the xtask binary as its own; and every task first compares both with the same digests
//! of the checkout it works in. One digest per crate, each carried by that crate's
//! artifact: the library is reused or rebuilt on its own, so a digest of the library's
//! sources taken when the binary was built says nothing of the library it links (a binary
//! rebuilt in B linked A's reused library, and passed).
//!
//! Shared by both build scripts (through `#[path]`) and the library; it needs only `sha2`
//! and `hex`.

use std::fs;
use std::io;
use std::path::Path;

use sha2::{Digest, Sha256};

/// What the generator library's code is made of, relative to the checkout. (The templates
/// and the corpus are read at run time from the checkout, so they are not part of it.)
pub const CODEGEN: [&str; 3] = ["codegen/src", "codegen/Cargo.toml", "codegen/build.rs"];

/// What the task runner's code is made of, relative to the checkout.
pub const XTASK: [&str; 3] = ["xtask/src", "xtask/Cargo.toml", "xtask/build.rs"];

/// SHA-256 over every file under `sources` in `root`: each relative path (with `/`) and
/// content, in path order. A missing entry adds nothing, so a checkout without the
/// generator's sources differs from any build.
pub fn digest(root: &Path, sources: &[&str]) -> io::Result<String> {
    let mut files = Vec::new();
    for source in sources {
        collect(root, &root.join(source), &mut files)?;
    }
    files.sort();
    let mut hash = Sha256::new();
    for rel in files {
        let bytes = fs::read(root.join(&rel))?;
        hash.update(rel.as_bytes());
        hash.update([0]);
        hash.update((bytes.len() as u64).to_le_bytes());
        hash.update(&bytes);
    }
    Ok(hex::encode(hash.finalize()))
}

/// What a build script of the crate at `manifest_dir` (its `CARGO_MANIFEST_DIR`) prints:
/// a rerun whenever one of `sources` changes, and their digest as the compile-time
/// variable `var`. Both build scripts are this call.
pub fn emit(manifest_dir: &str, sources: &[&str], var: &str) {
    let root = Path::new(manifest_dir)
        .parent()
        .expect("the crate sits in the checkout");
    for source in sources {
        println!("cargo:rerun-if-changed=../{source}");
    }
    let digest = digest(root, sources).expect("reading the crate's sources");
    println!("cargo:rustc-env={var}={digest}");
}

fn collect(root: &Path, path: &Path, out: &mut Vec<String>) -> io::Result<()> {
    let Ok(meta) = fs::symlink_metadata(path) else {
        return Ok(());
    };
    if meta.is_dir() {
        for entry in fs::read_dir(path)? {
            collect(root, &entry?.path(), out)?;
        }
    } else if meta.is_file() {
        let rel = path.strip_prefix(root).unwrap_or(path);
        out.push(rel.to_string_lossy().replace('\\', "/"));
    }
    Ok(())
}
