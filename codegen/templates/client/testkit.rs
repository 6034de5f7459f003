//! A scripted host for testing code that uses the client, without a live OpenWOP host
//! (feature `testkit`). Written by hand (`codegen/templates/client/testkit.rs`).
//!
//! [`ScriptedHost`] listens on a loopback port and answers each `METHOD /path` (or, with
//! [`ScriptedHost::on_query`], each `METHOD /path?exact=query`) with the replies it was
//! given, in order (the last one repeats): JSON answers, errors with
//! `Retry-After`, an answer that never comes, a dropped connection, an event stream, or the
//! request forwarded to a real host (optionally dropping the answer, to test what a lost
//! answer does). It records every request. It speaks just enough HTTP/1.1 for the client
//! (no server framework), so the feature adds nothing but tokio's socket support.
//!
//! ```
//! use openwop_sdk::client::testkit::{Reply, ScriptedHost};
//! use openwop_sdk::client::{Client, RetryPolicy};
//! use serde_json::json;
//! use std::time::Duration;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let host = ScriptedHost::start().await?;
//! host.on("GET", "/runs", [
//!     Reply::error(503, "service_unavailable", "warming up").header("Retry-After", "0"),
//!     Reply::json(200, &json!({"runs": []})),
//! ]);
//! let client = Client::builder(host.url())
//!     .retry(RetryPolicy::default().initial_backoff(Duration::from_millis(1)))
//!     .build()?;
//! let page = client.list_runs().send().await?;
//! assert!(page.runs.is_empty());
//! assert_eq!(host.hits("GET", "/runs"), 2);
//! # Ok(()) }
//! ```
// openwop-codegen: requires model RunStatus
// openwop-codegen: requires answer listRuns RunList
// openwop-codegen: requires field RunList.runs

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, ToSocketAddrs};

/// A request the host received.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// `GET`, `POST`, …
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// The query string, without `?`.
    pub query: Option<String>,
    /// Header names in lower case, in the order received.
    pub headers: Vec<(String, String)>,
    /// The body as sent.
    pub body: Vec<u8>,
}

impl RecordedRequest {
    /// The first value of a header (name in any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON, when it is.
    pub fn json(&self) -> Option<serde_json::Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// The query's `name=value` pairs, percent-decoded (`+` is a space, as the client's
    /// form encoding writes it), in the order sent; a name without `=` has an empty value.
    pub fn query_pairs(&self) -> Vec<(String, String)> {
        self.query.as_deref().map(query_pairs).unwrap_or_default()
    }
}

/// `a=1&b=x%2Fy+z` → `[("a", "1"), ("b", "x/y z")]`; empty pieces (`a=1&&b=2`) are skipped.
/// The form decoding of reqwest's `Url` (the `url` crate's), which the client encodes with.
fn query_pairs(query: &str) -> Vec<(String, String)> {
    let Ok(mut url) = reqwest::Url::parse("http://scripted.host/") else {
        return Vec::new();
    };
    url.set_query(Some(query));
    url.query_pairs()
        .map(|(name, value)| (name.into_owned(), value.into_owned()))
        .collect()
}

/// A query as a route compares it: its decoded pairs, sorted (the order they were sent in
/// does not count, how many times a pair was sent does).
fn query_key<N: Into<String>, V: Into<String>>(
    pairs: impl IntoIterator<Item = (N, V)>,
) -> Vec<(String, String)> {
    let mut pairs: Vec<(String, String)> = pairs
        .into_iter()
        .map(|(n, v)| (n.into(), v.into()))
        .collect();
    pairs.sort();
    pairs
}

/// What the host does with one request.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Reply {
    /// Answers this status, headers and body.
    Answer {
        /// The HTTP status.
        status: u16,
        /// Extra headers (`Content-Length` is added).
        headers: Vec<(String, String)>,
        /// The body.
        body: Vec<u8>,
    },
    /// Reads the request and never answers (until the host is dropped).
    Hang,
    /// Reads the request and closes the connection without answering.
    Drop,
    /// Answers `200 text/event-stream`, writes each chunk (raw SSE text such as
    /// `"id: 1\ndata: {}\n\n"`), then closes the stream, or keeps it open silently when
    /// `then_hang`.
    Events {
        /// Raw SSE text, written in order.
        chunks: Vec<String>,
        /// Keep the connection open after the last chunk.
        then_hang: bool,
    },
    /// Answers this status and headers with a `Content-Length` of `declared`, writes only
    /// `body` (shorter), and closes: an answer cut short.
    CutShort {
        /// The HTTP status.
        status: u16,
        /// Extra headers.
        headers: Vec<(String, String)>,
        /// What is written of the body.
        body: Vec<u8>,
        /// The length the head promises.
        declared: usize,
    },
    /// Waits, then gives `reply`: a slow host.
    Delayed {
        /// How long before anything is written.
        wait: std::time::Duration,
        /// What follows.
        reply: Box<Reply>,
    },
    /// Sends the request to `upstream` (a base URL) and relays its answer; with
    /// `drop_answer`, the upstream acts on the request but the client never hears back.
    Forward {
        /// The real host's base URL.
        upstream: String,
        /// Close the client's connection instead of relaying the answer.
        drop_answer: bool,
    },
}

impl Reply {
    /// An empty answer with `status`.
    pub fn status(status: u16) -> Self {
        Reply::Answer {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// A JSON answer.
    pub fn json(status: u16, body: &serde_json::Value) -> Self {
        Reply::Answer {
            status,
            headers: vec![("Content-Type".to_owned(), "application/json".to_owned())],
            body: body.to_string().into_bytes(),
        }
    }

    /// An OpenWOP error envelope (`{"error": code, "message": message}`).
    pub fn error(status: u16, code: &str, message: &str) -> Self {
        Self::json(
            status,
            &serde_json::json!({ "error": code, "message": message }),
        )
    }

    /// The same answer with one more header (ignored by replies that are not answers).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        if let Reply::Answer { headers, .. } = &mut self {
            headers.push((name.to_owned(), value.to_owned()));
        }
        self
    }

    /// A JSON answer whose body stops after `keep` bytes, the connection then closed.
    pub fn cut_short(status: u16, body: &serde_json::Value, keep: usize) -> Self {
        let full = body.to_string().into_bytes();
        Reply::CutShort {
            status,
            headers: vec![("Content-Type".to_owned(), "application/json".to_owned())],
            body: full[..keep.min(full.len())].to_vec(),
            declared: full.len(),
        }
    }

    /// `reply`, after `wait`.
    pub fn delayed(wait: std::time::Duration, reply: Reply) -> Self {
        Reply::Delayed {
            wait,
            reply: Box::new(reply),
        }
    }

    /// An answer that never comes.
    pub fn hang() -> Self {
        Reply::Hang
    }

    /// A connection closed before any answer.
    pub fn drop_connection() -> Self {
        Reply::Drop
    }

    /// An event stream of these raw SSE chunks, closed after the last.
    pub fn events<S: Into<String>>(chunks: impl IntoIterator<Item = S>) -> Self {
        Reply::Events {
            chunks: chunks.into_iter().map(Into::into).collect(),
            then_hang: false,
        }
    }

    /// An event stream of these raw SSE chunks that stays open, silent, after the last.
    pub fn events_then_hang<S: Into<String>>(chunks: impl IntoIterator<Item = S>) -> Self {
        Reply::Events {
            chunks: chunks.into_iter().map(Into::into).collect(),
            then_hang: true,
        }
    }

    /// The request relayed to a real host and its answer relayed back.
    pub fn forward(upstream: impl Into<String>) -> Self {
        Reply::Forward {
            upstream: upstream.into(),
            drop_answer: false,
        }
    }

    /// The request relayed to a real host, whose answer is then lost.
    pub fn forward_and_drop(upstream: impl Into<String>) -> Self {
        Reply::Forward {
            upstream: upstream.into(),
            drop_answer: true,
        }
    }
}

#[derive(Debug)]
struct Route {
    method: String,
    path: String,
    /// The query the route answers, as [`query_key`] makes it; `None`: any query.
    query: Option<Vec<(String, String)>>,
    replies: VecDeque<Reply>,
    last: Option<Reply>,
    hits: usize,
}

#[derive(Debug, Default)]
struct Script {
    routes: Vec<Route>,
    requests: Vec<RecordedRequest>,
}

/// A loopback HTTP host that answers from a script; stops when dropped.
#[derive(Debug)]
pub struct ScriptedHost {
    url: String,
    script: Arc<Mutex<Script>>,
    stop: tokio::sync::watch::Sender<bool>,
}

impl Drop for ScriptedHost {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

fn lock(script: &Mutex<Script>) -> MutexGuard<'_, Script> {
    // A panicking test thread must not hide the script from the others.
    script.lock().unwrap_or_else(|e| e.into_inner())
}

impl ScriptedHost {
    /// A host on `127.0.0.1`, on a port the system picks.
    pub async fn start() -> io::Result<Self> {
        Self::bind("127.0.0.1:0").await
    }

    /// A host on the given address.
    pub async fn bind(addr: impl ToSocketAddrs) -> io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        let url = format!("http://{}", listener.local_addr()?);
        let script = Arc::new(Mutex::new(Script::default()));
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let shared = script.clone();
        tokio::spawn(async move {
            let mut stopped_accept = stopped.clone();
            loop {
                let accepted = tokio::select! {
                    accepted = listener.accept() => accepted,
                    _ = stopped_accept.changed() => return,
                };
                let Ok((socket, _)) = accepted else { continue };
                tokio::spawn(serve(socket, shared.clone(), stopped.clone()));
            }
        });
        Ok(Self { url, script, stop })
    }

    /// The base URL (`http://127.0.0.1:<port>`), for `Client::new`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Answers `method path` (the path without its query) with `replies` in order; once
    /// they are used up, the last one repeats. Another call for the same route replaces it.
    /// It answers whatever the query, unless a route of [`ScriptedHost::on_query`] for the
    /// same path matches the request's query: that one answers.
    pub fn on(&self, method: &str, path: &str, replies: impl IntoIterator<Item = Reply>) -> &Self {
        self.route(method, path, None, replies)
    }

    /// Answers `method path` only when the request's query is exactly `query`: the same
    /// `name=value` pairs, in any order, compared percent-decoded (`%2F` is `/`, `+` a
    /// space), none missing and none more (an empty `query` matches a request without
    /// one). Such a route wins over the [`ScriptedHost::on`] route of its path, whatever
    /// the order they were given in; another call for the same path and query replaces it.
    ///
    /// ```
    /// use openwop_sdk::client::testkit::{Reply, ScriptedHost};
    /// use openwop_sdk::client::Client;
    /// use openwop_sdk::models::RunStatus;
    /// use serde_json::json;
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let host = ScriptedHost::start().await?;
    /// // Every other listing is empty…
    /// host.on("GET", "/runs", [Reply::json(200, &json!({"runs": []}))]);
    /// // …but the failed runs of `acme/billing` are not.
    /// host.on_query(
    ///     "GET",
    ///     "/runs",
    ///     [("workflowId", "acme/billing"), ("status", "failed")],
    ///     [Reply::error(503, "service_unavailable", "the listing is down")],
    /// );
    /// let client = Client::builder(host.url())
    ///     .retry(openwop_sdk::client::RetryPolicy::none())
    ///     .build()?;
    /// assert!(client.list_runs().send().await?.runs.is_empty());
    /// let failed = client
    ///     .list_runs()
    ///     .status(RunStatus::Failed)
    ///     .workflow_id("acme/billing")
    ///     .send()
    ///     .await;
    /// assert_eq!(failed.unwrap_err().status(), Some(503));
    /// let query = [("status", "failed"), ("workflowId", "acme/billing")];
    /// assert_eq!(host.hits_query("GET", "/runs", query), 1);
    /// assert_eq!(host.hits("GET", "/runs"), 2);
    /// # Ok(()) }
    /// ```
    pub fn on_query<N: Into<String>, V: Into<String>>(
        &self,
        method: &str,
        path: &str,
        query: impl IntoIterator<Item = (N, V)>,
        replies: impl IntoIterator<Item = Reply>,
    ) -> &Self {
        self.route(method, path, Some(query_key(query)), replies)
    }

    fn route(
        &self,
        method: &str,
        path: &str,
        query: Option<Vec<(String, String)>>,
        replies: impl IntoIterator<Item = Reply>,
    ) -> &Self {
        let mut script = lock(&self.script);
        script.routes.retain(|r| {
            !(r.method.eq_ignore_ascii_case(method) && r.path == path && r.query == query)
        });
        script.routes.push(Route {
            method: method.to_ascii_uppercase(),
            path: path.to_owned(),
            query,
            replies: replies.into_iter().collect(),
            last: None,
            hits: 0,
        });
        self
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.script).requests.clone()
    }

    /// How many requests `method path` has received, whatever their query (the routes of
    /// that path added up, each counted since it was last given).
    pub fn hits(&self, method: &str, path: &str) -> usize {
        lock(&self.script)
            .routes
            .iter()
            .filter(|r| r.method.eq_ignore_ascii_case(method) && r.path == path)
            .map(|r| r.hits)
            .sum()
    }

    /// How many requests the [`ScriptedHost::on_query`] route of `method path` and `query`
    /// has answered (the pairs in any order).
    pub fn hits_query<N: Into<String>, V: Into<String>>(
        &self,
        method: &str,
        path: &str,
        query: impl IntoIterator<Item = (N, V)>,
    ) -> usize {
        let query = Some(query_key(query));
        lock(&self.script)
            .routes
            .iter()
            .find(|r| r.method.eq_ignore_ascii_case(method) && r.path == path && r.query == query)
            .map_or(0, |r| r.hits)
    }
}

fn next_reply(script: &Mutex<Script>, request: &RecordedRequest) -> Reply {
    let mut script = lock(script);
    script.requests.push(request.clone());
    let query = query_key(request.query_pairs());
    // A route for this exact query first, then the path's route for any query.
    let at = script
        .routes
        .iter()
        .position(|r| {
            r.method == request.method && r.path == request.path && r.query.as_ref() == Some(&query)
        })
        .or_else(|| {
            script.routes.iter().position(|r| {
                r.method == request.method && r.path == request.path && r.query.is_none()
            })
        });
    let Some(route) = at.map(|at| &mut script.routes[at]) else {
        let message = match &request.query {
            Some(q) => format!(
                "no scripted reply for {} {}?{q}",
                request.method, request.path
            ),
            None => format!("no scripted reply for {} {}", request.method, request.path),
        };
        return Reply::error(404, "not_found", &message);
    };
    route.hits += 1;
    if let Some(reply) = route.replies.pop_front() {
        route.last = Some(reply.clone());
        return reply;
    }
    route.last.clone().unwrap_or_else(|| Reply::status(404))
}

/// Reads one request; `None` when the client closed the connection.
async fn read_request(socket: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<RecordedRequest> {
    let head_end = loop {
        if let Some(end) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
            break end;
        }
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_owned();
    let target = first.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let length = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(0);
    let body_start = head_end + 4;
    while buffer.len() < body_start + length {
        let mut chunk = [0u8; 4096];
        let n = socket.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    let body = buffer[body_start..body_start + length].to_vec();
    buffer.drain(..body_start + length);
    let (path, query) = match target.split_once('?') {
        Some((p, q)) => (p.to_owned(), Some(q.to_owned())),
        None => (target, None),
    };
    Some(RecordedRequest {
        method,
        path,
        query,
        headers,
        body,
    })
}

async fn write_answer(
    socket: &mut TcpStream,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
) -> io::Result<()> {
    let mut head = format!(
        "HTTP/1.1 {status} Scripted\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    socket.write_all(head.as_bytes()).await?;
    socket.write_all(body).await?;
    socket.flush().await
}

async fn serve(
    mut socket: TcpStream,
    script: Arc<Mutex<Script>>,
    mut stopped: tokio::sync::watch::Receiver<bool>,
) {
    let mut buffer = Vec::new();
    loop {
        let request = tokio::select! {
            request = read_request(&mut socket, &mut buffer) => request,
            _ = stopped.changed() => return,
        };
        let Some(request) = request else { return };
        let mut reply = next_reply(&script, &request);
        while let Reply::Delayed { wait, reply: next } = reply {
            tokio::time::sleep(wait).await;
            reply = *next;
        }
        match reply {
            Reply::Delayed { .. } => unreachable!("unwrapped above"),
            Reply::CutShort {
                status,
                headers,
                body,
                declared,
            } => {
                let mut head =
                    format!("HTTP/1.1 {status} Scripted\r\ncontent-length: {declared}\r\n");
                for (name, value) in &headers {
                    head.push_str(&format!("{name}: {value}\r\n"));
                }
                head.push_str("\r\n");
                let _ = socket.write_all(head.as_bytes()).await;
                let _ = socket.write_all(&body).await;
                let _ = socket.flush().await;
                return;
            }
            Reply::Answer {
                status,
                headers,
                body,
            } => {
                if write_answer(&mut socket, status, &headers, &body)
                    .await
                    .is_err()
                {
                    return;
                }
            }
            Reply::Hang => {
                let _ = stopped.changed().await;
                return;
            }
            Reply::Drop => return,
            Reply::Events { chunks, then_hang } => {
                let head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nconnection: close\r\n\r\n";
                if socket.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                for chunk in chunks {
                    if socket.write_all(chunk.as_bytes()).await.is_err() {
                        return;
                    }
                    let _ = socket.flush().await;
                }
                if then_hang {
                    let _ = stopped.changed().await;
                }
                return;
            }
            Reply::Forward {
                upstream,
                drop_answer,
            } => {
                let answer = forward(&upstream, &request).await;
                if drop_answer {
                    return;
                }
                let (status, headers, body) = match answer {
                    Ok(answer) => answer,
                    Err(e) => (502, Vec::new(), e.to_string().into_bytes()),
                };
                if write_answer(&mut socket, status, &headers, &body)
                    .await
                    .is_err()
                {
                    return;
                }
            }
        }
    }
}

/// Relays a request to a real host; answers its status, end-to-end headers and body.
async fn forward(
    upstream: &str,
    request: &RecordedRequest,
) -> Result<(u16, Vec<(String, String)>, Vec<u8>), reqwest::Error> {
    let hop = [
        "host",
        "content-length",
        "connection",
        "transfer-encoding",
        "keep-alive",
    ];
    let mut url = format!("{}{}", upstream.trim_end_matches('/'), request.path);
    if let Some(query) = &request.query {
        url.push('?');
        url.push_str(query);
    }
    let method =
        reqwest::Method::from_bytes(request.method.as_bytes()).unwrap_or(reqwest::Method::GET);
    let mut outgoing = reqwest::Client::new().request(method, url);
    for (name, value) in request
        .headers
        .iter()
        .filter(|(n, _)| !hop.contains(&n.as_str()))
    {
        outgoing = outgoing.header(name.as_str(), value.as_str());
    }
    let answer = outgoing.body(request.body.clone()).send().await?;
    let status = answer.status().as_u16();
    let headers = answer
        .headers()
        .iter()
        .filter(|(n, _)| !hop.contains(&n.as_str()))
        .filter_map(|(n, v)| Some((n.to_string(), v.to_str().ok()?.to_owned())))
        .collect();
    let body = answer.bytes().await?.to_vec();
    Ok((status, headers, body))
}
