//! `openwop serve` as a user meets it: help, flags, config file, workflow directory.

mod support;

use serde_json::{Value, json};
use std::time::Duration;
use tokio::process::Command;

use support::process::{self, BIN};

use process::listening;

#[test]
fn help_teaches_with_examples() {
    let out = std::process::Command::new(BIN)
        .args(["serve", "--help"])
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "--listen",
        "--data-dir",
        "--config",
        "--api-key",
        "--workflows",
        "--agents",
        "--database",
        "--egress-allow-loopback",
        "--public-url",
        "Examples:",
        "RUST_LOG",
    ] {
        assert!(text.contains(needle), "help lacks {needle}");
    }
}

/// `openwop --help` shows each command at work, not only their one-line summaries.
#[test]
fn top_level_help_has_examples() {
    let out = std::process::Command::new(BIN)
        .arg("--help")
        .output()
        .unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for needle in [
        "Examples:",
        "openwop serve",
        "openwop validate",
        "openwop config check",
        "openwop backup",
        "openwop probe",
    ] {
        assert!(text.contains(needle), "help lacks {needle}:\n{text}");
    }
}

/// Starts `openwop serve` with `args` and a config file holding `config`, expecting it to
/// refuse; returns its stderr.
fn refused_start(args: &[&str], config: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("openwop.yaml");
    std::fs::write(&file, config).unwrap();
    let out = std::process::Command::new(BIN)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--api-key",
            "t:0123456789abcdef",
        ])
        .args(args)
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--config")
        .arg(&file)
        .output()
        .unwrap();
    assert!(!out.status.success(), "{config}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_bad_public_url_default_skill_or_visibility_name_stops_the_start() {
    assert!(refused_start(&["--public-url", "ftp://x.example"], "{}").contains("public URL"));
    assert!(refused_start(&[], "publicUrl: https://u:p@x.example\n").contains("public URL"));
    assert!(refused_start(&[], "a2a:\n  defaultSkill: nope\n").contains("a2a.defaultSkill"));
    let typo = refused_start(&[], "tenants:\n  t:\n    workflows: [ecko]\n");
    assert!(
        typo.contains("tenants.t.workflows") && typo.contains("ecko"),
        "{typo}"
    );
    let typo = refused_start(&[], "tenants:\n  t:\n    agents: [nobody]\n");
    assert!(typo.contains("tenants.t.agents"), "{typo}");
    assert!(refused_start(&[], "tenants:\n  t:\n    tools: []\n").contains("tools"));
}

#[test]
fn bad_api_key_spec_is_refused_with_a_message() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(BIN)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--api-key",
            "no-colon-here",
        ])
        .arg("--data-dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("TENANT:KEY"));
}

#[test]
fn invalid_workflow_directory_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("bad.yaml"),
        "id: bad\ninputSchema: {}\nnodes:\n  - id: a\n    kind: eval\n",
    )
    .unwrap();
    let out = std::process::Command::new(BIN)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--api-key",
            "t:0123456789abcdef",
        ])
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--workflows")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.yaml"));
}

#[tokio::test(flavor = "multi_thread")]
async fn config_file_and_workflow_directory_add_and_override_workflows() {
    let dir = tempfile::tempdir().unwrap();
    let flows = dir.path().join("flows");
    std::fs::create_dir(&flows).unwrap();
    std::fs::write(
        flows.join("greet.json"),
        json!({
            "id": "greet", "inputSchema": {"type": "object", "required": ["name"]},
            "nodes": [{"id": "hello", "kind": "transform", "value": {"greeting": "hello ${inputs.name}"}}],
            "outputs": {"$merge": ["${nodes.hello}", {"by": "${run.workflowId}"}]}
        })
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        flows.join("echo.yaml"),
        "id: echo\ninputSchema: {type: object}\nnodes: []\noutputs: {overridden: true}\n",
    )
    .unwrap();
    let config = dir.path().join("host.yaml");
    std::fs::write(
        &config,
        format!(
            "listen: 127.0.0.1:0\ndataDir: {}\napiKeys: [\"cfg:cfg-key-0123456789\"]\nworkflows: {}\n",
            dir.path().join("data").display(),
            flows.display()
        ),
    )
    .unwrap();
    let child = Command::new(BIN)
        .args(["serve", "--config"])
        .arg(&config)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (_child, base) = listening(child).await;
    let c = reqwest::Client::new();
    let run = |wf: &'static str, inputs: Value| {
        let (c, base) = (c.clone(), base.clone());
        async move {
            let v: Value = c
                .post(format!("{base}/runs"))
                .bearer_auth("cfg-key-0123456789")
                .json(&json!({"workflowId": wf, "inputs": inputs}))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let url = format!("{base}{}", v["statusUrl"].as_str().unwrap());
            for _ in 0..400 {
                let s: Value = c
                    .get(&url)
                    .bearer_auth("cfg-key-0123456789")
                    .send()
                    .await
                    .unwrap()
                    .json()
                    .await
                    .unwrap();
                if s["status"] == "completed" {
                    return s;
                }
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
            panic!("{wf} did not complete");
        }
    };
    let s = run("greet", json!({"name": "Ada"})).await;
    assert_eq!(
        s["outputs"],
        json!({"greeting": "hello Ada", "by": "greet"})
    );
    let s = run("echo", json!({"x": 1})).await;
    assert_eq!(s["outputs"], json!({"overridden": true}));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_egress_opening_from_the_config_file_is_advertised_and_the_flag_is_off_by_default() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("host.json");
    std::fs::write(
        &config,
        json!({"listen": "127.0.0.1:0", "dataDir": dir.path().join("a"), "apiKeys": ["cfg:cfg-key-0123456789"], "egressAllowLoopback": true})
            .to_string(),
    )
    .unwrap();
    let relaxed = |args: Vec<std::ffi::OsString>| async move {
        let child = Command::new(BIN)
            .arg("serve")
            .args(args)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let (_child, base) = listening(child).await;
        let d: Value = reqwest::get(format!("{base}/.well-known/openwop"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        d["host"]["relaxations"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    let on = relaxed(vec!["--config".into(), config.into_os_string()]).await;
    assert_eq!(on.len(), 1);
    assert_eq!(on[0]["obligation"], "webhooks.egress-guard");
    let off = relaxed(vec![
        "--listen".into(),
        "127.0.0.1:0".into(),
        "--data-dir".into(),
        dir.path().join("b").into_os_string(),
        "--api-key".into(),
        "cfg:cfg-key-0123456789".into(),
    ])
    .await;
    assert!(off.is_empty());
}

#[test]
fn a_database_that_is_not_postgres_or_not_reachable_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    // Port 1 on loopback: nothing listens there, so the connection is refused at once.
    for (url, needle) in [
        ("mysql://root@127.0.0.1/x", "postgres://"),
        ("postgres://postgres@127.0.0.1:1/postgres", "database"),
    ] {
        let out = std::process::Command::new(BIN)
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--api-key",
                "t:0123456789abcdef",
                "--database",
                url,
            ])
            .arg("--data-dir")
            .arg(dir.path())
            .env_remove("OPENWOP_DATABASE_URL")
            .output()
            .unwrap();
        assert!(!out.status.success(), "{url}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{url}: {err}");
        assert!(
            !String::from_utf8_lossy(&out.stdout).contains("listening"),
            "{url}"
        );
    }
    // The config file's `database` and OPENWOP_DATABASE_URL select the store as well.
    let config = dir.path().join("config.yaml");
    std::fs::write(&config, "database: mysql://root@127.0.0.1/x\n").unwrap();
    let from_file = std::process::Command::new(BIN)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--api-key",
            "t:0123456789abcdef",
            "--config",
        ])
        .arg(&config)
        .arg("--data-dir")
        .arg(dir.path())
        .env_remove("OPENWOP_DATABASE_URL")
        .output()
        .unwrap();
    let from_env = std::process::Command::new(BIN)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--api-key",
            "t:0123456789abcdef",
        ])
        .arg("--data-dir")
        .arg(dir.path())
        .env("OPENWOP_DATABASE_URL", "mysql://root@127.0.0.1/x")
        .output()
        .unwrap();
    for out in [from_file, from_env] {
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("postgres://"));
    }
    // Nothing was written for SQLite either.
    assert!(!dir.path().join("openwop.sqlite3").exists());
}

#[test]
fn an_agent_routing_a_missing_workflow_is_refused_at_start_naming_both() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("typo.yaml"),
        "agentId: typo-agent\npersona: Typo\nlabel: L\npackVersion: '1'\nworkflows: [echo, ecoh]\n",
    )
    .unwrap();
    let out = std::process::Command::new(BIN)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--api-key",
            "t:0123456789abcdef",
        ])
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--agents")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("typo-agent") && stderr.contains("ecoh"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn config_file_agents_directory_adds_agents_to_the_inventory() {
    let dir = tempfile::tempdir().unwrap();
    let agents = dir.path().join("agents");
    std::fs::create_dir(&agents).unwrap();
    std::fs::write(
        agents.join("greeter.json"),
        json!({"agentId": "greeter", "persona": "Greeter", "label": "Says hello", "packVersion": "2.0.0", "workflows": ["echo"]}).to_string(),
    )
    .unwrap();
    let config = dir.path().join("host.json");
    std::fs::write(
        &config,
        json!({"listen": "127.0.0.1:0", "dataDir": dir.path().join("data"), "apiKeys": ["cfg:cfg-key-0123456789"], "agents": agents}).to_string(),
    )
    .unwrap();
    let child = Command::new(BIN)
        .args(["serve", "--config"])
        .arg(&config)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (_child, base) = listening(child).await;
    let v: Value = reqwest::Client::new()
        .get(format!("{base}/agents"))
        .bearer_auth("cfg-key-0123456789")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let ids: Vec<&str> = v["agents"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["agentId"].as_str())
        .collect();
    assert_eq!(ids, ["approvals-desk", "greeter", "workflow-runner"], "{v}");
}

#[test]
fn mcp_stdio_takes_the_same_database_flag_and_refuses_a_wrong_one() {
    let dir = tempfile::tempdir().unwrap();
    let help = std::process::Command::new(BIN)
        .args(["mcp-stdio", "--help"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&help.stdout).contains("--database"));
    let out = std::process::Command::new(BIN)
        .args([
            "mcp-stdio",
            "--api-key",
            "t:0123456789abcdef",
            "--database",
            "mysql://root@127.0.0.1/x",
        ])
        .arg("--data-dir")
        .arg(dir.path())
        .env("OPENWOP_API_KEY", "0123456789abcdef")
        .env_remove("OPENWOP_DATABASE_URL")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("postgres://"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.is_empty(), "nothing on the JSON-RPC channel");
}

/// An operator's view through the real binary: `--log-format json` writes one JSON line
/// per request (route template, status, tenant; never the key or the path's ids),
/// `/healthz` answers, and `/metrics` counts the requests by route and status.
#[tokio::test]
async fn requests_are_logged_as_json_lines_and_counted_in_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let key = "acme-secret-key-0123456789";
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--log-format", "json"])
        .arg("--api-key")
        .arg(format!("acme:{key}"))
        .arg("--data-dir")
        .arg(dir.path())
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (mut child, base) = listening(child).await;
    let http = reqwest::Client::new();
    assert_eq!(
        http.get(format!("{base}/healthz"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    let refused = http
        .get(format!("{base}/runs/acme~2Fr-secretish/events/poll"))
        .bearer_auth("not-a-key-of-this-host")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let ok = http
        .get(format!("{base}/runs"))
        .bearer_auth(key)
        .header("x-request-id", "ci-run-42.7")
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    // The caller's request id is answered back; without one (or with one that is not a
    // plain token) the host makes one, a different one for each request.
    assert_eq!(ok.headers()["x-request-id"], "ci-run-42.7");
    let made = |r: &reqwest::Response| r.headers()["x-request-id"].to_str().unwrap().to_owned();
    let refused_id = made(&refused);
    assert!(refused_id.starts_with("req_"), "{refused_id}");
    let odd = http
        .get(format!("{base}/healthz"))
        .header("x-request-id", "two words")
        .send()
        .await
        .unwrap();
    let odd_id = made(&odd);
    assert!(
        odd_id.starts_with("req_") && odd_id != refused_id,
        "{odd_id}"
    );
    let metrics = http
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        metrics.contains(
            "openwop_http_requests_total{route=\"/runs/{run_id}/events/poll\",method=\"GET\",status=\"401\"} 1"
        ),
        "{metrics}"
    );
    assert!(metrics.contains("route=\"/runs\",method=\"GET\",status=\"200\"} 1"));
    assert!(
        metrics.contains("openwop_refusals_total{reason=\"unauthenticated\"} 1"),
        "{metrics}"
    );
    child.kill().await.unwrap();
    let mut text = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut tokio::io::BufReader::new(stderr), &mut text)
        .await
        .unwrap();
    let lines: Vec<Value> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    assert!(!lines.is_empty(), "no JSON log lines: {text}");
    let request_line = |route: &str, status: u64| {
        lines
            .iter()
            .any(|l| l["span"]["route"] == route && l["fields"]["status"] == json!(status))
    };
    // A refusal is counted, not logged one by one (issue #35: a flood of 401s must not
    // flood the log): no access-log line for it, one in the metrics.
    assert!(!request_line("/runs/{run_id}/events/poll", 401), "{text}");
    assert!(
        lines.iter().any(|l| l["span"]["route"] == "/runs"
            && l["fields"]["status"] == json!(200)
            && l["span"]["tenant"] == "acme"
            && l["span"]["request_id"] == "ci-run-42.7"),
        "{text}"
    );
    assert!(
        !text.contains("two words"),
        "an id that is not a token reached the log"
    );
    assert!(!text.contains(key), "the key reached the log");
    assert!(!text.contains("secretish"), "a path id reached the log");
    assert!(!text.contains("\u{1b}["), "colours written to a pipe");
}

/// The card's interface URLs and discovery's `a2a.agentCardUrl` / `mcp.serverUrls` for a
/// host started with `extra` flags, asked with a forged `Host` header.
async fn urls_of(extra: &[&str]) -> (String, Vec<String>, Value) {
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(BIN)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--api-key",
            "t:0123456789abcdef",
        ])
        .args(extra)
        .arg("--data-dir")
        .arg(dir.path())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (_child, base) = listening(child).await;
    let http = reqwest::Client::new();
    let get = |path: &str| {
        http.get(format!("{base}{path}"))
            .header("Host", "evil.example")
            .send()
    };
    let card: Value = get("/.well-known/agent-card.json")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let discovery: Value = get("/.well-known/openwop")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let urls = card["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["url"].as_str().map(str::to_owned))
        .collect();
    let named = json!({"agentCardUrl": discovery["a2a"]["agentCardUrl"], "serverUrls": discovery["mcp"]["serverUrls"]});
    (base, urls, named)
}

#[tokio::test(flavor = "multi_thread")]
async fn card_and_discovery_urls_come_from_public_url_else_the_listen_address_never_from_host() {
    let (base, urls, named) = urls_of(&[]).await;
    assert_eq!(
        urls,
        [format!("{base}/a2a/jsonrpc"), format!("{base}/a2a/rest")]
    );
    assert_eq!(
        named,
        json!({"agentCardUrl": format!("{base}/.well-known/agent-card.json"), "serverUrls": [format!("{base}/mcp")]})
    );
    let (_, urls, named) = urls_of(&["--public-url", "https://wop.example.com"]).await;
    assert_eq!(
        urls,
        [
            "https://wop.example.com/a2a/jsonrpc",
            "https://wop.example.com/a2a/rest"
        ]
    );
    assert_eq!(
        named,
        json!({"agentCardUrl": "https://wop.example.com/.well-known/agent-card.json", "serverUrls": ["https://wop.example.com/mcp"]})
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn api_keys_come_from_a_file_and_the_environment_off_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("keys");
    std::fs::write(&keys, "# tenants\nfile:file-key-0123456789\n").unwrap();
    let child = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--api-key-file"])
        .arg(&keys)
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .env(
            "OPENWOP_API_KEYS",
            "env:env-key-0123456789, other:other-key-0123456789",
        )
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    let (_child, base) = listening(child).await;
    let c = reqwest::Client::new();
    for key in [
        "file-key-0123456789",
        "env-key-0123456789",
        "other-key-0123456789",
    ] {
        let r = c
            .get(format!("{base}/runs"))
            .bearer_auth(key)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200, "{key}");
    }
    // With keys given, no dev key is minted; and none is on the command line.
    assert!(!dir.path().join("data").join("dev-api-key").exists());
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    assert!(!String::from_utf8_lossy(&cmdline).contains("key-0123456789"));
}

#[test]
fn the_database_url_is_read_from_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let url = dir.path().join("db-url");
    std::fs::write(&url, "mysql://secret@db.invalid/x\n").unwrap();
    let out = std::process::Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--database-url-file"])
        .arg(&url)
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .env_remove("OPENWOP_DATABASE_URL")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("postgres://"),
        "the file's URL was used: {stderr}"
    );
    assert!(
        !stderr.contains("secret@"),
        "the URL is not echoed: {stderr}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_speaks_https_with_a_certificate_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
    let made = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=localhost",
            "-addext",
            "subjectAltName=IP:127.0.0.1,DNS:localhost",
            // An end-entity certificate (rustls, the client here, refuses a CA as one).
            "-addext",
            "basicConstraints=critical,CA:FALSE",
        ])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let child = Command::new(BIN)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--api-key",
            "acme:acme-key-0123456789",
        ])
        .arg("--tls-cert")
        .arg(&cert)
        .arg("--tls-key")
        .arg(&key)
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (_child, base) = listening(child).await;
    assert!(base.starts_with("https://127.0.0.1:"), "{base}");
    let root = reqwest::Certificate::from_pem(&std::fs::read(&cert).unwrap()).unwrap();
    let c = reqwest::Client::builder()
        .add_root_certificate(root)
        .build()
        .unwrap();
    let r = c
        .get(format!("{base}/runs"))
        .bearer_auth("acme-key-0123456789")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["openwop-version"], "2.0");
    // Plain HTTP is not served beside it.
    let plain = base.replacen("https://", "http://", 1);
    let refused = reqwest::Client::new()
        .get(format!("{plain}/healthz"))
        .timeout(Duration::from_secs(5))
        .send()
        .await;
    assert!(refused.is_err() || !refused.unwrap().status().is_success());
}

#[test]
fn mcp_stdio_reads_the_config_file_and_takes_the_key_once() {
    use std::io::Write as _;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("openwop.yaml");
    std::fs::write(
        &config,
        "apiKeys: ['acme:acme-secret-key-123']\nmcp:\n  revisions: ['2026-07-28']\n  mrtr: { maxRounds: 2 }\n",
    )
    .unwrap();
    let mut child = std::process::Command::new(BIN)
        .args(["mcp-stdio", "--config"])
        .arg(&config)
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .env("OPENWOP_API_KEY", "acme:acme-secret-key-123")
        .env_remove("OPENWOP_DATABASE_URL")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let meta = r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;
    let input = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"server/discover\",\"params\":{{\"_meta\":{meta}}}}}\n{{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{{\"_meta\":{meta}}}}}\n"
    );
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut answers: Vec<serde_json::Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // Requests are served concurrently: answers come in any order.
    answers.sort_by_key(|a| a["id"].as_i64());
    assert_eq!(
        answers.len(),
        2,
        "both piped requests answered: {stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        answers[0]["result"]["supportedVersions"],
        serde_json::json!(["2026-07-28"]),
        "{stdout}"
    );
    assert!(answers[1]["result"]["tools"].is_array(), "{stdout}");
}

/// Before: out of file descriptors, the accept loop logged a warning every 100 ms (each
/// retry fails again) for as long as the descriptors stayed taken. Now each failure is
/// counted (`openwop_refusals_total{reason="accept_failed"}`) and written at most once
/// per interval with the other refusals. The binary's descriptor limit is lowered to a
/// few above what it holds (`prlimit`; skipped, and said so, where it is missing) and
/// connections are held open past it for 2.5 s.
#[tokio::test(flavor = "multi_thread")]
async fn accept_failures_are_counted_not_logged_every_retry() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(BIN)
        .args(["serve", "--listen", "127.0.0.1:0", "--log-format", "json"])
        .arg("--api-key")
        .arg("acme:acme-secret-key-0123456789")
        .arg("--data-dir")
        .arg(dir.path())
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (mut child, base) = listening(child).await;
    let pid = child.id().expect("pid");
    let held = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| d.count())
        .unwrap_or(0);
    let limit = held + 8;
    let lowered = std::process::Command::new("prlimit")
        .arg("--pid")
        .arg(pid.to_string())
        .arg(format!("--nofile={limit}:{limit}"))
        .status()
        .is_ok_and(|s| s.success());
    if held == 0 || !lowered {
        eprintln!(
            "SKIPPED accept_failures_are_counted_not_logged_every_retry: cannot read or lower the child's descriptor limit"
        );
        return;
    }
    let addr = base.trim_start_matches("http://").to_owned();
    let mut open = Vec::new();
    for _ in 0..40 {
        if let Ok(s) = tokio::net::TcpStream::connect(&addr).await {
            open.push(s);
        }
    }
    tokio::time::sleep(Duration::from_millis(2500)).await;
    drop(open);
    tokio::time::sleep(Duration::from_millis(500)).await;

    let http = reqwest::Client::new();
    let metrics = http
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let failed: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("openwop_refusals_total{reason=\"accept_failed\"} "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("no accept_failed series: {metrics}"));
    assert!(failed >= 5, "{failed} accept failures counted over 2.5 s");
    child.kill().await.unwrap();
    let mut text = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut tokio::io::BufReader::new(stderr), &mut text)
        .await
        .unwrap();
    let accept_lines = text
        .lines()
        .filter(|l| l.to_ascii_lowercase().contains("accept"))
        .count();
    assert!(
        accept_lines <= 2,
        "{accept_lines} log lines about accept failures ({failed} failures): {text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn conformance_mode_comes_from_the_flag_the_environment_or_the_config_file_and_is_off_by_default()
 {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("host.yaml");
    std::fs::write(
        &config,
        format!(
            "listen: 127.0.0.1:0\ndataDir: {}\napiKeys: [\"cfg:cfg-key-0123456789\"]\nconformance: true\n",
            dir.path().join("c").display()
        ),
    )
    .unwrap();
    let doc = |args: Vec<std::ffi::OsString>, env: Option<&'static str>| async move {
        let mut cmd = Command::new(BIN);
        cmd.arg("serve")
            .args(args)
            .env_remove("OPENWOP_CONFORMANCE")
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true);
        if let Some(v) = env {
            cmd.env("OPENWOP_CONFORMANCE", v);
        }
        let (_child, base) = listening(cmd.spawn().unwrap()).await;
        let d: Value = reqwest::get(format!("{base}/.well-known/openwop"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        d
    };
    let plain = |sub: &str| {
        vec![
            "--listen".into(),
            "127.0.0.1:0".into(),
            "--data-dir".into(),
            dir.path().join(sub).into_os_string(),
            "--api-key".into(),
            "cfg:cfg-key-0123456789".into(),
        ]
    };
    let from_file = doc(
        vec!["--config".into(), config.clone().into_os_string()],
        None,
    )
    .await;
    assert_eq!(
        from_file["conformance"]["seamsProfile"],
        "openwop-conformance-seams-v2"
    );
    assert!(
        from_file["fixtures"]
            .as_array()
            .is_some_and(|f| !f.is_empty())
    );
    let mut flag = plain("f");
    flag.push("--conformance".into());
    let from_flag = doc(flag, None).await;
    assert!(from_flag["fixtures"].is_array(), "{from_flag}");
    let from_env = doc(plain("e"), Some("true")).await;
    assert!(from_env["fixtures"].is_array(), "{from_env}");
    let off = doc(plain("o"), None).await;
    assert!(
        off.get("fixtures").is_none() && off.get("conformance").is_none(),
        "{off}"
    );
}

/// Issue #32: a host an operator configures without a command line (a container, a
/// service unit): every `serve` flag has an `OPENWOP_*` variable, shown in `--help`, and
/// they beat the config file as the flags do.
#[tokio::test(flavor = "multi_thread")]
async fn the_host_is_configured_by_environment_variables_alone() {
    let help = std::process::Command::new(BIN)
        .args(["serve", "--help"])
        .output()
        .unwrap();
    let help = String::from_utf8_lossy(&help.stdout);
    for var in [
        "OPENWOP_LISTEN",
        "OPENWOP_DATA_DIR",
        "OPENWOP_CONFIG",
        "OPENWOP_PUBLIC_URL",
        "OPENWOP_WORKFLOWS",
        "OPENWOP_AGENTS",
        "OPENWOP_EGRESS_ALLOW_LOOPBACK",
        "OPENWOP_LEASE_TTL_MS",
        "OPENWOP_API_KEYS",
    ] {
        assert!(help.contains(var), "serve --help does not name {var}");
    }

    let dir = tempfile::tempdir().unwrap();
    let (flows, agents, data) = (
        dir.path().join("flows"),
        dir.path().join("agents"),
        dir.path().join("data"),
    );
    std::fs::create_dir(&flows).unwrap();
    std::fs::create_dir(&agents).unwrap();
    std::fs::write(
        flows.join("greet.yaml"),
        "id: greet\ninputSchema: {type: object}\nnodes: []\noutputs: {greeting: hello}\n",
    )
    .unwrap();
    std::fs::write(
        agents.join("greeter.yaml"),
        "agentId: greeter\npersona: Greeter\nlabel: Says hello\npackVersion: '1'\nworkflows: [greet]\n",
    )
    .unwrap();
    let config = dir.path().join("openwop.yaml");
    // The file's publicUrl loses to OPENWOP_PUBLIC_URL; its other settings still apply.
    std::fs::write(&config, "publicUrl: https://file.example\nrateLimit: 0\n").unwrap();
    let child = Command::new(BIN)
        .arg("serve")
        .env("OPENWOP_LISTEN", "127.0.0.1:0")
        .env("OPENWOP_DATA_DIR", &data)
        .env("OPENWOP_CONFIG", &config)
        .env("OPENWOP_WORKFLOWS", &flows)
        .env("OPENWOP_AGENTS", &agents)
        .env("OPENWOP_PUBLIC_URL", "https://env.example")
        .env("OPENWOP_EGRESS_ALLOW_LOOPBACK", "true")
        .env("OPENWOP_LEASE_TTL_MS", "5000")
        .env_remove("OPENWOP_DATABASE_URL")
        .env_remove("OPENWOP_API_KEYS")
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (_child, base) = listening(child).await;
    // No key configured: the dev key is minted in OPENWOP_DATA_DIR.
    let key = std::fs::read_to_string(data.join("dev-api-key")).unwrap();
    let key = key.trim();
    let http = reqwest::Client::new();
    let discovery: Value = http
        .get(format!("{base}/.well-known/openwop"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        discovery["a2a"]["agentCardUrl"], "https://env.example/.well-known/agent-card.json",
        "OPENWOP_PUBLIC_URL wins over the file"
    );
    assert_eq!(
        discovery["host"]["relaxations"][0]["obligation"], "webhooks.egress-guard",
        "OPENWOP_EGRESS_ALLOW_LOOPBACK=true opens the guard: {discovery}"
    );
    let created: Value = http
        .post(format!("{base}/runs"))
        .bearer_auth(key)
        .json(&json!({"workflowId": "greet", "inputs": {}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        created["runId"]
            .as_str()
            .is_some_and(|r| r.starts_with("dev/")),
        "a workflow of OPENWOP_WORKFLOWS runs with the dev key: {created}"
    );
    let inventory: Value = http
        .get(format!("{base}/agents"))
        .bearer_auth(key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert!(
        inventory["agents"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["agentId"] == "greeter"),
        "an agent of OPENWOP_AGENTS is listed: {inventory}"
    );
    assert!(data.join("openwop.sqlite3").exists());

    // A flag still beats its variable.
    let (_, urls, _) = urls_of_with_env(
        &["--public-url", "https://flag.example"],
        &[("OPENWOP_PUBLIC_URL", "https://env.example")],
    )
    .await;
    assert_eq!(urls[0], "https://flag.example/a2a/jsonrpc");
}

/// `urls_of` with environment variables set for the child.
async fn urls_of_with_env(extra: &[&str], env: &[(&str, &str)]) -> (String, Vec<String>, Value) {
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(BIN)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--api-key",
            "t:0123456789abcdef",
        ])
        .args(extra)
        .arg("--data-dir")
        .arg(dir.path())
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (_child, base) = listening(child).await;
    let card: Value = reqwest::get(format!("{base}/.well-known/agent-card.json"))
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let urls = card["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["url"].as_str().map(str::to_owned))
        .collect();
    (base, urls, card)
}

/// The image's HEALTHCHECK: `openwop probe` asks the host the environment names and
/// exits 0 when it is ready, 1 when nothing answers.
#[tokio::test(flavor = "multi_thread")]
async fn probe_exits_zero_on_a_ready_host_and_one_on_none() {
    let dir = tempfile::tempdir().unwrap();
    let child = Command::new(BIN)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--api-key",
            "t:0123456789abcdef",
        ])
        .arg("--data-dir")
        .arg(dir.path())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let (mut child, base) = listening(child).await;
    let addr = base.trim_start_matches("http://").to_owned();
    let probe = |listen: String| async move {
        Command::new(BIN)
            .arg("probe")
            .env("OPENWOP_LISTEN", listen)
            .env_remove("OPENWOP_CONFIG")
            .env_remove("OPENWOP_TLS_CERT")
            .output()
            .await
            .unwrap()
    };
    let ok = probe(addr.clone()).await;
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(String::from_utf8_lossy(&ok.stdout).contains("/readyz: 200"));
    child.kill().await.unwrap();
    child.wait().await.unwrap();
    let down = probe(addr).await;
    assert_eq!(down.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&down.stderr).contains("openwop probe:"));
}

/// `mcp-stdio --connect` opens no store: a data dir or database in the environment (set
/// for `serve` in the same container) is ignored, the same on the command line refused.
#[test]
fn mcp_stdio_connect_ignores_store_settings_from_the_environment_and_refuses_flags() {
    let dir = tempfile::tempdir().unwrap();
    let with_env = std::process::Command::new(BIN)
        .args(["mcp-stdio", "--connect", "http://127.0.0.1:9/mcp"])
        .env("OPENWOP_DATA_DIR", dir.path())
        .env("OPENWOP_DATABASE_URL", "postgres://nobody@127.0.0.1:9/x")
        .env("OPENWOP_API_KEY", "t:0123456789abcdef")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert!(
        with_env.status.success(),
        "{}",
        String::from_utf8_lossy(&with_env.stderr)
    );
    let with_flag = std::process::Command::new(BIN)
        .args([
            "mcp-stdio",
            "--connect",
            "http://127.0.0.1:9/mcp",
            "--data-dir",
        ])
        .arg(dir.path())
        .env("OPENWOP_API_KEY", "t:0123456789abcdef")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(with_flag.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&with_flag.stderr).contains("'--data-dir'"),
        "{}",
        String::from_utf8_lossy(&with_flag.stderr)
    );
}

/// runtime/README.md's configuration reference is the operator's one table: it names every
/// variable the commands' help shows, so a new flag's variable cannot go undocumented.
#[test]
fn the_configuration_reference_names_every_variable_the_help_shows() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let reference = readme
        .split("## Configuration reference")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("runtime/README.md has a Configuration reference section");
    for command in ["serve", "mcp-stdio", "backup", "probe"] {
        let help = std::process::Command::new(BIN)
            .args([command, "--help"])
            .output()
            .unwrap();
        let help = String::from_utf8_lossy(&help.stdout);
        let vars: Vec<&str> = help
            .split("[env: ")
            .skip(1)
            .filter_map(|s| s.split('=').next())
            .collect();
        assert!(!vars.is_empty() || command == "backup", "{command}: {help}");
        for var in vars {
            assert!(
                reference.contains(&format!("`{var}`")),
                "{command} --help shows {var}, the configuration reference does not"
            );
        }
    }
}
