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

mod common;

use std::time::{Duration, Instant};

use common::{KEY_A, start_with};
use openwop::store::scratch::{skip_postgres, test_url};
use serde_json::{Value, json};
use tokio_postgres::NoTls;

/// A database of the test's own, dropped at the end.
struct OwnDatabase {
    name: String,
    admin: tokio_postgres::Client,
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
        OwnDatabase { name, admin }
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

    async fn drop_it(self) {
        let _ = self
            .admin
            .batch_execute(&format!(
                "DROP DATABASE IF EXISTS \"{}\" WITH (FORCE)",
                self.name
            ))
            .await;
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
        .client
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
        .client
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
        .client
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
        .client
        .get(format!("{}/readyz", h.base))
        .send()
        .await
        .expect("readyz");
    assert_eq!(ready.status(), 200);
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

/// Before: a store read failing under a stream ended it with no terminal event and no
/// error frame while the run went on (2 of 2 streams on a PostgreSQL restart). Now the
/// watch under every stream retries with backoff: streams opened on REST SSE and A2A
/// `SubscribeToTask` across 3 s without the database still reach the run's end.
#[tokio::test(flavor = "multi_thread")]
async fn open_streams_reach_the_runs_end_across_a_lost_database() {
    if skip_postgres("open_streams_reach_the_runs_end_across_a_lost_database") {
        return;
    }
    let db = OwnDatabase::create("streams").await;
    let h = start_with(|c| c.database = Some(db.url())).await;
    let run_id = h.create(KEY_A, "approval", json!({})).await;
    h.wait_status(KEY_A, &run_id, "waiting-approval").await;
    let sse = h
        .get(&format!("/runs/{}/events", project(&run_id)), KEY_A)
        .header("Accept", "text/event-stream")
        .send()
        .await
        .expect("sse");
    assert_eq!(sse.status(), 200);
    let a2a = h
        .client
        .post(format!("{}/a2a/jsonrpc", h.base))
        .bearer_auth(KEY_A)
        .header("A2A-Version", "1.0")
        .header("Accept", "text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": run_id}}))
        .send()
        .await
        .expect("subscribe");
    assert_eq!(a2a.status(), 200);
    let sse_text = tokio::spawn(tokio::time::timeout(Duration::from_secs(60), sse.text()));
    let a2a_text = tokio::spawn(tokio::time::timeout(Duration::from_secs(60), a2a.text()));

    // Long enough that each stream's watch reads (every 0.5 s while LISTEN is down) fail
    // several times over.
    db.take_away().await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    db.give_back().await;

    let path = format!("/runs/{}/interrupts/approve", project(&run_id));
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = h
            .post(&path, KEY_A, json!({"resumeValue": {"action": "accept"}}))
            .send()
            .await
            .expect("resolve");
        if r.status() == 200 {
            break;
        }
        assert_ne!(r.status(), 500);
        assert!(
            Instant::now() < deadline,
            "resolve kept failing: {}",
            r.status()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let sse_body = sse_text
        .await
        .expect("join")
        .expect("the REST stream ends")
        .expect("body");
    let kinds: Vec<String> = frames(&sse_body).into_iter().map(|f| f.0).collect();
    assert_eq!(
        kinds.last().map(String::as_str),
        Some("run.completed"),
        "the REST stream: {kinds:?}"
    );
    let a2a_body = a2a_text
        .await
        .expect("join")
        .expect("the A2A stream ends")
        .expect("body");
    let last: Value = frames(&a2a_body)
        .last()
        .map(|f| serde_json::from_str(&f.1).expect("json"))
        .expect("a frame");
    assert_eq!(
        last["result"]["statusUpdate"]["status"]["state"], "TASK_STATE_COMPLETED",
        "the A2A stream: {a2a_body}"
    );
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
        .client
        .get(format!("{}/readyz", h.base))
        .send()
        .await
        .expect("readyz");
    assert_eq!(ready.status(), 503, "/readyz says ready while writes fail");

    std::fs::remove_file(&filler).expect("free the disk");
    let ready = h
        .client
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
