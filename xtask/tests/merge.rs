//! A merge where both sides changed `generated/` leaves each generated file whole (this
//! side's) and reports the conflict, so `cargo xtask codegen` can still run to resolve it.
//! With git's text merge, `generated/Cargo.toml` got conflict markers, cargo could not load
//! the workspace, and the command that fixes the conflict could not start.

use std::fs;
use std::path::Path;
use std::process::Command;

fn git(dir: &Path, args: &[&str]) -> (bool, String) {
    let output = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .expect("git runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

fn ok(dir: &Path, args: &[&str]) {
    let (success, text) = git(dir, args);
    assert!(success, "git {args:?}: {text}");
}

#[test]
fn a_conflict_in_generated_keeps_a_whole_file_and_is_reported() {
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let attributes =
        fs::read_to_string(checkout.join(".gitattributes")).expect("the checkout's .gitattributes");
    let dir = std::env::temp_dir().join(format!("openwop-merge-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("generated")).unwrap();
    fs::write(dir.join(".gitattributes"), attributes).unwrap();
    let manifest = dir.join("generated/Cargo.toml");
    fs::write(&manifest, "[package]\nname = \"g\"\nversion = \"0.1.0\"\n").unwrap();
    ok(&dir, &["init", "-q"]);
    ok(&dir, &["add", "-A"]);
    ok(&dir, &["commit", "-qm", "base"]);
    ok(&dir, &["checkout", "-qb", "theirs"]);
    fs::write(&manifest, "[package]\nname = \"g\"\nversion = \"0.2.0\"\n").unwrap();
    ok(&dir, &["commit", "-qam", "theirs"]);
    ok(&dir, &["checkout", "-q", "main"]);
    let ours = "[package]\nname = \"g\"\nversion = \"0.3.0\"\n";
    fs::write(&manifest, ours).unwrap();
    ok(&dir, &["commit", "-qam", "ours"]);
    let (merged, text) = git(&dir, &["merge", "theirs"]);
    assert!(!merged, "the conflict is reported: {text}");
    assert_eq!(
        fs::read_to_string(&manifest).unwrap(),
        ours,
        "this side's file, whole, without conflict markers"
    );
    let (_, status) = git(&dir, &["status", "--porcelain"]);
    assert!(status.contains("UU generated/Cargo.toml"), "{status}");
    let _ = fs::remove_dir_all(&dir);
}
