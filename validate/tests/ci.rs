//! What a CI owner relies on: thresholds and exit codes, rule levels from the command line
//! and the config file, the baseline round trip, several formats from one run, the GitHub
//! job summary, rule lookup, and bad input that gives a finding (never a panic).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const NOW: &str = "2026-12-01";

fn vector(rel: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/vectors")
        .join(rel)
        .to_string_lossy()
        .into_owned()
}

fn valid() -> String {
    vector("discovery/valid/minimal.json")
}

/// One finding: `discovery.refresh-overdue` on `/a2a/refreshedAt`.
fn overdue() -> String {
    vector("discovery/invalid/discovery.refresh-overdue--a2a.json")
}

/// Runs in `dir` (so no config file of the checkout applies) with `args`.
fn validate_in(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_openwop-validate"))
        .current_dir(dir)
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("OPENWOP_VALIDATE_DOCS_URL")
        .args(args)
        .output()
        .expect("openwop-validate runs")
}

fn validate(args: &[&str]) -> Output {
    let dir = tempfile::tempdir().expect("dir");
    validate_in(dir.path(), args)
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn thresholds_decide_the_exit_code() {
    let (ok, bad) = (valid(), overdue());
    assert_eq!(code(&validate(&["--now", NOW, &ok])), 0);
    assert_eq!(code(&validate(&["--now", NOW, &bad])), 1);
    let warn = "discovery.refresh-overdue=warning";
    // A warning does not fail the default threshold, but does fail `--fail-on warning`.
    let out = validate(&["--now", NOW, "--rule", warn, &bad]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    assert!(
        stdout(&out).contains("(0 errors, 1 warning)"),
        "{}",
        stdout(&out)
    );
    assert_eq!(
        code(&validate(&[
            "--now",
            NOW,
            "--rule",
            warn,
            "--fail-on",
            "warning",
            &bad
        ])),
        1
    );
    // --max-warnings counts warnings: 1 is not more than 1, but more than 0.
    let max = |n: &str| {
        code(&validate(&[
            "--now",
            NOW,
            "--rule",
            warn,
            "--max-warnings",
            n,
            &bad,
        ]))
    };
    assert_eq!(max("1"), 0);
    assert_eq!(max("0"), 1);
    // never: findings are reported, the run passes.
    let out = validate(&["--now", NOW, "--fail-on", "never", &bad]);
    assert_eq!(code(&out), 0);
    assert!(
        stdout(&out).contains("discovery.refresh-overdue"),
        "{}",
        stdout(&out)
    );
    // off: the rule's findings are not reported at all.
    let out = validate(&[
        "--now",
        NOW,
        "--rule",
        "discovery.refresh-overdue=off",
        &bad,
    ]);
    assert_eq!(code(&out), 0);
    assert!(stdout(&out).contains("0 findings"), "{}", stdout(&out));
    // An unreadable input is exit 2 whatever the threshold.
    let out = validate(&["--fail-on", "never", &ok, "/nonexistent/x.json"]);
    assert_eq!(code(&out), 2);
}

#[test]
fn usage_mistakes_exit_2_with_a_sentence() {
    let ok = valid();
    for (args, says) in [
        (
            vec!["--rule", "no.such-rule=off", ok.as_str()],
            "no rule \"no.such-rule\"",
        ),
        (vec!["--rule", "schema", ok.as_str()], "ID=LEVEL"),
        (vec!["--fail-on", "sometimes", ok.as_str()], "sometimes"),
        (vec!["--format", "xml", ok.as_str()], "not a format"),
        (
            vec!["--format", "json", "--format", "sarif", ok.as_str()],
            "standard output",
        ),
        (vec!["--explain", "no.such-rule"], "no rule"),
        (
            vec!["--baseline", "/nonexistent/b.json", ok.as_str()],
            "cannot read the baseline",
        ),
        (
            vec!["--config", "/nonexistent/c.yaml", ok.as_str()],
            "config file",
        ),
    ] {
        let out = validate(&args);
        assert_eq!(code(&out), 2, "{args:?}");
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn the_config_file_is_found_upwards_and_the_command_line_wins() {
    let dir = tempfile::tempdir().expect("dir");
    let deep = dir.path().join("site/public");
    std::fs::create_dir_all(&deep).expect("mkdir");
    std::fs::write(
        dir.path().join(".openwop-validate.yaml"),
        "fail-on: warning\nrules:\n  discovery.refresh-overdue: warning\n",
    )
    .expect("write");
    let bad = overdue();
    let out = validate_in(&deep, &["--now", NOW, &bad]);
    assert_eq!(code(&out), 1, "fail-on: warning from the file");
    assert!(stdout(&out).contains("1 warning"), "{}", stdout(&out));
    assert_eq!(
        code(&validate_in(
            &deep,
            &["--now", NOW, "--fail-on", "error", &bad]
        )),
        0
    );
    assert_eq!(
        code(&validate_in(&deep, &["--now", NOW, "--no-config", &bad])),
        1
    );
    let out = validate_in(&deep, &["--now", NOW, "--no-config", &bad]);
    assert!(stdout(&out).contains("1 error"), "{}", stdout(&out));
}

#[test]
fn the_baseline_round_trip() {
    let dir = tempfile::tempdir().expect("dir");
    let copy = |from: &str, to: &str| {
        std::fs::copy(from, dir.path().join(to)).expect("copy");
    };
    copy(&overdue(), "a.json");
    copy(
        &vector("discovery/invalid/discovery.no-grpc.json"),
        "b.json",
    );
    let run = |args: &[&str]| validate_in(dir.path(), args);

    let written = run(&[
        "--now",
        NOW,
        "--write-baseline",
        "base.json",
        "a.json",
        "b.json",
    ]);
    // The adopting run passes: what it recorded is known from now on.
    assert_eq!(code(&written), 0, "{}", stdout(&written));
    assert!(
        stdout(&written).contains("known in the baseline"),
        "{}",
        stdout(&written)
    );
    let text = std::fs::read_to_string(dir.path().join("base.json")).expect("written");
    let again = run(&[
        "--now",
        NOW,
        "--write-baseline",
        "base2.json",
        "b.json",
        "a.json",
    ]);
    assert_eq!(code(&again), 0);
    let text2 = std::fs::read_to_string(dir.path().join("base2.json")).expect("written");
    assert_eq!(text, text2, "the baseline is the same whatever the order");
    let parsed: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(parsed["version"], 2);
    assert!(
        text.contains("\"rule\": \"discovery.refresh-overdue\""),
        "{text}"
    );

    // Nothing new: passes, and says how many the baseline holds.
    let out = run(&[
        "--now",
        NOW,
        "--baseline",
        "base.json",
        "--strict-baseline",
        "a.json",
        "b.json",
    ]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    assert!(
        stdout(&out).contains("known in the baseline"),
        "{}",
        stdout(&out)
    );

    // a.json fixed, b.json gets worse: only the new finding is reported, the fixed one
    // is listed, and --strict-baseline fails on it.
    copy(&valid(), "a.json");
    copy(
        &vector("discovery/invalid/discovery.no-supported-transports.json"),
        "b.json",
    );
    let out = run(&[
        "--now",
        NOW,
        "--baseline",
        "base.json",
        "--format",
        "json",
        "a.json",
        "b.json",
    ]);
    let findings: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let rules: Vec<&str> = findings
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|f| f["rule"].as_str())
        .collect();
    assert!(
        rules.contains(&"discovery.no-supported-transports"),
        "{rules:?}"
    );
    assert!(!rules.contains(&"discovery.refresh-overdue"), "{rules:?}");
    let out = run(&[
        "--now",
        NOW,
        "--baseline",
        "base.json",
        "--fail-on",
        "never",
        "a.json",
    ]);
    assert_eq!(code(&out), 0);
    assert!(
        stdout(&out).contains("a.json: baseline entry discovery.refresh-overdue at \"/a2a/refreshedAt\" (`refreshedAt` 2026-09-01 is older than"),
        "{}",
        stdout(&out)
    );
    let strict = [
        "--now",
        NOW,
        "--baseline",
        "base.json",
        "--strict-baseline",
        "--fail-on",
        "never",
        "a.json",
    ];
    // The human log says why once, on standard output: a CI log showing both streams
    // does not read it twice.
    let out = run(&strict);
    assert_eq!(code(&out), 1);
    let why = "failing: 1 baseline entry no longer found";
    assert_eq!(stdout(&out).matches(why).count(), 1, "{}", stdout(&out));
    assert!(!stderr(&out).contains(why), "{}", stderr(&out));
    // Every report format but JSON says why: nothing is found, the run still fails. JSON
    // is the findings alone (an empty array here); the exit status and standard error say
    // why the run fails.
    let mut with_reports = strict.to_vec();
    with_reports.extend([
        "--format",
        "json",
        "--format",
        "sarif=r.sarif",
        "--format",
        "junit=r.xml",
    ]);
    let out = run(&with_reports);
    assert_eq!(code(&out), 1);
    assert_eq!(stdout(&out).trim(), "[]");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("failing: 1 baseline entry no longer found"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sarif: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("r.sarif")).expect("sarif"))
            .expect("JSON");
    let invocation = &sarif["runs"][0]["invocations"][0];
    assert_eq!(invocation["exitCode"], 1, "{invocation}");
    let notes = invocation["toolExecutionNotifications"]
        .as_array()
        .expect("notifications");
    assert!(
        notes.iter().any(|n| n["level"] == "error"
            && n["message"]["text"]
                .as_str()
                .unwrap_or("")
                .contains("--strict-baseline")),
        "{invocation}"
    );
    let junit = std::fs::read_to_string(dir.path().join("r.xml")).expect("junit");
    assert!(
        junit.contains("<testcase name=\"openwop-validate run\"")
            && junit.contains("failures=\"1\""),
        "{junit}"
    );
    // A document not checked in this run has no stale entries.
    copy(&overdue(), "a.json");
    let out = run(&[
        "--now",
        NOW,
        "--baseline",
        "base.json",
        "--strict-baseline",
        "a.json",
    ]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
}

/// A baseline keeps knowing only what it recorded: a second unknown member beside a known
/// one, or another required member missing instead of the recorded one, is reported, and
/// `--strict-baseline` fails on the recorded one that is gone.
#[test]
fn a_baseline_does_not_hide_a_new_finding_where_a_known_one_is() {
    let dir = tempfile::tempdir().expect("dir");
    let run = |args: &[&str]| validate_in(dir.path(), args);
    let write = |doc: &Value| {
        std::fs::write(
            dir.path().join("d.json"),
            serde_json::to_string_pretty(doc).expect("JSON"),
        )
        .expect("write");
    };
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(valid()).expect("read")).expect("JSON");
    let members = doc.as_object_mut().expect("object");
    let preferred = members
        .remove("preferredVersion")
        .expect("the valid vector has it");
    members.insert("bogus1".into(), Value::from(1));
    write(&doc);
    let adopted = run(&["--now", NOW, "--write-baseline", "base.json", "d.json"]);
    let strict = || {
        run(&[
            "--now",
            NOW,
            "--baseline",
            "base.json",
            "--strict-baseline",
            "d.json",
        ])
    };
    assert_eq!(code(&adopted), 0, "{}", stdout(&adopted));
    assert!(
        stdout(&adopted).contains("2 known in the baseline"),
        "{}",
        stdout(&adopted)
    );

    // A new unknown member at the root: its own finding, at its own line.
    doc["typo_preferedVersion"] = Value::from("2.0");
    write(&doc);
    let out = strict();
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    assert!(
        stdout(&out).contains("'typo_preferedVersion' was unexpected"),
        "{}",
        stdout(&out)
    );
    assert!(!stdout(&out).contains("'bogus1'"), "{}", stdout(&out));
    assert!(stdout(&out).contains("1 finding"), "{}", stdout(&out));

    // The missing member supplied, another removed: the new one is reported, the recorded
    // one is named as gone.
    let members = doc.as_object_mut().expect("object");
    members.remove("typo_preferedVersion");
    members.insert("preferredVersion".into(), preferred);
    members
        .remove("protocolVersions")
        .expect("the valid vector has it");
    write(&doc);
    let out = strict();
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    assert!(
        stdout(&out).contains("add `protocolVersions` to the document"),
        "{}",
        stdout(&out)
    );
    assert!(
        stdout(&out).contains(
            "add `preferredVersion` to the document (the version served when a request carries no OpenWOP-Version)) no longer occurs"
        ),
        "{}",
        stdout(&out)
    );
}

#[test]
fn one_run_prints_the_log_and_writes_sarif_and_junit() {
    let dir = tempfile::tempdir().expect("dir");
    let sarif = dir.path().join("v.sarif");
    let junit = dir.path().join("v.xml");
    let bad = overdue();
    let out = validate(&[
        "--now",
        NOW,
        "--format",
        &format!("sarif={}", sarif.display()),
        "--format",
        &format!("junit={}", junit.display()),
        &valid(),
        &bad,
    ]);
    assert_eq!(code(&out), 1);
    // Files only named: the human log still goes to standard output.
    assert!(
        stdout(&out).starts_with(&format!("{bad}:")),
        "{}",
        stdout(&out)
    );
    let log: Value =
        serde_json::from_str(&std::fs::read_to_string(&sarif).expect("sarif")).expect("JSON");
    assert_eq!(log["version"], "2.1.0");
    let result = &log["runs"][0]["results"][0];
    assert_eq!(result["ruleId"], "discovery.refresh-overdue");
    let index = result["ruleIndex"].as_u64().expect("index") as usize;
    assert_eq!(
        log["runs"][0]["tool"]["driver"]["rules"][index]["id"],
        "discovery.refresh-overdue"
    );
    let xml = std::fs::read_to_string(&junit).expect("junit");
    assert_eq!(xml.matches("<testcase ").count(), 2, "{xml}");
    assert_eq!(xml.matches("<failure ").count(), 1, "{xml}");
}

#[test]
fn github_format_annotates_and_fills_the_job_summary() {
    let dir = tempfile::tempdir().expect("dir");
    let summary = dir.path().join("summary.md");
    std::fs::write(&summary, "earlier step\n").expect("write");
    let bad = overdue();
    let out = Command::new(env!("CARGO_BIN_EXE_openwop-validate"))
        .current_dir(dir.path())
        .env("GITHUB_STEP_SUMMARY", &summary)
        .args([
            "--now",
            NOW,
            "--rule",
            "discovery.refresh-overdue=warning",
            "--format",
            "github",
            &bad,
        ])
        .output()
        .expect("runs");
    assert_eq!(code(&out), 0);
    let first = stdout(&out).lines().next().unwrap_or_default().to_owned();
    assert!(
        first.starts_with("::warning file=")
            && first.contains(",title=discovery.refresh-overdue::"),
        "{first}"
    );
    let table = std::fs::read_to_string(&summary).expect("summary");
    assert!(
        table.starts_with("earlier step\n### openwop-validate"),
        "{table}"
    );
    assert!(
        table.contains("| warning | [discovery.refresh-overdue]("),
        "{table}"
    );
}

#[test]
fn rules_can_be_listed_and_explained() {
    let out = validate(&["--list-rules"]);
    assert_eq!(code(&out), 0);
    assert!(
        stdout(&out).contains("discovery.no-grpc"),
        "{}",
        stdout(&out)
    );
    let out = validate(&[
        "--list-rules",
        "--format",
        "json",
        "--docs-url",
        "https://example.test/r/",
    ]);
    let rules: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let rules = rules.as_array().expect("array");
    assert!(rules.len() > 20, "{rules:?}");
    for r in rules {
        let id = r["id"].as_str().expect("id");
        assert!(
            ["error", "warning"].contains(&r["severity"].as_str().unwrap_or("")),
            "{r}"
        );
        assert!(
            r["docs"]
                .as_str()
                .unwrap_or("")
                .ends_with(&format!("#{id}")),
            "{r}"
        );
    }
    assert!(rules.iter().any(|r| r["id"] == "input.malformed"));
    let out = validate(&[
        "--explain",
        "discovery.no-grpc",
        "--docs-url",
        "https://example.test/r",
    ]);
    assert_eq!(code(&out), 0);
    let text = stdout(&out);
    assert!(text.starts_with("discovery.no-grpc ("), "{text}");
    assert!(text.contains("Section: "), "{text}");
    assert!(text.contains("More: https://example.test/r/"), "{text}");
}

#[test]
fn bad_input_is_a_finding_in_every_format_and_never_a_panic() {
    let dir = tempfile::tempdir().expect("dir");
    let cases: [(&str, &[u8]); 7] = [
        ("empty.json", b""),
        // A byte order mark is skipped; what follows it still has to parse.
        ("bom.json", b"\xEF\xBB\xBF{\"a\": }"),
        ("binary.json", b"\x00\xff\xfe{"),
        ("deep.json", &[b'['; 100_000]),
        ("number.json", b"1e99999"),
        ("text.json", b"not json at all"),
        ("truncated.json", b"{\"protocolVersions\": [\"2.0\""),
    ];
    let mut paths: Vec<PathBuf> = Vec::new();
    for (name, bytes) in cases {
        let path = dir.path().join(name);
        std::fs::write(&path, bytes).expect("write");
        paths.push(path);
    }
    let names: Vec<String> = paths
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    for format in ["human", "json", "sarif", "github", "junit", "markdown"] {
        let mut args = vec!["--format", format];
        args.extend(names.iter().map(String::as_str));
        let out = validate(&args);
        assert_eq!(code(&out), 2, "{format}: {}", stderr(&out));
        assert!(
            !stderr(&out).contains("panicked"),
            "{format}: {}",
            stderr(&out)
        );
        let text = stdout(&out);
        assert!(
            text.matches("input.malformed").count() >= cases.len(),
            "{format}: {text}"
        );
    }
    // A byte order mark before a valid document is no finding.
    let bom = dir.path().join("bom-valid.json");
    let mut text = b"\xEF\xBB\xBF".to_vec();
    text.extend(std::fs::read(valid()).expect("read"));
    std::fs::write(&bom, text).expect("write");
    let out = validate(&[bom.to_str().expect("UTF-8")]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    // JSON: one finding per input, with the syntax error's position.
    let mut args = vec!["--format", "json"];
    args.extend(names.iter().map(String::as_str));
    let findings: Value = serde_json::from_slice(&validate(&args).stdout).expect("JSON");
    let findings = findings.as_array().expect("array");
    assert_eq!(findings.len(), cases.len(), "{findings:#?}");
    let truncated = &findings[cases.len() - 1];
    assert_eq!(truncated["rule"], "input.malformed");
    assert_eq!(truncated["severity"], "error");
    assert_eq!(
        (truncated["line"].as_u64(), truncated["column"].as_u64()),
        (Some(1), Some(27))
    );
    assert!(
        truncated["message"]
            .as_str()
            .unwrap_or("")
            .starts_with("not valid JSON: "),
        "{truncated}"
    );
}

/// `--list-rules` and `--explain` check no documents and print text or JSON only: what
/// they would otherwise ignore is a usage error, and `--explain --format json` is JSON.
#[test]
fn list_rules_and_explain_refuse_what_they_would_ignore() {
    let ok = valid();
    for (args, says) in [
        (
            vec!["--explain", "discovery.no-grpc", ok.as_str()],
            "cannot be used with",
        ),
        (vec!["--list-rules", ok.as_str()], "cannot be used with"),
        (
            vec!["--list-rules", "--format", "sarif"],
            "--list-rules prints human or json, not sarif",
        ),
        (
            vec!["--explain", "schema", "--format", "junit=x.xml"],
            "--explain prints human or json, not junit",
        ),
    ] {
        let out = validate(&args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stdout(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
        assert!(stdout(&out).is_empty(), "{args:?}: {}", stdout(&out));
    }
    let out = validate(&["--explain", "discovery.no-grpc", "--format", "json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let rule: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(rule["id"], "discovery.no-grpc", "{rule}");
    assert_eq!(rule["severity"], "error", "{rule}");
    let dir = tempfile::tempdir().expect("dir");
    let out = validate_in(
        dir.path(),
        &[
            "--explain",
            "discovery.no-grpc",
            "--format",
            "json=rule.json",
        ],
    );
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    let written = std::fs::read_to_string(dir.path().join("rule.json")).unwrap_or_default();
    assert!(
        written.contains("\"id\": \"discovery.no-grpc\""),
        "{written}"
    );
}

/// `.openwop-validate.yml` is read like `.yaml`; both in one directory is a usage error
/// naming both.
#[test]
fn the_config_file_may_be_spelt_yml_but_not_both_ways() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(dir.path().join(".openwop-validate.yml"), "fail-on: never\n").expect("write");
    let bad = overdue();
    let out = validate_in(dir.path(), &["--now", NOW, &bad]);
    assert_eq!(
        code(&out),
        0,
        "fail-on: never from the .yml: {}",
        stdout(&out)
    );
    std::fs::write(
        dir.path().join(".openwop-validate.yaml"),
        "fail-on: error\n",
    )
    .expect("write");
    let out = validate_in(dir.path(), &["--now", NOW, &bad]);
    assert_eq!(code(&out), 2, "{}", stdout(&out));
    assert!(
        stderr(&out).contains(".openwop-validate.yaml")
            && stderr(&out).contains(".openwop-validate.yml"),
        "{}",
        stderr(&out)
    );
}

/// A file named absolutely, with `//` or `/./`, is the file the baseline recorded as
/// `bl/a.json`, and named twice it is checked once.
#[test]
fn a_path_is_one_file_however_it_is_written() {
    let dir = tempfile::tempdir().expect("dir");
    // The working directory as the process sees it (no symbolic link in it).
    let root = dir.path().canonicalize().expect("canonical");
    std::fs::create_dir_all(root.join("bl")).expect("mkdir");
    std::fs::copy(overdue(), root.join("bl/a.json")).expect("copy");
    let run = |args: &[&str]| validate_in(&root, args);
    let adopted = run(&["--now", NOW, "--write-baseline", "base.json", "bl/a.json"]);
    assert_eq!(code(&adopted), 0, "{}", stdout(&adopted));
    let absolute = format!("{}/bl/a.json", root.display());
    for named in [
        absolute.as_str(),
        "bl//a.json",
        "bl/./a.json",
        "./bl/a.json",
    ] {
        let out = run(&[
            "--now",
            NOW,
            "--baseline",
            "base.json",
            "--strict-baseline",
            named,
        ]);
        assert_eq!(code(&out), 0, "{named}: {}", stdout(&out));
        assert!(
            stdout(&out).contains("0 findings, 1 known in the baseline"),
            "{named}: {}",
            stdout(&out)
        );
    }
    let out = run(&[
        "--now",
        NOW,
        "--format",
        "json",
        "bl/a.json",
        &absolute,
        "bl//a.json",
    ]);
    let findings: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let paths: Vec<&str> = findings
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|f| f["path"].as_str())
        .collect();
    assert_eq!(paths, ["bl/a.json"], "checked once, named one way");
}

/// A document that cannot be read or parsed today was not checked: its baseline entries
/// are not stale (`--strict-baseline` does not fail on them), and a baseline rewritten
/// meanwhile keeps them.
#[test]
fn a_broken_documents_baseline_entries_are_neither_stale_nor_dropped() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::copy(overdue(), dir.path().join("a.json")).expect("copy");
    std::fs::copy(
        vector("discovery/invalid/discovery.no-grpc.json"),
        dir.path().join("b.json"),
    )
    .expect("copy");
    let run = |args: &[&str]| validate_in(dir.path(), args);
    let adopt = [
        "--now",
        NOW,
        "--write-baseline",
        "base.json",
        "a.json",
        "b.json",
    ];
    assert_eq!(code(&run(&adopt)), 0);
    let recorded = std::fs::read_to_string(dir.path().join("base.json")).expect("baseline");
    assert!(recorded.contains("\"b.json\""), "{recorded}");

    std::fs::write(dir.path().join("b.json"), "{ broken").expect("write");
    let strict = [
        "--now",
        NOW,
        "--baseline",
        "base.json",
        "--strict-baseline",
        "a.json",
        "b.json",
    ];
    let out = run(&strict);
    assert_eq!(code(&out), 2, "b.json cannot be parsed: {}", stdout(&out));
    assert!(
        !stdout(&out).contains("no longer occurs"),
        "{}",
        stdout(&out)
    );
    assert!(
        !stderr(&out).contains("no longer found"),
        "{}",
        stderr(&out)
    );

    // Rewritten while b.json is broken (the file being rewritten is the old baseline):
    // b.json's entries are kept as they were.
    let out = run(&adopt);
    assert_eq!(code(&out), 2, "{}", stdout(&out));
    let rewritten = std::fs::read_to_string(dir.path().join("base.json")).expect("baseline");
    assert_eq!(rewritten, recorded);

    // b.json repaired as it was: known again, nothing stale.
    std::fs::copy(
        vector("discovery/invalid/discovery.no-grpc.json"),
        dir.path().join("b.json"),
    )
    .expect("copy");
    let out = run(&strict);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
}

/// A quoted pattern does not skip what it cannot check: a match whose name is not UTF-8
/// (or a broken symbolic link) is an `input.unreadable` finding, beside the files checked.
#[cfg(unix)]
#[test]
fn a_pattern_reports_the_matches_it_cannot_check() {
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().expect("dir");
    std::fs::copy(valid(), dir.path().join("good.json")).expect("copy");
    let odd = std::ffi::OsStr::from_bytes(b"bad\xff.json");
    std::fs::copy(valid(), dir.path().join(odd)).expect("copy");
    std::os::unix::fs::symlink("nowhere.json", dir.path().join("gone.json")).expect("symlink");
    let out = validate_in(dir.path(), &["--now", NOW, "*.json"]);
    assert_eq!(code(&out), 2, "{}", stdout(&out));
    let text = stdout(&out);
    assert!(
        text.contains("bad\u{fffd}.json:1:1: error: input.unreadable: matches `*.json` but its path is not UTF-8"),
        "{text}"
    );
    assert!(
        text.contains(
            "gone.json:1:1: error: input.unreadable: matches `*.json` but cannot be read: "
        ),
        "{text}"
    );
    assert!(
        text.ends_with("3 documents, 2 invalid, 2 findings (2 errors, 0 warnings), 2 unreadable\n"),
        "{text}"
    );
}

/// GitHub drops a step summary over 1 MiB whole: the table stops at 1,000 findings and
/// says how many more there are.
#[test]
fn the_job_summary_is_capped() {
    let dir = tempfile::tempdir().expect("dir");
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(valid()).expect("read")).expect("JSON");
    let members = doc.as_object_mut().expect("object");
    for i in 0..1_200 {
        members.insert(format!("unknown{i}"), Value::from(i));
    }
    std::fs::write(
        dir.path().join("big.json"),
        serde_json::to_string_pretty(&doc).expect("JSON"),
    )
    .expect("write");
    let summary = dir.path().join("summary.md");
    let out = Command::new(env!("CARGO_BIN_EXE_openwop-validate"))
        .current_dir(dir.path())
        .env("GITHUB_STEP_SUMMARY", &summary)
        .args(["--now", NOW, "--format", "github", "big.json"])
        .output()
        .expect("runs");
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert_eq!(stdout(&out).matches("::error ").count(), 1_200);
    let table = std::fs::read_to_string(&summary).expect("summary");
    assert_eq!(table.matches("\n| big.json | ").count(), 1_000, "{table}");
    assert!(
        table.contains("\n… 200 more findings not shown; see the SARIF/JSON output\n"),
        "{table}"
    );
}

/// The fingerprints of a SARIF report, sorted.
fn fingerprints(sarif: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(sarif).expect("sarif");
    let log: Value = serde_json::from_str(&text).expect("sarif is JSON");
    let mut all: Vec<String> = log["runs"][0]["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| r["partialFingerprints"]["openwopValidate/v2"].to_string())
        .collect();
    all.sort();
    all
}

/// A finding keeps its identity in a baseline and in SARIF when text beside it changes: a
/// line added above a member named twice (its message named the lines), or a date bumped
/// inside an object a schema finding is about (its message quoted the object whole).
#[test]
fn a_known_finding_stays_known_when_the_text_around_it_changes() {
    let dir = tempfile::tempdir().expect("dir");
    let twice = "{\n  \"protocolVersions\": [\"2.0\"],\n  \"preferredVersion\": \"2.0\",\n  \"preferredVersion\": \"2.0\"\n}\n";
    std::fs::write(dir.path().join("twice.json"), twice).expect("write");
    let object = dir.path().join("object.json");
    std::fs::copy(
        vector("discovery/invalid/schema--stable-with-until.json"),
        &object,
    )
    .expect("copy");
    let run = |args: &[&str]| validate_in(dir.path(), args);
    let docs = ["twice.json", "object.json"];
    let out = run(&[&["--now", NOW, "--format", "sarif=before.sarif"][..], &docs].concat());
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let adopt = [&["--now", NOW, "--write-baseline", "base.json"][..], &docs].concat();
    assert_eq!(code(&run(&adopt)), 0);

    std::fs::write(dir.path().join("twice.json"), format!("\n{twice}")).expect("write");
    let text = std::fs::read_to_string(&object).expect("read");
    assert!(text.contains("\"refreshedAt\": \"2026-11-20\""));
    std::fs::write(
        &object,
        text.replacen(
            "\"refreshedAt\": \"2026-11-20\"",
            "\"refreshedAt\": \"2026-11-30\"",
            1,
        ),
    )
    .expect("write");

    let out = run(&[&["--now", NOW, "--format", "sarif=after.sarif"][..], &docs].concat());
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert_eq!(
        fingerprints(&dir.path().join("before.sarif")),
        fingerprints(&dir.path().join("after.sarif")),
        "the same alerts"
    );
    let strict = [
        &["--now", NOW, "--baseline", "base.json", "--strict-baseline"][..],
        &docs,
    ]
    .concat();
    let out = run(&strict);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
}

/// The README's adoption with a config file: `baseline:` names a file not written yet, and
/// `--write-baseline` writes it, even when a document cannot be read (whose findings are
/// reported, as without the config).
#[test]
fn adopting_writes_the_configured_baseline_even_beside_a_broken_document() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::copy(overdue(), dir.path().join("a.json")).expect("copy");
    std::fs::write(dir.path().join("broken.json"), "{").expect("write");
    std::fs::write(
        dir.path().join(".openwop-validate.yaml"),
        "baseline: base.json\n",
    )
    .expect("config");
    let out = validate_in(
        dir.path(),
        &[
            "--now",
            NOW,
            "--write-baseline",
            "base.json",
            "a.json",
            "broken.json",
        ],
    );
    assert_eq!(
        code(&out),
        2,
        "broken.json: {}{}",
        stdout(&out),
        stderr(&out)
    );
    assert!(stdout(&out).contains("broken.json:1:"), "{}", stdout(&out));
    let written = std::fs::read_to_string(dir.path().join("base.json")).expect("written");
    assert!(written.contains("\"a.json\""), "{written}");

    // A configured baseline that is not there, without --write-baseline, says how to make it.
    std::fs::remove_file(dir.path().join("base.json")).expect("remove");
    let out = validate_in(dir.path(), &["--now", NOW, "a.json"]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("write it first with --write-baseline")
            && stderr(&out).trim_end().ends_with("base.json"),
        "{}",
        stderr(&out)
    );
}

/// A rule turned off looked for nothing: its baseline entries are not stale, and a baseline
/// rewritten meanwhile keeps them for when it is on again.
#[test]
fn a_rule_turned_off_keeps_its_baseline_entries() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::copy(overdue(), dir.path().join("a.json")).expect("copy");
    let run = |args: &[&str]| validate_in(dir.path(), args);
    let rule = "discovery.refresh-overdue";
    assert_eq!(
        code(&run(&[
            "--now",
            NOW,
            "--write-baseline",
            "base.json",
            "a.json"
        ])),
        0
    );
    let recorded = std::fs::read_to_string(dir.path().join("base.json")).expect("baseline");
    assert!(recorded.contains(rule), "{recorded}");
    let off = format!("{rule}=off");
    let strict = [
        "--now",
        NOW,
        "--baseline",
        "base.json",
        "--strict-baseline",
        "--rule",
        &off,
        "a.json",
    ];
    let out = run(&strict);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));

    let rewrite = [
        "--now",
        NOW,
        "--write-baseline",
        "base.json",
        "--rule",
        &off,
        "a.json",
    ];
    assert_eq!(code(&run(&rewrite)), 0);
    let rewritten = std::fs::read_to_string(dir.path().join("base.json")).expect("baseline");
    assert_eq!(rewritten, recorded);
    let on = [
        "--now",
        NOW,
        "--baseline",
        "base.json",
        "--strict-baseline",
        "a.json",
    ];
    assert_eq!(code(&run(&on)), 0);
}

/// A baseline saved with a byte order mark (an editor on Windows) is read as documents and
/// config files are.
#[test]
fn a_baseline_with_a_byte_order_mark_is_read() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::copy(overdue(), dir.path().join("a.json")).expect("copy");
    let run = |args: &[&str]| validate_in(dir.path(), args);
    assert_eq!(
        code(&run(&[
            "--now",
            NOW,
            "--write-baseline",
            "base.json",
            "a.json"
        ])),
        0
    );
    let text = std::fs::read(dir.path().join("base.json")).expect("baseline");
    std::fs::write(
        dir.path().join("base.json"),
        [&b"\xEF\xBB\xBF"[..], &text].concat(),
    )
    .expect("write");
    let out = run(&["--now", NOW, "--baseline", "base.json", "a.json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
}

/// An empty `OPENWOP_VALIDATE_DOCS_URL` (an unset variable in a CI file) is not set: the
/// config file's `docs-url` still applies.
#[test]
fn an_empty_docs_url_variable_leaves_the_config_files() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::copy(overdue(), dir.path().join("a.json")).expect("copy");
    std::fs::write(
        dir.path().join(".openwop-validate.yaml"),
        "docs-url: https://docs.example/rules/\n",
    )
    .expect("config");
    let out = Command::new(env!("CARGO_BIN_EXE_openwop-validate"))
        .current_dir(dir.path())
        .env_remove("GITHUB_STEP_SUMMARY")
        .env("OPENWOP_VALIDATE_DOCS_URL", "")
        .args(["--now", NOW, "--format", "json", "a.json"])
        .output()
        .expect("runs");
    let findings: Value = serde_json::from_slice(&out.stdout).expect("json");
    let docs = findings[0]["docs"].as_str().expect("docs");
    assert!(docs.starts_with("https://docs.example/rules/"), "{docs}");
}

/// A `--discovery` document the schema rejects is said to be so (the card rules read it as
/// it is, and their sentences then speak of what is not there).
#[test]
fn a_discovery_document_that_fails_its_schema_is_said_to() {
    let dir = tempfile::tempdir().expect("dir");
    let mut discovery: Value = serde_json::from_str(
        &std::fs::read_to_string(vector("agent-card/discovery.json")).unwrap(),
    )
    .unwrap();
    discovery["a2a"]["versions"] = Value::String("1.0".into());
    std::fs::write(dir.path().join("d.json"), discovery.to_string()).expect("write");
    std::fs::copy(
        vector("agent-card/valid/host-card.json"),
        dir.path().join("card.json"),
    )
    .expect("copy");
    let out = validate_in(
        dir.path(),
        &["--kind", "agent-card", "--discovery", "d.json", "card.json"],
    );
    assert!(
        stderr(&out).contains("warning: the --discovery document d.json fails its schema"),
        "{}",
        stderr(&out)
    );
    let good = validate_in(
        dir.path(),
        &[
            "--kind",
            "agent-card",
            "--discovery",
            &vector("agent-card/discovery.json"),
            "card.json",
        ],
    );
    assert_eq!(code(&good), 0, "{}", stderr(&good));
    assert!(
        !stderr(&good).contains("fails its schema"),
        "{}",
        stderr(&good)
    );
}

/// Baseline paths are relative to the baseline file's directory: a baseline written at
/// the top of a repository matches from a subdirectory (a config file's `baseline:` found
/// from there), and one written by an earlier release from another directory still
/// matches where its paths name the same files from the working directory.
#[test]
fn a_baseline_matches_from_a_subdirectory() {
    let dir = tempfile::tempdir().expect("dir");
    let docs = dir.path().join("docs");
    std::fs::create_dir(&docs).expect("mkdir");
    std::fs::copy(overdue(), docs.join("a.json")).expect("copy");
    std::fs::write(
        dir.path().join(".openwop-validate.yaml"),
        "baseline: base.json\n",
    )
    .expect("config");
    let adopted = validate_in(
        dir.path(),
        &[
            "--now",
            NOW,
            "--write-baseline",
            "base.json",
            "./docs/a.json",
        ],
    );
    assert_eq!(code(&adopted), 0, "{}", stdout(&adopted));
    let written = std::fs::read_to_string(dir.path().join("base.json")).expect("written");
    assert!(written.contains("\"path\": \"docs/a.json\""), "{written}");
    // From docs/, the configured baseline (found above) knows docs/a.json as a.json.
    let out = validate_in(&docs, &["--now", NOW, "--strict-baseline", "a.json"]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("1 known in the baseline"),
        "{}",
        stdout(&out)
    );
    // An earlier release's baseline, written from docs/ into its parent: `a.json`
    // names no file beside the baseline, but names docs/a.json from docs/.
    std::fs::write(
        dir.path().join("base.json"),
        written.replace("docs/a.json", "a.json"),
    )
    .expect("write");
    let out = validate_in(&docs, &["--now", NOW, "--strict-baseline", "a.json"]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("1 known in the baseline"),
        "{}",
        stdout(&out)
    );
}

/// An entry of a file that no longer exists (deleted or renamed) is stale even though the
/// run does not name the file, and `--strict-baseline` fails on it; an entry of a file
/// that exists and was not named is left alone (a hook checks the changed files only).
#[test]
fn a_deleted_documents_baseline_entries_are_stale() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::copy(overdue(), dir.path().join("a.json")).expect("copy");
    std::fs::copy(overdue(), dir.path().join("b.json")).expect("copy");
    std::fs::copy(valid(), dir.path().join("ok.json")).expect("copy");
    let run = |args: &[&str]| validate_in(dir.path(), args);
    let adopted = run(&[
        "--now",
        NOW,
        "--write-baseline",
        "base.json",
        "a.json",
        "b.json",
    ]);
    assert_eq!(code(&adopted), 0, "{}", stdout(&adopted));
    let strict = [
        "--now",
        NOW,
        "--baseline",
        "base.json",
        "--strict-baseline",
        "ok.json",
    ];
    let out = run(&strict);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    std::fs::rename(dir.path().join("b.json"), dir.path().join("c.json")).expect("rename");
    let out = run(&strict);
    assert_eq!(code(&out), 1, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("b.json: baseline entry discovery.refresh-overdue"),
        "{}",
        stdout(&out)
    );
    assert!(!stdout(&out).contains("a.json"), "{}", stdout(&out));
}

/// The composite action uploads SARIF under a category of its kind (or the `category`
/// input): code scanning replaces a category's alerts with each upload, so a job checking
/// discovery documents and one checking cards under one fixed category overwrote each
/// other's. (`tests/validate/action.sh` runs the steps.)
#[test]
fn the_action_uploads_each_kind_under_its_own_category() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../.github/actions/openwop-validate/action.yml");
    let text = std::fs::read_to_string(&path).expect("action.yml");
    let action: Value = yaml_serde::from_str(&text).expect("YAML");
    assert!(
        action["inputs"]["category"].is_object(),
        "a `category` input"
    );
    assert_eq!(action["inputs"]["category"]["default"], "");
    let steps = action["runs"]["steps"].as_array().expect("steps");
    let upload = steps
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("github/codeql-action/upload-sarif@"))
        })
        .expect("the upload step");
    assert_eq!(
        upload["with"]["category"],
        "${{ steps.validate.outputs.category }}"
    );
    let validate = steps
        .iter()
        .find(|s| s["id"] == "validate")
        .expect("the validate step");
    assert_eq!(validate["env"]["CATEGORY"], "${{ inputs.category }}");
    let run = validate["run"].as_str().expect("run");
    assert!(
        run.contains(r#"echo "category=${CATEGORY:-openwop-validate-$KIND}" >> "$GITHUB_OUTPUT""#),
        "{run}"
    );
}

/// A baseline entry of standard input names no file: it is never "gone", so a strict run
/// over other files does not call it stale.
#[test]
fn a_stdin_baseline_entry_is_never_gone() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::copy(overdue(), dir.path().join("a.json")).expect("copy");
    std::fs::copy(valid(), dir.path().join("b.json")).expect("copy");
    let text = std::fs::read(dir.path().join("a.json")).expect("read");
    let written = Command::new(env!("CARGO_BIN_EXE_openwop-validate"))
        .current_dir(dir.path())
        .env_remove("GITHUB_STEP_SUMMARY")
        .args([
            "--no-config",
            "--now",
            NOW,
            "--write-baseline",
            "sb.json",
            "-",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().expect("stdin").write_all(&text)?;
            child.wait_with_output()
        })
        .expect("runs");
    assert_eq!(code(&written), 0, "{}", stdout(&written));
    let base = std::fs::read_to_string(dir.path().join("sb.json")).expect("written");
    assert!(base.contains("\"path\": \"<stdin>\""), "{base}");
    let out = validate_in(
        dir.path(),
        &[
            "--no-config",
            "--now",
            NOW,
            "--baseline",
            "sb.json",
            "--strict-baseline",
            "b.json",
        ],
    );
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
}

/// Rewriting the baseline over some of the files keeps the entries of the others (a
/// baseline read is scoped to the files checked; so is a rewrite), but drops those of a
/// file that is gone.
#[test]
fn rewriting_the_baseline_over_a_subset_keeps_the_other_files_entries() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::copy(overdue(), dir.path().join("a.json")).expect("copy");
    std::fs::copy(overdue(), dir.path().join("b.json")).expect("copy");
    std::fs::copy(overdue(), dir.path().join("c.json")).expect("copy");
    let run = |args: &[&str]| validate_in(dir.path(), args);
    let write = |files: &[&str]| {
        let mut args = vec!["--no-config", "--now", NOW, "--write-baseline", "base.json"];
        args.extend(files);
        let out = run(&args);
        assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
        std::fs::read_to_string(dir.path().join("base.json")).expect("written")
    };
    let all = write(&["a.json", "b.json", "c.json"]);
    assert_eq!(all.matches("\"path\"").count(), 3, "{all}");
    std::fs::remove_file(dir.path().join("c.json")).expect("remove");
    let some = write(&["a.json"]);
    assert!(some.contains("\"b.json\""), "{some}");
    assert!(!some.contains("\"c.json\""), "c.json is gone: {some}");
    assert_eq!(some.matches("\"path\"").count(), 2, "{some}");
    let out = run(&[
        "--no-config",
        "--now",
        NOW,
        "--baseline",
        "base.json",
        "--strict-baseline",
        "a.json",
        "b.json",
    ]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
}

/// GitHub reads an annotation's `file=` and a SARIF location relative to the repository
/// root: run from a subdirectory (a monorepo job's `working-directory:`), paths are still
/// written from the root (`GITHUB_WORKSPACE`, else the git top level), SARIF says so with
/// `uriBaseId`, and the fingerprint does not change with the working directory.
#[test]
fn ci_formats_name_files_from_the_repository_root() {
    let dir = tempfile::tempdir().expect("dir");
    let repo = std::fs::canonicalize(dir.path()).expect("real path");
    std::fs::create_dir_all(repo.join("site/public/.well-known")).expect("mkdir");
    std::fs::create_dir_all(repo.join(".git")).expect("mkdir");
    std::fs::copy(overdue(), repo.join("site/public/.well-known/openwop")).expect("copy");
    let run = |cwd: &Path, workspace: Option<&Path>, path: &str, sarif: &str| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_openwop-validate"));
        command
            .current_dir(cwd)
            .env_remove("GITHUB_STEP_SUMMARY")
            .env_remove("GITHUB_WORKSPACE")
            .args(["--no-config", "--now", NOW, "--format", "github"])
            .arg("--format")
            .arg(format!("sarif={}", repo.join(sarif).display()))
            .arg(path);
        if let Some(w) = workspace {
            command.env("GITHUB_WORKSPACE", w);
        }
        let out = command.output().expect("runs");
        let log: Value =
            serde_json::from_str(&std::fs::read_to_string(repo.join(sarif)).expect("sarif"))
                .expect("JSON");
        (stdout(&out), log)
    };
    let site = repo.join("site");
    let want_file = "::error file=site/public/.well-known/openwop,";
    for workspace in [Some(repo.as_path()), None] {
        let (github, log) = run(&site, workspace, "public/.well-known/openwop", "sub.sarif");
        assert!(github.contains(want_file), "{github}");
        let location = &log["runs"][0]["results"][0]["locations"][0]["physicalLocation"];
        assert_eq!(
            location["artifactLocation"]["uri"], "site/public/.well-known/openwop",
            "{location}"
        );
        assert_eq!(location["artifactLocation"]["uriBaseId"], "%SRCROOT%");
        assert_eq!(
            log["runs"][0]["originalUriBaseIds"]["%SRCROOT%"]["uri"],
            format!("file://{}/", repo.display())
        );
    }
    // JUnit and the markdown table (a job summary) name it from the root too.
    let out = Command::new(env!("CARGO_BIN_EXE_openwop-validate"))
        .current_dir(&site)
        .env("GITHUB_WORKSPACE", &repo)
        .env_remove("GITHUB_STEP_SUMMARY")
        .args(["--no-config", "--now", NOW, "--format", "markdown"])
        .arg("--format")
        .arg(format!("junit={}", repo.join("junit.xml").display()))
        .arg("public/.well-known/openwop")
        .output()
        .expect("runs");
    assert!(
        stdout(&out).contains("| site/public/.well-known/openwop | "),
        "{}",
        stdout(&out)
    );
    let junit = std::fs::read_to_string(repo.join("junit.xml")).expect("junit");
    assert!(
        junit.contains("classname=\"site/public/.well-known/openwop\""),
        "{junit}"
    );
    let (_, from_sub) = run(&site, Some(&repo), "public/.well-known/openwop", "a.sarif");
    let (_, from_top) = run(
        &repo,
        Some(&repo),
        "site/public/.well-known/openwop",
        "b.sarif",
    );
    let print = |log: &Value| log["runs"][0]["results"][0]["partialFingerprints"].clone();
    assert_eq!(print(&from_sub), print(&from_top));
    // The human log keeps the path as it was typed.
    let out = Command::new(env!("CARGO_BIN_EXE_openwop-validate"))
        .current_dir(&site)
        .env("GITHUB_WORKSPACE", &repo)
        .args(["--no-config", "--now", NOW, "public/.well-known/openwop"])
        .output()
        .expect("runs");
    assert!(
        stdout(&out).starts_with("public/.well-known/openwop:"),
        "{}",
        stdout(&out)
    );
}

/// Two outputs to one file, or an output onto an input, are refused before anything is
/// written (exit 2); a report's missing directory is made.
#[test]
fn colliding_outputs_are_refused_and_a_reports_directory_is_made() {
    let dir = tempfile::tempdir().expect("dir");
    std::fs::copy(overdue(), dir.path().join("bad.json")).expect("copy");
    let before = std::fs::read(dir.path().join("bad.json")).expect("read");
    let run = |args: &[&str]| {
        let mut all = vec!["--no-config", "--now", NOW];
        all.extend(args);
        validate_in(dir.path(), &all)
    };
    for (args, says) in [
        (
            &[
                "--format",
                "json=r.json",
                "--format",
                "sarif=./r.json",
                "bad.json",
            ][..],
            "--format json=r.json and --format sarif=./r.json write the same file",
        ),
        (
            &["--format", "sarif=bad.json", "bad.json"][..],
            "--format sarif=bad.json would overwrite the input bad.json",
        ),
        (
            &[
                "--format",
                "junit=b.json",
                "--write-baseline",
                "b.json",
                "bad.json",
            ][..],
            "--format junit=b.json and --write-baseline b.json write the same file",
        ),
        (
            &["--write-baseline", "bad.json", "bad.json"][..],
            "--write-baseline bad.json would overwrite the input bad.json",
        ),
        (
            &["--format", "sarif=bad.json", "*.json"][..],
            "would overwrite the input",
        ),
    ] {
        let out = run(args);
        assert_eq!(code(&out), 2, "{args:?}: {}", stdout(&out));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
        assert_eq!(stdout(&out), "", "nothing is printed before the refusal");
        assert!(!dir.path().join("r.json").exists());
        assert!(!dir.path().join("b.json").exists());
    }
    assert_eq!(
        std::fs::read(dir.path().join("bad.json")).expect("read"),
        before
    );

    let out = run(&["--format", "sarif=nodir/deeper/x.sarif", "bad.json"]);
    assert_eq!(code(&out), 1, "{}{}", stdout(&out), stderr(&out));
    assert!(dir.path().join("nodir/deeper/x.sarif").is_file());
}

/// A quoted pattern's walk skips .git and node_modules, `--ignore` and the config file's
/// `ignore:` leave out what they match, and a file named as it is is always checked.
#[test]
fn patterns_skip_git_and_node_modules_and_what_is_ignored() {
    let dir = tempfile::tempdir().expect("dir");
    for rel in [
        "a.json",
        ".git/x.json",
        "node_modules/p/x.json",
        "vendor/v.json",
        "site/sub/b.json",
    ] {
        let path = dir.path().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::copy(overdue(), &path).expect("copy");
    }
    let checked = |cwd: &Path, args: &[&str]| -> (i32, Vec<String>, String) {
        let mut all = vec!["--now", NOW, "--format", "json"];
        all.extend(args);
        let out = validate_in(cwd, &all);
        let found: Vec<Value> = serde_json::from_str(&stdout(&out)).expect("JSON");
        let mut paths: Vec<String> = found
            .iter()
            .map(|f| f["path"].as_str().unwrap_or_default().to_owned())
            .collect();
        paths.dedup();
        (code(&out), paths, stderr(&out))
    };
    let (status, paths, _) = checked(dir.path(), &["--no-config", "**/*.json"]);
    assert_eq!(status, 1);
    assert_eq!(paths, ["a.json", "site/sub/b.json", "vendor/v.json"]);
    let (_, paths, _) = checked(
        dir.path(),
        &[
            "--no-config",
            "--ignore",
            "vendor",
            "--ignore",
            "**/b.json",
            "**/*.json",
        ],
    );
    assert_eq!(paths, ["a.json"]);
    // Named as it is, a file under node_modules is checked.
    let (_, paths, _) = checked(dir.path(), &["--no-config", "node_modules/p/x.json"]);
    assert_eq!(paths, ["node_modules/p/x.json"]);
    // The config file's patterns are relative to it, from a subdirectory too.
    std::fs::write(
        dir.path().join(".openwop-validate.yaml"),
        "ignore: [site/sub]\n",
    )
    .expect("write");
    std::fs::copy(overdue(), dir.path().join("site/c.json")).expect("copy");
    let (_, paths, _) = checked(&dir.path().join("site"), &["**/*.json"]);
    assert_eq!(paths, ["c.json"]);
    // A pattern all of whose files are ignored checks nothing: an input that could not
    // be checked, not a silent pass.
    let out = validate_in(&dir.path().join("site"), &["--now", NOW, "sub/*.json"]);
    assert_eq!(code(&out), 2);
    assert!(
        stdout(&out).contains(
            "sub/*.json:1:1: error: input.unreadable: every file this pattern matches is ignored"
        ),
        "{}",
        stdout(&out)
    );
}

/// `--max-warnings -1` is no limit (as ESLint reads it), also over the config file's; a
/// document with warnings alone is not counted invalid; a card run's `--discovery`
/// document is counted whether or not it has findings.
#[test]
fn max_warnings_minus_one_and_the_summarys_counts() {
    let bad = overdue();
    let warn = "discovery.refresh-overdue=warning";
    let dir = tempfile::tempdir().expect("dir");
    std::fs::write(
        dir.path().join(".openwop-validate.yaml"),
        "max-warnings: 0\n",
    )
    .expect("write");
    let out = validate_in(dir.path(), &["--now", NOW, "--rule", warn, &bad]);
    assert_eq!(code(&out), 1, "the config's limit: {}", stdout(&out));
    let out = validate_in(
        dir.path(),
        &["--now", NOW, "--rule", warn, "--max-warnings", "-1", &bad],
    );
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).ends_with(
            "1 document, 0 invalid, 1 with warnings only, 1 finding (0 errors, 1 warning)\n"
        ),
        "{}",
        stdout(&out)
    );
    std::fs::write(
        dir.path().join(".openwop-validate.yaml"),
        "max-warnings: -1\n",
    )
    .expect("write");
    let out = validate_in(dir.path(), &["--now", NOW, "--rule", warn, &bad]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let out = validate(&["--max-warnings", "-2", &bad]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("-1 for no limit"), "{}", stderr(&out));

    let card = vector("agent-card/valid/host-card.json");
    let discovery = vector("agent-card/discovery.json");
    let out = validate(&[
        "--now",
        NOW,
        "--kind",
        "agent-card",
        "--discovery",
        &discovery,
        &card,
    ]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).ends_with("2 documents, 0 invalid, 0 findings\n"),
        "{}",
        stdout(&out)
    );
}
