//! Which generator sources this binary was built from, and whether they are the checkout's.
//!
//! With a `CARGO_TARGET_DIR` shared by two checkouts, cargo hashes path packages relative
//! to their workspace, so both checkouts' builds of `xtask` and `openwop-codegen` land on
//! the same artifacts, and freshness is judged by modification times: a binary built from
//! checkout A is reused in checkout B whenever B's sources are no newer. Its paths are
//! found at run time (`workspace`), but its *code* would still be A's, writing B's
//! `generated/` as A's generator does. So the build embeds a digest of the generator's
//! sources (`build.rs` includes this file), and every task first compares it with the same
//! digest of the checkout it works in.
//!
//! Shared by `build.rs` (through `#[path]`) and the binary; it needs only `sha2` and `hex`.

use std::fs;
use std::io;
use std::path::Path;

use sha2::{Digest, Sha256};

/// What the binary's code is made of, relative to the checkout: the generator library and
/// this task runner, with their manifests. (The templates and the corpus are read at run
/// time from the checkout, so they are not part of it.)
pub const SOURCES: [&str; 5] = [
    "codegen/src",
    "codegen/Cargo.toml",
    "xtask/src",
    "xtask/Cargo.toml",
    "xtask/build.rs",
];

/// SHA-256 over every file under [`SOURCES`] in `root`: each relative path (with `/`) and
/// content, in path order. A missing entry adds nothing, so a checkout without the
/// generator's sources differs from any build.
pub fn digest(root: &Path) -> io::Result<String> {
    let mut files = Vec::new();
    for source in SOURCES {
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
