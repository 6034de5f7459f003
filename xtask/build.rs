//! Embeds the digest of the generator's sources (`src/source_hash.rs` says why).

#[path = "src/source_hash.rs"]
mod source_hash;

use std::path::Path;

fn main() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let root = Path::new(&manifest)
        .parent()
        .expect("xtask/ sits in the checkout");
    for source in source_hash::SOURCES {
        println!("cargo:rerun-if-changed=../{source}");
    }
    let digest = source_hash::digest(root).expect("reading the generator's sources");
    println!("cargo:rustc-env=OPENWOP_XTASK_SOURCES={digest}");
}
