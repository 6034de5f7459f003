//! The REST error envelope `{error, message, details?}` with the registered status.

use crate::generated::errors::ErrorCode;
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
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            details: None,
            challenge: false,
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
        }
    }
}

impl From<crate::ids::IdError> for ApiError {
    fn from(e: crate::ids::IdError) -> Self {
        Self::validation(e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.code.http_status())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut body = json!({"error": self.code.as_str(), "message": self.message});
        if let Some(d) = self.details {
            body["details"] = d;
        }
        let mut resp = (status, axum::Json(body)).into_response();
        if self.challenge {
            resp.headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        resp
    }
}
