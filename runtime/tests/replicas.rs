//! Two real `openwop serve` processes on one PostgreSQL schema: what one replica does,
//! the other sees and honours. PostgreSQL being unreachable fails these tests unless
//! `OPENWOP_SKIP_POSTGRES=1`.

mod support;

use openwop::ids::project;
use openwop::store::scratch::{ScratchSchema, skip_postgres};
use reqwest::{Client, StatusCode};
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use support::KEY_A;
use support::process;
use tokio::process::Child;

/// Short leases so a killed replica's run moves on within the test.
const LEASE_MS: &str = "1000";

struct Replica {
    child: Child,
    base: String,
    _dir: tempfile::TempDir,
}

async fn spawn(database: &str) -> Replica {
    spawn_with(database, &[]).await
}

async fn spawn_with(database: &str, extra: &[String]) -> Replica {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = process::serve_keyed(dir.path());
    cmd.args(["--database", database, "--lease-ttl-ms", LEASE_MS])
        .args(extra)
        .env_remove("OPENWOP_DATABASE_URL");
    let (child, base) = process::spawn(&mut cmd).await;
    Replica {
        child,
        base,
        _dir: dir,
    }
}

/// Two replicas on a fresh schema, or `None` when PostgreSQL tests are skipped.
async fn pair(test: &str) -> Option<(ScratchSchema, Replica, Replica)> {
    if skip_postgres(test) {
        return None;
    }
    let schema = ScratchSchema::create()
        .await
        .expect("PostgreSQL for the replica tests");
    let a = spawn(&schema.url()).await;
    let b = spawn(&schema.url()).await;
    Some((schema, a, b))
}

fn client() -> Client {
    Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap()
}

async fn create(c: &Client, base: &str, wf: &str, inputs: Value) -> String {
    let r = c
        .post(format!("{base}/runs"))
        .bearer_auth(KEY_A)
        .json(&json!({"workflowId": wf, "inputs": inputs}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::CREATED, "create on {base}");
    r.json::<Value>().await.unwrap()["runId"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn get(c: &Client, url: String) -> Value {
    c.get(url)
        .bearer_auth(KEY_A)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

async fn events(c: &Client, base: &str, run: &str) -> Vec<Value> {
    let v = get(
        c,
        format!("{base}/runs/{}/events/poll?timeout=0", project(run)),
    )
    .await;
    v["events"].as_array().unwrap().clone()
}

async fn wait_status(c: &Client, base: &str, run: &str, status: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let v = get(c, format!("{base}/runs/{}", project(run))).await;
        if v["status"] == status {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "{run} stuck at {} on {base}",
            v["status"]
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

async fn resolve(c: &Client, base: &str, run: &str, value: Value) -> StatusCode {
    c.post(format!("{base}/runs/{}/interrupts/approve", project(run)))
        .bearer_auth(KEY_A)
        .json(&json!({"resumeValue": value}))
        .send()
        .await
        .unwrap()
        .status()
}

fn assert_contiguous(evs: &[Value]) {
    let seqs: Vec<i64> = evs
        .iter()
        .map(|e| e["sequence"].as_i64().unwrap())
        .collect();
    assert_eq!(
        seqs,
        (0..seqs.len() as i64).collect::<Vec<_>>(),
        "no gap, no duplicate"
    );
}

fn sse_types(body: &str) -> Vec<String> {
    body.split("\n\n")
        .filter_map(|f| {
            f.lines()
                .find_map(|l| l.strip_prefix("event:"))
                .map(|t| t.trim().to_owned())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn create_on_a_stream_and_cancel_on_b_resolve_on_a() {
    let Some((_schema, a, b)) = pair("create_on_a_stream_and_cancel_on_b_resolve_on_a").await
    else {
        return;
    };
    let c = client();

    // Created on A, suspended there; B streams it and sees A's resolve arrive.
    let run = create(&c, &a.base, "approval", json!({})).await;
    wait_status(&c, &b.base, &run, "waiting-approval").await;
    let stream = c
        .get(format!("{}/runs/{}/events", b.base, project(&run)))
        .bearer_auth(KEY_A)
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let body =
        tokio::spawn(
            async move { tokio::time::timeout(Duration::from_secs(10), stream.text()).await },
        );
    // The stream on B is open (and has sent what is stored) before A changes the run.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        resolve(&c, &a.base, &run, json!({"action": "accept"})).await,
        StatusCode::OK
    );
    let body = body
        .await
        .unwrap()
        .expect("B's stream ends after A completes the run")
        .unwrap();
    assert_eq!(
        sse_types(&body),
        [
            "run.started",
            "node.started",
            "interrupt.requested",
            "node.suspended",
            "interrupt.resolved",
            "node.completed",
            "run.completed"
        ]
    );
    assert_eq!(
        wait_status(&c, &b.base, &run, "completed").await["outputs"],
        json!({"decision": {"action": "accept"}})
    );

    // Running on A, cancelled on B: A's driver stops and the log ends at the cancel.
    let slow = create(&c, &a.base, "slow", json!({"ms": 4000})).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while !events(&c, &b.base, &slow)
        .await
        .iter()
        .any(|e| e["type"] == "node.started")
    {
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let r = c
        .post(format!("{}/runs/{}/cancel", b.base, project(&slow)))
        .bearer_auth(KEY_A)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::OK);
    wait_status(&c, &a.base, &slow, "cancelled").await;
    // Past the wait's deadline nothing more is appended by A.
    tokio::time::sleep(Duration::from_millis(4500)).await;
    let evs = events(&c, &a.base, &slow).await;
    assert_contiguous(&evs);
    let types: Vec<&str> = evs.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["run.started", "node.started", "run.cancelled"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn sigkill_the_owning_replica_and_the_other_finishes_the_run() {
    let Some((_schema, mut a, b)) =
        pair("sigkill_the_owning_replica_and_the_other_finishes_the_run").await
    else {
        return;
    };
    let c = client();
    // Created on A, so A drives it (the creating replica takes the lease at once).
    let run = create(&c, &a.base, "slow", json!({"ms": 1500})).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while !events(&c, &a.base, &run)
        .await
        .iter()
        .any(|e| e["type"] == "node.started")
    {
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let before = events(&c, &a.base, &run).await;
    a.child.kill().await.unwrap(); // SIGKILL on unix
    a.child.wait().await.unwrap();

    let snap = wait_status(&c, &b.base, &run, "completed").await;
    assert_eq!(snap["outputs"], json!({"waitedMs": 1500}));
    let after = events(&c, &b.base, &run).await;
    assert_eq!(
        &after[..before.len()],
        &before[..],
        "no event lost or rewritten"
    );
    assert_contiguous(&after);
    let count = |t: &str| after.iter().filter(|e| e["type"] == t).count();
    assert_eq!(
        (
            count("run.started"),
            count("node.started"),
            count("node.completed"),
            count("run.completed")
        ),
        (1, 1, 1, 1)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn one_idempotency_key_across_replicas_makes_one_run() {
    let Some((_schema, a, b)) = pair("one_idempotency_key_across_replicas_makes_one_run").await
    else {
        return;
    };
    let c = client();
    let body = json!({"workflowId": "echo", "inputs": {"x": 1}});
    let sends: Vec<_> = (0..10)
        .map(|i| {
            let url = format!("{}/runs", if i % 2 == 0 { &a.base } else { &b.base });
            c.post(url)
                .bearer_auth(KEY_A)
                .header("idempotency-key", "one-key-for-both")
                .json(&body)
                .send()
        })
        .collect();
    let mut ids = Vec::new();
    for r in futures::future::join_all(sends).await {
        let r = r.unwrap();
        assert!(r.status().is_success(), "{}", r.status());
        ids.push(
            r.json::<Value>().await.unwrap()["runId"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    ids.dedup();
    assert_eq!(ids.len(), 1, "{ids:?}");
    let listed = get(&c, format!("{}/runs", b.base)).await;
    assert_eq!(listed["runs"].as_array().unwrap().len(), 1);
    // The same key with another body is refused on either replica.
    let other = json!({"workflowId": "echo", "inputs": {"x": 2}});
    for base in [&a.base, &b.base] {
        let r = c
            .post(format!("{base}/runs"))
            .bearer_auth(KEY_A)
            .header("idempotency-key", "one-key-for-both")
            .json(&other)
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::CONFLICT, "{base}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_resolves_on_two_replicas_exactly_one_wins() {
    let Some((_schema, a, b)) = pair("concurrent_resolves_on_two_replicas_exactly_one_wins").await
    else {
        return;
    };
    let c = client();
    for round in 0..4 {
        let run = create(
            &c,
            if round % 2 == 0 { &a.base } else { &b.base },
            "approval",
            json!({}),
        )
        .await;
        wait_status(&c, &a.base, &run, "waiting-approval").await;
        let (ra, rb) = tokio::join!(
            resolve(
                &c,
                &a.base,
                &run,
                json!({"action": "accept", "by": "from-a"})
            ),
            resolve(
                &c,
                &b.base,
                &run,
                json!({"action": "accept", "by": "from-b"})
            )
        );
        let mut codes = [ra, rb];
        codes.sort();
        assert_eq!(
            codes,
            [StatusCode::OK, StatusCode::CONFLICT],
            "round {round}"
        );
        let winner = if ra == StatusCode::OK {
            "from-a"
        } else {
            "from-b"
        };
        let snap = wait_status(&c, &b.base, &run, "completed").await;
        assert_eq!(
            snap["outputs"],
            json!({"decision": {"action": "accept", "by": winner}})
        );
        let evs = events(&c, &a.base, &run).await;
        assert_contiguous(&evs);
        assert_eq!(
            evs.iter()
                .filter(|e| e["type"] == "interrupt.resolved")
                .count(),
            1
        );
        assert_eq!(
            evs.iter().filter(|e| e["type"] == "run.completed").count(),
            1
        );
    }
}

/// A 2026-07-28 MCP `tools/call` on `base`; returns the JSON-RPC response.
async fn mcp_call(c: &Client, base: &str, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
    });
    let name = params["name"].as_str().unwrap().to_owned();
    let text = c
        .post(format!("{base}/mcp"))
        .bearer_auth(KEY_A)
        .header("accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", name)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let json_text = text
        .lines()
        .find_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .unwrap_or(&text)
        .to_owned();
    serde_json::from_str(&json_text).unwrap()
}

/// Asks for the approval tool on `base`; returns the retry that answers it.
async fn mcp_input_required(c: &Client, base: &str) -> Value {
    let args = json!({"title": "ship it"});
    let first = mcp_call(c, base, json!({"name": "approval", "arguments": args})).await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    let (interrupt, _) = result["inputRequests"]
        .as_object()
        .unwrap()
        .iter()
        .next()
        .unwrap();
    json!({
        "name": "approval",
        "arguments": args,
        "requestState": result["requestState"],
        "inputResponses": {interrupt.clone(): {"action": "accept", "content": {"decision": "accept"}}},
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_request_state_from_one_replica_is_spent_once_across_both() {
    let Some((_schema, a, b)) =
        pair("an_mcp_request_state_from_one_replica_is_spent_once_across_both").await
    else {
        return;
    };
    let c = client();
    // Sealed on A, used on B (one key for both), then spent on A too.
    let retry = mcp_input_required(&c, &a.base).await;
    let on_b = mcp_call(&c, &b.base, retry.clone()).await;
    assert_eq!(on_b["result"]["resultType"], "complete", "{on_b}");
    assert_eq!(
        on_b["result"]["structuredContent"]["decision"]["action"],
        "accept"
    );
    let again = mcp_call(&c, &a.base, retry).await;
    assert_eq!(again["error"]["code"], -32602, "{again}");

    // Presented on both at once: exactly one use is accepted.
    let retry = mcp_input_required(&c, &b.base).await;
    let (on_a, on_b) = tokio::join!(
        mcp_call(&c, &a.base, retry.clone()),
        mcp_call(&c, &b.base, retry.clone())
    );
    let completed = [&on_a, &on_b]
        .iter()
        .filter(|r| r["result"]["resultType"] == "complete")
        .count();
    let refused = [&on_a, &on_b]
        .iter()
        .filter(|r| r["error"]["code"] == -32602)
        .count();
    assert_eq!((completed, refused), (1, 1), "A: {on_a}\nB: {on_b}");
}

fn signal(child: &Child, sig: &str) {
    let pid = child.id().expect("running").to_string();
    let ok = std::process::Command::new("kill")
        .args([sig, &pid])
        .status()
        .expect("kill")
        .success();
    assert!(ok, "kill {sig} {pid}");
}

const TWO_WAITS: &str = r#"id: two-waits
name: Two waits
description: Waits twice, so a run can be taken over between its steps.
inputSchema:
  type: object
  required: [ms]
  properties:
    ms: { type: integer, minimum: 0 }
nodes:
  - id: first
    kind: wait
    ms: "${inputs.ms}"
  - id: second
    kind: wait
    ms: "${inputs.ms}"
outputs:
  waitedMs: "${inputs.ms}"
"#;

#[tokio::test(flavor = "multi_thread")]
async fn a_paused_owner_that_wakes_after_a_takeover_appends_nothing() {
    if skip_postgres("a_paused_owner_that_wakes_after_a_takeover_appends_nothing") {
        return;
    }
    let schema = ScratchSchema::create()
        .await
        .expect("PostgreSQL for the replica tests");
    let workflows = tempfile::tempdir().unwrap();
    std::fs::write(workflows.path().join("two-waits.yaml"), TWO_WAITS).unwrap();
    let extra = [
        "--workflows".to_owned(),
        workflows.path().display().to_string(),
    ];
    let a = spawn_with(&schema.url(), &extra).await;
    let b = spawn_with(&schema.url(), &extra).await;
    let c = client();
    let run = create(&c, &a.base, "two-waits", json!({"ms": 2000})).await;
    let started = |evs: &[Value], node: &str| {
        evs.iter()
            .any(|e| e["type"] == "node.started" && e["nodeId"] == node)
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    while !started(&events(&c, &b.base, &run).await, "first") {
        assert!(Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // A stalls (a long pause, a frozen VM) in the first wait; its lease runs out and B
    // takes the run over, finishing the first wait and starting the second.
    signal(&a.child, "-STOP");
    let deadline = Instant::now() + Duration::from_secs(15);
    while !started(&events(&c, &b.base, &run).await, "second") {
        assert!(Instant::now() < deadline, "B never took the run over");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    // A wakes past its first deadline, still believing it drives the run, while the run is
    // running: only the lease keeps it from completing the first wait a second time.
    signal(&a.child, "-CONT");
    wait_status(&c, &a.base, &run, "completed").await;
    let evs = events(&c, &a.base, &run).await;
    assert_contiguous(&evs);
    let steps: Vec<String> = evs
        .iter()
        .map(|e| {
            format!(
                "{}{}",
                e["type"].as_str().unwrap(),
                e["nodeId"]
                    .as_str()
                    .map(|n| format!(":{n}"))
                    .unwrap_or_default()
            )
        })
        .collect();
    assert_eq!(
        steps,
        [
            "run.started",
            "node.started:first",
            "node.completed:first",
            "node.started:second",
            "node.completed:second",
            "run.completed"
        ]
    );
}

/// A loopback push receiver: records each push's body, answers 200.
async fn push_receiver() -> (String, std::sync::Arc<std::sync::Mutex<Vec<Value>>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://127.0.0.1:{}/hook",
        listener.local_addr().unwrap().port()
    );
    let got = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = got.clone();
    let app = axum::Router::new().fallback(move |body: axum::body::Bytes| {
        let sink = sink.clone();
        async move {
            sink.lock()
                .unwrap()
                .push(serde_json::from_slice(&body).unwrap_or(Value::Null));
            StatusCode::OK
        }
    });
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (url, got)
}

async fn a2a_rpc(c: &Client, base: &str, method: &str, params: Value) -> Value {
    let r = c
        .post(format!("{base}/a2a/jsonrpc"))
        .bearer_auth(KEY_A)
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": "1", "method": method, "params": params}))
        .send()
        .await
        .unwrap();
    r.json().await.unwrap()
}

/// The state a push reports: a status update's, or the whole task's on the last push.
fn pushed_state(push: &Value) -> String {
    let status = push
        .get("statusUpdate")
        .or_else(|| push.get("task"))
        .map(|v| &v["status"]["state"]);
    status.and_then(Value::as_str).unwrap_or("?").to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_push_config_made_on_a_is_delivered_once_per_change_when_b_resolves() {
    if skip_postgres("a_push_config_made_on_a_is_delivered_once_per_change_when_b_resolves") {
        return;
    }
    let schema = ScratchSchema::create()
        .await
        .expect("PostgreSQL for the replica tests");
    let loopback = ["--egress-allow-loopback".to_owned()];
    let a = spawn_with(&schema.url(), &loopback).await;
    let b = spawn_with(&schema.url(), &loopback).await;
    let (url, got) = push_receiver().await;
    let c = client();

    let sent = a2a_rpc(
        &c,
        &a.base,
        "SendMessage",
        json!({"message": {"messageId": "m-push-1", "role": "ROLE_USER",
               "parts": [{"data": {"title": "t"}}], "metadata": {"openwop": {"skill": "approval"}}}}),
    )
    .await;
    assert_eq!(
        sent["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{sent}"
    );
    let task = sent["result"]["task"]["id"].as_str().unwrap().to_owned();
    let created = a2a_rpc(
        &c,
        &a.base,
        "CreateTaskPushNotificationConfig",
        json!({"taskId": task, "url": url, "token": "replica-push-token"}),
    )
    .await;
    let config_id = created["result"]["id"]
        .as_str()
        .expect("config id")
        .to_owned();
    // Registered through A, known to B.
    let on_b = a2a_rpc(
        &c,
        &b.base,
        "GetTaskPushNotificationConfig",
        json!({"taskId": task, "id": config_id}),
    )
    .await;
    assert_eq!(on_b["result"]["id"], json!(config_id), "{on_b}");

    let deadline = Instant::now() + Duration::from_secs(20);
    while got.lock().unwrap().is_empty() {
        assert!(Instant::now() < deadline, "no push for the registration");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    // Resolved through B: A never hears the request, only the shared store's change.
    let reply = a2a_rpc(
        &c,
        &b.base,
        "SendMessage",
        json!({"message": {"messageId": "m-push-2", "role": "ROLE_USER", "taskId": task,
               "parts": [{"data": {"action": "accept"}}]}}),
    )
    .await;
    assert!(reply.get("result").is_some(), "{reply}");
    while !got.lock().unwrap().iter().any(|p| p.get("task").is_some()) {
        assert!(
            Instant::now() < deadline,
            "no final push; got {:?}",
            got.lock().unwrap()
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    // Both replicas watch the task and both drain the outbox: give a duplicate time to land.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let states: Vec<String> = got.lock().unwrap().iter().map(pushed_state).collect();
    assert_eq!(
        states.first().map(String::as_str),
        Some("TASK_STATE_INPUT_REQUIRED"),
        "{states:?}"
    );
    assert_eq!(
        states.last().map(String::as_str),
        Some("TASK_STATE_COMPLETED"),
        "{states:?}"
    );
    let mut unique = states.clone();
    unique.dedup();
    assert_eq!(
        unique, states,
        "each state change pushed once, by one replica"
    );
    let mut sorted = states.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(
        sorted.len(),
        states.len(),
        "no state pushed twice: {states:?}"
    );
    // The final push discarded the configuration (and its secret) for both replicas.
    for base in [&a.base, &b.base] {
        let gone = a2a_rpc(
            &c,
            base,
            "GetTaskPushNotificationConfig",
            json!({"taskId": task, "id": config_id}),
        )
        .await;
        assert_eq!(gone["error"]["code"], -32001, "{gone}");
    }
    let (client, conn) = tokio_postgres::connect(&schema.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(conn);
    let left: i64 = client
        .query_one("SELECT COUNT(*) FROM push_secrets", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(left, 0, "the secret is dropped after the final push");
    // Nor was it ever written anywhere else in the shared database.
    let tables = client.query("SELECT table_name::text FROM information_schema.tables WHERE table_schema = current_schema()", &[]).await.unwrap();
    assert!(tables.len() > 5, "the schema's tables are listed");
    for t in tables {
        let table: String = t.get(0);
        let sql =
            format!("SELECT COUNT(*) FROM \"{table}\" t WHERE t::text LIKE '%replica-push-token%'");
        let hits: i64 = client.query_one(&sql, &[]).await.unwrap().get(0);
        assert_eq!(hits, 0, "the push token is in table {table}");
    }
    drop((a, b));
}

/// A 2025-11-25 MCP request on `base`, inside `session` when given: status, the
/// `Mcp-Session-Id` answered, and the JSON-RPC body.
async fn legacy_mcp(
    c: &Client,
    base: &str,
    session: Option<&str>,
    body: Value,
) -> (StatusCode, Option<String>, Value) {
    let mut req = c
        .post(format!("{base}/mcp"))
        .bearer_auth(KEY_A)
        .header("accept", "application/json")
        .json(&body);
    if let Some(id) = session {
        req = req
            .header("Mcp-Session-Id", id)
            .header("MCP-Protocol-Version", "2025-11-25");
    }
    let resp = req.send().await.unwrap();
    let status = resp.status();
    let id = resp
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (status, id, resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread")]
async fn an_mcp_session_opened_on_one_replica_serves_on_the_other() {
    let Some((_schema, a, b)) =
        pair("an_mcp_session_opened_on_one_replica_serves_on_the_other").await
    else {
        return;
    };
    let c = client();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let (status, session, body) = legacy_mcp(&c, &a.base, None, init).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let session = session.expect("initialize answers a session id");

    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}});
    let (status, _, body) = legacy_mcp(&c, &b.base, Some(&session), list.clone()).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(body["result"]["tools"].is_array(), "{body}");
    let call = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "echo", "arguments": {"a": 1}}});
    let (status, _, body) = legacy_mcp(&c, &b.base, Some(&session), call).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["result"]["isError"], false, "{body}");

    // Closed through B, it is gone on A too.
    let closed = c
        .delete(format!("{}/mcp", b.base))
        .bearer_auth(KEY_A)
        .header("Mcp-Session-Id", &session)
        .send()
        .await
        .unwrap();
    assert_eq!(closed.status(), StatusCode::NO_CONTENT);
    let (status, _, body) = legacy_mcp(&c, &a.base, Some(&session), list).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");
}

/// How many of the server's sessions named `app` are encrypted, and how many there are.
async fn sessions_by_tls(base_url: &str, app: &str) -> (i64, i64) {
    let (client, conn) = tokio_postgres::connect(base_url, tokio_postgres::NoTls)
        .await
        .expect("connect");
    tokio::spawn(conn);
    let row = client
        .query_one(
            "SELECT count(*) FILTER (WHERE s.ssl), count(*) FROM pg_stat_activity a
             JOIN pg_stat_ssl s ON s.pid = a.pid WHERE a.application_name = $1",
            &[&app],
        )
        .await
        .expect("pg_stat_ssl");
    (row.get(0), row.get(1))
}

#[tokio::test(flavor = "multi_thread")]
async fn two_replicas_over_tls_answer_readyz_and_share_runs() {
    if skip_postgres("two_replicas_over_tls_answer_readyz_and_share_runs") {
        return;
    }
    let schema = ScratchSchema::create()
        .await
        .expect("PostgreSQL for the replica tests");
    let app = format!("openwop-tls-{}", std::process::id());
    let url = format!("{}&sslmode=require&application_name={app}", schema.url());
    let a = spawn(&url).await;
    let b = spawn(&url).await;
    let c = client();
    for r in [&a, &b] {
        let ready = c.get(format!("{}/readyz", r.base)).send().await.unwrap();
        assert_eq!(ready.status(), StatusCode::OK);
        let body: Value = ready.json().await.unwrap();
        assert_eq!(body["status"], "ready", "{body}");
    }
    // Work through one, read through the other: both on encrypted sessions only.
    let run = create(&c, &a.base, "echo", json!({"tls": true})).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let snap: Value = c
            .get(format!("{}/runs/{}", b.base, project(&run)))
            .bearer_auth(KEY_A)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        if snap["status"] == "completed" {
            break;
        }
        assert!(Instant::now() < deadline, "{snap}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let (encrypted, all) = sessions_by_tls(&schema.base_url, &app).await;
    assert!(all >= 2, "both replicas hold sessions ({all})");
    assert_eq!(encrypted, all, "every session of the replicas is encrypted");
}

#[tokio::test(flavor = "multi_thread")]
async fn verify_full_with_a_root_that_did_not_sign_the_server_is_refused_at_start() {
    if skip_postgres("verify_full_with_a_root_that_did_not_sign_the_server_is_refused_at_start") {
        return;
    }
    let schema = ScratchSchema::create()
        .await
        .expect("PostgreSQL for the replica tests");
    // A root of our own making: no server certificate chains to it.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("root.pem");
    let made = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=not-your-server",
        ])
        .arg("-keyout")
        .arg(dir.path().join("root.key"))
        .arg("-out")
        .arg(&root)
        .output()
        .expect("openssl");
    assert!(made.status.success());
    let url = format!(
        "{}&sslmode=verify-full&sslrootcert={}",
        schema.url(),
        root.display()
    );
    let out = tokio::time::timeout(
        Duration::from_secs(30),
        process::serve_keyed(&dir.path().join("data"))
            .args(["--database", &url])
            .env_remove("OPENWOP_DATABASE_URL")
            .output(),
    )
    .await
    .expect("a refused start ends")
    .expect("run");
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.to_lowercase().contains("certificate"), "{stderr}");
}
