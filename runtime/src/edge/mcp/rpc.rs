//! JSON-RPC 2.0 framing for the MCP mount: the request shape we accept and the error
//! shape every refusal takes (never the OpenWOP envelope, a 401 included).

use axum::http::StatusCode;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::wire::{self, ErrorData};

use crate::edge::jsonrpc::{self, Id, Incoming, Malformed};
use crate::ops::OpError;

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
/// MCP 2026-07-28 reserved codes.
pub const HEADER_MISMATCH: i64 = -32020;
pub const MISSING_CAPABILITY: i64 = -32021;
pub const UNSUPPORTED_VERSION: i64 = -32022;

/// One JSON-RPC message as received: a request when `id` is present, else a notification.
pub use crate::edge::jsonrpc::Request as Message;

/// Whether an id is one MCP allows: a string or an integer (never null, never fractional).
fn mcp_id(id: &Id) -> bool {
    let v = id.value();
    v.is_string() || v.is_i64() || v.is_u64() || is_big_integer(id.raw())
}

/// An integer beyond 64 bits (its JSON text is all digits): still an integer id.
fn is_big_integer(raw: &str) -> bool {
    let digits = raw.strip_prefix('-').unwrap_or(raw);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// Reads one MCP message: the shared strict JSON-RPC framing, plus MCP's rule on ids.
/// Batches and responses are refused: each POST or stdio line carries exactly one request
/// or notification.
pub fn parse_message(body: &[u8]) -> Result<Message, RpcError> {
    match parse_incoming(body, false)? {
        Incoming::Request(message) => Ok(message),
        Incoming::Response(_) => Err(RpcError::new(INVALID_REQUEST, "not a request")),
    }
}

/// [`parse_message`], or (when `responses` is set) a response to a request the host sent.
pub fn parse_incoming(body: &[u8], responses: bool) -> Result<Incoming, RpcError> {
    let incoming = jsonrpc::parse_incoming(body, responses)?;
    if let Incoming::Request(message) = &incoming
        && let Some(id) = &message.id
        && !mcp_id(id)
    {
        return Err(RpcError::new(
            INVALID_REQUEST,
            "`id` must be a string or an integer",
        ));
    }
    Ok(incoming)
}

impl From<Malformed> for RpcError {
    fn from(m: Malformed) -> RpcError {
        let code = match m {
            Malformed::Parse(_) => PARSE_ERROR,
            Malformed::InvalidRequest { .. } => INVALID_REQUEST,
            // JSON-RPC 2.0 §4.2 allows by-position params: the request is valid, its
            // params are not ones MCP takes (every MCP method takes an object), so -32602,
            // as the A2A edge answers; on 400, as a request without `_meta` is.
            Malformed::ParamsNotObject { .. } => INVALID_PARAMS,
        };
        let mut e = RpcError::new(code, m.message()).with_http(StatusCode::BAD_REQUEST);
        e.id = m.id().filter(|id| mcp_id(id)).cloned();
        e
    }
}

/// A JSON-RPC error with the HTTP status it travels under on streamable HTTP.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Box<Value>>,
    pub http: StatusCode,
    /// The request id, when the request got far enough to have one.
    pub id: Option<Id>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> RpcError {
        let http = match code {
            METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
            INTERNAL_ERROR => StatusCode::INTERNAL_SERVER_ERROR,
            // Params errors on a well-formed request are still answered with 200 by MCP
            // servers, except the protocol-level ones below, which MCP puts on 400.
            INVALID_PARAMS => StatusCode::OK,
            _ => StatusCode::BAD_REQUEST,
        };
        RpcError {
            code,
            message: message.into(),
            data: None,
            http,
            id: None,
        }
    }

    pub fn with_data(mut self, data: Value) -> RpcError {
        self.data = Some(Box::new(data));
        self
    }

    pub fn with_http(mut self, http: StatusCode) -> RpcError {
        self.http = http;
        self
    }

    pub fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(INVALID_PARAMS, message)
    }

    /// A missing or refused credential: invalid request on HTTP 401 (its challenge says
    /// more). MCP 2026-07-28 reserves every code from -32000 down for JSON-RPC and itself,
    /// and forbids allocating new ones in -32000..-32019 (this was -32001), so the code is
    /// JSON-RPC's own, as on the A2A edge.
    pub fn unauthenticated(message: impl Into<String>) -> RpcError {
        RpcError::new(INVALID_REQUEST, message).with_http(StatusCode::UNAUTHORIZED)
    }

    pub fn internal() -> RpcError {
        RpcError::new(INTERNAL_ERROR, "the host failed while handling the request")
    }

    /// An operation's failure the caller did not cause (a session, a spent state, an
    /// open interrupt that could not be read): a transient store fault is the mount's
    /// 503 with `Retry-After`, as every edge answers one; anything else is the internal
    /// error, its detail logged under `what`.
    pub fn host_fault(what: &str, e: OpError) -> RpcError {
        match e {
            OpError::Unavailable { .. } => RpcError::from(e),
            e => {
                tracing::error!(error = %e, "{what}");
                RpcError::internal()
            }
        }
    }

    /// -32020's `data`: the header that disagrees with the body.
    pub fn naming_header(self, header: &str) -> RpcError {
        self.with_data(wire::data(&wire::Header { header }))
    }

    /// The `error` member: MCP's `ErrorData` (every code of the mount fits its `i32`).
    pub fn error_member(&self) -> ErrorData {
        let code = i32::try_from(self.code).unwrap_or(INTERNAL_ERROR as i32);
        ErrorData::new(
            rmcp::model::ErrorCode(code),
            self.message.clone(),
            self.data.as_deref().cloned(),
        )
    }

    /// The JSON-RPC error response to request `id` (else the id the error carries, else
    /// null), with the id as the request sent it.
    pub fn body(&self, id: Option<&Id>) -> String {
        let id = id.or(self.id.as_ref()).cloned().unwrap_or_else(Id::null);
        jsonrpc::failure(&id, &self.error_member())
    }
}

/// How an operation's error reads on the MCP mount, wherever no handler says more
/// precisely: a caller's mistake is invalid params whose message says what is wrong (a
/// model reads the message, not `data`); a run the caller cannot read, of another tenant
/// or none, is the one "no task" answer.
impl From<OpError> for RpcError {
    fn from(e: OpError) -> RpcError {
        if let Some(id) = e.unreadable_run() {
            return RpcError::invalid_params(format!("no task `{id}`"));
        }
        match e {
            OpError::Validation { message, details } => {
                let error = RpcError::invalid_params(message);
                match details {
                    Some(d) => error.with_data(d),
                    None => error,
                }
            }
            OpError::BadInput { message, .. } => RpcError::invalid_params(message),
            OpError::WorkflowNotFound { workflow_id } => {
                RpcError::invalid_params(format!("no tool `{workflow_id}`"))
            }
            OpError::InterruptNotFound { node_id }
            | OpError::InterruptAlreadyResolved { node_id } => {
                RpcError::invalid_params(format!("the input at `{node_id}` was already answered"))
            }
            e @ (OpError::RunTerminal { .. }
            | OpError::IdempotencyMismatch
            | OpError::AgentNotFound) => RpcError::invalid_params(e.to_string()),
            // The JSON-RPC internal error on HTTP 503, `Retry-After` in the header and in
            // `data` (as a spent rate limit carries it).
            OpError::Unavailable { retry_after_secs } => RpcError::new(
                INTERNAL_ERROR,
                "the host's store is unavailable for a moment; retry later",
            )
            .with_data(wire::data(&wire::RetryAfter {
                retry_after_seconds: retry_after_secs,
            }))
            .with_http(StatusCode::SERVICE_UNAVAILABLE),
            OpError::RunNotFound { .. }
            | OpError::TenantMismatch { .. }
            | OpError::ArtifactNotFound
            | OpError::InterruptTokenInvalid
            | OpError::InterruptExpired
            | OpError::Internal(_) => RpcError::internal(),
        }
    }
}

/// The success response to request `id`, with the id as the request sent it: the
/// answer's model written straight into the body.
pub fn result_body<R: serde::Serialize + ?Sized>(id: &Id, result: &R) -> String {
    jsonrpc::success(id, result)
}

/// A JSON-RPC error as an HTTP response (every transport of the mount over HTTP: the
/// POST endpoint and a listen stream).
pub fn error_response(error: &RpcError, id: Option<&Id>) -> axum::response::Response {
    crate::observe::otel::rpc_error_current(error.code, &error.message);
    let mut resp = jsonrpc::http_response(error.http, error.body(id));
    if error.http == StatusCode::UNAUTHORIZED {
        resp.headers_mut().insert(
            axum::http::header::WWW_AUTHENTICATE,
            axum::http::HeaderValue::from_static("Bearer"),
        );
    }
    if matches!(
        error.http,
        StatusCode::TOO_MANY_REQUESTS | StatusCode::SERVICE_UNAVAILABLE
    ) && let Some(secs) = error
        .data
        .as_ref()
        .and_then(|d| d["retryAfterSeconds"].as_u64())
    {
        resp.headers_mut().insert(
            axum::http::header::RETRY_AFTER,
            axum::http::HeaderValue::from(secs),
        );
    }
    resp
}

/// Reads a method's params into `T`: a member of the wrong type or a missing one is
/// `-32602` naming it ([`crate::wire::read_naming`]). Absent params read as `{}`.
pub fn read_params<T: DeserializeOwned>(params: &Value) -> Result<T, RpcError> {
    let empty;
    let params = if params.is_null() {
        empty = Value::Object(Map::new());
        &empty
    } else {
        params
    };
    crate::wire::read_naming(params).map_err(RpcError::invalid_params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_responses_and_bad_ids_are_refused() {
        assert_eq!(
            parse_message(b"[]").map_err(|e| e.code),
            Err(INVALID_REQUEST)
        );
        assert_eq!(parse_message(b"{").map_err(|e| e.code), Err(PARSE_ERROR));
        let e = parse_message(br#"{"jsonrpc":"2.0","id":{},"method":"x"}"#).unwrap_err();
        assert_eq!(e.code, INVALID_REQUEST);
        let e = parse_message(br#"{"jsonrpc":"2.0","id":null,"method":"x"}"#).unwrap_err();
        assert_eq!(e.code, INVALID_REQUEST);
        let e = parse_message(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#).unwrap_err();
        assert!(e.body(None).contains(r#""id":1,"#), "{}", e.body(None));
        // An integer beyond 64 bits is still an integer id, echoed as sent.
        let big =
            parse_message(br#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"x"}"#)
                .expect("big id");
        assert_eq!(
            result_body(&big.echo_id(), &serde_json::json!({})),
            r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"result":{}}"#
        );
        let e =
            parse_message(br#"{"jsonrpc":"2.0","id":6,"method":"x","params":[1]}"#).unwrap_err();
        assert_eq!((e.code, e.http), (INVALID_PARAMS, StatusCode::BAD_REQUEST));
        let e = parse_message(br#"{"jsonrpc":"2.0","id":1.5,"method":"x"}"#).unwrap_err();
        assert_eq!(e.code, INVALID_REQUEST);
    }

    #[test]
    fn notifications_have_no_id() {
        let m = parse_message(br#"{"jsonrpc":"2.0","method":"notifications/x"}"#).expect("ok");
        assert!(m.is_notification());
        assert!(m.meta().is_empty());
    }
}
