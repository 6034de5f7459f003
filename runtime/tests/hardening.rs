//! Issue #35 from the attacker's side, in process: `/metrics` stays bounded whatever
//! methods a client invents, bodies are on a clock (413 before reading an oversized
//! `Content-Length`, 408 for a body that stops arriving) on every edge, and one address
//! flooding bad credentials is answered 429 with `Retry-After` while another is not.
//! Loopback only, bounded in time.

mod support;

use std::time::{Duration, Instant};

use support::KEY_A;
use support::rest::{Rest as _, start_with};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Reads until the peer closes or `within` passes.
async fn read_until_closed(stream: &mut TcpStream, within: Duration) -> (String, bool) {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Err(_) => return (String::from_utf8_lossy(&out).into_owned(), false),
            Ok(Ok(0)) | Ok(Err(_)) => return (String::from_utf8_lossy(&out).into_owned(), true),
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
        }
    }
}

fn addr(base: &str) -> std::net::SocketAddr {
    base.trim_start_matches("http://").parse().expect("addr")
}

/// 20,000 requests with distinct invented methods (pipelined on a few connections):
/// before, each became a series and `/metrics` grew by ~150 bytes per method (the
/// issue's 100k made it 32 MB); now they all count under `method="other"`.
#[tokio::test(flavor = "multi_thread")]
async fn invented_methods_do_not_grow_metrics() {
    const METHODS: usize = 20_000;
    const CONNECTIONS: usize = 20;
    let h = start_with(|_| {}).await;
    let target = addr(&h.base);
    let mut tasks = Vec::new();
    for c in 0..CONNECTIONS {
        tasks.push(tokio::spawn(async move {
            let mut stream = TcpStream::connect(target).await.expect("connect");
            let mut batch = Vec::new();
            for i in 0..METHODS / CONNECTIONS {
                let last = i + 1 == METHODS / CONNECTIONS;
                batch.extend_from_slice(
                    format!(
                        "JUNK{c}X{i} /healthz HTTP/1.1\r\nHost: x\r\n{}\r\n",
                        if last { "Connection: close\r\n" } else { "" }
                    )
                    .as_bytes(),
                );
            }
            let (mut reader, mut writer) = stream.split();
            let (_, (text, closed)) = tokio::join!(writer.write_all(&batch), async {
                let mut out = Vec::new();
                let _ = tokio::time::timeout(Duration::from_secs(60), reader.read_to_end(&mut out))
                    .await;
                (out, true)
            });
            assert!(closed);
            String::from_utf8_lossy(&text).matches("HTTP/1.1 ").count()
        }));
    }
    let mut answered = 0;
    for t in tasks {
        answered += t.await.expect("task");
    }
    assert_eq!(answered, METHODS, "every invented method was answered");
    let metrics = h
        .http
        .get(format!("{}/metrics", h.base))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    assert!(
        metrics.len() < 16 * 1024,
        "/metrics is {} bytes after {METHODS} invented methods",
        metrics.len()
    );
    assert!(
        !metrics.contains("JUNK"),
        "an invented method became a label"
    );
    assert!(
        metrics.contains(&format!(
            "openwop_http_requests_total{{route=\"/healthz\",method=\"other\",status=\"405\"}} {METHODS}"
        )),
        "{metrics}"
    );
}

/// Sends `head` (and `body`) on a fresh connection and returns the answer, the time it
/// took and whether the connection was closed after it.
async fn exchange(target: std::net::SocketAddr, head: String, body: &[u8]) -> (String, Duration) {
    let mut stream = TcpStream::connect(target).await.expect("connect");
    let started = Instant::now();
    stream.write_all(head.as_bytes()).await.expect("head");
    stream.write_all(body).await.expect("body");
    let (answer, closed) = read_until_closed(&mut stream, Duration::from_secs(10)).await;
    assert!(closed, "a refused body closes its connection: {answer}");
    (answer, started.elapsed())
}

fn status(answer: &str) -> &str {
    answer.get(9..12).unwrap_or("")
}

fn json_body(answer: &str) -> serde_json::Value {
    let (_, body) = answer.split_once("\r\n\r\n").expect("head and body");
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {answer}"))
}

/// Each edge with its path and the headers its requests carry.
fn edges() -> [(&'static str, &'static str); 4] {
    [
        ("rest", "POST /runs"),
        ("a2a-jsonrpc", "POST /a2a/jsonrpc"),
        ("a2a-rest", "POST /a2a/rest/message:send"),
        ("mcp", "POST /mcp"),
    ]
}

fn head(line: &str, length: usize) -> String {
    format!(
        "{line} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY_A}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nOpenWOP-Version: 2.0\r\nA2A-Version: 1.0\r\nMCP-Protocol-Version: 2026-07-28\r\nContent-Length: {length}\r\n\r\n"
    )
}

/// A `Content-Length` over the 1 MiB limit is answered 413 at once, in the edge's shape,
/// without the body being sent (before: the host waited for the whole body).
#[tokio::test(flavor = "multi_thread")]
async fn an_oversized_content_length_is_refused_before_the_body_is_read() {
    let h = start_with(|_| {}).await;
    let target = addr(&h.base);
    for (edge, line) in edges() {
        let (answer, took) = exchange(target, head(line, 50 * 1024 * 1024), b"").await;
        assert_eq!(status(&answer), "413", "{edge}: {answer}");
        assert!(took < Duration::from_secs(3), "{edge} took {took:?}");
        let body = json_body(&answer);
        match edge {
            "rest" => assert_eq!(body["error"], "payload_too_large", "{body}"),
            "a2a-rest" => assert_eq!(body["error"]["status"], "RESOURCE_EXHAUSTED", "{body}"),
            _ => assert_eq!(body["error"]["code"], -32600, "{edge}: {body}"),
        }
    }
}

/// A body that stops arriving is answered 408 once the body timeout passes (before: the
/// connection was held until the 90 s request deadline).
#[tokio::test(flavor = "multi_thread")]
async fn a_stalled_body_gets_408_after_the_body_timeout() {
    let h = start_with(|c| c.server.body_timeout = Duration::from_millis(500)).await;
    let target = addr(&h.base);
    for (edge, line) in edges() {
        let (answer, took) = exchange(target, head(line, 100), b"{\"jsonrpc\":").await;
        assert_eq!(status(&answer), "408", "{edge}: {answer}");
        assert!(
            took >= Duration::from_millis(450) && took < Duration::from_secs(5),
            "{edge} took {took:?}"
        );
        let body = json_body(&answer);
        match edge {
            "rest" => assert_eq!(body["error"], "request_timeout", "{body}"),
            "a2a-rest" => assert_eq!(body["error"]["status"], "DEADLINE_EXCEEDED", "{body}"),
            _ => assert_eq!(body["error"]["code"], -32600, "{edge}: {body}"),
        }
    }
    // A body that arrives, slowly but within the timeout, is served.
    let mut stream = TcpStream::connect(target).await.expect("connect");
    let body = br#"{"workflowId":"echo","inputs":{}}"#;
    let head = head("POST /runs", body.len()).replace("\r\n\r\n", "\r\nConnection: close\r\n\r\n");
    stream.write_all(head.as_bytes()).await.expect("head");
    stream.write_all(&body[..10]).await.expect("part");
    tokio::time::sleep(Duration::from_millis(200)).await;
    stream.write_all(&body[10..]).await.expect("rest");
    let (answer, _) = read_until_closed(&mut stream, Duration::from_secs(10)).await;
    assert_eq!(status(&answer), "201", "{answer}");
}

/// One address sending bad keys past its share gets 429 with `Retry-After` in each
/// edge's shape; a valid key from it is still served, and the refusals are counted in
/// `/metrics` (not logged one by one).
#[tokio::test(flavor = "multi_thread")]
async fn an_address_flooding_bad_credentials_is_answered_429() {
    let h = start_with(|c| {
        c.server.unauthenticated = openwop::identity::rate::RateConfig {
            per_second: 1.0,
            burst: 5.0,
        }
    })
    .await;
    let bad = "nope-nope-nope-nope-nope";
    let mut statuses = Vec::new();
    for _ in 0..8 {
        let r = h.get("/runs", bad).send().await.expect("send");
        statuses.push(r.status().as_u16());
    }
    assert_eq!(&statuses[..5], [401; 5], "{statuses:?}");
    assert_eq!(&statuses[5..], [429; 3], "{statuses:?}");
    let r = h.get("/runs", bad).send().await.expect("rest");
    assert_eq!(r.status(), 429);
    assert!(r.headers().get("retry-after").is_some());
    let body: serde_json::Value = r.json().await.expect("json");
    assert_eq!(body["error"], "rate_limited", "{body}");
    let a2a = h
        .http
        .post(format!("{}/a2a/jsonrpc", h.base))
        .bearer_auth(bad)
        .header("A2A-Version", "1.0")
        .json(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}))
        .send()
        .await
        .expect("a2a");
    assert_eq!(a2a.status(), 429);
    assert!(a2a.headers().get("retry-after").is_some());
    let body: serde_json::Value = a2a.json().await.expect("json");
    assert_eq!(body["error"]["code"], -32000, "{body}");
    let mcp = h
        .http
        .post(format!("{}/mcp", h.base))
        .bearer_auth(bad)
        .header("Accept", "application/json, text/event-stream")
        .json(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}}))
        .send()
        .await
        .expect("mcp");
    assert_eq!(mcp.status(), 429);
    assert!(mcp.headers().get("retry-after").is_some());
    // A valid key from the same address is not held back.
    let ok = h.get("/runs", KEY_A).send().await.expect("good key");
    assert_eq!(ok.status(), 200);
    let metrics = h
        .http
        .get(format!("{}/metrics", h.base))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    let count = |reason: &str| -> u64 {
        metrics
            .lines()
            .find_map(|l| {
                l.strip_prefix(&format!("openwop_refusals_total{{reason=\"{reason}\"}} "))
            })
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no {reason} count in {metrics}"))
    };
    assert!(count("unauthenticated") >= 5);
    assert!(count("rate_limited") >= 5);
}
