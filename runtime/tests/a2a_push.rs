//! A2A push notifications and the egress guard, from the attacker's side: every address
//! class refused at registration and at delivery, DNS rebinding through an injected
//! resolver, redirects never followed, credentials bound to the registered URL's checked
//! address, byte-identical isolation answers, retries, dead letters, restart survival,
//! and secrets that never come back out.

mod support;

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::{HeaderMap, StatusCode};
use openwop::egress::{Resolve, Resolving};
use openwop::host::HostConfig;
use openwop::ops::push::{Backoff, RetryPolicy};
use reqwest::Method;
use serde_json::{Value, json};
use support::a2a::*;
use support::{KEY_A, KEY_B, TestHost};
use tokio::net::TcpListener;

const SECRET_TOKEN: &str = "tok-SECRET-7f3a9c";
const SECRET_CREDENTIALS: &str = "cred-SECRET-b81e44";

// ---------------------------------------------------------------------------------------
// An injectable resolver: each name answers its scripted lists in turn (the last repeats).

#[derive(Default, Clone)]
struct Scripted(Arc<Mutex<HashMap<String, Vec<Vec<IpAddr>>>>>);

impl Scripted {
    fn answer(self, name: &str, answers: &[&[&str]]) -> Self {
        let lists = answers
            .iter()
            .map(|a| a.iter().map(|ip| ip.parse().expect("ip")).collect())
            .collect();
        self.0.lock().expect("lock").insert(name.to_owned(), lists);
        self
    }
}

impl Resolve for Scripted {
    fn resolve<'a>(&'a self, host: &'a str, _port: u16) -> Resolving<'a> {
        let mut map = self.0.lock().expect("lock");
        let found = map.get_mut(host).map(|lists| {
            if lists.len() > 1 {
                lists.remove(0)
            } else {
                lists[0].clone()
            }
        });
        Box::pin(async move { found.ok_or_else(|| io::Error::other("no such name")) })
    }
}

// ---------------------------------------------------------------------------------------
// A loopback receiver that records what it gets and answers from a script.

#[derive(Debug, Clone)]
struct Received {
    path: String,
    headers: HeaderMap,
    body: Value,
}

#[derive(Clone)]
struct Receiver {
    base: String,
    port: u16,
    got: Arc<Mutex<Vec<Received>>>,
    /// Statuses to answer, in turn; 200 once they run out.
    script: Arc<Mutex<Vec<u16>>>,
    location: Arc<Mutex<Option<String>>>,
}

impl Receiver {
    async fn start() -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let r = Receiver {
            base: format!("http://127.0.0.1:{port}"),
            port,
            got: Arc::default(),
            script: Arc::default(),
            location: Arc::default(),
        };
        let state = r.clone();
        let app = axum::Router::new().fallback(
            move |uri: axum::http::Uri, headers: HeaderMap, body: axum::body::Bytes| {
                let state = state.clone();
                async move {
                    state.got.lock().expect("lock").push(Received {
                        path: uri.path().to_owned(),
                        headers,
                        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
                    });
                    let status = {
                        let mut s = state.script.lock().expect("lock");
                        if s.is_empty() { 200 } else { s.remove(0) }
                    };
                    let mut response = axum::response::Response::new(axum::body::Body::empty());
                    *response.status_mut() = StatusCode::from_u16(status).expect("status");
                    if let Some(loc) = state.location.lock().expect("lock").clone() {
                        response
                            .headers_mut()
                            .insert("location", loc.parse().expect("location"));
                    }
                    response
                }
            },
        );
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        r
    }

    fn answer(&self, statuses: &[u16]) {
        *self.script.lock().expect("lock") = statuses.to_vec();
    }

    fn received(&self) -> Vec<Received> {
        self.got.lock().expect("lock").clone()
    }

    async fn wait_for(&self, n: usize) -> Vec<Received> {
        for _ in 0..200 {
            if self.received().len() >= n {
                return self.received();
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!(
            "the receiver got {} pushes, expected {n}",
            self.received().len()
        );
    }

    /// Waits for the push that carries the whole task (a task's last push).
    async fn wait_for_final(&self) -> Received {
        for _ in 0..200 {
            if let Some(r) = self
                .received()
                .into_iter()
                .find(|r| r.body.get("task").is_some())
            {
                return r;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("no final push; got {:?}", self.received());
    }
}

/// A plain TCP port that counts connections: a delivery refused by the guard must never
/// reach it.
async fn counting_port() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    tokio::spawn(async move {
        while let Ok((_socket, _)) = listener.accept().await {
            c.fetch_add(1, Ordering::SeqCst);
        }
    });
    (port, count)
}

fn fast_retries(max_attempts: u32) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        backoff: Backoff::Fixed,
        initial_delay: Duration::from_millis(40),
        max_delay: Duration::from_millis(40),
    }
}

async fn host(allow_loopback: bool, resolver: Scripted, retry: RetryPolicy) -> TestHost {
    let dir = tempfile::tempdir().expect("dir").keep();
    host_on(dir, allow_loopback, resolver, retry).await
}

async fn host_on(
    dir: std::path::PathBuf,
    allow_loopback: bool,
    resolver: Scripted,
    retry: RetryPolicy,
) -> TestHost {
    start_configured(dir, 0, move |c: &mut HostConfig| {
        c.egress_allow_loopback = allow_loopback;
        c.resolver = Arc::new(resolver);
        c.push_retry = retry;
    })
    .await
}

/// A task waiting on an approval (not terminal, so it takes push configs).
async fn waiting_task(h: &TestHost, key: &str, message_id: &str) -> String {
    let (_, body) = h
        .rpc_with(
            Some(key),
            Some("1.0"),
            "SendMessage",
            json!({"message": user_message(message_id, Some("approval"), json!([{"data": {"title": "t"}}]))}),
        )
        .await;
    assert_eq!(
        body["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{body}"
    );
    body["result"]["task"]["id"]
        .as_str()
        .expect("id")
        .to_owned()
}

async fn approve(h: &TestHost, task_id: &str, message_id: &str) -> Value {
    let mut reply = user_message(message_id, None, json!([{"data": {"action": "accept"}}]));
    reply["taskId"] = json!(task_id);
    h.rpc("SendMessage", json!({"message": reply})).await
}

/// One JSON-RPC call, answered as raw bytes (for byte comparisons).
async fn rpc_bytes(h: &TestHost, key: &str, method: &str, params: Value) -> (u16, Vec<u8>) {
    let resp = h
        .http
        .post(format!("{}/a2a/jsonrpc", h.base))
        .bearer_auth(key)
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params}))
        .send()
        .await
        .expect("send");
    (
        resp.status().as_u16(),
        resp.bytes().await.expect("body").to_vec(),
    )
}

async fn rest_bytes(h: &TestHost, key: &str, method: Method, path: &str) -> (u16, Vec<u8>) {
    let resp = h
        .http
        .request(method, format!("{}/a2a/rest{}", h.base, path))
        .bearer_auth(key)
        .header("A2A-Version", "1.0")
        .send()
        .await
        .expect("send");
    (
        resp.status().as_u16(),
        resp.bytes().await.expect("body").to_vec(),
    )
}

fn db(h: &TestHost) -> rusqlite::Connection {
    rusqlite::Connection::open(h.data_path.join("openwop.sqlite3")).expect("openwop.sqlite3")
}

fn dead_letters(h: &TestHost) -> Vec<(String, i64, String)> {
    let c = db(h);
    let mut stmt = c
        .prepare("SELECT state, attempts, reason FROM push_dead_letters ORDER BY at_ms")
        .expect("prepare");
    stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

async fn wait_dead_letters(h: &TestHost, n: usize) -> Vec<(String, i64, String)> {
    for _ in 0..200 {
        let d = dead_letters(h);
        if d.len() >= n {
            return d;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("expected {n} dead letters, have {:?}", dead_letters(h));
}

/// Every text cell of a table, joined (to search for secrets).
fn table_text(c: &rusqlite::Connection, table: &str) -> String {
    let mut stmt = c
        .prepare(&format!("SELECT * FROM {table}"))
        .expect("prepare");
    let n = stmt.column_count();
    let rows = stmt
        .query_map([], |r| {
            Ok((0..n)
                .map(|i| {
                    r.get::<_, rusqlite::types::Value>(i)
                        .map(|v| format!("{v:?}"))
                        .unwrap_or_default()
                })
                .collect::<Vec<_>>()
                .join("|"))
        })
        .expect("query");
    rows.map(|r| r.expect("row")).collect::<Vec<_>>().join("\n")
}

// ---------------------------------------------------------------------------------------

#[tokio::test]
async fn registration_refuses_every_unsafe_url_on_both_bindings_and_changes_nothing() {
    let resolver = Scripted::default()
        .answer("public.test", &[&["93.184.216.34"]])
        .answer("internal.test", &[&["10.0.0.7"]])
        .answer("dual.test", &[&["93.184.216.34", "127.0.0.1"]])
        .answer("ula.test", &[&["fd12:3456::1"]])
        .answer("mapped.test", &[&["::ffff:192.168.0.10"]])
        .answer("metadata6.test", &[&["fd00:ec2::254"]]);
    let h = host(false, resolver, fast_retries(1)).await;
    let task = waiting_task(&h, KEY_A, "m-ssrf-1").await;
    let refused = [
        "http://public.test/hook",
        "ftp://public.test/hook",
        "https://user:pw@public.test/hook",
        "https://127.0.0.1/hook",
        "https://127.8.9.10/hook",
        "https://10.0.0.1/hook",
        "https://172.16.5.4/hook",
        "https://172.31.255.1/hook",
        "https://192.168.1.1/hook",
        "https://169.254.169.254/latest/meta-data",
        "https://0.0.0.0/hook",
        "https://2130706433/hook",
        "https://0x7f.0.0.1/hook",
        "https://100.64.0.1/hook",
        "https://[::1]/hook",
        "https://[::]/hook",
        "https://[fe80::1]/hook",
        "https://[fc00::1]/hook",
        "https://[fd00:ec2::254]/hook",
        "https://[::ffff:127.0.0.1]/hook",
        "https://[::ffff:169.254.169.254]/hook",
        "https://[::10.0.0.1]/hook",
        "https://[64:ff9b::a9fe:a9fe]/hook",
        "https://[64:ff9b::7f00:1]/hook",
        "https://[2002:c0a8:101::1]/hook",
        "https://[2002:7f00:1::]/hook",
        "https://localhost/hook",
        "https://LOCALHOST./hook",
        "https://api.localhost/hook",
        "https://metadata.google.internal/computeMetadata/v1/",
        "https://internal.test/hook",
        "https://dual.test/hook",
        "https://ula.test/hook",
        "https://mapped.test/hook",
        "https://metadata6.test/hook",
        "https://unresolvable.test/hook",
    ];
    for url in refused {
        let (_, body) = h
            .rpc_with(
                Some(KEY_A),
                Some("1.0"),
                "CreateTaskPushNotificationConfig",
                json!({"taskId": task, "url": url}),
            )
            .await;
        assert_eq!(body["error"]["code"], -32602, "{url}: {body}");
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap_or("")
                .contains("url"),
            "{url}: {body}"
        );
        // The resolved address is never echoed to the caller.
        for leak in ["10.0.0.7", "fd12", "192.168.0.10"] {
            assert!(
                !body.to_string().contains(leak),
                "{url} leaks {leak}: {body}"
            );
        }
        let (status, body) = h
            .rest(
                Some(KEY_A),
                Method::POST,
                &format!("/tasks/{task}/pushNotificationConfigs"),
                Some(json!({"url": url})),
            )
            .await;
        assert_eq!(status, 400, "{url}: {body}");
        assert_eq!(body["error"]["status"], "INVALID_ARGUMENT", "{url}: {body}");
    }
    // The public name passes.
    let (_, ok) = h
        .rpc_with(
            Some(KEY_A),
            Some("1.0"),
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task, "url": "https://public.test/hook"}),
        )
        .await;
    assert!(ok["result"]["id"].is_string(), "{ok}");
    let list = h
        .rpc("ListTaskPushNotificationConfigs", json!({"taskId": task}))
        .await;
    assert_eq!(
        list["result"]["configs"].as_array().map(Vec::len),
        Some(1),
        "{list}"
    );

    // An inline config with a refused URL is refused before any run exists.
    let before = h.rpc("ListTasks", json!({})).await["result"]["totalSize"].clone();
    let inline = h
        .rpc(
            "SendMessage",
            json!({
                "message": user_message("m-ssrf-inline", Some("echo"), json!([{"text": "x"}])),
                "configuration": {"taskPushNotificationConfig": {"url": "https://169.254.169.254/"}}
            }),
        )
        .await;
    assert_eq!(inline["error"]["code"], -32602, "{inline}");
    assert_eq!(
        h.rpc("ListTasks", json!({})).await["result"]["totalSize"],
        before
    );
}

#[tokio::test]
async fn dns_rebinding_between_registration_and_delivery_is_refused_at_delivery() {
    let (port, connections) = counting_port().await;
    // Public when the config is registered; loopback, then metadata, when pushes go out.
    let resolver = Scripted::default().answer(
        "rebind.test",
        &[&["93.184.216.34"], &["127.0.0.1"], &["169.254.169.254"]],
    );
    let h = host(false, resolver, fast_retries(2)).await;
    let task = waiting_task(&h, KEY_A, "m-rebind-1").await;
    let created = h
        .rpc(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task, "url": format!("https://rebind.test:{port}/hook"), "token": SECRET_TOKEN}),
        )
        .await;
    assert!(created["result"]["id"].is_string(), "{created}");
    let dead = wait_dead_letters(&h, 1).await;
    assert_eq!(dead[0].0, "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(dead[0].1, 2, "both attempts were made and refused");
    assert!(dead[0].2.contains("egress"), "{dead:?}");
    assert!(!dead[0].2.contains(SECRET_TOKEN));
    assert_eq!(
        connections.load(Ordering::SeqCst),
        0,
        "no connection to the rebound address"
    );
}

#[tokio::test]
async fn the_loopback_opening_still_refuses_a_rebind_to_a_private_address() {
    let (port, connections) = counting_port().await;
    let resolver = Scripted::default().answer("rebind.test", &[&["127.0.0.1"], &["10.1.2.3"]]);
    let h = host(true, resolver, fast_retries(1)).await;
    let task = waiting_task(&h, KEY_A, "m-rebind-2").await;
    let created = h
        .rpc(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task, "url": format!("http://rebind.test:{port}/hook")}),
        )
        .await;
    assert!(created["result"]["id"].is_string(), "{created}");
    let dead = wait_dead_letters(&h, 1).await;
    assert!(dead[0].2.contains("private"), "{dead:?}");
    assert_eq!(connections.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_redirect_is_a_failed_delivery_and_is_never_followed() {
    let trap = Receiver::start().await;
    let redirector = Receiver::start().await;
    *redirector.location.lock().expect("lock") = Some(format!("{}/stolen", trap.base));
    redirector.answer(&[307, 302]);
    let h = host(true, Scripted::default(), fast_retries(2)).await;
    let task = waiting_task(&h, KEY_A, "m-redirect-1").await;
    h.rpc(
        "CreateTaskPushNotificationConfig",
        json!({"taskId": task, "url": format!("{}/hook", redirector.base),
               "authentication": {"scheme": "Basic", "credentials": SECRET_CREDENTIALS}}),
    )
    .await;
    let dead = wait_dead_letters(&h, 1).await;
    assert!(dead[0].2.contains("redirect"), "{dead:?}");
    assert_eq!(
        redirector.received().len(),
        2,
        "two attempts, each answered 3xx"
    );
    assert!(
        trap.received().is_empty(),
        "the redirect target never sees the push or its credential"
    );
}

#[tokio::test]
async fn credentials_go_only_to_the_registered_urls_checked_address_with_the_a2a_body() {
    let receiver = Receiver::start().await;
    // `push.test` exists only in the injected resolver: a delivery arrives only because
    // the client connects to the address the guard checked, never resolving on its own.
    let resolver = Scripted::default().answer("push.test", &[&["127.0.0.1"]]);
    let h = host(true, resolver, fast_retries(3)).await;
    let task = waiting_task(&h, KEY_A, "m-cred-1").await;
    let url = format!("http://push.test:{}/hook?k=1", receiver.port);
    let created = h
        .rpc(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task, "url": url, "token": SECRET_TOKEN,
                   "authentication": {"scheme": "Basic", "credentials": SECRET_CREDENTIALS}}),
        )
        .await;
    let config_id = created["result"]["id"]
        .as_str()
        .expect("config id")
        .to_owned();
    assert_eq!(
        created["result"]["authentication"],
        json!({"scheme": "Basic"}),
        "{created}"
    );
    // Registration pushes the current state.
    let got = receiver.wait_for(1).await;
    let first = &got[0];
    assert_eq!(first.path, "/hook");
    assert_eq!(first.headers["content-type"], "application/a2a+json");
    assert_eq!(
        first.headers["authorization"].to_str().expect("ascii"),
        format!("Basic {SECRET_CREDENTIALS}")
    );
    assert_eq!(
        first.headers["host"].to_str().expect("ascii"),
        format!("push.test:{}", receiver.port)
    );
    for name in first.headers.keys() {
        assert!(
            !name.as_str().to_ascii_lowercase().contains("openwop"),
            "no OpenWOP header: {name}"
        );
    }
    assert_eq!(first.body["statusUpdate"]["taskId"], json!(task));
    assert_eq!(
        first.body["statusUpdate"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );

    // Each later state change is pushed; the final one carries the whole task.
    approve(&h, &task, "m-cred-2").await;
    let last = receiver.wait_for_final().await;
    let got = receiver.received();
    assert_eq!(last.body["task"]["id"], json!(task), "{:?}", last.body);
    assert_eq!(last.body["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert!(got.iter().all(|r| r.headers["authorization"].to_str().ok()
        == Some(&format!("Basic {SECRET_CREDENTIALS}"))));
    // After the final push the configuration and its credential are discarded.
    for _ in 0..100 {
        if table_text(&db(&h), "push_secrets").is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(table_text(&db(&h), "push_secrets"), "");
    let get = h
        .rpc(
            "GetTaskPushNotificationConfig",
            json!({"taskId": task, "id": config_id}),
        )
        .await;
    assert_eq!(get["error"]["code"], -32001);
}

#[tokio::test]
async fn a_token_alone_is_sent_as_a_bearer_and_an_inline_config_gets_the_final_push() {
    let receiver = Receiver::start().await;
    let h = host(true, Scripted::default(), fast_retries(3)).await;
    let sent = h
        .rpc(
            "SendMessage",
            json!({
                "message": user_message("m-inline-1", Some("echo"), json!([{"data": {"hello": "push"}}])),
                "configuration": {"taskPushNotificationConfig": {"url": format!("{}/inline", receiver.base), "token": SECRET_TOKEN}}
            }),
        )
        .await;
    let task = sent["result"]["task"]["id"]
        .as_str()
        .expect("task")
        .to_owned();
    assert!(!sent.to_string().contains(SECRET_TOKEN));
    let last = receiver.wait_for_final().await;
    assert_eq!(
        last.headers["authorization"].to_str().expect("ascii"),
        format!("Bearer {SECRET_TOKEN}")
    );
    assert_eq!(last.body["task"]["id"], json!(task));
    assert_eq!(last.body["task"]["status"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(
        last.body["task"]["artifacts"][0]["parts"][0]["data"],
        json!({"hello": "push"})
    );
    // Replaying the same message does not register a second configuration.
    h.rpc(
        "SendMessage",
        json!({
            "message": user_message("m-inline-1", Some("echo"), json!([{"data": {"hello": "push"}}])),
            "configuration": {"taskPushNotificationConfig": {"url": format!("{}/inline", receiver.base), "token": SECRET_TOKEN}}
        }),
    )
    .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let finals = receiver
        .received()
        .iter()
        .filter(|r| r.body.get("task").is_some())
        .count();
    assert_eq!(finals, 1, "one task, one final push");
}

#[tokio::test]
async fn failed_pushes_are_retried_per_the_policy_then_dead_lettered_out_of_sight() {
    let flaky = Receiver::start().await;
    flaky.answer(&[500, 503]);
    let broken = Receiver::start().await;
    broken.answer(&[500, 500, 500, 500, 500]);
    let h = host(true, Scripted::default(), fast_retries(3)).await;
    let task = waiting_task(&h, KEY_A, "m-retry-1").await;
    for r in [&flaky, &broken] {
        h.rpc(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task, "url": format!("{}/hook", r.base), "token": SECRET_TOKEN}),
        )
        .await;
    }
    // Two failures then success: three attempts, no dead letter for it.
    assert_eq!(flaky.wait_for(3).await.len(), 3);
    // Always failing: exactly maxAttempts attempts, then a dead letter.
    let dead = wait_dead_letters(&h, 1).await;
    assert_eq!(broken.received().len(), 3);
    assert_eq!(dead.len(), 1, "{dead:?}");
    assert_eq!(dead[0].1, 3);
    assert!(dead[0].2.contains("500"), "{dead:?}");
    // The dead letter names the delivery but holds no body, header or secret.
    let text = table_text(&db(&h), "push_dead_letters");
    assert!(
        !text.contains(SECRET_TOKEN) && !text.contains("statusUpdate"),
        "{text}"
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        flaky.received().len(),
        3,
        "a delivered push is not repeated"
    );
    // A2A clients never see dead letters; GetTask is how they recover.
    let task_view = h.rpc("GetTask", json!({"id": task})).await;
    assert_eq!(
        task_view["result"]["status"]["state"],
        "TASK_STATE_INPUT_REQUIRED"
    );
    assert!(!task_view.to_string().contains("dead"), "{task_view}");
}

#[tokio::test]
async fn pending_pushes_and_their_credentials_survive_a_host_restart() {
    let receiver = Receiver::start().await;
    receiver.answer(&[503]);
    let dir = tempfile::tempdir().expect("dir").keep();
    let slow = RetryPolicy {
        max_attempts: 4,
        backoff: Backoff::Fixed,
        initial_delay: Duration::from_millis(1500),
        max_delay: Duration::from_millis(1500),
    };
    let first = host_on(dir.clone(), true, Scripted::default(), slow).await;
    let task = waiting_task(&first, KEY_A, "m-restart-1").await;
    first
        .rpc(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task, "url": format!("{}/hook", receiver.base),
                   "authentication": {"scheme": "Bearer", "credentials": SECRET_CREDENTIALS}}),
        )
        .await;
    receiver.wait_for(1).await;
    // The host stops with the retry still pending in its outbox.
    let _ = first.stopper.send(true);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let pending: i64 = db(&first)
        .query_row("SELECT COUNT(*) FROM push_outbox", [], |r| r.get(0))
        .expect("count");
    assert_eq!(pending, 1);
    let second = host_on(dir, true, Scripted::default(), slow).await;
    let got = receiver.wait_for(2).await;
    assert_eq!(
        got[1].headers["authorization"].to_str().expect("ascii"),
        format!("Bearer {SECRET_CREDENTIALS}")
    );
    assert_eq!(got[1].body["statusUpdate"]["taskId"], json!(task));
    // And the restarted host keeps pushing new states to the stored configuration.
    approve(&second, &task, "m-restart-2").await;
    let last = receiver.wait_for_final().await;
    assert_eq!(last.body["task"]["status"]["state"], "TASK_STATE_COMPLETED");
}

#[tokio::test]
async fn config_reads_and_deletes_answer_unreadable_and_foreign_exactly_as_unknown() {
    let receiver = Receiver::start().await;
    let h = host(true, Scripted::default(), fast_retries(1)).await;
    let task_a = waiting_task(&h, KEY_A, "m-iso-1").await;
    let task_a2 = waiting_task(&h, KEY_A, "m-iso-2").await;
    let url = format!("{}/hook", receiver.base);
    let ca = h
        .rpc(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task_a, "url": url}),
        )
        .await["result"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let ca2 = h
        .rpc(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task_a2, "url": url}),
        )
        .await["result"]["id"]
        .as_str()
        .expect("id")
        .to_owned();
    // A configId is random and names no tenant or principal.
    for id in [&ca, &ca2] {
        assert!(
            !id.contains("acme") && !id.contains(&task_a) && id.len() >= 20,
            "{id}"
        );
    }
    assert_ne!(ca, ca2);
    let never = "acme/r-0000000000000000000000";
    let unknown_b = "other/r-0000000000000000000000";

    // GetTaskPushNotificationConfig, JSON-RPC: the four failing probes are byte-identical.
    let get = |key: &'static str, task: String, id: String| {
        let h = &h;
        async move {
            rpc_bytes(
                h,
                key,
                "GetTaskPushNotificationConfig",
                json!({"taskId": task, "id": id}),
            )
            .await
        }
    };
    let unreadable = get(KEY_B, task_a.clone(), ca.clone()).await;
    let unknown_task = get(KEY_B, unknown_b.into(), ca.clone()).await;
    let foreign_config = get(KEY_A, task_a.clone(), ca2.clone()).await;
    let unknown_config = get(KEY_A, task_a.clone(), "pc-never-issued-000000000000".into()).await;
    let unknown_own_task = get(KEY_A, never.into(), ca.clone()).await;
    assert_eq!(unreadable.0, 200);
    for other in [
        &unknown_task,
        &foreign_config,
        &unknown_config,
        &unknown_own_task,
    ] {
        assert_eq!(
            &unreadable,
            other,
            "{} vs {}",
            String::from_utf8_lossy(&unreadable.1),
            String::from_utf8_lossy(&other.1)
        );
    }
    let body: Value = serde_json::from_slice(&unreadable.1).expect("json");
    assert_eq!(body["error"]["code"], -32001);

    // The same on HTTP+JSON.
    let rest_get = |key: &'static str, task: String, id: String| {
        let h = &h;
        async move {
            rest_bytes(
                h,
                key,
                Method::GET,
                &format!("/tasks/{task}/pushNotificationConfigs/{id}"),
            )
            .await
        }
    };
    let r_unreadable = rest_get(KEY_B, task_a.clone(), ca.clone()).await;
    assert_eq!(r_unreadable.0, 404);
    for other in [
        rest_get(KEY_B, unknown_b.into(), ca.clone()).await,
        rest_get(KEY_A, task_a.clone(), ca2.clone()).await,
        rest_get(KEY_A, task_a.clone(), "pc-never-issued-000000000000".into()).await,
    ] {
        assert_eq!(r_unreadable, other);
    }

    // List on an unreadable task is the unknown-task answer.
    assert_eq!(
        rpc_bytes(
            &h,
            KEY_B,
            "ListTaskPushNotificationConfigs",
            json!({"taskId": task_a})
        )
        .await,
        rpc_bytes(
            &h,
            KEY_B,
            "ListTaskPushNotificationConfigs",
            json!({"taskId": unknown_b})
        )
        .await
    );

    // Delete on an unreadable task answers as on an unknown one and removes nothing.
    assert_eq!(
        rpc_bytes(
            &h,
            KEY_B,
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": task_a, "id": ca})
        )
        .await,
        rpc_bytes(
            &h,
            KEY_B,
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": unknown_b, "id": ca})
        )
        .await
    );
    // Delete of another task's configId answers as an unknown configId (success: delete
    // is idempotent) and leaves that configuration alone.
    let foreign_delete = rpc_bytes(
        &h,
        KEY_A,
        "DeleteTaskPushNotificationConfig",
        json!({"taskId": task_a, "id": ca2}),
    )
    .await;
    let unknown_delete = rpc_bytes(
        &h,
        KEY_A,
        "DeleteTaskPushNotificationConfig",
        json!({"taskId": task_a, "id": "pc-never-issued-000000000000"}),
    )
    .await;
    assert_eq!(foreign_delete, unknown_delete);
    assert_eq!(
        serde_json::from_slice::<Value>(&foreign_delete.1).expect("json")["result"],
        json!({})
    );
    for (task, id) in [(&task_a, &ca), (&task_a2, &ca2)] {
        let still = h
            .rpc(
                "GetTaskPushNotificationConfig",
                json!({"taskId": task, "id": id}),
            )
            .await;
        assert_eq!(still["result"]["id"], json!(id), "{still}");
    }
    // Deleting twice succeeds twice; then the config is gone.
    for _ in 0..2 {
        let (status, body) = h
            .rest(
                Some(KEY_A),
                Method::DELETE,
                &format!("/tasks/{task_a}/pushNotificationConfigs/{ca}"),
                None,
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
    assert_eq!(get(KEY_A, task_a.clone(), ca.clone()).await, unreadable);
}

#[tokio::test]
async fn secrets_are_never_returned_nor_stored_with_the_task_or_its_event_log() {
    let receiver = Receiver::start().await;
    let h = host(true, Scripted::default(), fast_retries(1)).await;
    let task = waiting_task(&h, KEY_A, "m-secret-1").await;
    let config = json!({"url": format!("{}/hook", receiver.base), "token": SECRET_TOKEN,
                        "authentication": {"scheme": "Basic", "credentials": SECRET_CREDENTIALS}});
    let mut answers = Vec::new();
    let mut rpc_params = config.clone();
    rpc_params["taskId"] = json!(task);
    answers.push(h.rpc("CreateTaskPushNotificationConfig", rpc_params).await);
    let (status, rest_created) = h
        .rest(
            Some(KEY_A),
            Method::POST,
            &format!("/tasks/{task}/pushNotificationConfigs"),
            Some(config.clone()),
        )
        .await;
    assert_eq!(status, 200, "{rest_created}");
    let id = rest_created["id"].as_str().expect("id").to_owned();
    assert_eq!(rest_created["taskId"], json!(task));
    answers.push(rest_created);
    answers.push(
        h.rpc(
            "GetTaskPushNotificationConfig",
            json!({"taskId": task, "id": id}),
        )
        .await,
    );
    answers.push(
        h.rpc("ListTaskPushNotificationConfigs", json!({"taskId": task}))
            .await,
    );
    answers.push(
        h.rest(
            Some(KEY_A),
            Method::GET,
            &format!("/tasks/{task}/pushNotificationConfigs"),
            None,
        )
        .await
        .1,
    );
    answers.push(
        h.rest(
            Some(KEY_A),
            Method::GET,
            &format!("/tasks/{task}/pushNotificationConfigs/{id}"),
            None,
        )
        .await
        .1,
    );
    answers.push(h.rpc("GetTask", json!({"id": task})).await);
    assert_eq!(
        answers[3]["result"]["configs"].as_array().map(Vec::len),
        Some(2),
        "{}",
        answers[3]
    );
    for a in &answers {
        let text = a.to_string();
        assert!(
            !text.contains(SECRET_TOKEN) && !text.contains(SECRET_CREDENTIALS),
            "{text}"
        );
        assert!(
            !text.contains("\"token\"") && !text.contains("credentials"),
            "{text}"
        );
    }
    receiver.wait_for(2).await;
    // The run's event log, read as REST shows it.
    let projected = task.replace('/', "~2F");
    let events = h
        .http
        .get(format!(
            "{}/runs/{projected}/events/poll?afterSequence=-1&timeout=0",
            h.base
        ))
        .bearer_auth(KEY_A)
        .send()
        .await
        .expect("events")
        .text()
        .await
        .expect("text");
    assert!(events.contains("run.started"), "{events}");
    assert!(!events.contains(SECRET_TOKEN) && !events.contains(SECRET_CREDENTIALS));
    // Every table of both databases (the run store and the A2A side file): only the
    // secrets table holds them.
    let c = db(&h);
    let runs_db =
        rusqlite::Connection::open(h.data_path.join("openwop.sqlite3")).expect("openwop.sqlite3");
    for conn in [&c, &runs_db] {
        let tables: Vec<String> = conn
            .prepare(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name != 'push_secrets'",
            )
            .expect("tables")
            .query_map([], |r| r.get(0))
            .expect("rows")
            .collect::<Result<_, _>>()
            .expect("names");
        assert!(!tables.is_empty());
        for table in tables {
            let text = table_text(conn, &table);
            assert!(
                !text.contains(SECRET_TOKEN) && !text.contains(SECRET_CREDENTIALS),
                "{table}: {text}"
            );
        }
    }
    assert!(table_text(&c, "push_secrets").contains(SECRET_CREDENTIALS));
    // Delete discards them.
    for config_id in answers[3]["result"]["configs"]
        .as_array()
        .expect("configs")
        .iter()
        .filter_map(|c| c["id"].as_str())
    {
        h.rpc(
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": task, "id": config_id}),
        )
        .await;
    }
    assert_eq!(table_text(&c, "push_secrets"), "");
    assert_eq!(table_text(&c, "push_configs"), "");
}

#[tokio::test]
async fn discovery_and_card_advertise_push_and_the_opened_guard_is_never_silent() {
    let open = host(true, Scripted::default(), fast_retries(1)).await;
    let closed = host(false, Scripted::default(), fast_retries(1)).await;
    for (h, relaxed) in [(&open, true), (&closed, false)] {
        let d: Value = h
            .http
            .get(format!("{}/.well-known/openwop", h.base))
            .send()
            .await
            .expect("d")
            .json()
            .await
            .expect("json");
        assert_eq!(d["a2a"]["pushNotifications"], true);
        let card: Value = h
            .http
            .get(format!("{}/.well-known/agent-card.json", h.base))
            .send()
            .await
            .expect("card")
            .json()
            .await
            .expect("json");
        assert_eq!(card["capabilities"]["pushNotifications"], true);
        let relaxations = d["host"]["relaxations"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(
            relaxations
                .iter()
                .any(|r| r["obligation"] == "webhooks.egress-guard"),
            relaxed,
            "{d}"
        );
    }
    // Without the opening, a loopback receiver is refused at registration.
    let task = waiting_task(&closed, KEY_A, "m-closed-1").await;
    let refused = closed
        .rpc(
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task, "url": "http://127.0.0.1:9/hook"}),
        )
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
}

/// A receiver that accepts connections and never answers (nor reads): every attempt to it
/// waits for the egress timeout.
async fn tarpit() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            held.push(socket);
        }
    });
    port
}

#[tokio::test]
async fn a_tenant_whose_receivers_never_answer_cannot_delay_another_tenants_push() {
    let h = host(true, Scripted::default(), fast_retries(5)).await;
    let pit = tarpit().await;
    // Tenant A: four tasks, each with as many configurations as a task may hold, all
    // pointing at receivers that accept TCP and never answer.
    for t in 0..4 {
        let task = waiting_task(&h, KEY_A, &format!("m-pit-{t}")).await;
        for c in 0..openwop::ops::push::MAX_CONFIGS_PER_TASK {
            let (_, body) = h
                .rpc_with(
                    Some(KEY_A),
                    Some("1.0"),
                    "CreateTaskPushNotificationConfig",
                    json!({"taskId": task, "url": format!("http://127.0.0.1:{pit}/hook-{t}-{c}")}),
                )
                .await;
            assert!(body["result"]["id"].is_string(), "{body}");
        }
        // One more is refused: configurations per task are bounded.
        let (_, body) = h
            .rpc_with(
                Some(KEY_A),
                Some("1.0"),
                "CreateTaskPushNotificationConfig",
                json!({"taskId": task, "url": format!("http://127.0.0.1:{pit}/one-too-many")}),
            )
            .await;
        assert_eq!(body["error"]["code"], -32602, "{body}");
    }
    // Let A's attempts take every slot they can.
    tokio::time::sleep(Duration::from_millis(500)).await;

    // Tenant B's push to a live receiver arrives promptly all the same.
    let receiver = Receiver::start().await;
    let started = std::time::Instant::now();
    let task = waiting_task(&h, KEY_B, "m-live-1").await;
    let (_, body) = h
        .rpc_with(
            Some(KEY_B),
            Some("1.0"),
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task, "url": format!("{}/live", receiver.base)}),
        )
        .await;
    assert!(body["result"]["id"].is_string(), "{body}");
    let got = receiver.wait_for(1).await;
    let took = started.elapsed();
    assert_eq!(got[0].path, "/live");
    assert!(
        took < Duration::from_secs(3),
        "another tenant's push took {took:?} behind a tarpit"
    );
}
