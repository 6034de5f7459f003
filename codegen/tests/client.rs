//! The committed crate's client against scripted answers on a loopback socket.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use openwop_generated::client::{Client, Error};
use openwop_generated::models::{ErrorCode, RunEventType, RunStatus};
use serde_json::{Value, json};

/// One scripted answer: raw bytes written in pieces, then a clean close or a drop.
struct Answer {
    pieces: Vec<Vec<u8>>,
}

fn plain(status: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let mut head = format!(
        "HTTP/1.1 {status}\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    Answer {
        pieces: vec![format!("{head}{body}").into_bytes()],
    }
}

/// A chunked event stream; `finish` ends it properly, else the socket just closes mid-body.
fn sse(chunks: &[&str], finish: bool) -> Answer {
    let mut pieces = vec![b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n".to_vec()];
    for c in chunks {
        pieces.push(format!("{:x}\r\n{c}\r\n", c.len()).into_bytes());
    }
    if finish {
        pieces.push(b"0\r\n\r\n".to_vec());
    }
    Answer { pieces }
}

/// Serves `answers` one connection each; the receiver yields each request (head and body).
fn serve(answers: Vec<Answer>) -> (String, mpsc::Receiver<String>) {
    // A loopback port below 32768 (the ephemeral range is the system's).
    let listener = (21600..21900)
        .find_map(|port| TcpListener::bind(("127.0.0.1", port)).ok())
        .expect("a free loopback port in 21600..21900");
    let base = format!("http://{}", listener.local_addr().expect("addr"));
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for answer in answers {
            let Ok((mut stream, _)) = listener.accept() else {
                return;
            };
            let mut request = Vec::new();
            let mut buf = [0u8; 4096];
            // Read the head, then as much body as content-length says.
            loop {
                let n = stream.read(&mut buf).unwrap_or(0);
                if n == 0 {
                    break;
                }
                request.extend_from_slice(&buf[..n]);
                let text = String::from_utf8_lossy(&request).to_string();
                if let Some(end) = text.find("\r\n\r\n") {
                    let len = text[..end]
                        .lines()
                        .find_map(|l| {
                            l.to_ascii_lowercase()
                                .strip_prefix("content-length:")
                                .map(|v| v.trim().parse::<usize>().unwrap_or(0))
                        })
                        .unwrap_or(0);
                    if request.len() >= end + 4 + len {
                        break;
                    }
                }
            }
            let _ = tx.send(String::from_utf8_lossy(&request).into_owned());
            for piece in answer.pieces {
                let _ = stream.write_all(&piece);
                let _ = stream.flush();
                thread::sleep(Duration::from_millis(20));
            }
        }
    });
    (base, rx)
}

fn head(rx: &mpsc::Receiver<String>) -> String {
    rx.recv_timeout(Duration::from_secs(5))
        .expect("a request arrived")
}

fn body_of(request: &str) -> Value {
    let body = request.split("\r\n\r\n").nth(1).unwrap_or_default();
    serde_json::from_str(body).unwrap_or(Value::Null)
}

#[tokio::test]
async fn an_error_answer_is_a_typed_api_error() {
    let (base, rx) = serve(vec![plain(
        "404 Not Found",
        &[("content-type", "application/json"), ("retry-after", "7")],
        r#"{"error":"not_found","message":"no such run","hint":"a member from the future"}"#,
    )]);
    let client = Client::new(base)
        .with_api_key("k1")
        .and_then(|c| c.with_header("OpenWOP-Version", "2"))
        .expect("valid");
    let result = client
        .get_run("acme/run 1")
        .if_none_match("\"e1\"")
        .send()
        .await;
    let request = head(&rx).to_ascii_lowercase();
    assert!(
        request.starts_with("get /runs/acme~2frun~201 http/1.1"),
        "{request}"
    );
    assert!(request.contains("authorization: bearer k1"), "{request}");
    assert!(request.contains("if-none-match: \"e1\""), "{request}");
    assert!(request.contains("openwop-version: 2"), "{request}");
    match result {
        Err(
            ref e @ Error::Api {
                status,
                ref code,
                ref envelope,
                ref headers,
                ..
            },
        ) => {
            assert_eq!(status, 404);
            assert_eq!(*code, ErrorCode::NotFound);
            assert_eq!(
                code.registered(),
                Some(openwop_generated::errors::ErrorCode::NotFound)
            );
            assert_eq!(envelope.message.as_str(), "no such run");
            assert_eq!(
                headers.get("retry-after").and_then(|v| v.to_str().ok()),
                Some("7")
            );
            assert_eq!(e.retry_after(), Some(std::time::Duration::from_secs(7)));
            assert_eq!(e.status(), Some(404));
        }
        other => panic!("expected the envelope, got {other:?}"),
    }
}

/// A proxy's answer, not the host's envelope: an `Http` error with status, headers and an
/// excerpt, retryable by its status.
#[tokio::test]
async fn a_non_envelope_error_is_an_http_error_with_an_excerpt() {
    let (base, _rx) = serve(vec![plain(
        "502 Bad Gateway",
        &[("x-request-id", "r-9")],
        "upstream down",
    )]);
    let client = Client::builder(base)
        .retry(openwop_generated::client::RetryPolicy::none())
        .build()
        .expect("client");
    let result = client.list_agents().send().await;
    match result {
        Err(
            ref e @ Error::Http {
                status: 502,
                ref body,
                ..
            },
        ) => {
            assert_eq!(body, "upstream down");
            assert_eq!(e.request_id(), Some("r-9"));
            assert!(e.is_retryable());
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_304_is_a_value_with_its_etag() {
    let (base, rx) = serve(vec![plain("304 Not Modified", &[("etag", "\"v7\"")], "")]);
    let answer = Client::new(base)
        .get_capabilities()
        .if_none_match("\"v7\"")
        .send()
        .await
        .expect("304 is not an error");
    let _ = head(&rx);
    assert!(answer.is_not_modified());
    assert_eq!(answer.status(), 304);
    assert_eq!(answer.etag(), Some("\"v7\""));
}

#[tokio::test]
async fn create_run_sends_a_checked_body_and_reads_the_answer_headers() {
    let (base, rx) = serve(vec![plain(
        "201 Created",
        &[
            ("content-type", "application/json"),
            ("location", "http://h/runs/dev~2Frun_0123456789abcdef"),
            ("openwop-idempotent-replay", "true"),
        ],
        r#"{"runId":"dev/run_0123456789abcdef","status":"running","eventsUrl":"http://h/e","statusUrl":"http://h/s","queue":1}"#,
    )]);
    let created = Client::new(base)
        .with_api_key("k")
        .expect("valid")
        .create_run()
        .workflow_id("echo")
        .inputs(json!({"hello": "world"}))
        .tags(["a", "b"])
        .idempotency_key("key-1")
        .send()
        .await
        .expect("created");
    let request = head(&rx);
    assert!(request.starts_with("POST /runs HTTP/1.1"), "{request}");
    assert!(
        request
            .to_ascii_lowercase()
            .contains("idempotency-key: key-1"),
        "{request}"
    );
    assert_eq!(
        body_of(&request),
        json!({"workflowId": "echo", "inputs": {"hello": "world"}, "tags": ["a", "b"]})
    );
    assert_eq!(created.status(), 201);
    assert_eq!(
        created.location().as_deref(),
        Some("http://h/runs/dev~2Frun_0123456789abcdef")
    );
    assert_eq!(created.openwop_idempotent_replay(), Some(true));
    assert_eq!(created.run_id.as_str(), "dev/run_0123456789abcdef");
    assert_eq!(created.status, RunStatus::Running);
}

#[tokio::test]
async fn a_body_that_breaks_its_schema_is_refused_before_sending() {
    // Nothing listens here: an attempt to send would be a transport error.
    let client = Client::new("http://127.0.0.1:9");
    match client.create_run().inputs(json!({})).send().await {
        Err(Error::InvalidRequest(m)) => assert!(m.contains("workflowId"), "{m}"),
        other => panic!("a missing required field: {other:?}"),
    }
    match client
        .create_run()
        .workflow_id("no spaces allowed")
        .send()
        .await
    {
        Err(Error::InvalidRequest(m)) => assert!(m.contains("workflowId"), "{m}"),
        other => panic!("a value outside its pattern: {other:?}"),
    }
}

#[tokio::test]
async fn list_runs_takes_typed_filters() {
    let (base, rx) = serve(vec![plain(
        "200 OK",
        &[("content-type", "application/json")],
        r#"{"runs":[],"nextCursor":"c2"}"#,
    )]);
    let page = Client::new(base)
        .list_runs()
        .limit(5)
        .workflow_id("echo")
        .status(RunStatus::WaitingInput)
        .cursor("c1")
        .send()
        .await
        .expect("a page");
    let request = head(&rx);
    assert!(
        request.starts_with(
            "GET /runs?limit=5&workflowId=echo&status=waiting-input&cursor=c1 HTTP/1.1"
        ),
        "{request}"
    );
    assert_eq!(page.next_cursor.as_deref().map(|c| c.as_str()), Some("c2"));
}

#[tokio::test]
async fn operations_without_security_never_send_the_key() {
    let (base, rx) = serve(vec![plain(
        "401 Unauthorized",
        &[("content-type", "application/json")],
        r#"{"error":"interrupt_token_invalid","message":"no"}"#,
    )]);
    let _ = Client::new(base)
        .with_api_key("secret-key")
        .expect("valid")
        .inspect_interrupt_by_token("ow2.x")
        .send()
        .await;
    let request = head(&rx).to_ascii_lowercase();
    assert!(!request.contains("authorization"), "{request}");
}

#[test]
fn debug_never_prints_the_api_key_or_header_values() {
    let client = Client::new("http://h")
        .with_api_key("owdev_super_secret")
        .and_then(|c| c.with_header("X-Extra-Token", "also-secret"))
        .expect("valid");
    let shown = format!("{client:?} {client:#?}");
    assert!(!shown.contains("owdev_super_secret"), "{shown}");
    assert!(!shown.contains("also-secret"), "{shown}");
    assert!(
        shown.contains("<redacted>") && shown.contains("X-Extra-Token"),
        "{shown}"
    );
}

fn event(seq: u64, ty: &str, payload: Value) -> String {
    json!({
        "eventId": format!("evt_{seq:016}"), "runId": "dev/run_0123456789abcdef", "type": ty,
        "payload": payload, "timestamp": "2026-12-01T00:00:00.000Z", "sequence": seq, "schemaVersion": 1
    })
    .to_string()
}

/// The stream survives a dropped connection (resuming with Last-Event-ID), skips keep-alive
/// comments, joins multi-line data and CRLF frames split across chunks, and ends with the
/// run's terminal event (no connection asks for more: nothing can follow it).
#[tokio::test]
async fn the_event_stream_resumes_after_a_drop_and_ends_after_the_host_closes() {
    let e0 = event(
        0,
        "run.started",
        json!({"workflowId": "echo", "owner": {}, "transport": "rest"}),
    );
    let e1 = event(1, "acme.tick", json!({"n": 1}));
    let e2 = event(2, "run.completed", json!({"outputs": {}}));
    // Split after a comma: joined with the newline SSE puts between data lines, still JSON.
    let cut = e2.find(',').map_or(0, |i| i + 1);
    let (e2a, e2b) = e2.split_at(cut);
    let first = format!(
        ": keep-alive\n\nid: 0\nevent: run.started\ndata: {e0}\n\ndata: not json\n\nid: 1\nevent: acme.tick\ndata: {e1}\n\n"
    );
    let second_a = format!("id: 2\r\nevent: run.completed\r\ndata: {e2a}");
    let second_b = format!("\r\ndata: {e2b}\r\n\r\n");
    let (base, rx) = serve(vec![
        sse(&[&first], false),
        sse(&[&second_a, &second_b], true),
        sse(&[], true),
    ]);
    let client = Client::new(base).with_api_key("k").expect("valid");
    let mut events = client
        .stream_run_events("dev/run_0123456789abcdef")
        .send()
        .await
        .expect("opens");
    let mut seen = Vec::new();
    while let Some(item) = events.next().await {
        match item {
            Ok(ev) => seen.push((ev.sequence, ev.type_.clone())),
            // A frame that is not an event is reported, and the stream goes on.
            Err(Error::Decode { .. }) => {
                seen.push((u64::MAX, RunEventType::Other("undecodable".into())))
            }
            Err(other) => panic!("{other:?}"),
        }
    }
    let heads: Vec<String> = (0..2).map(|_| head(&rx).to_ascii_lowercase()).collect();
    assert!(
        rx.recv_timeout(Duration::from_millis(300)).is_err(),
        "no connection after the terminal event"
    );
    assert!(
        heads[0].contains("accept: text/event-stream") && !heads[0].contains("last-event-id"),
        "{}",
        heads[0]
    );
    assert!(heads[1].contains("last-event-id: 1"), "{}", heads[1]);
    assert_eq!(
        seen,
        [
            (0, RunEventType::RunStarted),
            (u64::MAX, RunEventType::Other("undecodable".into())),
            (1, RunEventType::Other("acme.tick".into())),
            (2, RunEventType::RunCompleted),
        ]
    );
    assert_eq!(events.last_event_id(), Some("2"));
}

#[tokio::test]
async fn an_event_stream_the_host_refuses_is_an_api_error() {
    let (base, _rx) = serve(vec![plain(
        "404 Not Found",
        &[("content-type", "application/json")],
        r#"{"error":"not_found","message":"no such run"}"#,
    )]);
    match Client::new(base).stream_run_events("x").send().await {
        Err(Error::Api { status: 404, .. }) => {}
        other => panic!("{other:?}"),
    }
}

#[test]
fn path_segments_are_projected() {
    use openwop_generated::client::project_path_segment;
    assert_eq!(project_path_segment("run_01.ab-CD"), "run_01.ab-CD");
    assert_eq!(project_path_segment("acme/run 1~x"), "acme~2Frun~201~7Ex");
    assert_eq!(project_path_segment("é"), "~C3~A9");
}
