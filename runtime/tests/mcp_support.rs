//! A host with the MCP mount merged beside REST on a loopback port, and helpers that
//! speak 2026-07-28 to it (headers mirrored from the body as SEP-2243 asks).
#![allow(dead_code)]

use std::time::Duration;

use openwop::edge::mcp::McpConfig;
use openwop::host::{Host, HostConfig};
use openwop::identity::{KeyRing, Subject};
use reqwest::Client;
use serde_json::{Value, json};
use tokio::net::TcpListener;

pub const KEY_A: &str = "acme-key-0123456789abcdef";
pub const KEY_B: &str = "other-key-0123456789abcdef";
pub const MODERN: &str = "2026-07-28";
pub const LEGACY: &str = "2025-11-25";

pub struct TestHost {
    pub base: String,
    pub http: Client,
    pub state: openwop::app::AppState,
    pub engine: std::sync::Arc<openwop::engine::Engine>,
    _dir: tempfile::TempDir,
}

pub async fn start() -> TestHost {
    start_with(McpConfig::default()).await
}

pub async fn start_with(config: McpConfig) -> TestHost {
    start_full(config, None).await
}

pub async fn start_on_port(
    config: McpConfig,
    port: u16,
    workflows_dir: Option<std::path::PathBuf>,
) -> TestHost {
    start_inner(config, workflows_dir, port).await
}

pub async fn start_full(config: McpConfig, workflows_dir: Option<std::path::PathBuf>) -> TestHost {
    start_inner(config, workflows_dir, 0).await
}

async fn start_inner(
    config: McpConfig,
    workflows_dir: Option<std::path::PathBuf>,
    port: u16,
) -> TestHost {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut keys = KeyRing::default();
    keys.add("acme", KEY_A).expect("key a");
    keys.add("other", KEY_B).expect("key b");
    let listener = TcpListener::bind(("127.0.0.1", port)).await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    // As `openwop serve` does: the URLs the host names are where it listens.
    let host = Host::build(HostConfig {
        workflows_dir,
        mcp: config,
        public_url: Some(base.clone()),
        ..HostConfig::new(dir.path().to_path_buf(), keys)
    })
    .await
    .expect("host");
    let app = host.router();
    let state = host.state.clone();
    let engine = host.engine.clone();
    tokio::spawn(async move {
        let _host = host;
        let _ = axum::serve(listener, app).await;
    });
    TestHost {
        base,
        http: Client::new(),
        state,
        engine,
        _dir: dir,
    }
}

/// `_meta` of a 2026 request; `extensions` lists client extensions it declares.
pub fn meta(version: &str, capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
    })
}

pub fn tasks_caps() -> Value {
    json!({"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {}})
}

pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl TestHost {
    pub fn subject(&self, tenant: &str) -> Subject {
        let key = if tenant == "acme" { KEY_A } else { KEY_B };
        self.state
            .keys
            .authenticate(Some(&format!("Bearer {key}")))
            .expect("subject")
    }

    /// Posts `body` with exactly `headers` (plus JSON content type and Accept).
    pub async fn post_raw(
        &self,
        key: Option<&str>,
        headers: &[(&str, String)],
        body: Value,
    ) -> Reply {
        let mut req = self
            .http
            .post(format!("{}/mcp", self.base))
            .header("accept", "application/json, text/event-stream")
            .json(&body);
        if let Some(key) = key {
            req = req.bearer_auth(key);
        }
        for (k, v) in headers {
            req = req.header(*k, v);
        }
        let resp = req.send().await.expect("send");
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let text = resp.text().await.expect("body");
        // An SSE answer carries one `data:` line with the JSON-RPC response.
        let json_text = text
            .lines()
            .find_map(|l| l.strip_prefix("data: ").or_else(|| l.strip_prefix("data:")))
            .map(str::to_owned)
            .unwrap_or(text.clone());
        let body = serde_json::from_str(&json_text).unwrap_or(Value::String(text));
        Reply {
            status,
            headers,
            body,
        }
    }

    /// A well-formed 2026 request from `key`.
    pub async fn call(&self, key: &str, method: &str, mut params: Value, caps: Value) -> Reply {
        params["_meta"] = meta(MODERN, caps);
        let mut headers = vec![
            ("MCP-Protocol-Version", MODERN.to_owned()),
            ("Mcp-Method", method.to_owned()),
        ];
        let name = params
            .get("name")
            .or_else(|| params.get("taskId"))
            .and_then(Value::as_str);
        if let Some(name) = name {
            headers.push(("Mcp-Name", name.to_owned()));
        }
        self.post_raw(
            Some(key),
            &headers,
            json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}),
        )
        .await
    }

    /// A run as its own tenant reads it through `ops`.
    pub async fn run(&self, run_id: &str) -> openwop::ops::RunRecord {
        let id = openwop::ids::BoundId::parse_path(run_id).expect("run id");
        let tenant = id.tenant().to_owned();
        self.state
            .ops
            .get_run(&self.subject(&tenant), &id)
            .await
            .expect("run")
    }

    /// A run's whole event log as its own tenant reads it through `ops`.
    pub async fn events(&self, run_id: &str) -> Vec<openwop::ops::EventRecord> {
        let id = openwop::ids::BoundId::parse_path(run_id).expect("run id");
        let tenant = id.tenant().to_owned();
        self.state
            .ops
            .poll(&self.subject(&tenant), &id, -1, std::time::Duration::ZERO)
            .await
            .expect("events")
            .events
    }

    pub async fn negotiations(&self, tenant: &str) -> Vec<Value> {
        let subject = self.subject(tenant);
        self.state
            .ops
            .host_events(&subject, -1, 1000)
            .await
            .expect("host events")
            .into_iter()
            .filter(|e| e.event_type == "negotiation.decided")
            .map(|e| e.payload)
            .collect()
    }

    pub async fn wait_status(&self, run_id: &str, status: &str) -> openwop::store::RunRecord {
        for _ in 0..100 {
            let run = self.run(run_id).await;
            if run.status.as_str() == status {
                return run;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("run {run_id} never became {status}");
    }
}
