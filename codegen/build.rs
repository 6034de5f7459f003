//! Embeds the digest of this library's sources (`src/source_digest.rs` says why).

#[path = "src/source_digest.rs"]
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
        .expect("codegen/ sits in the checkout");
    for source in source_digest::CODEGEN {
        println!("cargo:rerun-if-changed=../{source}");
    }
    let digest = source_digest::digest(root, &source_digest::CODEGEN)
        .expect("reading the library's sources");
    println!("cargo:rustc-env=OPENWOP_CODEGEN_SOURCES={digest}");
}
