//! `openwop validate` is the `openwop-validate` package's command inside the host binary:
//! the same arguments, output and exit codes (`validate/tests/` covers the command itself),
//! its help written as the host's users type it.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn vector(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/vectors")
        .join(rel)
}

fn openwop(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_openwop"))
        .arg("validate")
        .args(args)
        .output()
        .expect("the openwop binary runs")
}

#[test]
fn the_host_delegates_to_the_validate_package() {
    let valid = vector("discovery/valid/minimal.json");
    let bad = vector("discovery/invalid/discovery.no-grpc.json");
    let (valid, bad) = (valid.to_string_lossy(), bad.to_string_lossy());
    let out = openwop(&["--now", "2026-12-01", &valid]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let out = openwop(&["--now", "2026-12-01", "--format", "json", &bad]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let findings: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert!(
        findings
            .as_array()
            .is_some_and(|a| a.iter().any(|f| f["rule"] == "discovery.no-grpc")),
        "{findings}"
    );
    assert_eq!(openwop(&["/nonexistent.json"]).status.code(), Some(2));
}

#[test]
fn the_help_shows_examples_as_the_host_types_them() {
    let out = openwop(&["--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(
        help.contains("openwop validate --kind agent-card --discovery"),
        "{help}"
    );
    assert!(!help.contains("openwop-validate "), "{help}");
}
