//! Request bodies on a clock, each edge rendering the refusal in its own shape:
//! - a `Content-Length` over the edge's limit is refused `413` before a byte of the body
//!   is read (the client learns at once, and the connection is not held while it sends);
//! - a body that stops arriving is refused `408` once the body timeout passes, counted
//!   from the end of the request's head (a slow sender cannot pin a connection for the
//!   whole request deadline);
//! - a body without a length that grows past the limit is refused `413` as it does.
//!
//! The body is read whole here (every route takes a JSON body of at most 1 MiB) and
//! handed on as bytes, so the handlers' own readers never wait on the network.

use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::Response;
use futures::StreamExt as _;

/// How long a body may take to arrive, by default: far more than 1 MiB needs on any
/// working link, far less than the request deadline a stalled body would otherwise hold.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a body was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Larger than `limit` bytes (declared or sent).
    TooLarge { limit: usize },
    /// Not all there within the body timeout.
    Stalled { within: Duration },
    /// The connection broke while it was being read.
    Broken,
}

impl Refused {
    /// The sentence every edge's refusal carries.
    pub fn message(self) -> String {
        match self {
            Refused::TooLarge { limit } => {
                format!("the request body is larger than this host accepts ({limit} bytes)")
            }
            Refused::Stalled { within } => format!(
                "the request body did not arrive within the host's {} ms body timeout",
                within.as_millis()
            ),
            Refused::Broken => "the request body could not be read".to_owned(),
        }
    }
}

/// What a `Content-Length` header declares, if it is one number.
fn declared_length(request: &Request) -> Option<u64> {
    request
        .headers()
        .get(header::CONTENT_LENGTH)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()
}

/// Reads the body of `request` within `within` and at most `limit` bytes, then runs
/// `next` with it; a refusal is answered `render(refusal)` and closes the connection
/// (the rest of the body is never read).
pub async fn guard(
    limit: usize,
    within: Duration,
    render: fn(Refused) -> Response,
    request: Request,
    next: Next,
) -> Response {
    let refuse = |why: Refused| {
        let mut response = render(why);
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        response
    };
    if declared_length(&request).is_some_and(|n| n > limit as u64) {
        return refuse(Refused::TooLarge { limit });
    }
    let (parts, body) = request.into_parts();
    let mut chunks = body.into_data_stream();
    let mut bytes: Vec<u8> = Vec::new();
    let until = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(until, chunks.next()).await {
            Err(_) => return refuse(Refused::Stalled { within }),
            Ok(None) => break,
            Ok(Some(Ok(chunk))) => {
                if bytes.len() + chunk.len() > limit {
                    return refuse(Refused::TooLarge { limit });
                }
                bytes.extend_from_slice(&chunk);
            }
            Ok(Some(Err(_))) => return refuse(Refused::Broken),
        }
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}
