//! The REST error envelope `{error, message, details?}` (`models::ErrorEnvelope`, its
//! `error` the open `models::ErrorCode`) with the registered status.

use crate::generated::errors::ErrorCode;
use crate::generated::models::{ErrorEnvelope, ErrorEnvelopeMessage};
use crate::identity::AuthError;
use crate::ops::OpError;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// An error on its way to a REST client.
#[derive(Debug)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    pub details: Option<Value>,
    /// `WWW-Authenticate: Bearer` on 401s.
    pub challenge: bool,
    /// `Retry-After` (seconds) on a 429.
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            details: None,
            challenge: false,
            retry_after: None,
        }
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.details = Some(details);
        self
    }

    pub fn validation(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::ValidationError, message)
    }
}

impl From<OpError> for ApiError {
    fn from(e: OpError) -> Self {
        let message = match &e {
            // Internal details stay in the log, not on the wire.
            OpError::Internal(_) => "the host could not complete the request".to_owned(),
            other => other.to_string(),
        };
        Self {
            code: e.code(),
            message,
            details: e.details(),
            challenge: false,
            retry_after: e.retry_after(),
        }
    }
}

impl From<AuthError> for ApiError {
    fn from(e: AuthError) -> Self {
        if e == AuthError::Ambiguous {
            return Self::validation(e.to_string());
        }
        Self {
            code: ErrorCode::Unauthenticated,
            message: e.to_string(),
            details: None,
            challenge: true,
            retry_after: None,
        }
    }
}

impl From<crate::identity::rate::Limited> for ApiError {
    fn from(l: crate::identity::rate::Limited) -> Self {
        Self {
            retry_after: Some(l.retry_after_secs),
            ..Self::new(ErrorCode::RateLimited, l.message())
        }
    }
}

impl From<crate::ids::IdError> for ApiError {
    fn from(e: crate::ids::IdError) -> Self {
        Self::validation(e.to_string())
    }
}

impl ApiError {
    /// The envelope as JSON (what the body of the answer, or an SSE `error` frame, holds).
    pub fn envelope(&self) -> Value {
        let envelope = ErrorEnvelope {
            error: self.code.into(),
            // Every message the host writes says something; an empty one still gets words.
            message: ErrorEnvelopeMessage::try_from(self.message.clone())
                .or_else(|_| ErrorEnvelopeMessage::try_from(self.code.as_str()))
                .unwrap_or_else(|_| unreachable_message()),
            details: None,
        };
        let mut body = serde_json::to_value(&envelope).unwrap_or_else(|_| json!({}));
        // `details` is open (errorDetails admits any key, such as an input-schema refusal's
        // `errors`), and the model types only the keys a few codes fix, dropping the rest;
        // so it travels as the JSON object it is.
        if let Some(d) = &self.details {
            body["details"] = d.clone();
        }
        body
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.code.http_status())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let body = self.envelope();
        let mut resp = (status, axum::Json(body)).into_response();
        if self.challenge {
            resp.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if let Some(secs) = self.retry_after {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        resp
    }
}

/// A message the envelope model accepts, for the case no other can be made.
fn unreachable_message() -> ErrorEnvelopeMessage {
    serde_json::from_value(json!("error")).unwrap_or_else(|e| panic!("a literal message: {e}"))
}
