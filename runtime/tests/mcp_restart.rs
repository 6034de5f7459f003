//! The MCP requestState key and 2025-11-25 sessions are kept in the run store: what one
//! `openwop serve` minted is honoured by the next one on the same data dir after a
//! SIGKILL, and refused by a host on another data dir.

mod support;

use std::time::Duration;

use reqwest::Client;
use serde_json::{Value, json};
use support::KEY_A;
use support::process;
use tokio::process::Child;

/// Starts the binary and returns it with its base URL (read from its stdout).
async fn spawn(dir: &std::path::Path) -> (Child, String) {
    process::start(dir).await
}

/// A 2026-07-28 tools/call answered as JSON.
async fn call(c: &Client, base: &str, params: Value) -> Value {
    let name = params["name"].as_str().expect("name").to_owned();
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    });
    c.post(format!("{base}/mcp"))
        .bearer_auth(KEY_A)
        .header("accept", "application/json")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", name)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}))
        .send()
        .await
        .expect("post")
        .json()
        .await
        .expect("json")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_state_survives_a_restart_on_the_same_data_dir_only() {
    let dir = tempfile::tempdir().expect("dir");
    let c = Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");

    let (mut first, base) = spawn(dir.path()).await;
    let asked = call(&c, &base, json!({"name": "clarify", "arguments": {}})).await;
    let result = &asked["result"];
    assert_eq!(result["resultType"], "input_required", "{asked}");
    let state = result["requestState"]
        .as_str()
        .expect("requestState")
        .to_owned();
    let key = result["inputRequests"]
        .as_object()
        .and_then(|m| m.keys().next().cloned())
        .expect("one input request");
    first.kill().await.expect("SIGKILL");
    let _ = first.wait().await;

    // Another data dir is another key: the same state is refused there.
    let other = tempfile::tempdir().expect("other dir");
    let (mut stranger, other_base) = spawn(other.path()).await;
    let retry = json!({
        "name": "clarify",
        "arguments": {},
        "inputResponses": {key.clone(): {"action": "accept", "content": {"q1": "go on"}}},
        "requestState": state,
    });
    let refused = call(&c, &other_base, retry.clone()).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    stranger.kill().await.expect("SIGKILL");

    // The restarted host reads the same key and finishes the call.
    let (mut second, base) = spawn(dir.path()).await;
    let done = call(&c, &base, retry.clone()).await;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(done["result"]["isError"], false, "{done}");
    assert_eq!(
        done["result"]["structuredContent"]["answer"],
        json!({"q1": "go on"})
    );
    // Still single use across the restart's own lifetime.
    let again = call(&c, &base, retry).await;
    assert_eq!(again["error"]["code"], -32602, "{again}");
    second.kill().await.expect("SIGKILL");
}

/// A 2025-11-25 request inside `session`: the status and the JSON-RPC body.
async fn in_session(c: &Client, base: &str, session: &str, body: Value) -> (u16, Value) {
    let resp = c
        .post(format!("{base}/mcp"))
        .bearer_auth(KEY_A)
        .header("accept", "application/json")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-11-25")
        .json(&body)
        .send()
        .await
        .expect("post");
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_legacy_session_survives_a_restart_on_the_same_data_dir_only() {
    let dir = tempfile::tempdir().expect("dir");
    let c = Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");

    let (mut first, base) = spawn(dir.path()).await;
    let init = c
        .post(format!("{base}/mcp"))
        .bearer_auth(KEY_A)
        .header("accept", "application/json")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}))
        .send()
        .await
        .expect("initialize");
    let session = init
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session id")
        .to_owned();
    first.kill().await.expect("SIGKILL");
    let _ = first.wait().await;

    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}});
    let (_second, base) = spawn(dir.path()).await;
    let (status, body) = in_session(&c, &base, &session, list.clone()).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["result"]["tools"].is_array(), "{body}");

    let other = tempfile::tempdir().expect("dir");
    let (_third, base) = spawn(other.path()).await;
    let (status, body) = in_session(&c, &base, &session, list).await;
    assert_eq!(status, 404, "{body}");
}
