//! The MCP client an `mcp` node uses. It speaks 2026-07-28 (stateless: `server/discover`,
//! every request self-describing in `params._meta`, SEP-2243 headers, input rounds with
//! `requestState`) and falls back to the 2025-11-25 lifecycle (`initialize`, a session)
//! for a server that is not modern. Which revision is spoken is decided by the host's own
//! negotiation ([`crate::negotiation::decide`]), the floor included.

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Map, Value, json};

use super::rpc;
use super::{CallError, Caller, Peer, Peers};
use crate::negotiation::{self, Decision, Offer, Protocol};

const MODERN: &str = "2026-07-28";

/// The tasks extension (SEP-2663): a long tool call becomes a task the client polls.
pub const TASKS: &str = "io.modelcontextprotocol/tasks";

/// A connection decided for one call: the revision, and the legacy session if any.
#[derive(Debug, Clone)]
pub struct Session {
    pub version: String,
    /// Set in the initialize era.
    session_id: Option<String>,
    /// The server's `server/discover` lists the tasks extension: this host declares it on
    /// its requests, so a long tool call comes back as a task whose id the run keeps
    /// (followed after a restart, never called again) instead of a request held open.
    pub tasks: bool,
    /// The client capabilities declared on every request; `None`: this host's own
    /// ([`client_capabilities`]). Conformance mode's MCP seam declares the suite's.
    pub capabilities: Option<Value>,
}

impl Session {
    fn modern(&self) -> bool {
        self.session_id.is_none() && self.version.as_str() >= MODERN
    }
}

fn base_headers(version: &str, method: &str, name: Option<&str>) -> HeaderMap {
    let mut h = HeaderMap::new();
    h.insert(
        reqwest::header::ACCEPT,
        HeaderValue::from_static("application/json, text/event-stream"),
    );
    if let Ok(v) = HeaderValue::from_str(version) {
        h.insert(HeaderName::from_static("mcp-protocol-version"), v);
    }
    if let Ok(v) = HeaderValue::from_str(method) {
        h.insert(HeaderName::from_static("mcp-method"), v);
    }
    if let Some(v) = name.and_then(header_safe) {
        h.insert(HeaderName::from_static("mcp-name"), v);
    }
    h
}

/// What this host declares as an MCP client: it can answer elicitation (form) rounds,
/// relayed to whoever waits on the calling run.
fn client_capabilities() -> Value {
    json!({"elicitation": {"form": {}}})
}

fn modern_meta(version: &str, caller: &Caller, tasks: bool) -> Value {
    meta_with(version, caller, tasks, None)
}

/// A session's `_meta`: its own capabilities when it declares some.
fn session_meta(session: &Session, caller: &Caller) -> Value {
    meta_with(
        &session.version,
        caller,
        session.tasks,
        session.capabilities.as_ref(),
    )
}

fn meta_with(version: &str, caller: &Caller, tasks: bool, declared: Option<&Value>) -> Value {
    let mut capabilities = declared.cloned().unwrap_or_else(client_capabilities);
    if tasks && capabilities.is_object() {
        capabilities["extensions"] = json!({TASKS: {}});
    }
    json!({
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "openwop", "version": env!("CARGO_PKG_VERSION")},
        "traceparent": caller.traceparent,
    })
}

/// The newest revision both sides speak, else the peer's newest (so the floor can refuse
/// it by name).
fn pick(offer: &Offer, theirs: &[String]) -> Option<String> {
    let ours = offer.served();
    let mut common: Vec<&String> = theirs
        .iter()
        .filter(|v| ours.contains(&v.as_str()))
        .collect();
    common.sort();
    common
        .last()
        .map(|v| (*v).clone())
        .or_else(|| theirs.iter().max().cloned())
}

/// Decides the revision with the server: `server/discover` first; a server that is not
/// modern gets `initialize`. The decision (the refusal included) is returned for the
/// calling run's log; a refused one comes with no session.
pub async fn connect(
    peers: &Peers,
    peer: &Peer,
    caller: &Caller,
    offer: &Offer,
) -> Result<(Option<Session>, Decision), CallError> {
    connect_declaring(peers, peer, caller, offer, None).await
}

/// [`connect`], declaring `capabilities` (`None`: this host's own) on `server/discover`
/// or `initialize` and on every request of the session.
pub async fn connect_declaring(
    peers: &Peers,
    peer: &Peer,
    caller: &Caller,
    offer: &Offer,
    capabilities: Option<Value>,
) -> Result<(Option<Session>, Decision), CallError> {
    let preferred = offer.preferred().to_owned();
    let discovered = rpc::call(
        peers,
        peer,
        caller,
        &peer.url,
        base_headers(&preferred, "server/discover", None),
        "server/discover",
        json!({"_meta": meta_with(&preferred, caller, false, capabilities.as_ref())}),
    )
    .await;
    let theirs: Option<Vec<String>> = match &discovered {
        Ok(answer) => answer
            .result
            .get("supportedVersions")
            .and_then(Value::as_array)
            .map(|v| {
                v.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            }),
        // -32022 names what the server speaks.
        Err(CallError::Rpc {
            code: -32022, data, ..
        }) => data
            .as_ref()
            .and_then(|d| d.get("supported"))
            .and_then(Value::as_array)
            .map(|v| {
                v.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            }),
        Err(CallError::Refused(r)) => return Err(CallError::Refused(r.clone())),
        Err(_) => None,
    };
    let decide = |asked: &str| {
        negotiation::decide(Protocol::Mcp, Some(asked), true, offer)
            .with_peer(peers.peer_digest(peer))
    };
    if let Some(theirs) = theirs.filter(|t| !t.is_empty()) {
        let asked = pick(offer, &theirs).unwrap_or_default();
        let decision = decide(&asked);
        let tasks = discovered.as_ref().is_ok_and(|a| {
            a.result
                .pointer("/capabilities/extensions")
                .and_then(Value::as_object)
                .is_some_and(|e| e.contains_key(TASKS))
        });
        let session = decision.version.clone().map(|version| Session {
            version,
            session_id: None,
            tasks,
            capabilities: capabilities.clone(),
        });
        return Ok((session, decision));
    }
    // Not a modern server: the initialize lifecycle, asking for the newest legacy
    // revision we speak; the server's counter-offer is what is negotiated.
    let legacy = offer
        .served()
        .into_iter()
        .filter(|v| *v < MODERN)
        .max()
        .unwrap_or("2025-11-25")
        .to_owned();
    let init = rpc::call(
        peers,
        peer,
        caller,
        &peer.url,
        base_headers(&legacy, "initialize", None),
        "initialize",
        json!({
            "protocolVersion": legacy,
            "capabilities": capabilities.clone().unwrap_or_else(|| json!({})),
            "clientInfo": {"name": "openwop", "version": env!("CARGO_PKG_VERSION")},
            "_meta": {"traceparent": caller.traceparent},
        }),
    )
    .await?;
    let answered = init
        .result
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let decision = decide(&answered);
    let session_id = init
        .headers
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .unwrap_or_default();
    let Some(version) = decision.version.clone() else {
        // Refused by our floor: the server opened a session for the `initialize` all the
        // same; it is closed here, since nothing will ever use it.
        let opened = Session {
            version: answered,
            session_id: Some(session_id),
            tasks: false,
            capabilities: None,
        };
        close(peers, peer, caller, &opened).await;
        return Ok((None, decision));
    };
    let session = Session {
        version,
        session_id: Some(session_id),
        tasks: false,
        capabilities,
    };
    // The lifecycle's acknowledgement; its answer (202) carries nothing.
    let mut headers = base_headers(&session.version, "notifications/initialized", None);
    session_headers(&session, &mut headers);
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    peers
        .send(
            peer,
            caller,
            reqwest::Method::POST,
            &peer.url,
            headers,
            Some(&note),
        )
        .await?;
    Ok((Some(session), decision))
}

/// `server/discover` under `version`, its result as the server sent it.
pub async fn discover(
    peers: &Peers,
    peer: &Peer,
    caller: &Caller,
    version: &str,
) -> Result<Value, CallError> {
    rpc::call(
        peers,
        peer,
        caller,
        &peer.url,
        base_headers(version, "server/discover", None),
        "server/discover",
        json!({"_meta": modern_meta(version, caller, false)}),
    )
    .await
    .map(|a| a.result)
}

/// One `tools/list` page (from `cursor`), as the server sent it.
pub async fn list_tools(
    peers: &Peers,
    peer: &Peer,
    caller: &Caller,
    session: &Session,
    cursor: Option<&str>,
) -> Result<Value, CallError> {
    let mut params = Map::new();
    if let Some(c) = cursor {
        params.insert("cursor".into(), json!(c));
    }
    session_request(peers, peer, caller, session, "tools/list", None, params).await
}

/// `resources/read` of `uri`, its result as the server sent it.
pub async fn read_resource(
    peers: &Peers,
    peer: &Peer,
    caller: &Caller,
    session: &Session,
    uri: &str,
) -> Result<Value, CallError> {
    let mut params = Map::new();
    params.insert("uri".into(), json!(uri));
    // SEP-2243: `Mcp-Name` carries the resource's URI.
    session_request(
        peers,
        peer,
        caller,
        session,
        "resources/read",
        Some(uri),
        params,
    )
    .await
}

/// One request of `method` on `session`, its result as the server sent it: the session
/// travels as the era carries it (2026-07-28: `_meta`, first in `params`; before: the
/// session header), `name` as `Mcp-Name`.
async fn session_request(
    peers: &Peers,
    peer: &Peer,
    caller: &Caller,
    session: &Session,
    method: &str,
    name: Option<&str>,
    rest: Map<String, Value>,
) -> Result<Value, CallError> {
    let mut params = Map::new();
    let mut headers = base_headers(&session.version, method, name);
    if session.modern() {
        params.insert("_meta".into(), session_meta(session, caller));
    } else {
        session_headers(session, &mut headers);
    }
    params.extend(rest);
    rpc::call(
        peers,
        peer,
        caller,
        &peer.url,
        headers,
        method,
        Value::Object(params),
    )
    .await
    .map(|a| a.result)
}

/// Ends a legacy session once its one call is over. The 2025-11-25 streamable HTTP
/// transport says a client that no longer needs a session SHOULD send `DELETE` with its
/// `Mcp-Session-Id`; each call here opens its own session, so without this every call
/// would leave one open on a stateful server until it expires. Best effort: a server may
/// answer 405 (it does not let clients end sessions), and a failure changes nothing for
/// the run. Nothing to do in the 2026-07-28 era, which has no sessions.
pub async fn close(peers: &Peers, peer: &Peer, caller: &Caller, session: &Session) {
    if session.session_id.as_deref().is_none_or(str::is_empty) {
        return;
    }
    let mut headers = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_str(&session.version) {
        headers.insert(HeaderName::from_static("mcp-protocol-version"), v);
    }
    session_headers(session, &mut headers);
    match peers
        .send(
            peer,
            caller,
            reqwest::Method::DELETE,
            &peer.url,
            headers,
            None,
        )
        .await
    {
        Ok(r) if r.is_success() || r.status == 405 => {}
        Ok(r) => {
            tracing::debug!(peer = %peer.id, status = r.status, "closing an MCP session was not accepted")
        }
        Err(e) => tracing::debug!(peer = %peer.id, error = %e, "closing an MCP session failed"),
    }
}

fn session_headers(session: &Session, headers: &mut HeaderMap) {
    if let Some(id) = session.session_id.as_deref().filter(|s| !s.is_empty())
        && let Ok(v) = HeaderValue::from_str(id)
    {
        headers.insert(HeaderName::from_static("mcp-session-id"), v);
    }
}

/// SEP-2243: a value that is not header-safe (visible ASCII) travels base64-encoded in
/// an encoded word, `=?base64?…?=`.
pub(crate) fn header_safe(value: &str) -> Option<HeaderValue> {
    if value.bytes().all(|b| (0x21..0x7f).contains(&b)) {
        HeaderValue::from_str(value).ok()
    } else {
        use base64::Engine as _;
        HeaderValue::from_str(&format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(value)
        ))
        .ok()
    }
}

/// SEP-2243 custom headers a tool asks for: each top-level primitive argument its input
/// schema marks `x-mcp-header: Name` is mirrored in `Mcp-Param-Name` (strings as
/// [`header_safe`] spells them, numbers and booleans as JSON writes them). A server that
/// marks an argument refuses the call without its header (-32020).
pub(crate) fn param_headers(
    input_schema: Option<&Value>,
    arguments: &Value,
    headers: &mut HeaderMap,
) {
    let Some(properties) = input_schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object)
    else {
        return;
    };
    for (property, schema) in properties {
        let Some(name) = schema.get("x-mcp-header").and_then(Value::as_str) else {
            continue;
        };
        let text = match arguments.get(property) {
            Some(Value::String(s)) => s.clone(),
            Some(v @ (Value::Number(_) | Value::Bool(_))) => v.to_string(),
            _ => continue,
        };
        if let (Ok(header), Some(value)) = (
            HeaderName::from_bytes(format!("mcp-param-{name}").to_ascii_lowercase().as_bytes()),
            header_safe(&text),
        ) {
            headers.insert(header, value);
        }
    }
}

/// The tool's `inputSchema` from the server's `tools/list` (every page), kept per peer for
/// the list's `ttlMs` (a minute when it names none), so a call knows which arguments to
/// mirror in headers without listing each time. `None` when the server does not list it.
async fn tool_schema(
    peers: &Peers,
    peer: &Peer,
    caller: &Caller,
    session: &Session,
    tool: &str,
) -> Option<Value> {
    if let Some(tools) = peers.listed_tools.get(&peer.id) {
        return tools.get(tool).cloned();
    }
    let mut tools = Map::new();
    let mut cursor: Option<String> = None;
    let mut ttl_ms = 60_000;
    for _ in 0..20 {
        let mut params = Map::new();
        params.insert("_meta".into(), session_meta(session, caller));
        if let Some(c) = &cursor {
            params.insert("cursor".into(), json!(c));
        }
        let answer = rpc::call(
            peers,
            peer,
            caller,
            &peer.url,
            base_headers(&session.version, "tools/list", None),
            "tools/list",
            Value::Object(params),
        )
        .await
        .ok()?;
        for t in answer
            .result
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let (Some(name), Some(schema)) =
                (t.get("name").and_then(Value::as_str), t.get("inputSchema"))
            {
                tools.insert(name.to_owned(), schema.clone());
            }
        }
        if let Some(ttl) = answer.result.get("ttlMs").and_then(Value::as_u64) {
            ttl_ms = ttl;
        }
        cursor = answer
            .result
            .get("nextCursor")
            .and_then(Value::as_str)
            .map(str::to_owned);
        if cursor.is_none() {
            break;
        }
    }
    let schema = tools.get(tool).cloned();
    peers
        .listed_tools
        .put(&peer.id, tools, std::time::Duration::from_millis(ttl_ms));
    schema
}

/// What `tools/call` answered.
pub enum Called {
    /// The `CallToolResult`.
    Complete(Value),
    /// An input round: the server's questions and the state to echo.
    InputRequired {
        input_requests: Map<String, Value>,
        request_state: Option<String>,
    },
    /// The server made the call a task (`CreateTaskResult`): its id, to follow.
    Task(String),
}

/// `tools/call`, with the answers of an earlier round when there are some.
pub async fn call_tool(
    peers: &Peers,
    peer: &Peer,
    caller: &Caller,
    session: &Session,
    tool: &str,
    arguments: &Value,
    round: Option<(Value, Option<String>)>,
) -> Result<Called, CallError> {
    let mut params = Map::new();
    params.insert("name".into(), json!(tool));
    params.insert("arguments".into(), arguments.clone());
    let mut headers = base_headers(&session.version, "tools/call", Some(tool));
    if session.modern() {
        params.insert("_meta".into(), session_meta(session, caller));
        let schema = tool_schema(peers, peer, caller, session, tool).await;
        param_headers(schema.as_ref(), arguments, &mut headers);
        if let Some((responses, state)) = round {
            params.insert("inputResponses".into(), responses);
            if let Some(state) = state {
                params.insert("requestState".into(), json!(state));
            }
        }
    } else {
        session_headers(session, &mut headers);
        params.insert("_meta".into(), json!({"traceparent": caller.traceparent}));
    }
    let answer = rpc::call(
        peers,
        peer,
        caller,
        &peer.url,
        headers,
        "tools/call",
        Value::Object(params),
    )
    .await?;
    let result = answer.result;
    if result.get("resultType").and_then(Value::as_str) == Some("task") {
        return match result.get("taskId").and_then(Value::as_str) {
            Some(id) if session.tasks => Ok(Called::Task(id.to_owned())),
            _ => Err(CallError::Protocol(
                "tools/call answered a task this host did not ask for, or one without a taskId"
                    .into(),
            )),
        };
    }
    if result.get("resultType").and_then(Value::as_str) == Some("input_required") {
        return Ok(Called::InputRequired {
            input_requests: result
                .get("inputRequests")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            request_state: result
                .get("requestState")
                .and_then(Value::as_str)
                .map(str::to_owned),
        });
    }
    Ok(Called::Complete(result))
}

/// One `tasks/*` request of the tasks extension (`tasks/get`, `tasks/update`,
/// `tasks/cancel`): a 2026-07-28 request declaring the extension, `Mcp-Name` = the task id.
async fn task_request(
    peers: &Peers,
    peer: &Peer,
    caller: &Caller,
    session: &Session,
    method: &str,
    task_id: &str,
    extra: Option<(&str, Value)>,
) -> Result<Value, CallError> {
    let mut params = Map::new();
    params.insert("taskId".into(), json!(task_id));
    if let Some((key, value)) = extra {
        params.insert(key.into(), value);
    }
    params.insert(
        "_meta".into(),
        meta_with(
            &session.version,
            caller,
            true,
            session.capabilities.as_ref(),
        ),
    );
    let answer = rpc::call(
        peers,
        peer,
        caller,
        &peer.url,
        base_headers(&session.version, method, Some(task_id)),
        method,
        Value::Object(params),
    )
    .await?;
    Ok(answer.result)
}

/// `tasks/get`: the task with its `status`, and `result`, `error` or `inputRequests`.
pub async fn task_get(
    peers: &Peers,
    peer: &Peer,
    caller: &Caller,
    session: &Session,
    task_id: &str,
) -> Result<Value, CallError> {
    task_request(peers, peer, caller, session, "tasks/get", task_id, None).await
}

/// `tasks/update`: the answers to the task's outstanding input requests.
pub async fn task_update(
    peers: &Peers,
    peer: &Peer,
    caller: &Caller,
    session: &Session,
    task_id: &str,
    input_responses: Value,
) -> Result<(), CallError> {
    task_request(
        peers,
        peer,
        caller,
        session,
        "tasks/update",
        task_id,
        Some(("inputResponses", input_responses)),
    )
    .await
    .map(drop)
}

/// `tasks/cancel` (cooperative: the task may still end otherwise).
pub async fn task_cancel(
    peers: &Peers,
    peer: &Peer,
    caller: &Caller,
    session: &Session,
    task_id: &str,
) -> Result<(), CallError> {
    task_request(peers, peer, caller, session, "tasks/cancel", task_id, None)
        .await
        .map(drop)
}

/// The node's value of a `CallToolResult`: `structuredContent`, else the text content
/// joined by newlines.
pub fn result_value(result: &Value) -> Value {
    if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null()) {
        return structured.clone();
    }
    Value::String(result_text(result))
}

/// The text blocks of a `CallToolResult`.
pub fn result_text(result: &Value) -> String {
    result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
        .filter_map(|b| b.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The round's answers from a resume value. One elicitation: the value is its content
/// (`accept`), or a whole `{action, content}` result. Several: an object keyed like
/// `inputRequests`, each member read the same way.
pub fn input_responses(requests: &Map<String, Value>, resume: &Value) -> Value {
    fn one(v: &Value) -> Value {
        match v {
            Value::Object(o)
                if o.get("action")
                    .and_then(Value::as_str)
                    .is_some_and(|a| ["accept", "decline", "cancel"].contains(&a)) =>
            {
                v.clone()
            }
            Value::Object(_) => json!({"action": "accept", "content": v}),
            other => json!({"action": "accept", "content": {"value": other}}),
        }
    }
    let mut out = Map::new();
    if requests.len() == 1 {
        if let Some(key) = requests.keys().next() {
            // Keyed by the question's id (the request key), or the content itself.
            let value = match resume {
                Value::Object(o) if o.len() == 1 && o.contains_key(key) => &o[key],
                other => other,
            };
            out.insert(key.clone(), one(value));
        }
    } else {
        for key in requests.keys() {
            out.insert(key.clone(), one(resume.get(key).unwrap_or(&Value::Null)));
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_reads_as_structured_content_else_its_text() {
        let structured =
            json!({"content": [{"type": "text", "text": "x"}], "structuredContent": {"a": 1}});
        assert_eq!(result_value(&structured), json!({"a": 1}));
        let text = json!({"content": [{"type": "text", "text": "a"}, {"type": "image", "data": ""}, {"type": "text", "text": "b"}]});
        assert_eq!(result_value(&text), json!("a\nb"));
    }

    #[test]
    fn a_resume_value_answers_the_round() {
        let mut one = Map::new();
        one.insert("confirm".into(), json!({"method": "elicitation/create"}));
        // Keyed by the question's id (the request key), as a clarification answer is.
        assert_eq!(
            input_responses(&one, &json!({"confirm": {"ok": true}})),
            json!({"confirm": {"action": "accept", "content": {"ok": true}}})
        );
        // Or the form's content itself.
        assert_eq!(
            input_responses(&one, &json!({"ok": true})),
            json!({"confirm": {"action": "accept", "content": {"ok": true}}})
        );
        // A bare value is wrapped so the content stays an object.
        assert_eq!(
            input_responses(&one, &json!({"confirm": "yes"})),
            json!({"confirm": {"action": "accept", "content": {"value": "yes"}}})
        );
        assert_eq!(
            input_responses(&one, &json!({"action": "decline"})),
            json!({"confirm": {"action": "decline"}})
        );
    }

    #[test]
    fn the_newest_common_revision_is_picked_else_the_peers_newest() {
        let offer = Offer::new(
            Protocol::Mcp,
            &["2026-07-28", "2025-11-25"],
            "2026-07-28",
            "2025-11-25",
        )
        .unwrap();
        assert_eq!(
            pick(&offer, &["2025-11-25".into(), "2026-07-28".into()]).as_deref(),
            Some("2026-07-28")
        );
        assert_eq!(
            pick(&offer, &["2025-06-18".into()]).as_deref(),
            Some("2025-06-18")
        );
    }
}
