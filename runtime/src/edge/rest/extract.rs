//! Extractors whose rejections are REST envelopes: the caller's Subject, a closed JSON
//! body, and a run id path segment.

use super::error::ApiError;
use crate::app::AppState;
use crate::generated::errors::ErrorCode;
use crate::identity::Subject;
use crate::ids::BoundId;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::{StatusCode, header, request::Parts};
use serde::de::DeserializeOwned;

/// The authenticated caller. Runs before any id or body is looked at.
pub struct Caller(pub Subject);

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let subject = match state.keys.authenticate_headers(&parts.headers) {
            Ok(subject) => subject,
            Err(e) if e == crate::identity::AuthError::Ambiguous => return Err(e.into()),
            Err(e) => {
                state.unauthenticated(parts).map_err(|l| ApiError {
                    retry_after: Some(l.retry_after_secs),
                    ..ApiError::new(ErrorCode::RateLimited, l.unauthenticated_message())
                })?;
                return Err(e.into());
            }
        };
        crate::observe::record_tenant(&subject.tenant);
        state.rate.admit(&subject)?;
        // After the credential: a request that names an unserved version and carries no
        // valid key is a 401 first (see `version`).
        super::version::check(&parts.headers)?;
        Ok(Caller(subject))
    }
}

/// A JSON body parsed into a closed type; `None` when the body is empty and `T` allows
/// that is handled by the caller wrapping `T` in `Option`.
pub struct JsonBody<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let is_json = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|ct| {
                let mime = ct
                    .split(';')
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_ascii_lowercase();
                mime == "application/json" || mime.ends_with("+json")
            });
        let bytes = axum::body::Bytes::from_request(req, state)
            .await
            .map_err(|rej| {
                if rej.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    ApiError::new(
                        ErrorCode::PayloadTooLarge,
                        "the request body is larger than this host accepts",
                    )
                } else {
                    ApiError::validation(format!("cannot read the request body: {rej}"))
                }
            })?;
        let text: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
            b"null"
        } else {
            &bytes
        };
        if is_json == Some(false) && text != b"null" {
            return Err(ApiError::new(
                ErrorCode::UnsupportedMediaType,
                "send the body as application/json",
            ));
        }
        serde_json::from_slice(text)
            .map(JsonBody)
            .map_err(|e| ApiError::validation(format!("the request body is not acceptable: {e}")))
    }
}

/// Parses a `{runId}` path segment (`~2F` projected or `%2F`-encoded).
pub fn run_id(segment: &str) -> Result<BoundId, ApiError> {
    Ok(BoundId::parse_path(segment)?)
}

/// The raw path parameters, percent-decoded by us so a bad escape is an envelope too.
pub struct PathParams(pub Vec<(String, String)>);

impl FromRequestParts<AppState> for PathParams {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        let raw = axum::extract::RawPathParams::from_request_parts(parts, state)
            .await
            .map_err(|e| ApiError::validation(format!("bad path: {e}")))?;
        let mut out = Vec::new();
        for (name, value) in raw.iter() {
            out.push((name.to_owned(), percent_decode(value)?));
        }
        Ok(PathParams(out))
    }
}

impl PathParams {
    pub fn get(&self, name: &str) -> &str {
        self.0
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or("")
    }
}

fn percent_decode(s: &str) -> Result<String, ApiError> {
    let bad = || ApiError::validation(format!("`{s}` has a malformed percent escape"));
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3).ok_or_else(bad)?;
            let hex = std::str::from_utf8(hex).map_err(|_| bad())?;
            out.push(u8::from_str_radix(hex, 16).map_err(|_| bad())?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| bad())
}

/// Query parameters as a map; an undecodable query string is a `validation_error`.
pub struct QueryMap(pub std::collections::HashMap<String, String>);

impl FromRequestParts<AppState> for QueryMap {
    type Rejection = ApiError;

    async fn from_request_parts(
        parts: &mut Parts,
        state: &AppState,
    ) -> Result<Self, Self::Rejection> {
        axum::extract::Query::<std::collections::HashMap<String, String>>::from_request_parts(
            parts, state,
        )
        .await
        .map(|q| QueryMap(q.0))
        .map_err(|e| ApiError::validation(format!("bad query string: {e}")))
    }
}
