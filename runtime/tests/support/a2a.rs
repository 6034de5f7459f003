//! A2A: hosts that name where they listen (the card's URLs), with a 5 s blocking timeout,
//! and JSON-RPC and HTTP+JSON calls. `use support::a2a::*;` brings the [`A2a`] methods
//! into scope.

use std::path::Path;
use std::time::Duration;

use openwop::host::HostConfig;
use serde_json::{Value, json};

use super::host::HostBuilder;
use super::{KEY_A, TestHost, host};

/// The A2A tests' host: public URL where it listens, `message:send` blocks up to 5 s.
pub fn a2a_host<'a>() -> HostBuilder<'a> {
    host()
        .public_url()
        .with(|c| c.a2a_blocking_timeout = Duration::from_secs(5))
}

pub async fn start() -> TestHost {
    a2a_host().start().await
}

/// A host whose `message:send` blocks at most `blocking`, on `port` (0: ephemeral).
pub async fn start_with(blocking: Duration, port: u16) -> TestHost {
    a2a_host()
        .port(port)
        .with(move |c| c.a2a_blocking_timeout = blocking)
        .start()
        .await
}

/// A host on an existing data directory (a restarted host sees what the first one stored).
pub async fn start_on(path: &Path) -> TestHost {
    a2a_host().data_dir(path).start().await
}

/// A host on `data_dir` with whatever settings `configure` makes (egress, retries...).
pub async fn start_configured(
    data_dir: std::path::PathBuf,
    port: u16,
    configure: impl FnOnce(&mut HostConfig),
) -> TestHost {
    a2a_host()
        .data_dir(data_dir)
        .port(port)
        .with(configure)
        .start()
        .await
}

pub fn user_message(id: &str, skill: Option<&str>, parts: Value) -> Value {
    let mut m = json!({"messageId": id, "role": "ROLE_USER", "parts": parts});
    if let Some(skill) = skill {
        m["metadata"] = json!({"openwop": {"skill": skill}});
    }
    m
}

pub trait A2a {
    /// One JSON-RPC call; returns (HTTP status, body).
    async fn rpc_with(
        &self,
        key: Option<&str>,
        version: Option<&str>,
        method: &str,
        params: Value,
    ) -> (u16, Value);
    /// One JSON-RPC call as tenant A, A2A 1.0; returns the body.
    async fn rpc(&self, method: &str, params: Value) -> Value;
    /// One HTTP+JSON call under `/a2a/rest`; returns (HTTP status, body).
    async fn rest(
        &self,
        key: Option<&str>,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value);
    /// The run as REST's getRun shows it to the given key.
    async fn get_run(&self, key: &str, run_id: &str) -> (u16, Value);
}

/// Status and body (JSON, or the text as a string).
async fn answer(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    let text = resp.text().await.expect("body");
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

impl A2a for TestHost {
    async fn rpc_with(
        &self,
        key: Option<&str>,
        version: Option<&str>,
        method: &str,
        params: Value,
    ) -> (u16, Value) {
        let mut req = self
            .http
            .post(format!("{}/a2a/jsonrpc", self.base))
            .json(&json!({"jsonrpc": "2.0", "id": "req-1", "method": method, "params": params}));
        if let Some(key) = key {
            req = req.bearer_auth(key);
        }
        if let Some(v) = version {
            req = req.header("A2A-Version", v);
        }
        answer(req.send().await.expect("send")).await
    }

    async fn rpc(&self, method: &str, params: Value) -> Value {
        A2a::rpc_with(self, Some(KEY_A), Some("1.0"), method, params)
            .await
            .1
    }

    async fn rest(
        &self,
        key: Option<&str>,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut req = self
            .http
            .request(method, format!("{}/a2a/rest{}", self.base, path))
            .header("A2A-Version", "1.0");
        if let Some(key) = key {
            req = req.bearer_auth(key);
        }
        if let Some(body) = body {
            req = req.json(&body);
        }
        answer(req.send().await.expect("send")).await
    }

    async fn get_run(&self, key: &str, run_id: &str) -> (u16, Value) {
        let projected = run_id.replace('/', "~2F");
        let resp = self
            .http
            .get(format!("{}/runs/{projected}", self.base))
            .bearer_auth(key)
            .send()
            .await
            .expect("send");
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }
}
