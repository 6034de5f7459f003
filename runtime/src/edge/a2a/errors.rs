//! A2A's own error shapes. Every answer on an A2A URL is rendered here, so no A2A client
//! ever sees the OpenWOP `{error, message}` envelope, not even for a refusal that happens
//! before dispatch (401, 413, a body that is not JSON-RPC).
//!
//! The codes, HTTP statuses, gRPC status names and ErrorInfo reasons come from the
//! generated A2A error table; this module only decides the carriage:
//! - JSON-RPC: `error.data` is an array of `@type`d objects holding exactly one
//!   `google.rpc.ErrorInfo` (domain `a2a-protocol.org`) for an A2A error;
//! - HTTP+JSON: a `google.rpc.Status` body under `error`, with the row's HTTP status.

use std::collections::BTreeMap;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use openwop_generated::errors::A2aError;
use openwop_generated::models::{
    A2aRestError, GoogleRpcBadRequest, GoogleRpcErrorInfo, GoogleRpcFieldViolation,
    GoogleRpcStatus, JsonRpcError,
};
use serde_json::Value;

use crate::edge::jsonrpc::{self, Id};
use crate::ops::OpError;

pub const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";
pub const BAD_REQUEST_TYPE: &str = "type.googleapis.com/google.rpc.BadRequest";
pub const A2A_DOMAIN: &str = "a2a-protocol.org";

/// Failures that are not rows of the A2A error table: JSON-RPC's own errors and the HTTP
/// refusals that happen before an operation is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// The body is not JSON.
    Parse,
    /// JSON, but not a JSON-RPC 2.0 request.
    InvalidRequest,
    /// No such JSON-RPC method, or no such HTTP+JSON route.
    MethodNotFound,
    /// An HTTP+JSON route that exists, asked with an HTTP method it does not take.
    MethodNotAllowed,
    Unauthenticated,
    PayloadTooLarge,
    UnsupportedMediaType,
    /// The caller's rate limit is spent (`429`, `Retry-After`).
    RateLimited,
    /// The request passed its deadline, or the store is unavailable (`503`).
    Unavailable,
    /// The body stopped arriving before the body timeout (`408`).
    RequestTimeout,
    Internal,
}

impl Transport {
    fn jsonrpc_code(self) -> i64 {
        match self {
            // A body that is not A2A's JSON is A2A's own ContentTypeNotSupportedError.
            Transport::UnsupportedMediaType => A2aError::ContentTypeNotSupported.row().jsonrpc_code,
            Transport::Parse => -32700,
            Transport::MethodNotFound => -32601,
            Transport::Internal | Transport::Unavailable => -32603,
            // JSON-RPC's generic server error (A2A reserves -32001..-32099 for its own).
            Transport::RateLimited => -32000,
            // JSON-RPC has no code for these; they are requests the server will not take
            // as sent, and the HTTP status says which.
            Transport::InvalidRequest
            | Transport::MethodNotAllowed
            | Transport::Unauthenticated
            | Transport::PayloadTooLarge
            | Transport::RequestTimeout => -32600,
        }
    }

    fn http_status(self) -> u16 {
        match self {
            Transport::Parse | Transport::InvalidRequest => 400,
            Transport::MethodNotFound => 404,
            Transport::MethodNotAllowed => 405,
            Transport::Unauthenticated => 401,
            Transport::PayloadTooLarge => 413,
            Transport::UnsupportedMediaType => 415,
            Transport::RateLimited => 429,
            Transport::Internal => 500,
            Transport::Unavailable => 503,
            Transport::RequestTimeout => 408,
        }
    }

    /// The `google.rpc.ErrorInfo` reason of a refusal that is not a row of the A2A error
    /// table. HTTP+JSON clients tell errors apart by reason (several share one status), so
    /// every refusal there carries one: the A2A row's where there is one (a request body
    /// that is not JSON is `CONTENT_TYPE_NOT_SUPPORTED`), else the names the A2A SDKs use
    /// for JSON-RPC's own errors (`INVALID_REQUEST`, `METHOD_NOT_FOUND`, `INTERNAL_ERROR`)
    /// and the HTTP refusal's own name.
    fn reason(self) -> &'static str {
        match self {
            Transport::UnsupportedMediaType => A2aError::ContentTypeNotSupported
                .row()
                .reason
                .unwrap_or("CONTENT_TYPE_NOT_SUPPORTED"),
            Transport::Parse | Transport::InvalidRequest => "INVALID_REQUEST",
            Transport::MethodNotFound => "METHOD_NOT_FOUND",
            Transport::MethodNotAllowed => "METHOD_NOT_ALLOWED",
            Transport::Unauthenticated => "UNAUTHENTICATED",
            Transport::PayloadTooLarge => "PAYLOAD_TOO_LARGE",
            Transport::RateLimited => "RATE_LIMITED",
            Transport::Unavailable => "UNAVAILABLE",
            Transport::RequestTimeout => "REQUEST_TIMEOUT",
            Transport::Internal => "INTERNAL_ERROR",
        }
    }

    fn grpc_status(self) -> &'static str {
        match self {
            Transport::Parse | Transport::InvalidRequest | Transport::UnsupportedMediaType => {
                "INVALID_ARGUMENT"
            }
            // google.rpc's code for a request over a size limit.
            Transport::PayloadTooLarge => "RESOURCE_EXHAUSTED",
            Transport::MethodNotFound => "NOT_FOUND",
            Transport::MethodNotAllowed => "UNIMPLEMENTED",
            Transport::Unauthenticated => "UNAUTHENTICATED",
            Transport::RateLimited => "RESOURCE_EXHAUSTED",
            Transport::Internal => "INTERNAL",
            Transport::Unavailable => "UNAVAILABLE",
            Transport::RequestTimeout => "DEADLINE_EXCEEDED",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    A2a(A2aError),
    Transport(Transport),
}

/// One `google.rpc.BadRequest.FieldViolation`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldViolation {
    pub field: String,
    pub description: String,
}

/// An error as an A2A interface answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub kind: Kind,
    pub message: String,
    /// `ErrorInfo.metadata`: string values only, as `google.rpc.ErrorInfo` defines it.
    pub metadata: BTreeMap<String, String>,
    pub violations: Vec<FieldViolation>,
    /// The `Allow` header of a 405: the HTTP methods the route takes.
    pub allow: Option<String>,
    /// `Retry-After` (seconds), on a rate-limit refusal.
    pub retry_after: Option<u64>,
}

impl Fault {
    pub fn a2a(error: A2aError, message: impl Into<String>) -> Fault {
        Fault {
            kind: Kind::A2a(error),
            message: message.into(),
            metadata: BTreeMap::new(),
            violations: Vec::new(),
            allow: None,
            retry_after: None,
        }
    }

    pub fn transport(kind: Transport, message: impl Into<String>) -> Fault {
        Fault {
            kind: Kind::Transport(kind),
            message: message.into(),
            metadata: BTreeMap::new(),
            violations: Vec::new(),
            allow: None,
            retry_after: None,
        }
    }

    pub fn with_metadata(mut self, key: &str, value: impl Into<String>) -> Fault {
        self.metadata.insert(key.to_owned(), value.into());
        self
    }

    /// The one answer for a task that is unknown, purged or unreadable by the caller (a
    /// tenant mismatch included). Only the echoed id may differ between those cases, so
    /// nothing else about the lookup reaches the answer.
    pub fn task_not_found(id: &str) -> Fault {
        Fault::a2a(A2aError::TaskNotFound, "task not found").with_metadata("taskId", id)
    }

    /// `VersionNotSupportedError` with `metadata.supportedVersions` comma-joined.
    pub fn version_not_supported(requested: Option<&str>, supported_joined: &str) -> Fault {
        let fault = Fault::a2a(
            A2aError::VersionNotSupported,
            format!("A2A-Version is not served here; supported: {supported_joined}"),
        )
        .with_metadata("supportedVersions", supported_joined);
        match requested {
            Some(r) => fault.with_metadata("requested", r),
            None => fault,
        }
    }

    /// Invalid parameters: `-32602` / `400 INVALID_ARGUMENT`, with the offending field as a
    /// `google.rpc.BadRequest` violation. The map gives this row no A2A reason, so no
    /// ErrorInfo is attached.
    pub fn invalid_params(field: &str, description: impl Into<String>) -> Fault {
        let description = description.into();
        let mut fault = Fault::a2a(
            A2aError::InvalidParams,
            format!("invalid parameters: {field}: {description}"),
        );
        fault.violations.push(FieldViolation {
            field: field.to_owned(),
            description,
        });
        fault
    }

    /// The caller's rate limit is spent: `429` on both bindings, with `Retry-After`.
    pub fn rate_limited(limited: crate::identity::rate::Limited) -> Fault {
        let mut fault = Fault::transport(Transport::RateLimited, limited.message());
        fault.retry_after = Some(limited.retry_after_secs);
        fault
    }

    pub fn unsupported(message: impl Into<String>) -> Fault {
        Fault::a2a(A2aError::UnsupportedOperation, message)
    }

    pub fn internal() -> Fault {
        // Never the underlying error: it may name a store path or carry a peer's body.
        Fault::transport(Transport::Internal, "internal error")
    }

    /// An operation's failure the caller did not cause (reading a task's side state,
    /// recording a host event): a transient store fault is `503` with `Retry-After`
    /// (`UNAVAILABLE`) on both bindings, as every edge answers one; anything else is the
    /// internal error, its detail logged under `what`.
    pub fn host_fault(what: &str, e: OpError) -> Fault {
        match e {
            OpError::Unavailable { .. } => Fault::from(e),
            e => {
                tracing::error!(error = %e, "{what}");
                Fault::internal()
            }
        }
    }
}

/// How an operation's error reads on an A2A interface, wherever no handler says more
/// precisely (a field to blame, CancelTask's TaskNotCancelable). Unreadable runs, of
/// another tenant or none, are the one TaskNotFound answer.
impl From<OpError> for Fault {
    fn from(e: OpError) -> Fault {
        if let Some(id) = e.unreadable_run() {
            return Fault::task_not_found(id);
        }
        match e {
            OpError::Validation { message, .. } | OpError::BadInput { message, .. } => {
                Fault::invalid_params("params", message)
            }
            OpError::WorkflowNotFound { workflow_id } => Fault::invalid_params(
                "message.metadata.openwop.skill",
                format!("no skill `{workflow_id}` on this host"),
            ),
            OpError::IdempotencyMismatch => Fault::invalid_params(
                "message.messageId",
                "was already used for a different message",
            ),
            OpError::RunTerminal { .. } => {
                Fault::unsupported("the task is in a terminal state and takes no more messages")
            }
            OpError::InterruptNotFound { .. } | OpError::InterruptAlreadyResolved { .. } => {
                Fault::unsupported("the interrupt was already answered")
            }
            OpError::AgentNotFound => Fault::a2a(
                A2aError::ExtendedAgentCardNotConfigured,
                "no extended agent card for this tenant",
            ),
            OpError::Unavailable { retry_after_secs } => {
                let mut fault = Fault::transport(
                    Transport::Unavailable,
                    "the host's store is unavailable for a moment; retry later",
                );
                fault.retry_after = Some(retry_after_secs);
                fault
            }
            // Runs, tokens and the host's own failures: nothing a client can act on.
            OpError::RunNotFound { .. }
            | OpError::TenantMismatch { .. }
            | OpError::ArtifactNotFound
            | OpError::InterruptTokenInvalid
            | OpError::InterruptExpired
            | OpError::Internal(_) => Fault::internal(),
        }
    }
}

impl Fault {
    pub fn jsonrpc_code(&self) -> i64 {
        match self.kind {
            Kind::A2a(e) => e.row().jsonrpc_code,
            Kind::Transport(t) => t.jsonrpc_code(),
        }
    }

    /// The HTTP status on the HTTP+JSON binding.
    pub fn http_status(&self) -> u16 {
        match self.kind {
            Kind::A2a(e) => e.row().http_status,
            Kind::Transport(t) => t.http_status(),
        }
    }

    pub fn grpc_status(&self) -> &'static str {
        match self.kind {
            Kind::A2a(e) => e.row().grpc_status,
            Kind::Transport(t) => t.grpc_status(),
        }
    }

    /// The ErrorInfo reason on the JSON-RPC binding: the row's, and none for rows without
    /// one or for JSON-RPC's own errors (the code says which), apart from a body that is not
    /// JSON, which is A2A's ContentTypeNotSupportedError there too.
    pub fn reason(&self) -> Option<&'static str> {
        match self.kind {
            Kind::A2a(e) => e.row().reason,
            Kind::Transport(t @ Transport::UnsupportedMediaType) => Some(t.reason()),
            Kind::Transport(_) => None,
        }
    }

    /// The ErrorInfo reason on the HTTP+JSON binding, where every refusal carries one
    /// (A2A §11.6: clients map by reason): the row's, `INVALID_PARAMS` for the row without
    /// one, the refusal's own for the rest.
    pub fn rest_reason(&self) -> &'static str {
        match self.kind {
            Kind::A2a(e) => e.row().reason.unwrap_or("INVALID_PARAMS"),
            Kind::Transport(t) => t.reason(),
        }
    }

    /// The typed details of the JSON-RPC binding.
    pub fn details(&self) -> Vec<Value> {
        self.details_with(self.reason())
    }

    /// The `@type`d details: one `google.rpc.ErrorInfo` when there is a reason, then one
    /// `google.rpc.BadRequest` when fields were refused. `details` is a list of ProtoJSON
    /// `Any`s (open: each names its own type), so each is written into a `Value`.
    fn details_with(&self, reason: Option<&str>) -> Vec<Value> {
        let mut details = Vec::new();
        if let Some(reason) = reason {
            let info = GoogleRpcErrorInfo {
                type_: ERROR_INFO_TYPE.to_owned(),
                reason: reason.to_owned(),
                domain: A2A_DOMAIN.to_owned(),
                // Always present, `{}` when empty; sorted (a BTreeMap), so two answers
                // that must be byte-identical are.
                metadata: Some(
                    self.metadata
                        .iter()
                        .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                        .collect(),
                ),
            };
            details.extend(serde_json::to_value(info).ok());
        }
        if !self.violations.is_empty() {
            let bad = GoogleRpcBadRequest {
                type_: BAD_REQUEST_TYPE.to_owned(),
                field_violations: self
                    .violations
                    .iter()
                    .map(|v| GoogleRpcFieldViolation {
                        field: v.field.clone(),
                        description: v.description.clone(),
                    })
                    .collect(),
            };
            details.extend(serde_json::to_value(bad).ok());
        }
        details
    }

    /// The JSON-RPC `error` member.
    pub fn jsonrpc_error(&self) -> JsonRpcError {
        JsonRpcError {
            code: self.jsonrpc_code(),
            message: self.message.clone(),
            data: self.details(),
        }
    }

    /// A whole JSON-RPC response; `id` is echoed exactly (`null` when it could not be read).
    pub fn jsonrpc_body(&self, id: &Id) -> String {
        jsonrpc::failure(id, &self.jsonrpc_error())
    }

    /// The HTTP status a JSON-RPC error travels with. A2A errors ride a 200 like any
    /// JSON-RPC answer; refusals made before the JSON-RPC layer keep their HTTP status so
    /// plain HTTP tooling sees them too.
    pub fn jsonrpc_http_status(&self) -> u16 {
        match self.kind {
            Kind::Transport(
                t @ (Transport::Unauthenticated
                | Transport::MethodNotAllowed
                | Transport::PayloadTooLarge
                | Transport::UnsupportedMediaType
                | Transport::RateLimited
                | Transport::RequestTimeout
                | Transport::Unavailable),
            ) => t.http_status(),
            _ => 200,
        }
    }

    /// The `google.rpc.Status` body of the HTTP+JSON binding.
    pub fn rest_body(&self) -> A2aRestError {
        A2aRestError {
            error: GoogleRpcStatus {
                code: i64::from(self.http_status()),
                status: self.grpc_status().to_owned(),
                message: self.message.clone(),
                details: self.details_with(Some(self.rest_reason())),
            },
        }
    }

    /// [`Self::rest_body`], written.
    pub fn rest_body_text(&self) -> String {
        serde_json::to_string(&self.rest_body()).unwrap_or_default()
    }

    /// A 405 naming the methods the route takes.
    pub fn method_not_allowed(message: impl Into<String>, allow: &[&str]) -> Fault {
        let mut fault = Fault::transport(Transport::MethodNotAllowed, message);
        fault.allow = Some(allow.join(", "));
        fault
    }

    pub fn into_jsonrpc_response(self, id: &Id) -> Response {
        let status = self.jsonrpc_http_status();
        let body = self.jsonrpc_body(id);
        respond(status, body, &self)
    }

    pub fn into_rest_response(self) -> Response {
        let status = self.http_status();
        let body = self.rest_body_text();
        respond(status, body, &self)
    }
}

fn respond(status: u16, body: String, fault: &Fault) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = jsonrpc::http_response(status, body);
    if fault.kind == Kind::Transport(Transport::Unauthenticated) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    }
    if let Some(allow) = fault
        .allow
        .as_deref()
        .and_then(|a| HeaderValue::from_str(a).ok())
    {
        response.headers_mut().insert(header::ALLOW, allow);
    }
    if let Some(secs) = fault.retry_after {
        response
            .headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use openwop_generated::errors::A2A_ERRORS;
    use serde_json::json;

    impl Fault {
        fn rest_value(&self) -> Value {
            serde_json::to_value(self.rest_body()).expect("json")
        }
    }

    /// The JSON-RPC response to request `id`, read back.
    fn body(fault: &Fault, id: Value) -> Value {
        serde_json::from_str(&fault.jsonrpc_body(&Id::from_value(&id))).expect("json")
    }

    fn error_infos(details: &[Value]) -> Vec<&Value> {
        details
            .iter()
            .filter(|d| d["@type"] == ERROR_INFO_TYPE)
            .collect()
    }

    #[test]
    fn jsonrpc_error_data_is_an_array_with_exactly_one_error_info_per_a2a_error() {
        for &error in A2aError::ALL {
            let row = error.row();
            let body = body(&Fault::a2a(error, "x"), json!(7));
            assert_eq!(body["id"], json!(7));
            assert_eq!(body["error"]["code"], json!(row.jsonrpc_code));
            match row.reason {
                Some(reason) => {
                    let data = body["error"]["data"].as_array().expect("data is an array");
                    assert!(
                        data.iter().all(|d| d.get("@type").is_some()),
                        "every entry is @typed"
                    );
                    let infos = error_infos(data);
                    assert_eq!(infos.len(), 1, "{}", row.name);
                    assert_eq!(infos[0]["reason"], json!(reason));
                    assert_eq!(infos[0]["domain"], json!(A2A_DOMAIN));
                }
                None => assert!(
                    body["error"].get("data").is_none(),
                    "{} has no reason",
                    row.name
                ),
            }
        }
    }

    #[test]
    fn http_json_errors_are_google_rpc_status_with_the_row_status() {
        for row in A2A_ERRORS {
            let error = A2aError::ALL
                .iter()
                .copied()
                .find(|e| e.row().name == row.name)
                .expect("variant");
            let fault = Fault::a2a(error, "m");
            let body = fault.rest_value();
            assert_eq!(fault.http_status(), row.http_status);
            assert_eq!(body["error"]["code"], json!(row.http_status));
            assert_eq!(body["error"]["status"], json!(row.grpc_status));
            assert_eq!(body["error"]["message"], json!("m"));
            if let Some(reason) = row.reason {
                let details = body["error"]["details"].as_array().expect("details");
                assert_eq!(error_infos(details)[0]["reason"], json!(reason));
            }
            // Never the OpenWOP envelope.
            assert!(body.get("message").is_none() && body["error"].is_object());
        }
    }

    #[test]
    fn task_not_found_is_identical_for_any_cause_apart_from_the_echoed_id() {
        let a = body(&Fault::task_not_found("acme/aaaaaaaaaaaaaaaa"), json!(1)).to_string();
        let b = body(&Fault::task_not_found("other/bbbbbbbbbbbbbbbb"), json!(1)).to_string();
        assert_eq!(
            a.replace("acme/aaaaaaaaaaaaaaaa", "ID"),
            b.replace("other/bbbbbbbbbbbbbbbb", "ID")
        );
        let rest = Fault::task_not_found("t/cccccccccccccccc").rest_value();
        assert_eq!(rest["error"]["code"], json!(404));
        assert_eq!(
            rest["error"]["details"][0]["metadata"]["taskId"],
            json!("t/cccccccccccccccc")
        );
    }

    #[test]
    fn version_not_supported_lists_supported_versions_comma_joined() {
        let body = body(
            &Fault::version_not_supported(Some("99.0"), "1.0,1.1"),
            json!("x"),
        );
        assert_eq!(body["error"]["code"], json!(-32009));
        let info = &body["error"]["data"][0];
        assert_eq!(info["reason"], json!("VERSION_NOT_SUPPORTED"));
        assert_eq!(info["metadata"]["supportedVersions"], json!("1.0,1.1"));
        assert_eq!(info["metadata"]["requested"], json!("99.0"));
    }

    #[test]
    fn invalid_params_carries_bad_request_and_no_error_info() {
        let body = body(
            &Fault::invalid_params("message.contextId", "not this task's context"),
            Value::Null,
        );
        assert_eq!(body["error"]["code"], json!(-32602));
        let data = body["error"]["data"].as_array().expect("data");
        assert!(error_infos(data).is_empty());
        assert_eq!(data[0]["@type"], json!(BAD_REQUEST_TYPE));
        assert_eq!(
            data[0]["fieldViolations"][0]["field"],
            json!("message.contextId")
        );
        assert_eq!(Fault::invalid_params("f", "d").http_status(), 400);
    }

    #[test]
    fn pre_dispatch_refusals_keep_their_http_status_and_a2a_shape() {
        let unauth = Fault::transport(Transport::Unauthenticated, "credential required");
        assert_eq!(unauth.jsonrpc_http_status(), 401);
        assert_eq!(
            unauth.rest_value()["error"]["status"],
            json!("UNAUTHENTICATED")
        );
        let response = unauth.into_rest_response();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(response.headers()[header::WWW_AUTHENTICATE], "Bearer");
        let parse = body(&Fault::transport(Transport::Parse, "not JSON"), Value::Null);
        assert_eq!(parse["error"]["code"], json!(-32700));
        let big = Fault::transport(Transport::PayloadTooLarge, "big");
        assert_eq!(big.http_status(), 413);
        assert_eq!(
            big.rest_value()["error"]["status"],
            json!("RESOURCE_EXHAUSTED")
        );
        let verb = Fault::transport(Transport::MethodNotAllowed, "no DELETE here");
        assert_eq!(verb.http_status(), 405);
        assert_eq!(verb.jsonrpc_http_status(), 405);
        // An A2A error on JSON-RPC travels with HTTP 200, as JSON-RPC servers answer.
        assert_eq!(
            Fault::task_not_found("a/bbbbbbbbbbbbbbbb").jsonrpc_http_status(),
            200
        );
    }

    /// A2A content-type rule: a request body that is not JSON is ContentTypeNotSupportedError,
    /// HTTP 415 on both bindings, with its ErrorInfo (`CONTENT_TYPE_NOT_SUPPORTED`) on both.
    #[test]
    fn a2a_content_type_refusal_is_content_type_not_supported_on_both_bindings() {
        let fault = Fault::transport(Transport::UnsupportedMediaType, "not JSON");
        let rpc = body(&fault, json!(3));
        assert_eq!(rpc["error"]["code"], json!(-32005), "{rpc}");
        assert_eq!(
            rpc["error"]["data"][0]["reason"],
            json!("CONTENT_TYPE_NOT_SUPPORTED")
        );
        assert_eq!(fault.jsonrpc_http_status(), 415);
        let rest = fault.rest_value();
        assert_eq!(fault.http_status(), 415);
        assert_eq!(
            rest["error"]["details"][0]["reason"],
            json!("CONTENT_TYPE_NOT_SUPPORTED")
        );
    }

    /// A2A error details (§11.6): every refusal on HTTP+JSON carries exactly one
    /// `google.rpc.ErrorInfo` (domain a2a-protocol.org), the ones made before dispatch too.
    #[test]
    fn every_http_json_refusal_carries_exactly_one_error_info() {
        let transports = [
            Transport::Parse,
            Transport::InvalidRequest,
            Transport::MethodNotFound,
            Transport::MethodNotAllowed,
            Transport::Unauthenticated,
            Transport::PayloadTooLarge,
            Transport::UnsupportedMediaType,
            Transport::RateLimited,
            Transport::Unavailable,
            Transport::RequestTimeout,
            Transport::Internal,
        ];
        let faults = transports
            .iter()
            .map(|t| Fault::transport(*t, "m"))
            .chain(A2aError::ALL.iter().map(|e| Fault::a2a(*e, "m")))
            .chain([Fault::invalid_params("message.taskId", "must be a string")]);
        for fault in faults {
            let rest = fault.rest_value();
            let details = rest["error"]["details"].as_array().expect("details");
            let infos = error_infos(details);
            assert_eq!(infos.len(), 1, "{rest}");
            assert_eq!(infos[0]["domain"], json!(A2A_DOMAIN));
            assert!(
                infos[0]["reason"].as_str().is_some_and(|r| !r.is_empty()),
                "{rest}"
            );
        }
        let params = Fault::invalid_params("message.taskId", "must be a string").rest_value();
        assert_eq!(
            params["error"]["details"][0]["reason"],
            json!("INVALID_PARAMS")
        );
    }
}
