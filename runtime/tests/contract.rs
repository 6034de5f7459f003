//! The generated crate is the wire: the real `openwop` binary, with two tenants, called
//! through the generated client for every operation of `dispatch::REST_OPERATIONS`. For
//! each answer: it decodes into the generated model; the model written back is the JSON
//! the host sent (fetched raw as well; nulls and empty containers a model leaves out are
//! equal to absent); and `validators::validate_response` finds nothing. The same for every
//! run event and host event the bundled workflows produce (the typed payload is a known
//! variant), the discovery document, the A2A cards, and an error envelope for each error
//! status the host answers on REST.
//!
//! The cases are driven from the table: an operation with no case fails the test, so a
//! new operation in the OpenAPI document cannot go unchecked.

mod support;

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use openwop_generated::client::{Client, Error as ClientError};
use openwop_generated::dispatch::REST_OPERATIONS;
use openwop_generated::models::{self as m, HostEventPayload, RunEventPayload};
use openwop_generated::validators::{
    Options, validate_agent_card, validate_discovery, validate_host_event, validate_response,
    validate_run_event,
};
use reqwest::Method;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use support::process;
use support::{KEY_A, KEY_B};

// ---------------------------------------------------------------- comparison

/// A JSON value with nulls and empty arrays and objects removed from objects: what a
/// model may leave out when it writes a value back.
fn normal(v: &Value) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(_, v)| !is_blank(v))
                .map(|(k, v)| (k.clone(), normal(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(normal).collect()),
        other => other.clone(),
    }
}

fn is_blank(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// The raw answer decodes into `T`, `T` writes back the same JSON, and the OpenAPI
/// document's schema for `(operation, status)` finds nothing.
fn round_trip<T: DeserializeOwned + Serialize>(operation: &str, status: u16, raw: &Value) -> T {
    let findings = validate_response(operation, status, raw);
    assert!(
        findings.is_empty(),
        "{operation} {status}: the answer breaks the OpenAPI document: {findings:#?}\n{raw:#}"
    );
    let model: T = serde_json::from_value(raw.clone()).unwrap_or_else(|e| {
        panic!("{operation} {status}: the answer does not decode into its model: {e}\n{raw:#}")
    });
    let again = serde_json::to_value(&model).expect("a model encodes");
    assert_eq!(
        normal(&again),
        normal(raw),
        "{operation} {status}: the model does not write back what the host sent"
    );
    model
}

/// A typed event decoded from an SSE `data:` line: the validator finds nothing, the
/// envelope round-trips, and the payload is the variant its type binds.
fn check_run_event(raw: &Value) -> m::RunEvent {
    let findings = validate_run_event(raw);
    assert!(
        findings.is_empty(),
        "run event breaks its schema: {findings:#?}\n{raw:#}"
    );
    let event: m::RunEvent = serde_json::from_value(raw.clone()).expect("a RunEvent");
    assert_eq!(
        normal(&serde_json::to_value(&event).expect("encodes")),
        normal(raw)
    );
    let payload = event
        .typed_payload()
        .expect("the payload fits its type's schema");
    assert!(
        !matches!(payload, RunEventPayload::Other(_)),
        "{} has no typed payload",
        event.type_
    );
    event
}

fn check_host_event(raw: &Value) -> m::HostEvent {
    let findings = validate_host_event(raw);
    assert!(
        findings.is_empty(),
        "host event breaks its schema: {findings:#?}\n{raw:#}"
    );
    let event: m::HostEvent = serde_json::from_value(raw.clone()).expect("a HostEvent");
    assert_eq!(
        normal(&serde_json::to_value(&event).expect("encodes")),
        normal(raw)
    );
    let payload = event
        .typed_payload()
        .expect("the payload fits its type's schema");
    assert!(
        !matches!(payload, HostEventPayload::Other(_)),
        "{} has no typed payload",
        event.type_
    );
    event
}

// ---------------------------------------------------------------- the host

/// A loopback endpoint that records the interrupt notices posted to it.
#[derive(Clone, Default)]
struct Notices {
    url: String,
    got: Arc<Mutex<Vec<Value>>>,
}

impl Notices {
    async fn start() -> Notices {
        let got: Arc<Mutex<Vec<Value>>> = Arc::default();
        let app = axum::Router::new()
            .route(
                "/notices",
                axum::routing::post(
                    |State(got): State<Arc<Mutex<Vec<Value>>>>, Json(body): Json<Value>| async move {
                        got.lock().expect("lock").push(body);
                        "ok"
                    },
                ),
            )
            .with_state(got.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}/notices", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Notices { url, got }
    }

    async fn token_for(&self, run_id: &str) -> String {
        for _ in 0..200 {
            let found = self
                .got
                .lock()
                .expect("lock")
                .iter()
                .find(|n| n["runId"] == run_id)
                .cloned();
            if let Some(notice) = found {
                return notice["token"].as_str().expect("token").to_owned();
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no interrupt notice for {run_id}");
    }
}

struct Raw {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: Value,
}

struct Host {
    _child: tokio::process::Child,
    _dir: tempfile::TempDir,
    base: String,
    http: reqwest::Client,
    a: Client,
    b: Client,
    anonymous: Client,
    notices: Notices,
}

impl Host {
    async fn start() -> Host {
        let dir = tempfile::tempdir().expect("dir");
        // One workflow beside the bundled ones: a node that records an artifact, for
        // getArtifact.
        let workflows = dir.path().join("workflows");
        std::fs::create_dir(&workflows).expect("workflows dir");
        std::fs::create_dir(dir.path().join("data")).expect("data dir");
        std::fs::write(workflows.join("contract-artifact.yaml"), ARTIFACT_WORKFLOW)
            .expect("workflow");
        let (child, base) = process::spawn(
            process::serve_keyed(&dir.path().join("data"))
                .arg("--egress-allow-loopback")
                .arg("--workflows")
                .arg(&workflows)
                .stderr(std::process::Stdio::null()),
        )
        .await;
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .expect("client");
        Host {
            a: Client::with_client(&base, http.clone())
                .with_api_key(KEY_A)
                .expect("a valid key"),
            b: Client::with_client(&base, http.clone())
                .with_api_key(KEY_B)
                .expect("a valid key"),
            anonymous: Client::with_client(&base, http.clone()),
            notices: Notices::start().await,
            base,
            http,
            _child: child,
            _dir: dir,
        }
    }

    async fn raw(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        body: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> Raw {
        let mut req = self.http.request(method, format!("{}{path}", self.base));
        if let Some(key) = key {
            req = req.bearer_auth(key);
        }
        if let Some(body) = body {
            req = req.json(body);
        }
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let resp = req.send().await.expect("send");
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let bytes = resp.bytes().await.expect("body");
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                panic!(
                    "{path}: not JSON ({e}): {}",
                    String::from_utf8_lossy(&bytes)
                )
            })
        };
        Raw {
            status,
            headers,
            body,
        }
    }

    /// The `data:` lines of an SSE answer, read until the host closes it or `want`
    /// frames arrived (host streams never close by themselves).
    async fn sse(&self, path: &str, key: &str, want: usize) -> Vec<Value> {
        let mut resp = self
            .http
            .get(format!("{}{path}", self.base))
            .bearer_auth(key)
            .header("Accept", "text/event-stream")
            .send()
            .await
            .expect("send");
        assert_eq!(resp.status(), 200, "{path}");
        let mut text = String::new();
        let mut frames = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while frames.len() < want {
            let chunk = tokio::time::timeout_at(deadline, resp.chunk())
                .await
                .unwrap_or_else(|_| panic!("{path}: {} of {want} frames in 20 s", frames.len()))
                .expect("read");
            let Some(chunk) = chunk else { break };
            text.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = text.find("\n\n") {
                let frame: String = text.drain(..end + 2).collect();
                let data: Vec<&str> = frame
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(|d| d.strip_prefix(' ').unwrap_or(d))
                    .collect();
                if !data.is_empty() {
                    frames.push(serde_json::from_str(&data.join("\n")).expect("a JSON frame"));
                }
            }
        }
        frames
    }

    async fn create(&self, workflow: &str, inputs: Value, callback: bool) -> String {
        let mut body = json!({"workflowId": workflow, "inputs": inputs});
        if callback {
            body["callbackUrl"] = json!(self.notices.url);
        }
        let r = self
            .raw(Method::POST, "/runs", Some(KEY_A), Some(&body), &[])
            .await;
        assert_eq!(r.status, 201, "{}", r.body);
        r.body["runId"].as_str().expect("runId").to_owned()
    }

    async fn snapshot(&self, run_id: &str) -> m::RunSnapshot {
        self.a
            .get_run(run_id)
            .send()
            .await
            .expect("getRun")
            .into_inner()
    }

    async fn wait_status(&self, run_id: &str, status: m::RunStatus) -> m::RunSnapshot {
        for _ in 0..400 {
            let snap = self.snapshot(run_id).await;
            if snap.status == status {
                return snap;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("{run_id} never reached {status}");
    }

    fn path_of(run_id: &str) -> String {
        openwop_generated::client::project_path_segment(run_id)
    }
}

/// A bundled workflow, the interrupt it raises (node, resume value as JSON text), and the
/// status it ends in.
type Bundled = (
    &'static str,
    Option<(&'static str, &'static str)>,
    m::RunStatus,
);

/// A workflow whose one node records an artifact (`artifact.created`, getArtifact).
const ARTIFACT_WORKFLOW: &str = "id: contract-artifact
name: Contract artifact
description: Records one data artifact.
inputSchema: {type: object}
nodes:
  - id: emit
    kind: transform
    artifact: {artifactType: contract.sample}
    value: {sample: true}
";

/// The bundled workflows, and the one the contract host adds.
const WORKFLOWS: &[Bundled] = &[
    ("contract-artifact", None, m::RunStatus::Completed),
    ("echo", None, m::RunStatus::Completed),
    ("slow", None, m::RunStatus::Completed),
    ("fail", None, m::RunStatus::Failed),
    (
        "approval",
        Some(("approve", r#"{"action":"accept"}"#)),
        m::RunStatus::Completed,
    ),
    (
        "clarify",
        Some(("ask", r#"{"q1":"carry on"}"#)),
        m::RunStatus::Completed,
    ),
    (
        "credential",
        Some(("connect", r#"{"outcome":"authorized"}"#)),
        m::RunStatus::Completed,
    ),
    (
        "external",
        Some(("hook", r#"{"arrived":true}"#)),
        m::RunStatus::Completed,
    ),
];

fn inputs_for(workflow: &str) -> Value {
    match workflow {
        "slow" => json!({"ms": 20}),
        "echo" => json!({"hello": "world"}),
        _ => json!({}),
    }
}

// ---------------------------------------------------------------- the cases

#[tokio::test(flavor = "multi_thread")]
async fn every_rest_operation_answers_in_its_generated_model() {
    let h = Host::start().await;
    let mut covered = BTreeSet::new();
    for op in REST_OPERATIONS {
        run_case(&h, op.operation_id).await;
        covered.insert(op.operation_id);
    }
    // Each case names its operation; the table drives the loop, so this only guards the
    // bookkeeping.
    assert_eq!(covered.len(), REST_OPERATIONS.len());
}

async fn run_case(h: &Host, operation: &str) {
    match operation {
        "getCapabilities" => get_capabilities(h).await,
        "getOpenApiSpec" => get_open_api_spec(h).await,
        "listRuns" => list_runs(h).await,
        "createRun" => create_run(h).await,
        "getRun" => get_run(h).await,
        "cancelRun" => cancel_run(h).await,
        "resolveInterruptByRun" => resolve_interrupt_by_run(h).await,
        "inspectInterruptByToken" => inspect_interrupt_by_token(h).await,
        "resolveInterruptByToken" => resolve_interrupt_by_token(h).await,
        "streamRunEvents" => stream_run_events(h).await,
        "pollRunEvents" => poll_run_events(h).await,
        "streamHostEvents" => stream_host_events(h).await,
        "listAgents" => list_agents(h).await,
        "getAgent" => get_agent(h).await,
        "listWorkflows" => list_workflows(h).await,
        "getWorkflow" => get_workflow(h).await,
        "getArtifact" => get_artifact(h).await,
        other => panic!(
            "operation `{other}` of the OpenAPI document has no contract case in runtime/tests/contract.rs"
        ),
    }
}

async fn get_capabilities(h: &Host) {
    let typed = h.anonymous.get_capabilities().send().await.expect("typed");
    let etag = typed.etag().expect("an ETag").to_owned();
    // A plain read answers the document itself (no `If-None-Match`, so never a 304).
    assert!(!typed.preferred_version.is_empty());
    let raw = h
        .raw(Method::GET, "/.well-known/openwop", None, None, &[])
        .await;
    let _: m::Capabilities = round_trip("getCapabilities", raw.status, &raw.body);
    let findings = validate_discovery(&raw.body, &Options::default());
    assert!(findings.is_empty(), "{findings:#?}");
    let again = h
        .anonymous
        .get_capabilities()
        .if_none_match(etag)
        .send()
        .await
        .expect("conditional");
    assert!(again.is_not_modified());
}

async fn get_open_api_spec(h: &Host) {
    let typed = h.anonymous.get_open_api_spec().send().await.expect("typed");
    let raw = h.raw(Method::GET, "/openapi.json", None, None, &[]).await;
    let doc: Value = round_trip("getOpenApiSpec", raw.status, &raw.body);
    assert_eq!(doc, *typed);
}

async fn list_runs(h: &Host) {
    h.create("echo", json!({}), false).await;
    h.create("echo", json!({}), false).await;
    h.create("echo", json!({}), false).await;
    let page = h.a.list_runs().limit(2).send().await.expect("typed");
    assert_eq!(page.runs.len(), 2);
    let cursor = page
        .next_cursor
        .as_ref()
        .expect("a next page")
        .as_str()
        .to_owned();
    let raw = h
        .raw(Method::GET, "/runs?limit=2", Some(KEY_A), None, &[])
        .await;
    let list: m::RunList = round_trip("listRuns", raw.status, &raw.body);
    assert!(list.next_cursor.is_some());
    let next = h
        .raw(
            Method::GET,
            &format!("/runs?limit=2&cursor={cursor}&workflowId=echo"),
            Some(KEY_A),
            None,
            &[],
        )
        .await;
    let _: m::RunList = round_trip("listRuns", next.status, &next.body);
    // The other tenant sees none of them.
    let theirs = h.b.list_runs().send().await.expect("typed");
    assert!(
        theirs
            .runs
            .iter()
            .all(|r| r.owner.tenant.as_str() == "other")
    );
}

async fn create_run(h: &Host) {
    let typed =
        h.a.create_run()
            .workflow_id("echo")
            .inputs(json!({"n": 1}))
            .agent_id("workflow-runner")
            .tags(["contract"])
            .metadata(json!({"case": "createRun"}))
            .idempotency_key("contract-create-1")
            .send()
            .await
            .expect("typed");
    assert_eq!(typed.status(), 201);
    assert!(typed.location().is_some());
    let body = json!({"workflowId": "echo", "inputs": {"n": 2}, "tags": ["raw"], "metadata": {"k": "v"}, "agentId": "workflow-runner"});
    let raw = h
        .raw(Method::POST, "/runs", Some(KEY_A), Some(&body), &[])
        .await;
    let created: m::CreateRunResponse = round_trip("createRun", raw.status, &raw.body);
    assert_eq!(created.run_id.split('/').next(), Some("acme"));
    // The replay answers in the same model.
    let replay = h
        .raw(
            Method::POST,
            "/runs",
            Some(KEY_A),
            Some(&json!({"workflowId": "echo", "inputs": {"n": 1}, "agentId": "workflow-runner", "tags": ["contract"], "metadata": {"case": "createRun"}})),
            &[("Idempotency-Key", "contract-create-1")],
        )
        .await;
    assert_eq!(
        replay
            .headers
            .get("openwop-idempotent-replay")
            .map(|v| v.as_bytes()),
        Some(&b"true"[..])
    );
    let again: m::CreateRunResponse = round_trip("createRun", replay.status, &replay.body);
    assert_eq!(again.run_id, typed.run_id);
}

async fn get_run(h: &Host) {
    let done = h.create("echo", json!({"x": [1, 2]}), false).await;
    h.wait_status(&done, m::RunStatus::Completed).await;
    let waiting = h.create("approval", json!({}), false).await;
    h.wait_status(&waiting, m::RunStatus::WaitingApproval).await;
    let failed = h.create("fail", json!({}), false).await;
    h.wait_status(&failed, m::RunStatus::Failed).await;
    // A run started over A2A: its snapshot carries the task's contextId.
    let sent = h
        .raw(
            Method::POST,
            "/a2a/jsonrpc",
            Some(KEY_A),
            Some(
                &json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
                    "message": {"messageId": "contract-a2a-1", "role": "ROLE_USER",
                        "parts": [{"data": {"via": "a2a"}}],
                        "metadata": {"openwop": {"skill": "echo"}}}
                }}),
            ),
            &[("A2A-Version", "1.0")],
        )
        .await;
    let task = &sent.body["result"]["task"];
    let a2a = task["id"].as_str().expect("a task id").to_owned();
    let context = task["contextId"].as_str().expect("a contextId").to_owned();
    h.wait_status(&a2a, m::RunStatus::Completed).await;
    assert_eq!(
        h.snapshot(&a2a)
            .await
            .context_id
            .as_ref()
            .map(|c| c.as_str()),
        Some(context.as_str())
    );
    assert!(h.snapshot(&done).await.context_id.is_none());
    for run_id in [&done, &waiting, &failed, &a2a] {
        let typed = h.a.get_run(run_id).send().await.expect("typed");
        let etag = typed.etag().expect("ETag").to_owned();
        let raw = h
            .raw(
                Method::GET,
                &format!("/runs/{}", Host::path_of(run_id)),
                Some(KEY_A),
                None,
                &[],
            )
            .await;
        let snap: m::RunSnapshot = round_trip("getRun", raw.status, &raw.body);
        assert_eq!(snap.run_id.as_str(), run_id.as_str());
        let again =
            h.a.get_run(run_id)
                .if_none_match(etag)
                .send()
                .await
                .expect("conditional");
        assert!(again.is_not_modified());
    }
    let snap = h.snapshot(&waiting).await;
    assert_eq!(snap.interrupts.len(), 1);
    assert!(snap.current_node_id.is_some());
    let snap = h.snapshot(&done).await;
    assert_eq!(
        snap.outputs,
        Some(serde_json::from_value(json!({"x": [1, 2]})).unwrap())
    );
}

async fn cancel_run(h: &Host) {
    let one = h.create("slow", json!({"ms": 60_000}), false).await;
    let two = h.create("slow", json!({"ms": 60_000}), false).await;
    let typed =
        h.a.cancel_run(&one)
            .reason("contract")
            .send()
            .await
            .expect("typed");
    assert_eq!(typed.run_id.as_str(), one.as_str());
    let raw = h
        .raw(
            Method::POST,
            &format!("/runs/{}/cancel", Host::path_of(&two)),
            Some(KEY_A),
            Some(&json!({"reason": "contract-raw"})),
            &[],
        )
        .await;
    let _: m::CancelRunResponse = round_trip("cancelRun", raw.status, &raw.body);
}

async fn resolve_interrupt_by_run(h: &Host) {
    let one = h.create("approval", json!({}), false).await;
    let two = h.create("approval", json!({}), false).await;
    h.wait_status(&one, m::RunStatus::WaitingApproval).await;
    h.wait_status(&two, m::RunStatus::WaitingApproval).await;
    let typed =
        h.a.resolve_interrupt_by_run(&one, "approve")
            .resume_value(json!({"action": "accept"}))
            .send()
            .await
            .expect("typed");
    assert_eq!(typed.node_id.as_str(), "approve");
    let raw = h
        .raw(
            Method::POST,
            &format!("/runs/{}/interrupts/approve", Host::path_of(&two)),
            Some(KEY_A),
            Some(&json!({"resumeValue": {"action": "reject"}})),
            &[],
        )
        .await;
    let _: m::ResolveInterruptResponse = round_trip("resolveInterruptByRun", raw.status, &raw.body);
}

async fn inspect_interrupt_by_token(h: &Host) {
    for (workflow, ..) in WORKFLOWS.iter().filter(|(_, resume, _)| resume.is_some()) {
        let run_id = h.create(workflow, json!({}), true).await;
        let token = h.notices.token_for(&run_id).await;
        let typed = h
            .anonymous
            .inspect_interrupt_by_token(&token)
            .send()
            .await
            .expect("typed");
        assert!(
            !matches!(
                typed.typed_data(),
                Ok(m::InterruptPayloadData::Other(_)) | Err(_)
            ),
            "{workflow}: the interrupt data has no typed variant"
        );
        let raw = h
            .raw(
                Method::GET,
                &format!("/interrupts/{token}"),
                None,
                None,
                &[],
            )
            .await;
        let _: m::InterruptPayload = round_trip("inspectInterruptByToken", raw.status, &raw.body);
    }
}

async fn resolve_interrupt_by_token(h: &Host) {
    let one = h.create("approval", json!({}), true).await;
    let two = h.create("approval", json!({}), true).await;
    let (t1, t2) = (
        h.notices.token_for(&one).await,
        h.notices.token_for(&two).await,
    );
    let typed = h
        .anonymous
        .resolve_interrupt_by_token(&t1)
        .resume_value(json!({"action": "accept"}))
        .send()
        .await
        .expect("typed");
    assert_eq!(typed.run_id.as_str(), one.as_str());
    let raw = h
        .raw(
            Method::POST,
            &format!("/interrupts/{t2}"),
            None,
            Some(&json!({"resumeValue": {"action": "accept"}})),
            &[],
        )
        .await;
    let _: m::ResolveInterruptResponse =
        round_trip("resolveInterruptByToken", raw.status, &raw.body);
}

/// Every bundled workflow to its end, its events read through the generated client's
/// stream and raw: every run event kind those runs produce has a typed payload.
async fn stream_run_events(h: &Host) {
    let mut kinds = BTreeSet::new();
    for (workflow, resume, end) in WORKFLOWS {
        let run_id = h.create(workflow, inputs_for(workflow), false).await;
        if let Some((node, value)) = resume {
            let waiting = loop {
                let snap = h.snapshot(&run_id).await;
                if !snap.interrupts.is_empty() {
                    break snap;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            };
            assert_eq!(
                waiting.current_node_id.as_ref().map(|n| n.as_str()),
                Some(*node)
            );
            h.a.resolve_interrupt_by_run(&run_id, node)
                .resume_value(serde_json::from_str::<Value>(value).expect("json"))
                .send()
                .await
                .expect("resolve");
        }
        h.wait_status(&run_id, *end).await;
        let mut typed = Vec::new();
        let mut stream = h.a.stream_run_events(&run_id).send().await.expect("stream");
        while let Some(event) = tokio::time::timeout(Duration::from_secs(20), stream.next())
            .await
            .expect("the stream ends after the terminal event")
        {
            let event = event.expect("a typed event");
            assert!(
                !matches!(
                    event.typed_payload(),
                    Ok(RunEventPayload::Other(_)) | Err(_)
                ),
                "{workflow}: {}",
                event.type_
            );
            typed.push(event);
        }
        let path = format!("/runs/{}/events", Host::path_of(&run_id));
        let raw = h.sse(&path, KEY_A, usize::MAX).await;
        assert_eq!(
            raw.len(),
            typed.len(),
            "{workflow}: raw and typed streams differ"
        );
        for (frame, event) in raw.iter().zip(&typed) {
            let checked = check_run_event(frame);
            assert_eq!(checked.event_id, event.event_id);
            kinds.insert(checked.type_.to_string());
        }
    }
    // A cancelled run too.
    let run_id = h.create("slow", json!({"ms": 60_000}), false).await;
    h.a.cancel_run(&run_id).send().await.expect("cancel");
    let path = format!("/runs/{}/events", Host::path_of(&run_id));
    for frame in h.sse(&path, KEY_A, usize::MAX).await {
        kinds.insert(check_run_event(&frame).type_.to_string());
    }
    for kind in [
        "run.started",
        "run.completed",
        "run.failed",
        "run.cancelled",
        "node.started",
        "node.completed",
        "interrupt.requested",
        "interrupt.resolved",
    ] {
        assert!(kinds.contains(kind), "no {kind} among {kinds:?}");
    }
}

async fn poll_run_events(h: &Host) {
    let run_id = h.create("approval", json!({}), false).await;
    h.wait_status(&run_id, m::RunStatus::WaitingApproval).await;
    let typed =
        h.a.poll_run_events(&run_id)
            .query_timeout(1)
            .send()
            .await
            .expect("typed");
    assert!(!typed.events.is_empty());
    for path in [
        format!("/runs/{}/events/poll?timeout=1", Host::path_of(&run_id)),
        format!(
            "/runs/{}/events/poll?timeout=1&afterSequence=999",
            Host::path_of(&run_id)
        ),
    ] {
        let raw = h.raw(Method::GET, &path, Some(KEY_A), None, &[]).await;
        let poll: m::PollEventsResponse = round_trip("pollRunEvents", raw.status, &raw.body);
        for event in raw.body["events"].as_array().expect("events") {
            check_run_event(event);
        }
        let _ = poll;
    }
}

/// `negotiation.decided` on the host channel: one A2A exchange makes one.
async fn stream_host_events(h: &Host) {
    let r = h
        .raw(
            Method::POST,
            "/a2a/jsonrpc",
            Some(KEY_B),
            Some(&json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}})),
            &[("A2A-Version", "1.0")],
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let mut stream = h.b.stream_host_events().send().await.expect("stream");
    let typed = tokio::time::timeout(Duration::from_secs(20), stream.next())
        .await
        .expect("an event in time")
        .expect("an event")
        .expect("a typed host event");
    assert!(matches!(
        typed.typed_payload(),
        Ok(HostEventPayload::NegotiationDecided(_))
    ));
    for frame in h.sse("/host/events", KEY_B, 1).await {
        let event = check_host_event(&frame);
        assert_eq!(event.tenant.as_ref().map(|t| t.as_str()), Some("other"));
    }
}

async fn list_agents(h: &Host) {
    let typed = h.a.list_agents().send().await.expect("typed");
    assert!(!typed.agents.is_empty());
    let raw = h.raw(Method::GET, "/agents", Some(KEY_A), None, &[]).await;
    let _: m::AgentList = round_trip("listAgents", raw.status, &raw.body);
}

async fn get_artifact(h: &Host) {
    let run = h.create("contract-artifact", json!({}), false).await;
    h.wait_status(&run, m::RunStatus::Completed).await;
    let typed =
        h.a.get_artifact(&run, "emit.0")
            .send()
            .await
            .expect("typed");
    assert_eq!(typed.artifact_type.as_str(), "contract.sample");
    assert_eq!(typed.data, json!({"sample": true}));
    let path = format!("/runs/{}/artifacts/emit.0", Host::path_of(&run));
    let raw = h.raw(Method::GET, &path, Some(KEY_A), None, &[]).await;
    let _: m::RunArtifact = round_trip("getArtifact", raw.status, &raw.body);
    let a2a = h
        .raw(
            Method::GET,
            &path,
            Some(KEY_A),
            None,
            &[("Accept", "application/a2a+json")],
        )
        .await;
    assert_eq!(a2a.status, 200);
    assert_eq!(a2a.body["parts"][0]["data"], json!({"sample": true}));
    let missing = h
        .raw(
            Method::GET,
            &format!("/runs/{}/artifacts/emit.9", Host::path_of(&run)),
            Some(KEY_A),
            None,
            &[],
        )
        .await;
    expect_error(
        h,
        "getArtifact",
        missing,
        404,
        openwop_generated::errors::ErrorCode::NotFound,
    )
    .await;
}

async fn get_agent(h: &Host) {
    let list = h.a.list_agents().send().await.expect("typed").into_inner();
    let discovery = h
        .raw(Method::GET, "/.well-known/openwop", None, None, &[])
        .await
        .body;
    for agent in &list.agents {
        let typed = h.a.get_agent(&agent.agent_id).send().await.expect("typed");
        assert_eq!(typed.agent_id, agent.agent_id);
        let raw = h
            .raw(
                Method::GET,
                &format!("/agents/{}", agent.agent_id.as_str()),
                Some(KEY_A),
                None,
                &[],
            )
            .await;
        let _: m::Agent = round_trip("getAgent", raw.status, &raw.body);
        // The agent's own A2A card.
        let tenant = agent.a2a_tenant.as_ref().expect("a routing value");
        let card = h
            .raw(
                Method::GET,
                &format!("/a2a/rest/{}/extendedAgentCard", tenant.as_str()),
                Some(KEY_A),
                None,
                &[("A2A-Version", "1.0")],
            )
            .await;
        assert_eq!(card.status, 200, "{}", card.body);
        let findings = validate_agent_card(&card.body, Some(&discovery), &Options::default());
        assert!(findings.is_empty(), "{findings:#?}");
    }
    // The host's public card.
    let card = h
        .raw(Method::GET, "/.well-known/agent-card.json", None, None, &[])
        .await;
    assert_eq!(card.status, 200);
    let findings = validate_agent_card(&card.body, Some(&discovery), &Options::default());
    assert!(findings.is_empty(), "{findings:#?}");
}

async fn list_workflows(h: &Host) {
    let typed = h.a.list_workflows().send().await.expect("typed");
    assert_eq!(typed.workflows.len(), WORKFLOWS.len());
    let raw = h
        .raw(Method::GET, "/workflows", Some(KEY_A), None, &[])
        .await;
    let _: m::WorkflowList = round_trip("listWorkflows", raw.status, &raw.body);
}

async fn get_workflow(h: &Host) {
    for (workflow, ..) in WORKFLOWS {
        h.a.get_workflow(workflow).send().await.expect("typed");
        let raw = h
            .raw(
                Method::GET,
                &format!("/workflows/{workflow}"),
                Some(KEY_A),
                None,
                &[],
            )
            .await;
        let _: m::WorkflowDefinition = round_trip("getWorkflow", raw.status, &raw.body);
    }
}

// ---------------------------------------------------------------- error envelopes

/// One error answer: the status and code expected, the envelope decodes through the
/// generated client's typed error and the raw envelope passes `validate_response`.
async fn expect_error(
    h: &Host,
    operation: &str,
    raw: Raw,
    status: u16,
    code: openwop_generated::errors::ErrorCode,
) {
    assert_eq!(raw.status, status, "{operation}: {}", raw.body);
    let envelope: m::ErrorEnvelope = round_trip(operation, raw.status, &raw.body);
    assert_eq!(envelope.error.registered(), Some(code), "{operation}");
    assert_eq!(
        raw.headers.get("openwop-version").map(|v| v.as_bytes()),
        Some(&b"2.0"[..])
    );
    let _ = h;
}

#[tokio::test(flavor = "multi_thread")]
async fn every_error_status_answers_the_generated_envelope() {
    use openwop_generated::errors::ErrorCode as C;
    let h = Host::start().await;
    let mine = h.create("echo", json!({}), false).await;
    h.wait_status(&mine, m::RunStatus::Completed).await;
    let path = format!("/runs/{}", Host::path_of(&mine));

    // 400: a body member the schema does not list (typed: refused before sending).
    let typed = h.a.create_run().workflow_id("not an id!").send().await;
    assert!(matches!(typed, Err(ClientError::InvalidRequest(_))));
    let raw = h
        .raw(
            Method::POST,
            "/runs",
            Some(KEY_A),
            Some(&json!({"workflowId": "echo", "surprise": true})),
            &[],
        )
        .await;
    expect_error(&h, "createRun", raw, 400, C::ValidationError).await;
    // 400: a malformed Idempotency-Key, and a callbackUrl the egress guard refuses: the
    // codes the registry has for them.
    let raw = h
        .raw(
            Method::POST,
            "/runs",
            Some(KEY_A),
            Some(&json!({"workflowId": "echo"})),
            &[("Idempotency-Key", &"k".repeat(256))],
        )
        .await;
    expect_error(&h, "createRun", raw, 400, C::IdempotencyKeyInvalid).await;
    let raw = h
        .raw(
            Method::POST,
            "/runs",
            Some(KEY_A),
            Some(&json!({"workflowId": "echo", "callbackUrl": "https://10.1.2.3/notices"})),
            &[],
        )
        .await;
    expect_error(&h, "createRun", raw, 400, C::WebhookUrlRejected).await;
    // 400: an unserved stream mode (details.supported is required there).
    let raw = h
        .raw(
            Method::GET,
            &format!("{path}/events?streamMode=values"),
            Some(KEY_A),
            None,
            &[],
        )
        .await;
    expect_error(&h, "streamRunEvents", raw, 400, C::UnsupportedStreamMode).await;

    // 401: no credential, and a forged resume token.
    match h.anonymous.get_run(&mine).send().await {
        Err(ClientError::Api { status, code, .. }) => {
            assert_eq!((status, code.registered()), (401, Some(C::Unauthenticated)));
        }
        other => panic!("expected 401: {other:?}"),
    }
    let raw = h.raw(Method::GET, &path, None, None, &[]).await;
    expect_error(&h, "getRun", raw, 401, C::Unauthenticated).await;
    let raw = h
        .raw(Method::GET, "/interrupts/ow2.hs256.x.y.z", None, None, &[])
        .await;
    expect_error(
        &h,
        "inspectInterruptByToken",
        raw,
        401,
        C::InterruptTokenInvalid,
    )
    .await;

    // 403: the other tenant's run id.
    match h.b.get_run(&mine).send().await {
        Err(ClientError::Api { status, code, .. }) => {
            assert_eq!(
                (status, code.registered()),
                (403, Some(C::IdTenantMismatch))
            );
        }
        other => panic!("expected 403: {other:?}"),
    }
    let raw = h.raw(Method::GET, &path, Some(KEY_B), None, &[]).await;
    expect_error(&h, "getRun", raw, 403, C::IdTenantMismatch).await;

    // 404: no such run in the caller's tenant; no such workflow; no such agent.
    let raw = h
        .raw(
            Method::GET,
            "/runs/acme~2F0123456789abcdef0123",
            Some(KEY_A),
            None,
            &[],
        )
        .await;
    expect_error(&h, "getRun", raw, 404, C::NotFound).await;
    let raw = h
        .raw(
            Method::POST,
            "/runs",
            Some(KEY_A),
            Some(&json!({"workflowId": "no-such-flow"})),
            &[],
        )
        .await;
    expect_error(&h, "createRun", raw, 404, C::NotFound).await;
    let raw = h
        .raw(Method::GET, "/agents/no-such-agent", Some(KEY_A), None, &[])
        .await;
    expect_error(&h, "getAgent", raw, 404, C::NotFound).await;
    let raw = h
        .raw(
            Method::GET,
            "/workflows/no-such-flow",
            Some(KEY_A),
            None,
            &[],
        )
        .await;
    expect_error(&h, "getWorkflow", raw, 404, C::NotFound).await;
    // 404 interrupt_not_found: a node without an open interrupt.
    let raw = h
        .raw(
            Method::POST,
            &format!("{path}/interrupts/nowhere"),
            Some(KEY_A),
            Some(&json!({"resumeValue": 1})),
            &[],
        )
        .await;
    expect_error(&h, "resolveInterruptByRun", raw, 404, C::InterruptNotFound).await;

    // 409: cancelling a finished run (details.runStatus).
    let raw = h
        .raw(
            Method::POST,
            &format!("{path}/cancel"),
            Some(KEY_A),
            None,
            &[],
        )
        .await;
    expect_error(&h, "cancelRun", raw, 409, C::RunTerminal).await;
    // 409: a spent resume token.
    let run_id = h.create("approval", json!({}), true).await;
    let token = h.notices.token_for(&run_id).await;
    h.anonymous
        .resolve_interrupt_by_token(&token)
        .resume_value(json!({"action": "accept"}))
        .send()
        .await
        .expect("resolve");
    let raw = h
        .raw(
            Method::GET,
            &format!("/interrupts/{token}"),
            None,
            None,
            &[],
        )
        .await;
    expect_error(
        &h,
        "inspectInterruptByToken",
        raw,
        409,
        C::InterruptAlreadyResolved,
    )
    .await;
    // 409: an Idempotency-Key reused with another body.
    for inputs in [json!({"a": 1}), json!({"a": 2})] {
        let raw = h
            .raw(
                Method::POST,
                "/runs",
                Some(KEY_A),
                Some(&json!({"workflowId": "echo", "inputs": inputs})),
                &[("Idempotency-Key", "contract-mismatch")],
            )
            .await;
        if raw.status != 201 {
            expect_error(&h, "createRun", raw, 409, C::IdempotencyKeyMismatch).await;
        }
    }

    // 413: a body just over the limit (a much larger one races the host's early answer
    // against the rest of the upload).
    let big = "x".repeat(openwop::edge::rest::BODY_LIMIT + 10);
    let raw = h
        .raw(
            Method::POST,
            "/runs",
            Some(KEY_A),
            Some(&json!({"workflowId": "echo", "inputs": {"big": big}})),
            &[],
        )
        .await;
    expect_error(&h, "createRun", raw, 413, C::PayloadTooLarge).await;

    // 415: a body that is not JSON.
    let resp = h
        .http
        .post(format!("{}/runs", h.base))
        .bearer_auth(KEY_A)
        .header("Content-Type", "text/plain")
        .body("workflowId=echo")
        .send()
        .await
        .expect("send");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body: Value = resp.json().await.expect("json");
    let raw = Raw {
        status,
        headers,
        body,
    };
    expect_error(&h, "createRun", raw, 415, C::UnsupportedMediaType).await;

    // 406: a major this host does not serve (details.protocolVersions).
    let raw = h
        .raw(
            Method::GET,
            &path,
            Some(KEY_A),
            None,
            &[("OpenWOP-Version", "9")],
        )
        .await;
    expect_error(&h, "getRun", raw, 406, C::ProtocolVersionUnsupported).await;
}

/// 410 `interrupt_expired` needs a token older than its lifetime (30 minutes on the
/// binary); the same host built in-process with a one-second lifetime answers it.
#[tokio::test(flavor = "multi_thread")]
async fn an_expired_resume_token_answers_the_generated_envelope() {
    let host = support::host()
        .with(|c| {
            c.interrupt_token_ttl = Duration::from_secs(1);
            c.egress_allow_loopback = true;
        })
        .start()
        .await;
    let base = host.base.clone();
    let notices = Notices::start().await;
    let http = reqwest::Client::new();
    let created: Value = http
        .post(format!("{base}/runs"))
        .bearer_auth(KEY_A)
        .json(&json!({"workflowId": "approval", "callbackUrl": notices.url}))
        .send()
        .await
        .expect("create")
        .json()
        .await
        .expect("json");
    let token = notices
        .token_for(created["runId"].as_str().expect("runId"))
        .await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let resp = http
        .get(format!("{base}/interrupts/{token}"))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status(), 410);
    let body: Value = resp.json().await.expect("json");
    let envelope: m::ErrorEnvelope = round_trip("inspectInterruptByToken", 410, &body);
    assert_eq!(
        envelope.error.registered(),
        Some(openwop_generated::errors::ErrorCode::InterruptExpired)
    );
    let client = Client::new(&base);
    match client.inspect_interrupt_by_token(&token).send().await {
        Err(ClientError::Api { status: 410, .. }) => {}
        other => panic!("expected a typed 410: {other:?}"),
    }
    let _ = host.stopper.send(true);
}
