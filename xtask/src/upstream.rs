//! `cargo xtask upstream-check`: upstream's corpus must generate unchanged and the crate it
//! gives must compile with every target and feature, pass its doctests and document
//! without warnings (what a user of that crate runs; `cargo check` of the library alone
//! passed while its tests, README doctests and docs failed). Dependencies come from the workspace's lock file and target dir, so
//! nothing is rebuilt that the workspace already built.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};

use crate::api_diff::Policy;
use crate::codegen::{Mode, run as codegen};
use crate::workspace::{Paths, target_dir};
use openwop_codegen::HandEdits;

/// One cargo command of the check: what it is called, its arguments, an environment
/// variable it sets.
type Step = (
    &'static str,
    &'static [&'static str],
    Option<(&'static str, &'static str)>,
);

/// Runs the check in `root`, the checkout holding the working directory (as for
/// `codegen`): its templates, lock file and target dir, never those of the checkout the
/// binary was built in.
pub(crate) fn run(root: &Path, spec_root: Option<PathBuf>) -> anyhow::Result<()> {
    let started = Instant::now();
    eprintln!(
        "upstream-check: checkout {} (found from the working directory)",
        root.display()
    );
    let spec_root = spec_root.unwrap_or_else(|| root.join("../shared/upstream/openwop"));
    if !spec_root.join("spec/v2/errors.json").is_file() {
        bail!(
            "no upstream corpus at {} (pass --spec-root)",
            spec_root.display()
        );
    }
    let out = root.join("target/upstream-generated");
    let paths = Paths {
        spec_root,
        out: out.clone(),
        templates: root.join("codegen/templates"),
        workspace: root.to_owned(),
        target: target_dir(root),
    };
    // A scratch crate nobody depends on: no API diff.
    codegen(&paths, Mode::Write(HandEdits::Discard), false, Policy::Off)?;

    // The output sits under the workspace directory; its own empty [workspace] table keeps
    // cargo from treating it as an unlisted member of ours.
    let manifest = out.join("Cargo.toml");
    let mut text =
        fs::read_to_string(&manifest).with_context(|| format!("reading {}", manifest.display()))?;
    text.push_str("\n[workspace]\n");
    fs::write(&manifest, text).with_context(|| format!("writing {}", manifest.display()))?;
    fs::copy(root.join("Cargo.lock"), out.join("Cargo.lock")).context("copying Cargo.lock")?;

    // What a user of the crate builds: every target (tests, the example) with every
    // feature, the doctests (the README is the crate's documentation), and the docs with
    // warnings denied (corpus descriptions go into them). One target dir: the steps reuse
    // each other's dependency builds, and CI's runs reuse them all.
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let steps: [Step; 3] = [
        (
            "cargo check --all-targets --all-features",
            &["check", "--all-targets", "--all-features"],
            None,
        ),
        (
            "cargo test --doc --all-features",
            &["test", "--doc", "--all-features"],
            None,
        ),
        (
            "cargo doc --no-deps --all-features (RUSTDOCFLAGS=-D warnings)",
            &["doc", "--no-deps", "--all-features"],
            Some(("RUSTDOCFLAGS", "-D warnings")),
        ),
    ];
    let mut failed = Vec::new();
    for (what, args, env) in steps {
        let step = Instant::now();
        eprintln!("upstream-check: {what}");
        let mut command = Command::new(&cargo);
        command
            .args(args)
            .arg("--manifest-path")
            .arg(&manifest)
            // Keep a target dir CI chose; otherwise share the workspace's.
            .env("CARGO_TARGET_DIR", &paths.target);
        if let Some((key, value)) = env {
            command.env(key, value);
        }
        let status = command
            .status()
            .with_context(|| format!("running {what}"))?;
        eprintln!("upstream-check: {what}: {:.1?}", step.elapsed());
        if !status.success() {
            failed.push(what);
        }
    }
    eprintln!("upstream-check: {:.1?} in total", started.elapsed());
    if !failed.is_empty() {
        bail!(
            "the crate generated from upstream's corpus ({}) fails: {}",
            out.display(),
            failed.join("; ")
        );
    }
    Ok(())
}
