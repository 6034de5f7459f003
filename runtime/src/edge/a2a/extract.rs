//! Extractors whose rejections are A2A errors in the shape of the binding that was hit:
//! the caller's Subject, a JSON-RPC request, an HTTP+JSON call. A refusal before
//! dispatch (401, 413, a body that is not JSON-RPC) is still an A2A answer, never the
//! OpenWOP envelope.

use std::marker::PhantomData;

use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::BODY_LIMIT;
use super::errors::{Fault, Transport};
use super::service::A2aState;
use crate::edge::jsonrpc::{self, Id, Malformed};
use crate::identity::{AuthError, Subject};

// A2A's own JSON media type; `application/json` is taken too, as both SDK clients send it.
pub(crate) use crate::wire::A2A_JSON;

/// How a binding renders a refusal.
pub trait Binding: Send + Sync + 'static {
    fn render(fault: Fault, id: &Id) -> Response;
}

/// The JSON-RPC binding: a JSON-RPC error response echoing the request id.
pub struct JsonRpc;

/// The HTTP+JSON binding: a `google.rpc.Status` body with the row's HTTP status.
pub struct HttpJson;

impl Binding for JsonRpc {
    fn render(fault: Fault, id: &Id) -> Response {
        fault.into_jsonrpc_response(id)
    }
}

impl Binding for HttpJson {
    fn render(fault: Fault, _: &Id) -> Response {
        fault.into_rest_response()
    }
}

/// A refusal in binding `B`'s shape; `id` is the JSON-RPC id when it could be read.
pub struct Refusal<B> {
    pub fault: Fault,
    pub id: Id,
    binding: PhantomData<B>,
}

impl<B> Refusal<B> {
    pub fn new(fault: Fault) -> Self {
        Self::with_id(fault, Id::null())
    }

    pub fn with_id(fault: Fault, id: Id) -> Self {
        Refusal {
            fault,
            id,
            binding: PhantomData,
        }
    }
}

impl<B: Binding> IntoResponse for Refusal<B> {
    fn into_response(self) -> Response {
        B::render(self.fault, &self.id)
    }
}

impl<B> From<Fault> for Refusal<B> {
    fn from(fault: Fault) -> Self {
        Refusal::new(fault)
    }
}

/// The authenticated caller; settled before the body is read.
pub struct Caller<B>(pub Subject, pub PhantomData<B>);

impl<B: Binding> FromRequestParts<A2aState> for Caller<B> {
    type Rejection = Refusal<B>;

    #[allow(
        clippy::result_large_err,
        reason = "the refusal is the answer itself, built once on the way out"
    )]
    async fn from_request_parts(parts: &mut Parts, state: &A2aState) -> Result<Self, Refusal<B>> {
        state
            .app
            .keys
            .authenticate_headers(&parts.headers)
            .map_err(|e| {
                let kind = match e {
                    AuthError::Ambiguous => Transport::InvalidRequest,
                    _ => {
                        // An address flooding bad credentials gets 429, not 401 after 401.
                        if let Err(l) = state.app.unauthenticated(parts) {
                            let mut fault = Fault::rate_limited(l);
                            fault.message = l.unauthenticated_message();
                            return Refusal::new(fault);
                        }
                        Transport::Unauthenticated
                    }
                };
                Refusal::new(Fault::transport(kind, e.to_string()))
            })
            .and_then(|subject| {
                crate::observe::record_tenant(&subject.tenant);
                state
                    .app
                    .rate
                    .admit(&subject)
                    .map_err(|l| Refusal::new(Fault::rate_limited(l)))?;
                Ok(Caller(subject, PhantomData))
            })
    }
}

/// Reads the body up to [`BODY_LIMIT`]; the refusal is A2A-shaped.
pub(crate) async fn read_body(request: Request) -> Result<axum::body::Bytes, Fault> {
    axum::body::to_bytes(request.into_body(), BODY_LIMIT)
        .await
        .map_err(|_| {
            Fault::transport(
                Transport::PayloadTooLarge,
                format!("the request body is larger than {BODY_LIMIT} bytes or could not be read"),
            )
        })
}

impl From<Malformed> for Fault {
    fn from(m: Malformed) -> Fault {
        match m {
            Malformed::Parse(_) => Fault::transport(Transport::Parse, "the body is not JSON"),
            Malformed::InvalidRequest { message, .. } => {
                Fault::transport(Transport::InvalidRequest, message)
            }
            Malformed::ParamsNotObject { .. } => {
                Fault::invalid_params("params", "must be an object")
            }
        }
    }
}

/// One JSON-RPC request on the JSON-RPC binding.
pub struct Call(pub jsonrpc::Request);

impl FromRequest<A2aState> for Call {
    type Rejection = Refusal<JsonRpc>;

    async fn from_request(request: Request, _: &A2aState) -> Result<Self, Refusal<JsonRpc>> {
        // The binding's media type is JSON (A2A 1.0 §9.1); anything else is refused before
        // the body is read, as HTTP+JSON refuses it (415, ContentTypeNotSupportedError).
        if !jsonrpc::is_json_content_type(request.headers(), &[A2A_JSON]) {
            return Err(Refusal::new(Fault::transport(
                Transport::UnsupportedMediaType,
                "JSON-RPC requests are sent as application/json",
            )));
        }
        let body = read_body(request).await?;
        match jsonrpc::parse(&body) {
            Ok(request) => Ok(Call(request)),
            // A notification is never answered, even when its params are malformed
            // (JSON-RPC 2.0 §4.1: "the Client would not be aware of any errors"); the
            // handler answers every notification 204 without reading it.
            Err(Malformed::ParamsNotObject { id: None }) => Ok(Call(jsonrpc::Request {
                id: None,
                method: String::new(),
                params: Value::Null,
            })),
            Err(m) => {
                let id = m.id().cloned().unwrap_or_else(Id::null);
                Err(Refusal::with_id(m.into(), id))
            }
        }
    }
}
