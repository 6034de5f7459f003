//! Event streams and paged lists against a host that ends things oddly (the `testkit`
//! scripted host): a run's stream whose end cannot be confirmed, a `204` answer to a
//! stream, a cursor the host repeats, a long run of empty pages, and resuming a listing
//! read item by item.
// openwop-codegen: requires operation listRuns
// openwop-codegen: requires operation streamRunEvents
// openwop-codegen: requires operation getRun
// openwop-codegen: requires operation resolveInterruptByRun
// openwop-codegen: requires model RunEvent
// openwop-codegen: requires model RunEventPayload
// openwop-codegen: requires model RunEventType
// openwop-codegen: requires model RunSnapshot
// openwop-codegen: requires model InterruptRequested
// openwop-codegen: requires model NodeSuspended
// openwop-codegen: requires model InterruptResolved
// openwop-codegen: requires model ResolveInterruptResponse

use std::time::{Duration, Instant};

use openwop_sdk::client::testkit::{Reply, ScriptedHost};
use openwop_sdk::client::{Client, Error, EventStream, RetryPolicy};
use openwop_sdk::models::RunEvent;
use serde_json::{Value, json};

/// A scripted host on a loopback port below 32768 (the test rules keep the ephemeral range
/// for the system).
async fn host() -> ScriptedHost {
    for port in 21800..22100 {
        if let Ok(host) = ScriptedHost::bind(("127.0.0.1", port)).await {
            return host;
        }
    }
    panic!("no free port in 21800..22100");
}

fn client(host: &ScriptedHost) -> Client {
    Client::builder(host.url())
        .api_key("k-1")
        .retry(
            RetryPolicy::default()
                .initial_backoff(Duration::from_millis(5))
                .max_backoff(Duration::from_millis(20)),
        )
        .build()
        .expect("client")
}

const RUN: &str = "acme/run_0123456789abcdef";
const RUN_PATH: &str = "/runs/acme~2Frun_0123456789abcdef";
const EVENTS_PATH: &str = "/runs/acme~2Frun_0123456789abcdef/events";

fn snapshot(n: u32, status: &str) -> Value {
    json!({
        "runId": format!("acme/run_0123456789abcd{n:02}"),
        "workflowId": "echo",
        "status": status,
        "owner": {"tenant": "acme", "subject": {
            "issuer": "openwop:api-key", "subjectId": "key-1", "tenant": "acme",
            "lane": "api-key", "kind": "user"}},
        "eventLogSchemaVersion": 3
    })
}

fn this_run(status: &str) -> Value {
    let mut run = snapshot(0, status);
    run["runId"] = json!(RUN);
    run
}

fn data(sequence: u64, kind: &str) -> Value {
    json!({
        "eventId": format!("evt_0123456789abcd{sequence:02}"),
        "runId": RUN,
        "type": kind,
        "payload": {},
        "timestamp": "2026-12-06T00:00:00Z",
        "sequence": sequence,
        "schemaVersion": 1
    })
}

fn event(sequence: u64, kind: &str) -> String {
    let data = data(sequence, kind);
    format!("id: {sequence}\nevent: {kind}\ndata: {data}\n\n")
}

/// Every item of a stream, within `limit` (a stream that does not end fails the test).
async fn drain(
    events: &mut EventStream<RunEvent>,
    limit: Duration,
) -> Vec<Result<RunEvent, Error>> {
    tokio::time::timeout(limit, async {
        let mut items = Vec::new();
        while let Some(item) = events.next().await {
            items.push(item);
        }
        items
    })
    .await
    .expect("the stream ends by itself")
}

/// The helpers that follow a run stop reading at its terminal event and ask `getRun` once,
/// whatever the stream does next (here: every reconnection is dropped).
#[tokio::test]
async fn following_a_run_stops_at_its_terminal_event() {
    let host = host().await;
    let client = client(&host);
    for (kind, status) in [
        ("run.completed", "completed"),
        ("run.failed", "failed"),
        ("run.cancelled", "cancelled"),
    ] {
        host.on(
            "GET",
            EVENTS_PATH,
            [
                Reply::events([event(1, "run.started"), event(2, kind)]),
                Reply::drop_connection(),
            ],
        );
        host.on("GET", RUN_PATH, [Reply::json(200, &this_run(status))]);
        let started = Instant::now();
        let mut seen = Vec::new();
        let finished = tokio::time::timeout(
            Duration::from_secs(10),
            client
                .follow_run(RUN)
                .on_event(|e| seen.push(e.sequence))
                .send(),
        )
        .await
        .expect("follow_run ends")
        .expect("the final snapshot");
        assert_eq!(finished.status.as_str(), status);
        assert_eq!(seen, [1, 2]);
        assert_eq!(host.hits("GET", RUN_PATH), 1, "{kind}: one getRun");
        assert_eq!(host.hits("GET", EVENTS_PATH), 1, "{kind}: no reconnection");
        assert!(started.elapsed() < Duration::from_secs(3));
    }

    host.on(
        "GET",
        EVENTS_PATH,
        [
            Reply::events([event(1, "run.started"), event(2, "run.completed")]),
            Reply::drop_connection(),
        ],
    );
    host.on("GET", RUN_PATH, [Reply::json(200, &this_run("completed"))]);
    let finished = tokio::time::timeout(Duration::from_secs(10), client.wait_until_terminal(RUN))
        .await
        .expect("wait_until_terminal ends")
        .expect("the final snapshot");
    assert_eq!(finished.status.as_str(), "completed");
    assert_eq!(host.hits("GET", RUN_PATH), 1);

    host.on(
        "GET",
        EVENTS_PATH,
        [
            Reply::events([event(1, "run.started"), event(2, "run.completed")]),
            Reply::drop_connection(),
        ],
    );
    host.on("GET", RUN_PATH, [Reply::json(200, &this_run("completed"))]);
    let finished = tokio::time::timeout(
        Duration::from_secs(10),
        client.run_to_end(RUN, |_| json!({"action": "accept"}), |_| {}),
    )
    .await
    .expect("run_to_end ends")
    .expect("the final snapshot");
    assert_eq!(finished.status.as_str(), "completed");
    assert_eq!(host.hits("GET", RUN_PATH), 1);
}

/// A run's stream ends with its terminal event (named, or unnamed with its `type` in the
/// data): nothing can follow it, so no connection checks for more, and whatever the host
/// would answer one (a dropped connection, a refusal, silence) does not matter.
#[tokio::test]
async fn a_failed_check_after_the_terminal_event_ends_the_stream_quietly() {
    let host = host().await;
    let client = client(&host);
    let unnamed = format!("id: 2\ndata: {}\n\n", data(2, "run.failed"));
    for (last, check) in [
        (event(2, "run.completed"), Reply::drop_connection()),
        (event(2, "run.cancelled"), Reply::hang()),
        (
            event(2, "run.completed"),
            Reply::error(404, "not_found", "no such run"),
        ),
        (unnamed, Reply::drop_connection()),
    ] {
        host.on(
            "GET",
            EVENTS_PATH,
            [Reply::events([event(1, "run.started"), last]), check],
        );
        let mut events = client
            .stream_run_events(RUN)
            .idle_timeout(Duration::from_millis(500))
            .send()
            .await
            .expect("open");
        let items = drain(&mut events, Duration::from_secs(10)).await;
        let seen: Vec<u64> = items
            .into_iter()
            .map(|item| item.expect("no error").sequence)
            .collect();
        assert_eq!(seen, [1, 2]);
        assert_eq!(events.reconnects(), 0);
        assert_eq!(
            host.hits("GET", EVENTS_PATH),
            1,
            "nothing after the terminal event"
        );
    }
}

/// A clean close before the run's end (a proxy cutting a long stream) is still resumed,
/// through a failed reconnection; and one that can never be resumed is still an error.
#[tokio::test]
async fn a_clean_close_mid_run_still_resumes_or_fails() {
    let host = host().await;
    let client = client(&host);
    host.on(
        "GET",
        EVENTS_PATH,
        [
            Reply::events([event(1, "run.started")]),
            Reply::drop_connection(),
            Reply::events([event(2, "run.completed")]),
            Reply::drop_connection(),
        ],
    );
    let mut events = client.stream_run_events(RUN).send().await.expect("open");
    let items = drain(&mut events, Duration::from_secs(10)).await;
    let seen: Vec<u64> = items
        .into_iter()
        .map(|item| item.expect("no error").sequence)
        .collect();
    assert_eq!(seen, [1, 2]);
    // The terminal event ends the stream: nothing after it is asked for.
    let resumed: Vec<Option<String>> = host
        .requests()
        .iter()
        .map(|r| r.header("last-event-id").map(str::to_owned))
        .collect();
    assert_eq!(resumed, [None, Some("1".into()), Some("1".into())]);

    host.on(
        "GET",
        EVENTS_PATH,
        [
            Reply::events([event(1, "run.started")]),
            Reply::drop_connection(),
        ],
    );
    let mut events = client
        .stream_run_events(RUN)
        .max_reconnects(1)
        .send()
        .await
        .expect("open");
    let items = drain(&mut events, Duration::from_secs(10)).await;
    assert!(
        matches!(items[0], Ok(ref e) if e.sequence == 1),
        "{items:?}"
    );
    assert!(
        matches!(items.last(), Some(Err(Error::Stream { .. }))),
        "{items:?}"
    );
}

/// `204 No Content` is the host's "stop reconnecting": the stream ends, whether it is the
/// first answer or the answer to a reconnection.
#[tokio::test]
async fn a_204_ends_the_stream() {
    let host = host().await;
    let client = client(&host);
    host.on("GET", EVENTS_PATH, [Reply::status(204)]);
    let mut events = client
        .stream_run_events(RUN)
        .send()
        .await
        .expect("a 204 opens a stream that has ended");
    assert!(drain(&mut events, Duration::from_secs(5)).await.is_empty());
    assert_eq!(host.hits("GET", EVENTS_PATH), 1);

    host.on(
        "GET",
        EVENTS_PATH,
        [
            Reply::events_then_hang([event(1, "run.started")]),
            Reply::status(204),
        ],
    );
    let mut events = client
        .stream_run_events(RUN)
        .idle_timeout(Duration::from_millis(300))
        .send()
        .await
        .expect("open");
    let items = drain(&mut events, Duration::from_secs(10)).await;
    let seen: Vec<u64> = items
        .into_iter()
        .map(|item| item.expect("no error").sequence)
        .collect();
    assert_eq!(seen, [1]);
    assert_eq!(host.hits("GET", EVENTS_PATH), 2);
}

/// A host that answers a page with the cursor that read it would be read forever: the
/// page is yielded, then an error, and the listing ends.
#[tokio::test]
async fn a_repeated_cursor_ends_the_listing_with_an_error() {
    let host = host().await;
    let client = client(&host);
    host.on(
        "GET",
        "/runs",
        [Reply::json(
            200,
            &json!({"runs": [snapshot(1, "completed")], "nextCursor": "same"}),
        )],
    );
    let mut runs = client.list_runs().stream();
    let items = tokio::time::timeout(Duration::from_secs(10), async {
        let mut items = Vec::new();
        while let Some(item) = runs.next().await {
            items.push(item);
            if items.len() == 10 {
                break;
            }
        }
        items
    })
    .await
    .expect("the listing ends");
    let shape: Vec<bool> = items.iter().map(Result::is_ok).collect();
    assert_eq!(shape, [true, true, false], "the page twice, then an error");
    let error = items[2].as_ref().unwrap_err();
    assert!(matches!(error, Error::Decode { .. }), "{error:?}");
    assert!(
        error.to_string().contains("repeated the cursor `same`"),
        "{error}"
    );
    assert_eq!(host.hits("GET", "/runs"), 2);
    assert!(runs.next().await.is_none());

    host.on(
        "GET",
        "/runs",
        [Reply::json(200, &json!({"runs": [], "nextCursor": "same"}))],
    );
    let mut pages = client.list_runs().pages();
    let first = pages.next().await.unwrap().unwrap();
    assert_eq!(
        first.next_cursor.as_ref().map(|c| c.to_string()).as_deref(),
        Some("same")
    );
    assert!(pages.next().await.unwrap().is_ok());
    assert_eq!(pages.cursor(), Some(Some("same")));
    assert!(pages.next().await.unwrap().is_err());
    assert!(pages.next().await.is_none());
    assert_eq!(
        pages.cursor(),
        Some(Some("same")),
        "where the listing stopped"
    );
    assert_eq!(host.hits("GET", "/runs"), 2);

    // Empty pages with a repeated cursor: one `next()` answers instead of asking forever.
    let mut runs = client.list_runs().stream();
    let item = tokio::time::timeout(Duration::from_secs(10), runs.next())
        .await
        .expect("next() answers");
    assert!(matches!(item, Some(Err(Error::Decode { .. }))), "{item:?}");
    assert_eq!(host.hits("GET", "/runs"), 4);
}

/// Empty pages with fresh cursors are followed, but a long run of them ends `next()` with
/// an error instead of asking page after page without bound; the listing resumes from
/// `cursor()`.
#[tokio::test]
async fn a_long_run_of_empty_pages_ends_with_an_error_that_resumes() {
    let host = host().await;
    let client = client(&host);
    let mut replies: Vec<Reply> = (1..=150)
        .map(|n| Reply::json(200, &json!({"runs": [], "nextCursor": format!("c{n}")})))
        .collect();
    replies.push(Reply::json(
        200,
        &json!({"runs": [snapshot(1, "completed")]}),
    ));
    host.on("GET", "/runs", replies);
    let mut runs = client.list_runs().stream();
    let item = tokio::time::timeout(Duration::from_secs(60), runs.next())
        .await
        .expect("next() answers");
    let Some(Err(error)) = item else {
        panic!("{item:?}")
    };
    assert!(matches!(error, Error::Decode { .. }), "{error:?}");
    assert_eq!(host.hits("GET", "/runs"), 100);
    assert_eq!(runs.cursor(), Some(Some("c100")));
    assert!(runs.next().await.is_none());

    let mut runs = client.list_runs().cursor("c100").stream();
    let run = runs.next().await.expect("an item").expect("a run");
    assert_eq!(run.run_id.as_str(), "acme/run_0123456789abcd01");
    assert!(runs.next().await.is_none());
    assert_eq!(host.hits("GET", "/runs"), 151);
}

/// `Items::cursor()` names the page the next item comes from, so a listing resumed from it
/// (skipping `yielded_from_page()` items) loses nothing that was buffered.
#[tokio::test]
async fn items_resume_from_the_page_of_the_next_item() {
    let host = host().await;
    let client = client(&host);
    host.on(
        "GET",
        "/runs",
        [
            Reply::json(
                200,
                &json!({"runs": [snapshot(1, "completed")], "nextCursor": "c2"}),
            ),
            Reply::json(
                200,
                &json!({"runs": [snapshot(2, "completed"), snapshot(3, "completed")],
                        "nextCursor": "c3"}),
            ),
            Reply::json(200, &json!({"runs": [snapshot(4, "completed")]})),
        ],
    );
    let mut runs = client.list_runs().stream();
    assert_eq!(runs.cursor(), Some(None), "the first page");
    let mut ids = Vec::new();
    for _ in 0..2 {
        ids.push(runs.next().await.unwrap().unwrap().run_id.to_string());
    }
    // Run 3 is buffered: the page cursor is past it, `cursor()` is not.
    assert_eq!(runs.pages().cursor(), Some(Some("c3")));
    assert_eq!(runs.cursor(), Some(Some("c2")));
    assert_eq!(runs.yielded_from_page(), 1);

    host.on(
        "GET",
        "/runs",
        [
            Reply::json(
                200,
                &json!({"runs": [snapshot(2, "completed"), snapshot(3, "completed")],
                        "nextCursor": "c3"}),
            ),
            Reply::json(200, &json!({"runs": [snapshot(4, "completed")]})),
        ],
    );
    let cursor = runs.cursor().flatten().unwrap().to_owned();
    let skip = runs.yielded_from_page();
    let mut resumed = client.list_runs().cursor(&cursor).stream();
    let mut n = 0;
    while let Some(run) = resumed.next().await {
        n += 1;
        if n > skip {
            ids.push(run.unwrap().run_id.to_string());
        }
    }
    assert_eq!(resumed.cursor(), None, "the listing is over");
    let tails: Vec<&str> = ids.iter().map(|id| &id[id.len() - 2..]).collect();
    assert_eq!(tails, ["01", "02", "03", "04"]);
}

/// `follow_run` takes the options the event stream takes: where to resume (`Last-Event-ID`),
/// the idle timeout, how many failed reconnections end it, a header for every call it makes
/// (a gateway's per-user token) and the retry policy.
#[tokio::test]
async fn following_a_run_takes_the_stream_options() {
    let host = host().await;
    let client = client(&host);
    host.on(
        "GET",
        EVENTS_PATH,
        [
            // Silent after its first event: the short idle timeout reconnects it.
            Reply::events_then_hang([event(3, "node.started")]),
            Reply::events([event(4, "run.completed")]),
        ],
    );
    host.on("GET", RUN_PATH, [Reply::json(200, &this_run("completed"))]);
    let mut seen = Vec::new();
    let started = Instant::now();
    let finished = tokio::time::timeout(
        Duration::from_secs(10),
        client
            .follow_run(RUN)
            .last_event_id("2")
            .idle_timeout(Duration::from_millis(300))
            .header("X-On-Behalf-Of", "user-7")
            .retry(RetryPolicy::none())
            .on_event(|e| seen.push(e.sequence))
            .send(),
    )
    .await
    .expect("follow_run ends")
    .expect("the final snapshot");
    assert_eq!(finished.status.as_str(), "completed");
    assert_eq!(seen, [3, 4]);
    assert!(started.elapsed() < Duration::from_secs(5));
    let requests = host.requests();
    let resumed: Vec<Option<&str>> = requests
        .iter()
        .filter(|r| r.path == EVENTS_PATH)
        .map(|r| r.header("last-event-id"))
        .collect();
    assert_eq!(resumed, [Some("2"), Some("3")]);
    assert!(
        requests
            .iter()
            .all(|r| r.header("x-on-behalf-of") == Some("user-7")),
        "{requests:#?}"
    );

    // `reconnect_for` ends following a host that keeps failing (the default waits 120 s),
    // and `max_reconnects` too: each stream's failures in a row, and each stream that
    // could not be replaced, count.
    for limited in [
        client
            .follow_run(RUN)
            .reconnect_for(Duration::from_millis(400)),
        client.follow_run(RUN).max_reconnects(1),
    ] {
        host.on(
            "GET",
            EVENTS_PATH,
            [
                Reply::events([event(1, "run.started")]),
                Reply::drop_connection(),
            ],
        );
        host.on("GET", RUN_PATH, [Reply::json(200, &this_run("running"))]);
        let started = Instant::now();
        let ended = tokio::time::timeout(Duration::from_secs(10), limited.send())
            .await
            .expect("ends by itself");
        let error = ended.expect_err("the host never recovers");
        assert!(error.is_retryable(), "{error:?}");
        assert!(started.elapsed() < Duration::from_secs(5));
    }
}

/// A stream outlives a host that is down longer than any fixed number of reconnections
/// takes (a restart, a deploy): it keeps trying for `reconnect_for` (120 s by default) of
/// failures in a row, then gives up with the last failure as the error's source. The old
/// budget (8 reconnections) gave up after ~25 s.
#[tokio::test]
async fn a_stream_outlives_a_restart_within_its_time_budget() {
    let host = host().await;
    let client = client(&host);
    // `retry: 1`: the host asks for 1 ms between reconnections, so twelve failed ones take
    // a moment here.
    let mut replies = vec![Reply::events([
        "retry: 1\n\n".to_owned(),
        event(1, "run.started"),
    ])];
    replies.extend((0..12).map(|_| Reply::drop_connection()));
    replies.push(Reply::events([event(2, "run.completed")]));
    host.on("GET", EVENTS_PATH, replies);
    let mut events = client.stream_run_events(RUN).send().await.expect("open");
    let items = drain(&mut events, Duration::from_secs(10)).await;
    let seen: Vec<u64> = items
        .into_iter()
        .map(|item| item.expect("no error").sequence)
        .collect();
    assert_eq!(seen, [1, 2]);
    assert_eq!(host.hits("GET", EVENTS_PATH), 14);

    // Past its budget in time, or in count when one is set, it gives up.
    for limit in [
        client
            .stream_run_events(RUN)
            .reconnect_for(Duration::from_millis(300)),
        client.stream_run_events(RUN).max_reconnects(3),
    ] {
        host.on(
            "GET",
            EVENTS_PATH,
            [
                Reply::events(["retry: 1\n\n".to_owned(), event(1, "run.started")]),
                Reply::drop_connection(),
            ],
        );
        let mut events = limit.send().await.expect("open");
        let items = drain(&mut events, Duration::from_secs(10)).await;
        assert_eq!(items.len(), 2, "{items:?}");
        let Err(end) = &items[1] else {
            panic!("{items:?}")
        };
        assert!(matches!(end, Error::Stream { .. }), "{end:?}");
        let last = std::error::Error::source(end).expect("the last failure");
        assert!(last.is::<Error>(), "{last:?}");
        assert!(end.is_retryable());
    }
    assert_eq!(
        host.hits("GET", EVENTS_PATH),
        5,
        "the first connection, then 4 failures in a row"
    );
}

/// Following a run goes on after its stream gives up (here: after one failed reconnection,
/// `max_reconnects(1)`): it opens the stream again, after the last event read, within the
/// reconnection budget, and an event the host sends again is not seen twice.
#[tokio::test]
async fn following_a_run_reopens_a_stream_that_gave_up() {
    let host = host().await;
    let client = client(&host);
    host.on(
        "GET",
        EVENTS_PATH,
        [
            Reply::events(["retry: 1\n\n".to_owned(), event(1, "run.started")]),
            Reply::drop_connection(),
            Reply::drop_connection(),
            // Opened again: the host repeats event 1.
            Reply::events([event(1, "run.started"), event(2, "run.completed")]),
        ],
    );
    host.on("GET", RUN_PATH, [Reply::json(200, &this_run("completed"))]);
    let mut seen = Vec::new();
    let finished = tokio::time::timeout(
        Duration::from_secs(10),
        client
            .follow_run(RUN)
            .max_reconnects(1)
            .on_event(|e| seen.push(e.sequence))
            .send(),
    )
    .await
    .expect("follow_run ends")
    .expect("reopened after the stream gave up");
    assert_eq!(finished.status.as_str(), "completed");
    assert_eq!(seen, [1, 2]);
    let resumed: Vec<Option<String>> = host
        .requests()
        .iter()
        .filter(|r| r.path == EVENTS_PATH)
        .map(|r| r.header("last-event-id").map(str::to_owned))
        .collect();
    assert_eq!(
        resumed,
        [None, Some("1".into()), Some("1".into()), Some("1".into())]
    );
}

/// A host that ignores `Last-Event-ID` and sends the whole log again on every connection:
/// the stream waits before reconnecting after a clean close (the host's `retry:`, else
/// 250 ms, growing), drops the run events it has already read (by `sequence`), and ends
/// when a resumption brings nothing new, instead of reconnecting at once forever and
/// yielding every event again each time.
#[tokio::test]
async fn a_host_that_replays_its_log_is_not_hammered_and_sends_no_duplicates() {
    let host = host().await;
    let client = client(&host);
    host.on(
        "GET",
        EVENTS_PATH,
        [Reply::events([
            "retry: 100\n\n".to_owned(),
            event(1, "run.started"),
            event(2, "node.started"),
        ])],
    );
    let started = Instant::now();
    let mut events = client.stream_run_events(RUN).send().await.expect("open");
    let items = drain(&mut events, Duration::from_secs(5)).await;
    let seen: Vec<u64> = items
        .into_iter()
        .map(|item| item.expect("no error").sequence)
        .collect();
    assert_eq!(seen, [1, 2]);
    assert_eq!(host.hits("GET", EVENTS_PATH), 2);
    assert!(started.elapsed() >= Duration::from_millis(100));

    // The terminal event ends the stream, even when the host sends it twice.
    host.on(
        "GET",
        EVENTS_PATH,
        [Reply::events([
            event(1, "run.started"),
            event(2, "run.completed"),
            event(2, "run.completed"),
        ])],
    );
    let mut events = client.stream_run_events(RUN).send().await.expect("open");
    let items = drain(&mut events, Duration::from_secs(5)).await;
    let seen: Vec<u64> = items
        .into_iter()
        .map(|item| item.expect("no error").sequence)
        .collect();
    assert_eq!(seen, [1, 2]);
    assert_eq!(host.hits("GET", EVENTS_PATH), 1);
}

/// An event larger than the client accepts ends the stream with `TooLarge`, whether it
/// arrives whole or as a line that never ends.
#[tokio::test]
async fn an_event_past_the_limit_ends_the_stream() {
    let host = host().await;
    let client = Client::builder(host.url())
        .max_event_size(1024)
        .build()
        .expect("client");
    let big = format!("id: 1\ndata: {}\n\n", "x".repeat(4096));
    let endless = format!("data: {}", "y".repeat(4096));
    for chunks in [vec![event(1, "run.started"), big], vec![endless]] {
        host.on("GET", EVENTS_PATH, [Reply::events_then_hang(chunks)]);
        let mut events = client.stream_run_events(RUN).send().await.expect("open");
        let items = drain(&mut events, Duration::from_secs(5)).await;
        let last = items.last().expect("an item");
        assert!(
            matches!(last, Err(Error::TooLarge { limit: 1024, .. })),
            "{items:?}"
        );
    }
    assert_eq!(openwop_sdk::client::DEFAULT_MAX_EVENT_SIZE, 8 << 20);
}

/// An `interrupt.requested` event at `node`.
fn interrupt(sequence: u64, node: &str) -> String {
    let mut data = data(sequence, "interrupt.requested");
    data["nodeId"] = json!(node);
    data["payload"] = json!({"kind": "approval", "key": node, "data": {
        "artifactId": "a", "artifactType": "run", "title": "Approve?",
        "actions": ["accept", "reject"]}});
    format!("id: {sequence}\nevent: interrupt.requested\ndata: {data}\n\n")
}

fn resolved() -> Value {
    json!({"runId": RUN, "nodeId": "a", "status": "running"})
}

/// An `interrupt.requested` event at `node` whose approval is titled `title`.
fn interrupt_titled(sequence: u64, node: &str, title: &str) -> String {
    let mut data = data(sequence, "interrupt.requested");
    data["nodeId"] = json!(node);
    data["payload"] = json!({"kind": "approval", "key": node, "data": {
        "artifactId": "a", "artifactType": "run", "title": title,
        "actions": ["accept", "reject"]}});
    format!("id: {sequence}\nevent: interrupt.requested\ndata: {data}\n\n")
}

/// The interrupt id `n`, as a host mints them.
fn interrupt_id(n: u32) -> String {
    format!("acme/interrupt_00000000{n:02}")
}

/// The `node.suspended` that follows an `interrupt.requested`, naming its id.
fn suspended(sequence: u64, node: &str, id: u32) -> String {
    let mut data = data(sequence, "node.suspended");
    data["nodeId"] = json!(node);
    data["payload"] = json!({"nodeId": node, "interruptId": interrupt_id(id), "kind": "approval"});
    format!("id: {sequence}\nevent: node.suspended\ndata: {data}\n\n")
}

/// An `interrupt.resolved` of interrupt `id` at `node`.
fn interrupt_resolved(sequence: u64, node: &str, id: u32) -> String {
    let mut data = data(sequence, "interrupt.resolved");
    data["nodeId"] = json!(node);
    data["payload"] = json!({"nodeId": node, "interruptId": interrupt_id(id),
        "kind": "approval", "resumeValue": {"action": "accept"}});
    format!("id: {sequence}\nevent: interrupt.resolved\ndata: {data}\n\n")
}

/// This run waiting on the interrupts `open` (`(node, id)`).
fn waiting(open: &[(&str, u32)]) -> Value {
    let mut run = this_run("waiting-approval");
    run["interrupts"] = open
        .iter()
        .map(|(node, id)| json!({"interruptId": interrupt_id(*id), "nodeId": node, "kind": "approval"}))
        .collect();
    run
}

/// An answerer may decline (`None` leaves the interrupt for a person) and may be async;
/// `on_event` may stop following early (`ControlFlow::Break`), and `send()` then answers
/// the run as it is.
#[tokio::test]
async fn interrupts_may_be_declined_or_answered_later_and_following_stopped() {
    use std::ops::ControlFlow;

    let host = host().await;
    let client = client(&host);
    let a = format!("{RUN_PATH}/interrupts/a");
    let b = format!("{RUN_PATH}/interrupts/b");
    let script = || {
        [Reply::events([
            interrupt(1, "a"),
            suspended(2, "a", 1),
            interrupt(3, "b"),
            suspended(4, "b", 2),
            event(5, "run.completed"),
        ])]
    };
    let open = waiting(&[("a", 1), ("b", 2)]);
    host.on("GET", EVENTS_PATH, script());
    host.on("POST", &a, [Reply::json(200, &resolved())]);
    host.on("POST", &b, [Reply::json(200, &resolved())]);
    // Is `a` open, is `b` open, is the run finished.
    host.on(
        "GET",
        RUN_PATH,
        [
            Reply::json(200, &open),
            Reply::json(200, &open),
            Reply::json(200, &this_run("completed")),
        ],
    );
    // Synchronous: `a` is answered, `b` left open.
    let done = client
        .run_to_end(
            RUN,
            |raised| (raised.node_id == "a").then(|| json!({"action": "accept"})),
            |_| {},
        )
        .await
        .expect("the final snapshot");
    assert_eq!(done.status.as_str(), "completed");
    assert_eq!(host.hits("POST", &a), 1);
    assert_eq!(host.hits("POST", &b), 0, "declined");
    let body = host
        .requests()
        .into_iter()
        .find(|r| r.path == a)
        .and_then(|r| r.json())
        .expect("a resolution");
    assert_eq!(body["resumeValue"], json!({"action": "accept"}));

    // Asynchronous: the answer comes after a wait; `b` is answered, `a` left open. An
    // answer that was not ready at once is checked again before it is sent.
    host.on("GET", EVENTS_PATH, script());
    host.on("POST", &a, [Reply::json(200, &resolved())]);
    host.on("POST", &b, [Reply::json(200, &resolved())]);
    host.on(
        "GET",
        RUN_PATH,
        [
            Reply::json(200, &open),
            Reply::json(200, &open),
            Reply::json(200, &open),
            Reply::json(200, &this_run("completed")),
        ],
    );
    client
        .follow_run(RUN)
        .answer_interrupts_with(|raised| async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            (raised.node_id == "b").then(|| json!({"action": "reject"}))
        })
        .send()
        .await
        .expect("the final snapshot");
    assert_eq!(host.hits("POST", &a), 0);
    assert_eq!(host.hits("POST", &b), 1);

    // Stopped after the first event: nothing more is read or answered, and the snapshot
    // is the run as it is.
    host.on("GET", EVENTS_PATH, script());
    host.on("POST", &a, [Reply::json(200, &resolved())]);
    host.on("GET", RUN_PATH, [Reply::json(200, &this_run("running"))]);
    let mut seen = Vec::new();
    let now = client
        .follow_run(RUN)
        .answer_interrupts(|_| json!({"action": "accept"}))
        .on_event(|event| {
            seen.push(event.sequence);
            ControlFlow::Break(())
        })
        .send()
        .await
        .expect("the snapshot");
    assert_eq!(now.status.as_str(), "running");
    assert_eq!(seen, [1]);
    assert_eq!(host.hits("POST", &a), 0);
    assert_eq!(host.hits("GET", RUN_PATH), 1);
}

/// A node in a loop suspends again at the same node: the answerer is offered only the
/// interrupt that is open now (by the id `node.suspended` names), never an earlier one the
/// log shows resolved, whose answer would land on the open one (the resolve call names
/// the node). In a finished run nothing is open, and the answerer is not called at all.
#[tokio::test]
async fn only_an_open_interrupt_is_answered() {
    let host = host().await;
    let client = client(&host);
    let ask = format!("{RUN_PATH}/interrupts/ask");
    let log = |end: &[String]| {
        let mut chunks = vec![
            event(1, "run.started"),
            interrupt_titled(2, "ask", "pass 0"),
            suspended(3, "ask", 0),
            interrupt_resolved(4, "ask", 0),
            interrupt_titled(5, "ask", "pass 1"),
            suspended(6, "ask", 1),
        ];
        chunks.extend_from_slice(end);
        Reply::events(chunks)
    };
    host.on(
        "GET",
        EVENTS_PATH,
        [log(&[
            interrupt_resolved(7, "ask", 1),
            event(8, "run.completed"),
        ])],
    );
    host.on("POST", &ask, [Reply::json(200, &resolved())]);
    // Is pass 0's interrupt open, is pass 1's, is the run finished.
    host.on(
        "GET",
        RUN_PATH,
        [
            Reply::json(200, &waiting(&[("ask", 1)])),
            Reply::json(200, &waiting(&[("ask", 1)])),
            Reply::json(200, &this_run("completed")),
        ],
    );
    let mut offered = Vec::new();
    client
        .run_to_end(
            RUN,
            |raised| {
                offered.push((raised.interrupt_id.clone(), raised.payload.data.clone()));
                let pass_1 = raised.payload.data["title"] == "pass 1";
                json!({"action": if pass_1 { "accept" } else { "reject" }})
            },
            |_| {},
        )
        .await
        .expect("the final snapshot");
    assert_eq!(offered.len(), 1, "{offered:?}");
    assert_eq!(offered[0].0.as_deref(), Some(interrupt_id(1).as_str()));
    assert_eq!(offered[0].1["title"], "pass 1");
    let answers: Vec<Value> = host
        .requests()
        .into_iter()
        .filter(|r| r.path == ask)
        .filter_map(|r| r.json())
        .collect();
    assert_eq!(answers, [json!({"resumeValue": {"action": "accept"}})]);

    // The run has finished: its log's interrupts are all resolved, none is offered.
    host.on(
        "GET",
        EVENTS_PATH,
        [log(&[
            interrupt_resolved(7, "ask", 1),
            event(8, "run.completed"),
        ])],
    );
    host.on("POST", &ask, [Reply::json(200, &resolved())]);
    host.on("GET", RUN_PATH, [Reply::json(200, &this_run("completed"))]);
    let mut called = 0;
    client
        .run_to_end(
            RUN,
            |_| {
                called += 1;
                json!({"action": "reject"})
            },
            |_| {},
        )
        .await
        .expect("the final snapshot");
    assert_eq!(called, 0);
    assert_eq!(host.hits("POST", &ask), 0);
}

/// An answer that cannot be delivered for a failure worth retrying (a host restarting) is
/// kept and sent again, with the same idempotency key, while following rides out the
/// failure; it does not end the following.
#[tokio::test]
async fn an_answer_outlives_a_host_restart() {
    let host = host().await;
    let client = client(&host);
    let a = format!("{RUN_PATH}/interrupts/a");
    host.on(
        "GET",
        EVENTS_PATH,
        [Reply::events([
            interrupt(1, "a"),
            suspended(2, "a", 1),
            interrupt_resolved(3, "a", 1),
            event(4, "run.completed"),
        ])],
    );
    host.on(
        "POST",
        &a,
        [
            Reply::error(503, "service_unavailable", "restarting"),
            Reply::drop_connection(),
            Reply::error(503, "service_unavailable", "restarting"),
            Reply::json(200, &resolved()),
        ],
    );
    host.on(
        "GET",
        RUN_PATH,
        [
            Reply::json(200, &waiting(&[("a", 1)])),
            Reply::json(200, &this_run("completed")),
        ],
    );
    let done = tokio::time::timeout(
        Duration::from_secs(20),
        client
            .follow_run(RUN)
            .retry(RetryPolicy::none())
            .answer_interrupts(|_| json!({"action": "accept"}))
            .send(),
    )
    .await
    .expect("following ends")
    .expect("the final snapshot");
    assert_eq!(done.status.as_str(), "completed");
    let keys: Vec<String> = host
        .requests()
        .into_iter()
        .filter(|r| r.path == a)
        .map(|r| r.header("idempotency-key").expect("a key").to_owned())
        .collect();
    assert_eq!(keys.len(), 4, "{keys:?}");
    assert!(keys.iter().all(|k| *k == keys[0]), "{keys:?}");
}

/// An event stream and a listing's pages and items are `Sync` (as `FollowRun` is): a
/// struct that holds one can be shared between threads.
#[test]
fn streams_and_listings_are_sync() {
    fn is_sync<T: Send + Sync>(_: &T) {}
    let client = Client::new("http://127.0.0.1:9");
    is_sync(&client.list_runs().pages());
    is_sync(&client.list_runs().stream());
    fn sync_type<T: Send + Sync>() {}
    sync_type::<EventStream<RunEvent>>();
}

/// Following a run can be spawned: its future is `Send`, with an answerer (sync or async)
/// that is `Send` but not `Sync`.
#[test]
fn following_a_run_is_send() {
    fn is_send<T: Send>(_: &T) {}
    let client = Client::new("http://127.0.0.1:9");
    // A `Cell` is `Send` but not `Sync`.
    let answered = std::cell::Cell::new(0);
    is_send(
        &client
            .follow_run(RUN)
            .answer_interrupts(move |_| {
                answered.set(answered.get() + 1);
                json!({"action": "accept"})
            })
            .send(),
    );
    is_send(
        &client
            .follow_run(RUN)
            .answer_interrupts_with(|_| async { None })
            .on_event(|_| {})
            .send(),
    );
    is_send(&client.run_to_end(RUN, |_| None, |_| {}));
    is_send(&client.wait_until_terminal(RUN));
}

/// Opening a stream waits for the host's answer at most the client's timeout, or the
/// stream's own `.timeout(..)` (never more than the idle timeout): a host that accepts the
/// connection and says nothing is a timeout in about that time, not 75 s later.
#[tokio::test]
async fn opening_a_stream_is_bounded_by_the_timeout() {
    let host = host().await;
    host.on("GET", EVENTS_PATH, [Reply::hang()]);
    host.on("GET", "/host/events", [Reply::hang()]);
    let quick = Client::builder(host.url())
        .timeout(Duration::from_millis(300))
        .retry(RetryPolicy::none())
        .build()
        .expect("client");
    let started = Instant::now();
    let opened = tokio::time::timeout(Duration::from_secs(10), quick.stream_run_events(RUN).send())
        .await
        .expect("opening ends");
    assert!(
        matches!(&opened, Err(e) if e.is_timeout()),
        "{:?}",
        opened.map(|_| ())
    );
    assert!(started.elapsed() < Duration::from_secs(3));

    // The stream's own timeout, shorter or longer than the client's.
    let slow = Client::builder(host.url())
        .retry(RetryPolicy::none())
        .build()
        .expect("client");
    let started = Instant::now();
    let opened = tokio::time::timeout(
        Duration::from_secs(10),
        slow.stream_host_events()
            .timeout(Duration::from_millis(300))
            .send(),
    )
    .await
    .expect("opening ends");
    assert!(matches!(&opened, Err(e) if e.is_timeout()));
    assert!(started.elapsed() < Duration::from_secs(3));
    let opened = tokio::time::timeout(
        Duration::from_secs(10),
        quick
            .stream_run_events(RUN)
            .no_timeout()
            .idle_timeout(Duration::from_millis(600))
            .send(),
    )
    .await
    .expect("opening ends");
    assert!(matches!(&opened, Err(e) if e.is_timeout()));

    // Following a run: its calls take the timeout too, and it gives up within its budget.
    let started = Instant::now();
    let followed = tokio::time::timeout(
        Duration::from_secs(10),
        slow.follow_run(RUN)
            .timeout(Duration::from_millis(200))
            .reconnect_for(Duration::from_secs(1))
            .send(),
    )
    .await
    .expect("following ends");
    assert!(
        matches!(&followed, Err(e) if e.is_timeout()),
        "{followed:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
}
