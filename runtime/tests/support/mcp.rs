//! MCP: hosts with an MCP configuration, and requests that speak 2026-07-28 to `/mcp`
//! (headers mirrored from the body as SEP-2243 asks). `use support::mcp::*;` brings the
//! [`Mcp`] methods into scope (the REST helpers have methods of the same names, so a
//! binary imports one of the two).

use std::time::Duration;

use openwop::edge::mcp::McpConfig;
use serde_json::{Value, json};

use super::{TestHost, host};

pub const MODERN: &str = "2026-07-28";
pub const LEGACY: &str = "2025-11-25";

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
    // As `openwop serve` does: the URLs the host names are where it listens.
    host()
        .public_url()
        .port(port)
        .with(move |c| {
            c.mcp = config;
            c.workflows_dir = workflows_dir;
        })
        .start()
        .await
}

pub async fn start_full(config: McpConfig, workflows_dir: Option<std::path::PathBuf>) -> TestHost {
    start_on_port(config, 0, workflows_dir).await
}

/// `_meta` of a 2026 request; `capabilities` lists what the client declares.
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

pub trait Mcp {
    /// Posts `body` with exactly `headers` (plus JSON content type and Accept).
    async fn post_raw(&self, key: Option<&str>, headers: &[(&str, String)], body: Value) -> Reply;
    /// A well-formed 2026 request from `key`.
    async fn call(&self, key: &str, method: &str, params: Value, caps: Value) -> Reply;
    /// A run as its own tenant reads it through `ops`.
    async fn run(&self, run_id: &str) -> openwop::ops::RunRecord;
    /// A run's whole event log as its own tenant reads it through `ops`.
    async fn events(&self, run_id: &str) -> Vec<openwop::ops::EventRecord>;
    /// The payloads of the tenant's `negotiation.decided` host events.
    async fn negotiations(&self, tenant: &str) -> Vec<Value>;
    /// Polls the run until `status` matches, within 5 s.
    async fn wait_status(&self, run_id: &str, status: &str) -> openwop::store::RunRecord;
}

impl Mcp for TestHost {
    async fn post_raw(&self, key: Option<&str>, headers: &[(&str, String)], body: Value) -> Reply {
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

    async fn call(&self, key: &str, method: &str, mut params: Value, caps: Value) -> Reply {
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
        Mcp::post_raw(
            self,
            Some(key),
            &headers,
            json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}),
        )
        .await
    }

    async fn run(&self, run_id: &str) -> openwop::ops::RunRecord {
        let id = openwop::ids::BoundId::parse_path(run_id).expect("run id");
        let tenant = id.tenant().to_owned();
        self.state
            .ops
            .get_run(&self.subject(&tenant), &id)
            .await
            .expect("run")
    }

    async fn events(&self, run_id: &str) -> Vec<openwop::ops::EventRecord> {
        let id = openwop::ids::BoundId::parse_path(run_id).expect("run id");
        let tenant = id.tenant().to_owned();
        self.state
            .ops
            .poll(&self.subject(&tenant), &id, -1, Duration::ZERO)
            .await
            .expect("events")
            .events
    }

    async fn negotiations(&self, tenant: &str) -> Vec<Value> {
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

    async fn wait_status(&self, run_id: &str, status: &str) -> openwop::store::RunRecord {
        for _ in 0..100 {
            let run = Mcp::run(self, run_id).await;
            if run.status.as_str() == status {
                return run;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("run {run_id} never became {status}");
    }
}
