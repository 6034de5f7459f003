//! One golden file per output format (`tests/golden/`), from one fixed run: a valid
//! document, invalid ones (several rules, a warning by `--rule`), a file that is not JSON
//! and one that does not exist. A format change shows up as a diff here; after a deliberate
//! change, `UPDATE_GOLDEN=1 cargo test -p openwop-validate --test golden` rewrites them.

use std::path::{Path, PathBuf};
use std::process::Command;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn golden(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name)
}

const FORMATS: [(&str, &str); 6] = [
    ("human", "human.txt"),
    ("json", "findings.json"),
    ("sarif", "findings.sarif"),
    ("github", "github.txt"),
    ("junit", "junit.xml"),
    ("markdown", "findings.md"),
];

#[test]
fn every_format_matches_its_golden_file() {
    let out_dir = tempfile::tempdir().expect("dir");
    // Relative paths, run from the repository root, so the output names no machine path.
    // SARIF's `originalUriBaseIds` names the repository root: written as a placeholder.
    let top = std::fs::canonicalize(root()).expect("root");
    let mut command = Command::new(env!("CARGO_BIN_EXE_openwop-validate"));
    command
        .current_dir(root())
        .env("GITHUB_WORKSPACE", &top)
        .env_remove("GITHUB_STEP_SUMMARY")
        .args([
            "--no-config",
            "--now",
            "2026-12-01",
            "--docs-url",
            "https://example.test/openwop/blob/main/",
            "--rule",
            "discovery.refresh-overdue=warning",
        ]);
    for (format, file) in FORMATS {
        command
            .arg("--format")
            .arg(format!("{format}={}", out_dir.path().join(file).display()));
    }
    command.args([
        "tests/vectors/discovery/valid/minimal.json",
        "tests/vectors/discovery/invalid/discovery.no-grpc.json",
        "tests/vectors/discovery/invalid/discovery.refresh-overdue--a2a.json",
        "tests/vectors/discovery/invalid/discovery.profile-missing-feature--no-features.json",
        "validate/tests/golden/inputs/not-json.json",
        "validate/tests/golden/inputs/missing.json",
    ]);
    let run = command.output().expect("runs");
    assert_eq!(
        run.status.code(),
        Some(2),
        "an unreadable input makes it 2: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    let update = std::env::var_os("UPDATE_GOLDEN").is_some();
    let mut differ = Vec::new();
    for (_, file) in FORMATS {
        let got = std::fs::read_to_string(out_dir.path().join(file)).expect("written");
        // The missing file's message comes from the OS; keep the golden file portable.
        let got = got
            .replace("No such file or directory (os error 2)", "<not found>")
            .replace(&format!("file://{}/", top.display()), "file:///REPOSITORY/");
        if update {
            std::fs::write(golden(file), &got).expect("update");
            continue;
        }
        let want = std::fs::read_to_string(golden(file)).unwrap_or_default();
        if got != want {
            differ.push(format!("--- {file}: got\n{got}"));
        }
    }
    assert!(
        differ.is_empty(),
        "output differs from tests/golden (UPDATE_GOLDEN=1 rewrites):\n{}",
        differ.join("\n")
    );
}
