//! The client against a host that misbehaves on purpose (the `testkit` scripted host): a
//! hang, 503 then success, 429 with `Retry-After`, a dropped event stream answered 503 once
//! then resumed, plus the headers, errors, paging and hooks a user relies on.
// openwop-codegen: requires operation listRuns
// openwop-codegen: requires operation createRun
// openwop-codegen: requires operation streamRunEvents
// openwop-codegen: requires operation resolveInterruptByToken

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use openwop_sdk::client::testkit::{Reply, ScriptedHost};
use openwop_sdk::client::{Client, Error, RetryPolicy};
use serde_json::{Value, json};

/// A scripted host on a loopback port below 32768 (the test rules keep the ephemeral range
/// for the system).
async fn host() -> ScriptedHost {
    for port in 21200..21500 {
        if let Ok(host) = ScriptedHost::bind(("127.0.0.1", port)).await {
            return host;
        }
    }
    panic!("no free port in 21200..21500");
}

/// Retries without real waiting.
fn quick() -> RetryPolicy {
    RetryPolicy::default()
        .initial_backoff(Duration::from_millis(5))
        .max_backoff(Duration::from_millis(20))
}

fn client(host: &ScriptedHost) -> Client {
    Client::builder(host.url())
        .api_key("k-1")
        .retry(quick())
        .build()
        .expect("client")
}

fn snapshot(n: u32) -> Value {
    json!({
        "runId": format!("acme/run_0123456789abcd{n:02}"),
        "workflowId": "echo",
        "status": "completed",
        "owner": {"tenant": "acme", "subject": {
            "issuer": "openwop:api-key", "subjectId": "key-1", "tenant": "acme",
            "lane": "api-key", "kind": "user"}},
        "eventLogSchemaVersion": 3
    })
}

fn created() -> Value {
    json!({"runId": "acme/run_0123456789abcdef", "status": "pending",
           "eventsUrl": "/runs/acme~2Frun_0123456789abcdef/events",
           "statusUrl": "/runs/acme~2Frun_0123456789abcdef"})
}

fn event(sequence: u64, kind: &str) -> String {
    let data = json!({
        "eventId": format!("evt_0123456789abcd{sequence:02}"),
        "runId": "acme/run_0123456789abcdef",
        "type": kind,
        "payload": {},
        "timestamp": "2026-12-06T00:00:00Z",
        "sequence": sequence,
        "schemaVersion": 1
    });
    format!("id: {sequence}\nevent: {kind}\ndata: {data}\n\n")
}

#[tokio::test]
async fn a_host_that_never_answers_times_out() {
    let host = host().await;
    host.on("GET", "/runs", [Reply::hang()]);
    let client = Client::builder(host.url())
        .timeout(Duration::from_millis(300))
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let started = Instant::now();
    let err = client.list_runs().send().await.unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert!(err.is_retryable());
    assert!(started.elapsed() < Duration::from_secs(5));
    // The call's own timeout wins over the client's.
    let started = Instant::now();
    let client = client.with_timeout(None);
    let err = client
        .list_runs()
        .timeout(Duration::from_millis(200))
        .send()
        .await
        .unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn a_503_then_success_is_retried_and_a_read_succeeds() {
    let host = host().await;
    host.on(
        "GET",
        "/runs",
        [
            Reply::error(503, "service_unavailable", "warming up"),
            Reply::drop_connection(),
            Reply::json(200, &json!({"runs": [snapshot(1)]})),
        ],
    );
    let page = client(&host)
        .list_runs()
        .send()
        .await
        .expect("third attempt");
    assert_eq!(page.runs.len(), 1);
    assert_eq!(host.hits("GET", "/runs"), 3);
    // With retries off, the first 503 is the answer.
    host.on(
        "GET",
        "/runs",
        [Reply::error(503, "service_unavailable", "warming up")],
    );
    let err = client(&host)
        .list_runs()
        .retry(RetryPolicy::none())
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(503));
    assert_eq!(host.hits("GET", "/runs"), 1);
}

#[tokio::test]
async fn a_429_waits_for_retry_after_in_seconds_and_as_a_date() {
    let host = host().await;
    host.on(
        "GET",
        "/runs",
        [
            Reply::error(429, "rate_limited", "slow down").header("Retry-After", "1"),
            Reply::json(200, &json!({"runs": []})),
        ],
    );
    let started = Instant::now();
    client(&host)
        .list_runs()
        .send()
        .await
        .expect("after the wait");
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "{:?}",
        started.elapsed()
    );

    let soon = httpdate::fmt_http_date(std::time::SystemTime::now() + Duration::from_secs(2));
    host.on(
        "GET",
        "/runs",
        [
            Reply::error(429, "rate_limited", "slow down").header("Retry-After", &soon),
            Reply::json(200, &json!({"runs": []})),
        ],
    );
    let started = Instant::now();
    client(&host)
        .list_runs()
        .send()
        .await
        .expect("after the date");
    assert!(
        started.elapsed() >= Duration::from_millis(900),
        "{:?}",
        started.elapsed()
    );

    // A Retry-After beyond the cap is the caller's to honour.
    host.on(
        "GET",
        "/runs",
        [Reply::error(429, "rate_limited", "slow down").header("Retry-After", "120")],
    );
    let err = client(&host).list_runs().send().await.unwrap_err();
    assert_eq!(err.retry_after(), Some(Duration::from_secs(120)));
    assert!(err.is_retryable());
    assert_eq!(host.hits("GET", "/runs"), 1);
}

#[tokio::test]
async fn a_post_is_retried_with_one_minted_idempotency_key_and_only_with_one() {
    let host = host().await;
    host.on(
        "POST",
        "/runs",
        [
            Reply::drop_connection(),
            Reply::error(503, "service_unavailable", "busy"),
            Reply::json(201, &created()),
        ],
    );
    let run = client(&host)
        .create_run()
        .workflow_id("echo")
        .send()
        .await
        .expect("third attempt");
    assert_eq!(run.status(), 201);
    let keys: Vec<String> = host
        .requests()
        .iter()
        .map(|r| r.header("idempotency-key").expect("a key").to_owned())
        .collect();
    assert_eq!(keys.len(), 3);
    assert!(keys.iter().all(|k| *k == keys[0]), "{keys:?}");

    // A second logical call gets a fresh key; a key the caller sets is kept.
    host.on("POST", "/runs", [Reply::json(201, &created())]);
    client(&host)
        .create_run()
        .workflow_id("echo")
        .send()
        .await
        .unwrap();
    client(&host)
        .create_run()
        .workflow_id("echo")
        .idempotency_key("order-42")
        .send()
        .await
        .unwrap();
    let requests = host.requests();
    let later: Vec<&str> = requests[3..]
        .iter()
        .map(|r| r.header("idempotency-key").unwrap())
        .collect();
    assert_ne!(later[0], keys[0]);
    assert_eq!(later[1], "order-42");

    // A POST the document gives no Idempotency-Key is sent once.
    host.on(
        "POST",
        "/interrupts/tok",
        [Reply::error(503, "service_unavailable", "busy")],
    );
    let err = client(&host)
        .resolve_interrupt_by_token("tok")
        .resume_value(json!({"action": "accept"}))
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(503));
    assert_eq!(host.hits("POST", "/interrupts/tok"), 1);
}

#[tokio::test]
async fn errors_read_like_the_host_wrote_them() {
    let host = host().await;
    host.on(
        "GET",
        "/runs",
        [
            Reply::error(401, "unauthenticated", "the api key is not recognised")
                .header("X-Request-Id", "req-7"),
        ],
    );
    let err = client(&host).list_runs().send().await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "HTTP 401 unauthenticated: the api key is not recognised (request id req-7)"
    );
    assert_eq!(err.request_id(), Some("req-7"));
    assert_eq!(
        err.message().as_deref(),
        Some("the api key is not recognised")
    );
    assert!(!err.is_retryable());
    assert!(matches!(err, Error::Api { status: 401, .. }));
}

#[tokio::test]
async fn every_request_says_which_version_and_client_it_is() {
    let host = host().await;
    host.on("GET", "/runs", [Reply::json(200, &json!({"runs": []}))]);
    client(&host).list_runs().send().await.unwrap();
    let sent = &host.requests()[0];
    assert_eq!(sent.header("openwop-version"), Some("2.0"));
    assert_eq!(
        sent.header("openwop-client-version"),
        Some(openwop_sdk::API_VERSION)
    );
    assert_eq!(
        sent.header("user-agent"),
        Some(format!("openwop-rust/{}", openwop_sdk::SDK_VERSION).as_str())
    );
    assert_eq!(sent.header("authorization"), Some("Bearer k-1"));
    // A client-wide header replaces the default of the same name.
    let pinned = client(&host).with_header("OpenWOP-Version", "2");
    pinned.list_runs().send().await.unwrap();
    let sent = &host.requests()[1];
    assert_eq!(sent.header("openwop-version"), Some("2"));
    assert_eq!(
        sent.headers
            .iter()
            .filter(|(n, _)| n == "openwop-version")
            .count(),
        1
    );
}

#[tokio::test]
async fn paging_follows_next_cursor() {
    let host = host().await;
    host.on(
        "GET",
        "/runs",
        [
            Reply::json(
                200,
                &json!({"runs": [snapshot(1), snapshot(2)], "nextCursor": "c2"}),
            ),
            Reply::json(200, &json!({"runs": [snapshot(3)], "nextCursor": "c3"})),
            Reply::json(200, &json!({"runs": [snapshot(4)]})),
        ],
    );
    let client = client(&host);
    let mut runs = client.list_runs().limit(2).stream();
    let mut ids = Vec::new();
    while let Some(run) = runs.next().await {
        ids.push(run.expect("a run").run_id.to_string());
    }
    assert_eq!(ids.len(), 4);
    let queries: Vec<Option<String>> = host.requests().iter().map(|r| r.query.clone()).collect();
    assert_eq!(
        queries,
        [
            Some("limit=2".to_owned()),
            Some("limit=2&cursor=c2".to_owned()),
            Some("limit=2&cursor=c3".to_owned())
        ]
    );

    // By hand: the previous page's cursor goes straight back in.
    host.on(
        "GET",
        "/runs",
        [
            Reply::json(200, &json!({"runs": [], "nextCursor": "c2"})),
            Reply::json(200, &json!({"runs": []})),
        ],
    );
    let mut cursor = None;
    let mut pages = 0;
    loop {
        let mut call = client.list_runs();
        if let Some(c) = &cursor {
            call = call.cursor(c);
        }
        let page = call.send().await.unwrap();
        pages += 1;
        match &page.next_cursor {
            Some(c) => cursor = Some(c.clone()),
            None => break,
        }
    }
    assert_eq!(pages, 2);
    let as_text: String = cursor.as_ref().map(String::from).unwrap();
    assert_eq!(as_text, "c2");
}

#[tokio::test]
async fn a_dropped_stream_answered_503_once_resumes_after_the_last_id() {
    let host = host().await;
    let path = "/runs/acme~2Frun_0123456789abcdef/events";
    host.on(
        "GET",
        path,
        [
            Reply::events([event(1, "run.started")]),
            Reply::error(503, "service_unavailable", "restarting").header("Retry-After", "0"),
            Reply::events([event(2, "run.completed")]),
            Reply::events(Vec::<String>::new()),
        ],
    );
    let client = client(&host);
    let mut events = client
        .stream_run_events("acme/run_0123456789abcdef")
        .send()
        .await
        .expect("open");
    let first = events.next_event().await.unwrap().unwrap();
    assert_eq!(
        (first.event.as_str(), first.id.as_deref()),
        ("run.started", Some("1"))
    );
    let second = events.next_event().await.unwrap().unwrap();
    assert_eq!(second.event, "run.completed");
    assert_eq!(second.data.sequence, 2);
    assert!(events.next().await.is_none());
    assert_eq!(events.reconnects(), 2);
    let resumed: Vec<Option<String>> = host
        .requests()
        .iter()
        .map(|r| r.header("last-event-id").map(str::to_owned))
        .collect();
    assert_eq!(
        resumed,
        [None, Some("1".into()), Some("1".into()), Some("2".into())]
    );
}

#[tokio::test]
async fn a_silent_stream_counts_as_dropped() {
    let host = host().await;
    let path = "/runs/acme~2Frun_0123456789abcdef/events";
    host.on(
        "GET",
        path,
        [
            Reply::events_then_hang([event(1, "run.started")]),
            Reply::events([event(2, "run.completed")]),
            Reply::events(Vec::<String>::new()),
        ],
    );
    let client = client(&host);
    let mut events = client
        .stream_run_events("acme/run_0123456789abcdef")
        .idle_timeout(Duration::from_millis(300))
        .send()
        .await
        .unwrap();
    let mut seen = Vec::new();
    while let Some(event) = events.next().await {
        seen.push(event.unwrap().sequence);
    }
    assert_eq!(seen, [1, 2]);
    assert_eq!(host.requests()[1].header("last-event-id"), Some("1"));
}

#[tokio::test]
async fn hooks_see_every_attempt_and_may_change_it() {
    let host = host().await;
    host.on(
        "GET",
        "/runs",
        [
            Reply::error(503, "service_unavailable", "busy"),
            Reply::json(200, &json!({"runs": []})),
        ],
    );
    let answers = Arc::new(AtomicUsize::new(0));
    let counted = answers.clone();
    let client = Client::builder(host.url())
        .retry(quick())
        .on_request(|request, info| {
            let token = format!("Bearer token-{}", info.attempt);
            request
                .headers_mut()
                .insert("authorization", token.parse().unwrap());
        })
        .on_response(move |_, _, info| {
            assert_eq!(info.operation_id, "listRuns");
            counted.fetch_add(1, Ordering::SeqCst);
        })
        .trace_context(|| Some("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01".into()))
        .build()
        .unwrap();
    client.list_runs().send().await.unwrap();
    assert_eq!(answers.load(Ordering::SeqCst), 2);
    let requests = host.requests();
    assert_eq!(requests[0].header("authorization"), Some("Bearer token-1"));
    assert_eq!(requests[1].header("authorization"), Some("Bearer token-2"));
    assert!(
        requests[1]
            .header("traceparent")
            .unwrap()
            .starts_with("00-0af7")
    );
}
