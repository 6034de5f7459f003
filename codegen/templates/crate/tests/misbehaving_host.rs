//! The client against a host that misbehaves on purpose (the `testkit` scripted host): a
//! hang, 503 then success, 429 with `Retry-After`, a dropped event stream answered 503 once
//! then resumed, plus the headers, errors, paging and hooks a user relies on.
// openwop-codegen: requires operation listRuns
// openwop-codegen: requires operation createRun
// openwop-codegen: requires operation streamRunEvents
// openwop-codegen: requires operation resolveInterruptByToken
// openwop-codegen: requires operation getRun
// openwop-codegen: requires operation pollRunEvents
// openwop-codegen: requires template convenience
// openwop-codegen: requires model ErrorCode
// openwop-codegen: requires model RunStatus
// openwop-codegen: requires model RunSnapshot
// openwop-codegen: requires answer listRuns RunList
// openwop-codegen: requires field RunList.runs
// openwop-codegen: requires field RunList.next_cursor
// openwop-codegen: requires body createRun CreateRunRequest
// openwop-codegen: requires field CreateRunRequest.workflow_id
// openwop-codegen: requires body resolveInterruptByToken ResolveInterruptRequest
// openwop-codegen: requires field ResolveInterruptRequest.resume_value
// openwop-codegen: requires answer resolveInterruptByToken ResolveInterruptResponse
// openwop-codegen: requires field ResolveInterruptResponse.node_id
// openwop-codegen: requires answer streamRunEvents RunEvent
// openwop-codegen: requires field RunEvent.sequence
// openwop-codegen: requires answer getRun RunSnapshot

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
    let pinned = client(&host)
        .with_header("OpenWOP-Version", "2")
        .expect("a valid header");
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
    // One reconnection: after the early close, through the 503. The terminal event ends the
    // stream: no connection checks for more.
    assert_eq!(events.reconnects(), 1);
    let resumed: Vec<Option<String>> = host
        .requests()
        .iter()
        .map(|r| r.header("last-event-id").map(str::to_owned))
        .collect();
    assert_eq!(resumed, [None, Some("1".into()), Some("1".into())]);
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

/// A host that accepts the stream's connection and sends no head: bounded by the idle
/// timeout, on open and on a reconnection, never a wait forever.
#[tokio::test]
async fn a_stream_whose_head_never_comes_times_out_on_open_and_on_reconnect() {
    let host = host().await;
    let path = "/runs/acme~2Frun_0123456789abcdef/events";
    host.on("GET", path, [Reply::hang()]);
    let client = Client::builder(host.url())
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let started = Instant::now();
    let opened = tokio::time::timeout(
        Duration::from_secs(10),
        client
            .stream_run_events("acme/run_0123456789abcdef")
            .idle_timeout(Duration::from_millis(300))
            .send(),
    )
    .await
    .expect("opening ends by itself");
    let error = opened.expect_err("no head, no stream");
    assert!(matches!(error, Error::TimedOut { .. }), "{error:?}");
    assert!(error.is_timeout() && error.is_retryable(), "{error}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );

    host.on(
        "GET",
        path,
        [
            Reply::events_then_hang([event(1, "run.started")]),
            Reply::hang(),
        ],
    );
    let mut events = client
        .stream_run_events("acme/run_0123456789abcdef")
        .idle_timeout(Duration::from_millis(300))
        .max_reconnects(1)
        .send()
        .await
        .expect("open");
    let started = Instant::now();
    assert_eq!(events.next().await.unwrap().unwrap().sequence, 1);
    let end = tokio::time::timeout(Duration::from_secs(10), async {
        let mut last = None;
        while let Some(item) = events.next().await {
            last = Some(item);
        }
        last
    })
    .await
    .expect("the stream ends by itself");
    assert!(matches!(end, Some(Err(Error::Stream { .. }))), "{end:?}");
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "{:?}",
        started.elapsed()
    );
}

/// A stream that ends before the run did (a proxy closing it, a host closing twice with
/// nothing new) is resumed; `wait_until_terminal` answers only a finished run. A 2xx that
/// is not an event stream is an error, not a stream that ends at once.
#[tokio::test]
async fn waiting_for_a_run_outlasts_a_stream_that_ends_early() {
    let host = host().await;
    let path = "/runs/acme~2Frun_0123456789abcdef/events";
    let run = "/runs/acme~2Frun_0123456789abcdef";
    let mut running = snapshot(0);
    running["runId"] = json!("acme/run_0123456789abcdef");
    running["status"] = json!("running");
    let mut done = running.clone();
    done["status"] = json!("completed");
    host.on(
        "GET",
        path,
        [
            Reply::events([event(1, "run.started")]),
            Reply::events([": keep-alive\n\n"]),
            Reply::events([event(2, "run.completed")]),
            Reply::events(Vec::<String>::new()),
        ],
    );
    host.on(
        "GET",
        run,
        [Reply::json(200, &running), Reply::json(200, &done)],
    );
    let client = client(&host);
    let finished = tokio::time::timeout(
        Duration::from_secs(20),
        client.wait_until_terminal("acme/run_0123456789abcdef"),
    )
    .await
    .expect("finishes")
    .expect("snapshot");
    assert_eq!(finished.status.as_str(), "completed");
    assert_eq!(host.hits("GET", run), 2, "asked again after the early end");
    let resumed: Vec<Option<String>> = host
        .requests()
        .iter()
        .filter(|r| r.path == path)
        .map(|r| r.header("last-event-id").map(str::to_owned))
        .collect();
    // Resumed after event 1 (a keep-alive alone is no progress); nothing asked after
    // `run.completed`: the terminal event ends the wait, confirmed by one `getRun`.
    assert_eq!(
        resumed,
        [None, Some("1".to_owned()), Some("1".to_owned())],
        "{resumed:?}"
    );

    host.on("GET", path, [Reply::json(200, &json!({"runs": []}))]);
    let error = client
        .stream_run_events("acme/run_0123456789abcdef")
        .send()
        .await
        .expect_err("JSON is not a stream");
    assert!(error.to_string().contains("not an event stream"), "{error}");
}

/// A 2xx answer cut short, or slower than the timeout, is retried like a failed request;
/// the call succeeds when a later attempt is whole.
#[tokio::test]
async fn an_answer_cut_short_or_too_slow_is_retried() {
    let host = host().await;
    let page = json!({"runs": []});
    host.on(
        "GET",
        "/runs",
        [
            Reply::cut_short(200, &page, 4),
            Reply::delayed(Duration::from_secs(2), Reply::json(200, &page)),
            Reply::json(200, &page),
        ],
    );
    let client = Client::builder(host.url())
        .retry(quick())
        .timeout(Duration::from_millis(500))
        .build()
        .unwrap();
    let answer = client
        .list_runs()
        .send()
        .await
        .expect("the third attempt is whole");
    assert!(answer.runs.is_empty());
    assert_eq!(host.hits("GET", "/runs"), 3);
}

/// A proxy's 502 page with Retry-After and a request id: retried, and when it persists
/// the error keeps status, headers and a readable sentence. 501 is not retried.
#[tokio::test]
async fn a_proxys_error_page_is_retried_and_keeps_its_headers() {
    let host = host().await;
    let page = Reply::Answer {
        status: 502,
        headers: vec![
            ("Content-Type".into(), "text/html".into()),
            ("Retry-After".into(), "0".into()),
            ("X-Request-Id".into(), "abc123".into()),
        ],
        body: b"<html>\n<h1>502 Bad Gateway</h1>\n</html>".to_vec(),
    };
    host.on("GET", "/runs", [page]);
    let client = client(&host);
    let error = client.list_runs().send().await.expect_err("always 502");
    assert_eq!(host.hits("GET", "/runs"), 3, "retried by its status");
    assert!(
        matches!(error, Error::Http { status: 502, .. }),
        "{error:?}"
    );
    assert_eq!(error.request_id(), Some("abc123"));
    assert_eq!(error.retry_after(), Some(Duration::ZERO));
    assert_eq!(
        error.to_string(),
        "HTTP 502, not an OpenWOP error answer: <html> (request id abc123)"
    );
    host.on("GET", "/runs", [Reply::status(501)]);
    let before = host.hits("GET", "/runs");
    let _ = client.list_runs().send().await.expect_err("501");
    assert_eq!(host.hits("GET", "/runs"), before + 1, "501 says never");
}

/// A long poll holds for its `timeout`; a shorter client timeout stretches to the hold.
#[tokio::test]
async fn a_long_poll_outlasts_a_shorter_client_timeout() {
    let host = host().await;
    let path = "/runs/acme~2Frun_0123456789abcdef/events/poll";
    host.on(
        "GET",
        path,
        [Reply::delayed(
            Duration::from_millis(1500),
            Reply::json(
                200,
                &json!({"runId": "acme/run_0123456789abcdef", "events": [], "lastSequence": 3,
                        "status": "running", "isTerminal": false}),
            ),
        )],
    );
    let client = Client::builder(host.url())
        .retry(RetryPolicy::none())
        .timeout(Duration::from_millis(500))
        .build()
        .unwrap();
    let answer = client
        .poll_run_events("acme/run_0123456789abcdef")
        .after_sequence(3)
        .query_timeout(2)
        .send()
        .await;
    assert!(answer.is_ok(), "{answer:?}");
    assert_eq!(host.hits("GET", path), 1);
}

/// What a user can get wrong at set-up is refused at `build()`, and a builder's `Debug`
/// names headers without their values.
#[test]
fn build_refuses_what_no_call_could_use_and_debug_hides_header_values() {
    for (url, says) in [
        ("127.0.0.1:8080", "not a URL"),
        ("localhost:8080", "http or https"),
        ("host.example", "not a URL"),
        ("http://h.example?x=1", "query or fragment"),
        ("ftp://h.example", "http or https"),
    ] {
        let error = Client::builder(url).build().expect_err(url);
        assert!(error.to_string().contains(says), "{url}: {error}");
    }
    let bad_key = Client::builder("http://127.0.0.1:1")
        .api_key("k\n1")
        .build();
    assert!(bad_key.is_err());
    let bad_header = Client::builder("http://127.0.0.1:1")
        .header("X Y", "v")
        .build();
    assert!(bad_header.is_err());
    // An empty id would reach another route: refused before anything is sent.
    let client = Client::builder("http://127.0.0.1:1").build().unwrap();
    let empty = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(client.get_run("").send());
    assert!(
        matches!(&empty, Err(Error::InvalidRequest(m)) if m.contains("runId")),
        "{empty:?}"
    );
    let client = Client::builder("http://127.0.0.1:1").build().unwrap();
    let shown = format!(
        "{:?}",
        client
            .get_run("acme/run_0123456789abcdef")
            .header("Authorization", "Bearer SECRET-PER-CALL")
    );
    assert!(!shown.contains("SECRET-PER-CALL"), "{shown}");
    assert!(shown.contains("Authorization"), "{shown}");
}

/// A page that fails ends the listing, and the cursor still names that page, so a later
/// call can resume where it stopped.
#[tokio::test]
async fn a_failed_page_leaves_its_cursor_to_resume_from() {
    let host = host().await;
    host.on(
        "GET",
        "/runs",
        [
            Reply::json(200, &json!({"runs": [snapshot(1)], "nextCursor": "c1"})),
            Reply::error(400, "validation_error", "bad cursor"),
        ],
    );
    let client = client(&host);
    let mut pages = client.list_runs().pages();
    assert!(pages.next().await.unwrap().is_ok());
    assert!(pages.next().await.unwrap().is_err());
    assert_eq!(pages.cursor(), Some(Some("c1")));
    assert!(pages.next().await.is_none(), "the listing has ended");
    assert_eq!(host.hits("GET", "/runs"), 2);
}

/// A parameter set twice is sent once (the last value), and a caller's `Idempotency-Key`
/// header is the call's key where the operation takes one, and nothing where it does not.
#[tokio::test]
async fn a_parameter_set_twice_is_sent_once_and_a_callers_key_header_is_the_calls_key() {
    let host = host().await;
    host.on("GET", "/runs", [Reply::json(200, &json!({"runs": []}))]);
    let client = client(&host);
    client
        .list_runs()
        .cursor("a")
        .cursor("b")
        .send()
        .await
        .expect("page");
    assert_eq!(host.requests()[0].query.as_deref(), Some("cursor=b"));

    // A key sent as a header is the call's key: on every attempt, alone, not replaced by
    // a minted one, and it makes the POST safe to retry.
    host.on(
        "POST",
        "/runs",
        [
            Reply::error(503, "service_unavailable", "busy"),
            Reply::json(201, &created()),
        ],
    );
    client
        .create_run()
        .workflow_id("echo")
        .header("Idempotency-Key", "order-42")
        .send()
        .await
        .expect("second attempt");
    let keys: Vec<Vec<String>> = host
        .requests()
        .iter()
        .filter(|r| r.path == "/runs" && r.method == "POST")
        .map(|r| {
            r.headers
                .iter()
                .filter(|(n, _)| n.eq_ignore_ascii_case("idempotency-key"))
                .map(|(_, v)| v.clone())
                .collect()
        })
        .collect();
    assert_eq!(keys, [["order-42"], ["order-42"]]);

    // An operation the document gives no Idempotency-Key ignores one: a POST to it is not
    // safe to repeat, whatever header the caller adds.
    let path = "/interrupts/tok_0123456789abcdef";
    host.on(
        "POST",
        path,
        [
            Reply::error(503, "service_unavailable", "busy"),
            Reply::json(200, &json!({})),
        ],
    );
    let _ = client
        .resolve_interrupt_by_token("tok_0123456789abcdef")
        .header("Idempotency-Key", "mine-1")
        .resume_value(json!({"action": "accept"}))
        .send()
        .await;
    assert_eq!(host.hits("POST", path), 1, "sent once");
}

/// `max_elapsed` bounds a call with all its attempts: a host that never answers costs that
/// long and no more, and a `Retry-After` that would end past it ends the retries at once.
#[tokio::test]
async fn max_elapsed_bounds_a_call_with_all_its_retries() {
    let host = host().await;
    host.on("GET", "/runs", [Reply::hang()]);
    let bounded = quick()
        .max_attempts(10)
        .max_elapsed(Duration::from_millis(600));
    let client = Client::builder(host.url())
        .timeout(Duration::from_secs(30))
        .retry(bounded.clone())
        .build()
        .unwrap();
    let started = Instant::now();
    let err = client.list_runs().send().await.unwrap_err();
    let took = started.elapsed();
    assert!(err.is_timeout(), "{err}");
    assert!(took >= Duration::from_millis(550), "{took:?}");
    assert!(
        took < Duration::from_secs(5),
        "{took:?}: per-attempt timeouts not cut"
    );

    host.on(
        "GET",
        "/runs",
        [Reply::error(503, "service_unavailable", "busy").header("Retry-After", "2")],
    );
    let started = Instant::now();
    let err = client.list_runs().send().await.unwrap_err();
    assert_eq!(err.status(), Some(503));
    assert_eq!(err.retry_after(), Some(Duration::from_secs(2)));
    assert_eq!(
        host.hits("GET", "/runs"),
        1,
        "a wait past the bound is not made"
    );
    assert!(started.elapsed() < Duration::from_secs(1));

    // Within the bound, retries go on as before.
    host.on(
        "GET",
        "/runs",
        [
            Reply::error(503, "service_unavailable", "busy"),
            Reply::json(200, &json!({"runs": []})),
        ],
    );
    client.list_runs().send().await.expect("second attempt");
    assert_eq!(host.hits("GET", "/runs"), 2);
}

/// A retried `POST` whose first attempt the host is still working on is answered
/// `idempotency_in_flight`: the client waits and asks again under the same key, and gets
/// the first attempt's result. Any other 409 is the answer.
#[tokio::test]
async fn idempotency_in_flight_is_waited_out_under_the_same_key() {
    let host = host().await;
    host.on(
        "POST",
        "/runs",
        [
            Reply::error(409, "idempotency_in_flight", "the first attempt is at work")
                .header("Retry-After", "0"),
            Reply::error(409, "idempotency_in_flight", "still at work"),
            Reply::json(201, &created()),
        ],
    );
    let client = client(&host);
    let run = client
        .create_run()
        .workflow_id("echo")
        .send()
        .await
        .expect("the first attempt's result");
    assert_eq!(run.status(), 201);
    let keys: Vec<String> = host
        .requests()
        .iter()
        .map(|r| r.header("idempotency-key").unwrap().to_owned())
        .collect();
    assert_eq!(keys.len(), 3);
    assert!(keys.iter().all(|k| *k == keys[0]), "{keys:?}");

    host.on(
        "POST",
        "/runs",
        [Reply::error(
            409,
            "idempotency_key_mismatch",
            "another body",
        )],
    );
    let err = client
        .create_run()
        .workflow_id("echo")
        .send()
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(409));
    assert!(!err.is_retryable());
    assert_eq!(host.hits("POST", "/runs"), 1);
}

/// A stream the host ends (after the run's terminal event) has not reconnected, though the
/// client checked once that nothing newer exists.
#[tokio::test]
async fn a_stream_that_simply_ends_reads_no_reconnections() {
    let host = host().await;
    let path = "/runs/acme~2Frun_0123456789abcdef/events";
    host.on(
        "GET",
        path,
        [
            // Closed before the run's end (a proxy, a restart): the next connection finds
            // nothing newer, and the stream ends.
            Reply::events([event(1, "run.started"), event(2, "node.started")]),
            Reply::events(Vec::<String>::new()),
        ],
    );
    let attempts = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = attempts.clone();
    let client = Client::builder(host.url())
        .retry(quick())
        .on_request(move |_, info| seen.lock().unwrap().push(info.attempt))
        .build()
        .unwrap();
    let mut events = client
        .stream_run_events("acme/run_0123456789abcdef")
        .send()
        .await
        .unwrap();
    let mut count = 0;
    while let Some(event) = events.next().await {
        event.unwrap();
        count += 1;
    }
    assert_eq!(count, 2);
    assert_eq!(events.reconnects(), 0);
    assert_eq!(host.hits("GET", path), 2, "the end was confirmed once");
    assert_eq!(
        *attempts.lock().unwrap(),
        [1, 2],
        "each connection is its own attempt"
    );
}

/// An event's `id:` counts only once the event is whole: a stream cut in the middle of an
/// event resumes before it, and the event arrives.
#[tokio::test]
async fn an_event_cut_short_is_asked_for_again() {
    let host = host().await;
    let path = "/runs/acme~2Frun_0123456789abcdef/events";
    let whole = event(2, "run.completed");
    let half = &whole[..whole.len() / 2];
    host.on(
        "GET",
        path,
        [
            Reply::events([event(1, "run.started"), half.to_owned()]),
            Reply::events([whole.clone()]),
            Reply::events(Vec::<String>::new()),
        ],
    );
    let client = client(&host);
    let mut events = client
        .stream_run_events("acme/run_0123456789abcdef")
        .send()
        .await
        .unwrap();
    let mut seen = Vec::new();
    while let Some(event) = events.next().await {
        seen.push(event.unwrap().sequence);
    }
    assert_eq!(seen, [1, 2], "event 2 was not skipped");
    assert_eq!(
        host.requests()[1].header("last-event-id"),
        Some("1"),
        "resumed after the last whole event"
    );
    assert_eq!(events.last_event_id(), Some("2"));
}

/// SSE as the WHATWG parser reads it: a byte order mark first, lines ended by a lone CR
/// (dispatched at once, not held for an LF that never comes), an empty `event:` as the
/// default type.
#[tokio::test]
async fn a_stream_with_a_bom_and_cr_line_ends_is_read_at_once() {
    let host = host().await;
    let path = "/runs/acme~2Frun_0123456789abcdef/events";
    let first = event(1, "run.started").replace('\n', "\r");
    host.on(
        "GET",
        path,
        [Reply::events_then_hang([format!("\u{feff}{first}")])],
    );
    let client = client(&host);
    let mut events = client
        .stream_run_events("acme/run_0123456789abcdef")
        .send()
        .await
        .unwrap();
    let first = tokio::time::timeout(Duration::from_secs(5), events.next_event())
        .await
        .expect("dispatched without waiting for another chunk")
        .unwrap()
        .unwrap();
    assert_eq!(first.id.as_deref(), Some("1"), "the id line after the BOM");
    assert_eq!(first.event, "run.started");

    host.on(
        "GET",
        path,
        [Reply::events_then_hang([
            event(1, "run.started").replace("event: run.started", "event:")
        ])],
    );
    let mut events = client
        .stream_run_events("acme/run_0123456789abcdef")
        .send()
        .await
        .unwrap();
    let first = events.next_event().await.unwrap().unwrap();
    assert_eq!(first.event, "message");
}

/// A connection that carries only a keep-alive before it drops is a failure like any
/// other: the stream gives up after `max_reconnects` instead of reconnecting forever.
#[tokio::test]
async fn keep_alives_alone_do_not_keep_a_failing_stream_alive() {
    let host = host().await;
    let path = "/runs/acme~2Frun_0123456789abcdef/events";
    host.on(
        "GET",
        path,
        [
            Reply::events_then_hang([event(1, "run.started")]),
            Reply::events_then_hang([": keep-alive\n\n"]),
        ],
    );
    let client = client(&host);
    let mut events = client
        .stream_run_events("acme/run_0123456789abcdef")
        .idle_timeout(Duration::from_millis(200))
        .max_reconnects(2)
        .send()
        .await
        .unwrap();
    let outcome = tokio::time::timeout(Duration::from_secs(20), async {
        let mut items = Vec::new();
        while let Some(item) = events.next().await {
            items.push(item.map(|e| e.sequence));
        }
        items
    })
    .await
    .expect("the stream ends");
    assert!(matches!(outcome[0], Ok(1)), "{outcome:?}");
    assert!(
        matches!(outcome.last(), Some(Err(Error::Stream { .. }))),
        "{outcome:?}"
    );
    assert_eq!(
        host.hits("GET", path),
        3,
        "the first connection, then max_reconnects more"
    );
}

/// Per call, an `Authorization` header is the credential (a gateway forwarding its
/// user's token), a segment of dots cannot climb the path, and a resume token in the path
/// stays out of errors and `Debug`.
#[tokio::test]
async fn a_calls_credential_wins_dots_stay_in_their_segment_and_tokens_stay_out_of_logs() {
    let host = host().await;
    let run = "/runs/acme~2Frun_0123456789abcdef";
    host.on("GET", run, [Reply::json(200, &snapshot(0))]);
    let client = client(&host);
    let _ = client
        .get_run("acme/run_0123456789abcdef")
        .header("Authorization", "Bearer user-token-1")
        .send()
        .await;
    let _ = client.get_run("acme/run_0123456789abcdef").send().await;
    let auth: Vec<Option<String>> = host
        .requests()
        .iter()
        .map(|r| r.header("authorization").map(str::to_owned))
        .collect();
    assert_eq!(
        auth,
        [
            Some("Bearer user-token-1".to_owned()),
            Some("Bearer k-1".to_owned())
        ]
    );

    host.on(
        "GET",
        "/runs/~2E~2E",
        [Reply::error(404, "not_found", "no run")],
    );
    let err = client.get_run("..").send().await.unwrap_err();
    assert_eq!(err.status(), Some(404));
    assert_eq!(host.hits("GET", "/runs/~2E~2E"), 1);

    let token = "ow2.hs256.k1.secretpayload.secretmac";
    host.on(
        "POST",
        &format!("/interrupts/{token}"),
        [Reply::drop_connection()],
    );
    let call = client
        .resolve_interrupt_by_token(token)
        .resume_value(json!({"action": "accept"}))
        .retry(RetryPolicy::none());
    assert!(!format!("{call:?}").contains("secret"), "{call:?}");
    let err = call.send().await.unwrap_err();
    assert!(matches!(err, Error::Transport(_)), "{err:?}");
    assert!(!err.to_string().contains("secret"), "{err}");
    assert!(!format!("{err:?}").contains("secret"), "{err:?}");
}

/// A caller's own `reqwest::Client` with a short total timeout cuts neither an event
/// stream (judged by its idle timeout) nor a long poll (held for its `timeout`).
#[tokio::test]
async fn a_callers_http_client_timeout_cuts_no_stream_or_long_poll() {
    let host = host().await;
    let http = reqwest::Client::builder()
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let client = Client::builder(host.url())
        .http_client(http)
        .no_timeout()
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let events = "/runs/acme~2Frun_0123456789abcdef/events";
    host.on(
        "GET",
        events,
        [
            Reply::delayed(
                Duration::from_millis(700),
                Reply::events([event(1, "run.started")]),
            ),
            Reply::events(Vec::<String>::new()),
        ],
    );
    let mut stream = client
        .stream_run_events("acme/run_0123456789abcdef")
        .send()
        .await
        .expect("the stream opens after 700 ms");
    assert_eq!(stream.next().await.unwrap().unwrap().sequence, 1);

    let poll = "/runs/acme~2Frun_0123456789abcdef/events/poll";
    host.on(
        "GET",
        poll,
        [Reply::delayed(
            Duration::from_millis(700),
            Reply::json(
                200,
                &json!({"runId": "acme/run_0123456789abcdef", "events": [], "lastSequence": 3,
                        "status": "running", "isTerminal": false}),
            ),
        )],
    );
    let answer = client
        .poll_run_events("acme/run_0123456789abcdef")
        .after_sequence(3)
        .query_timeout(1)
        .send()
        .await;
    assert!(answer.is_ok(), "{answer:?}");
}

/// `send_raw` sends as `send` does and answers the body as it came: what `send` cannot
/// decode (another media type asked for with `Accept`) is read as bytes, and an error
/// answer is still an `Err`.
#[tokio::test]
async fn send_raw_answers_the_body_as_it_came() {
    let host = host().await;
    let run = "/runs/acme~2Frun_0123456789abcdef";
    let other = json!({"kind": "a2a", "parts": [{"text": "hello"}]});
    host.on(
        "GET",
        run,
        [Reply::json(200, &other).header("X-Shape", "a2a")],
    );
    let client = client(&host);
    let err = client
        .get_run("acme/run_0123456789abcdef")
        .send()
        .await
        .unwrap_err();
    assert!(matches!(err, Error::Decode { .. }), "{err:?}");
    assert_eq!(
        err.headers()
            .and_then(|h| h.get("x-shape"))
            .map(|v| v.as_bytes()),
        Some(&b"a2a"[..]),
        "a Decode error keeps the answer's headers"
    );
    let raw = client
        .get_run("acme/run_0123456789abcdef")
        .header("Accept", "application/a2a+json")
        .send_raw()
        .await
        .expect("bytes");
    assert_eq!(raw.status(), 200);
    assert_eq!(raw.header("x-shape"), Some("a2a"));
    let body: Value = serde_json::from_slice(&raw).expect("JSON");
    assert_eq!(body, other);
    assert_eq!(
        host.requests()
            .last()
            .and_then(|r| r.header("accept").map(str::to_owned)),
        Some("application/a2a+json".to_owned())
    );

    host.on("GET", run, [Reply::error(404, "not_found", "no run")]);
    let err = client
        .get_run("acme/run_0123456789abcdef")
        .send_raw()
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(404));
}

/// A non-2xx answer whose body never ends (a broken proxy streaming a page forever, or a
/// `Content-Length` far beyond what comes): the client reads the first MiB of it and
/// answers the error, instead of filling memory or waiting for the rest.
#[tokio::test]
async fn an_endless_error_body_is_read_only_in_part() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut listener = None;
    for port in 21500..21800 {
        if let Ok(l) = tokio::net::TcpListener::bind(("127.0.0.1", port)).await {
            listener = Some(l);
            break;
        }
    }
    let listener = listener.expect("no free port in 21500..21800");
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = [0u8; 4096];
        let _ = socket.read(&mut request).await;
        let head = "HTTP/1.1 501 Not Implemented\r\ncontent-type: text/html\r\n\
                    x-request-id: endless\r\ncontent-length: 1073741824\r\n\r\n<html>\n";
        socket.write_all(head.as_bytes()).await.unwrap();
        let chunk = vec![b'x'; 64 * 1024];
        // 2 MiB, then silence: only a client that stops at its cap answers.
        for _ in 0..32 {
            if socket.write_all(&chunk).await.is_err() {
                return;
            }
        }
        tokio::time::sleep(Duration::from_secs(60)).await;
    });
    let client = Client::builder(&url)
        .api_key("k-1")
        .timeout(Duration::from_secs(10))
        .retry(RetryPolicy::none())
        .build()
        .expect("client");
    // Without the cap the read waits for the rest and the call times out (`Transport`).
    let error = client.list_runs().send().await.expect_err("501");
    assert!(
        matches!(error, Error::Http { status: 501, .. }),
        "{error:?}"
    );
    assert_eq!(error.request_id(), Some("endless"));
    let Error::Http { body, .. } = &error else {
        unreachable!()
    };
    assert!(body.starts_with("<html>"), "{body:?}");
}

/// A redirect is not followed: reqwest's default turned a `POST` redirected by `301` into a
/// body-less `GET` of wherever it pointed (and sent the client's headers there). The call
/// fails with the redirect, saying where it points.
#[tokio::test]
async fn a_redirect_is_reported_not_followed() {
    let host = host().await;
    host.on(
        "POST",
        "/runs",
        [Reply::status(301).header("Location", "http://127.0.0.1:9/elsewhere/runs")],
    );
    let client = client(&host);
    let error = client
        .create_run()
        .workflow_id("echo")
        .send()
        .await
        .expect_err("a redirect");
    assert!(
        matches!(error, Error::Http { status: 301, .. }),
        "{error:?}"
    );
    assert_eq!(
        error.to_string(),
        "HTTP 301: the host redirects to http://127.0.0.1:9/elsewhere/runs; the client follows no redirect: use the host's own address as the base URL"
    );
    assert_eq!(host.requests().len(), 1, "nothing else was asked");
}

/// A `429` says the host acted on nothing: even a `POST` without an idempotency key (one
/// sent once on a `503`) is sent again after the wait.
#[tokio::test]
async fn a_rate_limited_post_without_a_key_is_sent_again() {
    let host = host().await;
    let path = "/interrupts/tok_0123456789abcdef";
    let resolved = json!({"runId": "acme/run_0123456789abcdef", "nodeId": "review",
                          "status": "running"});
    host.on(
        "POST",
        path,
        [
            Reply::error(429, "rate_limited", "slow down").header("Retry-After", "0"),
            Reply::json(200, &resolved),
        ],
    );
    let answer = client(&host)
        .resolve_interrupt_by_token("tok_0123456789abcdef")
        .resume_value(json!({"action": "accept"}))
        .send()
        .await
        .expect("the second attempt");
    assert_eq!(answer.node_id.as_str(), "review");
    assert_eq!(host.hits("POST", path), 2);
}

/// Credentials stay out of what a log shows: a per-call `Authorization` (a hook printing
/// the request's headers), a `user:password@` in the base URL (the builder's `Debug`, the
/// errors of `build()`).
#[tokio::test]
async fn credentials_stay_out_of_debug_output_and_errors() {
    let host = host().await;
    host.on("GET", "/runs", [Reply::json(200, &json!({"runs": []}))]);
    let seen = Arc::new(std::sync::Mutex::new(String::new()));
    let log = seen.clone();
    let client = Client::builder(host.url())
        .retry(quick())
        .on_request(move |request, _| {
            *log.lock().unwrap() = format!("{:?}", request.headers());
        })
        .build()
        .expect("client");
    client
        .list_runs()
        .header("Authorization", "Bearer USER_TOKEN_abcdef")
        .send()
        .await
        .expect("listed");
    let printed = seen.lock().unwrap().clone();
    assert!(printed.contains("authorization"), "{printed}");
    assert!(!printed.contains("USER_TOKEN"), "{printed}");

    let builder = Client::builder("https://alice:s3cret@host.example/?x=1");
    assert!(!format!("{builder:?}").contains("s3cret"), "{builder:?}");
    let error = builder.build().expect_err("a query");
    assert!(error.to_string().contains("has a query"), "{error}");
    assert!(!error.to_string().contains("s3cret"), "{error}");
}

/// Every cause of an error, its own `Display` first: what `anyhow`'s `{:#}` prints.
fn chain(error: &dyn std::error::Error) -> Vec<String> {
    let mut texts = vec![error.to_string()];
    let mut source = error.source();
    while let Some(cause) = source {
        texts.push(cause.to_string());
        source = cause.source();
    }
    texts
}

/// A transport error returns its cause as `source()` (the `reqwest::Error`, and through it
/// the refused connection) and leaves it out of its `Display`: printing both, `anyhow`'s
/// `{:#}` printed every cause twice.
#[tokio::test]
async fn a_transport_error_prints_its_cause_once() {
    // Port 9 (discard) on loopback: nothing listens there.
    let client = Client::builder("http://127.0.0.1:9")
        .retry(RetryPolicy::none())
        .build()
        .expect("client");
    let error = client.list_runs().send().await.expect_err("refused");
    assert!(matches!(error, Error::Transport(_)), "{error:?}");
    let source = std::error::Error::source(&error).expect("the reqwest error is the source");
    assert!(source.is::<openwop_sdk::client::reqwest::Error>());
    let texts = chain(&error);
    let whole = texts.join(": ");
    assert!(whole.to_lowercase().contains("refused"), "{whole}");
    // Each cause once: no text of the chain repeats another's.
    for (i, text) in texts.iter().enumerate() {
        for later in &texts[i + 1..] {
            assert!(!text.contains(later.as_str()), "{text:?} repeats {later:?}");
        }
    }
}

/// A stream that gives up says why with the failure itself: its status, request id and
/// `Retry-After` stay readable (they were only text in the message).
#[tokio::test]
async fn a_stream_that_gives_up_keeps_its_last_failure() {
    let host = host().await;
    let path = "/runs/acme~2Frun_0123456789abcdef/events";
    let busy = || {
        Reply::error(503, "service_unavailable", "busy")
            .header("Retry-After", "0")
            .header("X-Request-Id", "r-9")
    };
    host.on(
        "GET",
        path,
        [Reply::events([event(1, "run.started")]), busy(), busy()],
    );
    let mut events = client(&host)
        .stream_run_events("acme/run_0123456789abcdef")
        .max_reconnects(1)
        .send()
        .await
        .expect("open");
    assert_eq!(events.next().await.unwrap().unwrap().sequence, 1);
    let end = tokio::time::timeout(Duration::from_secs(10), events.next())
        .await
        .expect("ends by itself")
        .expect("an item")
        .expect_err("gave up");
    assert!(matches!(end, Error::Stream { .. }), "{end:?}");
    assert_eq!(end.status(), Some(503));
    assert_eq!(end.request_id(), Some("r-9"));
    assert_eq!(end.retry_after(), Some(Duration::ZERO));
    // The last failure is the source, retryable as it is, and not repeated in the text.
    let last = std::error::Error::source(&end).expect("the last failure");
    assert!(last.to_string().contains("HTTP 503"), "{last}");
    assert!(!end.to_string().contains("HTTP 503"), "{end}");
    assert!(end.is_retryable());
}

/// A hook is part of its attempt: one that never finishes is cut by the attempt's timeout,
/// and by `max_elapsed` when no timeout is set, instead of holding the call forever.
#[tokio::test]
async fn a_hook_that_hangs_is_timed_out() {
    use openwop_sdk::client::{Hook, HookFuture, RequestInfo};

    struct Stuck;
    impl Hook for Stuck {
        fn on_request<'a>(
            &'a self,
            _: &'a mut openwop_sdk::client::reqwest::Request,
            _: &'a RequestInfo,
        ) -> HookFuture<'a> {
            Box::pin(std::future::pending())
        }
    }

    let host = host().await;
    host.on("GET", "/runs/x", [Reply::json(200, &snapshot(1))]);
    let client = Client::builder(host.url())
        .hook(Stuck)
        .build()
        .expect("client");
    let started = Instant::now();
    let error = tokio::time::timeout(
        Duration::from_secs(10),
        client
            .get_run("x")
            .timeout(Duration::from_millis(200))
            .retry(quick().max_elapsed(Duration::from_millis(600)))
            .send(),
    )
    .await
    .expect("the hook's wait is bounded")
    .expect_err("never sent");
    assert!(matches!(error, Error::TimedOut { .. }), "{error:?}");
    assert!(error.is_timeout(), "{error}");
    assert!(started.elapsed() < Duration::from_secs(2));
    // No per-attempt timeout: `max_elapsed` alone bounds the attempt while it runs.
    let started = Instant::now();
    let error = tokio::time::timeout(
        Duration::from_secs(10),
        client
            .get_run("x")
            .no_timeout()
            .retry(RetryPolicy::none().max_elapsed(Duration::from_millis(300)))
            .send(),
    )
    .await
    .expect("max_elapsed bounds an attempt too")
    .expect_err("never sent");
    assert!(error.is_timeout(), "{error}");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(host.hits("GET", "/runs/x"), 0);
}

/// A `201`'s `Location` is a reference resolved against the request's URL, as its
/// accessor's docs say: the host writes `/runs/…`, the caller gets a URL it can use.
#[tokio::test]
async fn a_location_is_resolved_against_the_request_url() {
    let host = host().await;
    host.on(
        "POST",
        "/runs",
        [Reply::json(201, &created()).header("Location", "/runs/acme~2Frun_0123456789abcdef")],
    );
    let client = client(&host);
    let answer = client
        .create_run()
        .workflow_id("echo")
        .send()
        .await
        .expect("created");
    assert_eq!(
        answer.location().as_deref(),
        Some(format!("{}/runs/acme~2Frun_0123456789abcdef", host.url()).as_str())
    );
    let raw = client
        .create_run()
        .workflow_id("echo")
        .send_raw()
        .await
        .expect("created");
    assert_eq!(
        raw.header("location"),
        Some("/runs/acme~2Frun_0123456789abcdef")
    );
    // A value made by hand knows no request URL: its `Location` is answered as written,
    // or resolved against the URL it is given.
    let mut headers = openwop_sdk::client::HeaderMap::new();
    headers.insert("location", "/runs/x".parse().unwrap());
    let made = openwop_sdk::client::ResponseValue::new(created(), 201, headers);
    assert_eq!(made.location().as_deref(), Some("/runs/x"));
    let made = made.with_url("https://host.example/base/runs".parse().unwrap());
    assert_eq!(
        made.location().as_deref(),
        Some("https://host.example/runs/x")
    );
}

/// A client is cheap to clone, as its docs say: two reference counts (the connection pool
/// and the settings), no base URL, key or header copied. A `with_*` on a clone changes the
/// clone only.
#[tokio::test]
async fn a_client_clone_copies_no_settings() {
    assert!(
        std::mem::size_of::<Client>() <= 2 * std::mem::size_of::<usize>(),
        "{} bytes",
        std::mem::size_of::<Client>()
    );
    let host = host().await;
    host.on("GET", "/runs/x", [Reply::json(200, &snapshot(1))]);
    let base = Client::builder(host.url())
        .api_key("k-1")
        .header("X-Team", "payments")
        .build()
        .expect("client");
    let other = base
        .clone()
        .with_header("X-Team", "billing")
        .and_then(|c| c.with_api_key("k-2"))
        .expect("valid");
    base.get_run("x").send().await.expect("a run");
    other.get_run("x").send().await.expect("a run");
    let sent = host.requests();
    assert_eq!(sent[0].header("x-team"), Some("payments"));
    assert_eq!(sent[1].header("x-team"), Some("billing"));
    assert_ne!(
        sent[0].header("authorization"),
        sent[1].header("authorization")
    );
    assert_eq!(base.base_url(), other.base_url());
}

/// A stream that gave up on silence (nothing received for its idle timeout) is a timeout,
/// as its last failure is when that was one.
#[tokio::test]
async fn a_stream_that_ends_on_silence_is_a_timeout() {
    let host = host().await;
    let path = "/runs/acme~2Frun_0123456789abcdef/events";
    host.on(
        "GET",
        path,
        [Reply::events_then_hang([event(1, "run.started")])],
    );
    let client = Client::builder(host.url())
        .retry(RetryPolicy::none())
        .build()
        .unwrap();
    let mut events = client
        .stream_run_events("acme/run_0123456789abcdef")
        .idle_timeout(Duration::from_millis(200))
        .max_reconnects(0)
        .send()
        .await
        .expect("open");
    assert_eq!(events.next().await.unwrap().unwrap().sequence, 1);
    let end = tokio::time::timeout(Duration::from_secs(10), events.next())
        .await
        .expect("the stream ends by itself")
        .expect("an item")
        .expect_err("it gave up");
    assert!(matches!(end, Error::Stream { .. }), "{end:?}");
    assert!(end.to_string().contains("nothing received"), "{end}");
    assert!(end.is_timeout() && end.is_retryable(), "{end}");
}

/// A hook may end a call with its own error: `Error::hook(e)`, whose `source()` is `e`
/// (an `io::Error` here), not retried, and the request is not sent.
#[tokio::test]
async fn a_hook_ends_a_call_with_its_own_error() {
    use openwop_sdk::client::{Hook, HookFuture, RequestInfo};

    struct NoToken;
    impl Hook for NoToken {
        fn on_request<'a>(
            &'a self,
            _: &'a mut openwop_sdk::client::reqwest::Request,
            _: &'a RequestInfo,
        ) -> HookFuture<'a> {
            Box::pin(async {
                Err(Error::hook(std::io::Error::new(
                    std::io::ErrorKind::PermissionDenied,
                    "the token store refused",
                )))
            })
        }
    }

    let host = host().await;
    host.on("GET", "/runs/x", [Reply::json(200, &snapshot(1))]);
    let client = Client::builder(host.url())
        .hook(NoToken)
        .retry(quick())
        .build()
        .expect("client");
    let error = client
        .get_run("x")
        .send()
        .await
        .expect_err("the hook refuses");
    assert!(matches!(error, Error::Hook(_)), "{error:?}");
    assert!(!error.is_retryable());
    let source = std::error::Error::source(&error).expect("the hook's error");
    let io = source
        .downcast_ref::<std::io::Error>()
        .expect("an io::Error");
    assert_eq!(io.kind(), std::io::ErrorKind::PermissionDenied);
    assert_eq!(error.to_string(), "a hook ended the call");
    assert_eq!(host.hits("GET", "/runs/x"), 0);
    assert!(std::mem::size_of::<Error>() <= 48);
}

/// An error is small: returning `Result<_, Error>` does not trip `clippy::result_large_err`
/// (128 bytes), and moving one costs little. Its large contents are boxed, and the
/// accessors still read them.
#[tokio::test]
async fn an_error_is_small_and_its_accessors_read_the_boxed_contents() {
    assert!(
        std::mem::size_of::<Error>() <= 48,
        "{} bytes",
        std::mem::size_of::<Error>()
    );
    let host = host().await;
    host.on(
        "GET",
        "/runs",
        [Reply::error(503, "service_unavailable", "busy")
            .header("Retry-After", "7")
            .header("X-Request-Id", "r-1")],
    );
    let client = Client::builder(host.url())
        .retry(RetryPolicy::none())
        .build()
        .expect("client");
    let error = client.list_runs().send().await.expect_err("503");
    assert_eq!(error.status(), Some(503));
    assert_eq!(error.request_id(), Some("r-1"));
    assert_eq!(error.retry_after(), Some(Duration::from_secs(7)));
    assert!(error.is_retryable());
    assert_eq!(
        error.headers().and_then(|h| h.get("x-request-id")).unwrap(),
        "r-1"
    );
    let Error::Api { envelope, .. } = &error else {
        panic!("{error:?}")
    };
    assert_eq!(envelope.message.as_str(), "busy");
}

/// A 2xx body larger than the client accepts fails the call with `TooLarge` (not retried:
/// the same request gets the same answer), unread.
#[tokio::test]
async fn a_body_past_the_limit_is_refused() {
    let host = host().await;
    let big = json!({"runs": [], "padding": "x".repeat(4096)});
    host.on("GET", "/runs", [Reply::json(200, &big)]);
    let client = Client::builder(host.url())
        .retry(quick())
        .max_body_size(1024)
        .build()
        .expect("client");
    let error = client.list_runs().send().await.expect_err("too large");
    assert!(
        matches!(error, Error::TooLarge { limit: 1024, .. }),
        "{error:?}"
    );
    assert!(!error.is_retryable());
    assert_eq!(host.hits("GET", "/runs"), 1);
    assert!(error.to_string().contains("1024"), "{error}");
    // The default is far above any real answer.
    assert_eq!(openwop_sdk::client::DEFAULT_MAX_BODY_SIZE, 32 << 20);
    let roomy = Client::builder(host.url()).build().expect("client");
    roomy
        .list_runs()
        .send()
        .await
        .expect("under the default limit");
}

/// `inputs(..)` and `metadata(..)` take anything that serialises (a `json!` value as
/// before, a map, your own type); a value that cannot be serialised as JSON fails `send()`
/// with `InvalidRequest`, and nothing is sent.
#[tokio::test]
async fn object_fields_take_anything_serialisable() {
    use std::collections::BTreeMap;

    let host = host().await;
    host.on("POST", "/runs", [Reply::json(201, &created())]);
    let inputs: BTreeMap<&str, u32> = [("n", 3)].into();
    client(&host)
        .create_run()
        .workflow_id("echo")
        .inputs(inputs)
        .metadata(json!({"team": "payments"}))
        .send()
        .await
        .expect("sent");
    let body = host.requests()[0].json().expect("a JSON body");
    assert_eq!(body["inputs"], json!({"n": 3}));
    assert_eq!(body["metadata"], json!({"team": "payments"}));
    // JSON object keys are strings: a map keyed by pairs does not serialise.
    let unserialisable: BTreeMap<(u8, u8), u8> = [((1, 2), 3)].into();
    let error = client(&host)
        .create_run()
        .workflow_id("echo")
        .inputs(unserialisable)
        .send()
        .await
        .expect_err("refused before sending");
    assert!(matches!(error, Error::InvalidRequest(_)), "{error:?}");
    assert!(error.to_string().contains("inputs"), "{error}");
    assert_eq!(host.hits("POST", "/runs"), 1);
}

/// `with_api_key` and `with_header` refuse what `build()` refuses, when they are called,
/// instead of a client whose every call then fails.
#[test]
fn with_api_key_and_with_header_check_as_build_does() {
    let client = Client::new("http://127.0.0.1:8080");
    assert!(matches!(
        client.clone().with_api_key("line\nbreak"),
        Err(Error::InvalidRequest(_))
    ));
    // An empty or blank key (an unset variable) would make every call a `401`.
    for blank in ["", "   ", "\t"] {
        assert!(matches!(
            client.clone().with_api_key(blank),
            Err(Error::InvalidRequest(_))
        ));
        assert!(matches!(
            Client::builder("http://127.0.0.1:8080")
                .api_key(blank)
                .build(),
            Err(Error::InvalidRequest(_))
        ));
    }
    assert!(matches!(
        client.clone().with_header("X-Team", "a\r\nb"),
        Err(Error::InvalidRequest(_))
    ));
    assert!(matches!(
        client.clone().with_header("bad name", "v"),
        Err(Error::InvalidRequest(_))
    ));
    let fine = client
        .with_api_key("k-1")
        .and_then(|c| c.with_header("X-Team", "payments"))
        .expect("valid");
    assert_eq!(fine.timeout(), Some(Duration::from_secs(30)));
    assert_eq!(
        openwop_sdk::client::DEFAULT_TIMEOUT,
        Duration::from_secs(30)
    );
}

/// Opening an event stream is part of a call: `max_elapsed` bounds it, where a host that
/// accepted the connection and said nothing held it for the idle timeout (75 s by default)
/// whatever the policy said.
#[tokio::test]
async fn max_elapsed_bounds_opening_an_event_stream() {
    let host = host().await;
    let path = "/runs/acme~2Frun_0123456789abcdef/events";
    host.on("GET", path, [Reply::hang()]);
    let client = Client::builder(host.url())
        .retry(quick().max_elapsed(Duration::from_millis(500)))
        .build()
        .expect("client");
    let opened = tokio::time::timeout(
        Duration::from_secs(10),
        client.stream_run_events("acme/run_0123456789abcdef").send(),
    )
    .await
    .expect("bounded by max_elapsed, not the 75 s idle timeout");
    let Err(error) = opened else {
        panic!("the host never answers")
    };
    assert!(error.is_timeout(), "{error:?}");
}

/// An error answer that is almost the envelope (an empty or missing `message`, a `details`
/// of the wrong shape) keeps its code: a `match` on the code works whatever the host got
/// wrong beside it. Only a body with no usable code is `Error::Http`.
#[tokio::test]
async fn an_error_body_with_a_code_keeps_it_whatever_else_is_off() {
    use openwop_sdk::models::ErrorCode;

    let host = host().await;
    let client = Client::builder(host.url())
        .retry(RetryPolicy::none())
        .build()
        .expect("client");
    let almost = [
        (
            404,
            json!({"error": "not_found", "message": ""}),
            ErrorCode::NotFound,
        ),
        (
            429,
            json!({"error": "rate_limited"}),
            ErrorCode::RateLimited,
        ),
        (
            409,
            json!({"error": "run_state_conflict", "message": "no", "details": {"runStatus": 5}}),
            ErrorCode::RunStateConflict,
        ),
        (
            400,
            json!({"error": "acme.quota", "message": null, "details": "see the docs"}),
            ErrorCode::from("acme.quota"),
        ),
    ];
    for (status, body, code) in almost {
        host.on("GET", "/runs", [Reply::json(status, &body)]);
        let err = client.list_runs().send().await.unwrap_err();
        match &err {
            Error::Api {
                status: s,
                code: c,
                envelope,
                ..
            } => {
                assert_eq!((*s, c), (status, &code), "{body}");
                assert!(!envelope.message.is_empty(), "{body}");
            }
            other => panic!("{body}: the code is lost: {other:?}"),
        }
        // The host's own words when it gave some, else the status's reason phrase.
        let message = err.message().unwrap();
        match body["message"].as_str().filter(|m| !m.is_empty()) {
            Some(given) => assert_eq!(message, given),
            None => assert_eq!(
                message,
                reqwest_reason(status),
                "{body}: a message for people"
            ),
        }
        assert!(
            err.to_string()
                .starts_with(&format!("HTTP {status} {code}: ")),
            "{err}"
        );
    }
    let not_envelopes = [
        json!({"message": "no code"}),
        json!({"error": "", "message": ""}),
        json!({"error": 42, "message": "a code that is not text"}),
        json!(["not", "an", "object"]),
    ];
    for body in not_envelopes {
        host.on("GET", "/runs", [Reply::json(502, &body)]);
        let err = client.list_runs().send().await.unwrap_err();
        assert!(
            matches!(err, Error::Http { status: 502, .. }),
            "{body}: {err:?}"
        );
    }
}

/// The reason phrase of a status, as the SDK's reqwest knows it.
fn reqwest_reason(status: u16) -> &'static str {
    openwop_sdk::client::reqwest::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("")
}

/// The scripted host answers by query too: a route given pairs answers only a request whose
/// query is exactly those pairs (in any order, percent-decoded); a route without pairs
/// answers every other request to its path.
#[tokio::test]
async fn the_scripted_host_can_match_on_the_query() {
    use openwop_sdk::models::RunStatus;

    let host = host().await;
    host.on("GET", "/runs", [Reply::json(200, &json!({"runs": []}))]);
    host.on_query(
        "GET",
        "/runs",
        [("workflowId", "acme/echo 2"), ("status", "completed")],
        [Reply::json(200, &json!({"runs": [snapshot(1)]}))],
    );
    let client = client(&host);
    let listed = |workflow: &'static str, limit: Option<u64>| {
        let mut call = client
            .list_runs()
            .workflow_id(workflow)
            .status(RunStatus::Completed);
        if let Some(limit) = limit {
            call = call.limit(limit);
        }
        async move { call.send().await.expect("listed").runs.len() }
    };
    assert_eq!(listed("acme/echo 2", None).await, 1);
    // One pair more, or another value, is another query.
    assert_eq!(listed("acme/echo 2", Some(5)).await, 0);
    assert_eq!(listed("acme/echo", None).await, 0);
    assert_eq!(client.list_runs().send().await.unwrap().runs.len(), 0);
    let sent = &host.requests()[0];
    assert!(sent.query.as_deref().unwrap().contains("%2F"), "{sent:?}");
    let mut pairs = sent.query_pairs();
    pairs.sort();
    assert_eq!(
        pairs,
        [
            ("status".to_owned(), "completed".to_owned()),
            ("workflowId".to_owned(), "acme/echo 2".to_owned()),
        ]
    );
    assert_eq!(
        host.hits_query(
            "GET",
            "/runs",
            [("status", "completed"), ("workflowId", "acme/echo 2")]
        ),
        1
    );
    assert_eq!(host.hits("GET", "/runs"), 4);
}

/// A plain `get_run` answers the run itself: no `304` can answer a read that names no ETag,
/// so there is no `NotModified` to match. `if_none_match(..)` makes it the conditional read,
/// whose `send()` answers `Conditional`. A `304` to a read made conditional by hand (a raw
/// `If-None-Match` header) is an error that says what to use.
#[tokio::test]
async fn a_plain_read_answers_the_run_and_a_conditional_one_may_be_not_modified() {
    use openwop_sdk::client::Conditional;
    use openwop_sdk::models::RunSnapshot;

    let host = host().await;
    let run = "acme/run_0123456789abcdef";
    let path = "/runs/acme~2Frun_0123456789abcdef";
    host.on(
        "GET",
        path,
        [
            Reply::json(200, &snapshot(0)).header("ETag", "\"e1\""),
            Reply::status(304).header("ETag", "\"e1\""),
            Reply::json(200, &snapshot(0)).header("ETag", "\"e2\""),
            Reply::status(304),
        ],
    );
    let client = client(&host);
    let answer = client.get_run(run).send().await.expect("the run");
    let etag = answer.etag().expect("an ETag").to_owned();
    let read: RunSnapshot = answer.into_inner();
    assert_eq!(read.status.as_str(), "completed");
    assert_eq!(host.requests()[0].header("if-none-match"), None);

    let again = client
        .get_run(run)
        .if_none_match(&etag)
        .send()
        .await
        .expect("a 304 is an answer");
    assert!(again.is_not_modified());
    assert_eq!(again.status(), 304);
    assert_eq!(host.requests()[1].header("if-none-match"), Some("\"e1\""));
    match client
        .get_run(run)
        .if_none_match(&etag)
        .send()
        .await
        .expect("changed")
        .into_inner()
    {
        Conditional::Fresh(changed) => assert_eq!(changed.status.as_str(), "completed"),
        Conditional::NotModified => panic!("the host answered 200"),
    }

    let err = client
        .get_run(run)
        .header("If-None-Match", "\"e2\"")
        .send()
        .await
        .expect_err("a plain read cannot answer NotModified");
    assert_eq!(err.status(), Some(304));
    assert!(err.to_string().contains("if_none_match"), "{err}");
    assert!(!err.to_string().contains("redirect"), "{err}");
    // The convenience read is the plain one.
    host.on("GET", path, [Reply::json(200, &snapshot(0))]);
    assert_eq!(
        client
            .run_snapshot(run)
            .await
            .expect("snapshot")
            .status
            .as_str(),
        "completed"
    );
}
