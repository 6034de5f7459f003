//! `openwop mcp-stdio`'s loop over in-memory pipes: discover, a call, and a
//! `notifications/cancelled` that cancels the run its request holds.

mod support;

use std::time::Duration;

use openwop::edge::mcp::{McpConfig, McpState};
use serde_json::{Value, json};
use support::KEY_A;
use support::mcp::*;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[tokio::test]
async fn stdio_serves_requests_and_a_cancel_notification_cancels_the_run() {
    let h = start().await;
    let state = McpState::with_key(h.state.clone(), McpConfig::default(), &[7u8; 32]);
    let (mut to_host, host_in) = tokio::io::duplex(64 * 1024);
    let (host_out, from_host) = tokio::io::duplex(64 * 1024);
    let subject = h.subject("acme");
    let server = tokio::spawn(openwop::mcp_stdio_cmd::serve(
        state, subject, host_in, host_out,
    ));
    let mut lines = BufReader::new(from_host).lines();
    let mut send = async |v: Value| {
        to_host
            .write_all(format!("{v}\n").as_bytes())
            .await
            .expect("write");
    };
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta(MODERN, json!({}))}})).await;
    let reply: Value =
        serde_json::from_str(&lines.next_line().await.expect("read").expect("line")).expect("json");
    assert_eq!(reply["id"], 1);
    assert_eq!(reply["result"]["supportedVersions"][0], MODERN);

    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"x": 1}, "_meta": meta(MODERN, json!({}))}})).await;
    let reply: Value =
        serde_json::from_str(&lines.next_line().await.expect("read").expect("line")).expect("json");
    assert_eq!(reply["result"]["structuredContent"]["x"], 1, "{reply}");

    // Without _meta and without initialize: a JSON-RPC error, never silence.
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}})).await;
    let reply: Value =
        serde_json::from_str(&lines.next_line().await.expect("read").expect("line")).expect("json");
    assert_eq!(reply["error"]["code"], -32602);

    send(json!({"jsonrpc": "2.0", "id": "slow-1", "method": "tools/call", "params": {"name": "slow", "arguments": {"ms": 60000}, "_meta": meta(MODERN, json!({}))}})).await;
    let slow = {
        let mut found = None;
        for _ in 0..100 {
            let runs = h
                .state
                .ops
                .list_runs(&h.subject("acme"), Default::default())
                .await
                .expect("runs");
            if let Some(r) = runs
                .runs
                .iter()
                .find(|r| r.workflow_id == "slow" && r.status.as_str() == "running")
            {
                found = Some(r.run_id.clone());
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        found.expect("slow run started")
    };
    send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "slow-1"}})).await;
    let run = h.wait_status(&slow, "cancelled").await;
    let events = h.events(&run.run_id).await;
    let cancelled = events
        .iter()
        .find(|e| e.event_type == "run.cancelled")
        .expect("run.cancelled");
    assert_eq!(cancelled.payload["reason"], "mcp-request-cancelled");

    drop(to_host);
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("exits on EOF")
        .expect("join");
    let _ = KEY_A;
}

/// interop.md "The operation mappings": a row whose `requires` facet the host does not
/// advertise is refused; for MCP the refusal is "no such method".
#[tokio::test]
async fn an_mcp_row_whose_requires_is_not_advertised_is_refused() {
    let h = start().await;
    let mut document = h.state.discovery.get().document.clone();
    document["mcp"]
        .as_object_mut()
        .expect("mcp family")
        .remove("serverMount");
    let mut shared = (*h.state).clone();
    shared.discovery = std::sync::Arc::new(openwop::discovery::Live::new(
        openwop::discovery::Discovery::new(document),
    ));
    let app = openwop::app::AppState::new(shared);
    let state = McpState::with_key(app, McpConfig::default(), &[7u8; 32]);
    let ctx = openwop::edge::mcp::Ctx::new(
        h.subject("acme"),
        openwop::edge::mcp::Era::Legacy("2025-11-25".into()),
    );
    let list = openwop::edge::mcp::rpc::parse_message(
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#,
    )
    .expect("message");
    let refused = state.dispatch(&ctx, &list).await.expect_err("refused");
    assert_eq!(refused.code, -32601, "{}", refused.message);
    assert!(
        refused.message.contains("mcp.serverMount"),
        "{}",
        refused.message
    );
    // server/discover requires nothing and is still served.
    let discover = openwop::edge::mcp::rpc::parse_message(
        br#"{"jsonrpc":"2.0","id":2,"method":"server/discover","params":{}}"#,
    )
    .expect("message");
    assert!(state.dispatch(&ctx, &discover).await.is_ok());
}

/// Piping requests and closing stdin at once (`printf '...' | openwop mcp-stdio`): every
/// request read before the end of input is answered.
#[tokio::test]
async fn stdio_answers_every_request_read_before_stdin_closed() {
    let h = start().await;
    let state = McpState::with_key(h.state.clone(), McpConfig::default(), &[7u8; 32]);
    let (mut to_host, host_in) = tokio::io::duplex(64 * 1024);
    let (host_out, from_host) = tokio::io::duplex(64 * 1024);
    let server = tokio::spawn(openwop::mcp_stdio_cmd::serve(
        state,
        h.subject("acme"),
        host_in,
        host_out,
    ));
    let piped = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "slow", "arguments": {"ms": 300}}}),
    ];
    let text: String = piped.iter().map(|v| format!("{v}\n")).collect();
    to_host.write_all(text.as_bytes()).await.expect("write");
    drop(to_host);
    tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("exits once answered")
        .expect("join");
    let mut lines = BufReader::new(from_host).lines();
    let mut ids = Vec::new();
    while let Some(line) = lines.next_line().await.expect("read") {
        let v: Value = serde_json::from_str(&line).expect("json");
        assert!(v.get("error").is_none(), "{v}");
        ids.push(v["id"].clone());
    }
    assert_eq!(ids, vec![json!(1), json!(2), json!(3)]);
}

#[test]
fn the_api_key_is_given_once_as_tenant_colon_key() {
    let (_, subject) =
        openwop::mcp_stdio_cmd::caller(&[], "acme:acme-secret-key-123", None).expect("caller");
    assert_eq!(subject.tenant, "acme");
    // With keys configured, the variable may be the bare key or TENANT:KEY.
    let specs = vec!["acme:acme-secret-key-123".to_owned()];
    for env in ["acme-secret-key-123", "acme:acme-secret-key-123"] {
        let (_, subject) = openwop::mcp_stdio_cmd::caller(&specs, env, None).expect(env);
        assert_eq!(subject.tenant, "acme");
    }
    let Err(e) = openwop::mcp_stdio_cmd::caller(&[], "just-a-key-without-tenant", None) else {
        panic!("a bare key with no keys configured is refused");
    };
    assert!(e.contains("TENANT:KEY"), "{e}");
    assert!(openwop::mcp_stdio_cmd::caller(&specs, "wrong-key-0123456789", None).is_err());
}

#[test]
fn the_dev_key_serve_printed_acts_as_tenant_dev() {
    let dev = "owdev_0123456789abcdefghij";
    let (_, subject) =
        openwop::mcp_stdio_cmd::caller(&[], dev, Some(&format!("{dev}\n"))).expect("dev key");
    assert_eq!(subject.tenant, "dev");
    // Another bare key is still refused, and configured keys switch the dev key off.
    assert!(openwop::mcp_stdio_cmd::caller(&[], "owdev_somebody-else-0000", Some(dev)).is_err());
    let specs = vec!["acme:acme-secret-key-123".to_owned()];
    assert!(openwop::mcp_stdio_cmd::caller(&specs, dev, Some(dev)).is_err());
}

/// `subscriptions/listen` on stdio: the acknowledgement, then the named task's changes on
/// stdout, each tagged with the subscription id; a cancel of the listen request ends it.
#[tokio::test]
async fn stdio_serves_subscriptions_listen() {
    let h = start().await;
    let state = McpState::with_key(h.state.clone(), McpConfig::default(), &[7u8; 32]);
    let (mut to_host, host_in) = tokio::io::duplex(64 * 1024);
    let (host_out, from_host) = tokio::io::duplex(64 * 1024);
    let server = tokio::spawn(openwop::mcp_stdio_cmd::serve(
        state,
        h.subject("acme"),
        host_in,
        host_out,
    ));
    let mut lines = BufReader::new(from_host).lines();
    let mut send = async |v: Value| {
        to_host
            .write_all(format!("{v}\n").as_bytes())
            .await
            .expect("write");
    };
    let tasks = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "slow", "arguments": {"ms": 60000}, "_meta": meta(MODERN, tasks.clone())}})).await;
    let reply: Value =
        serde_json::from_str(&lines.next_line().await.expect("read").expect("line")).expect("json");
    let task_id = reply["result"]["taskId"]
        .as_str()
        .expect("taskId")
        .to_owned();
    send(json!({"jsonrpc": "2.0", "id": "sub", "method": "subscriptions/listen", "params": {"notifications": {"taskIds": [task_id]}, "_meta": meta(MODERN, tasks.clone())}})).await;
    let ack: Value =
        serde_json::from_str(&lines.next_line().await.expect("read").expect("line")).expect("json");
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(ack["params"]["notifications"]["taskIds"], json!([task_id]));
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "sub"
    );
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tasks/cancel", "params": {"taskId": task_id, "_meta": meta(MODERN, tasks)}})).await;
    let mut seen_cancelled = false;
    for _ in 0..4 {
        let line = tokio::time::timeout(Duration::from_secs(5), lines.next_line())
            .await
            .expect("in time")
            .expect("read")
            .expect("line");
        let v: Value = serde_json::from_str(&line).expect("json");
        if v["method"] == "notifications/tasks" && v["params"]["status"] == "cancelled" {
            assert_eq!(
                v["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
                "sub"
            );
            seen_cancelled = true;
            break;
        }
    }
    assert!(seen_cancelled, "the task's change reached stdout");
    send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "sub"}})).await;
    drop(to_host);
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("exits on EOF")
        .expect("join");
}

/// A 2025-11-25 session on stdio whose initialize declared elicitation is asked with
/// elicitation/create on stdout; the answer on stdin resolves the interrupt and the call
/// completes.
#[tokio::test]
async fn a_legacy_stdio_session_is_asked_with_elicitation_create() {
    let h = start().await;
    let state = McpState::with_key(h.state.clone(), McpConfig::default(), &[7u8; 32]);
    let (mut to_host, host_in) = tokio::io::duplex(64 * 1024);
    let (host_out, from_host) = tokio::io::duplex(64 * 1024);
    let server = tokio::spawn(openwop::mcp_stdio_cmd::serve(
        state,
        h.subject("acme"),
        host_in,
        host_out,
    ));
    let mut lines = BufReader::new(from_host).lines();
    let mut send = async |v: Value| {
        to_host
            .write_all(format!("{v}\n").as_bytes())
            .await
            .expect("write");
    };
    let mut next = async || -> Value {
        let line = tokio::time::timeout(Duration::from_secs(5), lines.next_line())
            .await
            .expect("in time")
            .expect("read")
            .expect("line");
        serde_json::from_str(&line).expect("json")
    };
    send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}, "clientInfo": {"name": "t", "version": "1"}}})).await;
    assert_eq!(next().await["result"]["protocolVersion"], "2025-11-25");
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "approval", "arguments": {}}})).await;
    let request = next().await;
    assert_eq!(request["method"], "elicitation/create", "{request}");
    send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {"action": "accept", "content": {"decision": "accept"}}})).await;
    let answer = next().await;
    assert_eq!(answer["id"], 2, "{answer}");
    assert_eq!(answer["result"]["isError"], false, "{answer}");
    drop(to_host);
    tokio::time::timeout(Duration::from_secs(5), server)
        .await
        .expect("exits on EOF")
        .expect("join");
}

/// stdio has no headers: `_meta.traceparent` is the only trace carrier (interop.md, "Trace
/// context"), and the request log of `openwop mcp-stdio` (stderr) carries the caller's
/// trace id, as the HTTP edge's request log does. A malformed one is ignored, never an
/// error.
#[tokio::test]
async fn stdio_continues_the_trace_a_request_names_in_its_meta() {
    use std::process::Stdio;
    const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
    let data = tempfile::tempdir().expect("dir");
    let mut child = tokio::process::Command::new(support::process::BIN)
        .arg("mcp-stdio")
        .arg("--data-dir")
        .arg(data.path())
        .env("OPENWOP_API_KEY", format!("acme:{KEY_A}"))
        .env("RUST_LOG", "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn openwop mcp-stdio");
    let mut traced = meta(MODERN, json!({}));
    traced["traceparent"] = json!(format!("00-{TRACE}-00f067aa0ba902b7-01"));
    let mut malformed = meta(MODERN, json!({}));
    malformed["traceparent"] = json!("00-not-a-trace-01");
    let requests = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo", "arguments": {"a": 1}, "_meta": traced}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"a": 2}, "_meta": malformed}}),
    ];
    let mut stdin = child.stdin.take().expect("stdin");
    for r in &requests {
        stdin
            .write_all(format!("{r}\n").as_bytes())
            .await
            .expect("write");
    }
    drop(stdin);
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("exits once answered")
        .expect("output");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let answers: Vec<Value> = stdout
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(answers.len(), 2, "{stdout}");
    for a in &answers {
        assert_eq!(a["result"]["isError"], false, "{a}");
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let logged: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("request") && l.contains("mcp{"))
        .collect();
    assert_eq!(logged.len(), 2, "one request log line each: {stderr}");
    assert_eq!(
        logged.iter().filter(|l| l.contains(TRACE)).count(),
        1,
        "the traced request's log carries its trace id: {stderr}"
    );
    assert!(!stderr.contains("not-a-trace"), "{stderr}");
}

/// On stdio too: the initialize era's `ping` is answered `{}` before `initialize`; SEP-1303
/// input validation failures are tool errors (`isError` with the schema's findings) in both
/// eras while a malformed call stays a protocol error; a repeated member is an invalid
/// request; ids come back byte for byte.
#[tokio::test]
async fn stdio_ping_sep_1303_tool_errors_and_strict_framing() {
    let h = start().await;
    let state = McpState::with_key(h.state.clone(), McpConfig::default(), &[7u8; 32]);
    let (mut to_host, host_in) = tokio::io::duplex(64 * 1024);
    let (host_out, from_host) = tokio::io::duplex(64 * 1024);
    let server = tokio::spawn(openwop::mcp_stdio_cmd::serve(
        state,
        h.subject("acme"),
        host_in,
        host_out,
    ));
    let modern = meta(MODERN, json!({}));
    let piped = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string(),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "slow", "arguments": {"ms": "x"}, "_meta": modern}}).to_string(),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "slow", "arguments": [1], "_meta": modern}}).to_string(),
        r#"{"jsonrpc":"2.0","id":4,"id":5,"method":"ping"}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}"#.to_owned(),
        json!({"jsonrpc": "2.0", "id": 6, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}).to_string(),
        json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "slow", "arguments": {"ms": "x"}}}).to_string(),
    ];
    let text: String = piped.iter().map(|v| format!("{v}\n")).collect();
    to_host.write_all(text.as_bytes()).await.expect("write");
    drop(to_host);
    tokio::time::timeout(Duration::from_secs(10), server)
        .await
        .expect("exits once answered")
        .expect("join");
    let mut lines = BufReader::new(from_host).lines();
    let mut raw = Vec::new();
    while let Some(line) = lines.next_line().await.expect("read") {
        raw.push(line);
    }
    let by_id = |id: i64| -> Value {
        raw.iter()
            .map(|l| serde_json::from_str::<Value>(l).expect("json"))
            .find(|v| v["id"] == id)
            .unwrap_or_else(|| panic!("no answer to {id} in {raw:?}"))
    };
    assert_eq!(by_id(1)["result"], json!({}));
    for id in [2, 7] {
        let answer = by_id(id);
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        let said = answer["result"]["content"][0]["text"]
            .as_str()
            .expect("text");
        assert!(said.contains("argument `ms`"), "{said}");
    }
    assert_eq!(by_id(3)["error"]["code"], -32602);
    assert!(
        raw.iter()
            .any(|l| l.contains(r#""error":{"code":-32600"#) && l.contains(r#""id":null"#)),
        "the repeated id is an invalid request: {raw:?}"
    );
    assert!(
        raw.iter().any(|l| l
            .starts_with(r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":{}"#)),
        "{raw:?}"
    );
}

/// `openwop mcp-stdio` reloads on SIGHUP as `serve` does (tenant visibility and peers; its
/// one caller keeps the key it was authenticated with): a config file that narrows the
/// caller's tenant to one workflow narrows `tools/list` of the same running process.
#[tokio::test]
async fn stdio_reloads_tenant_visibility_on_sighup() {
    use std::process::Stdio;
    let dir = tempfile::tempdir().expect("dir");
    let config = dir.path().join("config.json");
    let write = |workflows: Value| {
        std::fs::write(
            &config,
            json!({"tenants": {"acme": {"workflows": workflows}}}).to_string(),
        )
        .expect("write config")
    };
    write(json!(["echo", "approval"]));
    let mut child = tokio::process::Command::new(support::process::BIN)
        .arg("mcp-stdio")
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--config")
        .arg(&config)
        .env("OPENWOP_API_KEY", format!("acme:{KEY_A}"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn openwop mcp-stdio");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut id = 0;
    let mut tools = async || -> Vec<String> {
        id += 1;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list",
                             "params": {"_meta": meta(MODERN, json!({}))}});
        stdin
            .write_all(format!("{request}\n").as_bytes())
            .await
            .expect("write");
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next_line())
            .await
            .expect("answered")
            .expect("read")
            .expect("a line");
        let answer: Value = serde_json::from_str(&line).expect("json");
        let mut names: Vec<String> = answer["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{answer}"))
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_owned))
            .collect();
        names.sort();
        names
    };
    assert_eq!(tools().await, ["approval", "echo"]);

    write(json!(["echo"]));
    let pid = child.id().expect("pid").to_string();
    let hup = std::process::Command::new("kill")
        .args(["-HUP", &pid])
        .status()
        .expect("kill");
    assert!(hup.success());
    // The reload runs beside the serving loop: ask until it has landed (bounded).
    let mut seen = Vec::new();
    for _ in 0..100 {
        seen = tools().await;
        if seen == ["echo"] {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(seen, ["echo"], "the reload narrowed the tenant");
    assert!(
        child.try_wait().expect("status").is_none(),
        "SIGHUP did not end the process"
    );
}
