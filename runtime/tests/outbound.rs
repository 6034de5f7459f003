//! The host as a client: workflows whose `a2a`, `mcp` and `http` nodes call configured
//! peers. The remote side here is a second OpenWOP host (its A2A, MCP and REST edges are
//! real servers on loopback); the Python and JavaScript SDK servers as remotes run in
//! `tests/peers/outbound/run.sh`.

mod support;

use std::path::Path;
use std::time::Duration;

use openwop::host::Host;
use openwop::peers::{CredentialSource, PeerFileConfig, PeerKind};
use reqwest::Method;
use serde_json::{Value, json};
use support::a2a::*;
use support::{KEY_A, KEY_B, TestHost, process};

/// The workflows host A runs: each calls host B (named peer `b`, or `b-mcp`, `b-rest`).
const WORKFLOWS: &[(&str, &str)] = &[
    (
        "delegate.yaml",
        r#"
id: delegate
inputSchema: {type: object}
nodes:
  - id: ask
    kind: a2a
    peer: b
    parts:
      - {kind: data, data: {greeting: "${inputs.text}"}}
    metadata: {openwop: {skill: "${inputs.skill}"}}
outputs:
  state: "${nodes.ask.state}"
  data: "${nodes.ask.data}"
  remoteTask: "${nodes.ask.taskId}"
"#,
    ),
    (
        "tool.yaml",
        r#"
id: tool
inputSchema: {type: object}
nodes:
  - id: call
    kind: mcp
    peer: b-mcp
    tool: "echo"
    arguments: {said: "${inputs.text}"}
outputs: {result: "${nodes.call}"}
"#,
    ),
    (
        "tool-ask.yaml",
        r#"
id: tool-ask
inputSchema: {type: object}
nodes:
  - id: call
    kind: mcp
    peer: b-mcp
    tool: "clarify"
outputs: {result: "${nodes.call}"}
"#,
    ),
    (
        "rest.yaml",
        r#"
id: rest
inputSchema: {type: object}
nodes:
  - id: get
    kind: http
    peer: b-rest
    method: GET
    path: "/workflows/${inputs.workflow}"
outputs: {status: "${nodes.get.status}", id: "${nodes.get.body.id}"}
"#,
    ),
    (
        "delegate-loop.yaml",
        r#"
id: delegate-loop
inputSchema: {type: object}
nodes:
  - id: again
    kind: repeat
    max: 2
    until: false
    nodes:
      - id: ask
        kind: a2a
        peer: b
        parts: [{kind: text, text: "pass ${loops.again}"}]
        metadata: {openwop: {skill: clarify}}
outputs: {loop: "${nodes.again}"}
"#,
    ),
    (
        "tool-task.yaml",
        r#"
id: tool-task
inputSchema: {type: object}
nodes:
  - id: call
    kind: mcp
    peer: b-mcp
    tool: slow
    arguments: {ms: 2000}
outputs: {result: "${nodes.call}"}
"#,
    ),
    (
        "tool-task-asks.yaml",
        r#"
id: tool-task-asks
inputSchema: {type: object}
nodes:
  - id: call
    kind: mcp
    peer: b-mcp
    tool: approval
    arguments: {title: "ship it"}
outputs: {result: "${nodes.call}"}
"#,
    ),
    (
        "ask-until.yaml",
        r#"
id: ask-until
inputSchema: {type: object}
nodes:
  - id: chat
    kind: repeat
    max: 5
    until: {$eq: ["${nodes.ask.q1}", "yes"]}
    nodes:
      - id: ask
        kind: interrupt
        interrupt:
          kind: clarification
          data: {questions: [{id: q1, question: "Ready? (pass ${loops.chat})"}]}
outputs: {loop: "${nodes.chat}", last: "${nodes.ask}"}
"#,
    ),
    (
        "loop.yaml",
        r#"
id: loop
inputSchema: {type: object}
nodes:
  - id: again
    kind: repeat
    max: 5
    until: {$eq: ["${nodes.count.n}", "${inputs.stop}"]}
    nodes:
      - id: count
        kind: transform
        value: {n: "${inputs.n}", pass: "${loops.again}"}
        when: {$eq: ["${nodes.again}", null]}
      - id: skipped
        kind: fail
        code: x.never
        message: never
        when: false
  - id: after
    kind: transform
    value: "${nodes.again}"
outputs: {loop: "${nodes.after}", skippedValue: "${nodes.skipped}"}
"#,
    ),
];

fn write_workflows(dir: &Path) {
    for (name, text) in WORKFLOWS {
        std::fs::write(dir.join(name), text).expect("workflow file");
    }
}

fn peer(id: &str, kind: PeerKind, url: String, secret_file: &Path) -> PeerFileConfig {
    PeerFileConfig {
        id: id.into(),
        kind,
        url,
        credential: Some(CredentialSource {
            env: None,
            file: Some(secret_file.to_path_buf()),
        }),
        tenants: None,
        timeout_secs: Some(30),
    }
}

/// Host B (the remote: an ordinary host) and host A, whose peers point at B with B's
/// key for tenant `other` (KEY_B) as the credential A holds for that destination.
struct Pair {
    a: TestHost,
    b: TestHost,
    a_dir: tempfile::TempDir,
    config_dir: tempfile::TempDir,
}

fn peers_of(b: &TestHost, secret: &Path) -> Vec<PeerFileConfig> {
    vec![
        peer("b", PeerKind::A2a, b.base.clone(), secret),
        peer("b-mcp", PeerKind::Mcp, format!("{}/mcp", b.base), secret),
        peer("b-rest", PeerKind::Http, b.base.clone(), secret),
    ]
}

async fn start_a(a_dir: &Path, config_dir: &Path, b: &TestHost) -> TestHost {
    let workflows = config_dir.join("workflows");
    let secret = config_dir.join("b.key");
    let peers = peers_of(b, &secret);
    start_configured(a_dir.to_path_buf(), 0, move |c| {
        c.workflows_dir = Some(workflows);
        c.egress_allow_loopback = true;
        c.peers = peers;
    })
    .await
}

async fn pair() -> Pair {
    let b_dir = tempfile::tempdir().expect("dir");
    let b = start_configured(b_dir.path().to_path_buf(), 0, |_| {}).await;
    std::mem::forget(b_dir);
    let config_dir = tempfile::tempdir().expect("dir");
    std::fs::create_dir(config_dir.path().join("workflows")).expect("dir");
    write_workflows(&config_dir.path().join("workflows"));
    std::fs::write(config_dir.path().join("b.key"), KEY_B).expect("secret");
    let a_dir = tempfile::tempdir().expect("dir");
    let a = start_a(a_dir.path(), config_dir.path(), &b).await;
    Pair {
        a,
        b,
        a_dir,
        config_dir,
    }
}

async fn create(host: &TestHost, key: &str, workflow: &str, inputs: Value) -> String {
    let resp = host
        .http
        .post(format!("{}/runs", host.base))
        .bearer_auth(key)
        .json(&json!({"workflowId": workflow, "inputs": inputs}))
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status().as_u16(), 201, "createRun {workflow}");
    let body: Value = resp.json().await.expect("json");
    body["runId"].as_str().expect("runId").to_owned()
}

/// Polls getRun until the run's status is one of `want` (20 s at most).
async fn wait_for(host: &TestHost, key: &str, run_id: &str, want: &[&str]) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (_, snap) = host.get_run(key, run_id).await;
        let status = snap["status"].as_str().unwrap_or_default().to_owned();
        if want.contains(&status.as_str()) {
            return snap;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "run {run_id} stayed {status}, wanted {want:?}: {snap}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn events(host: &TestHost, key: &str, run_id: &str) -> Vec<Value> {
    let projected = openwop::ids::project(run_id);
    let resp = host
        .http
        .get(format!("{}/runs/{projected}/events/poll", host.base))
        .bearer_auth(key)
        .send()
        .await
        .expect("send");
    let body: Value = resp.json().await.expect("json");
    body["events"].as_array().cloned().unwrap_or_default()
}

async fn resolve(host: &TestHost, key: &str, run_id: &str, node: &str, value: Value) -> u16 {
    let projected = openwop::ids::project(run_id);
    host.http
        .post(format!("{}/runs/{projected}/interrupts/{node}", host.base))
        .bearer_auth(key)
        .json(&json!({"resumeValue": value}))
        .send()
        .await
        .expect("send")
        .status()
        .as_u16()
}

/// The runs host B holds for a key.
async fn runs_on(host: &TestHost, key: &str) -> Vec<Value> {
    let resp = host
        .http
        .get(format!("{}/runs", host.base))
        .bearer_auth(key)
        .send()
        .await
        .expect("send");
    let body: Value = resp.json().await.expect("json");
    body["runs"].as_array().cloned().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_a2a_node_delegates_with_the_peers_own_credential_and_reads_the_remote_answer() {
    let p = pair().await;
    let run = create(
        &p.a,
        KEY_A,
        "delegate",
        json!({"text": "hi", "skill": "echo"}),
    )
    .await;
    let snap = wait_for(&p.a, KEY_A, &run, &["completed", "failed"]).await;
    assert_eq!(snap["status"], "completed", "{snap}");
    assert_eq!(snap["outputs"]["state"], "TASK_STATE_COMPLETED");
    // The remote echo ran on B with what A sent.
    assert_eq!(snap["outputs"]["data"]["greeting"], "hi", "{snap}");
    // B filed the task under the tenant of the credential A holds for B (`other`), never
    // under A's caller (`acme`): the caller's key was not forwarded.
    assert_eq!(runs_on(&p.b, KEY_B).await.len(), 1);
    assert!(runs_on(&p.b, KEY_A).await.is_empty());
    // The negotiation is audited on the calling run's own log, content-free.
    let log = events(&p.a, KEY_A, &run).await;
    let decided: Vec<&Value> = log
        .iter()
        .filter(|e| e["type"] == "negotiation.decided")
        .collect();
    assert_eq!(decided.len(), 1, "{log:?}");
    let payload = &decided[0]["payload"];
    assert_eq!(payload["protocol"], "a2a");
    assert_eq!(payload["outcome"], "accepted");
    assert_eq!(payload["negotiated"], "1.0");
    assert_eq!(
        payload["peer"].as_str().map(str::len),
        Some(64),
        "{payload}"
    );
    assert!(!payload.to_string().contains("127.0.0.1"), "{payload}");
    // interop.md "The audit event": the outcome is on the host's own event log too, as
    // `GET /host/events` shows it, with the same keyed peer digest.
    let hosted = host_negotiations(&p.a, KEY_A, 1).await;
    assert_eq!(hosted.len(), 1, "{hosted:?}");
    assert_eq!(hosted[0], *payload);
}

/// The payloads of the `negotiation.decided` events on a host's own event log, as a client
/// reads them (`GET /host/events` as SSE), once `want` have come or 5 s have passed.
async fn host_negotiations(host: &TestHost, key: &str, want: usize) -> Vec<Value> {
    let mut resp = host
        .http
        .get(format!("{}/host/events", host.base))
        .bearer_auth(key)
        .header("accept", "text/event-stream")
        .send()
        .await
        .expect("host events");
    assert_eq!(resp.status().as_u16(), 200);
    let read = |text: &str| -> Vec<Value> {
        text.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok())
            .filter(|e| e["type"] == "negotiation.decided")
            .map(|e| e["payload"].clone())
            .collect()
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    let mut text = String::new();
    while read(&text).len() < want {
        match tokio::time::timeout_at(deadline, resp.chunk()).await {
            Ok(Ok(Some(chunk))) => text.push_str(&String::from_utf8_lossy(&chunk)),
            _ => break,
        }
    }
    read(&text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_question_suspends_the_calling_run_and_its_answer_goes_back_to_the_same_task() {
    let p = pair().await;
    let run = create(
        &p.a,
        KEY_A,
        "delegate",
        json!({"text": "approve me", "skill": "approval"}),
    )
    .await;
    let snap = wait_for(&p.a, KEY_A, &run, &["waiting-input", "failed"]).await;
    assert_eq!(snap["status"], "waiting-input", "{snap}");
    let remote_runs = runs_on(&p.b, KEY_B).await;
    assert_eq!(remote_runs.len(), 1);
    assert_eq!(remote_runs[0]["status"], "waiting-approval");
    // The question travels with the interrupt A raised.
    let log = events(&p.a, KEY_A, &run).await;
    let asked = log
        .iter()
        .find(|e| e["type"] == "interrupt.requested")
        .expect("interrupt.requested");
    assert_eq!(asked["payload"]["kind"], "clarification");
    // In the generated clarification shape, so any client of A decodes it: one question,
    // `answer`, carrying the remote agent's text.
    let data: openwop_generated::models::ClarificationData =
        serde_json::from_value(asked["payload"]["data"].clone()).expect("clarification data");
    assert_eq!(data.questions.len(), 1);
    assert_eq!(data.questions[0].id.as_str(), "answer");
    assert!(!data.questions[0].question.is_empty());
    assert_eq!(data.context_type.as_deref(), Some("remote-agent"));
    every_event_fits_its_schema(&log);

    // Host A restarts while its run waits: the remote task is followed, never re-sent.
    let a_dir = p.a_dir.path().to_path_buf();
    let _ = p.a.stopper.send(true);
    drop(p.a);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let a = start_a(&a_dir, p.config_dir.path(), &p.b).await;

    assert_eq!(
        resolve(&a, KEY_A, &run, "ask", json!({"answer": "accept"})).await,
        200
    );
    let snap = wait_for(&a, KEY_A, &run, &["completed", "failed"]).await;
    assert_eq!(snap["status"], "completed", "{snap}");
    let remote_runs = runs_on(&p.b, KEY_B).await;
    assert_eq!(
        remote_runs.len(),
        1,
        "one remote task, never a second message"
    );
    assert_eq!(remote_runs[0]["status"], "completed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_remote_auth_request_becomes_a_credential_interrupt_and_the_grant_goes_back() {
    let p = pair().await;
    let run = create(
        &p.a,
        KEY_A,
        "delegate",
        json!({"text": "connect", "skill": "credential"}),
    )
    .await;
    let snap = wait_for(&p.a, KEY_A, &run, &["waiting-input", "failed"]).await;
    assert_eq!(snap["status"], "waiting-input", "{snap}");
    let log = events(&p.a, KEY_A, &run).await;
    let asked = log
        .iter()
        .find(|e| e["type"] == "interrupt.requested")
        .expect("interrupt.requested");
    assert_eq!(asked["payload"]["kind"], "credential");
    // B's grant (its connectUrl, provider, scopes, reason), in the generated shape.
    let data: openwop_generated::models::CredentialData =
        serde_json::from_value(asked["payload"]["data"].clone()).expect("credential data");
    assert_eq!(
        data.connect_url.as_str(),
        "https://localhost/connect/example"
    );
    assert_eq!(data.provider.as_str(), "example");
    every_event_fits_its_schema(&log);

    // Anything but exactly {outcome} is refused and changes nothing.
    assert_eq!(
        resolve(&p.a, KEY_A, &run, "ask", json!({"outcome": "granted"})).await,
        400
    );
    assert_eq!(
        resolve(&p.a, KEY_A, &run, "ask", json!({"outcome": "authorized"})).await,
        200
    );
    let snap = wait_for(&p.a, KEY_A, &run, &["completed", "failed"]).await;
    assert_eq!(snap["status"], "completed", "{snap}");
    // B's run resumed with the outcome A's caller gave.
    let remote_runs = runs_on(&p.b, KEY_B).await;
    assert_eq!(remote_runs.len(), 1);
    assert_eq!(remote_runs[0]["status"], "completed", "{remote_runs:?}");

    // Declined here: A's run fails as a declined credential, and B's task is cancelled.
    let run = create(
        &p.a,
        KEY_A,
        "delegate",
        json!({"text": "connect", "skill": "credential"}),
    )
    .await;
    wait_for(&p.a, KEY_A, &run, &["waiting-input"]).await;
    assert_eq!(
        resolve(&p.a, KEY_A, &run, "ask", json!({"outcome": "declined"})).await,
        200
    );
    let snap = wait_for(&p.a, KEY_A, &run, &["failed"]).await;
    assert_eq!(snap["error"]["code"], "connector_auth_declined", "{snap}");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let remote = runs_on(&p.b, KEY_B).await;
        if remote.iter().any(|r| r["status"] == "cancelled") {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{remote:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_the_calling_run_cancels_the_remote_task() {
    let p = pair().await;
    let run = create(
        &p.a,
        KEY_A,
        "delegate",
        json!({"text": "x", "skill": "approval"}),
    )
    .await;
    wait_for(&p.a, KEY_A, &run, &["waiting-input"]).await;
    let projected = openwop::ids::project(&run);
    let status =
        p.a.http
            .post(format!("{}/runs/{projected}/cancel", p.a.base))
            .bearer_auth(KEY_A)
            .json(&json!({}))
            .send()
            .await
            .expect("send")
            .status()
            .as_u16();
    assert_eq!(status, 200);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let remote = runs_on(&p.b, KEY_B).await;
        if remote.first().map(|r| r["status"].clone()) == Some(json!("cancelled")) {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "{remote:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_node_calls_a_tool_and_relays_an_input_round() {
    let p = pair().await;
    let run = create(&p.a, KEY_A, "tool", json!({"text": "hello"})).await;
    let snap = wait_for(&p.a, KEY_A, &run, &["completed", "failed"]).await;
    assert_eq!(snap["status"], "completed", "{snap}");
    assert_eq!(snap["outputs"]["result"]["said"], "hello", "{snap}");
    let log = events(&p.a, KEY_A, &run).await;
    let decided = log
        .iter()
        .find(|e| e["type"] == "negotiation.decided")
        .expect("negotiation.decided");
    assert_eq!(decided["payload"]["protocol"], "mcp");
    assert_eq!(decided["payload"]["negotiated"], "2026-07-28");
    // On the host's own event log too (interop.md "The audit event").
    let hosted = host_negotiations(&p.a, KEY_A, 1).await;
    assert_eq!(hosted, vec![decided["payload"].clone()]);

    // B's `clarify` tool asks a question (an input_required round); it reaches A's caller.
    let run = create(&p.a, KEY_A, "tool-ask", json!({})).await;
    let snap = wait_for(&p.a, KEY_A, &run, &["waiting-input", "failed"]).await;
    assert_eq!(snap["status"], "waiting-input", "{snap}");
    let log = events(&p.a, KEY_A, &run).await;
    let asked = log
        .iter()
        .find(|e| e["type"] == "interrupt.requested")
        .expect("interrupt.requested");
    let data: openwop_generated::models::ClarificationData =
        serde_json::from_value(asked["payload"]["data"].clone()).expect("clarification data");
    assert_eq!(data.context_type.as_deref(), Some("remote-tool"));
    // One question per input request, keyed by the request's key, with its form.
    assert_eq!(data.questions.len(), 1);
    let key = data.questions[0].id.to_string();
    let form = data.questions[0].schema.as_ref().expect("requestedSchema");
    assert!(form["properties"].get("q1").is_some(), "{form:?}");
    every_event_fits_its_schema(&log);
    assert_eq!(
        resolve(
            &p.a,
            KEY_A,
            &run,
            "call",
            json!({ key: {"q1": "carry on"} })
        )
        .await,
        200
    );
    let snap = wait_for(&p.a, KEY_A, &run, &["completed", "failed"]).await;
    assert_eq!(snap["status"], "completed", "{snap}");
    // B's run completed with the answer A's caller gave, and A has B's result.
    assert!(
        snap["outputs"]["result"].to_string().contains("carry on"),
        "{snap}"
    );
}

/// Every event of a log validates against the generated run-event schema.
fn every_event_fits_its_schema(log: &[Value]) {
    for event in log {
        let findings = openwop_generated::validators::validate_run_event(event);
        assert!(findings.is_empty(), "{event}: {findings:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_node_reads_a_json_service_and_when_and_repeat_steer_the_nodes() {
    let p = pair().await;
    let run = create(&p.a, KEY_A, "rest", json!({"workflow": "echo"})).await;
    let snap = wait_for(&p.a, KEY_A, &run, &["completed", "failed"]).await;
    assert_eq!(
        snap["outputs"],
        json!({"status": 200, "id": "echo"}),
        "{snap}"
    );

    let run = create(&p.a, KEY_A, "loop", json!({"n": 3, "stop": 3})).await;
    let snap = wait_for(&p.a, KEY_A, &run, &["completed", "failed"]).await;
    assert_eq!(snap["status"], "completed", "{snap}");
    // The block ran once: `until` held after the first pass; the `when: false` node
    // never ran and has no value.
    assert_eq!(
        snap["outputs"]["loop"],
        json!({"passes": 1, "satisfied": true})
    );
    assert_eq!(snap["outputs"]["skippedValue"], Value::Null);
    // Never satisfied: the block runs `max` times, then the workflow goes on.
    let run = create(&p.a, KEY_A, "loop", json!({"n": 1, "stop": 2})).await;
    let snap = wait_for(&p.a, KEY_A, &run, &["completed", "failed"]).await;
    assert_eq!(
        snap["outputs"]["loop"],
        json!({"passes": 5, "satisfied": false}),
        "{snap}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_the_egress_guard_refuses_or_a_workflow_naming_no_peer_stops_the_start() {
    let dir = tempfile::tempdir().expect("dir");
    let mut config = support::keys::config(dir.path());
    config.peers = vec![PeerFileConfig {
        id: "inside".into(),
        kind: PeerKind::Http,
        url: "https://10.0.0.7/".into(),
        credential: None,
        tenants: None,
        timeout_secs: None,
    }];
    let err = Host::build(config).await.err().expect("refused");
    assert!(err.to_string().contains("egress guard"), "{err}");

    let wf_dir = tempfile::tempdir().expect("dir");
    write_workflows(wf_dir.path());
    let mut config = support::keys::config(dir.path());
    config.workflows_dir = Some(wf_dir.path().to_path_buf());
    let err = Host::build(config).await.err().expect("refused");
    assert!(
        err.to_string().contains("`peers` does not configure"),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_a_peer_is_not_configured_for_fails_the_node_as_if_it_did_not_exist() {
    let b_dir = tempfile::tempdir().expect("dir");
    let b = start_configured(b_dir.path().to_path_buf(), 0, |_| {}).await;
    let config_dir = tempfile::tempdir().expect("dir");
    write_workflows(config_dir.path());
    std::fs::write(config_dir.path().join("b.key"), KEY_B).expect("secret");
    let mut peers = peers_of(&b, &config_dir.path().join("b.key"));
    for p in &mut peers {
        p.tenants = Some(vec!["other".into()]);
    }
    let a_dir = tempfile::tempdir().expect("dir");
    let workflows = config_dir.path().to_path_buf();
    let a = start_configured(a_dir.path().to_path_buf(), 0, move |c| {
        c.workflows_dir = Some(workflows);
        c.egress_allow_loopback = true;
        c.peers = peers;
    })
    .await;
    let run = create(&a, KEY_A, "rest", json!({"workflow": "echo"})).await;
    let snap = wait_for(&a, KEY_A, &run, &["completed", "failed"]).await;
    assert_eq!(snap["status"], "failed");
    assert_eq!(snap["error"]["code"], "peer_call_failed");
    assert!(runs_on(&b, KEY_B).await.is_empty());
    // Discovery says the host is an MCP client: MCP peers are configured.
    let (_, disc) = a.rest_root(Method::GET, "/.well-known/openwop").await;
    assert_eq!(disc["mcp"]["client"], true, "{disc}");
    let (_, disc) = b.rest_root(Method::GET, "/.well-known/openwop").await;
    assert!(disc["mcp"].get("client").is_none(), "{disc}");
}

trait Root {
    async fn rest_root(&self, method: Method, path: &str) -> (u16, Value);
}

impl Root for TestHost {
    async fn rest_root(&self, method: Method, path: &str) -> (u16, Value) {
        let resp = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(KEY_A)
            .send()
            .await
            .expect("send");
        let status = resp.status().as_u16();
        (status, resp.json().await.unwrap_or(Value::Null))
    }
}

/// A stateful MCP server of the initialize era, as the SDKs of that era serve streamable
/// HTTP: `server/discover` is unknown before a session (HTTP 400), `initialize` answers
/// `version` and opens a session (`Mcp-Session-Id`), `tools/call` needs the session,
/// `DELETE` ends it. It keeps which sessions it opened and which were closed.
#[derive(Clone, Default)]
struct LegacyMcp {
    version: &'static str,
    opened: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    closed: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

async fn start_legacy_mcp(version: &'static str) -> (String, LegacyMcp) {
    use axum::http::{HeaderMap, StatusCode};
    use axum::response::IntoResponse;
    let server = LegacyMcp {
        version,
        ..Default::default()
    };
    let s = server.clone();
    let post = move |headers: HeaderMap, axum::Json(body): axum::Json<Value>| {
        let s = s.clone();
        async move {
            let session = headers
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned);
            let id = body.get("id").cloned();
            match body["method"].as_str().unwrap_or_default() {
                "initialize" => {
                    let sid = format!("session-{}", s.opened.lock().unwrap().len() + 1);
                    s.opened.lock().unwrap().push(sid.clone());
                    let result = json!({"jsonrpc": "2.0", "id": id, "result": {
                        "protocolVersion": s.version, "capabilities": {"tools": {}},
                        "serverInfo": {"name": "legacy", "version": "1"}}});
                    ([("mcp-session-id", sid)], axum::Json(result)).into_response()
                }
                m if m.starts_with("notifications/") && session.is_some() => {
                    StatusCode::ACCEPTED.into_response()
                }
                "tools/call" if session.is_some() => axum::Json(json!({"jsonrpc": "2.0", "id": id,
                    "result": {"content": [{"type": "text", "text": "done"}], "structuredContent": {"said": "done"}}}))
                .into_response(),
                _ => (
                    StatusCode::BAD_REQUEST,
                    axum::Json(json!({"jsonrpc": "2.0", "id": "server-error",
                        "error": {"code": -32600, "message": "Bad Request: Missing session ID"}})),
                )
                    .into_response(),
            }
        }
    };
    let s = server.clone();
    let delete = move |headers: HeaderMap| {
        let s = s.clone();
        async move {
            if let Some(sid) = headers.get("mcp-session-id").and_then(|v| v.to_str().ok()) {
                s.closed.lock().unwrap().push(sid.to_owned());
            }
            StatusCode::OK
        }
    };
    let app = axum::Router::new().route("/mcp", axum::routing::post(post).delete(delete));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (base, server)
}

/// MCP 2025-11-25, streamable HTTP, session management: a client that no longer needs a
/// session SHOULD send DELETE with its `Mcp-Session-Id`. Every `mcp` node call in the
/// initialize era opens its own session, so each is closed when its call is over, and so
/// is the one an `initialize` opened before our floor refused the server's revision.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_initialize_era_mcp_session_is_closed_with_delete_when_its_call_is_over() {
    for (version, want) in [("2025-11-25", "completed"), ("2025-06-18", "failed")] {
        let (base, server) = start_legacy_mcp(version).await;
        let config_dir = tempfile::tempdir().expect("dir");
        write_workflows(config_dir.path());
        std::fs::write(config_dir.path().join("b.key"), KEY_B).expect("secret");
        let secret = config_dir.path().join("b.key");
        let peers = vec![
            peer("b", PeerKind::A2a, base.clone(), &secret),
            peer("b-mcp", PeerKind::Mcp, format!("{base}/mcp"), &secret),
            peer("b-rest", PeerKind::Http, base.clone(), &secret),
        ];
        let a_dir = tempfile::tempdir().expect("dir");
        let workflows = config_dir.path().to_path_buf();
        let a = start_configured(a_dir.path().to_path_buf(), 0, move |c| {
            c.workflows_dir = Some(workflows);
            c.egress_allow_loopback = true;
            c.peers = peers;
        })
        .await;
        let run = create(&a, KEY_A, "tool", json!({"text": "x"})).await;
        let snap = wait_for(&a, KEY_A, &run, &["completed", "failed"]).await;
        assert_eq!(snap["status"], want, "{version}: {snap}");
        if want == "completed" {
            assert_eq!(snap["outputs"]["result"], json!({"said": "done"}), "{snap}");
        } else {
            assert_eq!(
                snap["error"]["code"], "interop_version_unsupported",
                "{snap}"
            );
        }
        let opened = server.opened.lock().unwrap().clone();
        assert_eq!(opened.len(), 1, "{version}: one session per call");
        assert_eq!(*server.closed.lock().unwrap(), opened, "{version}");
    }
}

/// A node may ask more than once: a remote agent's second question in one task (here host
/// B's workflow with two clarifications, through one A2A task) and the same node asking
/// again in a later `repeat` pass each reach the caller as a new interrupt, and each
/// answer goes back. (The store once kept one interrupt row per node for the run's life;
/// the second question's commit failed forever and the run stayed `running`.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_asks_again_raises_a_new_interrupt_each_time() {
    let b_dir = tempfile::tempdir().expect("dir");
    let b_workflows = tempfile::tempdir().expect("dir");
    std::fs::write(
        b_workflows.path().join("twice.yaml"),
        r#"
id: twice
inputSchema: {type: object}
nodes:
  - id: first
    kind: interrupt
    interrupt: {kind: clarification, data: {questions: [{id: q1, question: "First?"}]}}
  - id: second
    kind: interrupt
    interrupt: {kind: clarification, data: {questions: [{id: q1, question: "Second?"}]}}
outputs: {a: "${nodes.first}", b: "${nodes.second}"}
"#,
    )
    .expect("workflow");
    let dir = b_workflows.path().to_path_buf();
    let b = start_configured(b_dir.path().to_path_buf(), 0, move |c| {
        c.workflows_dir = Some(dir);
    })
    .await;
    let config_dir = tempfile::tempdir().expect("dir");
    std::fs::create_dir(config_dir.path().join("workflows")).expect("dir");
    write_workflows(&config_dir.path().join("workflows"));
    std::fs::write(config_dir.path().join("b.key"), KEY_B).expect("secret");
    let a_dir = tempfile::tempdir().expect("dir");
    let a = start_a(a_dir.path(), config_dir.path(), &b).await;

    let run = create(
        &a,
        KEY_A,
        "delegate",
        json!({"text": "x", "skill": "twice"}),
    )
    .await;
    wait_for(&a, KEY_A, &run, &["waiting-input"]).await;
    assert_eq!(
        resolve(&a, KEY_A, &run, "ask", json!({"answer": "one"})).await,
        200
    );
    // B's second question, on the same node of A, through the same remote task.
    // B's A2A status message says what B asks, so the question reads the same on A.
    let asked = wait_question(&a, &run, "Second?").await;
    assert_eq!(
        resolve(&a, KEY_A, &run, "ask", json!({"answer": "two"})).await,
        200,
        "{asked}"
    );
    let snap = wait_for(&a, KEY_A, &run, &["failed", "completed"]).await;
    assert_eq!(snap["status"], "completed", "{snap}");
    let text = snap["outputs"].to_string();
    assert!(text.contains("one") && text.contains("two"), "{snap}");

    // The same node asking again in a later pass of a `repeat` block.
    let run = create(&a, KEY_A, "delegate-loop", json!({})).await;
    wait_for(&a, KEY_A, &run, &["waiting-input"]).await;
    assert_eq!(
        resolve(&a, KEY_A, &run, "ask", json!({"answer": "first"})).await,
        200
    );
    wait_question(&a, &run, "What should this run do next?").await;
    assert_eq!(
        resolve(&a, KEY_A, &run, "ask", json!({"answer": "second"})).await,
        200
    );
    let snap = wait_for(&a, KEY_A, &run, &["failed", "completed"]).await;
    assert_eq!(snap["status"], "completed", "{snap}");
    assert_eq!(snap["outputs"]["loop"]["passes"], 2, "{snap}");

    // A plain question in a loop: ask, check, ask again, until the answer is "yes".
    let run = create(&a, KEY_A, "ask-until", json!({})).await;
    for (pass, answer) in [(0, "no"), (1, "not yet"), (2, "yes")] {
        wait_question(&a, &run, &format!("Ready? (pass {pass})")).await;
        assert_eq!(
            resolve(&a, KEY_A, &run, "ask", json!({"q1": answer})).await,
            200
        );
    }
    let snap = wait_for(&a, KEY_A, &run, &["failed", "completed"]).await;
    assert_eq!(snap["status"], "completed", "{snap}");
    assert_eq!(snap["outputs"]["loop"]["passes"], 3, "{snap}");
    assert_eq!(snap["outputs"]["loop"]["satisfied"], true, "{snap}");
    // Each pass was its own interrupt, each on the log with its own id.
    let log = events(&a, KEY_A, &run).await;
    let ids: std::collections::BTreeSet<String> = log
        .iter()
        .filter(|e| e["type"] == "interrupt.resolved")
        .filter_map(|e| e["payload"]["interruptId"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(ids.len(), 3, "{log:?}");
}

/// Waits until the run is suspended on a new question (asked after the last answer) whose
/// interrupt data mentions `text`.
async fn wait_question(host: &TestHost, run: &str, text: &str) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let (_, snap) = host.get_run(KEY_A, run).await;
        let log = events(host, KEY_A, run).await;
        let last = |ty: &str| log.iter().rposition(|e| e["type"] == ty);
        let asked = last("interrupt.requested");
        let fresh = match (asked, last("interrupt.resolved")) {
            (Some(a), Some(r)) => a > r,
            (Some(_), None) => true,
            _ => false,
        };
        if snap["status"] == "waiting-input"
            && fresh
            && asked.is_some_and(|a| log[a]["payload"].to_string().contains(text))
        {
            return snap;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no question `{text}`: {snap} {log:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Host A is the real binary, SIGKILLed while host B works on the task A's `a2a` node
/// sent. Started again on the same data dir, A follows the same remote task (its id is in
/// the run) and never sends the message again: B ran exactly one run, and A completes
/// with B's answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigkill_of_the_calling_host_while_the_remote_works_resumes_without_resending() {
    let b_dir = tempfile::tempdir().expect("dir");
    let b = start_configured(b_dir.path().to_path_buf(), 0, |_| {}).await;
    let config_dir = tempfile::tempdir().expect("dir");
    let workflows = config_dir.path().join("workflows");
    std::fs::create_dir(&workflows).expect("dir");
    std::fs::write(
        workflows.join("delegate-slow.yaml"),
        r#"
id: delegate-slow
inputSchema: {type: object}
nodes:
  - id: ask
    kind: a2a
    peer: b
    parts: [{kind: data, data: {ms: 3000}}]
    metadata: {openwop: {skill: slow}}
outputs: {state: "${nodes.ask.state}", data: "${nodes.ask.data}"}
"#,
    )
    .expect("workflow");
    let secret = config_dir.path().join("b.key");
    std::fs::write(&secret, KEY_B).expect("secret");
    let config = config_dir.path().join("a.yaml");
    std::fs::write(
        &config,
        format!(
            "egressAllowLoopback: true\nworkflows: {}\napiKeys: [\"acme:{KEY_A}\"]\npeers:\n  - {{id: b, kind: a2a, url: \"{}\", credential: {{file: {}}}}}\n",
            workflows.display(),
            b.base,
            secret.display()
        ),
    )
    .expect("config");
    let a_data = tempfile::tempdir().expect("dir");
    let spawn_a = || {
        process::serve(a_data.path())
            .arg("--config")
            .arg(&config)
            .spawn()
            .expect("spawn openwop")
    };
    let http = reqwest::Client::new();
    let (mut first, base) = process::listening(spawn_a()).await;
    let created: Value = http
        .post(format!("{base}/runs"))
        .bearer_auth(KEY_A)
        .json(&json!({"workflowId": "delegate-slow", "inputs": {}}))
        .send()
        .await
        .expect("create")
        .json()
        .await
        .expect("json");
    let run = created["runId"].as_str().expect("runId").to_owned();

    // B has the task and works on it: kill A now.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while runs_on(&b, KEY_B).await.is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "B never got the task"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.kill().await.expect("SIGKILL"); // SIGKILL on unix
    let _ = first.wait().await;

    let (_second, base) = process::listening(spawn_a()).await;
    let path = format!("{base}/runs/{}", openwop::ids::project(&run));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let snap = loop {
        let snap: Value = http
            .get(&path)
            .bearer_auth(KEY_A)
            .send()
            .await
            .expect("get")
            .json()
            .await
            .expect("json");
        if matches!(snap["status"].as_str(), Some("completed" | "failed")) {
            break snap;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "A did not finish: {snap}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(snap["status"], "completed", "{snap}");
    assert_eq!(snap["outputs"]["data"]["waitedMs"], 3000, "{snap}");
    let remote = runs_on(&b, KEY_B).await;
    assert_eq!(remote.len(), 1, "the message was sent once: {remote:?}");
}

/// One MCP 2026-07-28 `tools/call` to `host`'s mount as KEY_A, declaring elicitation;
/// the JSON-RPC response (a JSON body or the last `data:` of an SSE answer).
async fn mcp_tools_call(host: &TestHost, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    });
    let name = params["name"].as_str().unwrap_or_default().to_owned();
    let text = host
        .http
        .post(format!("{}/mcp", host.base))
        .bearer_auth(KEY_A)
        .header("accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", name)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}))
        .send()
        .await
        .expect("send")
        .text()
        .await
        .expect("body");
    let json_text = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: ").or_else(|| l.strip_prefix("data:")))
        .rfind(|d| d.contains("\"result\"") || d.contains("\"error\""))
        .map(str::to_owned)
        .unwrap_or(text.clone());
    serde_json::from_str(&json_text).unwrap_or(Value::String(text))
}

/// Three hops, two protocols: an MCP client calls a tool on A whose workflow delegates
/// over A2A to B; B's question reaches the MCP client as an `input_required` round (keyed
/// by A's interrupt, B's question as its message), and the answer sent back with the
/// round's `requestState` reaches B, whose run completes with it, and so does A's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_client_of_a_answers_the_question_bs_agent_asked_over_a2a() {
    let p = pair().await;
    let args = json!({"text": "plan", "skill": "clarify"});
    let first = mcp_tools_call(&p.a, json!({"name": "delegate", "arguments": args})).await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    let requests = result["inputRequests"].as_object().expect("inputRequests");
    assert_eq!(requests.len(), 1, "{first}");
    let (key, request) = requests.iter().next().expect("one");
    assert_eq!(request["method"], "elicitation/create", "{request}");
    // B's own question, through B's A2A status message and A's clarification.
    assert!(
        request
            .to_string()
            .contains("What should this run do next?"),
        "{request}"
    );
    let state = result["requestState"].as_str().expect("requestState");
    let answered = mcp_tools_call(
        &p.a,
        json!({
            "name": "delegate",
            "arguments": args,
            "requestState": state,
            "inputResponses": {key.clone(): {"action": "accept", "content": {"answer": "ship it on Friday"}}},
        }),
    )
    .await;
    assert_eq!(answered["result"]["resultType"], "complete", "{answered}");
    assert_eq!(answered["result"]["isError"], false, "{answered}");
    let remote = runs_on(&p.b, KEY_B).await;
    assert_eq!(remote.len(), 1, "{remote:?}");
    assert_eq!(remote[0]["status"], "completed", "{remote:?}");
    assert!(
        answered.to_string().contains("ship it on Friday"),
        "B's answer, carrying ours, is A's: {answered}"
    );
}

/// The same relay for an A2A client of A: A's task is INPUT_REQUIRED with B's question as
/// its status text, the client replies on A's task, and the reply reaches B.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_a2a_client_of_a_answers_the_question_bs_agent_asked() {
    let p = pair().await;
    let send = |message: Value| {
        let a = &p.a;
        async move {
            let body: Value = a
                .http
                .post(format!("{}/a2a/jsonrpc", a.base))
                .bearer_auth(KEY_A)
                .header("A2A-Version", "1.0")
                .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": message}}))
                .send()
                .await
                .expect("send")
                .json()
                .await
                .expect("json");
            body
        }
    };
    let first = send(json!({
        "messageId": "m-plan-1",
        "role": "ROLE_USER",
        "parts": [{"data": {"text": "plan", "skill": "clarify"}}],
        "metadata": {"openwop": {"skill": "delegate"}},
    }))
    .await;
    let task = &first["result"]["task"];
    assert_eq!(
        task["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{first}"
    );
    assert!(
        task["status"]["message"]
            .to_string()
            .contains("What should this run do next?"),
        "{first}"
    );
    let reply = send(json!({
        "messageId": "m-plan-2",
        "role": "ROLE_USER",
        "taskId": task["id"],
        "contextId": task["contextId"],
        "parts": [{"data": {"answer": "ship it on Friday"}}],
    }))
    .await;
    assert_eq!(
        reply["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{reply}"
    );
    let remote = runs_on(&p.b, KEY_B).await;
    assert_eq!(remote.len(), 1, "{remote:?}");
    assert_eq!(remote[0]["status"], "completed", "{remote:?}");
    assert!(reply.to_string().contains("ship it on Friday"), "{reply}");
}

/// B offers the MCP tasks extension, so A declares it and a long tool call comes back as a
/// task: A keeps its id in the run and polls it. Host A stopped and started again while
/// B works follows the same task and never calls the tool again (B ran one run); a task
/// that asks for input suspends A on a clarification whose answer goes back with
/// `tasks/update`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_mcp_tool_call_is_a_task_followed_across_a_restart_and_asked_through() {
    let p = pair().await;
    let run = create(&p.a, KEY_A, "tool-task", json!({})).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while runs_on(&p.b, KEY_B).await.is_empty() {
        let (_, snap) = p.a.get_run(KEY_A, &run).await;
        assert!(
            tokio::time::Instant::now() < deadline,
            "B never got the call: {snap}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let a_dir = p.a_dir.path().to_path_buf();
    let _ = p.a.stopper.send(true);
    drop(p.a);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let a = start_a(&a_dir, p.config_dir.path(), &p.b).await;
    let snap = wait_for(&a, KEY_A, &run, &["completed", "failed"]).await;
    assert_eq!(snap["status"], "completed", "{snap}");
    assert_eq!(snap["outputs"]["result"]["waitedMs"], 2000, "{snap}");
    let remote = runs_on(&p.b, KEY_B).await;
    assert_eq!(remote.len(), 1, "the tool was called once: {remote:?}");

    // A task that asks: B's approval run, relayed to A's caller and answered there.
    let run = create(&a, KEY_A, "tool-task-asks", json!({})).await;
    wait_for(&a, KEY_A, &run, &["waiting-input"]).await;
    let log = events(&a, KEY_A, &run).await;
    let asked = log
        .iter()
        .rfind(|e| e["type"] == "interrupt.requested")
        .expect("asked");
    let questions = asked["payload"]["data"]["questions"]
        .as_array()
        .expect("questions");
    assert_eq!(questions.len(), 1, "{asked}");
    let key = questions[0]["id"].as_str().expect("id").to_owned();
    assert_eq!(
        resolve(
            &a,
            KEY_A,
            &run,
            "call",
            json!({key: {"action": "accept", "content": {"decision": "accept"}}})
        )
        .await,
        200
    );
    let snap = wait_for(&a, KEY_A, &run, &["completed", "failed"]).await;
    assert_eq!(snap["status"], "completed", "{snap}");
    assert_eq!(runs_on(&p.b, KEY_B).await.len(), 2);
}

/// SEP-2243 from the client side: a tool on B marks an argument `x-mcp-header: Region`, so
/// B refuses a call without `Mcp-Param-Region` mirroring it (-32020). A learns that from
/// B's `tools/list` and sends the header (a value that is not header-safe as an encoded
/// word), so the call goes through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_node_mirrors_the_arguments_a_tool_marks_x_mcp_header() {
    let b_dir = tempfile::tempdir().expect("dir");
    let b_workflows = tempfile::tempdir().expect("dir");
    std::fs::write(
        b_workflows.path().join("regional.yaml"),
        r#"
id: regional
inputSchema:
  type: object
  required: [region]
  properties:
    region: {type: string, x-mcp-header: Region}
nodes: []
outputs: "${inputs}"
"#,
    )
    .expect("workflow");
    let dir = b_workflows.path().to_path_buf();
    let b = start_configured(b_dir.path().to_path_buf(), 0, move |c| {
        c.workflows_dir = Some(dir);
    })
    .await;
    let config_dir = tempfile::tempdir().expect("dir");
    let workflows = config_dir.path().join("workflows");
    std::fs::create_dir(&workflows).expect("dir");
    write_workflows(&workflows);
    std::fs::write(
        workflows.join("regional-call.yaml"),
        r#"
id: regional-call
inputSchema: {type: object}
nodes:
  - {id: call, kind: mcp, peer: b-mcp, tool: regional, arguments: {region: "${inputs.region}"}}
outputs: {result: "${nodes.call}"}
"#,
    )
    .expect("workflow");
    std::fs::write(config_dir.path().join("b.key"), KEY_B).expect("secret");
    let a_dir = tempfile::tempdir().expect("dir");
    let a = start_a(a_dir.path(), config_dir.path(), &b).await;
    for region in ["eu-west", "région sud"] {
        let run = create(&a, KEY_A, "regional-call", json!({"region": region})).await;
        let snap = wait_for(&a, KEY_A, &run, &["completed", "failed"]).await;
        assert_eq!(snap["status"], "completed", "{region}: {snap}");
        assert_eq!(snap["outputs"]["result"]["region"], region, "{snap}");
    }
}

/// Trace context out continues the caller's trace: a run created with a `traceparent`
/// keeps it, and its A2A call carries that trace id with a span of its own (a child of the
/// caller's), in the message's `metadata.openwop` as B stored it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_continues_the_trace_of_the_request_that_created_the_run() {
    const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
    const PARENT: &str = "00f067aa0ba902b7";
    let p = pair().await;
    let resp =
        p.a.http
            .post(format!("{}/runs", p.a.base))
            .bearer_auth(KEY_A)
            .header("traceparent", format!("00-{TRACE}-{PARENT}-01"))
            .json(&json!({"workflowId": "delegate", "inputs": {"text": "hi", "skill": "echo"}}))
            .send()
            .await
            .expect("send");
    assert_eq!(resp.status().as_u16(), 201);
    let body: Value = resp.json().await.expect("json");
    let run = body["runId"].as_str().expect("runId").to_owned();
    let snap = wait_for(&p.a, KEY_A, &run, &["completed", "failed"]).await;
    assert_eq!(snap["status"], "completed", "{snap}");
    let remote_task = snap["outputs"]["remoteTask"].as_str().expect("remoteTask");
    let got: Value = p
        .b
        .http
        .post(format!("{}/a2a/jsonrpc", p.b.base))
        .bearer_auth(KEY_B)
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": remote_task, "historyLength": 10}}))
        .send()
        .await
        .expect("send")
        .json()
        .await
        .expect("json");
    let sent = got["result"]["history"][0]["metadata"]["openwop"]["traceparent"]
        .as_str()
        .unwrap_or_else(|| panic!("the message B stored: {got}"));
    assert!(sent.starts_with(&format!("00-{TRACE}-")), "{sent}");
    assert!(!sent.contains(PARENT), "a span of its own: {sent}");
}

/// An `http` node's request other than GET carries an `Idempotency-Key` derived from the
/// run, the node and its visit (so a service that honours it takes a re-send after a
/// crash as the request it already served); each pass of a `repeat` block is a visit of
/// its own, so its key differs. A GET carries none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_nodes_write_carries_an_idempotency_key_of_its_visit() {
    type Seen = std::sync::Arc<std::sync::Mutex<Vec<(String, Option<String>)>>>;
    let seen: Seen = Default::default();
    let s = seen.clone();
    let app = axum::Router::new().fallback(
        move |method: axum::http::Method, headers: axum::http::HeaderMap| {
            let s = s.clone();
            async move {
                let key = headers
                    .get("idempotency-key")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                s.lock().unwrap().push((method.to_string(), key));
                axum::Json(json!({"ok": true}))
            }
        },
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let config_dir = tempfile::tempdir().expect("dir");
    let workflows = config_dir.path().join("workflows");
    std::fs::create_dir(&workflows).expect("dir");
    std::fs::write(
        workflows.join("writes.yaml"),
        r#"
id: writes
inputSchema: {type: object}
nodes:
  - {id: read, kind: http, peer: svc, method: GET, path: /things}
  - id: again
    kind: repeat
    max: 2
    until: false
    nodes:
      - {id: write, kind: http, peer: svc, method: POST, path: /things, body: {pass: "${loops.again}"}}
outputs: {read: "${nodes.read.status}", write: "${nodes.write.status}"}
"#,
    )
    .expect("workflow");
    let secret = config_dir.path().join("svc.key");
    std::fs::write(&secret, "svc-credential-0123456789").expect("secret");
    let peers = vec![peer(
        "svc",
        PeerKind::Http,
        format!("http://127.0.0.1:{port}"),
        &secret,
    )];
    let a_dir = tempfile::tempdir().expect("dir");
    let a = start_configured(a_dir.path().to_path_buf(), 0, move |c| {
        c.workflows_dir = Some(workflows);
        c.egress_allow_loopback = true;
        c.peers = peers;
    })
    .await;
    let run = create(&a, KEY_A, "writes", json!({})).await;
    let snap = wait_for(&a, KEY_A, &run, &["completed", "failed"]).await;
    assert_eq!(snap["status"], "completed", "{snap}");
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert_eq!(seen[0], ("GET".to_owned(), None), "{seen:?}");
    let keys: Vec<&str> = seen[1..]
        .iter()
        .map(|(m, k)| {
            assert_eq!(m, "POST");
            k.as_deref().expect("an Idempotency-Key")
        })
        .collect();
    assert!(
        keys.iter()
            .all(|k| k.len() == 32 && k.bytes().all(|b| b.is_ascii_hexdigit())),
        "{keys:?}"
    );
    assert_ne!(keys[0], keys[1], "each pass is a visit of its own");
}
