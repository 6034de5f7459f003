//! `openwop config check FILE`: a config file checked without starting a host, against
//! its schema and the checks `serve` applies at start, one line per finding with a JSON
//! pointer; exit 0 valid, 1 invalid, 2 unreadable or not JSON/YAML. And the schema as the
//! one description of the file: its reference page, its strictness, its defaults.

use std::path::Path;
use std::process::Output;

const BIN: &str = env!("CARGO_BIN_EXE_openwop");

fn check_file(path: &Path) -> Output {
    std::process::Command::new(BIN)
        .args(["config", "check"])
        .arg(path)
        .output()
        .unwrap()
}

/// Writes `text` as `name` in a fresh directory and checks it: (exit code, stdout).
fn check(name: &str, text: &str) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    let out = check_file(&path);
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The finding lines of stdout, with the file name taken off.
fn findings(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .map(|l| l.split_once(": ").map_or(l, |(_, rest)| rest).to_owned())
        .collect()
}

#[test]
fn a_valid_file_in_yaml_or_json_exits_zero() {
    let yaml = "listen: 127.0.0.1:9000\napiKeys: [\"acme:acme-secret-key-0123\"]\ntenants:\n  acme:\n    workflows: [echo, approval]\nmcp:\n  revisions: [2026-07-28]\n";
    let (code, out) = check("openwop.yaml", yaml);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("valid"), "{out}");
    let (code, out) = check(
        "openwop.json",
        r#"{"listen": "127.0.0.1:9000", "peers": [], "a2a": {"defaultSkill": ""}}"#,
    );
    assert_eq!(code, 0, "{out}");
    // An empty file is no keys at all.
    assert_eq!(check("empty.yaml", "").0, 0);
}

#[test]
fn an_unknown_key_is_an_error_with_its_pointer_at_every_depth() {
    let (code, out) = check("c.yaml", "listn: 127.0.0.1:9000\ndataDri: x\n");
    assert_eq!(code, 1, "{out}");
    let lines = findings(&out);
    assert_eq!(lines.len(), 2, "one finding per unknown key: {out}");
    for key in ["listn", "dataDri"] {
        assert!(
            lines
                .iter()
                .any(|l| l.starts_with(&format!("/{key}: unknown key `{key}`"))),
            "{out}"
        );
    }
    for (yaml, pointer, word) in [
        (
            "mcp:\n  revison: [2026-07-28]\n",
            "/mcp/revison: ",
            "revison",
        ),
        (
            "mcp:\n  mrtr: {maxRound: 2}\n",
            "/mcp/mrtr/maxRound: ",
            "maxRound",
        ),
        (
            "tenants:\n  acme:\n    tools: []\n",
            "/tenants/acme/tools: ",
            "tools",
        ),
        (
            "peers:\n  - {id: p, kind: http, url: 'https://x.example', secret: s}\n",
            "/peers/0/secret: ",
            "secret",
        ),
        ("a2a:\n  skill: echo\n", "/a2a/skill: ", "skill"),
    ] {
        let (code, out) = check("c.yaml", yaml);
        assert_eq!(code, 1, "{yaml}: {out}");
        assert!(
            findings(&out)
                .iter()
                .any(|l| l.starts_with(pointer) && l.contains(word)),
            "{yaml}: {out}"
        );
    }
}

#[test]
fn schema_errors_name_the_value_they_are_about() {
    for (yaml, pointer) in [
        ("maxConnections: 0\n", "/maxConnections: "),
        ("rateLimit: -1\n", "/rateLimit: "),
        ("listen: 8080\n", "/listen: "),
        (
            "peers:\n  - {id: p, kind: grpc, url: 'https://x.example'}\n",
            "/peers/0/kind: ",
        ),
        (
            "peers:\n  - {id: p, url: 'https://x.example'}\n",
            "/peers/0: ",
        ),
        (
            "upstreamRegistryRefreshHours: 500\n",
            "/upstreamRegistryRefreshHours: ",
        ),
        (
            "tenants:\n  acme:\n    workflows: ['a b']\n",
            "/tenants/acme/workflows/0: ",
        ),
    ] {
        let (code, out) = check("c.yaml", yaml);
        assert_eq!(code, 1, "{yaml}: {out}");
        assert!(
            findings(&out).iter().any(|l| l.starts_with(pointer)),
            "{yaml}: {out}"
        );
    }
}

#[test]
fn the_checks_serve_applies_at_start_are_findings_with_pointers() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("missing-secret");
    for (yaml, pointer, says) in [
        (
            "apiKeys: [\"acme:short\"]\n".to_owned(),
            "/apiKeys/0: ",
            "shorter than 16",
        ),
        (
            "apiKeys: [\"no-colon-at-all-0123456789\"]\n".to_owned(),
            "/apiKeys/0: ",
            "TENANT:KEY",
        ),
        (
            "apiKeys: [\"acme:same-key-0123456789\", \"globex:same-key-0123456789\"]\n"
                .to_owned(),
            "/apiKeys/1: ",
            "same api key",
        ),
        (
            "mcp:\n  revisions: [2025-06-18]\n".to_owned(),
            "/mcp/revisions/0: ",
            "does not speak 2025-06-18",
        ),
        (
            "mcp:\n  revisions: [2026-07-28]\n  minimumRevision: 2025-11-25\n".to_owned(),
            "/mcp/minimumRevision: ",
            "not one of mcp.revisions",
        ),
        (
            "mcp:\n  allowedOrigins: [app.example.com]\n".to_owned(),
            "/mcp/allowedOrigins/0: ",
            "not an origin",
        ),
        (
            "peers:\n  - {id: 'a b', kind: http, url: 'https://x.example'}\n".to_owned(),
            "/peers/0: ",
            "an id is 1-64",
        ),
        (
            "peers:\n  - {id: p, kind: http, url: 'not a url'}\n".to_owned(),
            "/peers/0: ",
            "url",
        ),
        (
            format!(
                "peers:\n  - {{id: p, kind: http, url: 'https://x.example', credential: {{file: {}}}}}\n",
                secret.display()
            ),
            "/peers/0: ",
            "cannot read",
        ),
        (
            "peers:\n  - {id: p, kind: http, url: 'https://x.example', credential: {}}\n"
                .to_owned(),
            "/peers/0/credential: ",
            "",
        ),
        (
            "peers:\n  - {id: p, kind: http, url: 'https://x.example'}\n  - {id: p, kind: mcp, url: 'https://y.example'}\n".to_owned(),
            "/peers/1/id: ",
            "twice",
        ),
        (
            "publicUrl: ftp://x.example\n".to_owned(),
            "/publicUrl: ",
            "public URL",
        ),
        ("tlsCert: cert.pem\n".to_owned(), "/tlsCert: ", "together"),
        (
            "tenants:\n  acme:\n    workflows: [ecko]\n".to_owned(),
            "/tenants/acme/workflows/0: ",
            "no workflow `ecko`",
        ),
        (
            "tenants:\n  acme:\n    agents: [nobody]\n".to_owned(),
            "/tenants/acme/agents/0: ",
            "no agent `nobody`",
        ),
        (
            "a2a:\n  defaultSkill: nope\n".to_owned(),
            "/a2a/defaultSkill: ",
            "no workflow `nope`",
        ),
    ] {
        let (code, out) = check("c.yaml", &yaml);
        assert_eq!(code, 1, "{yaml}: {out}");
        assert!(
            findings(&out)
                .iter()
                .any(|l| l.starts_with(pointer) && l.contains(says)),
            "{yaml}: {out}"
        );
    }
}

#[test]
fn every_finding_is_reported_not_only_the_first() {
    let (code, out) = check(
        "c.yaml",
        "apiKeys: [\"acme:short\", \"globex:tiny\"]\npublicUrl: ftp://x.example\ntenants: {acme: {workflows: [ecko]}}\n",
    );
    assert_eq!(code, 1);
    let lines = findings(&out);
    assert_eq!(lines.len(), 4, "{out}");
    assert!(lines[3].starts_with("/tenants/acme/workflows/0: "), "{out}");
}

#[test]
fn a_workflow_calling_an_unconfigured_peer_and_a_bad_agent_directory_are_found() {
    let dir = tempfile::tempdir().unwrap();
    let workflows = dir.path().join("workflows");
    std::fs::create_dir(&workflows).unwrap();
    std::fs::write(
        workflows.join("call.yaml"),
        "id: call\ninputSchema: {type: object}\nnodes:\n  - {id: get, kind: http, peer: svc, method: GET, path: /x}\n",
    )
    .unwrap();
    let agents = dir.path().join("agents");
    std::fs::create_dir(&agents).unwrap();
    std::fs::write(
        agents.join("a.yaml"),
        "agentId: a\npersona: P\nlabel: L\npackVersion: '1'\nworkflows: [echo]\nmood: happy\n",
    )
    .unwrap();
    let config = dir.path().join("c.yaml");
    std::fs::write(
        &config,
        format!(
            "workflows: {}\nagents: {}\n",
            workflows.display(),
            agents.display()
        ),
    )
    .unwrap();
    let out = check_file(&config);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let lines = findings(&stdout);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("/peers: ") && l.contains("`svc`")),
        "{stdout}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("/agents: ") && l.contains("mood")),
        "the agent definition's unknown key, by its schema: {stdout}"
    );
}

#[test]
fn an_unreadable_or_unparsable_file_exits_two() {
    let dir = tempfile::tempdir().unwrap();
    let out = check_file(&dir.path().join("nowhere.yaml"));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("nowhere.yaml"));
    assert_eq!(check("c.yaml", "listen: [unclosed\n").0, 2);
    assert_eq!(check("c.json", "{\"listen\": ").0, 2);
}

#[test]
fn serve_refuses_what_config_check_refuses_with_the_same_pointer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.yaml");
    std::fs::write(
        &path,
        "apiKeys: [\"acme:short\"]\nmcp: {revisions: [2025-06-18]}\n",
    )
    .unwrap();
    let checked = String::from_utf8_lossy(&check_file(&path).stdout).into_owned();
    let out = std::process::Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&path)
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    for line in findings(&checked) {
        assert!(
            stderr.contains(&line),
            "serve says {stderr}, check says {line}"
        );
    }
    assert!(
        !dir.path().join("data").exists(),
        "a refused start touches nothing"
    );
}

#[test]
fn help_teaches_with_examples_and_exit_codes() {
    let out = std::process::Command::new(BIN)
        .args(["config", "check", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "Examples:",
        "openwop config check",
        "Exit status",
        "POINTER",
        "CONFIG.md",
    ] {
        assert!(text.contains(needle), "help lacks {needle}: {text}");
    }
}

/// The reference page is generated from the schema (held fresh by `cargo xtask codegen
/// --check`), names every key and every variable `serve --help` shows for one, and the
/// README's configuration reference links to it.
#[test]
fn the_reference_page_covers_every_key_and_variable_and_the_readme_links_it() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let page = std::fs::read_to_string(format!("{root}/generated/CONFIG.md")).unwrap();
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{root}/schemas/v2/config.schema.json")).unwrap(),
    )
    .unwrap();
    let top = schema["$defs"]["configFile"]["properties"]
        .as_object()
        .unwrap();
    let help = std::process::Command::new(BIN)
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for (key, prop) in top {
        assert!(
            page.contains(&format!("| `{key}` |")),
            "CONFIG.md lacks {key}"
        );
        if let Some(env) = prop["x-openwop-env"].as_str() {
            assert!(page.contains(env), "CONFIG.md lacks {env}");
            assert!(
                help.contains(env),
                "{key}: serve --help does not show {env}"
            );
        }
        if let Some(flag) = prop["x-openwop-flag"].as_str() {
            assert!(
                help.contains(flag),
                "{key}: serve --help does not show {flag}"
            );
        }
    }
    for nested in [
        "mcp.revisions",
        "mcp.mrtr.maxRounds",
        "peers[].credential.file",
        "tenants.<KEY>.workflows",
        "a2a.defaultSkill",
    ] {
        assert!(
            page.contains(&format!("| `{nested}` |")),
            "CONFIG.md lacks {nested}"
        );
    }
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let section = readme.split("## Configuration reference").nth(1).unwrap();
    assert!(
        section.contains("../generated/CONFIG.md"),
        "README links the page"
    );
}

/// The schema's defaults are the host's: a file without a key behaves as the code's own
/// default would.
#[test]
fn the_schema_defaults_are_the_hosts_defaults() {
    let file: openwop::config_file::ConfigFile = serde_json::from_str("{}").unwrap();
    let limits = openwop::server::Limits::default();
    assert_eq!(file.max_connections.get() as usize, limits.max_connections);
    assert_eq!(
        file.max_connections_per_address.get() as usize,
        limits.max_connections_per_address
    );
    assert_eq!(
        file.first_request_timeout_ms.get() as u128,
        limits.first_request_timeout.as_millis()
    );
    assert_eq!(
        file.header_read_timeout_ms.get() as u128,
        limits.header_read_timeout.as_millis()
    );
    assert_eq!(
        file.body_timeout_ms.get() as u128,
        limits.body_timeout.as_millis()
    );
    assert_eq!(
        file.unauthenticated_rate_limit,
        limits.unauthenticated.per_second
    );
    assert_eq!(
        file.unauthenticated_rate_burst,
        limits.unauthenticated.burst
    );
    let rate = openwop::identity::rate::RateConfig::default();
    assert_eq!(
        (file.rate_limit, file.rate_burst),
        (rate.per_second, rate.burst)
    );
    let events = openwop::ops::HostEventRetention::default();
    assert_eq!(file.host_events_max_age_secs, events.max_age.as_secs());
    assert_eq!(file.host_events_max_count, events.max_per_tenant);
    assert_eq!(
        file.request_deadline_secs.get(),
        openwop::edge::deadline::DEFAULT.as_secs()
    );
    let mcp = openwop::settings::mcp_config(&Default::default()).unwrap();
    let code = openwop::settings::McpConfig::default();
    assert_eq!(mcp.call_timeout, code.call_timeout);
    assert_eq!(mcp.task_answer_within, code.task_answer_within);
    assert_eq!(mcp.progress_every, code.progress_every);
    assert_eq!(mcp.tasks, code.tasks);
    let mrtr: openwop::generated::models::ConfigMcpMrtr = serde_json::from_str("{}").unwrap();
    assert_eq!(mrtr.max_rounds.get() as u32, code.max_rounds);
    let a2a: openwop::settings::A2aSettings = serde_json::from_str("{}").unwrap();
    assert_eq!(a2a.default_skill, openwop::settings::DEFAULT_SKILL);
    assert_eq!(file.listen, "127.0.0.1:8080");
    assert_eq!(file.data_dir, "./openwop-data");
}

/// An unknown key is refused by the generated types themselves, not only by the schema.
#[test]
fn the_generated_types_refuse_unknown_keys() {
    for json in [
        r#"{"listn": "x"}"#,
        r#"{"mcp": {"revison": []}}"#,
        r#"{"peers": [{"id": "p", "kind": "http", "url": "https://x.example", "secret": "s"}]}"#,
        r#"{"tenants": {"acme": {"tools": []}}}"#,
    ] {
        let e = serde_json::from_str::<openwop::config_file::ConfigFile>(json)
            .expect_err(json)
            .to_string();
        assert!(e.contains("unknown field"), "{json}: {e}");
    }
    let e = serde_json::from_str::<openwop::agents::AgentDefinition>(
        r#"{"agentId": "a", "persona": "P", "label": "L", "packVersion": "1", "workflows": ["echo"], "mood": 1}"#,
    )
    .expect_err("closed")
    .to_string();
    assert!(e.contains("unknown field"), "{e}");
}
