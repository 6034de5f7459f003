//! `openwop mcp-stdio --connect`: a stdio client reaches a running host over HTTP and sees
//! the same runs as its HTTP clients, in both MCP eras.

mod support;

use std::sync::Arc;
use std::time::Duration;

use openwop::mcp_bridge::{Bridge, run};
use serde_json::{Value, json};
use support::KEY_A;
use support::mcp::*;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines};

struct Stdio {
    to_bridge: DuplexStream,
    lines: Lines<BufReader<DuplexStream>>,
    bridge: tokio::task::JoinHandle<()>,
}

impl Stdio {
    fn start(url: &str, key: &str) -> Stdio {
        let bridge = Arc::new(Bridge::new(url, key).expect("bridge"));
        let (to_bridge, bridge_in) = tokio::io::duplex(64 * 1024);
        let (bridge_out, from_bridge) = tokio::io::duplex(64 * 1024);
        let bridge = tokio::spawn(run(bridge, bridge_in, bridge_out));
        Stdio {
            to_bridge,
            lines: BufReader::new(from_bridge).lines(),
            bridge,
        }
    }

    async fn send(&mut self, v: Value) {
        self.to_bridge
            .write_all(format!("{v}\n").as_bytes())
            .await
            .expect("write");
    }

    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(20), self.lines.next_line())
            .await
            .expect("an answer in time")
            .expect("read")
            .expect("a line");
        serde_json::from_str(&line).expect("one JSON message per line")
    }

    async fn close(self) {
        drop(self.to_bridge);
        tokio::time::timeout(Duration::from_secs(10), self.bridge)
            .await
            .expect("the bridge ends when stdin ends")
            .expect("no panic");
    }
}

#[tokio::test]
async fn a_stdio_client_on_the_bridge_sees_the_hosts_runs_in_the_2026_era() {
    let h = start().await;
    let mut stdio = Stdio::start(&h.base, &format!("acme:{KEY_A}"));
    stdio.send(json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta(MODERN, json!({}))}})).await;
    let reply = stdio.next().await;
    assert_eq!(reply["id"], 1, "{reply}");
    assert_eq!(reply["result"]["supportedVersions"][0], MODERN, "{reply}");

    stdio.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta(MODERN, json!({}))}})).await;
    let reply = stdio.next().await;
    assert!(
        reply["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty()),
        "{reply}"
    );

    // An id no f64 holds goes through the bridge and back unchanged.
    let big = r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    stdio
        .to_bridge
        .write_all(format!("{big}\n").as_bytes())
        .await
        .expect("write");
    let line = tokio::time::timeout(Duration::from_secs(20), stdio.lines.next_line())
        .await
        .expect("an answer in time")
        .expect("read")
        .expect("a line");
    assert!(
        line.contains(r#""id":123456789012345678901234567890"#),
        "{line}"
    );

    stdio.send(json!({"jsonrpc": "2.0", "id": "call-1", "method": "tools/call", "params": {"name": "echo", "arguments": {"x": 7}, "_meta": meta(MODERN, json!({}))}})).await;
    let reply = stdio.next().await;
    assert_eq!(reply["id"], "call-1", "{reply}");
    assert_eq!(reply["result"]["structuredContent"]["x"], 7, "{reply}");

    // The run the stdio client started is the host's, visible to the same tenant over REST.
    let runs = h
        .state
        .ops
        .list_runs(&h.subject("acme"), Default::default())
        .await
        .expect("runs");
    assert!(
        runs.runs.iter().any(|r| r.workflow_id == "echo"),
        "the bridged call's run is on the host"
    );
    stdio.close().await;
}

#[tokio::test]
async fn the_bridge_carries_a_2025_11_25_session() {
    let h = start().await;
    let mut stdio = Stdio::start(&format!("{}/mcp", h.base), KEY_A);
    stdio.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "desktop", "version": "1"}}})).await;
    let reply = stdio.next().await;
    assert_eq!(reply["result"]["protocolVersion"], LEGACY, "{reply}");
    stdio
        .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    stdio.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "echo", "arguments": {"y": "z"}}})).await;
    let reply = stdio.next().await;
    assert_eq!(reply["id"], 2, "{reply}");
    assert_eq!(reply["result"]["structuredContent"]["y"], "z", "{reply}");
    stdio.close().await;
}

#[tokio::test]
async fn a_refused_key_is_a_json_rpc_error_not_silence() {
    let h = start().await;
    let mut stdio = Stdio::start(&h.base, "not-a-key-0123456789");
    stdio.send(json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {"_meta": meta(MODERN, json!({}))}})).await;
    let reply = stdio.next().await;
    assert_eq!(reply["id"], 9, "{reply}");
    assert!(reply["error"]["code"].is_i64(), "{reply}");
    stdio
        .to_bridge
        .write_all(b"{not json\n")
        .await
        .expect("write");
    let reply = stdio.next().await;
    assert_eq!(
        reply["error"]["code"], -32700,
        "a line that is not JSON: {reply}"
    );
    stdio.close().await;
}
