//! The xtask binary built in this checkout, run inside another checkout, reads that
//! checkout's corpus and writes that checkout's `generated/`, and leaves this one alone.
//! (With a shared `CARGO_TARGET_DIR`, cargo reuses one checkout's binary in another; the
//! binary used to take its paths from where it was compiled.)

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::SystemTime;

/// The checkout this test and the binary were built in.
fn this_checkout() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf)
}

fn copy_dir(src: &Path, dst: &Path) {
    fs::create_dir_all(dst).unwrap_or_else(|e| panic!("creating {}: {e}", dst.display()));
    for entry in fs::read_dir(src).unwrap_or_else(|e| panic!("reading {}: {e}", src.display())) {
        let entry = entry.unwrap_or_else(|e| panic!("reading {}: {e}", src.display()));
        let target = dst.join(entry.file_name());
        if entry.file_name() == "target" {
            continue;
        }
        if entry.path().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), &target)
                .unwrap_or_else(|e| panic!("copying {}: {e}", entry.path().display()));
        }
    }
}

/// A second checkout in a temp dir: the workspace manifest, the corpus, the generator's
/// sources and templates and the committed `generated/` of this one.
fn second_checkout(name: &str) -> PathBuf {
    let here = this_checkout();
    let dir = std::env::temp_dir().join(format!("openwop-xtask-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    for sub in [
        "spec",
        "schemas",
        "api",
        "generated",
        "codegen/templates",
        "codegen/src",
        "xtask/src",
        "tests/vectors",
    ] {
        copy_dir(&here.join(sub), &dir.join(sub));
    }
    for file in [
        "Cargo.toml",
        "codegen/Cargo.toml",
        "codegen/build.rs",
        "xtask/Cargo.toml",
        "xtask/build.rs",
    ] {
        fs::copy(here.join(file), dir.join(file)).unwrap_or_else(|e| panic!("copying {file}: {e}"));
    }
    dir
}

/// Relative path → (modified time, content) of every file under `dir`.
fn snapshot(dir: &Path) -> BTreeMap<String, (SystemTime, Vec<u8>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(current) = stack.pop() {
        for entry in fs::read_dir(&current).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            let rel = path
                .strip_prefix(dir)
                .map(|p| p.to_string_lossy().replace('\\', "/"))
                .unwrap_or_default();
            let modified = entry
                .metadata()
                .and_then(|m| m.modified())
                .unwrap_or(SystemTime::UNIX_EPOCH);
            out.insert(rel, (modified, fs::read(&path).unwrap_or_default()));
        }
    }
    out
}

/// Runs this checkout's xtask binary with `cwd` as its working directory and none of the
/// cargo variables a test inherits (a binary run by hand in another checkout has none).
fn xtask(cwd: &Path, args: &[&str]) -> (Output, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_xtask"))
        .args(args)
        .current_dir(cwd)
        .env_remove("CARGO_MANIFEST_DIR")
        .env_remove("CARGO_PKG_NAME")
        // A backtrace would name this checkout's source files.
        .env("RUST_BACKTRACE", "0")
        .env("RUST_LIB_BACKTRACE", "0")
        .output()
        .unwrap_or_else(|e| panic!("running xtask: {e}"));
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    (output, stderr)
}

#[test]
fn the_binary_of_one_checkout_reads_and_writes_only_the_checkout_it_runs_in() {
    let here = this_checkout();
    let ours_before = snapshot(&here.join("generated"));
    let other = second_checkout("other");
    let other_before = snapshot(&other.join("generated"));

    // From a subdirectory of the other checkout: it is found by walking up.
    let cwd = other.join("spec/v2");
    let (out, log) = xtask(&cwd, &["codegen", "--check", "--strict"]);
    assert!(out.status.success(), "the copy is fresh:\n{log}");
    let loaded = format!("corpus files from {}", other.display());
    assert!(log.contains(&loaded), "loaded from elsewhere:\n{log}");
    assert!(
        log.contains(&format!(
            "checkout {} (found from the working directory)",
            other.display()
        )),
        "{log}"
    );
    assert!(!log.contains(&here.display().to_string()), "{log}");

    // A one-line description edit in the other checkout's corpus.
    let errors = other.join("spec/v2/errors.json");
    let text = fs::read_to_string(&errors).unwrap_or_else(|e| panic!("reading errors.json: {e}"));
    let edited = text.replacen(
        "\"summary\": \"",
        "\"summary\": \"Edited in the other checkout. ",
        1,
    );
    assert_ne!(text, edited, "no summary to edit");
    fs::write(&errors, edited).unwrap_or_else(|e| panic!("writing errors.json: {e}"));

    let (out, log) = xtask(&other, &["codegen", "--check", "--strict"]);
    assert!(
        !out.status.success(),
        "--check passed a stale crate:\n{log}"
    );
    // Each stale file is named with the output directory, as a path a log reader can open.
    let prefix = format!("{}/", other.join("generated").display());
    let stale: Vec<&str> = log
        .lines()
        .filter_map(|l| l.strip_prefix("stale: "))
        .filter_map(|l| l.split_whitespace().next())
        .filter_map(|p| p.strip_prefix(prefix.as_str()))
        .collect();
    assert_eq!(
        stale,
        ["CODEGEN.sha256", "src/corpus.rs", "src/errors.rs"],
        "{log}"
    );

    let (out, log) = xtask(&other, &["codegen", "--strict", "--api-diff=off"]);
    assert!(out.status.success(), "{log}");
    let other_after = snapshot(&other.join("generated"));
    let changed: Vec<&str> = other_after
        .iter()
        .filter(|(rel, (_, bytes))| other_before.get(*rel).map(|(_, b)| b) != Some(bytes))
        .map(|(rel, _)| rel.as_str())
        .collect();
    // Only the file whose text the edit changes, plus the ones that carry the corpus hash
    // and the files' hashes.
    assert_eq!(
        changed,
        ["CODEGEN.sha256", "src/corpus.rs", "src/errors.rs"],
        "{log}"
    );
    assert!(
        String::from_utf8_lossy(&other_after["src/errors.rs"].1)
            .contains("Edited in the other checkout."),
        "the edit is not in the other checkout's errors.rs"
    );
    let (out, log) = xtask(&other, &["codegen", "--check", "--strict"]);
    assert!(out.status.success(), "fresh after regenerating:\n{log}");

    // This checkout's generated/ is untouched: same files, contents and modified times.
    assert!(
        ours_before == snapshot(&here.join("generated")),
        "the run in {} touched {}",
        other.display(),
        here.join("generated").display()
    );
    let _ = fs::remove_dir_all(&other);
}

#[test]
fn outside_any_checkout_both_tasks_refuse_instead_of_falling_back_to_the_build_checkout() {
    let dir = std::env::temp_dir().join(format!("openwop-xtask-nowhere-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    for args in [&["codegen", "--check"][..], &["upstream-check"][..]] {
        let (out, log) = xtask(&dir, args);
        assert!(
            !out.status.success(),
            "{args:?} ran outside a checkout:\n{log}"
        );
        assert!(log.contains("is not inside an OpenWOP checkout"), "{log}");
        assert!(
            !log.contains(&this_checkout().display().to_string()),
            "{args:?} fell back to the checkout it was built in:\n{log}"
        );
    }
    let _ = fs::remove_dir_all(&dir);
}

/// With a target directory shared by two checkouts, cargo reuses one checkout's build of
/// the generator in the other when the other's sources are no newer: its paths come from
/// the run, but its code would be the first checkout's. A checkout whose generator sources
/// differ from the ones the binary was built from is refused, and nothing is written.
#[test]
fn a_binary_built_from_other_generator_sources_refuses_and_writes_nothing() {
    let other = second_checkout("sources");
    let format = other.join("codegen/src/format.rs");
    let text = fs::read_to_string(&format).unwrap_or_else(|e| panic!("reading format.rs: {e}"));
    fs::write(
        &format,
        format!("{text}\n// Edited in the other checkout.\n"),
    )
    .unwrap_or_else(|e| panic!("writing format.rs: {e}"));
    let before = snapshot(&other.join("generated"));
    for args in [
        &["codegen", "--api-diff=off"][..],
        &["codegen", "--check"][..],
    ] {
        let (out, log) = xtask(&other, args);
        assert!(!out.status.success(), "{args:?} ran other code:\n{log}");
        // The edit is the library's: the refusal names it.
        assert!(
            log.contains("the generator library (codegen/) was built from other sources"),
            "{log}"
        );
        assert!(
            log.contains("cargo clean -p xtask -p openwop-codegen"),
            "{log}"
        );
    }
    assert!(
        before == snapshot(&other.join("generated")),
        "generated/ was written"
    );
    let _ = fs::remove_dir_all(&other);
}
