//! What an operator and an abusive client meet: `/readyz` (store reachable, migrations
//! applied), the store-side metrics, and per-principal rate limits answered `429` with
//! `Retry-After` in each edge's own shape while other principals go on.

mod support;

use openwop::identity::rate::RateConfig;
use serde_json::{Value, json};
use support::rest::{Rest as _, start, start_with};
use support::{KEY_A, KEY_B, TestHost};

async fn get_text(h: &TestHost, path: &str) -> (u16, String) {
    let r = h
        .http
        .get(format!("{}{path}", h.base))
        .send()
        .await
        .expect("request");
    (r.status().as_u16(), r.text().await.expect("body"))
}

#[tokio::test]
async fn readyz_is_ready_only_with_every_migration_applied() {
    let h = start().await;
    let (status, body) = get_text(&h, "/readyz").await;
    assert_eq!(status, 200, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["status"], "ready");
    assert_eq!(body["schemaVersion"], openwop::store::latest_migration());

    // A database behind this host's migrations (an older schema) is not ready for it.
    let latest = openwop::store::latest_migration();
    rusqlite::Connection::open(h.data_dir().join("openwop.sqlite3"))
        .unwrap()
        .execute("DELETE FROM schema_migrations WHERE version = ?1", [latest])
        .unwrap();
    let (status, body) = get_text(&h, "/readyz").await;
    assert_eq!(status, 503, "{body}");
    let body: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(body["status"], "unavailable");
    assert!(
        body["reason"].as_str().unwrap().contains("migrations"),
        "{body}"
    );
    // Liveness is not readiness: the process still answers.
    assert_eq!(get_text(&h, "/healthz").await.0, 200);
}

#[tokio::test]
async fn metrics_show_runs_by_status_the_push_queue_and_store_latency() {
    let h = start().await;
    for _ in 0..2 {
        let run = h.create(KEY_A, "echo", json!({"n": 1})).await;
        h.wait_status(KEY_A, &run, "completed").await;
    }
    let run = h.create(KEY_B, "approval", json!({})).await;
    h.wait_status(KEY_B, &run, "waiting-approval").await;
    let (status, text) = get_text(&h, "/metrics").await;
    assert_eq!(status, 200);
    for line in [
        "openwop_runs{status=\"completed\"} 2\n",
        "openwop_runs{status=\"waiting-approval\"} 1\n",
        "openwop_runs{status=\"failed\"} 0\n",
        "openwop_push_pending 0\n",
        "openwop_push_dead_letters 0\n",
        "openwop_store_up 1\n",
        "# TYPE openwop_store_call_duration_seconds histogram\n",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
    let calls: f64 = text
        .lines()
        .find_map(|l| {
            l.strip_prefix("openwop_store_call_duration_seconds_count{backend=\"sqlite\"} ")
        })
        .expect("sqlite store calls counted")
        .parse()
        .unwrap();
    assert!(calls > 0.0);
}

fn retry_after(r: &reqwest::Response) -> u64 {
    r.headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .expect("Retry-After in whole seconds")
}

#[tokio::test]
async fn a_principal_past_its_rate_gets_429_in_each_edges_shape_and_others_go_on() {
    let h = start_with(|c| {
        c.rate = RateConfig {
            per_second: 0.2,
            burst: 2.0,
        };
    })
    .await;
    for _ in 0..2 {
        let r = h.get("/runs", KEY_A).send().await.unwrap();
        assert_eq!(r.status(), 200);
    }

    // REST: the OpenWOP envelope.
    let r = h.get("/runs", KEY_A).send().await.unwrap();
    assert_eq!(r.status(), 429);
    assert_eq!(retry_after(&r), 5, "one request every 5 s");
    assert_eq!(r.headers()["openwop-version"], "2.0");
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"], "rate_limited", "{body}");

    // A2A JSON-RPC: a JSON-RPC error, HTTP 429.
    let r = h
        .http
        .post(format!("{}/a2a/jsonrpc", h.base))
        .bearer_auth(KEY_A)
        .header("A2A-Version", "1.0")
        .json(&json!({"jsonrpc": "2.0", "id": 7, "method": "ListTasks", "params": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 429);
    assert!(retry_after(&r) >= 1);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert_eq!(body["error"]["code"], -32000, "{body}");
    assert!(body.get("result").is_none());

    // A2A HTTP+JSON: a google.rpc.Status.
    let r = h
        .http
        .get(format!("{}/a2a/rest/tasks", h.base))
        .bearer_auth(KEY_A)
        .header("A2A-Version", "1.0")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 429);
    assert!(retry_after(&r) >= 1);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], 429, "{body}");
    assert_eq!(body["error"]["status"], "RESOURCE_EXHAUSTED", "{body}");

    // MCP: a JSON-RPC error, HTTP 429.
    let r = h
        .http
        .post(format!("{}/mcp", h.base))
        .bearer_auth(KEY_A)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 429);
    assert!(retry_after(&r) >= 1);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"]["code"], -32000, "{body}");
    assert!(body["error"]["data"]["retryAfterSeconds"].as_u64().unwrap() >= 1);

    // Another principal is not held up, and neither is discovery.
    let r = h.get("/runs", KEY_B).send().await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(get_text(&h, "/.well-known/openwop").await.0, 200);
}

#[tokio::test]
async fn a_request_past_its_deadline_is_refused_in_its_edges_shape_and_streams_run_on() {
    let deadline = std::time::Duration::from_millis(300);
    let h = start_with(|c| c.request_deadline = deadline).await;

    // REST: a long-poll that would wait 5 s.
    let run = h.create(KEY_A, "slow", json!({"ms": 3000})).await;
    let started = std::time::Instant::now();
    let r = h
        .get(
            &format!(
                "/runs/{}/events/poll?afterSequence=1000&timeout=5",
                openwop::ids::project(&run)
            ),
            KEY_A,
        )
        .send()
        .await
        .unwrap();
    assert!(started.elapsed() < std::time::Duration::from_secs(3));
    assert_eq!(r.status(), 503);
    assert_eq!(r.headers()["openwop-version"], "2.0");
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["error"], "service_unavailable", "{body}");

    // A2A JSON-RPC: a blocking send that waits for a 3 s run.
    let r = h
        .http
        .post(format!("{}/a2a/jsonrpc", h.base))
        .bearer_auth(KEY_A)
        .header("A2A-Version", "1.0")
        .json(
            &json!({"jsonrpc": "2.0", "id": 3, "method": "SendMessage", "params": {
            "message": {"messageId": "m-deadline-1", "role": "ROLE_USER",
                        "parts": [{"data": {"ms": 3000}}],
                        "metadata": {"openwop": {"skill": "slow"}}}}}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
    let body: Value = r.json().await.unwrap();
    assert_eq!(body["jsonrpc"], "2.0", "{body}");
    assert_eq!(body["error"]["code"], -32603, "{body}");

    // A stream outlives the deadline: its head came in time.
    let run = h.create(KEY_A, "slow", json!({"ms": 800})).await;
    let started = std::time::Instant::now();
    let r = h
        .get(
            &format!("/runs/{}/events", openwop::ids::project(&run)),
            KEY_A,
        )
        .header("accept", "text/event-stream")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let text = r.text().await.unwrap();
    assert!(started.elapsed() > deadline);
    assert!(text.contains("run.completed"), "{text}");
}

fn decided() -> Value {
    json!({"protocol": "a2a", "peer": "abababababababababababababababababababababababababababababababab", "negotiated": "1.0", "outcome": "accepted", "reason": "ok", "at": "2026-12-02T00:00:00Z"})
}

async fn host_log(h: &TestHost, key: &str) -> Vec<Value> {
    let v: Value = h
        .get("/host/events", key)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    v["events"].as_array().cloned().unwrap_or_default()
}

#[tokio::test]
async fn host_event_retention_bounds_the_log_but_never_drops_what_a_stream_has_not_read() {
    let h = start_with(|c| {
        c.host_events = openwop::ops::HostEventRetention {
            max_age: std::time::Duration::from_secs(3600),
            max_per_tenant: 5,
            every: std::time::Duration::from_millis(50),
        };
    })
    .await;
    let acme = openwop::identity::Subject {
        issuer: "test".parse().unwrap(),
        subject_id: "s".parse().unwrap(),
        tenant: "acme".parse().unwrap(),
        lane: openwop_generated::models::SubjectLane::ApiKey,
        kind: openwop_generated::models::SubjectKind::User,
        key_class: None,
        actor: None,
    };
    // A stream connected from the start of the log, not reading yet.
    let mut stream = h.ops.watch_host(&acme, 0);
    let mut ids = Vec::new();
    for _ in 0..20 {
        let ev = h
            .ops
            .emit_host_event("acme", "negotiation.decided", "durable", decided())
            .await
            .unwrap();
        ids.push(ev.event_id);
    }
    for _ in 0..3 {
        h.ops
            .emit_host_event("other", "negotiation.decided", "durable", decided())
            .await
            .unwrap();
    }
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    // Several rounds of retention later, the stream still gets every event, in order.
    assert_eq!(
        host_log(&h, KEY_A).await.len(),
        20,
        "nothing dropped under a stream"
    );
    let mut seqs = Vec::new();
    for _ in 0..20 {
        seqs.push(stream.next().await.unwrap().unwrap().seq);
    }
    assert!(seqs.windows(2).all(|w| w[1] > w[0]), "{seqs:?}");

    // Once read (and once the stream is gone), the log is cut to its bound.
    drop(stream);
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    let kept = host_log(&h, KEY_A).await;
    let kept: Vec<&str> = kept
        .iter()
        .map(|e| e["eventId"].as_str().unwrap())
        .collect();
    assert_eq!(kept, ids[15..], "the newest five are kept");
    assert_eq!(
        host_log(&h, KEY_B).await.len(),
        3,
        "under its bound, untouched"
    );
}

#[tokio::test]
async fn host_events_older_than_the_age_bound_are_dropped() {
    let h = start_with(|c| {
        c.host_events = openwop::ops::HostEventRetention {
            max_age: std::time::Duration::from_millis(200),
            max_per_tenant: 1000,
            every: std::time::Duration::from_millis(50),
        };
    })
    .await;
    for _ in 0..3 {
        h.ops
            .emit_host_event("acme", "negotiation.decided", "durable", decided())
            .await
            .unwrap();
    }
    assert_eq!(host_log(&h, KEY_A).await.len(), 3);
    tokio::time::sleep(std::time::Duration::from_millis(700)).await;
    assert!(host_log(&h, KEY_A).await.is_empty());
}
