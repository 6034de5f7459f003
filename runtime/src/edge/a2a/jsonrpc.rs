//! The JSON-RPC 2.0 binding: one POST endpoint, methods named as in the map's rows.

use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use serde_json::{Value, json};
use tracing::Instrument;

use super::errors::{Fault, Transport};
use super::extract::{Call, Caller, JsonRpc};
use super::service::A2aState;
use super::{Answer, negotiate};

/// Anything but POST on the JSON-RPC URL.
pub async fn wrong_method() -> Response {
    let mut response = Fault::transport(
        Transport::InvalidRequest,
        "JSON-RPC requests are sent with POST",
    )
    .into_jsonrpc_response(&Value::Null);
    *response.status_mut() = axum::http::StatusCode::METHOD_NOT_ALLOWED;
    response.headers_mut().insert(
        axum::http::header::ALLOW,
        axum::http::HeaderValue::from_static("POST"),
    );
    response
}

pub async fn handle(
    State(state): State<A2aState>,
    Caller(subject, ..): Caller<JsonRpc>,
    headers: HeaderMap,
    query: RawQuery,
    Call(request): Call,
) -> Response {
    let id = request.echo_id();
    let (method, params) = (request.method, request.params);
    if let Err(fault) = negotiate(&state, &subject, &headers, query.0.as_deref()).await {
        return fault.into_jsonrpc_response(&id);
    }
    let span = super::request_span(&method, &params, &headers);
    let answer = async {
        let method = super::method_of(&method)?;
        super::dispatch(&state, &subject, &headers, method, &params).await
    };
    match answer.instrument(span).await {
        Ok(Answer::Value(result)) => {
            axum::Json(json!({"jsonrpc": "2.0", "id": id, "result": result})).into_response()
        }
        Ok(Answer::Stream(events)) => {
            // Every SSE event is a whole JSON-RPC response echoing the request's id.
            let frames = events.map(move |response| {
                Ok::<_, std::convert::Infallible>(
                    Event::default()
                        .data(json!({"jsonrpc": "2.0", "id": id, "result": response}).to_string()),
                )
            });
            Sse::new(frames)
                .keep_alive(KeepAlive::default())
                .into_response()
        }
        Err(fault) => fault.into_jsonrpc_response(&id),
    }
}
