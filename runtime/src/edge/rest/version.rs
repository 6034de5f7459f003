//! `OpenWOP-Version`: a request naming an unserved major is refused with 406; every
//! response (304s and errors included) says which contract answered.

use super::error::ApiError;
use crate::discovery::PROTOCOL_VERSION;
use crate::generated::errors::ErrorCode;
use axum::extract::Request;
use axum::http::{HeaderName, HeaderValue};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
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

pub async fn negotiate(req: Request, next: Next) -> Response {
    let requested = req
        .headers()
        .get(&HEADER)
        .map(|v| v.to_str().unwrap_or("\u{0}").to_owned());
    let mut resp = match requested {
        Some(v) if !acceptable(&v) => ApiError::new(
            ErrorCode::ProtocolVersionUnsupported,
            format!("this host serves OpenWOP {PROTOCOL_VERSION}; `{v}` names a version it does not serve"),
        )
        .with_details(json!({"protocolVersions": [PROTOCOL_VERSION]}))
        .into_response(),
        _ => next.run(req).await,
    };
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
