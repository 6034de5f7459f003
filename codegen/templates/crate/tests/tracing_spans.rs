//! What the `tracing` feature records (with a subscriber of the test's own that writes
//! down every span and event): an event stream is one span with a child per connection,
//! and no credential is in any of them. A test binary of its own: `tracing` caches per
//! callsite whether any subscriber wants it, and a test running beside this one could
//! register the SDK's callsites at the very moment this one installs its subscriber
//! (thread-local, so only this test sees it), caching "nobody" for them.
// openwop-codegen: requires operation streamRunEvents
// openwop-codegen: requires answer streamRunEvents RunEvent
// openwop-codegen: requires field RunEvent.sequence
#![cfg(feature = "tracing")]

use std::time::Duration;

use openwop_sdk::client::testkit::{Reply, ScriptedHost};
use openwop_sdk::client::{Client, RetryPolicy};
use serde_json::json;

/// A scripted host on a loopback port below 32768 (the test rules keep the ephemeral range
/// for the system).
async fn host() -> ScriptedHost {
    for port in 22100..22200 {
        if let Ok(host) = ScriptedHost::bind(("127.0.0.1", port)).await {
            return host;
        }
    }
    panic!("no free port in 22100..22200");
}

/// Retries without real waiting.
fn quick() -> RetryPolicy {
    RetryPolicy::default()
        .initial_backoff(Duration::from_millis(5))
        .max_backoff(Duration::from_millis(20))
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

/// A `tracing` subscriber that writes down every span and event, with its parent span.
mod recorded {
    use std::fmt::Write as _;
    use std::sync::{Arc, Mutex};

    use tracing::field::{Field, Visit};
    use tracing::span::{Attributes, Id, Record};
    use tracing::{Event, Metadata, Subscriber};

    /// A span as it was opened, and the fields recorded on it later.
    #[derive(Debug, Clone)]
    pub struct Span {
        pub name: &'static str,
        pub parent: Option<u64>,
        pub fields: String,
    }

    #[derive(Debug, Default)]
    pub struct Log {
        pub spans: Vec<Span>,
        /// Each event: its parent span's index in `spans`, and its fields.
        pub events: Vec<(Option<u64>, String)>,
        entered: Vec<u64>,
    }

    impl Log {
        /// The spans named `name`, with their ids.
        pub fn named(&self, name: &str) -> Vec<(u64, Span)> {
            (0u64..)
                .zip(&self.spans)
                .filter(|(_, s)| s.name == name)
                .map(|(i, s)| (i, s.clone()))
                .collect()
        }

        /// Everything written down, for an assertion that a text appears nowhere.
        pub fn text(&self) -> String {
            format!("{self:?}")
        }
    }

    #[derive(Clone, Default)]
    pub struct Recorder(pub Arc<Mutex<Log>>);

    struct Fields<'a>(&'a mut String);

    impl Visit for Fields<'_> {
        fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
            let _ = write!(self.0, " {}={value:?}", field.name());
        }
    }

    impl Subscriber for Recorder {
        fn enabled(&self, _: &Metadata<'_>) -> bool {
            true
        }

        fn new_span(&self, span: &Attributes<'_>) -> Id {
            let mut log = self.0.lock().unwrap();
            let parent = match span.parent() {
                Some(id) => Some(id.into_u64() - 1),
                None if span.is_contextual() => log.entered.last().copied(),
                None => None,
            };
            let mut fields = String::new();
            span.record(&mut Fields(&mut fields));
            log.spans.push(Span {
                name: span.metadata().name(),
                parent,
                fields,
            });
            Id::from_u64(log.spans.len() as u64)
        }

        fn record(&self, span: &Id, values: &Record<'_>) {
            let mut log = self.0.lock().unwrap();
            let index = (span.into_u64() - 1) as usize;
            values.record(&mut Fields(&mut log.spans[index].fields));
        }

        fn record_follows_from(&self, _: &Id, _: &Id) {}

        fn event(&self, event: &Event<'_>) {
            let mut log = self.0.lock().unwrap();
            let parent = match event.parent() {
                Some(id) => Some(id.into_u64() - 1),
                None if event.is_contextual() => log.entered.last().copied(),
                None => None,
            };
            let mut fields = String::new();
            event.record(&mut Fields(&mut fields));
            log.events.push((parent, fields));
        }

        fn enter(&self, span: &Id) {
            self.0.lock().unwrap().entered.push(span.into_u64() - 1);
        }

        fn exit(&self, span: &Id) {
            let mut log = self.0.lock().unwrap();
            if let Some(at) = log.entered.iter().rposition(|s| *s == span.into_u64() - 1) {
                log.entered.remove(at);
            }
        }
    }
}

/// With the `tracing` feature an event stream is one span, `openwop.stream`, for as long as
/// it is read; each connection (the first, and every reconnection) is a child span
/// `openwop.stream.connect` with its attempt number and the cursor it resumes after. The
/// API key appears in none of them.
#[tokio::test]
async fn an_event_stream_is_one_span_with_a_child_per_connection() {
    let recorder = recorded::Recorder::default();
    let _default = tracing::subscriber::set_default(recorder.clone());
    let host = host().await;
    let path = "/runs/acme~2Frun_0123456789abcdef/events";
    host.on(
        "GET",
        path,
        [
            Reply::events([event(1, "run.started")]),
            Reply::error(503, "service_unavailable", "restarting").header("Retry-After", "0"),
            // Not the run's end (that would end the stream at once): the host closes, and
            // one more connection finds nothing newer.
            Reply::events([event(2, "node.started")]),
            Reply::events(Vec::<String>::new()),
        ],
    );
    let client = Client::builder(host.url())
        .api_key("sk_SECRET_never_logged")
        .retry(quick())
        .build()
        .expect("client");
    let mut events = client
        .stream_run_events("acme/run_0123456789abcdef")
        .send()
        .await
        .expect("open");
    let mut seen = Vec::new();
    while let Some(event) = events.next().await {
        seen.push(event.expect("an event").sequence);
    }
    assert_eq!(seen, [1, 2]);
    drop(events);

    let log = recorder.0.lock().unwrap();
    let streams = log.named("openwop.stream");
    let [(stream, span)] = streams.as_slice() else {
        panic!("one stream span: {:#?}", log.spans)
    };
    assert!(
        span.fields.contains("operation_id=\"streamRunEvents\""),
        "{span:?}"
    );
    assert!(
        span.fields.contains("run_id=\"acme/run_0123456789abcdef\""),
        "{span:?}"
    );
    let connects: Vec<String> = log
        .named("openwop.stream.connect")
        .into_iter()
        .map(|(_, c)| {
            assert_eq!(c.parent, Some(*stream), "{c:?}");
            c.fields
        })
        .collect();
    // The first connection, the refused one, the one that resumed, the one that confirmed
    // the end: each with its attempt and the cursor it sent.
    assert_eq!(connects.len(), 4, "{connects:#?}");
    for (i, (attempt, cursor)) in [(1, None), (2, Some("1")), (3, Some("1")), (4, Some("2"))]
        .into_iter()
        .enumerate()
    {
        let fields = &connects[i];
        assert!(fields.contains(&format!("attempt={attempt}")), "{fields}");
        match cursor {
            Some(id) => assert!(
                fields.contains(&format!("last_event_id=\"{id}\"")),
                "{fields}"
            ),
            None => assert!(!fields.contains("last_event_id=\""), "{fields}"),
        }
    }
    assert!(
        connects[1].contains("http.response.status_code=503"),
        "{connects:#?}"
    );
    assert!(
        connects[2].contains("http.response.status_code=200"),
        "{connects:#?}"
    );
    let text = log.text();
    assert!(!text.contains("SECRET"), "the API key is in a span: {text}");
}
