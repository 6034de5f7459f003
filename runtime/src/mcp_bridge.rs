//! `openwop mcp-stdio --connect URL`: a stdio ↔ streamable-HTTP bridge to a running host.
//!
//! A desktop MCP client spawns its server and speaks newline-delimited JSON-RPC on the
//! child's stdin/stdout. With SQLite one process holds a data dir, so a second host process
//! cannot share `openwop serve`'s runs; this bridge opens no store at all: it forwards each
//! line to the host's `POST /mcp` with the caller's key and writes every JSON-RPC message the
//! host answers (a JSON body, or each event of an SSE answer) back as one line. Desktop
//! clients therefore see the same runs as HTTP clients.
//!
//! What the bridge adds so that a plain stdio client passes the HTTP edge's checks:
//! - the SEP-2243 mirrors a 2026-07-28 request must carry (`Mcp-Method`, `Mcp-Name`,
//!   `MCP-Protocol-Version` from `_meta`, and `Mcp-Param-*` for the arguments a tool's
//!   `inputSchema` marks `x-mcp-header`, learnt from the `tools/list` answers it relays);
//! - for the 2025-11-25 era, the `Mcp-Session-Id` and negotiated `MCP-Protocol-Version`
//!   of the session `initialize` opened (closed with `DELETE` when stdin ends).
//!
//! The connection is the user's own (like `curl` to their host), so it does not go
//! through the egress guard, which judges calls the host makes on a workflow's behalf.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::StreamExt as _;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use crate::edge::mcp::gate::{META_VERSION, name_of};
use crate::peers::mcp::{header_safe, param_headers};

/// JSON-RPC's "internal error": what a line gets when the host could not be asked or
/// answered with something that is not JSON-RPC (the HTTP status is in `data`).
const BRIDGE_ERROR: i64 = -32603;
const PARSE_ERROR: i64 = -32700;

/// A bridge to one host's MCP endpoint, acting with one key.
pub struct Bridge {
    http: reqwest::Client,
    endpoint: reqwest::Url,
    token: String,
    state: Mutex<Learnt>,
}

/// What the bridge learns from the traffic it relays.
#[derive(Default)]
struct Learnt {
    /// The 2025-11-25 session `initialize` opened, and its negotiated revision.
    session: Option<String>,
    session_version: Option<String>,
    /// Each tool's `inputSchema`, from the `tools/list` answers relayed so far.
    schemas: HashMap<String, Value>,
}

impl Bridge {
    /// `url` is the host's MCP endpoint, or the host's origin (then `/mcp` is used).
    /// `key` is the API key, or `TENANT:KEY` as `mcp-stdio` takes it locally (the tenant is
    /// the key's own; only KEY is sent).
    pub fn new(url: &str, key: &str) -> Result<Bridge, String> {
        let mut endpoint = reqwest::Url::parse(url).map_err(|e| format!("--connect {url}: {e}"))?;
        if !matches!(endpoint.scheme(), "http" | "https") {
            return Err(format!(
                "--connect {url}: only http and https URLs are served"
            ));
        }
        if matches!(endpoint.path(), "" | "/") {
            endpoint.set_path("/mcp");
        }
        let key = key.trim();
        let token = key.split_once(':').map_or(key, |(_, k)| k).to_owned();
        if token.is_empty() {
            return Err("the api key is empty".into());
        }
        let http = crate::trust::http_client()
            .connect_timeout(std::time::Duration::from_secs(10))
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        Ok(Bridge {
            http,
            endpoint,
            token,
            state: Mutex::new(Learnt::default()),
        })
    }

    fn learnt(&self) -> std::sync::MutexGuard<'_, Learnt> {
        // A panic elsewhere cannot leave these maps half-written in a way that matters.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The headers the HTTP edge wants beside this message's body.
    fn headers_for(&self, message: &Value) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            reqwest::header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        if let Ok(v) = HeaderValue::from_str(&format!("Bearer {}", self.token)) {
            h.insert(reqwest::header::AUTHORIZATION, v);
        }
        let learnt = self.learnt();
        if let Some(v) = learnt
            .session
            .as_deref()
            .and_then(|s| HeaderValue::from_str(s).ok())
        {
            h.insert(HeaderName::from_static("mcp-session-id"), v);
        }
        let params = message.get("params").unwrap_or(&Value::Null);
        let version = params
            .get("_meta")
            .and_then(|m| m.get(META_VERSION))
            .and_then(Value::as_str)
            .or(learnt.session_version.as_deref());
        if let Some(v) = version.and_then(|v| HeaderValue::from_str(v).ok()) {
            h.insert(HeaderName::from_static("mcp-protocol-version"), v);
        }
        let Some(method) = message.get("method").and_then(Value::as_str) else {
            return h;
        };
        if let Some(v) = header_safe(method) {
            h.insert(HeaderName::from_static("mcp-method"), v);
        }
        // The value the edge compares `Mcp-Name` with (`gate::name_of`), spelled as text.
        let name = match name_of(method, params) {
            Some(Value::String(s)) => Some(s.clone()),
            Some(v @ Value::Number(_)) => Some(v.to_string()),
            _ => None,
        };
        if let Some(v) = name.as_deref().and_then(header_safe) {
            h.insert(HeaderName::from_static("mcp-name"), v);
        }
        if method == "tools/call"
            && let Some(tool) = params.get("name").and_then(Value::as_str)
        {
            let arguments = params.get("arguments").unwrap_or(&Value::Null);
            param_headers(learnt.schemas.get(tool), arguments, &mut h);
        }
        h
    }

    /// Learns from one message the host sent in answer to a request of `method`.
    fn learn(&self, method: Option<&str>, answer: &Value) {
        let Some(result) = answer.get("result") else {
            return;
        };
        match method {
            Some("tools/list") => {
                let Some(tools) = result.get("tools").and_then(Value::as_array) else {
                    return;
                };
                let mut learnt = self.learnt();
                for tool in tools {
                    if let (Some(name), Some(schema)) = (
                        tool.get("name").and_then(Value::as_str),
                        tool.get("inputSchema"),
                    ) {
                        learnt.schemas.insert(name.to_owned(), schema.clone());
                    }
                }
            }
            Some("initialize") => {
                if let Some(v) = result.get("protocolVersion").and_then(Value::as_str) {
                    self.learnt().session_version = Some(v.to_owned());
                }
            }
            _ => {}
        }
    }

    /// Forwards one client message (`raw`, the line as the client wrote it; `message`, the
    /// same parsed) and sends every message of the host's answer to `out`. The line goes out
    /// and answers come back as the bytes they were, so an id no `f64` holds
    /// (`123456789012345678901234567890`) reaches the host and returns unchanged.
    async fn forward(
        self: Arc<Self>,
        message: Value,
        raw: String,
        out: mpsc::UnboundedSender<String>,
    ) {
        let id = raw_id(&raw);
        let method = message
            .get("method")
            .and_then(Value::as_str)
            .map(str::to_owned);
        // A request expects an answer; a notification or a response to the host does not.
        let expects_answer = method.is_some() && id.is_some();
        let fail = |why: String, status: Option<u16>| {
            tracing::warn!(%why, "mcp bridge");
            if expects_answer {
                let data = status.map_or(Value::Null, |s| json!({"httpStatus": s}));
                let error = json!({"code": BRIDGE_ERROR, "message": why, "data": data});
                let _ = out.send(error_line(id.as_deref(), &error));
            }
        };
        let response = self
            .http
            .post(self.endpoint.clone())
            .headers(self.headers_for(&message))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(raw.clone())
            .send()
            .await;
        let response = match response {
            Ok(r) => r,
            Err(e) => return fail(format!("cannot reach {}: {e}", self.endpoint), None),
        };
        let status = response.status();
        if method.as_deref() == Some("initialize")
            && let Some(session) = response
                .headers()
                .get("mcp-session-id")
                .and_then(|v| v.to_str().ok())
        {
            self.learnt().session = Some(session.to_owned());
        }
        let is_sse = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.starts_with("text/event-stream"));
        let mut relayed = 0usize;
        let mut relay = |text: &str| {
            let Ok(answer) = serde_json::from_str::<Value>(text) else {
                return;
            };
            self.learn(method.as_deref(), &answer);
            relayed += 1;
            // A refusal before the body was read (401, 429, a bad header) names no id; on
            // HTTP it answers this POST, so on stdio it answers this request.
            let line = match answer.get("error") {
                Some(error) if expects_answer && answer["id"].is_null() => {
                    error_line(id.as_deref(), error)
                }
                // As the host wrote it, unless it spans lines (one message, one line).
                _ if text.contains('\n') => answer.to_string(),
                _ => text.trim().to_owned(),
            };
            let _ = out.send(line);
        };
        if is_sse {
            let mut events = SseLines::default();
            let mut body = response.bytes_stream();
            while let Some(chunk) = body.next().await {
                let Ok(chunk) = chunk else { break };
                for data in events.push(&chunk) {
                    relay(&data);
                }
            }
        } else {
            match response.bytes().await {
                Ok(bytes) if !bytes.is_empty() => {
                    if let Ok(text) = std::str::from_utf8(&bytes) {
                        relay(text);
                    }
                }
                _ => {}
            }
        }
        if relayed == 0 && expects_answer {
            let why = if status.is_success() {
                format!("the host answered HTTP {status} with no JSON-RPC message")
            } else {
                format!("the host refused the request: HTTP {status}")
            };
            fail(why, Some(status.as_u16()));
        }
    }

    /// Ends the 2025-11-25 session, if one was opened (MCP: a client done with a session
    /// SHOULD send `DELETE`).
    async fn close(&self) {
        let session = self.learnt().session.clone();
        let Some(session) = session else { return };
        let _ = self
            .http
            .delete(self.endpoint.clone())
            .bearer_auth(&self.token)
            .header("mcp-session-id", session)
            .send()
            .await;
    }
}

/// Runs the bridge until `input` ends: every line is forwarded concurrently (a long tool
/// call does not hold back a `notifications/cancelled` for it), answers are written one per
/// line in the order they arrive.
pub async fn run<R, W>(bridge: Arc<Bridge>, input: R, mut output: W)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let writer = tokio::spawn(async move {
        while let Some(line) = rx.recv().await {
            if output.write_all(line.as_bytes()).await.is_err()
                || output.write_all(b"\n").await.is_err()
                || output.flush().await.is_err()
            {
                break;
            }
        }
    });
    let mut lines = BufReader::new(input).lines();
    let mut calls = JoinSet::new();
    while let Ok(Some(line)) = lines.next_line().await {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(&line) {
            Ok(message) => {
                calls.spawn(bridge.clone().forward(message, line, tx.clone()));
            }
            Err(e) => {
                let error = json!({"code": PARSE_ERROR, "message": format!("not JSON: {e}")});
                let _ = tx.send(error_line(None, &error));
            }
        }
        // Reap finished calls so a long session does not keep every handle.
        while calls.try_join_next().is_some() {}
    }
    // The client closed our stdin: nobody reads answers any more.
    calls.shutdown().await;
    bridge.close().await;
    drop(tx);
    let _ = writer.await;
}

/// The request id as the client spelled it (its raw JSON text), if the line has one.
fn raw_id(line: &str) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct IdOnly<'a> {
        #[serde(borrow)]
        id: Option<&'a serde_json::value::RawValue>,
    }
    serde_json::from_str::<IdOnly<'_>>(line)
        .ok()
        .and_then(|m| m.id)
        .map(|id| id.get().to_owned())
}

/// A JSON-RPC error answering the request whose raw id is `id` (`null` without one).
fn error_line(id: Option<&str>, error: &Value) -> String {
    let id = id
        .and_then(crate::edge::jsonrpc::Id::from_raw)
        .unwrap_or_else(crate::edge::jsonrpc::Id::null);
    crate::edge::jsonrpc::failure(&id, error)
}

/// The `data` of each server-sent event, from a byte stream cut anywhere.
#[derive(Default)]
struct SseLines {
    pending: Vec<u8>,
    data: Vec<String>,
}

impl SseLines {
    fn push(&mut self, chunk: &[u8]) -> Vec<String> {
        self.pending.extend_from_slice(chunk);
        let mut events = Vec::new();
        while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
            let raw: Vec<u8> = self.pending.drain(..=end).collect();
            let line = String::from_utf8_lossy(&raw);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if !self.data.is_empty() {
                    events.push(self.data.join("\n"));
                    self.data.clear();
                }
            } else if let Some(value) = line.strip_prefix("data:") {
                self.data
                    .push(value.strip_prefix(' ').unwrap_or(value).to_owned());
            }
            // `id:`, `event:`, `retry:` and comments carry nothing a stdio client reads.
        }
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sse_events_are_read_across_chunk_boundaries() {
        let mut sse = SseLines::default();
        assert!(sse.push(b": keep-alive\n\nid: 1\nda").is_empty());
        assert_eq!(
            sse.push(b"ta: {\"a\":1}\r\n\ndata: x\ndata: y\n\n"),
            vec!["{\"a\":1}".to_owned(), "x\ny".to_owned()]
        );
    }

    #[test]
    fn headers_mirror_the_body_and_the_learnt_schema() {
        let bridge = Bridge::new("http://127.0.0.1:1", "acme:acme-secret-key-123").expect("bridge");
        assert_eq!(bridge.endpoint.path(), "/mcp");
        bridge.learn(
            Some("tools/list"),
            &json!({"result": {"tools": [{"name": "geo", "inputSchema": {"type": "object",
                "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}}]}}),
        );
        let h = bridge.headers_for(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "geo", "arguments": {"region": "eu-west"},
                       "_meta": {META_VERSION: "2026-07-28"}}}));
        assert_eq!(h["authorization"], "Bearer acme-secret-key-123");
        assert_eq!(h["mcp-method"], "tools/call");
        assert_eq!(h["mcp-name"], "geo");
        assert_eq!(h["mcp-protocol-version"], "2026-07-28");
        assert_eq!(h["mcp-param-region"], "eu-west");
    }

    #[test]
    fn only_http_urls_are_bridged() {
        assert!(Bridge::new("file:///etc/passwd", "k-0123456789abcdef").is_err());
        assert!(Bridge::new("not a url", "k-0123456789abcdef").is_err());
    }
}
