//! The MCP client an `mcp` node uses. It speaks 2026-07-28 (stateless: `server/discover`,
//! every request self-describing in `params._meta`, SEP-2243 headers, input rounds with
//! `requestState`) and falls back to the 2025-11-25 lifecycle (`initialize`, a session)
//! for a server that is not modern. Which revision is spoken is decided by the host's own
//! negotiation ([`crate::negotiation::decide`]), the floor included. Requests are rmcp's
//! params and answers are read into rmcp's models or the small structs of
//! [`super::mcp_wire`], which say where and why they differ.

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::mcp_wire::{
    self as wire, CallToolRequestParams, CallToolResult, CancelTaskParams, Capabilities,
    Discovered, ElicitResult, ElicitationAction, GetTaskParams, InitializeAnswer, InitializeParams,
    InputResponses, InputRound, MetaOnly, PaginatedRequestParams, ReadResourceRequestParams,
    RequestMetaObject, ResultKind, TaskState, ToolResult, ToolsPage, Unsupported, UpdateTaskParams,
    Verbatim,
};
use super::rpc;
use super::{CallError, Caller, Peer, Peers};
use crate::negotiation::{self, Decision, Offer, Protocol};

const MODERN: &str = "2026-07-28";

/// The tasks extension (SEP-2663): a long tool call becomes a task the client polls.
pub const TASKS: &str = wire::TASKS;

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
    /// The client capabilities declared on every request, as the caller wrote them;
    /// `None`: this host's own ([`wire::own_capabilities`]). Conformance mode's MCP seam
    /// declares the suite's.
    pub capabilities: Option<Map<String, Value>>,
}

impl Session {
    fn modern(&self) -> bool {
        self.session_id.is_none() && self.version.as_str() >= MODERN
    }

    /// The session's `_meta` on a 2026-07-28 request; `tasks` declares the extension.
    fn meta(&self, caller: &Caller, tasks: bool) -> RequestMetaObject {
        wire::request_meta(
            &self.version,
            Capabilities::of(self.capabilities.as_ref(), tasks),
            &caller.traceparent,
        )
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

/// [`connect`], declaring `capabilities` as written (`None`: this host's own) on
/// `server/discover` or `initialize` and on every request of the session.
pub async fn connect_declaring(
    peers: &Peers,
    peer: &Peer,
    caller: &Caller,
    offer: &Offer,
    capabilities: Option<Map<String, Value>>,
) -> Result<(Option<Session>, Decision), CallError> {
    let preferred = offer.preferred().to_owned();
    let discovered = match rpc::call(
        peers,
        peer,
        caller,
        &peer.url,
        base_headers(&preferred, "server/discover", None),
        "server/discover",
        &MetaOnly {
            meta: wire::request_meta(
                &preferred,
                Capabilities::of(capabilities.as_ref(), false),
                &caller.traceparent,
            ),
        },
    )
    .await
    {
        Ok(a) => {
            wire::read::<Discovered>("server/discover", &a.result).map_err(CallError::Protocol)
        }
        Err(e) => Err(e),
    };
    let theirs: Option<Vec<String>> = match &discovered {
        Ok(answer) => Some(answer.supported_versions.clone()),
        // -32022 names what the server speaks.
        Err(CallError::Rpc {
            code: -32022, data, ..
        }) => data
            .as_ref()
            .and_then(|d| wire::read::<Unsupported>("-32022", d).ok())
            .map(|u| u.supported),
        Err(CallError::Refused(r)) => return Err(CallError::Refused(r.clone())),
        // Any other failure, an answer that does not read included: not a modern server.
        Err(e) => {
            tracing::debug!(peer = %peer.id, error = %e, "server/discover: trying initialize");
            None
        }
    };
    let decide = |asked: &str| {
        negotiation::decide(Protocol::Mcp, Some(asked), true, offer)
            .with_peer(peers.peer_digest(peer))
    };
    if let Some(theirs) = theirs.filter(|t| !t.is_empty()) {
        let asked = pick(offer, &theirs).unwrap_or_default();
        let decision = decide(&asked);
        let tasks = discovered.as_ref().is_ok_and(Discovered::offers_tasks);
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
        &InitializeParams {
            protocol_version: legacy.clone(),
            // This host's own are none in this era: it answers no `elicitation/create`
            // sent on a session's stream.
            capabilities: Capabilities::Declared(capabilities.clone().unwrap_or_default()),
            client_info: wire::client_info(),
            meta: wire::trace_meta(&caller.traceparent),
        },
    )
    .await?;
    let answered = wire::read::<InitializeAnswer>("initialize", &init.result)
        .map_err(CallError::Protocol)?
        .protocol_version;
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
    let note = serde_json::to_value(crate::edge::jsonrpc::Outgoing::bare_notification(
        "notifications/initialized",
    ))
    .unwrap_or_default();
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

/// `server/discover` under `version`, its answer as sent (the `mcp-client` node's).
pub async fn discover(
    peers: &Peers,
    peer: &Peer,
    caller: &Caller,
    version: &str,
) -> Result<Verbatim, CallError> {
    let answer = rpc::call(
        peers,
        peer,
        caller,
        &peer.url,
        base_headers(version, "server/discover", None),
        "server/discover",
        &MetaOnly {
            meta: wire::request_meta(version, Capabilities::of(None, false), &caller.traceparent),
        },
    )
    .await?;
    Ok(Verbatim(answer.result))
}

/// One `tools/list` page (from `cursor`), as sent (the `mcp-client` node's).
pub async fn list_tools(
    peers: &Peers,
    peer: &Peer,
    caller: &Caller,
    session: &Session,
    cursor: Option<&str>,
) -> Result<Verbatim, CallError> {
    let mut params = PaginatedRequestParams::default().with_cursor(cursor.map(str::to_owned));
    let mut headers = base_headers(&session.version, "tools/list", None);
    era(session, caller, &mut params.meta, &mut headers, false);
    let answer = rpc::call(
        peers,
        peer,
        caller,
        &peer.url,
        headers,
        "tools/list",
        &params,
    )
    .await?;
    Ok(Verbatim(answer.result))
}

/// `resources/read` of `uri`, its answer as sent (the `mcp-client` node's).
pub async fn read_resource(
    peers: &Peers,
    peer: &Peer,
    caller: &Caller,
    session: &Session,
    uri: &str,
) -> Result<Verbatim, CallError> {
    let mut params = ReadResourceRequestParams::new(uri);
    // SEP-2243: `Mcp-Name` carries the resource's URI.
    let mut headers = base_headers(&session.version, "resources/read", Some(uri));
    era(session, caller, &mut params.meta, &mut headers, false);
    let answer = rpc::call(
        peers,
        peer,
        caller,
        &peer.url,
        headers,
        "resources/read",
        &params,
    )
    .await?;
    Ok(Verbatim(answer.result))
}

/// The session as its era carries it: 2026-07-28, in `_meta` (the capabilities, with the
/// tasks extension when the session uses it); before, the session header, and a `_meta`
/// with nothing but the trace when `trace`.
fn era(
    session: &Session,
    caller: &Caller,
    meta: &mut Option<RequestMetaObject>,
    headers: &mut HeaderMap,
    trace: bool,
) {
    if session.modern() {
        *meta = Some(session.meta(caller, session.tasks));
    } else {
        session_headers(session, headers);
        if trace {
            *meta = Some(wire::trace_meta(&caller.traceparent));
        }
    }
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
        let mut params = PaginatedRequestParams::default().with_cursor(cursor.take());
        params.meta = Some(session.meta(caller, session.tasks));
        let answer = rpc::call(
            peers,
            peer,
            caller,
            &peer.url,
            base_headers(&session.version, "tools/list", None),
            "tools/list",
            &params,
        )
        .await
        .ok()?;
        let page: ToolsPage = wire::read("tools/list", &answer.result).ok()?;
        for t in page.tools.into_iter().filter_map(|t| t.0) {
            tools.insert(t.name, Value::Object(t.input_schema));
        }
        if let Some(ttl) = page.ttl_ms {
            ttl_ms = ttl;
        }
        cursor = page.next_cursor;
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

/// What `tools/call` answered; a complete result read as `R` ([`ToolAnswer`]).
pub enum Called<R = CallToolResult> {
    /// The tool's result.
    Complete(R),
    /// An input round: the server's questions (each an open request object, judged by the
    /// node that relays it) and the state to echo.
    InputRequired {
        input_requests: Map<String, Value>,
        request_state: Option<String>,
    },
    /// The server made the call a task (`CreateTaskResult`): its id, to follow.
    Task(String),
}

/// How a complete tool result is read.
pub trait ToolAnswer: Sized {
    fn read(answer: &Value) -> Result<Self, String>;
}

/// Typed: rmcp's model, with this client's tolerances ([`ToolResult`]).
impl ToolAnswer for CallToolResult {
    fn read(answer: &Value) -> Result<Self, String> {
        wire::read::<ToolResult>("tools/call", answer).map(|r| r.0)
    }
}

/// As sent: what the `mcp-client` node and the conformance seam hand on.
impl ToolAnswer for Verbatim {
    fn read(answer: &Value) -> Result<Self, String> {
        Ok(Verbatim(answer.clone()))
    }
}

/// The answers of an earlier input round, sent back with the next `tools/call`.
pub struct Round {
    pub responses: InputResponses,
    pub request_state: Option<String>,
}

/// `tools/call`, with the answers of an earlier round when there are some. `arguments`
/// are the workflow's (open by design) and must be an object, or nothing (`null`).
pub async fn call_tool<R: ToolAnswer>(
    peers: &Peers,
    peer: &Peer,
    caller: &Caller,
    session: &Session,
    tool: &str,
    arguments: &Value,
    round: Option<Round>,
) -> Result<Called<R>, CallError> {
    let mut params = CallToolRequestParams::new(tool.to_owned());
    params.arguments = match arguments {
        Value::Object(a) => Some(a.clone()),
        Value::Null => None,
        other => {
            return Err(CallError::Protocol(format!(
                "the arguments of tool `{tool}` are not an object: {other}"
            )));
        }
    };
    let mut headers = base_headers(&session.version, "tools/call", Some(tool));
    if session.modern() {
        params.meta = Some(session.meta(caller, session.tasks));
        let schema = tool_schema(peers, peer, caller, session, tool).await;
        param_headers(schema.as_ref(), arguments, &mut headers);
        if let Some(round) = round {
            params.input_responses = Some(round.responses);
            params.request_state = round.request_state;
        }
    } else {
        era(session, caller, &mut params.meta, &mut headers, true);
    }
    let answer = rpc::call(
        peers,
        peer,
        caller,
        &peer.url,
        headers,
        "tools/call",
        &params,
    )
    .await?;
    called(&answer.result, session.tasks).map_err(CallError::Protocol)
}

/// What a `tools/call` answer is, by its `resultType`; `tasks`: this host asked for the
/// tasks extension.
fn called<R: ToolAnswer>(answer: &Value, tasks: bool) -> Result<Called<R>, String> {
    let kind = wire::read::<ResultKind>("tools/call", answer)?.result_type;
    match kind.as_ref().map(|k| k.as_str()) {
        Some("task") => {
            if !tasks {
                return Err("tools/call answered a task this host did not ask for".into());
            }
            let task: wire::Task = wire::read("tools/call", answer)?;
            Ok(Called::Task(task.task_id))
        }
        Some("input_required") => {
            let round: InputRound = wire::read("tools/call", answer)?;
            Ok(Called::InputRequired {
                input_requests: round.input_requests,
                request_state: round.request_state,
            })
        }
        // `complete`, absent (before 2026-07-28), or a kind a newer revision adds: read
        // as a result, as this client always has.
        _ => Ok(Called::Complete(R::read(answer)?)),
    }
}

/// One `tasks/*` request of the tasks extension (`tasks/get`, `tasks/update`,
/// `tasks/cancel`): a 2026-07-28 request declaring the extension, `Mcp-Name` = the task id.
async fn task_request<P: serde::Serialize>(
    peers: &Peers,
    peer: &Peer,
    caller: &Caller,
    session: &Session,
    method: &str,
    task_id: &str,
    params: &P,
) -> Result<Value, CallError> {
    let answer = rpc::call(
        peers,
        peer,
        caller,
        &peer.url,
        base_headers(&session.version, method, Some(task_id)),
        method,
        params,
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
) -> Result<TaskState, CallError> {
    let mut params = GetTaskParams::new(task_id);
    params.meta = Some(session.meta(caller, true));
    let result = task_request(peers, peer, caller, session, "tasks/get", task_id, &params).await?;
    wire::read("tasks/get", &result).map_err(CallError::Protocol)
}

/// `tasks/update`: the answers to the task's outstanding input requests.
pub async fn task_update(
    peers: &Peers,
    peer: &Peer,
    caller: &Caller,
    session: &Session,
    task_id: &str,
    input_responses: InputResponses,
) -> Result<(), CallError> {
    let mut params = UpdateTaskParams::new(task_id, input_responses);
    params.meta = Some(session.meta(caller, true));
    task_request(
        peers,
        peer,
        caller,
        session,
        "tasks/update",
        task_id,
        &params,
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
    let mut params = CancelTaskParams::new(task_id);
    params.meta = Some(session.meta(caller, true));
    task_request(
        peers,
        peer,
        caller,
        session,
        "tasks/cancel",
        task_id,
        &params,
    )
    .await
    .map(drop)
}

/// The node's value of a tool result (a workflow value, open): `structuredContent`, else
/// the text content joined by newlines.
pub fn result_value(result: &CallToolResult) -> Value {
    if let Some(structured) = result.structured_content.as_ref().filter(|v| !v.is_null()) {
        return structured.clone();
    }
    Value::String(result_text(result))
}

/// The text blocks of a tool result.
pub fn result_text(result: &CallToolResult) -> String {
    result
        .content
        .iter()
        .filter_map(|b| b.as_text())
        .map(|t| t.text.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The round's answers from a resume value. One elicitation: the value is its content
/// (`accept`), or a whole `{action, content}` result. Several: an object keyed like
/// `inputRequests`, each member read the same way. Each answer is an rmcp `ElicitResult`;
/// the content is the form's (open by design).
pub fn input_responses(requests: &Map<String, Value>, resume: &Value) -> InputResponses {
    fn one(v: &Value) -> Value {
        // A whole result (its action one rmcp knows), as its sender wrote it.
        if v.get("action")
            .is_some_and(|a| ElicitationAction::deserialize(a).is_ok())
        {
            return v.clone();
        }
        // Else the form's content; a bare value is wrapped so the content is an object.
        let content = match v {
            Value::Object(_) => v.clone(),
            other => Value::Object(Map::from_iter([("value".to_owned(), other.clone())])),
        };
        serde_json::to_value(ElicitResult::new(ElicitationAction::Accept).with_content(content))
            .unwrap_or_default()
    }
    let mut out = InputResponses::new();
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
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool_result(v: Value) -> CallToolResult {
        match called::<CallToolResult>(&v, false) {
            Ok(Called::Complete(r)) => r,
            Ok(_) => panic!("not a result: {v}"),
            Err(e) => panic!("{e}: {v}"),
        }
    }

    fn protocol_error<T>(r: Result<T, String>) -> String {
        match r {
            Err(why) => why,
            Ok(_) => panic!("read"),
        }
    }

    #[test]
    fn a_result_reads_as_structured_content_else_its_text() {
        let structured = tool_result(
            json!({"content": [{"type": "text", "text": "x"}], "structuredContent": {"a": 1}}),
        );
        assert_eq!(result_value(&structured), json!({"a": 1}));
        let text = tool_result(
            json!({"content": [{"type": "text", "text": "a"}, {"type": "image", "data": "", "mimeType": "image/png"}, {"type": "text", "text": "b"}]}),
        );
        assert_eq!(result_value(&text), json!("a\nb"));
    }

    /// What this client always tolerated in a tool result stays tolerated: unknown
    /// members, a block of a type rmcp does not know or cannot read (passed over), a
    /// result with none of rmcp's members, `structuredContent: null`.
    #[test]
    fn a_tool_result_keeps_the_clients_tolerances() {
        let r = tool_result(json!({"content": [
            {"type": "text", "text": "a", "extra": 1},
            {"type": "hologram", "frames": 3},
            {"type": "text", "text": 5},
            {"type": "text", "text": "b"}
        ], "isError": true, "future": {}}));
        assert_eq!((result_text(&r).as_str(), r.is_error), ("a\nb", Some(true)));
        assert_eq!(result_value(&tool_result(json!({}))), json!(""));
        assert_eq!(
            result_value(&tool_result(
                json!({"structuredContent": null, "content": [{"type": "text", "text": "t"}]})
            )),
            json!("t")
        );
        // A kind a newer revision adds reads as a result, as before.
        let r =
            tool_result(json!({"resultType": "later", "content": [{"type": "text", "text": "t"}]}));
        assert_eq!(result_text(&r), "t");
    }

    /// Newly decided by the typing: a member this client reads, of the wrong type, is a
    /// protocol error naming it (it was read as absent before), never a panic.
    #[test]
    fn a_member_of_the_wrong_type_is_a_protocol_error_naming_it() {
        let why = protocol_error(called::<CallToolResult>(&json!({"content": "text"}), false));
        assert!(why.contains("`content`"), "{why}");
        let why = protocol_error(called::<CallToolResult>(
            &json!({"isError": "yes", "content": []}),
            false,
        ));
        assert!(why.contains("`isError`"), "{why}");
        let why = protocol_error(called::<CallToolResult>(
            &json!({"resultType": "input_required", "inputRequests": [1]}),
            false,
        ));
        assert!(
            why.starts_with("the answer to `tools/call`: `inputRequests`"),
            "{why}"
        );
        let why = protocol_error(called::<CallToolResult>(&json!({"resultType": 7}), false));
        assert!(why.contains("`resultType`"), "{why}");
        let why = protocol_error(wire::read::<TaskState>(
            "tasks/get",
            &json!({"taskId": "t", "status": "working", "createdAt": "a", "lastUpdatedAt": "b", "pollIntervalMs": "soon"}),
        ));
        assert!(why.contains("`pollIntervalMs`"), "{why}");
        let why = protocol_error(wire::read::<TaskState>(
            "tasks/get",
            &json!({"taskId": "t", "status": "completed", "createdAt": "a", "lastUpdatedAt": "b", "result": {"content": 1}}),
        ));
        assert!(why.contains("`result.content`"), "{why}");
        let why = protocol_error(wire::read::<wire::InitializeAnswer>(
            "initialize",
            &json!({"protocolVersion": 20251125}),
        ));
        assert!(why.contains("`protocolVersion`"), "{why}");
    }

    #[test]
    fn an_input_round_and_a_task_read_as_the_edge_writes_them() {
        let Ok(Called::InputRequired {
            input_requests,
            request_state,
        }) = called::<CallToolResult>(
            &json!({"resultType": "input_required", "requestState": "s",
                "inputRequests": {"a": {"method": "elicitation/create"}, "b": {"method": "roots/list"}}}),
            false,
        )
        else {
            panic!("not a round");
        };
        // A request this host does not answer still reaches the node, which names it.
        assert_eq!(input_requests.len(), 2);
        assert_eq!(request_state.as_deref(), Some("s"));
        let handle = json!({"resultType": "task", "taskId": "t1", "status": "working",
            "createdAt": "a", "lastUpdatedAt": "b", "ttlMs": null});
        assert!(
            matches!(called::<CallToolResult>(&handle, true), Ok(Called::Task(id)) if id == "t1")
        );
        let why = protocol_error(called::<CallToolResult>(&handle, false));
        assert!(why.contains("did not ask for"), "{why}");
        // An input_required task may carry no inputRequests (the edge says why in
        // statusMessage), which rmcp's DetailedTask refuses.
        let t: TaskState = wire::read(
            "tasks/get",
            &json!({"taskId": "t", "status": "input_required", "statusMessage": "why",
                "createdAt": "a", "lastUpdatedAt": "b", "ttlMs": null, "resultType": "complete"}),
        )
        .unwrap();
        assert_eq!(
            (t.task.status, t.input_requests),
            (wire::TaskStatus::InputRequired, None)
        );
        let t: TaskState = wire::read(
            "tasks/get",
            &json!({"taskId": "t", "status": "failed", "createdAt": "a", "lastUpdatedAt": "b",
                "error": {"code": -32603, "message": "boom"}}),
        )
        .unwrap();
        assert_eq!(
            t.error.map(|e| e.message.into_owned()).as_deref(),
            Some("boom")
        );
    }

    /// A draft server's `server/discover` (no `resultType`, `ttlMs`, `cacheScope`) reads;
    /// capabilities rmcp cannot read count as none.
    #[test]
    fn a_discover_answer_reads_what_the_client_uses() {
        let d: Discovered = wire::read(
            "server/discover",
            &json!({"supportedVersions": ["2026-07-28"], "serverInfo": {"name": "x"},
                "capabilities": {"tools": {}, "extensions": {(TASKS): {}}}}),
        )
        .unwrap();
        assert!(d.offers_tasks());
        let d: Discovered = wire::read(
            "server/discover",
            &json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": true}}),
        )
        .unwrap();
        assert!(!d.offers_tasks());
        assert!(wire::read::<Discovered>("server/discover", &json!({"capabilities": {}})).is_err());
    }

    /// The requests are what this client wrote by hand before (the same JSON).
    #[test]
    fn requests_are_the_shapes_servers_read() {
        let session = Session {
            version: MODERN.into(),
            session_id: None,
            tasks: false,
            capabilities: None,
        };
        let caller = Caller {
            run_id: "r".into(),
            traceparent: "00-t-s-01".into(),
        };
        let mut params = CallToolRequestParams::new("echo");
        params.arguments = Some(Map::from_iter([("a".to_owned(), json!(1))]));
        params.meta = Some(session.meta(&caller, false));
        params.input_responses = Some(input_responses(
            &Map::from_iter([("q".to_owned(), json!({}))]),
            &json!({"ok": true}),
        ));
        params.request_state = Some("s".into());
        assert_eq!(
            serde_json::to_value(&params).unwrap(),
            json!({"name": "echo", "arguments": {"a": 1}, "requestState": "s",
            "inputResponses": {"q": {"action": "accept", "content": {"ok": true}}},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
                "io.modelcontextprotocol/clientInfo": {"name": "openwop", "version": env!("CARGO_PKG_VERSION")},
                "traceparent": "00-t-s-01",
            }})
        );
        // The tasks extension, and a declaration relayed as written (members rmcp does
        // not know included).
        let meta = serde_json::to_value(session.meta(&caller, true)).unwrap();
        assert_eq!(
            meta["io.modelcontextprotocol/clientCapabilities"],
            json!({"elicitation": {"form": {}}, "extensions": {(TASKS): {}}})
        );
        let declared = Session {
            capabilities: Some(Map::from_iter([("novel".to_owned(), json!({"x": 1}))])),
            ..session.clone()
        };
        let meta = serde_json::to_value(declared.meta(&caller, false)).unwrap();
        assert_eq!(
            meta["io.modelcontextprotocol/clientCapabilities"],
            json!({"novel": {"x": 1}})
        );
        let init = InitializeParams {
            protocol_version: "2025-11-25".into(),
            capabilities: Capabilities::Declared(Map::new()),
            client_info: wire::client_info(),
            meta: wire::trace_meta(&caller.traceparent),
        };
        assert_eq!(
            serde_json::to_value(&init).unwrap(),
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "openwop", "version": env!("CARGO_PKG_VERSION")},
                "_meta": {"traceparent": "00-t-s-01"}})
        );
    }

    #[test]
    fn a_resume_value_answers_the_round() {
        let mut one = Map::new();
        one.insert("confirm".into(), json!({"method": "elicitation/create"}));
        let answered =
            |resume: Value| serde_json::to_value(input_responses(&one, &resume)).unwrap();
        // Keyed by the question's id (the request key), as a clarification answer is.
        assert_eq!(
            answered(json!({"confirm": {"ok": true}})),
            json!({"confirm": {"action": "accept", "content": {"ok": true}}})
        );
        // Or the form's content itself.
        assert_eq!(
            answered(json!({"ok": true})),
            json!({"confirm": {"action": "accept", "content": {"ok": true}}})
        );
        // A bare value is wrapped so the content stays an object.
        assert_eq!(
            answered(json!({"confirm": "yes"})),
            json!({"confirm": {"action": "accept", "content": {"value": "yes"}}})
        );
        assert_eq!(
            answered(json!({"action": "decline"})),
            json!({"confirm": {"action": "decline"}})
        );
        // An action that is none of the three is content, as before.
        assert_eq!(
            answered(json!({"action": "maybe"})),
            json!({"confirm": {"action": "accept", "content": {"action": "maybe"}}})
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
