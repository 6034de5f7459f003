//! Resume tokens and interrupt notices over real HTTP: a run created with a `callbackUrl`
//! posts its notice to a loopback receiver, and the token in it inspects and resolves the
//! interrupt with no other credential. From the attacker's side: forged, foreign and
//! garbled tokens get one identical 401, spent and expired tokens are refused, a private
//! callback address is refused before anything exists, and the token never shows up in
//! the event log, the A2A or MCP projections, or the database files.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use openwop::host::HostConfig;
use serde_json::{Value, json};
use support::a2a::*;
use support::{KEY_A, TestHost};
use tokio::net::TcpListener;

/// A loopback endpoint that records every notice posted to it.
#[derive(Clone, Default)]
struct Receiver {
    url: String,
    got: Arc<Mutex<Vec<Value>>>,
}

impl Receiver {
    async fn start() -> Receiver {
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
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind receiver");
        let url = format!("http://{}/notices", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Receiver { url, got }
    }

    /// The notice for `run_id`, waiting up to 10 s for it.
    async fn notice_for(&self, run_id: &str) -> Value {
        for _ in 0..200 {
            let found = self
                .got
                .lock()
                .expect("lock")
                .iter()
                .find(|n| n["runId"] == run_id)
                .cloned();
            if let Some(n) = found {
                return n;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no interrupt notice for {run_id}");
    }
}

/// A host whose egress guard admits the loopback receiver; the data dir lives as long as
/// the returned handle.
async fn host_with(configure: impl FnOnce(&mut HostConfig)) -> (TestHost, tempfile::TempDir) {
    let dir = tempfile::tempdir().expect("dir");
    let h = start_configured(dir.path().to_path_buf(), 0, |c| {
        c.egress_allow_loopback = true;
        configure(c);
    })
    .await;
    (h, dir)
}

async fn send(req: reqwest::RequestBuilder) -> (u16, String) {
    let resp = req.send().await.expect("send");
    (resp.status().as_u16(), resp.text().await.expect("body"))
}

fn parse(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::String(text.to_owned()))
}

impl TestHost {
    async fn create(&self, callback: Option<&str>) -> (u16, Value) {
        let mut body = json!({"workflowId": "approval", "inputs": {}});
        if let Some(url) = callback {
            body["callbackUrl"] = json!(url);
        }
        let (status, text) = send(
            self.http
                .post(format!("{}/runs", self.base))
                .bearer_auth(KEY_A)
                .json(&body),
        )
        .await;
        (status, parse(&text))
    }

    /// A suspended approval run whose notice went to `rx`: (runId, token).
    async fn suspended(&self, rx: &Receiver) -> (String, Value) {
        let (status, created) = self.create(Some(&rx.url)).await;
        assert_eq!(status, 201, "{created}");
        let run_id = created["runId"].as_str().expect("runId").to_owned();
        (run_id.clone(), rx.notice_for(&run_id).await)
    }

    fn by_token(&self, method: reqwest::Method, token: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}/interrupts/{token}", self.base))
    }

    async fn resolve_by_token(&self, token: &str) -> (u16, Value) {
        let (s, t) = send(
            self.by_token(reqwest::Method::POST, token)
                .json(&json!({"resumeValue": {"action": "accept"}})),
        )
        .await;
        (s, parse(&t))
    }

    async fn resolve_by_run(&self, run_id: &str) -> (u16, Value) {
        let url = format!(
            "{}/runs/{}/interrupts/approve",
            self.base,
            run_id.replace('/', "~2F")
        );
        let (s, t) = send(
            self.http
                .post(url)
                .bearer_auth(KEY_A)
                .json(&json!({"resumeValue": {"action": "accept"}})),
        )
        .await;
        (s, parse(&t))
    }

    async fn wait_status(&self, run_id: &str, status: &str) -> Value {
        for _ in 0..200 {
            let (_, run) = self.get_run(KEY_A, run_id).await;
            if run["status"] == status {
                return run;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("run {run_id} never reached {status}");
    }

    async fn all_events(&self, run_id: &str) -> String {
        let url = format!(
            "{}/runs/{}/events/poll?afterSequence=0&timeout=1",
            self.base,
            run_id.replace('/', "~2F")
        );
        let (status, text) = send(self.http.get(url).bearer_auth(KEY_A)).await;
        assert_eq!(status, 200, "{text}");
        text
    }
}

fn token_of(notice: &Value) -> String {
    notice["token"].as_str().expect("token").to_owned()
}

#[tokio::test]
async fn the_notice_carries_a_token_that_inspects_and_resolves_the_interrupt() {
    let rx = Receiver::start().await;
    let (h, _data) = host_with(|_| {}).await;
    let (run_id, notice) = h.suspended(&rx).await;
    let (_, snapshot) = h.get_run(KEY_A, &run_id).await;
    assert_eq!(snapshot["status"], "waiting-approval");
    let interrupt_id = snapshot["interrupts"][0]["interruptId"].clone();
    assert_eq!(notice["nodeId"], "approve");
    assert_eq!(notice["interruptId"], interrupt_id);
    assert_eq!(notice["kind"], "approval");
    assert!(notice["expiresAt"].is_string(), "{notice}");
    let token = token_of(&notice);
    assert!(token.starts_with("ow2.hs256."), "{token}");
    assert_eq!(token.split('.').count(), 5);

    // No Bearer anywhere below: the token is the credential.
    let (status, text) = send(h.by_token(reqwest::Method::GET, &token)).await;
    assert_eq!(status, 200, "{text}");
    let inspected = parse(&text);
    assert_eq!(inspected["kind"], "approval");
    assert_eq!(inspected["key"], format!("{run_id}:approve"));
    assert_eq!(inspected["data"]["title"], "Approve this run?");
    assert_eq!(
        h.get_run(KEY_A, &run_id).await.1["status"],
        "waiting-approval",
        "inspecting changes nothing"
    );

    let (status, body) = h.resolve_by_token(&token).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["runId"], run_id);
    assert_eq!(body["nodeId"], "approve");
    let done = h.wait_status(&run_id, "completed").await;
    assert_eq!(done["outputs"]["decision"], json!({"action": "accept"}));

    // Spent: both surfaces say so, and the run does not move again.
    let (status, body) = h.resolve_by_token(&token).await;
    assert_eq!(
        (status, body["error"].clone()),
        (409, json!("interrupt_already_resolved")),
        "{body}"
    );
    let (status, text) = send(h.by_token(reqwest::Method::GET, &token)).await;
    assert_eq!(
        (status, parse(&text)["error"].clone()),
        (409, json!("interrupt_already_resolved")),
        "{text}"
    );
    let events = h.all_events(&run_id).await;
    assert_eq!(
        events.matches("\"interrupt.resolved\"").count(),
        1,
        "{events}"
    );
}

#[tokio::test]
async fn forged_foreign_and_garbled_tokens_get_one_identical_401() {
    let rx = Receiver::start().await;
    let (h, _data) = host_with(|_| {}).await;
    let (other, _other_data) = host_with(|_| {}).await;
    let (run_id, notice) = h.suspended(&rx).await;
    let (_, foreign_notice) = other.suspended(&rx).await;
    let token = token_of(&notice);
    let parts: Vec<&str> = token.split('.').collect();
    let (kid, payload, mac) = (parts[2], parts[3], parts[4]);

    let flipped = format!(
        "{}{}",
        if mac.starts_with('A') { 'B' } else { 'A' },
        &mac[1..]
    );
    let mut claims: Value =
        serde_json::from_slice(&URL_SAFE_NO_PAD.decode(payload).expect("payload")).expect("claims");
    claims["exp"] = json!(claims["exp"].as_i64().expect("exp") + 86_400_000);
    let longer = URL_SAFE_NO_PAD.encode(claims.to_string());
    let probes = [
        format!("ow2.hs256.{kid}.{payload}.{flipped}"),
        format!("ow2.hs256.{kid}.{longer}.{mac}"),
        format!("ow2.hs256.0000000000000000.{payload}.{mac}"),
        format!("ow2.hs512.{kid}.{payload}.{mac}"),
        format!("ow2.none.{kid}.{payload}."),
        format!("ow1.hs256.{kid}.{payload}.{mac}"),
        format!("{token}.extra"),
        token_of(&foreign_notice),
        "garbage".to_owned(),
        "ow2.hs256.....".to_owned(),
        "%E2%82%AC".to_owned(),
    ];
    let mut answers = Vec::new();
    for probe in &probes {
        answers.push(send(h.by_token(reqwest::Method::GET, probe)).await);
        answers.push(
            send(
                h.by_token(reqwest::Method::POST, probe)
                    .json(&json!({"resumeValue": {"action": "accept"}})),
            )
            .await,
        );
        // A bad token is refused before the body is read.
        answers.push(
            send(
                h.by_token(reqwest::Method::POST, probe)
                    .json(&json!({"nope": 1})),
            )
            .await,
        );
        // A Bearer of the right tenant does not stand in for a token.
        answers.push(
            send(
                h.by_token(reqwest::Method::POST, probe)
                    .bearer_auth(KEY_A)
                    .json(&json!({"resumeValue": {}})),
            )
            .await,
        );
    }
    let first = answers[0].clone();
    assert_eq!(first.0, 401);
    assert_eq!(
        parse(&first.1)["error"],
        "interrupt_token_invalid",
        "{}",
        first.1
    );
    for (i, answer) in answers.iter().enumerate() {
        assert_eq!(
            answer,
            &first,
            "probe {} answered differently",
            probes[i / 4]
        );
    }
    assert_eq!(
        h.get_run(KEY_A, &run_id).await.1["status"],
        "waiting-approval",
        "no probe resolved anything"
    );

    // The genuine token with a bad body is a validation error that changes nothing.
    let (status, text) = send(
        h.by_token(reqwest::Method::POST, &token)
            .json(&json!({"resumeValue": 1, "extra": true})),
    )
    .await;
    assert_eq!(
        (status, parse(&text)["error"].clone()),
        (400, json!("validation_error")),
        "{text}"
    );
    assert_eq!(
        h.get_run(KEY_A, &run_id).await.1["status"],
        "waiting-approval"
    );
}

#[tokio::test]
async fn an_expired_token_is_gone_but_the_interrupt_is_not() {
    let rx = Receiver::start().await;
    let (h, _data) = host_with(|c| c.interrupt_token_ttl = Duration::from_millis(300)).await;
    let (run_id, notice) = h.suspended(&rx).await;
    let token = token_of(&notice);
    tokio::time::sleep(Duration::from_millis(400)).await;
    let (status, text) = send(h.by_token(reqwest::Method::GET, &token)).await;
    assert_eq!(
        (status, parse(&text)["error"].clone()),
        (410, json!("interrupt_expired")),
        "{text}"
    );
    let (status, body) = h.resolve_by_token(&token).await;
    assert_eq!(
        (status, body["error"].clone()),
        (410, json!("interrupt_expired")),
        "{body}"
    );
    assert_eq!(
        h.get_run(KEY_A, &run_id).await.1["status"],
        "waiting-approval"
    );
    let (status, body) = h.resolve_by_run(&run_id).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn a_token_of_a_cancelled_run_is_already_resolved() {
    let rx = Receiver::start().await;
    let (h, _data) = host_with(|_| {}).await;
    let (run_id, notice) = h.suspended(&rx).await;
    let url = format!("{}/runs/{}/cancel", h.base, run_id.replace('/', "~2F"));
    let (status, text) = send(h.http.post(url).bearer_auth(KEY_A).json(&json!({}))).await;
    assert_eq!(status, 200, "{text}");
    let (status, body) = h.resolve_by_token(&token_of(&notice)).await;
    assert_eq!(
        (status, body["error"].clone()),
        (409, json!("interrupt_already_resolved")),
        "{body}"
    );
    assert_eq!(h.get_run(KEY_A, &run_id).await.1["status"], "cancelled");
}

#[tokio::test]
async fn of_concurrent_resolves_by_token_and_by_run_exactly_one_wins() {
    let rx = Receiver::start().await;
    let (h, _data) = host_with(|_| {}).await;
    for round in 0..4 {
        let (run_id, notice) = h.suspended(&rx).await;
        let token = token_of(&notice);
        let answers: Vec<(u16, Value)> = if round % 2 == 0 {
            let (a, b) = tokio::join!(h.resolve_by_token(&token), h.resolve_by_run(&run_id));
            vec![a, b]
        } else {
            let (a, b) = tokio::join!(h.resolve_by_token(&token), h.resolve_by_token(&token));
            vec![a, b]
        };
        let wins = answers.iter().filter(|(s, _)| *s == 200).count();
        assert_eq!(wins, 1, "round {round}: {answers:?}");
        let loser = answers.iter().find(|(s, _)| *s != 200).expect("a loser");
        assert_eq!(
            (loser.0, loser.1["error"].clone()),
            (409, json!("interrupt_already_resolved")),
            "{answers:?}"
        );
        h.wait_status(&run_id, "completed").await;
        let events = h.all_events(&run_id).await;
        assert_eq!(
            events.matches("\"interrupt.resolved\"").count(),
            1,
            "round {round}: {events}"
        );
    }
}

#[tokio::test]
async fn the_token_is_in_no_event_projection_or_database_file() {
    let rx = Receiver::start().await;
    let (h, _data) = host_with(|_| {}).await;
    let (run_id, notice) = h.suspended(&rx).await;
    let token = token_of(&notice);
    let mac = token.rsplit('.').next().expect("mac").to_owned();

    let mut seen = vec![h.all_events(&run_id).await];
    seen.push(h.get_run(KEY_A, &run_id).await.1.to_string());
    seen.push(h.rpc("GetTask", json!({"id": run_id})).await.to_string());
    let mcp = h
        .http
        .post(format!("{}/mcp", h.base))
        .bearer_auth(KEY_A)
        .header("accept", "application/json, text/event-stream")
        .header("MCP-Protocol-Version", "2026-07-28")
        .header("Mcp-Method", "tasks/get")
        .header("Mcp-Name", &run_id)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"taskId": run_id, "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}, "elicitation": {}}
        }}}));
    let (status, text) = send(mcp).await;
    assert_eq!(status, 200, "{text}");
    // MCP names the run by its projected id (the taskId form).
    let projected = run_id.replace('/', "~2F");
    assert!(
        text.contains(&projected),
        "the MCP answer is about the run: {text}"
    );
    seen.push(text);
    for answer in &seen {
        assert!(
            answer.contains(&run_id) || answer.contains(&projected),
            "each answer is about the run: {answer}"
        );
        assert!(!answer.contains(&mac), "the token leaked: {answer}");
    }

    // Nor is it kept anywhere: the token is minted into the notice and nowhere else.
    let mut files = 0;
    for entry in std::fs::read_dir(&h.data_path).expect("data dir") {
        let path = entry.expect("entry").path();
        if path.is_file() {
            files += 1;
            let bytes = std::fs::read(&path).expect("read");
            let hay = String::from_utf8_lossy(&bytes);
            assert!(!hay.contains(&mac), "the token is in {}", path.display());
        }
    }
    assert!(files > 0, "the data dir holds the databases");
}

#[tokio::test]
async fn a_private_callback_url_is_refused_and_nothing_is_created() {
    // The production guard: no loopback relaxation.
    let dir = tempfile::tempdir().expect("dir");
    let h = start_configured(dir.path().to_path_buf(), 0, |_| {}).await;
    for url in [
        "http://127.0.0.1:9/notices",
        "https://127.0.0.1/notices",
        "https://10.1.2.3/notices",
        "https://192.168.0.7/notices",
        "https://169.254.169.254/latest/meta-data",
        "https://[::1]/notices",
        "https://localhost/notices",
        "https://user:pw@93.184.216.34/notices",
        "ftp://93.184.216.34/notices",
        "not a url",
    ] {
        let (status, body) = h.create(Some(url)).await;
        assert_eq!(
            (status, body["error"].clone()),
            (400, json!("webhook_url_rejected")),
            "{url}: {body}"
        );
    }
    let (status, text) = send(h.http.get(format!("{}/runs", h.base)).bearer_auth(KEY_A)).await;
    assert_eq!(status, 200, "{text}");
    assert_eq!(parse(&text)["runs"], json!([]), "nothing was created");
}

#[tokio::test]
async fn discovery_advertises_callback_delivery() {
    let (h, _data) = host_with(|_| {}).await;
    let (status, text) = send(h.http.get(format!("{}/.well-known/openwop", h.base))).await;
    assert_eq!(status, 200);
    assert!(text.contains("\"callbackDelivery\":true"), "{text}");
}
