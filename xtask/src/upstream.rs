//! `cargo xtask upstream-check`: upstream's corpus must generate unchanged and the crate it
//! gives must compile. Dependencies come from the workspace's lock file and target dir, so
//! nothing is rebuilt that the workspace already built.

use std::fs;
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};

use crate::codegen::{Mode, run as codegen, workspace_root};

pub(crate) fn run(spec_root: Option<PathBuf>) -> anyhow::Result<()> {
    let started = Instant::now();
    let root = workspace_root();
    let spec_root = spec_root.unwrap_or_else(|| root.join("../shared/upstream/openwop"));
    if !spec_root.join("spec/v2/errors.json").is_file() {
        bail!(
            "no upstream corpus at {} (pass --spec-root)",
            spec_root.display()
        );
    }
    let out = root.join("target/upstream-generated");
    codegen(&spec_root, &out, Mode::Write, false)?;

    // The output sits under the workspace directory; its own empty [workspace] table keeps
    // cargo from treating it as an unlisted member of ours.
    let manifest = out.join("Cargo.toml");
    let mut text =
        fs::read_to_string(&manifest).with_context(|| format!("reading {}", manifest.display()))?;
    text.push_str("\n[workspace]\n");
    fs::write(&manifest, text).with_context(|| format!("writing {}", manifest.display()))?;
    fs::copy(root.join("Cargo.lock"), out.join("Cargo.lock")).context("copying Cargo.lock")?;

    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let status = Command::new(cargo)
        .arg("check")
        .arg("--manifest-path")
        .arg(&manifest)
        // Keep a target dir CI chose; otherwise share the workspace's.
        .env(
            "CARGO_TARGET_DIR",
            std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root.join("target"), PathBuf::from),
        )
        .status()
        .context("running cargo check")?;
    eprintln!("upstream-check: {:.1?} in total", started.elapsed());
    if !status.success() {
        bail!("the crate generated from upstream's corpus does not compile");
    }
    Ok(())
}
