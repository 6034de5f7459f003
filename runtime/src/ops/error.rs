//! The operations layer's one error type. Each edge renders it in its own shape; the
//! registered code (and so the REST status) comes from the generated error table.

use crate::generated::errors::ErrorCode;
use crate::status::RunStatus;
use crate::store::StoreError;
use serde_json::Value;

#[derive(Debug, thiserror::Error)]
pub enum OpError {
    #[error("{message}")]
    Validation {
        message: String,
        details: Option<Value>,
    },
    #[error("{0}")]
    NotFound(String),
    /// The id names another tenant. Never says whether such a run exists.
    #[error("the id names a tenant other than the caller's")]
    TenantMismatch,
    #[error("the run is already {}", status.as_str())]
    RunTerminal { status: RunStatus },
    #[error("the interrupt at node `{0}` is no longer open")]
    InterruptAlreadyResolved(String),
    /// Malformed, forged, or naming an alg or kid this host does not use: one answer.
    #[error("the interrupt token is not valid on this host")]
    InterruptTokenInvalid,
    #[error("the interrupt token has expired")]
    InterruptExpired,
    #[error("this Idempotency-Key was already used with a different request body")]
    IdempotencyMismatch,
    #[error("internal error")]
    Internal(String),
}

impl OpError {
    pub fn validation(message: impl Into<String>) -> Self {
        OpError::Validation {
            message: message.into(),
            details: None,
        }
    }

    pub fn code(&self) -> ErrorCode {
        match self {
            OpError::Validation { .. } => ErrorCode::ValidationError,
            OpError::NotFound(_) => ErrorCode::NotFound,
            OpError::TenantMismatch => ErrorCode::IdTenantMismatch,
            OpError::RunTerminal { .. } => ErrorCode::RunTerminal,
            OpError::InterruptAlreadyResolved(_) => ErrorCode::InterruptAlreadyResolved,
            OpError::InterruptTokenInvalid => ErrorCode::InterruptTokenInvalid,
            OpError::InterruptExpired => ErrorCode::InterruptExpired,
            OpError::IdempotencyMismatch => ErrorCode::IdempotencyKeyMismatch,
            OpError::Internal(_) => ErrorCode::InternalError,
        }
    }

    pub fn details(&self) -> Option<Value> {
        match self {
            OpError::Validation { details, .. } => details.clone(),
            OpError::RunTerminal { status } => {
                Some(serde_json::json!({"runStatus": status.as_str()}))
            }
            _ => None,
        }
    }
}

impl From<StoreError> for OpError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::IdempotencyMismatch => OpError::IdempotencyMismatch,
            other => {
                tracing::error!(error = %other, "store failure");
                OpError::Internal(other.to_string())
            }
        }
    }
}

impl From<crate::ids::IdError> for OpError {
    fn from(e: crate::ids::IdError) -> Self {
        OpError::validation(e.to_string())
    }
}
