//! The JSON-RPC 2.0 binding: one POST endpoint, methods named as in the map's rows.

use crate::edge::jsonrpc::{self as framing, Id};
use axum::extract::{RawQuery, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;

use super::Answer;
use super::errors::Fault;
use super::extract::{Call, Caller, JsonRpc};
use super::service::A2aState;

/// Anything but POST on the JSON-RPC URL.
pub async fn wrong_method() -> Response {
    Fault::method_not_allowed("JSON-RPC requests are sent with POST", &["POST"])
        .into_jsonrpc_response(&Id::null())
}

pub async fn handle(
    State(state): State<A2aState>,
    Caller(subject, ..): Caller<JsonRpc>,
    headers: HeaderMap,
    query: RawQuery,
    Call(request): Call,
) -> Response {
    // A request without `id` is a notification: JSON-RPC 2.0 §4.1 forbids any answer,
    // and every A2A method is a request whose result the caller would never see, so
    // nothing is executed (not even negotiation) and the HTTP answer is an empty 204.
    if request.is_notification() {
        return axum::http::StatusCode::NO_CONTENT.into_response();
    }
    let id = request.echo_id();
    let (method, params) = (request.method, request.params);
    let answer = Box::pin(super::serve(
        &state,
        &subject,
        &headers,
        query.0.as_deref(),
        &method,
        &params,
    ))
    .await;
    match answer {
        Ok(Answer::Value(result)) => {
            framing::http_response(axum::http::StatusCode::OK, framing::success(&id, &result))
        }
        Ok(Answer::Stream(events)) => {
            // Every SSE event is a whole JSON-RPC response echoing the request's id; a
            // stream the host cannot go on with ends with an error response.
            let frames = events.map(move |item| {
                let body = match item {
                    Ok(response) => framing::success(&id, &response),
                    Err(fault) => fault.jsonrpc_body(&id),
                };
                Ok::<_, std::convert::Infallible>(Event::default().data(body))
            });
            Sse::new(frames)
                .keep_alive(KeepAlive::default())
                .into_response()
        }
        Err(fault) => fault.into_jsonrpc_response(&id),
    }
}
