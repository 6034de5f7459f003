//! `OpenWOP-Version`: a request naming an unserved major is refused with 406; every
//! response (304s and errors included) says which contract answered.
//!
//! The 406 comes after routing and the credential: a method the route does not take is
//! `405` and a route that needs a key without a valid one is `401`, whatever version the
//! request names (a client learns first what it can fix for every version). So the check
//! is made by the `Caller` extractor once the caller is known, and by the handlers of the
//! routes that need no key; this layer only stamps the answer.

use super::error::ApiError;
use crate::discovery::PROTOCOL_VERSION;
use crate::generated::errors::ErrorCode;
use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::Response;
use serde_json::json;

pub const HEADER: HeaderName = HeaderName::from_static("openwop-version");

/// True for `2`, `2.<minor>` and `2.x`: a request selects by major only.
fn acceptable(value: &str) -> bool {
    let v = value.trim();
    let (major, minor) = match v.split_once('.') {
        Some((maj, min)) => (maj, Some(min)),
        None => (v, None),
    };
    major == "2"
        && minor
            .is_none_or(|m| m == "x" || (!m.is_empty() && m.bytes().all(|b| b.is_ascii_digit())))
}

/// `406 protocol_version_unsupported` when the request names a version this host does
/// not serve.
pub fn check(headers: &axum::http::HeaderMap) -> Result<(), ApiError> {
    let requested = headers
        .get(&HEADER)
        .map(|v| v.to_str().unwrap_or("\u{0}").to_owned());
    match requested {
        Some(v) if !acceptable(&v) => Err(ApiError::new(
            ErrorCode::ProtocolVersionUnsupported,
            format!("this host serves OpenWOP {PROTOCOL_VERSION}; `{v}` names a version it does not serve"),
        )
        .with_details(json!({"protocolVersions": [PROTOCOL_VERSION]}))),
        _ => Ok(()),
    }
}

/// Stamps `OpenWOP-Version` on every answer.
pub async fn negotiate(req: Request, next: Next) -> Response {
    let mut resp = next.run(req).await;
    resp.headers_mut()
        .insert(HEADER, HeaderValue::from_static(PROTOCOL_VERSION));
    resp
}

#[cfg(test)]
mod tests {
    #[test]
    fn majors_are_matched() {
        for ok in ["2", "2.0", "2.x", "2.7", " 2.0 "] {
            assert!(super::acceptable(ok), "{ok}");
        }
        for bad in ["1", "1.11", "3.0", "2.", "2.a", "two", ""] {
            assert!(!super::acceptable(bad), "{bad}");
        }
    }
}
