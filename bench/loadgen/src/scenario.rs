//! What one iteration of each load is: the requests it sends and what a good answer is.

use crate::client::{Answer, Conn};
use bytes::Bytes;
use hyper::Method;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// GET the URL; any 2xx (the bare axum handler).
    Bare,
    /// GET /.well-known/openwop (no credential).
    Discovery,
    /// GET the status URL of one run created before the measurement.
    RestGet,
    /// POST /runs (echo), then GET its statusUrl (on the next URL when several are given):
    /// two requests per iteration.
    RestCreateGet,
    /// A2A 1.0 JSON-RPC SendMessage (blocking by default) answered with a completed task.
    A2a,
    /// MCP tools/call `echo` the way our host takes it: 2026-07-28 with the SEP-2243
    /// headers (MCP-Protocol-Version, Mcp-Method, Mcp-Name) and `_meta` in the body.
    McpOpenwop,
    /// MCP tools/call `echo` to the TypeScript SDK server: initialize and
    /// notifications/initialized first on each worker (a session when the server opens
    /// one), then tools/call with Mcp-Session-Id.
    McpSdk,
}

/// Settings shared by every worker.
pub struct Scenario {
    pub kind: Kind,
    /// (path) per target URL, in the order given.
    pub paths: Vec<String>,
    pub auth: Option<String>,
    pub a2a_skill: Option<String>,
    pub mcp_protocol: String,
    /// rest-get: the path to read.
    pub status_path: String,
}

/// Per-worker state.
pub struct Worker {
    pub id: usize,
    pub conns: Vec<Conn>,
    pub session: Option<String>,
    pub n: u64,
}

/// This process's tag: its id and start time.
fn run_tag() -> &'static str {
    static TAG: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TAG.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        format!("{}-{nanos}", std::process::id())
    })
}

fn check(ok: bool, what: &str, a: &Answer) -> anyhow::Result<()> {
    if ok {
        Ok(())
    } else {
        let body = String::from_utf8_lossy(&a.body);
        let cut: String = body.chars().take(300).collect();
        anyhow::bail!("{what}: status {} body {cut}", a.status)
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

impl Scenario {
    fn auth_header(&self) -> Option<(&'static str, &str)> {
        self.auth.as_deref().map(|a| ("authorization", a))
    }

    /// Requests made once per worker before its loop (the MCP SDK session).
    pub async fn prepare(&self, w: &mut Worker) -> anyhow::Result<()> {
        if self.kind != Kind::McpSdk {
            return Ok(());
        }
        let init = format!(
            r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{}","capabilities":{{}},"clientInfo":{{"name":"openwop-loadgen","version":"0.1.0"}}}}}}"#,
            self.mcp_protocol
        );
        let headers = [
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
        ];
        let a = w.conns[0]
            .send(Method::POST, &self.paths[0], &headers, Some(init.into()))
            .await?;
        check(
            a.status.is_success() && contains(&a.body, b"\"result\""),
            "initialize",
            &a,
        )?;
        w.session = a
            .headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let mut headers = vec![
            ("content-type", "application/json"),
            ("accept", "application/json, text/event-stream"),
            ("mcp-protocol-version", self.mcp_protocol.as_str()),
        ];
        if let Some(s) = &w.session {
            headers.push(("mcp-session-id", s.as_str()));
        }
        let a = w.conns[0]
            .send(
                Method::POST,
                &self.paths[0],
                &headers,
                Some(Bytes::from_static(
                    br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                )),
            )
            .await?;
        check(a.status.is_success(), "notifications/initialized", &a)?;
        Ok(())
    }

    /// One iteration; pushes each request's latency to `lat` and returns how many requests
    /// it made.
    pub async fn once(&self, w: &mut Worker, lat: &mut Vec<Duration>) -> anyhow::Result<u64> {
        w.n += 1;
        let n = w.n;
        let id = w.id;
        let mut headers: Vec<(&str, &str)> = Vec::with_capacity(8);
        match self.kind {
            Kind::Bare | Kind::Discovery => {
                let t = Instant::now();
                let a = w.conns[0]
                    .send(Method::GET, &self.paths[0], &[], None)
                    .await?;
                lat.push(t.elapsed());
                check(a.status.is_success(), "GET", &a)?;
                Ok(1)
            }
            Kind::RestGet => {
                headers.extend(self.auth_header());
                let t = Instant::now();
                let a = w.conns[0]
                    .send(Method::GET, &self.status_path, &headers, None)
                    .await?;
                lat.push(t.elapsed());
                check(a.status.is_success(), "GET run", &a)?;
                Ok(1)
            }
            Kind::RestCreateGet => {
                headers.extend(self.auth_header());
                headers.push(("content-type", "application/json"));
                let k = (n as usize + id) % w.conns.len();
                let body = format!(r#"{{"workflowId":"echo","inputs":{{"w":{id},"i":{n}}}}}"#);
                let t = Instant::now();
                let a = w.conns[k]
                    .send(Method::POST, &self.paths[k], &headers, Some(body.into()))
                    .await?;
                lat.push(t.elapsed());
                check(a.status.as_u16() == 201, "POST /runs", &a)?;
                let v: serde_json::Value = serde_json::from_slice(&a.body)?;
                let status_url = v["statusUrl"]
                    .as_str()
                    .ok_or_else(|| anyhow::anyhow!("no statusUrl"))?
                    .to_owned();
                let other = (k + 1) % w.conns.len();
                headers.pop();
                let t = Instant::now();
                let a = w.conns[other]
                    .send(Method::GET, &status_url, &headers, None)
                    .await?;
                lat.push(t.elapsed());
                check(a.status.is_success(), "GET run", &a)?;
                Ok(2)
            }
            Kind::A2a => {
                headers.extend(self.auth_header());
                headers.push(("content-type", "application/json"));
                headers.push(("a2a-version", "1.0"));
                let metadata = match &self.a2a_skill {
                    Some(s) => format!(r#","metadata":{{"openwop":{{"skill":"{s}"}}}}"#),
                    None => String::new(),
                };
                // Unique across generator processes too: a messageId the host has seen
                // answers the task it made then, without a new run.
                let run = run_tag();
                let body = format!(
                    r#"{{"jsonrpc":"2.0","id":{n},"method":"SendMessage","params":{{"message":{{"messageId":"lg-{run}-{id}-{n}","role":"ROLE_USER","parts":[{{"data":{{"n":{n}}}}}]{metadata}}}}}}}"#
                );
                let t = Instant::now();
                let a = w.conns[0]
                    .send(Method::POST, &self.paths[0], &headers, Some(body.into()))
                    .await?;
                lat.push(t.elapsed());
                check(
                    a.status.is_success() && contains(&a.body, b"TASK_STATE_COMPLETED"),
                    "SendMessage",
                    &a,
                )?;
                Ok(1)
            }
            Kind::McpOpenwop => {
                headers.extend(self.auth_header());
                headers.push(("content-type", "application/json"));
                headers.push(("accept", "application/json, text/event-stream"));
                headers.push(("mcp-protocol-version", "2026-07-28"));
                headers.push(("mcp-method", "tools/call"));
                headers.push(("mcp-name", "echo"));
                let body = format!(
                    r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{{"name":"echo","arguments":{{"hello":"n{n}"}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
                );
                let t = Instant::now();
                let a = w.conns[0]
                    .send(Method::POST, &self.paths[0], &headers, Some(body.into()))
                    .await?;
                lat.push(t.elapsed());
                check(
                    a.status.is_success()
                        && contains(&a.body, b"\"result\"")
                        && !contains(&a.body, b"\"isError\":true"),
                    "tools/call",
                    &a,
                )?;
                Ok(1)
            }
            Kind::McpSdk => {
                headers.push(("content-type", "application/json"));
                headers.push(("accept", "application/json, text/event-stream"));
                headers.push(("mcp-protocol-version", self.mcp_protocol.as_str()));
                if let Some(s) = &w.session {
                    headers.push(("mcp-session-id", s.as_str()));
                }
                let body = format!(
                    r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{{"name":"echo","arguments":{{"hello":"n{n}"}}}}}}"#
                );
                let t = Instant::now();
                let a = w.conns[0]
                    .send(Method::POST, &self.paths[0], &headers, Some(body.into()))
                    .await?;
                lat.push(t.elapsed());
                check(
                    a.status.is_success()
                        && contains(&a.body, b"\"result\"")
                        && !contains(&a.body, b"\"isError\":true"),
                    "tools/call",
                    &a,
                )?;
                Ok(1)
            }
        }
    }
}
