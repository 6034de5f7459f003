//! The HTTP layer from the attacker's side: connections that send nothing or half a
//! request are closed, a connection over the cap is refused with a 503, and shutdown ends
//! within its grace even while a request is half sent. Loopback only, bounded in time.

mod support;

use std::time::{Duration, Instant};

use openwop::server::Limits;
use support::TestHost;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A host with these connection limits.
async fn serve(limits: Limits) -> TestHost {
    support::host().with(|c| c.server = limits).start().await
}

/// Reads until the peer closes or `within` passes; the bytes read and whether it closed.
async fn read_until_closed(stream: &mut TcpStream, within: Duration) -> (Vec<u8>, bool) {
    let mut out = Vec::new();
    let mut buf = [0u8; 1024];
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Err(_) => return (out, false),
            Ok(Ok(0)) | Ok(Err(_)) => return (out, true),
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
        }
    }
}

fn quick() -> Limits {
    Limits {
        header_read_timeout: Duration::from_millis(400),
        first_request_timeout: Duration::from_millis(400),
        ..Limits::default()
    }
}

#[tokio::test]
async fn a_connection_that_sends_nothing_is_closed_after_the_header_read_timeout() {
    let s = serve(quick()).await;
    let mut idle = TcpStream::connect(s.addr).await.expect("connect");
    let started = Instant::now();
    let (_, closed) = read_until_closed(&mut idle, Duration::from_secs(5)).await;
    assert!(closed, "an idle connection stays open");
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[tokio::test]
async fn a_half_sent_request_is_closed_after_the_header_read_timeout() {
    let s = serve(quick()).await;
    let mut slow = TcpStream::connect(s.addr).await.expect("connect");
    slow.write_all(b"GET /.well-known/openwop HTTP/1.1\r\nHost: x\r\n")
        .await
        .expect("write");
    let (_, closed) = read_until_closed(&mut slow, Duration::from_secs(5)).await;
    assert!(closed, "a half-sent request keeps its connection");
}

#[tokio::test]
async fn a_keep_alive_connection_idle_after_an_answer_is_closed_too() {
    let s = serve(quick()).await;
    let mut conn = TcpStream::connect(s.addr).await.expect("connect");
    conn.write_all(b"GET /.well-known/openwop HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("write");
    let (bytes, closed) = read_until_closed(&mut conn, Duration::from_secs(5)).await;
    assert!(String::from_utf8_lossy(&bytes).starts_with("HTTP/1.1 200"));
    assert!(closed, "an idle keep-alive connection stays open");
}

#[tokio::test]
async fn a_connection_over_the_cap_gets_a_503_and_the_others_still_work() {
    let s = serve(Limits {
        max_connections: 2,
        header_read_timeout: Duration::from_secs(5),
        ..Limits::default()
    })
    .await;
    let _a = TcpStream::connect(s.addr).await.expect("a");
    let _b = TcpStream::connect(s.addr).await.expect("b");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut over = TcpStream::connect(s.addr).await.expect("over");
    let (bytes, closed) = read_until_closed(&mut over, Duration::from_secs(3)).await;
    let text = String::from_utf8_lossy(&bytes);
    assert!(text.starts_with("HTTP/1.1 503"), "{text}");
    assert!(text.contains("retry-after: 1"), "{text}");
    assert!(text.contains("\"service_unavailable\""), "{text}");
    assert!(closed);
    drop(_a);
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut again = TcpStream::connect(s.addr).await.expect("again");
    again
        .write_all(b"GET /.well-known/openwop HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .expect("write");
    let (bytes, _) = read_until_closed(&mut again, Duration::from_secs(3)).await;
    assert!(String::from_utf8_lossy(&bytes).starts_with("HTTP/1.1 200"));
}

#[tokio::test]
async fn shutdown_ends_within_its_grace_while_a_request_is_half_sent() {
    let mut s = serve(Limits {
        header_read_timeout: Duration::from_secs(60),
        shutdown_grace: Duration::from_millis(500),
        ..Limits::default()
    })
    .await;
    let mut partial = TcpStream::connect(s.addr).await.expect("connect");
    partial
        .write_all(b"POST /runs HTTP/1.1\r\nHost: x\r\n")
        .await
        .expect("write");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let started = Instant::now();
    let _ = s.stopper.send(true);
    tokio::time::timeout(Duration::from_secs(5), s.take_done())
        .await
        .expect("the server stops within its grace")
        .expect("join")
        .expect("serve");
    assert!(started.elapsed() < Duration::from_secs(3));
}

/// Two `Authorization` headers are refused on every edge with 400 in that edge's shape,
/// never authorized by whichever one the host happens to read first.
#[tokio::test]
async fn two_authorization_headers_are_refused_on_every_edge() {
    let s = serve(Limits::default()).await;
    let http = reqwest::Client::new();
    let base = format!("http://{}", s.addr);
    let mut two = reqwest::header::HeaderMap::new();
    for key in [
        "Bearer acme-key-0123456789",
        "Bearer someone-elses-key-0123",
    ] {
        two.append("authorization", key.parse().expect("header"));
    }
    let rest = http
        .get(format!("{base}/runs"))
        .headers(two.clone())
        .send()
        .await
        .expect("rest");
    assert_eq!(rest.status(), 400);
    let body: serde_json::Value = rest.json().await.expect("json");
    assert_eq!(body["error"], "validation_error", "{body}");

    let a2a = http
        .post(format!("{base}/a2a/jsonrpc"))
        .headers(two.clone())
        .json(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}))
        .send()
        .await
        .expect("a2a");
    let body: serde_json::Value = a2a.json().await.expect("json");
    assert_eq!(body["error"]["code"], -32600, "{body}");

    let rest_binding = http
        .get(format!("{base}/a2a/rest/tasks"))
        .headers(two.clone())
        .send()
        .await
        .expect("a2a rest");
    assert_eq!(rest_binding.status(), 400);
    let body: serde_json::Value = rest_binding.json().await.expect("json");
    assert_eq!(body["error"]["status"], "INVALID_ARGUMENT", "{body}");

    let mcp = http
        .post(format!("{base}/mcp"))
        .headers(two)
        .json(&serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {}}))
        .send()
        .await
        .expect("mcp");
    assert_eq!(mcp.status(), 400);
    let body: serde_json::Value = mcp.json().await.expect("json");
    assert_eq!(body["error"]["code"], -32600, "{body}");
}

/// Sends raw bytes and reads the whole answer (the server closes after a refusal). The
/// bytes go out from their own task while the answer is read: a server answers an
/// oversized head before all of it is sent, and stops reading it.
async fn raw(addr: std::net::SocketAddr, request: &[u8]) -> String {
    let stream = TcpStream::connect(addr).await.expect("connect");
    let (mut reader, mut writer) = stream.into_split();
    let request = request.to_vec();
    let len = request.len();
    let sending = tokio::spawn(async move {
        let _ = writer.write_all(&request).await;
        writer
    });
    let mut out = Vec::new();
    let mut buf = [0u8; 1024];
    // Generous: a loaded 2-core CI machine runs many servers at once; a server that
    // never closes still fails it.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let closed = loop {
        match tokio::time::timeout_at(deadline, reader.read(&mut buf)).await {
            Err(_) => break false,
            Ok(Ok(0)) | Ok(Err(_)) => break true,
            Ok(Ok(n)) => out.extend_from_slice(&buf[..n]),
        }
    };
    sending.abort();
    assert!(
        closed,
        "a refused connection is closed: a request of {len} bytes, answered {:?}",
        String::from_utf8_lossy(&out)
    );
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn http_layer_refusals_carry_an_envelope_and_the_protocol_version() {
    let served = serve(Limits::default()).await;
    let mut huge_header = b"GET /runs HTTP/1.1\r\nHost: x\r\nX-Big: ".to_vec();
    huge_header.extend(std::iter::repeat_n(b'a', 500_000));
    huge_header.extend_from_slice(b"\r\n\r\n");
    let mut long_uri = b"GET /".to_vec();
    long_uri.extend(std::iter::repeat_n(b'a', 70_000));
    long_uri.extend_from_slice(b" HTTP/1.1\r\nHost: x\r\n\r\n");
    let cases: [(&[u8], &str); 3] = [
        (&huge_header, "431"),
        (&long_uri, "414"),
        (
            b"GET /runs HTTP/1.1\r\nHost: x\r\nX-Bad: a\x01b\r\n\r\n",
            "400",
        ),
    ];
    for (request, status) in cases {
        let answer = raw(served.addr, request).await;
        let (head, body) = answer.split_once("\r\n\r\n").expect("a head and a body");
        assert!(head.starts_with(&format!("HTTP/1.1 {status} ")), "{head}");
        assert!(head.contains("openwop-version: 2.0"), "{head}");
        assert!(head.contains("content-type: application/json"), "{head}");
        let json: serde_json::Value = serde_json::from_str(body).expect("a JSON body");
        assert_eq!(json["error"], "validation_error", "{body}");
        assert!(json["message"].as_str().is_some_and(|m| !m.is_empty()));
    }
    // The host is unharmed: the next request is served.
    let ok = raw(
        served.addr,
        b"GET /.well-known/openwop HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    )
    .await;
    assert!(ok.starts_with("HTTP/1.1 200 "), "{ok}");
}

/// The same refusals on an A2A interface URL or the MCP endpoint are that edge's error,
/// never the OpenWOP envelope (interop.md, "A2A error details": a refusal before dispatch
/// included); the request line says which, also on a kept-alive connection's second
/// request. (A request pipelined behind another, read in the same bytes, is answered in the
/// host's shape: HTTP clients do not pipeline.)
#[tokio::test]
async fn http_layer_refusals_on_a2a_and_mcp_urls_are_in_their_shape() {
    let served = serve(Limits::default()).await;
    let bad = |path: &str| format!("POST {path} HTTP/1.1\r\nHost: x\r\nX-Bad: a\x01b\r\n\r\n");
    let mut long_uri = b"GET /a2a/rest/tasks/".to_vec();
    long_uri.extend(std::iter::repeat_n(b'a', 70_000));
    long_uri.extend_from_slice(b" HTTP/1.1\r\nHost: x\r\n\r\n");
    for (request, status, check) in [
        (bad("/a2a/jsonrpc").into_bytes(), "400", "jsonrpc"),
        (bad("/mcp").into_bytes(), "400", "jsonrpc"),
        (long_uri, "414", "rest"),
    ] {
        let answer = raw(served.addr, &request).await;
        // The last answer on the connection is the refusal (a 4xx; the refusal's message
        // names "HTTP/1.1" too).
        let refusal = &answer[answer.rfind("HTTP/1.1 4").expect("an answer")..];
        let (head, body) = refusal
            .split_once("\r\n\r\n")
            .unwrap_or_else(|| panic!("a head and a body: {answer}"));
        assert!(head.starts_with(&format!("HTTP/1.1 {status} ")), "{head}");
        assert!(!head.contains("openwop-version"), "{head}");
        let json: serde_json::Value = serde_json::from_str(body).expect("a JSON body");
        assert_ne!(json["error"], "validation_error", "{body}");
        match check {
            "jsonrpc" => {
                assert_eq!(json["jsonrpc"], "2.0", "{body}");
                assert_eq!(json["error"]["code"], -32600, "{body}");
            }
            _ => {
                assert_eq!(json["error"]["code"], 414, "{body}");
                assert_eq!(json["error"]["status"], "INVALID_ARGUMENT", "{body}");
            }
        }
    }
    // A kept-alive connection: a first request answered, then a bad one on it.
    let mut stream = TcpStream::connect(served.addr).await.expect("connect");
    stream
        .write_all(b"GET /.well-known/openwop HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .expect("write");
    let mut first = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&first).contains("\r\n\r\n{") {
        let n = stream.read(&mut buf).await.expect("read");
        assert!(n > 0, "closed before the first answer");
        first.extend_from_slice(&buf[..n]);
    }
    // Let the first answer's body go out whole before the next request.
    tokio::time::sleep(Duration::from_millis(300)).await;
    stream
        .write_all(bad("/a2a/jsonrpc").as_bytes())
        .await
        .expect("write");
    let (rest, closed) = read_until_closed(&mut stream, Duration::from_secs(20)).await;
    assert!(closed, "a refused connection is closed");
    let answer = String::from_utf8_lossy(&rest).into_owned();
    let refusal = &answer[answer.rfind("HTTP/1.1 4").expect("a refusal")..];
    assert!(!refusal.contains("openwop-version"), "{refusal}");
    assert!(refusal.contains(r#""jsonrpc":"2.0""#), "{refusal}");
}

/// A connection that has sent nothing yet (a load balancer's TCP check, a scanner) does
/// not hold the shutdown: it is let go at once, where the server waited for its first
/// byte until `first_request_timeout`, however long the grace.
#[tokio::test]
async fn shutdown_does_not_wait_for_a_connection_that_has_sent_nothing() {
    let mut s = serve(Limits {
        first_request_timeout: Duration::from_secs(30),
        shutdown_grace: Duration::from_secs(30),
        ..Limits::default()
    })
    .await;
    let mut silent = TcpStream::connect(s.addr).await.expect("connect");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let started = Instant::now();
    let _ = s.stopper.send(true);
    tokio::time::timeout(Duration::from_secs(10), s.take_done())
        .await
        .expect("the server stops without waiting for the silent connection")
        .expect("join")
        .expect("serve");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let (_, closed) = read_until_closed(&mut silent, Duration::from_secs(2)).await;
    assert!(closed, "the silent connection was let go");
}
