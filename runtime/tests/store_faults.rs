//! A store that goes away answers `503` with `Retry-After` (never `500`), `/readyz`
//! follows it, and open event streams ride it out to the run's end (issue #35, items 4
//! and 5).
//!
//! PostgreSQL: each test makes a database of its own on the test server (so cutting its
//! connections touches nobody else's), then takes it away with
//! `ALTER DATABASE … ALLOW_CONNECTIONS false` and `pg_terminate_backend` on its sessions
//! (the server itself is never stopped: other sessions share it), and gives it back.
//! SQLite: the data dir on a small tmpfs filled up (needs root to mount; skipped, and
//! said so, without it).

mod support;

use std::time::{Duration, Instant};

use openwop::store::scratch::{skip_postgres, test_url};
use serde_json::{Value, json};
use support::KEY_A;
use support::rest::{Rest as _, start_with};
use tokio_postgres::NoTls;

/// A database of the test's own, dropped at the end: by `drop_it`, or when the test fails
/// before it, by `Drop` (a failed run must not leave its database on the shared server).
struct OwnDatabase {
    name: String,
    admin: tokio_postgres::Client,
    /// The tablespace it was made in, when not the server's default.
    tablespace: Option<String>,
    dropped: bool,
}

impl Drop for OwnDatabase {
    fn drop(&mut self) {
        if self.dropped {
            return;
        }
        // A panicking test unwinds through here inside its runtime, where nothing can be
        // awaited: a thread of its own with a runtime of its own drops the database.
        let (name, space) = (self.name.clone(), self.tablespace.clone());
        let cleanup = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async {
                let Ok((admin, conn)) = tokio_postgres::connect(&test_url(), NoTls).await else {
                    return;
                };
                tokio::spawn(conn);
                let _ = admin
                    .batch_execute(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
                    .await;
                if let Some(space) = space {
                    let _ = admin
                        .batch_execute(&format!("DROP TABLESPACE IF EXISTS \"{space}\""))
                        .await;
                }
            });
        });
        let _ = cleanup.join();
    }
}

impl OwnDatabase {
    async fn create(test: &str) -> OwnDatabase {
        let (admin, conn) = tokio_postgres::connect(&test_url(), NoTls)
            .await
            .expect("PostgreSQL at OPENWOP_TEST_DATABASE_URL (OPENWOP_SKIP_POSTGRES=1 skips)");
        tokio::spawn(conn);
        let mut bytes = [0u8; 6];
        getrandom::fill(&mut bytes).expect("random");
        let name = format!("openwop_faults_{test}_{}", hex::encode(bytes));
        admin
            .batch_execute(&format!("CREATE DATABASE \"{name}\""))
            .await
            .expect("create database");
        OwnDatabase {
            name,
            admin,
            tablespace: None,
            dropped: false,
        }
    }

    /// As [`OwnDatabase::create`], with every table in a tablespace at `dir` (a directory
    /// the server's user owns); `None` when the server cannot use `dir` (it runs on
    /// another machine, or as another user).
    async fn create_on_disk(test: &str, dir: &std::path::Path) -> Option<OwnDatabase> {
        let (admin, conn) = tokio_postgres::connect(&test_url(), NoTls)
            .await
            .expect("PostgreSQL at OPENWOP_TEST_DATABASE_URL (OPENWOP_SKIP_POSTGRES=1 skips)");
        tokio::spawn(conn);
        let mut bytes = [0u8; 6];
        getrandom::fill(&mut bytes).expect("random");
        let name = format!("openwop_faults_{test}_{}", hex::encode(bytes));
        let space = format!("{name}_space");
        if let Err(e) = admin
            .batch_execute(&format!(
                "CREATE TABLESPACE \"{space}\" LOCATION '{}'",
                dir.display()
            ))
            .await
        {
            eprintln!("the server cannot use {}: {e}", dir.display());
            return None;
        }
        admin
            .batch_execute(&format!(
                "CREATE DATABASE \"{name}\" TABLESPACE \"{space}\""
            ))
            .await
            .expect("create database");
        Some(OwnDatabase {
            name,
            admin,
            tablespace: Some(space),
            dropped: false,
        })
    }

    /// The test server's URL, naming this database.
    fn url(&self) -> String {
        let base = test_url();
        let (server, _) = base.rsplit_once('/').expect("a database in the URL");
        format!("{server}/{}", self.name)
    }

    /// No new session, and every open one of this database terminated.
    async fn take_away(&self) {
        self.admin
            .batch_execute(&format!(
                "ALTER DATABASE \"{}\" ALLOW_CONNECTIONS false",
                self.name
            ))
            .await
            .expect("disallow");
        self.admin
            .execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
                 WHERE datname = $1 AND pid <> pg_backend_pid()",
                &[&self.name],
            )
            .await
            .expect("terminate");
    }

    async fn give_back(&self) {
        self.admin
            .batch_execute(&format!(
                "ALTER DATABASE \"{}\" ALLOW_CONNECTIONS true",
                self.name
            ))
            .await
            .expect("allow");
    }

    async fn drop_it(mut self) {
        self.dropped = true;
        let _ = self
            .admin
            .batch_execute(&format!(
                "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
                self.name
            ))
            .await;
        if let Some(space) = &self.tablespace {
            let _ = self
                .admin
                .batch_execute(&format!("DROP TABLESPACE IF EXISTS \"{space}\""))
                .await;
        }
    }
}

fn project(run_id: &str) -> String {
    run_id.replace('/', "~2F")
}

async fn status_of(r: reqwest::Response) -> (u16, Option<String>, Value) {
    let status = r.status().as_u16();
    let retry = r
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = r.json().await.unwrap_or(Value::Null);
    (status, retry, body)
}

/// Before: `500 internal_error` on every edge while the database was away, and `/readyz`
/// could not tell a fault from a bug. Now: `503` with `Retry-After` in each edge's shape,
/// `/readyz` not ready, and all of it back once the database is.
#[tokio::test(flavor = "multi_thread")]
async fn a_lost_database_answers_503_with_retry_after_and_recovers() {
    if skip_postgres("a_lost_database_answers_503_with_retry_after_and_recovers") {
        return;
    }
    let db = OwnDatabase::create("lost").await;
    let h = start_with(|c| c.database = Some(db.url())).await;
    let run_id = h.create(KEY_A, "approval", json!({})).await;
    db.take_away().await;

    let (status, retry, body) = status_of(
        h.post("/runs", KEY_A, json!({"workflowId": "echo", "inputs": {}}))
            .send()
            .await
            .expect("create"),
    )
    .await;
    assert_eq!((status, retry.as_deref()), (503, Some("1")), "{body}");
    assert_eq!(body["error"], "service_unavailable", "{body}");
    let (status, retry, body) = status_of(
        h.get(&format!("/runs/{}", project(&run_id)), KEY_A)
            .send()
            .await
            .expect("get"),
    )
    .await;
    assert_eq!((status, retry.as_deref()), (503, Some("1")), "{body}");
    let a2a = h
        .http
        .post(format!("{}/a2a/jsonrpc", h.base))
        .bearer_auth(KEY_A)
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {"id": run_id}}))
        .send()
        .await
        .expect("a2a");
    let (status, retry, body) = status_of(a2a).await;
    assert_eq!((status, retry.as_deref()), (503, Some("1")), "{body}");
    assert_eq!(body["id"], 7, "{body}");
    assert_eq!(body["error"]["code"], -32603, "{body}");
    let mcp = h
        .http
        .post(format!("{}/mcp", h.base))
        .bearer_auth(KEY_A)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/list")
        .json(
            &json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": {"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}}}}),
        )
        .send()
        .await
        .expect("mcp");
    let (status, retry, body) = status_of(mcp).await;
    assert_eq!((status, retry.as_deref()), (503, Some("1")), "{body}");
    assert_eq!(body["id"], 8, "{body}");
    assert_eq!(body["error"]["data"]["retryAfterSeconds"], 1, "{body}");
    let ready = h
        .http
        .get(format!("{}/readyz", h.base))
        .send()
        .await
        .expect("readyz");
    assert_eq!(ready.status(), 503);

    db.give_back().await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = h
            .post("/runs", KEY_A, json!({"workflowId": "echo", "inputs": {}}))
            .send()
            .await
            .expect("create");
        let status = r.status().as_u16();
        assert_ne!(status, 500, "a transient fault answered 500");
        if status == 201 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the host did not recover: {status}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let ready = h
        .http
        .get(format!("{}/readyz", h.base))
        .send()
        .await
        .expect("readyz");
    assert_eq!(ready.status(), 200);
    drop(h);
    db.drop_it().await;
}

/// Before: on the MCP mount, reading or closing a 2025-11-25 session (and recording a
/// spent requestState, reading a run's open interrupt) mapped every store error to the
/// internal error (`500`, -32603 with no `data`). Now a transient fault is the mount's
/// `503` with `Retry-After` and `data.retryAfterSeconds`, as everywhere else.
#[tokio::test(flavor = "multi_thread")]
async fn mcp_session_paths_answer_503_while_the_database_is_away() {
    if skip_postgres("mcp_session_paths_answer_503_while_the_database_is_away") {
        return;
    }
    let db = OwnDatabase::create("mcpsession").await;
    let h = start_with(|c| c.database = Some(db.url())).await;
    let mcp = |session: Option<&str>| {
        let mut req = h
            .http
            .post(format!("{}/mcp", h.base))
            .bearer_auth(KEY_A)
            .header("Accept", "application/json, text/event-stream");
        if let Some(s) = session {
            req = req
                .header("Mcp-Session-Id", s)
                .header("MCP-Protocol-Version", "2025-11-25");
        }
        req
    };
    let init = mcp(None)
        .json(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}}),
        )
        .send()
        .await
        .expect("initialize");
    assert_eq!(init.status(), 200);
    let session = init.headers()["mcp-session-id"]
        .to_str()
        .expect("session")
        .to_owned();
    db.take_away().await;

    let (status, retry, body) = status_of(
        mcp(Some(&session))
            .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}))
            .send()
            .await
            .expect("tools/list"),
    )
    .await;
    assert_eq!((status, retry.as_deref()), (503, Some("1")), "{body}");
    assert_eq!(body["id"], 2, "{body}");
    assert_eq!(body["error"]["data"]["retryAfterSeconds"], 1, "{body}");
    let closed = h
        .http
        .delete(format!("{}/mcp", h.base))
        .bearer_auth(KEY_A)
        .header("Mcp-Session-Id", &session)
        .send()
        .await
        .expect("delete");
    let (status, retry, body) = status_of(closed).await;
    assert_eq!((status, retry.as_deref()), (503, Some("1")), "{body}");

    db.give_back().await;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = mcp(Some(&session))
            .json(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": {}}))
            .send()
            .await
            .expect("tools/list");
        let status = r.status().as_u16();
        assert_ne!(status, 500, "a transient fault answered 500");
        if status == 200 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the mount did not recover: {status}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    drop(h);
    db.drop_it().await;
}

/// Splits an SSE body into `(event, data)` frames.
fn frames(text: &str) -> Vec<(String, String)> {
    text.split("\n\n")
        .filter_map(|block| {
            let mut event = String::from("message");
            let mut data = None;
            for line in block.lines() {
                if let Some(v) = line.strip_prefix("event:") {
                    event = v.trim().to_owned();
                } else if let Some(v) = line.strip_prefix("data:") {
                    data = Some(v.trim().to_owned());
                }
            }
            data.map(|d| (event, d))
        })
        .collect()
}

/// The streams a client can hold open on a run, one per edge and binding.
struct Streams<'a> {
    h: &'a support::TestHost,
    run_id: String,
}

const TASKS_CAPS: &str = r#"{"extensions": {"io.modelcontextprotocol/tasks": {}}}"#;

impl Streams<'_> {
    /// REST SSE, resumed after `last_event_id` when given.
    async fn rest(&self, last_event_id: Option<&str>) -> reqwest::Response {
        let mut req = self
            .h
            .get(&format!("/runs/{}/events", project(&self.run_id)), KEY_A)
            .header("Accept", "text/event-stream");
        if let Some(id) = last_event_id {
            req = req.header("Last-Event-ID", id);
        }
        let r = req.send().await.expect("sse");
        assert_eq!(r.status(), 200);
        r
    }

    /// A2A `SubscribeToTask` on the JSON-RPC binding (request id 1).
    async fn a2a_jsonrpc(&self) -> reqwest::Response {
        let r = self
            .h
            .http
            .post(format!("{}/a2a/jsonrpc", self.h.base))
            .bearer_auth(KEY_A)
            .header("A2A-Version", "1.0")
            .header("Accept", "text/event-stream")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": self.run_id}}))
            .send()
            .await
            .expect("subscribe");
        assert_eq!(r.status(), 200);
        r
    }

    /// A2A `SubscribeToTask` on the HTTP+JSON binding.
    async fn a2a_rest(&self) -> reqwest::Response {
        let r = self
            .h
            .http
            .post(format!(
                "{}/a2a/rest/tasks/{}:subscribe",
                self.h.base,
                project(&self.run_id)
            ))
            .bearer_auth(KEY_A)
            .header("A2A-Version", "1.0")
            .header("Accept", "text/event-stream")
            .send()
            .await
            .expect("subscribe");
        assert_eq!(r.status(), 200);
        r
    }

    /// MCP `subscriptions/listen` naming the run's task (request id "sub-1").
    async fn mcp_listen(&self) -> reqwest::Response {
        let caps: Value = serde_json::from_str(TASKS_CAPS).expect("caps");
        let r = self
            .h
            .http
            .post(format!("{}/mcp", self.h.base))
            .bearer_auth(KEY_A)
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", "2026-07-28")
            .header("Mcp-Method", "subscriptions/listen")
            .json(&json!({"jsonrpc": "2.0", "id": "sub-1", "method": "subscriptions/listen", "params": {
                "notifications": {"taskIds": [self.run_id]},
                "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                          "io.modelcontextprotocol/clientCapabilities": caps}}}))
            .send()
            .await
            .expect("listen");
        assert_eq!(r.status(), 200);
        r
    }
}

/// The body of a stream that ends by itself within a minute.
fn body_of(r: reqwest::Response) -> tokio::task::JoinHandle<String> {
    tokio::spawn(async move {
        tokio::time::timeout(Duration::from_secs(60), r.text())
            .await
            .expect("the stream ends")
            .expect("body")
    })
}

/// An MCP listen stream read until a `notifications/tasks` says the task completed
/// (a listen stays open after its tasks end); the frames read.
fn listen_until_completed(mut r: reqwest::Response) -> tokio::task::JoinHandle<Vec<Value>> {
    tokio::spawn(async move {
        let mut text = String::new();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let seen: Vec<Value> = frames(&text)
                .into_iter()
                .filter_map(|f| serde_json::from_str(&f.1).ok())
                .collect();
            if seen.iter().any(|f| {
                f["method"] == "notifications/tasks" && f["params"]["status"] == "completed"
            }) {
                return seen;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match tokio::time::timeout(left, r.chunk()).await {
                Ok(Ok(Some(bytes))) => text.push_str(&String::from_utf8_lossy(&bytes)),
                _ => panic!("the listen ended or stalled before the task completed: {text}"),
            }
        }
    })
}

/// Resolves the run's approval, retrying while the store is still coming back.
async fn approve(h: &support::TestHost, run_id: &str) {
    let path = format!("/runs/{}/interrupts/approve", project(run_id));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = h
            .post(&path, KEY_A, json!({"resumeValue": {"action": "accept"}}))
            .send()
            .await
            .expect("resolve");
        if r.status() == 200 {
            return;
        }
        assert_ne!(r.status(), 500);
        assert!(
            Instant::now() < deadline,
            "resolve kept failing: {}",
            r.status()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The last SSE frame's data, as JSON.
fn last_json(body: &str) -> Value {
    frames(body)
        .last()
        .map(|f| serde_json::from_str(&f.1).expect("json"))
        .unwrap_or_else(|| panic!("no frame in {body:?}"))
}

/// Before: a store read failing under a stream ended it with no terminal event and no
/// error frame while the run went on (2 of 2 streams on a PostgreSQL restart); then only
/// REST SSE and A2A `SubscribeToTask` were shown to ride it out. Now every stream a
/// client can hold (REST SSE, A2A `SendStreamingMessage` and `SubscribeToTask` on both
/// bindings, MCP `subscriptions/listen`) stays open across 3 s without the database and
/// reaches its run's end.
#[tokio::test(flavor = "multi_thread")]
async fn open_streams_reach_the_runs_end_across_a_lost_database() {
    if skip_postgres("open_streams_reach_the_runs_end_across_a_lost_database") {
        return;
    }
    let db = OwnDatabase::create("streams").await;
    let h = start_with(|c| c.database = Some(db.url())).await;
    let run_id = h.create(KEY_A, "approval", json!({})).await;
    h.wait_status(KEY_A, &run_id, "waiting-approval").await;
    let s = Streams {
        h: &h,
        run_id: run_id.clone(),
    };
    let rest = body_of(s.rest(None).await);
    let a2a = body_of(s.a2a_jsonrpc().await);
    let a2a_rest = body_of(s.a2a_rest().await);
    let listen = listen_until_completed(s.mcp_listen().await);
    // A stream that starts the run: a wait that ends after the database is back.
    let streaming = h
        .http
        .post(format!("{}/a2a/jsonrpc", h.base))
        .bearer_auth(KEY_A)
        .header("A2A-Version", "1.0")
        .header("Accept", "text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "SendStreamingMessage", "params": {"message": {
            "messageId": "m-slow", "role": "ROLE_USER", "parts": [{"data": {"ms": 5000}}],
            "metadata": {"openwop": {"skill": "slow"}}}}}))
        .send()
        .await
        .expect("stream");
    assert_eq!(streaming.status(), 200);
    let streaming = body_of(streaming);

    // Long enough that each stream's watch reads (every 0.5 s while LISTEN is down) fail
    // several times over.
    db.take_away().await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    db.give_back().await;
    approve(&h, &run_id).await;

    let body = rest.await.expect("join");
    let kinds: Vec<String> = frames(&body).into_iter().map(|f| f.0).collect();
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("run.completed"),
        "the REST stream: {kinds:?}"
    );
    let body = a2a.await.expect("join");
    assert_eq!(
        last_json(&body)["result"]["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED",
        "A2A SubscribeToTask (JSON-RPC): {body}"
    );
    let body = a2a_rest.await.expect("join");
    assert_eq!(
        last_json(&body)["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED",
        "A2A SubscribeToTask (HTTP+JSON): {body}"
    );
    let body = streaming.await.expect("join");
    assert_eq!(
        last_json(&body)["result"]["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED",
        "A2A SendStreamingMessage: {body}"
    );
    let seen = listen.await.expect("join");
    assert!(
        seen.iter().all(|f| f.get("error").is_none()),
        "MCP listen: {seen:?}"
    );
    drop(h);
    db.drop_it().await;
}

/// Before: once a watch's retries gave up, A2A streams closed with no error (a client
/// took the close for the task's end) and an MCP listen went quiet for good while its
/// watch re-read the failing store in a loop. Now each stream ends with the error in its
/// edge's shape (REST: an `error` event with the envelope; A2A JSON-RPC: an error
/// response to the request's id; A2A HTTP+JSON: the `google.rpc.Status` body; MCP: an
/// error response to the listen id, or to a streamed `tools/call`, carrying
/// `retryAfterSeconds`), and a client that opens its stream again once the database is
/// back reaches the run's end.
#[tokio::test(flavor = "multi_thread")]
async fn streams_that_outlast_the_retry_window_end_with_an_error_and_resume() {
    if skip_postgres("streams_that_outlast_the_retry_window_end_with_an_error_and_resume") {
        return;
    }
    let db = OwnDatabase::create("giveup").await;
    let h = start_with(|c| {
        c.database = Some(db.url());
        c.stream_retry = Duration::from_secs(1);
        c.mcp.progress_every = Duration::from_millis(200);
    })
    .await;
    let run_id = h.create(KEY_A, "approval", json!({})).await;
    h.wait_status(KEY_A, &run_id, "waiting-approval").await;
    let s = Streams {
        h: &h,
        run_id: run_id.clone(),
    };
    let rest = body_of(s.rest(None).await);
    let a2a = body_of(s.a2a_jsonrpc().await);
    let a2a_rest = body_of(s.a2a_rest().await);
    let listen = body_of(s.mcp_listen().await);
    // An MCP request stream: a call that waits for its run, reporting progress.
    let call = h
        .http
        .post(format!("{}/mcp", h.base))
        .bearer_auth(KEY_A)
        .header("Accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tools/call")
        .header("Mcp-Name", "slow")
        .json(
            &json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {
            "name": "slow", "arguments": {"ms": 60000},
            "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {},
                      "progressToken": "tok-1"}}}),
        )
        .send()
        .await
        .expect("tools/call");
    assert_eq!(call.status(), 200);
    let call = body_of(call);
    // The call's stream is open (its first progress sent) before the database goes.
    tokio::time::sleep(Duration::from_millis(500)).await;

    db.take_away().await;
    let rest = rest.await.expect("join");
    let a2a = a2a.await.expect("join");
    let a2a_rest = a2a_rest.await.expect("join");
    let listen = listen.await.expect("join");
    let call = call.await.expect("join");
    db.give_back().await;

    let (event, data) = frames(&rest).last().cloned().expect("a frame");
    let data: Value = serde_json::from_str(&data).expect("json");
    assert_eq!(
        (event.as_str(), &data["error"]),
        ("error", &json!("service_unavailable")),
        "REST: {rest}"
    );
    let last_id = rest
        .lines()
        .rev()
        .find_map(|l| l.strip_prefix("id:"))
        .map(|v| v.trim().to_owned());
    let error = last_json(&a2a);
    assert_eq!(error["id"], 1, "A2A JSON-RPC: {a2a}");
    assert_eq!(error["error"]["code"], -32603, "A2A JSON-RPC: {a2a}");
    assert!(error.get("result").is_none(), "A2A JSON-RPC: {a2a}");
    let error = last_json(&a2a_rest);
    assert_eq!(
        (&error["error"]["code"], &error["error"]["status"]),
        (&json!(503), &json!("UNAVAILABLE")),
        "A2A HTTP+JSON: {a2a_rest}"
    );
    let error = last_json(&listen);
    assert_eq!(error["id"], "sub-1", "MCP: {listen}");
    assert_eq!(
        error["error"]["data"]["retryAfterSeconds"], 1,
        "MCP: {listen}"
    );
    let error = last_json(&call);
    assert_eq!(error["id"], 9, "MCP tools/call: {call}");
    assert_eq!(
        error["error"]["data"]["retryAfterSeconds"], 1,
        "MCP tools/call: {call}"
    );

    // Back: each client opens its stream again (REST from its last event) and follows
    // the run to its end.
    let deadline = Instant::now() + Duration::from_secs(20);
    while h
        .get(&format!("/runs/{}", project(&run_id)), KEY_A)
        .send()
        .await
        .map_or(true, |r| r.status() != 200)
    {
        assert!(Instant::now() < deadline, "the host did not recover");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let rest = body_of(s.rest(last_id.as_deref()).await);
    let a2a = body_of(s.a2a_jsonrpc().await);
    let a2a_rest = body_of(s.a2a_rest().await);
    let listen = listen_until_completed(s.mcp_listen().await);
    approve(&h, &run_id).await;
    let body = rest.await.expect("join");
    let first_id = body
        .lines()
        .filter_map(|l| l.strip_prefix("id:"))
        .map(|v| v.trim().parse::<i64>().expect("a sequence"))
        .next();
    let last_id: i64 = last_id
        .expect("an event before the error")
        .parse()
        .expect("seq");
    assert_eq!(
        first_id,
        Some(last_id + 1),
        "REST resumes right after its last event: {body}"
    );
    let kinds: Vec<String> = frames(&body).into_iter().map(|f| f.0).collect();
    assert_eq!(kinds.last().map(String::as_str), Some("run.completed"));
    let body = a2a.await.expect("join");
    assert_eq!(
        last_json(&body)["result"]["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED",
        "{body}"
    );
    let body = a2a_rest.await.expect("join");
    assert_eq!(
        last_json(&body)["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED",
        "{body}"
    );
    listen.await.expect("join");
    drop(h);
    db.drop_it().await;
}

/// A tmpfs mounted for the test, unmounted when dropped.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(size: &str) -> Option<SmallDisk> {
        let dir = tempfile::tempdir().ok()?;
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .is_ok_and(|o| o.status.success());
        ok.then_some(SmallDisk { dir })
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// Before: a full disk made every write `500` while `/readyz` said ready. Now: `503`
/// with `Retry-After`, `/readyz` not ready while writes fail, both back once there is
/// room again (the readiness probe writes one row to see it).
#[tokio::test(flavor = "multi_thread")]
async fn a_full_disk_answers_503_and_readyz_follows() {
    let Some(disk) = SmallDisk::mount("16m") else {
        eprintln!(
            "SKIPPED a_full_disk_answers_503_and_readyz_follows: cannot mount a tmpfs (not root)"
        );
        return;
    };
    let data = disk.dir.path().join("data");
    let h = start_with(|c| c.data_dir = data.clone()).await;
    h.create(KEY_A, "echo", json!({})).await;
    // Fill what is left.
    let filler = disk.dir.path().join("filler");
    {
        use std::io::Write as _;
        let mut f = std::fs::File::create(&filler).expect("filler");
        let block = vec![0u8; 64 * 1024];
        while f.write_all(&block).is_ok() {}
        let _ = f.sync_all();
    }
    let mut refused = None;
    for i in 0..50 {
        let r = h
            .post(
                "/runs",
                KEY_A,
                json!({"workflowId": "echo", "inputs": {"pad": "x".repeat(2000), "i": i}}),
            )
            .send()
            .await
            .expect("create");
        let (status, retry, body) = status_of(r).await;
        assert_ne!(status, 500, "a full disk answered 500: {body}");
        if status == 503 {
            assert_eq!(retry.as_deref(), Some("1"), "{body}");
            assert_eq!(body["error"], "service_unavailable", "{body}");
            refused = Some(body);
            break;
        }
    }
    assert!(refused.is_some(), "no write was refused on a full disk");
    let ready = h
        .http
        .get(format!("{}/readyz", h.base))
        .send()
        .await
        .expect("readyz");
    assert_eq!(ready.status(), 503, "/readyz says ready while writes fail");

    std::fs::remove_file(&filler).expect("free the disk");
    let ready = h
        .http
        .get(format!("{}/readyz", h.base))
        .send()
        .await
        .expect("readyz");
    assert_eq!(
        ready.status(),
        200,
        "/readyz stays not ready after the disk has room"
    );
    h.create(KEY_A, "echo", json!({})).await;
    drop(h);
    tokio::time::sleep(Duration::from_millis(200)).await;
    drop(disk);
}

/// Before: on PostgreSQL a full disk under the data (its tablespace) refused every write
/// with `53100` while `/readyz` said ready: reads went on, and readiness only read. Now
/// a write that fails for a transient fault sends `/readyz` to a write of its own that
/// needs a new page, and it says not ready until that succeeds again. The disk is a
/// small tmpfs holding the test database's tablespace (needs root to mount; skipped,
/// and said so, without it), filled up for real: nothing is injected.
#[tokio::test(flavor = "multi_thread")]
async fn a_full_postgresql_tablespace_answers_503_and_readyz_follows() {
    if skip_postgres("a_full_postgresql_tablespace_answers_503_and_readyz_follows") {
        return;
    }
    let Some(disk) = SmallDisk::mount("32m") else {
        eprintln!(
            "SKIPPED a_full_postgresql_tablespace_answers_503_and_readyz_follows: cannot mount a tmpfs (not root)"
        );
        return;
    };
    // The server's own user must own the tablespace's directory.
    let owned = std::process::Command::new("chown")
        .args(["postgres:postgres"])
        .arg(disk.dir.path())
        .status()
        .is_ok_and(|s| s.success());
    if !owned {
        eprintln!(
            "SKIPPED a_full_postgresql_tablespace_answers_503_and_readyz_follows: no `postgres` user to own the tablespace"
        );
        return;
    }
    let Some(db) = OwnDatabase::create_on_disk("fulldisk", disk.dir.path()).await else {
        eprintln!(
            "SKIPPED a_full_postgresql_tablespace_answers_503_and_readyz_follows: the test server cannot hold a tablespace on this machine's tmpfs"
        );
        return;
    };
    let h = start_with(|c| c.database = Some(db.url())).await;
    h.create(KEY_A, "echo", json!({})).await;
    let filler = disk.dir.path().join("filler");
    {
        use std::io::Write as _;
        let mut f = std::fs::File::create(&filler).expect("filler");
        let block = vec![0u8; 64 * 1024];
        while f.write_all(&block).is_ok() {}
        let _ = f.sync_all();
    }
    let mut refused = None;
    for i in 0..400 {
        let mut pad = [0u8; 1024];
        getrandom::fill(&mut pad).expect("random");
        let r = h
            .post(
                "/runs",
                KEY_A,
                json!({"workflowId": "echo", "inputs": {"pad": hex::encode(pad), "i": i}}),
            )
            .send()
            .await
            .expect("create");
        let (status, retry, body) = status_of(r).await;
        assert_ne!(status, 500, "a full disk answered 500: {body}");
        if status == 503 {
            assert_eq!(retry.as_deref(), Some("1"), "{body}");
            assert_eq!(body["error"], "service_unavailable", "{body}");
            refused = Some(body);
            break;
        }
    }
    assert!(refused.is_some(), "no write was refused on a full disk");
    // Reads still work: only a write tells.
    let ready = h
        .http
        .get(format!("{}/readyz", h.base))
        .send()
        .await
        .expect("readyz");
    assert_eq!(ready.status(), 503, "/readyz says ready while writes fail");

    std::fs::remove_file(&filler).expect("free the disk");
    let ready = h
        .http
        .get(format!("{}/readyz", h.base))
        .send()
        .await
        .expect("readyz");
    assert_eq!(
        ready.status(),
        200,
        "/readyz stays not ready after the disk has room"
    );
    h.create(KEY_A, "echo", json!({})).await;
    drop(h);
    db.drop_it().await;
    drop(disk);
}
