//! Embeds the digest of this library's sources (`src/source_digest.rs` says why).

#[path = "src/source_digest.rs"]
#[allow(
    dead_code,
    reason = "the file lists both crates' sources; each build script hashes its own"
)]
mod source_digest;

fn main() {
    let manifest = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    source_digest::emit(
        &manifest,
        &source_digest::CODEGEN,
        "OPENWOP_CODEGEN_SOURCES",
    );
}
