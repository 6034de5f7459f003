//! A host on 127.0.0.1:0 with two tenants, stopped when the handle drops.
#![allow(dead_code)]

use openwop::host::{Host, HostConfig};
use openwop::identity::KeyRing;
use openwop::ops::Ops;
use reqwest::{Client, RequestBuilder, Response};
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub const KEY_A: &str = "acme-key-0123456789";
pub const KEY_B: &str = "globex-key-0123456789";

pub struct TestHost {
    pub base: String,
    pub client: Client,
    pub ops: Arc<Ops>,
    stop: tokio::sync::watch::Sender<bool>,
    _dir: tempfile::TempDir,
}

impl Drop for TestHost {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

pub async fn start() -> TestHost {
    start_with(|_| {}).await
}

/// A host as [`start`] makes it, with `adjust` applied to its configuration first.
pub async fn start_with(adjust: impl FnOnce(&mut HostConfig)) -> TestHost {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut keys = KeyRing::default();
    keys.add("acme", KEY_A).unwrap();
    keys.add("globex", KEY_B).unwrap();
    let mut config = HostConfig::new(dir.path().to_path_buf(), keys);
    adjust(&mut config);
    let host = Host::build(config).await.expect("host builds");
    let ops = host.state.ops.clone();
    let stop = host.stopper();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(host.serve(listener, std::future::pending()));
    let client = Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap();
    TestHost {
        base,
        client,
        ops,
        stop,
        _dir: dir,
    }
}

impl TestHost {
    /// The host's data dir.
    pub fn data_dir(&self) -> &std::path::Path {
        self._dir.path()
    }

    pub fn get(&self, path: &str, key: &str) -> RequestBuilder {
        self.client
            .get(format!("{}{path}", self.base))
            .bearer_auth(key)
    }

    pub fn post(&self, path: &str, key: &str, body: Value) -> RequestBuilder {
        self.client
            .post(format!("{}{path}", self.base))
            .bearer_auth(key)
            .json(&body)
    }

    /// Creates a run and returns its bound id.
    pub async fn create(&self, key: &str, workflow: &str, inputs: Value) -> String {
        let r = self
            .post(
                "/runs",
                key,
                serde_json::json!({"workflowId": workflow, "inputs": inputs}),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 201, "create {workflow}");
        let v: Value = r.json().await.unwrap();
        v["runId"].as_str().unwrap().to_owned()
    }

    pub async fn snapshot(&self, key: &str, run_id: &str) -> Value {
        let r = self
            .get(&format!("/runs/{}", openwop::ids::project(run_id)), key)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let snap: Value = r.json().await.unwrap();
        let findings = openwop_generated::validators::validate_run_snapshot(&snap);
        assert!(findings.is_empty(), "snapshot {snap}: {findings:?}");
        snap
    }

    /// The run's event log so far, read through the long-poll endpoint.
    pub async fn events(&self, key: &str, run_id: &str) -> Vec<Value> {
        let v: Value = self
            .get(
                &format!(
                    "/runs/{}/events/poll?timeout=1",
                    openwop::ids::project(run_id)
                ),
                key,
            )
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        v["events"].as_array().unwrap().clone()
    }

    /// Polls the snapshot until `status` matches, within 10 s.
    pub async fn wait_status(&self, key: &str, run_id: &str, status: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let snap = self.snapshot(key, run_id).await;
            if snap["status"] == status {
                return snap;
            }
            assert!(
                Instant::now() < deadline,
                "run {run_id} stuck at {} waiting for {status}",
                snap["status"]
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Status and JSON body of an error response, after checking the envelope shape.
pub async fn envelope(r: Response) -> (u16, Value) {
    let status = r.status().as_u16();
    assert_eq!(
        r.headers()
            .get("openwop-version")
            .map(|v| v.to_str().unwrap()),
        Some("2.0")
    );
    let body: Value = r.json().await.expect("error body is JSON");
    let obj = body.as_object().expect("envelope is an object");
    assert!(
        obj.keys()
            .all(|k| ["error", "message", "details"].contains(&k.as_str())),
        "closed envelope: {body}"
    );
    assert!(
        body["error"].is_string() && body["message"].is_string(),
        "{body}"
    );
    let findings = openwop_generated::validators::validate_error_envelope(&body);
    assert!(findings.is_empty(), "envelope {body}: {findings:?}");
    (status, body)
}
