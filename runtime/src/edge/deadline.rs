//! A per-request deadline, each edge rendering the refusal in its own shape: a handler
//! that has not produced its answer's head within the deadline is dropped and the caller
//! gets `503`. Only the time to the head is bounded, so a stream (SSE, an A2A or MCP
//! stream) runs on once its head is sent; waits a route is built for (a long-poll of at
//! most 60 s, a blocking A2A send, an MCP call) stay within the default.

use std::time::Duration;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;

/// The default deadline: longer than the longest wait a route offers (a 60 s long-poll).
pub const DEFAULT: Duration = Duration::from_secs(90);

/// Runs `next` within `within`; past it, answers `render(within)`.
pub async fn run(
    within: Duration,
    render: fn(Duration) -> Response,
    request: Request,
    next: Next,
) -> Response {
    match tokio::time::timeout(within, next.run(request)).await {
        Ok(response) => response,
        Err(_) => {
            tracing::warn!(
                deadline_ms = u64::try_from(within.as_millis()).unwrap_or(u64::MAX),
                "a request passed its deadline"
            );
            render(within)
        }
    }
}

/// The sentence every edge's refusal carries.
pub fn message(within: Duration) -> String {
    format!(
        "the host did not answer within its {} ms request deadline",
        within.as_millis()
    )
}
