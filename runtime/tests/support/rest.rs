//! REST helpers: requests with a tenant's key, runs, snapshots, events, the error
//! envelope. `use support::rest::*;` brings the [`Rest`] methods into scope (the MCP
//! helpers have methods of the same names, so a binary imports one of the two).

use std::time::{Duration, Instant};

use reqwest::{RequestBuilder, Response};
use serde_json::Value;

use openwop::host::HostConfig;

use super::{TestHost, host};

/// The REST tests' host: both tenants, a fresh data dir, an ephemeral port.
pub async fn start() -> TestHost {
    host().start().await
}

/// A host as [`start`] makes it, with `adjust` applied to its configuration first.
pub async fn start_with(adjust: impl FnOnce(&mut HostConfig)) -> TestHost {
    host().with(adjust).start().await
}

pub trait Rest {
    fn get(&self, path: &str, key: &str) -> RequestBuilder;
    fn post(&self, path: &str, key: &str, body: Value) -> RequestBuilder;
    /// Creates a run and returns its bound id.
    async fn create(&self, key: &str, workflow: &str, inputs: Value) -> String;
    /// The run's snapshot, checked against the schema.
    async fn snapshot(&self, key: &str, run_id: &str) -> Value;
    /// The run's event log so far, read through the long-poll endpoint.
    async fn events(&self, key: &str, run_id: &str) -> Vec<Value>;
    /// Polls the snapshot until `status` matches, within 10 s.
    async fn wait_status(&self, key: &str, run_id: &str, status: &str) -> Value;
}

impl Rest for TestHost {
    fn get(&self, path: &str, key: &str) -> RequestBuilder {
        self.http
            .get(format!("{}{path}", self.base))
            .bearer_auth(key)
    }

    fn post(&self, path: &str, key: &str, body: Value) -> RequestBuilder {
        self.http
            .post(format!("{}{path}", self.base))
            .bearer_auth(key)
            .json(&body)
    }

    async fn create(&self, key: &str, workflow: &str, inputs: Value) -> String {
        let r = Rest::post(
            self,
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

    async fn snapshot(&self, key: &str, run_id: &str) -> Value {
        let r = Rest::get(
            self,
            &format!("/runs/{}", openwop::ids::project(run_id)),
            key,
        )
        .send()
        .await
        .unwrap();
        assert_eq!(r.status(), 200);
        let snap: Value = r.json().await.unwrap();
        let findings = openwop_generated::validators::validate_run_snapshot(&snap);
        assert!(findings.is_empty(), "snapshot {snap}: {findings:?}");
        snap
    }

    async fn events(&self, key: &str, run_id: &str) -> Vec<Value> {
        let v: Value = Rest::get(
            self,
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

    async fn wait_status(&self, key: &str, run_id: &str, status: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let snap = Rest::snapshot(self, key, run_id).await;
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
