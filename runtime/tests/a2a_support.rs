//! A host with the A2A router merged beside REST, on a loopback port, for the A2A tests
//! (the real peers drive `openwop serve` itself: see `tests/peers/a2a/run.sh`).
#![allow(dead_code)]

use std::time::Duration;

use openwop::host::{Host, HostConfig};
use openwop::identity::KeyRing;
use reqwest::Client;
use serde_json::{Value, json};
use tokio::net::TcpListener;

pub const KEY_A: &str = "acme-key-0123456789abcdef";
pub const KEY_B: &str = "other-key-0123456789abcdef";

pub struct TestHost {
    pub base: String,
    pub http: Client,
    pub host_state: openwop::app::AppState,
    /// Stops the host's workers (engine, push delivery) as a shutdown would.
    pub stopper: tokio::sync::watch::Sender<bool>,
    /// Where the host keeps its data (`openwop.sqlite3`: runs and interop state).
    pub data_path: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

pub async fn start_with(blocking: Duration, port: u16) -> TestHost {
    start_in(tempfile::tempdir().expect("temp dir"), blocking, port).await
}

/// A host on an existing data directory (a restarted host sees what the first one stored).
pub async fn start_on(path: &std::path::Path) -> TestHost {
    start_in_path(path.to_path_buf(), Duration::from_secs(5), 0).await
}

async fn start_in(dir: tempfile::TempDir, blocking: Duration, port: u16) -> TestHost {
    let mut host = start_in_path(dir.path().to_path_buf(), blocking, port).await;
    host._dir = dir;
    host
}

async fn start_in_path(data_dir: std::path::PathBuf, blocking: Duration, port: u16) -> TestHost {
    start_configured(data_dir, port, |c| c.a2a_blocking_timeout = blocking).await
}

/// A host on `data_dir` with whatever settings `configure` makes (egress, retries...).
pub async fn start_configured(
    data_dir: std::path::PathBuf,
    port: u16,
    configure: impl FnOnce(&mut HostConfig),
) -> TestHost {
    let dir = tempfile::tempdir().expect("placeholder dir");
    let mut keys = KeyRing::default();
    keys.add("acme", KEY_A).expect("key a");
    keys.add("other", KEY_B).expect("key b");
    let mut config = HostConfig {
        a2a_blocking_timeout: Duration::from_secs(5),
        ..HostConfig::new(data_dir.clone(), keys)
    };
    let listener = TcpListener::bind(("127.0.0.1", port)).await.expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    // The card names the host where the tests reach it (a test may name another origin).
    config.public_url = Some(base.clone());
    configure(&mut config);
    let host = Host::build(config).await.expect("host");
    let stopper = host.stopper();
    let app = host.router();
    let state = host.state.clone();
    // The engine keeps running while the host value lives; leak it into the server task.
    tokio::spawn(async move {
        let _host = host;
        let _ = axum::serve(listener, app).await;
    });
    TestHost {
        base,
        http: Client::new(),
        host_state: state,
        stopper,
        data_path: data_dir,
        _dir: dir,
    }
}

impl TestHost {
    pub fn data_dir(&self) -> &std::path::Path {
        self._dir.path()
    }
}

pub async fn start() -> TestHost {
    start_with(Duration::from_secs(5), 0).await
}

pub fn user_message(id: &str, skill: Option<&str>, parts: Value) -> Value {
    let mut m = json!({"messageId": id, "role": "ROLE_USER", "parts": parts});
    if let Some(skill) = skill {
        m["metadata"] = json!({"openwop": {"skill": skill}});
    }
    m
}

impl TestHost {
    /// One JSON-RPC call; returns (HTTP status, body).
    pub async fn rpc_with(
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
        let resp = req.send().await.expect("send");
        let status = resp.status().as_u16();
        let text = resp.text().await.expect("body");
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    pub async fn rpc(&self, method: &str, params: Value) -> Value {
        self.rpc_with(Some(KEY_A), Some("1.0"), method, params)
            .await
            .1
    }

    pub async fn rest(
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
        let resp = req.send().await.expect("send");
        let status = resp.status().as_u16();
        let text = resp.text().await.expect("body");
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    /// The run as REST's getRun shows it to the given key.
    pub async fn get_run(&self, key: &str, run_id: &str) -> (u16, Value) {
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
