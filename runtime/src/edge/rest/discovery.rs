//! `GET /.well-known/openwop`: unauthenticated, strong ETag, `If-None-Match` → 304.

use crate::app::AppState;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// True when an `If-None-Match` header names `etag` (or is `*`).
pub fn etag_matches(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .any(|t| t == "*" || t == etag)
}

pub async fn get_discovery(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if let Err(e) = super::version::check(&headers) {
        return e.into_response();
    }
    let d = &state.discovery;
    let etag = HeaderValue::from_str(&d.etag).unwrap_or(HeaderValue::from_static("\"0\""));
    if etag_matches(&headers, &d.etag) {
        return (StatusCode::NOT_MODIFIED, [(header::ETAG, etag)]).into_response();
    }
    (
        StatusCode::OK,
        [
            (header::ETAG, etag),
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
        ],
        d.body.to_vec(),
    )
        .into_response()
}

/// The strong ETag of the served OpenAPI document (it changes only with the corpus).
static OPENAPI_ETAG: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(crate::generated::schemas::OPENAPI.as_bytes());
    format!("\"{}\"", hex::encode(&digest[..16]))
});

/// `GET /openapi.json`: the REST wire this host serves, as the corpus states it (the
/// generated crate's standalone copy, references resolvable by URI). Unauthenticated.
pub async fn get_openapi(headers: HeaderMap) -> Response {
    if let Err(e) = super::version::check(&headers) {
        return e.into_response();
    }
    let etag = HeaderValue::from_str(&OPENAPI_ETAG).unwrap_or(HeaderValue::from_static("\"0\""));
    if etag_matches(&headers, &OPENAPI_ETAG) {
        return (StatusCode::NOT_MODIFIED, [(header::ETAG, etag)]).into_response();
    }
    (
        StatusCode::OK,
        [
            (header::ETAG, etag),
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
        ],
        crate::generated::schemas::OPENAPI,
    )
        .into_response()
}
