//! Streamable HTTP: authentication first, then the era (2026 `_meta` or a 2025 session),
//! the header checks, negotiation, dispatch, and a JSON or SSE answer.

use std::convert::Infallible;

use axum::extract::{FromRequest, FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde_json::Value;
use tracing::Instrument;

use super::ctx::internal;
use super::ctx::{Ctx, Era, Outbound};
use super::elicit::Modes;
use super::gate::{self, SESSION_HEADER, VERSION_HEADER};
use super::rpc::{
    HEADER_MISMATCH, INVALID_REQUEST, Message, RpcError, UNSUPPORTED_VERSION, error_response,
    parse_incoming, result_body,
};
use super::wire::{
    self, EmptyObject, InitializeResult, Reply, ServerCapabilities, ToolsCapability,
};
use super::{BODY_LIMIT, McpState, STATELESS_SINCE};
use crate::edge::jsonrpc::{self, Id, Incoming};
use crate::identity::{AuthError, Subject};
use crate::negotiation::{Protocol, compare};
use tokio::sync::{mpsc, oneshot};

/// Aborts the request's work when the request goes away (the handler before its answer,
/// or the SSE stream the client closed): the work's hold on its run is dropped with it,
/// which cancels the run as the request's own.
struct AbortOnDrop(tokio::task::AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

fn sse_event(body: &str) -> Event {
    Event::default().event("message").data(body)
}

fn sse_response<S>(stream: S) -> Response
where
    S: futures::Stream<Item = Result<Event, Infallible>> + Send + 'static,
{
    let mut resp = Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response();
    resp.headers_mut()
        .insert("x-accel-buffering", HeaderValue::from_static("no"));
    resp
}

/// A call that may talk before it answers (progress, server-to-client requests). The
/// work runs in a task the request owns. Until it says something, nothing is sent: an
/// answer that comes first is sent alone, a refusal with its own HTTP status (-32021 is
/// a 400, never an error inside a 200 stream). The first message opens the SSE stream,
/// which then carries every message and the answer last.
async fn streamed(
    state: McpState,
    ctx: Ctx,
    message: Message,
    id: Id,
    mut rx: mpsc::UnboundedReceiver<String>,
) -> Response {
    let (done_tx, mut done_rx) = oneshot::channel();
    // The request's held host events go with its work, to the run it may create.
    let held = crate::ops::hand_over_host_events();
    use opentelemetry::context::FutureExt as _;
    // The work reads the configuration the request was pinned to (`crate::reload`).
    let live = state.app.keys.live();
    let work = tokio::spawn(
        live.carried(async move {
            let ops = state.app.ops.clone();
            let outcome = ops
                .holding_host_events_from(held, Box::pin(state.dispatch(&ctx, &message)))
                .await
                // A store that cannot write now: 503 with Retry-After (issue #35).
                .unwrap_or_else(|e| {
                    Err(RpcError::host_fault(
                        "a host event could not be recorded",
                        e,
                    ))
                });
            let _ = done_tx.send(outcome);
        })
        // The exported MCP span stays the OpenTelemetry context of the work (a tool
        // error is recorded on it), as the log span stays its `tracing` one.
        .with_current_context()
        .in_current_span(),
    );
    let owner = AbortOnDrop(work.abort_handle());
    let answer = |outcome: Result<Option<Reply>, RpcError>, id: &Id| match outcome {
        Ok(Some(result)) => result_body(id, &result),
        Ok(None) => result_body(id, &EmptyObject {}),
        Err(e) => e.body(Some(id)),
    };
    let first = tokio::select! {
        biased;
        Some(first) = rx.recv() => first,
        outcome = &mut done_rx => {
            return match outcome {
                Ok(Err(e)) if e.http != StatusCode::OK => error_response(&e, Some(&id)),
                Ok(outcome) => {
                    let body = answer(outcome, &id);
                    sse_response(futures::stream::once(async move {
                        Ok::<Event, Infallible>(sse_event(&body))
                    }))
                }
                Err(_) => error_response(&RpcError::internal(), Some(&id)),
            };
        }
    };
    // From here the answer goes last on the stream; `owner` lives as long as the stream.
    struct Open {
        pending: Option<String>,
        rx: mpsc::UnboundedReceiver<String>,
        done_rx: oneshot::Receiver<Result<Option<Reply>, RpcError>>,
        finished: bool,
        id: Id,
        _owner: AbortOnDrop,
    }
    let open = Open {
        pending: Some(first),
        rx,
        done_rx,
        finished: false,
        id,
        _owner: owner,
    };
    let stream = futures::stream::unfold(open, move |mut open| async move {
        if let Some(next) = open.pending.take() {
            return Some((Ok::<Event, Infallible>(sse_event(&next)), open));
        }
        if open.finished {
            return None;
        }
        let body = tokio::select! {
            biased;
            Some(next) = open.rx.recv() => next,
            outcome = &mut open.done_rx => {
                open.finished = true;
                match outcome {
                    Ok(outcome) => answer(outcome, &open.id),
                    Err(_) => RpcError::internal().body(Some(&open.id)),
                }
            }
        };
        Some((Ok(sse_event(&body)), open))
    });
    sse_response(stream)
}

/// JSON-RPC's generic server error, for a spent rate limit (MCP defines no code for it).
const RATE_LIMITED: i64 = -32000;

/// A refused credential: the JSON-RPC error, and the challenge of the host's identity
/// lanes. With api keys only (keys the operator issues; no authorization server to point
/// at) it is a plain `Bearer` challenge (RFC 6750 §3), with no `resource_metadata`
/// pointer: a protected-resource document would have to list an authorization server
/// (MCP authorization) and there is none. An error code is only for a credential that was
/// presented (§3.1): `invalid_token` for an unknown key, `invalid_request` for an
/// Authorization header that is not `Bearer <key>`; a request without one gets none.
fn unauthenticated(error: &RpcError, cause: &AuthError) -> Response {
    let mut resp = error_response(error, None);
    let challenge = match cause {
        AuthError::Missing => "Bearer".to_owned(),
        AuthError::Malformed => {
            format!("Bearer error=\"invalid_request\", error_description=\"{cause}\"")
        }
        _ => format!("Bearer error=\"invalid_token\", error_description=\"{cause}\""),
    };
    if let Ok(v) = HeaderValue::from_str(&challenge) {
        resp.headers_mut().insert(header::WWW_AUTHENTICATE, v);
    }
    resp
}

impl IntoResponse for RpcError {
    /// A refusal before the request's id is known, or carrying it in `self.id`.
    fn into_response(self) -> Response {
        error_response(&self, None)
    }
}

/// The caller of the mount: the Origin is checked first (a browser page of another site
/// must not reach a loopback mount through DNS rebinding), then the credential. Both
/// refusals are JSON-RPC errors, before any body is read.
pub struct McpCaller(pub Subject);

impl FromRequestParts<McpState> for McpCaller {
    type Rejection = Response;

    #[allow(
        clippy::result_large_err,
        reason = "the refusal is the answer itself, built once on the way out"
    )]
    async fn from_request_parts(parts: &mut Parts, state: &McpState) -> Result<Self, Response> {
        if !origin_allowed(&parts.headers, &state.config.allowed_origins) {
            return Err(error_response(
                &RpcError::new(INVALID_REQUEST, "this Origin may not call the mount")
                    .with_http(StatusCode::FORBIDDEN),
                None,
            ));
        }
        state
            .app
            .keys
            .authenticate_headers(&parts.headers)
            .map_err(|e| match e {
                AuthError::Ambiguous => {
                    error_response(&RpcError::new(INVALID_REQUEST, e.to_string()), None)
                }
                _ => match state.app.unauthenticated(parts) {
                    // An address flooding bad credentials gets 429, not 401 after 401.
                    Err(l) => {
                        let mut error = rate_limited(l);
                        error.message = l.unauthenticated_message();
                        error_response(&error, None)
                    }
                    Ok(()) => unauthenticated(&RpcError::unauthenticated(e.to_string()), &e),
                },
            })
            .and_then(|subject| {
                crate::observe::record_tenant(&subject.tenant);
                state
                    .app
                    .rate
                    .admit(&subject)
                    .map_err(|l| error_response(&rate_limited(l), None))?;
                Ok(McpCaller(subject))
            })
    }
}

/// The caller's rate limit is spent: a JSON-RPC error (the generic server error code)
/// on HTTP `429`, with `Retry-After` (as `error_response` writes it).
fn rate_limited(l: crate::identity::rate::Limited) -> RpcError {
    RpcError::new(RATE_LIMITED, l.message())
        .with_data(wire::data(&wire::RetryAfter {
            retry_after_seconds: l.retry_after_secs,
        }))
        .with_http(StatusCode::TOO_MANY_REQUESTS)
}

/// One JSON-RPC message, read from a body of at most [`BODY_LIMIT`] bytes: a request or
/// notification, or a response to a request the host sent (the answer to an
/// `elicitation/create` in a 2025-11-25 session).
pub struct McpMessage(pub Incoming);

impl FromRequest<McpState> for McpMessage {
    type Rejection = RpcError;

    async fn from_request(request: Request, _: &McpState) -> Result<Self, RpcError> {
        // Streamable HTTP carries JSON-RPC as application/json; a body of any other type
        // is refused before it is read (415), never guessed at.
        if !jsonrpc::is_json_content_type(request.headers(), &[]) {
            return Err(RpcError::new(
                INVALID_REQUEST,
                "the request body must be application/json",
            )
            .with_http(StatusCode::UNSUPPORTED_MEDIA_TYPE));
        }
        let body = axum::body::to_bytes(request.into_body(), BODY_LIMIT)
            .await
            .map_err(|_| {
                RpcError::new(
                    INVALID_REQUEST,
                    format!("the body is larger than {BODY_LIMIT} bytes or unreadable"),
                )
                .with_http(StatusCode::PAYLOAD_TOO_LARGE)
            })?;
        parse_incoming(&body, true).map(McpMessage)
    }
}

/// GET (the legacy standalone stream) and anything else but POST/DELETE.
pub async fn wrong_method() -> Response {
    let mut resp = error_response(
        &RpcError::new(INVALID_REQUEST, "this endpoint takes POST")
            .with_http(StatusCode::METHOD_NOT_ALLOWED),
        None,
    );
    resp.headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST, DELETE"));
    resp
}

fn principal(subject: &Subject) -> String {
    format!("{}#{}", subject.issuer, subject.subject_id)
}

/// DNS-rebinding guard: no Origin (not a browser), or one `origin::allowed` accepts.
fn origin_allowed(headers: &HeaderMap, allow_list: &[String]) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    origin
        .to_str()
        .is_ok_and(|o| super::origin::allowed(o, allow_list))
}

/// SSE is used for `tools/call` when the client takes it: the call may wait long, and
/// the open stream is how a disconnect is noticed.
fn wants_sse(headers: &HeaderMap, method: &str) -> bool {
    method == "tools/call"
        && headers
            .get(header::ACCEPT)
            .and_then(|a| a.to_str().ok())
            .is_some_and(|a| a.contains("text/event-stream"))
}

pub async fn end_session(
    State(state): State<McpState>,
    McpCaller(subject): McpCaller,
    headers: HeaderMap,
) -> Response {
    let id = headers
        .get(SESSION_HEADER)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    match state
        .app
        .ops
        .close_mcp_session(id, &principal(&subject))
        .await
    {
        Ok(true) => StatusCode::NO_CONTENT.into_response(),
        Ok(false) => error_response(
            &RpcError::new(INVALID_REQUEST, "no such session").with_http(StatusCode::NOT_FOUND),
            None,
        ),
        Err(e) => error_response(
            &RpcError::host_fault("an MCP session could not be closed", e),
            None,
        ),
    }
}

pub async fn handle(
    State(state): State<McpState>,
    McpCaller(subject): McpCaller,
    headers: HeaderMap,
    McpMessage(incoming): McpMessage,
) -> Response {
    let message = match incoming {
        Incoming::Request(m) => m,
        Incoming::Response(response) => {
            return Box::pin(take_response(state, subject, headers, response)).await;
        }
    };
    let span = super::trace_span(&message, &headers);
    let exported = super::exported_span(&message, &headers);
    let id = message.id.clone();
    let ops = state.app.ops.clone();
    // The negotiation's host event is held for the run this request may create (one
    // commit), else written before the answer.
    // Boxed, as each large future below: a future is moved (copied whole) each time it is
    // wrapped or handed on, and the work of a call nests deep (callgrind counted a third
    // of a tools/call's instructions in those copies, bench/instructions/run.sh).
    let request = Box::pin(serve_message(state, subject, headers, message))
        .instrument(span)
        .instrument(exported);
    match ops.holding_host_events(request).await {
        Ok(response) => response,
        // A store that cannot write now: 503 with Retry-After (issue #35).
        Err(e) => error_response(
            &RpcError::host_fault("a host event could not be recorded", e),
            id.as_ref(),
        ),
    }
}

/// A response POSTed on a 2025-11-25 session: 202 once taken, a JSON-RPC error (HTTP 400)
/// when it cannot be.
async fn take_response(
    state: McpState,
    subject: Subject,
    headers: HeaderMap,
    response: Value,
) -> Response {
    let session = match gate::header_text(&headers, SESSION_HEADER) {
        Ok(Some(s)) => s,
        Ok(None) => {
            return error_response(
                &RpcError::new(
                    INVALID_REQUEST,
                    "a response is only taken on a session (Mcp-Session-Id)",
                ),
                None,
            );
        }
        Err(e) => return error_response(&e, None),
    };
    match state
        .app
        .ops
        .mcp_session(&session, &principal(&subject))
        .await
    {
        Ok(Some(_)) => {}
        Ok(None) => {
            return error_response(
                &RpcError::new(INVALID_REQUEST, "no such session").with_http(StatusCode::NOT_FOUND),
                None,
            );
        }
        Err(e) => {
            return error_response(
                &RpcError::host_fault("an MCP session could not be read", e),
                None,
            );
        }
    }
    match state
        .take_response(&subject, Modes::of_session(&session), &response)
        .await
    {
        Ok(()) => StatusCode::ACCEPTED.into_response(),
        Err(e) => {
            let http = if e.http == StatusCode::OK {
                StatusCode::BAD_REQUEST
            } else {
                e.http
            };
            error_response(&e.with_http(http), None)
        }
    }
}

async fn serve_message(
    state: McpState,
    subject: Subject,
    headers: HeaderMap,
    message: Message,
) -> Response {
    let id = message.id.clone();
    // An initialize that carries 2026 `_meta` is a modern request for a method that
    // revision removed (404 below); only a bare one opens a legacy session.
    if message.method == "initialize" && !message.meta().contains_key(gate::META_VERSION) {
        return match Box::pin(state.initialize(&subject, &message.params)).await {
            Ok((result, version)) => {
                crate::observe::otel::record_current("mcp.protocol.version", version.clone());
                let session = match state
                    .app
                    .ops
                    .open_mcp_session(
                        &principal(&subject),
                        &version,
                        Modes::of(&message.params["capabilities"]).session_tag(),
                    )
                    .await
                {
                    Ok(id) => id,
                    Err(e) => {
                        return error_response(
                            &RpcError::host_fault("an MCP session could not be stored", e),
                            id.as_ref(),
                        );
                    }
                };
                let mut resp = jsonrpc::http_response(
                    StatusCode::OK,
                    result_body(&message.echo_id(), &result),
                );
                crate::observe::otel::record_current("mcp.session.id", session.clone());
                if let Ok(v) = HeaderValue::from_str(&session) {
                    resp.headers_mut().insert(SESSION_HEADER, v);
                }
                resp
            }
            Err(e) => error_response(&e, id.as_ref()),
        };
    }
    // The initialize era's `ping` is answered at any time, before `initialize` too
    // (2025-11-25 lifecycle: the one request a client may send first); a session's ping
    // is served below. The stateless era removed it (SEP-2575): a `ping` that names a 2026
    // revision is method-not-found (404), as the MCP conformance suite checks.
    if message.method == "ping"
        && !message.meta().contains_key(gate::META_VERSION)
        && matches!(gate::header_text(&headers, SESSION_HEADER), Ok(None))
        && !matches!(gate::header_text(&headers, VERSION_HEADER), Ok(Some(v)) if is_stateless(&v))
    {
        return match &message.id {
            Some(id) => jsonrpc::http_response(StatusCode::OK, result_body(id, &EmptyObject {})),
            None => StatusCode::ACCEPTED.into_response(),
        };
    }
    // Routing comes before every other check: a method this mount does not know is
    // 404 whatever the headers say, so a client can tell "removed" from "malformed".
    if !message.is_notification() && !super::service::is_routed(&message.method) {
        let e = RpcError::new(
            super::rpc::METHOD_NOT_FOUND,
            format!("no method `{}`", message.method),
        );
        return error_response(&e, id.as_ref());
    }
    let era = match Box::pin(select_era(&state, &subject, &headers, &message)).await {
        Ok(era) => era,
        Err(e) => return error_response(&e, id.as_ref()),
    };
    crate::observe::otel::record_current(
        "mcp.protocol.version",
        match &era {
            Era::Legacy(version) => version.clone(),
            Era::Modern(declared) => declared.version.clone(),
        },
    );
    let mut ctx = Ctx::new(subject, era);
    ctx.trace = super::request_trace(&message, &headers);
    if matches!(ctx.era, Era::Legacy(_))
        && let Ok(Some(session)) = gate::header_text(&headers, SESSION_HEADER)
    {
        ctx.session_modes = Modes::of_session(&session);
    }
    if message.is_notification() {
        return match Box::pin(state.dispatch(&ctx, &message)).await {
            Ok(_) => StatusCode::ACCEPTED.into_response(),
            Err(e) => error_response(&e, None),
        };
    }
    if message.method == "subscriptions/listen" && matches!(ctx.era, Era::Modern(_)) {
        return Box::pin(super::listen::open(state, ctx, message)).await;
    }
    let id = id.unwrap_or_else(Id::null);
    if wants_sse(&headers, &message.method) {
        let (tx, rx) = mpsc::unbounded_channel::<String>();
        ctx.outbound = Some(Outbound::new(tx, &message));
        return Box::pin(streamed(state, ctx, message, id, rx)).await;
    }
    match Box::pin(state.dispatch(&ctx, &message)).await {
        Ok(Some(result)) => jsonrpc::http_response(StatusCode::OK, result_body(&id, &result)),
        Ok(None) => StatusCode::ACCEPTED.into_response(),
        Err(e) => error_response(&e, Some(&id)),
    }
}

/// The era of a non-initialize request: a 2025 session, or a self-describing 2026 one.
async fn select_era(
    state: &McpState,
    subject: &Subject,
    headers: &HeaderMap,
    message: &Message,
) -> Result<Era, RpcError> {
    let has_meta_version = message.meta().contains_key(gate::META_VERSION);
    if !has_meta_version && let Some(session_id) = gate::header_text(headers, SESSION_HEADER)? {
        let found = state
            .app
            .ops
            .mcp_session(&session_id, &principal(subject))
            .await
            .map_err(|e| RpcError::host_fault("an MCP session could not be read", e))?;
        let Some(session) = found else {
            // The legacy way of saying "initialize again".
            return Err(
                RpcError::new(INVALID_REQUEST, "no such session").with_http(StatusCode::NOT_FOUND)
            );
        };
        if let Some(sent) = gate::header_text(headers, VERSION_HEADER)?
            && sent != session.version
        {
            return Err(RpcError::new(
                HEADER_MISMATCH,
                "MCP-Protocol-Version differs from the session's revision",
            )
            .naming_header("MCP-Protocol-Version"));
        }
        return Ok(Era::Legacy(session.version));
    }
    if gate::header_text(headers, VERSION_HEADER)?.is_none() {
        return Err(RpcError::new(
            HEADER_MISMATCH,
            "send MCP-Protocol-Version (or initialize first for the 2025-11-25 era)",
        )
        .naming_header("MCP-Protocol-Version"));
    }
    let declared = gate::declared(message)?;
    gate::check_version_header(headers, &declared)?;
    gate::check_mirrors(headers, message)?;
    // An initialize-era revision is refused here (-32022, recorded as refused): it is
    // served through the session initialize opens.
    state
        .negotiate(subject, &declared.version, super::Via::Request)
        .await?;
    // The tool's own header mirrors, checked here so a mismatch is a 400 before any
    // stream opens. A tool the caller cannot see is left to tools/call to refuse.
    if message.method == "tools/call"
        && let Some(name) = message.params.get("name").and_then(Value::as_str)
        && let Ok(workflow) = state.app.ops.get_workflow(subject, name)
    {
        let arguments = message.params.get("arguments").unwrap_or(&Value::Null);
        gate::check_param_headers(headers, &workflow.definition.input_schema, arguments)?;
    }
    Ok(Era::Modern(declared))
}

/// Whether a revision is of the stateless (no initialize) era.
pub fn is_stateless(version: &str) -> bool {
    compare(Protocol::Mcp, version, STATELESS_SINCE).is_some_and(|o| o.is_ge())
}

impl McpState {
    /// The initialize-era revision offered to a client that asked for one this host does
    /// not serve: the newest one served at or above the floor, if any.
    fn counter_offer(&self) -> Option<String> {
        let facet = self.facet();
        let floor = facet["minimumRevision"].as_str()?;
        facet["revisions"]
            .as_array()?
            .iter()
            .filter_map(Value::as_str)
            .filter(|r| !is_stateless(r))
            .filter(|r| compare(Protocol::Mcp, r, floor).is_some_and(|o| o.is_ge()))
            .max()
            .map(str::to_owned)
    }

    /// `initialize`: negotiates an initialize-era revision and describes the server.
    /// The transport opens the session.
    pub async fn initialize(
        &self,
        subject: &Subject,
        params: &Value,
    ) -> Result<(InitializeResult, String), RpcError> {
        let requested = params
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| RpcError::invalid_params("`protocolVersion` must be a string"))?;
        if is_stateless(requested) {
            // That revision has no initialize; name what this endpoint serves instead.
            return Err(RpcError::new(
                UNSUPPORTED_VERSION,
                format!("{requested} has no initialize; send server/discover"),
            )
            .with_data(wire::data(&wire::Unsupported {
                supported: &self.facet()["revisions"],
                requested,
            })));
        }
        let version = match self
            .negotiate(subject, requested, super::Via::Initialize)
            .await
        {
            Ok(v) => v,
            // The MCP lifecycle: a revision the server does not speak is answered with one
            // it does, and the client decides whether to go on. The floor still decides:
            // the request was refused (and recorded so); the counter-offer is the newest
            // initialize-era revision served, negotiated and recorded in its own right.
            Err(e) if e.code == UNSUPPORTED_VERSION => match self.counter_offer() {
                Some(counter) => {
                    self.negotiate(subject, &counter, super::Via::Initialize)
                        .await?
                }
                None => return Err(e),
            },
            Err(e) => return Err(e),
        };
        let mut tools = ToolsCapability::default();
        tools.list_changed = Some(false);
        let mut capabilities = ServerCapabilities::default();
        capabilities.tools = Some(tools);
        let mut result = InitializeResult::new(capabilities);
        // One of the revisions the facet lists, which the config checked.
        result.protocol_version =
            serde_json::from_value(Value::from(version.as_str())).map_err(internal)?;
        result.server_info = wire::server_info().clone();
        Ok((result, version))
    }
}
