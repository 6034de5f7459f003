//! A data dir made by the release before the storage split (commit fa2252d, see
//! `fixtures/datadir-fa2252d/`: `openwop.sqlite3` without a migration history, A2A push
//! state in `a2a.sqlite`) is taken over by this host's `openwop serve` without losing
//! anything: runs, their events, the open interrupt, the A2A context and history, the
//! push configurations (each delivery using its stored secret), the pending push and the
//! dead letter, and the MCP session.

mod support;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::HeaderMap;
use reqwest::Client;
use serde_json::{Value, json};
use support::process;
use tokio::net::TcpListener;
use tokio::process::Child;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/datadir-fa2252d")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read fixture") {
        let entry = entry.expect("entry");
        std::fs::copy(entry.path(), to.join(entry.file_name())).expect("copy");
    }
}

/// Each push received: its path, Authorization header and body.
type Pushes = Arc<Mutex<Vec<(String, Option<String>, Value)>>>;

/// A push receiver answering 200, recording each push's path and Authorization header.
#[derive(Clone, Default)]
struct Receiver {
    got: Pushes,
}

impl Receiver {
    async fn start() -> (Receiver, u16) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let r = Receiver::default();
        let state = r.clone();
        let app = axum::Router::new().fallback(
            move |uri: axum::http::Uri, headers: HeaderMap, body: axum::body::Bytes| {
                let state = state.clone();
                async move {
                    let auth = headers
                        .get("authorization")
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned);
                    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
                    state
                        .got
                        .lock()
                        .expect("lock")
                        .push((uri.path().to_owned(), auth, body));
                    ""
                }
            },
        );
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        (r, port)
    }

    /// The first push to `path` whose body satisfies `pick`.
    async fn wait(&self, path: &str, pick: impl Fn(&Value) -> bool) -> (Option<String>, Value) {
        for _ in 0..300 {
            let found = self
                .got
                .lock()
                .expect("lock")
                .iter()
                .find(|(p, _, b)| p == path && pick(b))
                .map(|(_, a, b)| (a.clone(), b.clone()));
            if let Some(found) = found {
                return found;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!(
            "no push to {path}; got {:?}",
            self.got.lock().expect("lock")
        );
    }
}

struct Host {
    child: Child,
    base: String,
    key: String,
    http: Client,
}

impl Host {
    async fn start(dir: &Path, key: &str) -> Host {
        let (child, base) = process::spawn(
            process::serve(dir)
                .arg("--egress-allow-loopback")
                .arg("--api-key")
                .arg(format!("acme:{key}")),
        )
        .await;
        let http = Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            .expect("client");
        Host {
            child,
            base,
            key: key.to_owned(),
            http,
        }
    }

    async fn get(&self, path: &str) -> Value {
        self.http
            .get(format!("{}{path}", self.base))
            .bearer_auth(&self.key)
            .send()
            .await
            .expect("get")
            .json()
            .await
            .expect("json")
    }

    async fn rpc(&self, method: &str, params: Value) -> Value {
        let body: Value = self
            .http
            .post(format!("{}/a2a/jsonrpc", self.base))
            .bearer_auth(&self.key)
            .header("A2A-Version", "1.0")
            .json(&json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
            .send()
            .await
            .expect("post")
            .json()
            .await
            .expect("json");
        assert!(body.get("result").is_some(), "{method}: {body}");
        body["result"].clone()
    }
}

fn path_id(run_id: &str) -> String {
    run_id.replace('/', "~2F")
}

#[tokio::test(flavor = "multi_thread")]
async fn a_data_dir_of_the_previous_release_is_taken_over_whole() {
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(fixture().join("manifest.json")).expect("manifest"))
            .expect("manifest json");
    let text = |k: &str| manifest[k].as_str().expect(k).to_owned();
    let key = text("key");
    let dir = tempfile::tempdir().expect("dir");
    let data = dir.path().join("data");
    copy_dir(&fixture().join("data"), &data);

    // The pushes were registered to a receiver of the run that made the fixture; point
    // them (only the port) at this test's receiver.
    let (receiver, port) = Receiver::start().await;
    let old_port = manifest["receiverPort"].as_u64().expect("port");
    rusqlite::Connection::open(data.join("a2a.sqlite"))
        .expect("old side file")
        .execute(
            "UPDATE push_configs SET url = replace(url, ?1, ?2)",
            [
                format!("127.0.0.1:{old_port}/"),
                format!("127.0.0.1:{port}/"),
            ],
        )
        .expect("repoint");
    // The session was live when the fixture was made; an MCP session lives an hour after
    // its last use, so keep it live as of now (only its expiry, never its identity).
    rusqlite::Connection::open(data.join("openwop.sqlite3"))
        .expect("main file")
        .execute(
            "UPDATE mcp_sessions SET expires_ms = ?1",
            [openwop::clock::now_ms() + 3_600_000],
        )
        .expect("keep the session live");

    let mut host = Host::start(&data, &key).await;

    // Runs, their events and the open interrupt.
    let runs = host.get("/runs?limit=10").await;
    let ids: Vec<&str> = runs["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .filter_map(|r| r["runId"].as_str())
        .collect();
    for k in ["echoRun", "approvalRun", "taskA", "taskB"] {
        assert!(ids.contains(&text(k).as_str()), "{k} missing from {runs}");
    }
    let echo = text("echoRun");
    let log = host
        .get(&format!(
            "/runs/{}/events/poll?afterSequence=-1&timeout=0",
            path_id(&echo)
        ))
        .await;
    let types: Vec<&str> = log["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["type"].as_str())
        .collect();
    assert_eq!(types.first(), Some(&"run.started"), "{log}");
    assert_eq!(types.last(), Some(&"run.completed"), "{log}");
    assert_eq!(log["status"], "completed");
    let echo_run = host.get(&format!("/runs/{}", path_id(&echo))).await;
    assert_eq!(echo_run["outputs"], json!({"hello": "world"}), "{echo_run}");
    let approval = text("approvalRun");
    let waiting = host.get(&format!("/runs/{}", path_id(&approval))).await;
    assert_eq!(waiting["status"], "waiting-approval", "{waiting}");
    assert_eq!(waiting["interrupts"][0]["nodeId"], "approve", "{waiting}");

    // The A2A side: context and history.
    let task_a = text("taskA");
    let got = host
        .rpc("GetTask", json!({"id": task_a, "historyLength": 10}))
        .await;
    assert_eq!(got["contextId"], text("contextA"), "{got}");
    assert_eq!(got["status"]["state"], "TASK_STATE_INPUT_REQUIRED", "{got}");
    assert_eq!(got["history"][0]["messageId"], "fixture-msg-a", "{got}");

    // Push configurations, with their secrets kept out of every answer.
    let listed = host
        .rpc("ListTaskPushNotificationConfigs", json!({"taskId": task_a}))
        .await;
    assert_eq!(listed["configs"][0]["id"], "cfg-a", "{listed}");
    let task_b = text("taskB");
    let listed_b = host
        .rpc("ListTaskPushNotificationConfigs", json!({"taskId": task_b}))
        .await;
    assert_eq!(
        listed_b["configs"][0]["authentication"]["scheme"], "Basic",
        "{listed_b}"
    );
    assert!(!listed_b.to_string().contains("fixture-credentials-b"));

    // The push that was pending (one failed attempt) goes out, with B's stored credentials.
    let (auth, body) = receiver.wait("/b", |_| true).await;
    assert_eq!(auth.as_deref(), Some("Basic fixture-credentials-b"));
    assert_eq!(body["statusUpdate"]["taskId"], json!(task_b), "{body}");

    // Task A goes on; its final push carries A's stored token.
    host.rpc(
        "SendMessage",
        json!({"message": {"messageId": "upgrade-msg-a2", "role": "ROLE_USER", "taskId": task_a,
               "parts": [{"data": {"action": "accept"}}]}}),
    )
    .await;
    let (auth, body) = receiver
        .wait("/a", |b| {
            b["task"]["status"]["state"] == "TASK_STATE_COMPLETED"
        })
        .await;
    assert_eq!(auth.as_deref(), Some("Bearer fixture-token-a"));
    assert_eq!(body["task"]["contextId"], text("contextA"), "{body}");

    // The MCP session opened by the old release still serves.
    let list = host
        .http
        .post(format!("{}/mcp", host.base))
        .bearer_auth(&key)
        .header("accept", "application/json")
        .header("mcp-session-id", text("session"))
        .header("mcp-protocol-version", "2025-11-25")
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}))
        .send()
        .await
        .expect("tools/list");
    assert_eq!(list.status().as_u16(), 200);
    let list: Value = list.json().await.expect("json");
    assert!(list["result"]["tools"].is_array(), "{list}");

    // The old side file is retired; the main file has the history and the dead letter.
    assert!(!data.join("a2a.sqlite").exists());
    assert!(data.join("a2a.sqlite.imported").exists());
    let db = rusqlite::Connection::open(data.join("openwop.sqlite3")).expect("main file");
    let versions: Vec<i64> = db
        .prepare("SELECT version FROM schema_migrations ORDER BY version")
        .expect("prepare")
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(versions.first(), Some(&1));
    assert_eq!(
        versions,
        (1..=versions.len() as i64).collect::<Vec<_>>(),
        "every migration recorded"
    );
    let dead: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM push_dead_letters WHERE run_id = ?1",
            [&task_a],
            |r| r.get(0),
        )
        .expect("dead letters");
    assert_eq!(dead, 1);
    // negotiation.decided events recorded under the old field names (`version`,
    // `peerDigest`) read as today's payload: the generated model decodes them and the
    // generated validator accepts them, so an SDK user can read the whole host log.
    let payloads: Vec<String> = db
        .prepare("SELECT payload FROM host_events WHERE type = 'negotiation.decided'")
        .expect("prepare")
        .query_map([], |r| r.get(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert!(!payloads.is_empty(), "the fixture has negotiations");
    for text in &payloads {
        let value: Value = serde_json::from_str(text).expect("json");
        let decided: openwop_generated::models::NegotiationDecided =
            serde_json::from_value(value.clone())
                .unwrap_or_else(|e| panic!("{text} does not decode: {e}"));
        assert_eq!(decided.negotiated.is_some(), value["outcome"] != "refused");
        assert!(value.get("peerDigest").is_none() && value.get("version").is_none());
        let event = json!({"eventId": "01JZ0000000000000000000000", "type": "negotiation.decided",
            "timestamp": "2026-12-03T15:20:05.722Z", "delivery": "durable", "payload": value});
        let findings = openwop_generated::validators::validate_host_event(&event);
        assert!(findings.is_empty(), "{text}: {findings:?}");
    }
    drop(db);

    // A restart reads the same data and takes nothing in twice.
    host.child.kill().await.expect("kill");
    let _ = host.child.wait().await;
    let host = Host::start(&data, &key).await;
    let runs = host.get("/runs?limit=10").await;
    assert_eq!(runs["runs"].as_array().map(Vec::len), Some(4), "{runs}");
    let b_configs = host
        .rpc("ListTaskPushNotificationConfigs", json!({"taskId": task_b}))
        .await;
    assert_eq!(b_configs["configs"].as_array().map(Vec::len), Some(1));
}
