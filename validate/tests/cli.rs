//! `openwop-validate` (the same command as `openwop validate`) as a user and a CI script
//! meet it: exit codes, findings with positions, standard input, unreadable and malformed
//! files as findings, and URLs served by a local server.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::thread;

use serde_json::Value;

const NOW: &str = "2026-12-01";

fn vector(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/vectors")
        .join(rel)
}

fn arg(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// `path` as the CI formats name it: from the repository root this process finds.
fn repo_path(path: &str) -> String {
    openwop_validate::load::Root::find().repo_path(path)
}

fn openwop(args: &[&str]) -> Output {
    openwop_with_stdin(args, None)
}

fn openwop_with_stdin(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_openwop-validate"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the openwop-validate binary starts");
    let mut pipe = child.stdin.take().expect("stdin is piped");
    let input = stdin.unwrap_or_default().to_vec();
    let writer = thread::spawn(move || {
        let _ = pipe.write_all(&input);
    });
    let output = child.wait_with_output().expect("openwop runs to the end");
    let _ = writer.join();
    output
}

/// `LINE:COL` of the first value after `marker` in the file at `path` (1-based, columns in
/// characters), counted here independently of the CLI's own locator.
fn position(path: &str, marker: &str) -> String {
    let text = std::fs::read_to_string(path).expect("vector");
    let at = text.find(marker).expect("marker in the vector") + marker.len();
    let before = &text[..at];
    let line = before.matches('\n').count() + 1;
    let column = before[before.rfind('\n').map_or(0, |i| i + 1)..]
        .chars()
        .count()
        + 1;
    format!("{line}:{column}")
}

fn code(output: &Output) -> i32 {
    output.status.code().unwrap_or(-1)
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn valid_documents_exit_0_with_a_summary() {
    let a = arg(&vector("discovery/valid/a2a-and-mcp.json"));
    let b = arg(&vector("discovery/valid/minimal.json"));
    let out = openwop(&["--now", NOW, &a, &b]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert_eq!(stdout(&out), "2 documents, 0 invalid, 0 findings\n");
}

#[test]
fn an_invalid_document_exits_1_with_one_line_per_finding() {
    let valid = arg(&vector("discovery/valid/a2a-and-mcp.json"));
    let bad = arg(&vector(
        "discovery/invalid/discovery.profile-missing-feature--no-features.json",
    ));
    let out = openwop(&["--now", NOW, &valid, &bad]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    for line in &lines[..3] {
        // PATH:LINE:COL: SEVERITY: RULE: sentence, the position being the `mcp` facet's.
        let prefix = format!(
            "{bad}:{}: error: discovery.profile-missing-feature: the profile \"mcp-2026-07-28\" requires the feature ",
            position(&bad, "\"mcp\": ")
        );
        assert!(line.starts_with(&prefix), "{line}");
    }
    assert_eq!(
        lines[3],
        "2 documents, 1 invalid, 3 findings (3 errors, 0 warnings)"
    );
}

/// A rule that restates a schema failure is the one finding of its defect: the member the
/// schema does not allow is `discovery.no-supported-transports`'s, not also the schema's.
#[test]
fn the_specific_rule_is_the_one_finding_of_its_defect() {
    let bad = arg(&vector(
        "discovery/invalid/discovery.no-supported-transports.json",
    ));
    let out = openwop(&["--now", NOW, &bad]);
    assert_eq!(code(&out), 1);
    let text = stdout(&out);
    let first = text.lines().next().unwrap_or_default();
    assert!(
        first.starts_with(&format!(
            "{bad}:{}: error: discovery.no-supported-transports: remove `supportedTransports`",
            position(&bad, "\"supportedTransports\": ")
        )),
        "{text}"
    );
    assert!(!text.contains(": schema: "), "{text}");
    assert!(
        text.ends_with("1 document, 1 invalid, 1 finding (1 error, 0 warnings)\n"),
        "{text}"
    );
}

#[test]
fn a_legacy_profile_reads_as_one_finding_not_a_list_of_every_facet() {
    let bad = arg(&vector(
        "discovery/invalid/discovery.no-legacy-profile--a2a.json",
    ));
    let out = openwop(&["--now", NOW, &bad]);
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(
        lines[0].starts_with(&format!("{bad}:"))
            && lines[0].contains(": discovery.no-legacy-profile: "),
        "{text}"
    );
    assert!(!text.contains("Unevaluated properties"), "{text}");
    // With the rule off, the schema still says it: a defect never vanishes.
    let out = openwop(&[
        "--now",
        NOW,
        "--rule",
        "discovery.no-legacy-profile=off",
        &bad,
    ]);
    assert_eq!(code(&out), 1, "{}", stdout(&out));
    assert!(stdout(&out).contains(": schema: "), "{}", stdout(&out));
}

/// A missing or mistyped required member is one finding, the rule's, in every format and
/// in a baseline; with the rule off the schema's finding is reported instead. A baseline
/// written when both were reported still passes `--strict-baseline`: the schema entry's
/// defect is still there, so it is not stale.
#[test]
fn a_missing_or_mistyped_required_member_is_one_finding() {
    let missing = arg(&vector(
        "agent-card/invalid/agent-card.required-field--name.json",
    ));
    let mistyped = arg(&vector(
        "agent-card/invalid/agent-card.required-field--version-type.json",
    ));
    let out = openwop(&["--kind", "agent-card", &missing, &mistyped]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!(
            "{missing}:1:1: error: agent-card.required-field: add `name` (a non-empty string): A2A 1.0 requires it on the agent card\n\
             {mistyped}:{}: error: agent-card.required-field: make `version` a non-empty string\n\
             2 documents, 2 invalid, 2 findings (2 errors, 0 warnings)\n",
            position(&mistyped, "\"version\": ")
        )
    );
    let sarif = openwop(&["--kind", "agent-card", "--format", "sarif", &missing]);
    let sarif: Value = serde_json::from_slice(&sarif.stdout).expect("SARIF");
    let results = sarif["runs"][0]["results"].as_array().expect("results");
    assert_eq!(results.len(), 1, "{results:#?}");
    assert_eq!(results[0]["ruleId"], "agent-card.required-field");

    for (rule, doc) in [
        ("agent-card.required-field", &missing),
        ("agent-card.required-field", &mistyped),
    ] {
        let off = format!("{rule}=off");
        let out = openwop(&["--kind", "agent-card", "--rule", &off, doc]);
        assert_eq!(code(&out), 1, "{}", stdout(&out));
        let text = stdout(&out);
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(
            text.lines()
                .next()
                .unwrap_or_default()
                .contains(": error: schema: "),
            "{text}"
        );
    }

    let discovery = arg(&vector(
        "discovery/invalid/discovery.required-field--a2a-versions.json",
    ));
    let out = openwop(&["--now", NOW, &discovery]);
    assert_eq!(
        stdout(&out),
        format!(
            "{discovery}:{}: error: discovery.required-field: add `versions` to the `a2a` facet (the versions this host offers, e.g. [\"1.0\"]); every host that speaks a2a must advertise it\n\
             1 document, 1 invalid, 1 finding (1 error, 0 warnings)\n",
            position(&discovery, "\"a2a\": ")
        )
    );

    // The baseline an earlier release wrote, with the schema's entry beside the rule's.
    let dir = tempfile::tempdir().expect("dir");
    let baseline = dir.path().join("baseline.json");
    let entry = |rule: &str, pointer: &str, message: &str| serde_json::json!({"path": missing, "rule": rule, "pointer": pointer, "message": message, "count": 1});
    let written = serde_json::json!({"version": 2, "findings": [
        entry("agent-card.required-field", "/name", "add `name` (a non-empty string): A2A 1.0 requires it on the agent card"),
        entry("schema", "", "\"name\" is a required property"),
    ]});
    std::fs::write(&baseline, written.to_string()).expect("write");
    let out = openwop(&[
        "--kind",
        "agent-card",
        "--no-config",
        "--baseline",
        &arg(&baseline),
        "--strict-baseline",
        &missing,
    ]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert_eq!(
        stdout(&out),
        "1 document, 0 invalid, 0 findings, 1 known in the baseline\n"
    );
}

#[test]
fn json_output_is_an_array_of_findings_with_positions_and_severities() {
    let bad = arg(&vector(
        "discovery/invalid/discovery.refresh-overdue--a2a.json",
    ));
    let valid = arg(&vector("discovery/valid/minimal.json"));
    let out = openwop(&["--format", "json", "--now", NOW, &valid, &bad]);
    assert_eq!(code(&out), 1);
    let findings: Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    let findings = findings.as_array().expect("an array");
    assert_eq!(findings.len(), 1, "{findings:#?}");
    let keys: Vec<&str> = findings[0]
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "path", "line", "column", "severity", "rule", "pointer", "message", "docs"
        ]
    );
    assert_eq!(findings[0]["severity"], "error");
    let docs = findings[0]["docs"].as_str().unwrap_or_default();
    assert!(
        docs.ends_with("generated/RULES.md#discovery.refresh-overdue"),
        "{docs}"
    );
    let at = position(&bad, "\"refreshedAt\": ");
    assert_eq!(
        format!("{}:{}", findings[0]["line"], findings[0]["column"]),
        at
    );
    assert_eq!(findings[0]["path"], bad.as_str());
    assert_eq!(findings[0]["pointer"], "/a2a/refreshedAt");
    assert_eq!(findings[0]["rule"], "discovery.refresh-overdue");

    let clean = openwop(&["--format", "json", "--now", NOW, &valid]);
    assert_eq!(code(&clean), 0);
    assert_eq!(
        serde_json::from_slice::<Value>(&clean.stdout).ok(),
        Some(Value::Array(vec![]))
    );
}

#[test]
fn output_is_the_same_on_every_run() {
    let paths: Vec<String> = [
        "discovery.no-grpc",
        "discovery.required-field--mcp-revisions",
        "schema--stable-with-until",
    ]
    .iter()
    .map(|n| arg(&vector(&format!("discovery/invalid/{n}.json"))))
    .collect();
    let mut args = vec!["--format", "json", "--now", NOW];
    args.extend(paths.iter().map(String::as_str));
    let first = openwop(&args);
    let second = openwop(&args);
    assert_eq!(first.stdout, second.stdout);
}

#[test]
fn the_refresh_rules_follow_now() {
    let doc = arg(&vector("discovery/valid/a2a-and-mcp.json"));
    assert_eq!(code(&openwop(&["--now", "2026-11-20", &doc])), 0);
    // One day of slack: a `refreshedAt` of tomorrow (UTC) is a team east of UTC writing
    // its own today; two days ahead is in the future.
    assert_eq!(code(&openwop(&["--now", "2026-11-19", &doc])), 0);
    let early = openwop(&["--now", "2026-11-18", &doc]);
    assert_eq!(code(&early), 1);
    assert!(
        stdout(&early).contains("discovery.refreshed-in-future"),
        "{}",
        stdout(&early)
    );
    let late = openwop(&["--now", "2027-03-01", &doc]);
    assert!(
        stdout(&late).contains("discovery.refresh-overdue"),
        "{}",
        stdout(&late)
    );
}

#[test]
fn standard_input_is_read_for_a_dash() {
    let text = std::fs::read(vector("discovery/invalid/discovery.no-grpc.json")).expect("vector");
    let out = openwop_with_stdin(&["--now", NOW, "-"], Some(&text));
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("<stdin>:") && stdout(&out).contains(": discovery.no-grpc: "),
        "{}",
        stdout(&out)
    );

    // Named, standard input reads as that file in every format (a staged file piped in).
    let named = ["--now", NOW, "--stdin-filename", "public/doc.json"];
    let out = openwop_with_stdin(&[&named[..], &["-"]].concat(), Some(&text));
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("public/doc.json:"),
        "{}",
        stdout(&out)
    );
    let sarif = openwop_with_stdin(
        &[&named[..], &["--format", "sarif", "-"]].concat(),
        Some(&text),
    );
    let sarif: Value = serde_json::from_slice(&sarif.stdout).expect("SARIF");
    // Relative to the repository root, as code scanning reads it (the test runs in
    // `validate/`).
    let location = &sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"];
    assert_eq!(
        location["artifactLocation"]["uri"], "validate/public/doc.json",
        "{location}"
    );
    assert_eq!(location["artifactLocation"]["uriBaseId"], "%SRCROOT%");
    let out = openwop(&[
        "--stdin-filename",
        "x.json",
        &arg(&vector("discovery/invalid/discovery.no-grpc.json")),
    ]);
    assert_eq!(code(&out), 2, "only with `-`");
    assert!(
        stderr(&out).contains("--stdin-filename"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn bad_json_is_a_finding_that_says_where_and_exits_2() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("broken.json");
    std::fs::write(
        &path,
        "{\n  \"protocolVersions\": [\"2.0\"],\n  \"preferredVersion\": \"2.0\",,\n}\n",
    )
    .expect("write");
    let out = openwop(&[&arg(&path)]);
    assert_eq!(code(&out), 2);
    let text = stdout(&out);
    assert!(
        text.starts_with(&format!(
            "{}:3:29: error: input.malformed: not valid JSON: key must be a string\n",
            arg(&path)
        )),
        "{text}"
    );
}

#[test]
fn an_unreadable_file_exits_2_even_beside_valid_ones() {
    let valid = arg(&vector("discovery/valid/minimal.json"));
    let out = openwop(&[&valid, "/nonexistent/discovery.json"]);
    assert_eq!(code(&out), 2);
    let text = stdout(&out);
    assert!(
        text.starts_with(
            "/nonexistent/discovery.json:1:1: error: input.unreadable: cannot read the file: "
        ),
        "{text}"
    );
    assert!(
        text.ends_with("2 documents, 1 invalid, 1 finding (1 error, 0 warnings), 1 unreadable\n"),
        "{text}"
    );
}

#[test]
fn usage_errors_exit_2() {
    let doc = arg(&vector("discovery/valid/minimal.json"));
    assert_eq!(code(&openwop(&[])), 2, "a PATH is required");
    assert_eq!(code(&openwop(&["--now", "2026-02-30", &doc])), 2);
    assert_eq!(code(&openwop(&["--kind", "nonsense", &doc])), 2);
    let out = openwop(&["--discovery", &doc, &doc]);
    assert_eq!(code(&out), 2);
    assert!(
        stderr(&out).contains("--discovery only applies to --kind agent-card"),
        "{}",
        stderr(&out)
    );
    assert_eq!(code(&openwop(&["-", "-"])), 2);
}

#[test]
fn help_teaches_with_examples() {
    let out = openwop(&["--help"]);
    assert_eq!(code(&out), 0);
    assert!(
        stdout(&out).contains("openwop-validate --kind agent-card --discovery"),
        "{}",
        stdout(&out)
    );
    for taught in [
        "--format sarif=",
        "--write-baseline",
        "--explain discovery.no-grpc",
        ".openwop-validate.yaml",
        "Exit status",
    ] {
        assert!(stdout(&out).contains(taught), "{taught}: {}", stdout(&out));
    }
}

#[test]
fn agent_cards_are_checked_against_the_discovery_document() {
    let discovery = arg(&vector("agent-card/discovery.json"));
    let good = arg(&vector("agent-card/valid/host-card.json"));
    let bad = arg(&vector(
        "agent-card/invalid/agent-card.extended-card-declared.json",
    ));
    let out = openwop(&["--kind", "agent-card", "--discovery", &discovery, &good]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    let out = openwop(&["--kind", "agent-card", "--discovery", &discovery, &bad]);
    assert_eq!(code(&out), 1);
    assert!(
        stdout(&out).contains(&format!(
            "{bad}:{}: error: agent-card.extended-card-declared: ",
            position(&bad, "\"extendedAgentCard\": ")
        )),
        "{}",
        stdout(&out)
    );
    // Alone, the same card shows nothing wrong: the rule needs the facet.
    assert_eq!(code(&openwop(&["--kind", "agent-card", &bad])), 0);
}

/// Serves each body once, in order, on 127.0.0.1, and reports each request's head.
fn serve(responses: Vec<(&'static str, Vec<u8>)>) -> (String, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let origin = format!("http://{}", listener.local_addr().expect("address"));
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for (status, body) in responses {
            let Ok((stream, _)) = listener.accept() else {
                return;
            };
            let mut reader = BufReader::new(stream);
            let mut head = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                head.push_str(&line);
            }
            let _ = tx.send(head);
            let mut stream = reader.into_inner();
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(&body);
            let mut rest = Vec::new();
            let _ = stream.read_to_end(&mut rest);
        }
    });
    (origin, rx)
}

#[test]
fn a_bare_origin_fetches_the_discovery_path_with_the_version_header() {
    let body = std::fs::read(vector("discovery/valid/a2a-and-mcp.json")).expect("vector");
    let (origin, requests) = serve(vec![("200 OK", body)]);
    let out = openwop(&["--now", NOW, &origin]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let head = requests.recv().expect("one request").to_ascii_lowercase();
    assert!(
        head.starts_with("get /.well-known/openwop http/1.1\r\n"),
        "{head}"
    );
    assert!(head.contains("\r\nopenwop-version: 2.0\r\n"), "{head}");
}

/// An agent card is asked for as A2A 1.0's: without `A2A-Version` an agent answers as to a
/// 0.3 client (A2A 1.0 §3.6.2), and a 0.3 view fails every 1.0 rule.
#[test]
fn an_agent_card_is_fetched_with_the_a2a_version_header() {
    let body = std::fs::read(vector("agent-card/valid/host-card.json")).expect("vector");
    let (origin, requests) = serve(vec![("200 OK", body)]);
    let out = openwop(&["--kind", "agent-card", &origin]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let head = requests.recv().expect("one request").to_ascii_lowercase();
    assert!(
        head.starts_with("get /.well-known/agent-card.json http/1.1\r\n"),
        "{head}"
    );
    assert!(head.contains("\r\na2a-version: 1.0\r\n"), "{head}");
}

#[test]
fn findings_of_a_url_name_the_url_fetched() {
    let body = std::fs::read(vector("discovery/invalid/discovery.no-grpc.json")).expect("vector");
    let (origin, _requests) = serve(vec![("200 OK", body)]);
    let url = format!("{origin}/custom/discovery.json");
    let out = openwop(&["--now", NOW, &url]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with(&format!("{url}:"))
            && stdout(&out).contains(": discovery.no-grpc: "),
        "{}",
        stdout(&out)
    );
}

#[test]
fn an_http_failure_exits_2_and_names_the_url() {
    let (origin, _requests) = serve(vec![("404 Not Found", b"{}".to_vec())]);
    let out = openwop(&[&origin]);
    assert_eq!(code(&out), 2);
    let text = stdout(&out);
    assert!(
        text.starts_with(&format!(
            "{origin}/.well-known/openwop:1:1: error: input.unreadable: cannot fetch it: the server answered HTTP 404"
        )),
        "{text}"
    );
}

/// The catalogue's example of `input.duplicate-member`: the document is checked as read
/// (the last `preferredVersion`, valid), and the member named twice is a finding at the
/// second one, naming both lines.
#[test]
fn a_member_named_twice_is_a_finding() {
    let doc = arg(&vector("input/input.duplicate-member.json"));
    let out = openwop(&["--now", NOW, &doc]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!(
            "{doc}:4:23: error: input.duplicate-member: `preferredVersion` is named 2 times in one object; keep one: this check read the last, here, but another reader may keep the first\n1 document, 1 invalid, 1 finding (1 error, 0 warnings)\n"
        )
    );
    // Its level can be set like any rule's.
    let out = openwop(&["--now", NOW, "--rule", "input.duplicate-member=off", &doc]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));
    // An input rule's cannot.
    let out = openwop(&["--rule", "input.malformed=off", &doc]);
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("cannot be set"), "{}", stderr(&out));
}

/// Runs the binary with its standard error (or output) going where `wire` says, standard
/// input empty.
fn openwop_wired(args: &[&str], wire: impl FnOnce(&mut Command)) -> std::process::ExitStatus {
    let mut command = Command::new(env!("CARGO_BIN_EXE_openwop-validate"));
    command
        .args(args)
        .env_remove("GITHUB_STEP_SUMMARY")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    wire(&mut command);
    command.status().expect("openwop-validate runs")
}

/// A pipe whose reading end is already closed: writing to it fails with a broken pipe.
fn broken_pipe() -> Stdio {
    let (reader, writer) = std::io::pipe().expect("pipe");
    drop(reader);
    Stdio::from(writer)
}

/// Member names that carry a line break with a workflow command after it, a control
/// character XML 1.0 forbids, and ESC: each read as written into the findings' messages.
const HOSTILE: &str = r#"{"protocolVersions":["2.0"],"preferredVersion":"2.0","x\n::stop-commands::abc\n":1,"a\u0001b":2,"c\u001b[31md":3}"#;

#[test]
fn document_text_cannot_break_a_finding_line_a_table_row_or_the_junit_report() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("hostile.json");
    std::fs::write(&path, HOSTILE).expect("write");
    let doc = arg(&path);

    let out = openwop(&["--now", NOW, &doc]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "three findings and the summary: {text}");
    for line in &lines[..3] {
        assert!(line.starts_with(&format!("{doc}:1:")), "{line}");
    }
    assert!(text.contains("'x\\n::stop-commands::abc\\n'"), "{text}");
    assert!(
        text.contains("'a\\u0001b'") && text.contains("'c\\u001b[31md'"),
        "{text}"
    );
    assert!(
        !text.contains('\u{1b}') && !text.contains('\u{1}'),
        "{text}"
    );

    // GitHub's workflow commands: the same one-line escapes, ESC and U+2028 among them
    // (a runner's log is a terminal's; GitHub breaks annotation lines at U+2028).
    let with_separator = dir.path().join("separator.json");
    std::fs::write(&with_separator, HOSTILE.replace("a\\u0001b", "a\\u2028b")).expect("write");
    for path in [doc.clone(), arg(&with_separator)] {
        let out = openwop(&["--now", NOW, "--format", "github", &path]);
        let text = stdout(&out);
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{1}') && !text.contains('\u{2028}'),
            "{text}"
        );
        assert!(text.contains("c\\u001b[31md"), "{text}");
        assert_eq!(
            text.lines().filter(|l| l.starts_with("::error ")).count(),
            3,
            "{text}"
        );
    }
    assert!(
        stdout(&openwop(&[
            "--now",
            NOW,
            "--format",
            "github",
            &arg(&with_separator)
        ]))
        .contains("a\\u2028b"),
    );

    let out = openwop(&["--now", NOW, "--format", "markdown", &doc]);
    let table = stdout(&out);
    let rows: Vec<&str> = table.lines().filter(|l| l.starts_with("| ")).collect();
    assert_eq!(
        rows.len(),
        5,
        "the header, its rule and three rows: {table}"
    );
    assert!(rows.iter().all(|r| r.ends_with(" |")), "{rows:?}");

    let out = openwop(&["--now", NOW, "--format", "junit", &doc]);
    let xml = stdout(&out);
    for forbidden in ['\u{1}', '\u{1b}'] {
        assert!(!xml.contains(forbidden), "{forbidden:?}: {xml}");
    }
    let mut reader = quick_xml::Reader::from_str(&xml);
    let mut failures = 0;
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(quick_xml::events::Event::Start(e)) if e.name().into_inner() == "failure" => {
                failures += 1;
            }
            Ok(_) => {}
            Err(e) => panic!("{e}: {xml}"),
        }
    }
    assert_eq!(failures, 3, "{xml}");
}

/// A closed standard error (`2>&1 | head` that stopped reading) does not turn a run's
/// status into a panic's 101: what goes there (a note, why the run fails, a usage error)
/// only adds to the status.
#[test]
fn a_closed_standard_error_keeps_the_exit_status() {
    let card = arg(&vector("agent-card/valid/host-card.json"));
    let overdue = arg(&vector(
        "discovery/invalid/discovery.refresh-overdue--a2a.json",
    ));
    let wire = |c: &mut Command| {
        c.stderr(broken_pipe());
    };
    // The note that --discovery is missing.
    let status = openwop_wired(&["--kind", "agent-card", &card], wire);
    assert_eq!(status.code(), Some(0), "{status}");
    // `failing: …` lines.
    let args = [
        "--now",
        NOW,
        "--rule",
        "discovery.refresh-overdue=warning",
        "--max-warnings",
        "0",
        "--format",
        "json",
        &overdue,
    ];
    assert_eq!(openwop_wired(&args, wire).code(), Some(1));
    // An error of the run, and one of clap's.
    assert_eq!(
        openwop_wired(&["--discovery", &card, &card], wire).code(),
        Some(2)
    );
    assert_eq!(
        openwop_wired(&["--kind", "nonsense", &card], wire).code(),
        Some(2)
    );
}

/// Standard output that cannot be written (a full disk) fails the run with exit 2 and
/// says so; one whose reader went away (`| head`) is not an error.
#[test]
fn a_failed_write_to_standard_output_is_exit_2_a_closed_pipe_is_not() {
    let valid = arg(&vector("discovery/valid/minimal.json"));
    let invalid = arg(&vector("discovery/invalid/discovery.no-grpc.json"));
    for args in [
        vec!["--format", "sarif", valid.as_str()],
        vec![valid.as_str()],
        vec!["--list-rules"],
        vec!["--explain", "discovery.no-grpc"],
    ] {
        let dir = tempfile::tempdir().expect("dir");
        let log = dir.path().join("stderr");
        let status = openwop_wired(&args, |c| {
            c.stdout(std::fs::File::create("/dev/full").expect("/dev/full"))
                .stderr(std::fs::File::create(&log).expect("log"));
        });
        let said = std::fs::read_to_string(&log).unwrap_or_default();
        assert_eq!(status.code(), Some(2), "{args:?}: {said}");
        assert!(said.contains("cannot write to standard output"), "{said}");
    }
    let status = openwop_wired(&["--now", NOW, &invalid], |c| {
        c.stdout(broken_pipe());
    });
    assert_eq!(
        status.code(),
        Some(1),
        "the findings' status, not a write error"
    );
}

/// The pre-commit hook's entry passes `--kind agent-card`, and a user's `args` may pass it
/// again: the last one counts, as for a flag named twice anywhere.
#[test]
fn kind_can_be_named_twice_and_the_last_counts() {
    let card = arg(&vector("agent-card/valid/host-card.json"));
    let out = openwop(&["--kind", "agent-card", "--kind", "agent-card", &card]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let out = openwop(&["--kind", "agent-card", "--kind", "discovery", &card]);
    assert_eq!(
        code(&out),
        1,
        "checked as a discovery document: {}",
        stdout(&out)
    );
    let discovery = arg(&vector("agent-card/discovery.json"));
    let out = openwop(&[
        "--kind",
        "agent-card",
        "--kind",
        "agent-card",
        "--discovery",
        &discovery,
        &card,
    ]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
}

/// A --discovery input that is JSON but no object is named as such, not read as a
/// discovery document without an `a2a` facet.
#[test]
fn a_discovery_input_that_is_no_object_says_so() {
    let dir = tempfile::tempdir().expect("dir");
    let array = dir.path().join("arr.json");
    std::fs::write(&array, "[]").expect("write");
    let card = arg(&vector("agent-card/valid/host-card.json"));
    let out = openwop(&["--kind", "agent-card", "--discovery", &arg(&array), &card]);
    assert_eq!(code(&out), 2, "{}", stdout(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with(&format!(
            "{}:1:1: error: input.unreadable: the --discovery input is not a JSON object (it is an array)",
            arg(&array)
        )),
        "{text}"
    );
    assert!(!text.contains("advertises no"), "{text}");
}

/// What a JUnit report holds, read as a strict reader reads it: for each `<testsuites>` and
/// `<testsuite>`, its name, its `tests`, `failures` and `errors` attributes, and the
/// testcases, `<failure>`s and `<error>`s counted inside it; and the most outcomes (a
/// `<failure>` or an `<error>`) any one testcase has.
struct JunitCounts {
    suites: Vec<(String, [usize; 3], [usize; 3])>,
    most_outcomes: usize,
}

fn junit_counts(xml: &str) -> JunitCounts {
    use quick_xml::events::Event;
    let mut reader = quick_xml::Reader::from_str(xml);
    let mut open: Vec<(String, [usize; 3], [usize; 3])> = Vec::new();
    let mut suites = Vec::new();
    let (mut outcomes, mut most_outcomes) = (0, 0);
    loop {
        let (e, empty) = match reader.read_event() {
            Err(e) => panic!("{e}: {xml}"),
            Ok(Event::Eof) => break,
            Ok(Event::Start(e)) => (e, false),
            Ok(Event::Empty(e)) => (e, true),
            Ok(Event::End(e)) => {
                if matches!(e.name().into_inner(), "testsuite" | "testsuites") {
                    suites.push(open.pop().expect("an open suite"));
                }
                continue;
            }
            Ok(_) => continue,
        };
        let attribute = |key: &str| {
            e.try_get_attribute(key)
                .ok()
                .flatten()
                .and_then(|a| a.normalized_value(quick_xml::XmlVersion::Explicit1_0).ok())
                .map(|v| v.into_owned())
                .unwrap_or_default()
        };
        match e.name().into_inner() {
            "testsuite" | "testsuites" => {
                let declared = ["tests", "failures", "errors"]
                    .map(|k| attribute(k).parse().unwrap_or(usize::MAX));
                let suite = (attribute("name"), declared, [0; 3]);
                if empty {
                    suites.push(suite);
                } else {
                    open.push(suite);
                }
            }
            "testcase" => {
                outcomes = 0;
                open.iter_mut().for_each(|s| s.2[0] += 1);
            }
            name @ ("failure" | "error") => {
                let i = if name == "failure" { 1 } else { 2 };
                outcomes += 1;
                most_outcomes = most_outcomes.max(outcomes);
                open.iter_mut().for_each(|s| s.2[i] += 1);
            }
            _ => {}
        }
    }
    JunitCounts {
        suites,
        most_outcomes,
    }
}

/// Azure DevOps and Jenkins show only the first `<failure>` of a testcase, and xunitparser
/// checks every count against the elements: a testcase per finding, at most one outcome
/// each, and `tests`, `failures` and `errors` on every suite and on `<testsuites>` equal to
/// what it holds. A warning below the threshold passes; a run failure is a testcase too.
#[test]
fn junit_has_a_testcase_per_finding_and_counts_what_it_holds() {
    let dir = tempfile::tempdir().expect("dir");
    let not_json = dir.path().join("not-json.json");
    std::fs::write(&not_json, "{ oops").expect("write");
    let three = arg(&vector(
        "discovery/invalid/discovery.profile-missing-feature--no-features.json",
    ));
    let valid = arg(&vector("discovery/valid/minimal.json"));
    let overdue = arg(&vector(
        "discovery/invalid/discovery.refresh-overdue--a2a.json",
    ));
    let out = openwop(&[
        "--now",
        NOW,
        "--rule",
        "discovery.refresh-overdue=warning",
        "--max-warnings",
        "0",
        "--format",
        "junit",
        &three,
        &valid,
        &overdue,
        &arg(&not_json),
    ]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let xml = stdout(&out);
    let counts = junit_counts(&xml);
    for (name, declared, held) in &counts.suites {
        assert_eq!(declared, held, "{name}: tests, failures, errors\n{xml}");
    }
    assert_eq!(counts.most_outcomes, 1, "{xml}");
    let held: Vec<(&str, [usize; 3])> = counts
        .suites
        .iter()
        .map(|(name, _, held)| (name.as_str(), *held))
        .collect();
    // JUnit names files from the repository root, as the binary (same working directory
    // and environment as this test) finds it.
    let [three, valid, overdue, not_json] = [
        three.as_str(),
        valid.as_str(),
        overdue.as_str(),
        &arg(&not_json),
    ]
    .map(repo_path);
    assert_eq!(
        held,
        [
            (three.as_str(), [3, 3, 0]),
            (valid.as_str(), [1, 0, 0]),
            (overdue.as_str(), [1, 0, 0]),
            (not_json.as_str(), [1, 0, 1]),
            ("openwop-validate run", [1, 1, 0]),
            ("openwop-validate", [7, 4, 1]),
        ],
        "{xml}"
    );
    assert!(
        xml.contains(&format!(
            "<testcase name=\"discovery.profile-missing-feature\" classname=\"{three}\">"
        )),
        "{xml}"
    );
}

/// A port for a test server: below Linux's ephemeral range (32768 and up), from which the
/// clients' own ports and other tests' `:0` servers are drawn.
fn low_port_listener() -> TcpListener {
    let offset = std::process::id() as usize;
    (0..12_000)
        .map(|i| 20_000 + (offset + i) % 12_000)
        .find_map(|port| TcpListener::bind(("127.0.0.1", port as u16)).ok())
        .expect("a free port below 32768")
}

/// In `dir`, a throwaway CA (`ca.pem`) and a certificate for 127.0.0.1 it signed
/// (`leaf.pem`, `leaf.key`), made with the `openssl` command; false, saying so, without one.
fn throwaway_ca(dir: &Path) -> bool {
    let openssl = |args: &[&str]| Command::new("openssl").args(args).current_dir(dir).output();
    if !openssl(&["version"]).is_ok_and(|o| o.status.success()) {
        eprintln!(
            "note: no `openssl` command to make a test CA with; the HTTPS trust test is skipped"
        );
        return false;
    }
    std::fs::write(
        dir.join("leaf.ext"),
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n",
    )
    .expect("write");
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    let ca = [
        &["req", "-x509"][..],
        &ec,
        &["-keyout", "ca.key", "-out", "ca.pem", "-days", "2"],
        &["-subj", "/CN=openwop-validate test CA"],
        &["-addext", "basicConstraints=critical,CA:TRUE"],
        &["-addext", "keyUsage=critical,keyCertSign"],
    ]
    .concat();
    let request = [
        &["req"][..],
        &ec,
        &[
            "-keyout",
            "leaf.key",
            "-out",
            "leaf.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
    ]
    .concat();
    let sign = [
        "x509",
        "-req",
        "-in",
        "leaf.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-set_serial",
        "2",
        "-days",
        "2",
        "-extfile",
        "leaf.ext",
        "-out",
        "leaf.pem",
    ];
    for args in [&ca[..], &request, &sign] {
        let out = openssl(args).expect("openssl runs");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    true
}

/// Serves `body` over HTTPS on 127.0.0.1 with `leaf.pem` and `leaf.key` from `dir`, to
/// every connection (one whose handshake the client refuses is dropped); returns the origin.
fn serve_https(dir: &Path, body: Vec<u8>) -> String {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain = CertificateDer::pem_file_iter(dir.join("leaf.pem"))
        .expect("leaf.pem")
        .collect::<Result<Vec<_>, _>>()
        .expect("certificate");
    let key = PrivateKeyDer::from_pem_file(dir.join("leaf.key")).expect("leaf.key");
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .expect("server certificate");
    let config = std::sync::Arc::new(config);
    let listener = low_port_listener();
    let port = listener.local_addr().expect("address").port();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let Ok(tls) = rustls::ServerConnection::new(config.clone()) else {
                continue;
            };
            let mut reader = BufReader::new(rustls::StreamOwned::new(tls, stream));
            // The request's head; a refused handshake fails the first read.
            let mut line = String::new();
            while !matches!(reader.read_line(&mut line), Ok(0) | Err(_)) && line != "\r\n" {
                line.clear();
            }
            if line != "\r\n" {
                continue;
            }
            let mut stream = reader.into_inner();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(&body);
            stream.conn.send_close_notify();
            let _ = stream.flush();
        }
    });
    format!("https://127.0.0.1:{port}")
}

/// An internal CA (or a TLS-inspecting proxy's) is trusted where the system's store or
/// `SSL_CERT_FILE` names it, as curl trusts it: not only the built-in Mozilla roots.
#[test]
fn https_trusts_the_ca_ssl_cert_file_names() {
    let dir = tempfile::tempdir().expect("dir");
    if !throwaway_ca(dir.path()) {
        return;
    }
    let body = std::fs::read(vector("discovery/valid/minimal.json")).expect("vector");
    let origin = serve_https(dir.path(), body);
    let fetch = |ca: Option<&Path>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_openwop-validate"));
        command
            .args(["--now", NOW, &origin])
            .env_remove("SSL_CERT_FILE")
            .env_remove("SSL_CERT_DIR")
            .env_remove("GITHUB_STEP_SUMMARY");
        if let Some(ca) = ca {
            command.env("SSL_CERT_FILE", ca);
        }
        command.output().expect("openwop-validate runs")
    };
    let refused = fetch(None);
    assert_eq!(code(&refused), 2, "{}", stdout(&refused));
    let text = stdout(&refused);
    assert!(
        text.starts_with(&format!(
            "{origin}/.well-known/openwop:1:1: error: input.unreadable: cannot fetch it: "
        )) && text.contains("certificate")
            && text.contains("(trusting "),
        "{text}"
    );
    let trusted = fetch(Some(&dir.path().join("ca.pem")));
    assert_eq!(
        code(&trusted),
        0,
        "{}{}",
        stdout(&trusted),
        stderr(&trusted)
    );
    assert_eq!(stdout(&trusted), "1 document, 0 invalid, 0 findings\n");
}

/// A shell keeps the symbolic link it entered a directory by in `$PWD`, while the process's
/// working directory is resolved: `"$PWD/x.json"` and `x.json` are one file, named `x.json`
/// in findings, baselines and SARIF.
#[cfg(unix)]
#[test]
fn a_path_through_a_symlinked_working_directory_is_the_same_file() {
    let dir = tempfile::tempdir().expect("dir");
    let real = dir.path().join("real");
    std::fs::create_dir(&real).expect("mkdir");
    std::fs::copy(
        vector("discovery/invalid/discovery.no-grpc.json"),
        real.join("x.json"),
    )
    .expect("copy");
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    let through_link = format!("{}/x.json", link.display());
    let run = |format: &str| {
        Command::new(env!("CARGO_BIN_EXE_openwop-validate"))
            .current_dir(&link)
            .env("PWD", &link)
            .env_remove("GITHUB_STEP_SUMMARY")
            .args(["--now", NOW, "--format", format, &through_link, "x.json"])
            .output()
            .expect("openwop-validate runs")
    };
    let out = run("human");
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[..lines.len() - 1]
            .iter()
            .all(|l| l.starts_with("x.json:69:11: error: ")),
        "{text}"
    );
    assert_eq!(
        lines.last().copied(),
        Some("1 document, 1 invalid, 1 finding (1 error, 0 warnings)"),
        "{text}"
    );
    let sarif: Value = serde_json::from_slice(&run("sarif").stdout).expect("SARIF");
    let uri = &sarif["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
        ["uri"];
    assert_eq!(uri, "x.json", "{sarif}");
}

/// Lines that end in a lone CR (as old Mac editors saved them), in CRLF or in LF are all
/// counted as an editor counts them, for findings and for a syntax error alike (serde_json
/// counts LF alone).
#[test]
fn a_lone_cr_ends_a_line_for_findings_and_syntax_errors() {
    let dir = tempfile::tempdir().expect("dir");
    let lf = arg(&vector("discovery/invalid/discovery.no-grpc.json"));
    let cr = dir.path().join("cr.json");
    let text = std::fs::read_to_string(&lf).expect("vector");
    std::fs::write(&cr, text.replace('\n', "\r")).expect("write");
    let out = openwop(&["--now", NOW, &arg(&cr)]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with(&format!(
            "{}:{}: error: discovery.no-grpc: ",
            arg(&cr),
            position(&lf, "\"grpc\": ")
        )),
        "{text}"
    );
    // CR, CRLF and LF, then the error on the fourth line.
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{\r  \"a\": 1,\r\n  \"b\": 2,\n  oops\r}").expect("write");
    let out = openwop(&[&arg(&bad)]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(
        text.starts_with(&format!(
            "{}:4:3: error: input.malformed: not valid JSON: key must be a string\n",
            arg(&bad)
        )),
        "{text}"
    );
}

/// Valid JSON nested deeper than the parser goes is a finding that says so, not "not
/// valid JSON" (nor a crash); one level less is read and checked.
#[test]
fn json_nested_deeper_than_this_tool_reads_says_so() {
    let dir = tempfile::tempdir().expect("dir");
    let nested = |depth: usize| {
        let path = dir.path().join(format!("nested-{depth}.json"));
        std::fs::write(&path, "[".repeat(depth) + &"]".repeat(depth)).expect("write");
        arg(&path)
    };
    let deep = nested(200);
    let out = openwop(&[&deep]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert_eq!(
        stdout(&out).lines().next(),
        Some(
            format!(
                "{deep}:1:128: error: input.malformed: the document nests arrays and objects deeper than this tool reads (127 levels), so it was not checked"
            )
            .as_str()
        )
    );
    let out = openwop(&[&nested(127)]);
    assert_eq!(
        code(&out),
        1,
        "checked, and no discovery document: {}",
        stdout(&out)
    );
    assert!(
        !stdout(&out).contains("input.malformed"),
        "{}",
        stdout(&out)
    );
}

/// `agent-card.removed-field` on a top-level `protocolVersion` does not ask for what the
/// card already has: each interface's own `protocolVersion`.
#[test]
fn a_removed_protocol_version_says_the_interfaces_already_name_theirs() {
    let card = arg(&vector(
        "agent-card/invalid/agent-card.removed-field--protocol-version.json",
    ));
    let out = openwop(&["--kind", "agent-card", &card]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        stdout(&out).contains(
            "remove `protocolVersion`, which A2A 1.0 dropped: each `supportedInterfaces[]` entry already names its `protocolVersion`"
        ),
        "{}",
        stdout(&out)
    );
}

/// `agent-card.discovery-has-a2a` is about the discovery document: it is reported there,
/// once however many cards are checked, at its `a2a` member when it has one that is no
/// facet, else on the document itself (where a missing member is reported), in every
/// format. Fixed, its baseline entry is stale; the discovery document's entries of other
/// rules (a baseline shared with its own runs) are not.
#[test]
fn a_discovery_document_without_a2a_is_told_so_in_that_document() {
    let discovery = arg(&vector(
        "agent-card/invalid/agent-card.discovery-has-a2a.discovery.json",
    ));
    let card = arg(&vector(
        "agent-card/invalid/agent-card.discovery-has-a2a.json",
    ));
    let other = arg(&vector("agent-card/valid/host-card.json"));
    let out = openwop(&[
        "--kind",
        "agent-card",
        "--discovery",
        &discovery,
        &card,
        &other,
    ]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        format!(
            "{discovery}:1:1: error: agent-card.discovery-has-a2a: add the `a2a` facet (with `versions`, `preferredVersion`, `minimumVersion` and `refreshedAt`): the host serves an agent card, so its discovery document must advertise A2A (or stop serving the card)\n\
             3 documents, 1 invalid, 1 finding (1 error, 0 warnings)\n"
        )
    );
    let sarif = openwop(&[
        "--kind",
        "agent-card",
        "--discovery",
        &discovery,
        "--format",
        "sarif",
        &card,
    ]);
    let sarif: Value = serde_json::from_slice(&sarif.stdout).expect("SARIF");
    let results = sarif["runs"][0]["results"].as_array().expect("results");
    assert_eq!(results.len(), 1, "{results:#?}");
    let location = &results[0]["locations"][0];
    let uri = location["physicalLocation"]["artifactLocation"]["uri"]
        .as_str()
        .unwrap_or_default();
    assert!(
        uri.ends_with("/agent-card.discovery-has-a2a.discovery.json"),
        "{uri}"
    );
    assert_eq!(
        location["physicalLocation"]["region"],
        serde_json::json!({"startLine": 1, "startColumn": 1})
    );
    assert_eq!(location["logicalLocations"][0]["fullyQualifiedName"], "/");
    let junit = openwop(&[
        "--kind",
        "agent-card",
        "--discovery",
        &discovery,
        "--format",
        "junit",
        &card,
    ]);
    let junit = stdout(&junit);
    let [discovery_name, card_name] = [discovery.as_str(), card.as_str()].map(repo_path);
    assert!(
        junit.contains(&format!(
            "<testsuite name=\"{discovery_name}\" tests=\"1\" failures=\"1\""
        )),
        "{junit}"
    );
    assert!(
        junit.contains(&format!(
            "<testsuite name=\"{card_name}\" tests=\"1\" failures=\"0\""
        )),
        "{junit}"
    );

    // An `a2a` that is no object: at that member.
    let not_object = arg(&vector(
        "agent-card/invalid/agent-card.discovery-has-a2a--not-an-object.discovery.json",
    ));
    let out = openwop(&["--kind", "agent-card", "--discovery", &not_object, &card]);
    assert!(
        stdout(&out).starts_with(&format!(
            "{not_object}:{}: error: agent-card.discovery-has-a2a: make `a2a` the A2A facet object",
            position(&not_object, "\"a2a\": ")
        )),
        "{}",
        stdout(&out)
    );
    // Off, nothing; the cards pass.
    let out = openwop(&[
        "--kind",
        "agent-card",
        "--rule",
        "agent-card.discovery-has-a2a=off",
        "--discovery",
        &discovery,
        &card,
    ]);
    assert_eq!(code(&out), 0, "{}", stdout(&out));

    // Baselined, then fixed: the entry is stale; the discovery document's entry of
    // another rule is not (this run did not check the document for it).
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path().join("d.json");
    std::fs::copy(&discovery, &d).expect("copy");
    std::fs::copy(&card, dir.path().join("card.json")).expect("copy");
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_openwop-validate"))
            .current_dir(dir.path())
            .args([
                "--no-config",
                "--kind",
                "agent-card",
                "--discovery",
                "d.json",
            ])
            .args(args)
            .output()
            .expect("runs")
    };
    let adopted = run(&["--write-baseline", "b.json", "card.json"]);
    assert_eq!(code(&adopted), 0, "{}", stdout(&adopted));
    let written: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("b.json")).expect("b"))
            .expect("JSON");
    assert_eq!(written["findings"][0]["path"], "d.json", "{written}");
    let mut shared = written.clone();
    shared["findings"]
        .as_array_mut()
        .expect("findings")
        .push(serde_json::json!(
            {"path": "d.json", "rule": "schema", "pointer": "/x", "message": "m", "count": 1}
        ));
    std::fs::write(dir.path().join("b.json"), shared.to_string()).expect("write");
    let known = run(&["--baseline", "b.json", "--strict-baseline", "card.json"]);
    assert_eq!(code(&known), 0, "{}", stdout(&known));
    let mut fixed: Value = serde_json::from_str(
        &std::fs::read_to_string(vector("agent-card/discovery.json")).expect("discovery"),
    )
    .expect("JSON");
    fixed["a2a"]["agentCards"] = Value::Bool(false);
    std::fs::write(&d, fixed.to_string()).expect("write");
    let stale = run(&["--baseline", "b.json", "--strict-baseline", "card.json"]);
    let text = stdout(&stale);
    assert_eq!(code(&stale), 1, "{text}");
    assert!(
        text.contains("d.json: baseline entry agent-card.discovery-has-a2a at \"\""),
        "{text}"
    );
    assert!(!text.contains("baseline entry schema"), "{text}");
}

/// JSON's grammar allows `1e999` and `"\ud800"`, but they are beyond what this tool (and
/// the host, and most readers) reads: an input that was not checked (exit 2), said as
/// such, at the number or the escape, in text and SARIF.
#[test]
fn a_number_beyond_a_double_or_a_lone_surrogate_is_said_where_it_is() {
    let dir = tempfile::tempdir().expect("dir");
    let big = dir.path().join("big.json");
    std::fs::write(
        &big,
        "{\n  \"protocolVersions\": [\"2.0\"],\n  \"preferredVersion\": \"2.0\",\n  \"x\": 1e999\n}\n",
    )
    .expect("write");
    let half = dir.path().join("half.json");
    std::fs::write(
        &half,
        "{\n  \"protocolVersions\": [\"2.0\"],\n  \"implementation\": {\"name\": \"h\\ud800\", \"version\": \"1\"}\n}\n",
    )
    .expect("write");
    let (big, half) = (arg(&big), arg(&half));
    let out = openwop(&[&big, &half]);
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with(&format!(
            "{big}:4:8: error: input.malformed: the number 1e999 is beyond the range of a 64-bit float"
        )),
        "{text}"
    );
    assert!(
        lines[1].starts_with(&format!(
            "{half}:3:32: error: input.malformed: the escape `\\ud800` is half of a UTF-16 surrogate pair without the other half"
        )),
        "{text}"
    );
    assert_eq!(
        lines[2],
        "2 documents, 2 invalid, 2 findings (2 errors, 0 warnings), 2 unreadable"
    );
    let sarif = openwop(&["--format", "sarif", &big]);
    let sarif: Value = serde_json::from_slice(&sarif.stdout).expect("SARIF");
    let result = &sarif["runs"][0]["results"][0];
    assert_eq!(result["ruleId"], "input.malformed");
    assert_eq!(
        result["locations"][0]["physicalLocation"]["region"],
        serde_json::json!({"startLine": 4, "startColumn": 8})
    );
    assert!(
        result["message"]["text"]
            .as_str()
            .is_some_and(|m| m.starts_with("the number 1e999 is beyond")),
        "{result}"
    );
    assert_eq!(sarif["runs"][0]["invocations"][0]["exitCode"], 2);
}

/// A 0.3-shaped security requirement on a 1.0 card, and an extended card offered with no
/// scheme to ask for it with: `agent-card.well-formed`, saying the 1.0 shape.
#[test]
fn card_security_in_0_3_shape_or_missing_for_the_extended_card_is_named() {
    let card = arg(&vector(
        "agent-card/invalid/agent-card.well-formed--requirement-0.3-shape.json",
    ));
    let out = openwop(&["--kind", "agent-card", &card]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    let want = format!(
        "{card}:{}: error: agent-card.well-formed: write this security requirement in A2A 1.0's shape, {{\"schemes\": {{\"oauth\": {{\"list\": [\"read\"]}}}}}}: ",
        position(&card, "\"securityRequirements\": [\n    ")
    );
    assert!(stdout(&out).starts_with(&want), "{}\n{want}", stdout(&out));
    let card = arg(&vector(
        "agent-card/invalid/agent-card.well-formed--extended-card-without-scheme.json",
    ));
    let out = openwop(&["--kind", "agent-card", &card]);
    assert_eq!(code(&out), 1, "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with(&format!(
            "{card}:{}: error: agent-card.well-formed: declare in `securitySchemes` the scheme a client authenticates with to get the extended card",
            position(&card, "\"extendedAgentCard\": ")
        )),
        "{}",
        stdout(&out)
    );
}

/// With its rule off, the schema's finding for a forbidden member names the member, not
/// the validator's "`{} is not allowed for the object`" (`not: {}`).
#[test]
fn a_forbidden_members_schema_finding_names_it() {
    for (name, rule, member) in [
        ("discovery.no-grpc", "discovery.no-grpc=off", "grpc"),
        (
            "discovery.no-supported-transports",
            "discovery.no-supported-transports=off",
            "supportedTransports",
        ),
    ] {
        let doc = arg(&vector(&format!("discovery/invalid/{name}.json")));
        let out = openwop(&["--now", NOW, "--rule", rule, &doc]);
        assert_eq!(code(&out), 1);
        assert!(
            stdout(&out).contains(&format!(
                ": error: schema: member `{member}` is not allowed here\n"
            )),
            "{}",
            stdout(&out)
        );
        assert!(!stdout(&out).contains("{}"), "{}", stdout(&out));
    }
}

/// A reply with no body (a 204, or an empty 200) says so, not "EOF while parsing a value".
#[test]
fn a_reply_without_a_body_says_so() {
    let (origin, _requests) = serve(vec![("204 No Content", Vec::new())]);
    let out = openwop(&[&origin]);
    assert_eq!(code(&out), 2);
    assert!(
        stdout(&out).contains(
            "input.unreadable: cannot fetch it: the reply (HTTP 204 No Content) had no body"
        ),
        "{}",
        stdout(&out)
    );
    assert!(!stdout(&out).contains("EOF"), "{}", stdout(&out));
}

/// A quoted brace expansion is not a pattern here: the sentence says so, not "cannot read
/// the file".
#[test]
fn a_quoted_brace_expansion_is_named_as_such() {
    let dir = tempfile::tempdir().expect("dir");
    let out = Command::new(env!("CARGO_BIN_EXE_openwop-validate"))
        .current_dir(dir.path())
        .args(["docs/{a,c}.json"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with(
            "docs/{a,c}.json:1:1: error: input.unreadable: braces (`{a,c}`) are not expanded here"
        ),
        "{text}"
    );
}

/// `--help` says what pinning `--now` trades: never overdue, but a refresh after the
/// pinned date reads as in the future until the date is bumped.
#[test]
fn help_explains_pinning_now() {
    let out = openwop(&["--help"]);
    let text = stdout(&out);
    assert!(text.contains("bump --now when you refresh"), "{text}");
}

/// The card sentences the vectors name by rule only: each says what to write.
#[test]
fn card_sentences_say_what_to_write() {
    let discovery = arg(&vector("agent-card/discovery.json"));
    let check = |name: &str| {
        let card = arg(&vector(&format!("agent-card/invalid/{name}.json")));
        let out = openwop(&["--kind", "agent-card", "--discovery", &discovery, &card]);
        assert_eq!(code(&out), 1, "{name}: {}", stderr(&out));
        stdout(&out)
    };
    // A mixed requirement keeps the scheme its `schemes` already names.
    let text = check("agent-card.well-formed--requirement-mixed-shape");
    assert!(
        text.contains(r#"{"schemes": {"oauth": {"list": ["runs:write"]}, "machines": {"list": ["runs:read"]}}}"#),
        "{text}"
    );
    // A patch number: one sentence per interface, and no comparison with the facet piles on.
    let text = check("agent-card.well-formed--protocol-version-patch");
    assert_eq!(
        text.matches(r#"`protocolVersion` is Major.Minor: write "1.0""#)
            .count(),
        2,
        "{text}"
    );
    assert!(text.contains("2 findings"), "{text}");
    let text = check("agent-card.well-formed--protocol-binding");
    for said in [
        r#"write `protocolBinding` as "JSONRPC""#,
        r#"write `protocolBinding` as "HTTP+JSON""#,
        "(`websocket` is none)",
        "make this a gRPC target",
        "make this an absolute URL, with its scheme",
    ] {
        assert!(text.contains(said), "{said}: {text}");
    }
    let text = check("agent-card.well-formed--skill-undeclared-scheme");
    assert!(
        text.contains("declare `apiKey` in `securitySchemes`"),
        "{text}"
    );
    let text = check("agent-card.well-formed--api-key-location");
    assert!(text.contains(r#"write `location` as "header""#), "{text}");
    assert!(text.contains("(`body` is none)"), "{text}");
    let text = check("agent-card.well-formed--oauth-urls");
    assert_eq!(
        text.matches("a client sends credentials to it").count(),
        5,
        "{text}"
    );
}

/// Without `--kind`, a PATH's well-known name decides: a file named agent-card.json, or
/// a URL ending /.well-known/agent-card.json, is checked as a card. A document checked as
/// the other kind gets one note that says which `--kind` to pass; `--kind` always wins.
#[test]
fn the_kind_follows_the_well_known_name_and_a_wrong_kind_is_named() {
    let dir = tempfile::tempdir().expect("dir");
    let well_known = dir.path().join(".well-known");
    std::fs::create_dir(&well_known).expect("mkdir");
    let card = well_known.join("agent-card.json");
    std::fs::copy(vector("agent-card/valid/host-card.json"), &card).expect("copy");
    let elsewhere = dir.path().join("card.json");
    std::fs::copy(vector("agent-card/valid/host-card.json"), &elsewhere).expect("copy");
    let card = arg(&card);
    let elsewhere = arg(&elsewhere);

    let out = openwop(&["--now", NOW, &card]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    assert!(!stderr(&out).contains("looks like"), "{}", stderr(&out));

    let out = openwop(&["--now", NOW, &elsewhere]);
    assert_eq!(code(&out), 1, "checked as a discovery document");
    let note = format!(
        "note: {elsewhere} looks like an A2A agent card (it has `supportedInterfaces` or `skills` and no `protocolVersions`), but was checked as an OpenWOP discovery document; pass --kind agent-card"
    );
    assert_eq!(stderr(&out).matches("looks like").count(), 1);
    assert!(stderr(&out).contains(&note), "{}", stderr(&out));

    // An explicit --kind wins over the name, and is told when the shape disagrees.
    let out = openwop(&["--now", NOW, "--kind", "discovery", &card]);
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("as --kind says; pass --kind agent-card"),
        "{}",
        stderr(&out)
    );
    let doc = arg(&vector("discovery/valid/minimal.json"));
    let out = openwop(&["--now", NOW, "--kind", "agent-card", &doc]);
    assert_eq!(code(&out), 1);
    assert!(
        stderr(&out).contains("looks like an OpenWOP discovery document (it has `protocolVersions`), but was checked as an A2A agent card as --kind says; pass --kind discovery"),
        "{}",
        stderr(&out)
    );

    // A URL ending in the card's well-known path is fetched and checked as a card.
    let body = std::fs::read(vector("agent-card/valid/host-card.json")).expect("vector");
    let (origin, requests) = serve(vec![("200 OK", body)]);
    let out = openwop(&[
        "--now",
        NOW,
        &format!("{origin}/.well-known/agent-card.json"),
    ]);
    assert_eq!(code(&out), 0, "{}{}", stdout(&out), stderr(&out));
    let head = requests.recv().expect("one request").to_ascii_lowercase();
    assert!(head.contains("\r\na2a-version: 1.0\r\n"), "{head}");
}

/// A file, standard input or a URL is read up to 10 MiB, and a larger one is said to be
/// so (never read whole, never out of memory); a FIFO or a device is refused, not waited
/// on or read forever.
#[test]
fn inputs_are_capped_and_only_regular_files_are_read() {
    let dir = tempfile::tempdir().expect("dir");
    let big = dir.path().join("big.json");
    let mut text = vec![b' '; 10 * 1024 * 1024];
    text.extend(b"{}");
    std::fs::write(&big, &text).expect("write");
    let out = openwop(&["--now", NOW, &arg(&big)]);
    assert_eq!(code(&out), 2, "{}", stdout(&out));
    assert!(
        stdout(&out)
            .contains(": input.unreadable: is larger than 10 MiB, the most this tool reads"),
        "{}",
        stdout(&out)
    );
    let out = openwop_with_stdin(&["--now", NOW, "-"], Some(&text));
    assert_eq!(code(&out), 2);
    assert!(
        stdout(&out).starts_with("<stdin>:1:1: error: input.unreadable: is larger than 10 MiB"),
        "{}",
        stdout(&out)
    );
    let (origin, _requests) = serve(vec![("200 OK", text)]);
    let out = openwop(&["--now", NOW, &origin]);
    assert_eq!(code(&out), 2);
    assert!(
        stdout(&out).contains("is larger than 10 MiB"),
        "{}",
        stdout(&out)
    );
    assert!(!stdout(&out).contains("request limit"), "{}", stdout(&out));

    #[cfg(unix)]
    {
        let fifo = dir.path().join("fifo.json");
        let made = Command::new("mkfifo").arg(&fifo).status();
        let mut specials = vec!["/dev/zero".to_owned()];
        if made.is_ok_and(|s| s.success()) {
            specials.push(arg(&fifo));
        }
        for special in specials {
            let out = openwop(&["--now", NOW, &special]);
            assert_eq!(code(&out), 2, "{special}");
            assert!(
                stdout(&out).contains("is not a regular file"),
                "{special}: {}",
                stdout(&out)
            );
        }
    }
}
