//! Embeds the digest of the task runner's sources (`codegen/src/source_digest.rs` says
//! why).

#[path = "../codegen/src/source_digest.rs"]
#[allow(
    dead_code,
    reason = "the file lists both crates' sources; each build script hashes its own"
)]
mod source_digest;

use std::path::Path;

fn main() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let root = Path::new(&manifest)
        .parent()
        .expect("xtask/ sits in the checkout");
    for source in source_digest::XTASK {
        println!("cargo:rerun-if-changed=../{source}");
    }
    let digest = source_digest::digest(root, &source_digest::XTASK)
        .expect("reading the task runner's sources");
    println!("cargo:rustc-env=OPENWOP_XTASK_SOURCES={digest}");
}
