//! What a regeneration changed in the generated crate's public API, and whether that breaks
//! its users.
//!
//! The listing is cargo-public-api's (`cargo public-api diff old.json new.json`), not ours:
//! it is the maintained tool that names every public item, including each field, variant,
//! method and trait impl. Its rustdoc JSON is built here, on the stable toolchain, with
//! rustdoc's `--output-format json` unlocked for the generated crate alone through
//! `RUSTC_BOOTSTRAP=<crate>` (cargo-public-api itself would ask for a nightly toolchain,
//! which this machine does not have). The baseline is the crate as it was before this run
//! wrote anything; the new tree's JSON is kept under the target directory by a hash of its
//! files, so the next regeneration documents only its own new tree.
//!
//! Breaking means a removed or a changed item (cargo-public-api's `--deny=removed` and
//! `--deny=changed`), or an addition that breaks users all the same: a new field of an
//! existing struct that is not `#[non_exhaustive]` (the generated models are such structs,
//! with public fields, so a new optional schema property breaks every struct literal of the
//! model) or a new variant of such an enum. That last rule reads the tool's own listing of
//! the new crate, which marks `#[non_exhaustive]`; it errs towards "breaking" for a struct
//! with private fields, which no struct literal outside the crate can build anyway.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};
use sha2::{Digest, Sha256};

use crate::workspace::Paths;

/// The version `.ci/run` and the docs install; its rustdoc JSON reader must match the
/// toolchain's format (0.52 reads format 57, the format of Rust 1.95).
pub(crate) const TOOL_VERSION: &str = "0.52.0";

/// Whether and how `cargo xtask codegen` reports the API diff.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Policy {
    /// Report it when cargo-public-api is installed; otherwise say how to install it.
    Auto,
    /// Fail when it cannot be reported (the tool is missing, a tree does not document).
    Require,
    /// Do not report it.
    Off,
}

/// The API diff of one regeneration.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ApiDiff {
    pub removed: Vec<String>,
    /// `(old, new)` renderings of one item.
    pub changed: Vec<(String, String)>,
    pub added: Vec<String>,
    /// Added items that break some users all the same: a new field of a struct that
    /// existed and is not `#[non_exhaustive]` (a struct literal of it stops compiling when
    /// its fields are all public, as the generated models' are), a new variant of such an
    /// enum (an exhaustive `match` stops compiling).
    pub additions_that_break: Vec<String>,
}

impl ApiDiff {
    /// A removed or changed item breaks code written against the old crate.
    pub(crate) fn is_breaking(&self) -> bool {
        !self.removed.is_empty()
            || !self.changed.is_empty()
            || !self.additions_that_break.is_empty()
    }

    /// Sorts out [`Self::additions_that_break`] with the new crate's item list (cargo
    /// public-api's plain listing, which prefixes `#[non_exhaustive]` where it applies).
    pub(crate) fn classify_additions(&mut self, new_api: &str) {
        // `struct path` / `enum path` → non_exhaustive, for every type of the new crate.
        let mut types = std::collections::BTreeMap::new();
        for line in new_api.lines() {
            let (non_exhaustive, rest) = match line.strip_prefix("#[non_exhaustive] ") {
                Some(rest) => (true, rest),
                None => (false, line),
            };
            for kind in ["pub struct ", "pub enum "] {
                if let Some(path) = rest.strip_prefix(kind) {
                    let path = path.split(['<', ' ', '(']).next().unwrap_or(path);
                    types.insert(path.to_owned(), non_exhaustive);
                }
            }
        }
        let added_types: std::collections::BTreeSet<&str> = self
            .added
            .iter()
            .filter_map(|i| {
                let i = i.strip_prefix("#[non_exhaustive] ").unwrap_or(i);
                i.strip_prefix("pub struct ")
                    .or_else(|| i.strip_prefix("pub enum "))
            })
            .map(|p| p.split(['<', ' ', '(']).next().unwrap_or(p))
            .collect();
        let mut breaking = Vec::new();
        for item in &self.added {
            // A field is `pub path::Type::field: Ty`; a variant `pub path::Enum::Variant`,
            // maybe followed by `(…)` or ` { … }`. Every other item starts with a keyword.
            let Some(rest) = item.strip_prefix("pub ") else {
                continue;
            };
            let end = [
                rest.find(": "),
                rest.find('('),
                rest.find(' '),
                rest.find('<'),
            ]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(rest.len());
            let path = &rest[..end];
            if !path.contains("::") {
                continue;
            }
            let Some((parent, _)) = path.rsplit_once("::") else {
                continue;
            };
            if types.get(parent) == Some(&false) && !added_types.contains(parent) {
                breaking.push(item.clone());
            }
        }
        self.additions_that_break = breaking;
    }

    fn is_empty(&self) -> bool {
        self.removed.is_empty() && self.changed.is_empty() && self.added.is_empty()
    }

    /// Reads cargo-public-api's plain `diff` output: three titled sections (removed,
    /// changed, added), each `(none)` or lines `-item` / `+item` (a changed item is a `-old`
    /// line then a `+new` line).
    pub(crate) fn parse(text: &str) -> anyhow::Result<Self> {
        #[derive(Clone, Copy)]
        enum Section {
            None,
            Removed,
            Changed,
            Added,
        }
        let mut diff = Self::default();
        let mut section = Section::None;
        let mut seen = 0;
        let mut pending_old: Option<String> = None;
        for line in text.lines() {
            if line.starts_with("Removed items from the public API") {
                (section, seen) = (Section::Removed, seen + 1);
                continue;
            }
            if line.starts_with("Changed items in the public API") {
                (section, seen) = (Section::Changed, seen + 1);
                continue;
            }
            if line.starts_with("Added items to the public API") {
                (section, seen) = (Section::Added, seen + 1);
                continue;
            }
            match (section, line.chars().next()) {
                (Section::Removed, Some('-')) => diff.removed.push(line[1..].to_owned()),
                (Section::Added, Some('+')) => diff.added.push(line[1..].to_owned()),
                (Section::Changed, Some('-')) => pending_old = Some(line[1..].to_owned()),
                (Section::Changed, Some('+')) => {
                    let old = pending_old.take().unwrap_or_default();
                    diff.changed.push((old, line[1..].to_owned()));
                }
                _ => {}
            }
        }
        if seen != 3 {
            bail!("cargo public-api diff printed {seen} of its 3 sections:\n{text}");
        }
        Ok(diff)
    }

    /// The report a spec editor reads: a verdict line, then the items (at most `limit` per
    /// section, with the count of the rest).
    pub(crate) fn render(&self, limit: usize) -> String {
        let mut out = String::new();
        if self.is_empty() {
            out.push_str("API diff: the public API is unchanged\n");
            return out;
        }
        let verdict = if self.is_breaking() {
            "BREAKING: code written against the old crate may not compile (unless the \
             unreleased version in codegen/src/emit/cargo_toml.rs is already a major bump, \
             raise it, and say what to change in codegen/templates/crate/CHANGELOG.md)"
        } else {
            "not breaking: nothing removed or changed (a minor bump in \
             codegen/src/emit/cargo_toml.rs, and an entry in \
             codegen/templates/crate/CHANGELOG.md)"
        };
        out.push_str(&format!(
            "API diff: {} removed, {} changed, {} added; {verdict}\n",
            self.removed.len(),
            self.changed.len(),
            self.added.len()
        ));
        let mut section = |title: &str, lines: Vec<String>| {
            if lines.is_empty() {
                return;
            }
            out.push_str(&format!("  {title}:\n"));
            for line in lines.iter().take(limit) {
                out.push_str(&format!("    {line}\n"));
            }
            if lines.len() > limit {
                out.push_str(&format!("    … {} more\n", lines.len() - limit));
            }
        };
        section(
            "removed (breaking)",
            self.removed.iter().map(|i| format!("- {i}")).collect(),
        );
        section(
            "changed (breaking)",
            self.changed
                .iter()
                .map(|(old, new)| format!("- {old}\n    + {new}"))
                .collect(),
        );
        section(
            "added to an exhaustive struct or enum (breaking: struct literals, exhaustive matches)",
            self.additions_that_break
                .iter()
                .map(|i| format!("+ {i}"))
                .collect(),
        );
        // The impls of a type that is itself new (auto traits, derives: a dozen a type)
        // are counted, not listed: the type's own line says it is there.
        let new_types = added_type_paths(&self.added);
        let mut impls_of_new_types = 0;
        let mut added: Vec<String> = self
            .added
            .iter()
            .filter(|i| !self.additions_that_break.contains(i))
            .filter(|i| {
                let of_new = impl_target(i).is_some_and(|t| new_types.contains(t));
                impls_of_new_types += usize::from(of_new);
                !of_new
            })
            .map(|i| format!("+ {i}"))
            .collect();
        if impls_of_new_types > 0 {
            added.push(format!(
                "({impls_of_new_types} impls of the types added above, not listed)"
            ));
        }
        section("added", added);
        out
    }
}

/// The paths of the structs and enums among `added` lines (`pub struct a::B`).
fn added_type_paths(added: &[String]) -> std::collections::BTreeSet<&str> {
    added
        .iter()
        .filter_map(|line| {
            let line = line.strip_prefix("#[non_exhaustive] ").unwrap_or(line);
            ["pub struct ", "pub enum "]
                .iter()
                .find_map(|kind| line.strip_prefix(kind))
        })
        .map(|path| path.split(['<', ' ', '(']).next().unwrap_or(path))
        .collect()
}

/// The type an `impl … for T` line is for (`T` without its generics); `None` for any
/// other line.
fn impl_target(line: &str) -> Option<&str> {
    if !line.starts_with("impl") {
        return None;
    }
    let target = line.rsplit_once(" for ")?.1;
    Some(target.split(['<', ' ']).next().unwrap_or(target))
}

/// Before anything is written: a copy of the crate as it is, the diff's baseline. `None`
/// when the diff is off or the output directory holds no generated crate yet.
pub(crate) fn snapshot(paths: &Paths, policy: Policy) -> anyhow::Result<Option<PathBuf>> {
    // Without the tool there is no diff to take, and nothing is copied (nor the scratch
    // directory made under the target dir).
    if policy == Policy::Off
        || !openwop_codegen::is_generated_crate(&paths.out)
        || !tool_installed()
    {
        return Ok(None);
    }
    let dir = scratch(paths).join(format!("before-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    copy_tree(&paths.out, &dir)?;
    Ok(Some(dir))
}

/// After writing: prints the diff between the snapshot and the written crate.
pub(crate) fn report(
    paths: &Paths,
    policy: Policy,
    before: Option<&PathBuf>,
    touched: &[String],
) -> anyhow::Result<()> {
    let result = report_inner(paths, policy, before, touched);
    if let Some(dir) = before {
        let _ = fs::remove_dir_all(dir);
    }
    match result {
        Err(e) if policy == Policy::Auto => {
            eprintln!("codegen: API diff not reported: {e:#}");
            Ok(())
        }
        other => other,
    }
}

fn report_inner(
    paths: &Paths,
    policy: Policy,
    before: Option<&PathBuf>,
    touched: &[String],
) -> anyhow::Result<()> {
    if policy == Policy::Off {
        return Ok(());
    }
    if touched.is_empty() {
        eprintln!(
            "codegen: API diff: no file changed in this run, so neither did the public API \
             (the baseline is the crate on disk before this run, not the last commit)"
        );
        return Ok(());
    }
    if !tool_installed() {
        let hint = format!(
            "cargo-public-api is not installed, so the API diff is skipped (a rerun compares \
             with what this run wrote, so to see this change's diff later, `git checkout \
             generated/` and rerun with the tool); \
             install it with `cargo install --locked cargo-public-api@{TOOL_VERSION}` (a few \
             minutes, once), or pass --api-diff=off"
        );
        if policy == Policy::Require {
            bail!("{hint}");
        }
        // Said so it is seen after the list of written files, not as one more line of it.
        eprintln!("codegen:");
        eprintln!("codegen: NOTE: no API diff for this change. {hint}");
        eprintln!("codegen:");
        return Ok(());
    }
    let Some(before) = before else {
        eprintln!(
            "codegen: API diff: {} held no generated crate before this run; nothing to compare",
            paths.out.display()
        );
        return Ok(());
    };
    let old = rustdoc_json(paths, before, "the crate before this run")?;
    let new = rustdoc_json(paths, &paths.out, "the regenerated crate")?;
    let diff = diff_json(&old, &new)?;
    prune_cache(&new);
    for line in diff.render(40).lines() {
        eprintln!("codegen: {line}");
    }
    Ok(())
}

/// `cargo public-api diff old.json new.json`, parsed.
pub(crate) fn diff_json(old: &Path, new: &Path) -> anyhow::Result<ApiDiff> {
    let output = Command::new(cargo())
        // `-s`: no blanket impls (`impl<T> From<T> for …`), which follow from the types.
        .args(["public-api", "--color=never", "-s", "diff"])
        .arg(old)
        .arg(new)
        .output()
        .context("running cargo public-api")?;
    if !output.status.success() {
        bail!(
            "cargo public-api diff failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let mut diff = ApiDiff::parse(&String::from_utf8_lossy(&output.stdout))?;
    if !diff.added.is_empty() {
        diff.classify_additions(&public_api(new)?);
    }
    Ok(diff)
}

/// cargo public-api's plain listing of the crate a rustdoc JSON file describes.
fn public_api(json: &Path) -> anyhow::Result<String> {
    let output = Command::new(cargo())
        .args(["public-api", "--color=never", "-s", "--rustdoc-json"])
        .arg(json)
        .output()
        .context("running cargo public-api")?;
    if !output.status.success() {
        bail!(
            "cargo public-api failed: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// Whether `cargo public-api` runs.
/// With `--api-diff=require`, that the tool is there, checked before anything is written.
pub(crate) fn require_tool(policy: Policy) -> anyhow::Result<()> {
    if policy == Policy::Require && !tool_installed() {
        anyhow::bail!(
            "--api-diff=require: cargo-public-api is not installed, so nothing was written; \
             install it with `cargo install --locked cargo-public-api@{TOOL_VERSION}` (a few \
             minutes, once), or pass --api-diff=auto or --api-diff=off"
        );
    }
    Ok(())
}

pub(crate) fn tool_installed() -> bool {
    Command::new(cargo())
        .args(["public-api", "--version"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The rustdoc JSON of the crate in `tree`, from the cache when that exact tree was
/// documented before.
pub(crate) fn rustdoc_json(paths: &Paths, tree: &Path, label: &str) -> anyhow::Result<PathBuf> {
    let scratch = scratch(paths);
    let cached = scratch
        .join("json")
        .join(format!("{}.json", tree_hash(tree)?));
    if cached.is_file() {
        return Ok(cached);
    }
    let started = Instant::now();
    // A standalone copy: its own empty [workspace] table keeps cargo from treating it as a
    // member of ours, and the checkout's lock file pins the same dependency versions, so
    // the dependencies built once (for upstream-check, or an earlier diff) are reused.
    let work = scratch.join(format!("crate-{}", std::process::id()));
    let _ = fs::remove_dir_all(&work);
    copy_tree(tree, &work)?;
    let manifest = work.join("Cargo.toml");
    let mut text =
        fs::read_to_string(&manifest).with_context(|| format!("reading {}", manifest.display()))?;
    let name = package_name(&text).context("the generated Cargo.toml names no package")?;
    text.push_str("\n[workspace]\n");
    fs::write(&manifest, text).with_context(|| format!("writing {}", manifest.display()))?;
    let lock = paths.workspace.join("Cargo.lock");
    if lock.is_file() {
        fs::copy(&lock, work.join("Cargo.lock")).context("copying Cargo.lock")?;
    }
    let krate = name.replace('-', "_");
    let target = &paths.target;
    let output = Command::new(cargo())
        .args(["rustdoc", "--lib", "--quiet", "--manifest-path"])
        .arg(&manifest)
        .args(["--", "-Z", "unstable-options", "--output-format", "json"])
        .env("CARGO_TARGET_DIR", target)
        // Unstable rustdoc options for this one crate; its dependencies build as usual
        // (their build scripts would otherwise probe for nightly features).
        .env("RUSTC_BOOTSTRAP", &krate)
        .output()
        .context("running cargo rustdoc")?;
    let _ = fs::remove_dir_all(&work);
    if !output.status.success() {
        // The end of rustdoc's output says why; a tree with merge conflict markers can
        // print hundreds of lines before it.
        let stderr = String::from_utf8_lossy(&output.stderr);
        let lines: Vec<&str> = stderr.trim().lines().collect();
        bail!(
            "rustdoc JSON of {label} failed:\n{}",
            lines[lines.len().saturating_sub(20)..].join("\n")
        );
    }
    let json = target.join("doc").join(format!("{krate}.json"));
    fs::create_dir_all(cached.parent().unwrap_or(&scratch)).context("creating the JSON cache")?;
    // Another run may document the same crate name next; keep this one's JSON by its hash.
    fs::copy(&json, &cached).with_context(|| format!("copying {}", json.display()))?;
    eprintln!(
        "codegen: API diff: documented {label} ({:.1?})",
        started.elapsed()
    );
    Ok(cached)
}

/// Keeps only `keep` in the JSON cache (each file is ~14 MB): the next regeneration's
/// baseline is this one's result, and an older tree is documented again if ever needed.
fn prune_cache(keep: &Path) {
    let Some(dir) = keep.parent() else {
        return;
    };
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        if entry.path() != keep {
            let _ = fs::remove_file(entry.path());
        }
    }
}

fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned())
}

fn scratch(paths: &Paths) -> PathBuf {
    paths.target.join("openwop-api-diff")
}

/// The first `name = "…"` of the `[package]` table.
fn package_name(manifest: &str) -> Option<String> {
    let mut in_package = false;
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_package = line == "[package]";
        } else if in_package && let Some(rest) = line.strip_prefix("name") {
            let value = rest.trim_start().strip_prefix('=')?.trim();
            return Some(value.trim_matches('"').to_owned());
        }
    }
    None
}

fn copy_tree(src: &Path, dst: &Path) -> anyhow::Result<()> {
    for rel in openwop_codegen::existing_files(src)? {
        let target = dst.join(&rel);
        if let Some(parent) = target.parent() {
            fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        fs::copy(src.join(&rel), &target).with_context(|| format!("copying {rel}"))?;
    }
    Ok(())
}

/// sha256 over the tree's relative paths and contents.
fn tree_hash(dir: &Path) -> anyhow::Result<String> {
    let mut hasher = Sha256::new();
    for rel in openwop_codegen::existing_files(dir)? {
        let bytes = fs::read(dir.join(&rel)).with_context(|| format!("reading {rel}"))?;
        hasher.update(rel.as_bytes());
        hasher.update([0]);
        hasher.update(Sha256::digest(&bytes));
    }
    Ok(hex::encode(hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "\
Removed items from the public API
=================================
-pub fn openwop_generated::client::Client::old(&self)

Changed items in the public API
===============================
-pub struct field openwop_generated::models::Run::id: alloc::string::String
+pub struct field openwop_generated::models::Run::id: openwop_generated::models::RunId

Added items to the public API
=============================
(none)

";

    #[test]
    fn the_three_sections_are_read_and_a_removal_is_breaking() {
        let diff = ApiDiff::parse(SAMPLE).unwrap_or_default();
        assert_eq!(
            diff.removed,
            ["pub fn openwop_generated::client::Client::old(&self)"]
        );
        assert_eq!(diff.changed.len(), 1);
        assert!(diff.changed[0].1.ends_with("RunId"), "{:?}", diff.changed);
        assert!(diff.added.is_empty());
        assert!(diff.is_breaking());
        let text = diff.render(40);
        assert!(
            text.contains("1 removed, 1 changed, 0 added; BREAKING"),
            "{text}"
        );
    }

    #[test]
    fn only_additions_are_not_breaking() {
        let text = SAMPLE
            .replace("-pub fn openwop_generated::client::Client::old(&self)", "(none)")
            .replace(
                "-pub struct field openwop_generated::models::Run::id: alloc::string::String\n+pub struct field openwop_generated::models::Run::id: openwop_generated::models::RunId",
                "(none)",
            )
            .replace(
                "Added items to the public API\n=============================\n(none)",
                "Added items to the public API\n=============================\n+pub fn x()",
            );
        let diff = ApiDiff::parse(&text).unwrap_or_default();
        assert_eq!(diff.added, ["pub fn x()"]);
        assert!(!diff.is_breaking());
        assert!(
            diff.render(40)
                .contains("0 removed, 0 changed, 1 added; not breaking")
        );
    }

    #[test]
    fn output_without_the_sections_is_an_error_not_an_empty_diff() {
        assert!(ApiDiff::parse("error: something else\n").is_err());
    }

    #[test]
    fn package_name_is_read_from_the_package_table() {
        let manifest = "# header\n[package]\nname = \"openwop-sdk\"\nversion = \"1\"\n[dependencies]\nname = \"x\"\n";
        assert_eq!(package_name(manifest).as_deref(), Some("openwop-sdk"));
    }

    /// A new field of an existing exhaustive struct, or a new variant of an existing
    /// exhaustive enum, breaks; on a `#[non_exhaustive]` type or a new type it does not.
    #[test]
    fn additions_to_exhaustive_types_are_breaking() {
        let new_api = "\
pub mod m
pub struct m::Old
pub m::Old::a: u8
pub m::Old::b: core::option::Option<u8>
#[non_exhaustive] pub struct m::Open
pub m::Open::b: u8
pub struct m::New
pub m::New::a: u8
pub enum m::Kind
pub m::Kind::A
pub m::Kind::B(u8)
#[non_exhaustive] pub enum m::OpenKind
pub m::OpenKind::B
pub fn m::Old::new() -> Self
pub const m::Old::C: u8
";
        let mut diff = ApiDiff {
            added: [
                "pub m::Old::b: core::option::Option<u8>",
                "pub m::Open::b: u8",
                "pub struct m::New",
                "pub m::New::a: u8",
                "pub m::Kind::B(u8)",
                "pub m::OpenKind::B",
                "pub fn m::Old::new() -> Self",
                "pub const m::Old::C: u8",
            ]
            .map(str::to_owned)
            .to_vec(),
            ..ApiDiff::default()
        };
        diff.classify_additions(new_api);
        assert_eq!(
            diff.additions_that_break,
            [
                "pub m::Old::b: core::option::Option<u8>",
                "pub m::Kind::B(u8)"
            ]
        );
        assert!(diff.is_breaking());
        let text = diff.render(40);
        assert!(
            text.contains("0 removed, 0 changed, 8 added; BREAKING"),
            "{text}"
        );
        assert!(text.contains("exhaustive struct or enum"), "{text}");
    }

    /// A new type's impls (auto traits, derives) are counted, not listed; an impl added to
    /// a type that was there before is listed.
    #[test]
    fn the_impls_of_a_new_type_are_counted_not_listed() {
        let diff = ApiDiff {
            added: [
                "pub struct m::New",
                "impl core::marker::Send for m::New",
                "impl core::marker::Sync for m::New",
                "impl<T> core::convert::From<T> for m::New<T>",
                "impl core::clone::Clone for m::Old",
            ]
            .map(str::to_owned)
            .to_vec(),
            ..ApiDiff::default()
        };
        let text = diff.render(40);
        assert!(text.contains("+ pub struct m::New"), "{text}");
        assert!(!text.contains("marker::Send"), "{text}");
        assert!(
            text.contains("+ impl core::clone::Clone for m::Old"),
            "{text}"
        );
        assert!(
            text.contains("(3 impls of the types added above, not listed)"),
            "{text}"
        );
        assert!(text.contains("5 added"), "{text}");
    }

    /// Without the tool, a write keeps no copy of the old crate: nothing is made under the
    /// target dir (it was copied there, and the scratch directory left behind, for a diff
    /// that could not run). Skipped (saying so) where the tool is installed.
    #[test]
    fn without_the_tool_nothing_is_copied() {
        if tool_installed() {
            eprintln!("skipped: cargo-public-api is installed");
            return;
        }
        let base =
            std::env::temp_dir().join(format!("openwop-api-diff-none-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        let out = base.join("crate");
        let _ = fs::create_dir_all(&out);
        let _ = fs::write(
            out.join("Cargo.toml"),
            "# @generated by cargo xtask codegen\n[package]\nname = \"x\"\n",
        );
        let paths = Paths {
            spec_root: base.clone(),
            out,
            templates: base.clone(),
            workspace: base.clone(),
            target: base.join("target"),
        };
        let snapshot = snapshot(&paths, Policy::Auto);
        assert!(matches!(snapshot, Ok(None)), "{snapshot:?}");
        assert!(!scratch(&paths).exists(), "the scratch directory was made");
        let _ = fs::remove_dir_all(&base);
    }

    /// The real tool on two tiny crates: a removed public function is reported and flagged
    /// breaking, an added one is listed. Skipped (saying so) without cargo-public-api.
    #[test]
    fn cargo_public_api_reports_a_removed_item_as_breaking() {
        if !tool_installed() {
            eprintln!(
                "skipped: cargo-public-api is not installed \
                 (cargo install --locked cargo-public-api@{TOOL_VERSION})"
            );
            return;
        }
        let base = std::env::temp_dir().join(format!("openwop-api-diff-{}", std::process::id()));
        let _ = fs::remove_dir_all(&base);
        let krate = |dir: &str, lib: &str| {
            let root = base.join(dir);
            let _ = fs::create_dir_all(root.join("src"));
            let _ = fs::write(
                root.join("Cargo.toml"),
                "[package]\nname = \"api-diff-probe\"\nversion = \"0.1.0\"\nedition = \"2024\"\n",
            );
            let _ = fs::write(root.join("src/lib.rs"), lib);
            root
        };
        let old = krate("old", "pub fn kept() {}\npub fn gone() {}\n");
        let new = krate("new", "pub fn kept() {}\npub fn fresh() {}\n");
        // No lock file in this workspace, and a target dir of its own (not the one the
        // running `cargo test` may hold).
        let paths = Paths {
            spec_root: base.clone(),
            out: new.clone(),
            templates: base.clone(),
            workspace: base.clone(),
            target: base.join("target"),
        };
        let old_json = match rustdoc_json(&paths, &old, "old") {
            Ok(path) => path,
            Err(e) => panic!("{e:#}"),
        };
        let new_json = match rustdoc_json(&paths, &new, "new") {
            Ok(path) => path,
            Err(e) => panic!("{e:#}"),
        };
        let diff = match diff_json(&old_json, &new_json) {
            Ok(diff) => diff,
            Err(e) => panic!("{e:#}"),
        };
        assert_eq!(diff.removed, ["pub fn api_diff_probe::gone()"], "{diff:?}");
        assert_eq!(diff.added, ["pub fn api_diff_probe::fresh()"], "{diff:?}");
        assert!(diff.is_breaking());
        assert!(diff.render(40).contains("BREAKING"));
        let _ = fs::remove_dir_all(&base);
    }
}
