//! The operations layer's one error type. Each edge renders it in its own shape through
//! one `From<OpError>`; the registered code (and so the REST status) comes from the
//! generated error table.

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
    /// Bad input the registry has a code of its own for (a malformed `Idempotency-Key`,
    /// a `callbackUrl` the egress guard refuses). REST answers the code; A2A and MCP, which
    /// never carry either, would answer it as invalid params.
    #[error("{message}")]
    BadInput { code: ErrorCode, message: String },
    /// No run the caller may read has this id (never says whether another tenant's does).
    #[error("no run `{run_id}`")]
    RunNotFound { run_id: String },
    /// The id (a run id, or createRun's `tenantId`) names another tenant. REST says so
    /// (403); A2A and MCP answer it exactly as a run that does not exist, so the requested
    /// id travels with it.
    #[error("the id names a tenant other than the caller's")]
    TenantMismatch { id: String },
    /// No workflow the caller may run has this id.
    #[error("no workflow `{workflow_id}` on this host")]
    WorkflowNotFound { workflow_id: String },
    #[error("no such agent in the caller's inventory")]
    AgentNotFound,
    /// No artifact with this id in a run the caller may read: one answer for an unknown
    /// artifact, an unknown run and another tenant's run, naming neither id.
    #[error("no such artifact in a run the caller may read")]
    ArtifactNotFound,
    /// The run has no open interrupt at this node.
    #[error("no open interrupt at node `{node_id}` of this run")]
    InterruptNotFound { node_id: String },
    #[error("the run is already {}", status.as_str())]
    RunTerminal { status: RunStatus },
    #[error("the interrupt at node `{node_id}` is no longer open")]
    InterruptAlreadyResolved { node_id: String },
    /// Malformed, forged, or naming an alg or kid this host does not use: one answer.
    #[error("the interrupt token is not valid on this host")]
    InterruptTokenInvalid,
    #[error("the interrupt token has expired")]
    InterruptExpired,
    #[error("this Idempotency-Key was already used with a different request body")]
    IdempotencyMismatch,
    /// The store cannot serve now (a lost connection, a pool timeout, a full disk, a busy
    /// database): nothing was applied and the same request may succeed later. Every
    /// edge answers it `503` with `Retry-After`, never as an internal error.
    #[error("the host's store is unavailable for a moment; retry after {retry_after_secs} s")]
    Unavailable { retry_after_secs: u64 },
    #[error("internal error")]
    Internal(String),
}

/// What `Retry-After` a transient store fault answers: long enough for a pool to
/// reconnect or an operator's fix to land, short enough to keep clients near.
pub const UNAVAILABLE_RETRY_AFTER_SECS: u64 = 1;

impl OpError {
    pub fn validation(message: impl Into<String>) -> Self {
        OpError::Validation {
            message: message.into(),
            details: None,
        }
    }

    /// An error the caller cannot act on; the detail goes to the log, never the wire.
    pub fn internal(detail: impl std::fmt::Display) -> Self {
        let detail = detail.to_string();
        tracing::error!(error = %detail, "operation failed inside the host");
        OpError::Internal(detail)
    }

    pub fn code(&self) -> ErrorCode {
        match self {
            OpError::Validation { .. } => ErrorCode::ValidationError,
            OpError::BadInput { code, .. } => *code,
            OpError::RunNotFound { .. }
            | OpError::WorkflowNotFound { .. }
            | OpError::AgentNotFound
            | OpError::ArtifactNotFound => ErrorCode::NotFound,
            OpError::InterruptNotFound { .. } => ErrorCode::InterruptNotFound,
            OpError::TenantMismatch { .. } => ErrorCode::IdTenantMismatch,
            OpError::RunTerminal { .. } => ErrorCode::RunTerminal,
            OpError::InterruptAlreadyResolved { .. } => ErrorCode::InterruptAlreadyResolved,
            OpError::InterruptTokenInvalid => ErrorCode::InterruptTokenInvalid,
            OpError::InterruptExpired => ErrorCode::InterruptExpired,
            OpError::IdempotencyMismatch => ErrorCode::IdempotencyKeyMismatch,
            OpError::Unavailable { .. } => ErrorCode::ServiceUnavailable,
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

    /// `Retry-After` (seconds) for the answer, when the caller should try again.
    pub fn retry_after(&self) -> Option<u64> {
        match self {
            OpError::Unavailable { retry_after_secs } => Some(*retry_after_secs),
            _ => None,
        }
    }

    /// The run id a caller asked for and may not read (unknown, or another tenant's):
    /// what the A2A and MCP edges answer as one "no such task".
    pub fn unreadable_run(&self) -> Option<&str> {
        match self {
            OpError::RunNotFound { run_id } | OpError::TenantMismatch { id: run_id } => {
                Some(run_id)
            }
            _ => None,
        }
    }
}

impl From<StoreError> for OpError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::IdempotencyMismatch => OpError::IdempotencyMismatch,
            StoreError::Unavailable(detail) => {
                // Counted, not a line per request: under a lost database every request
                // would log one (the first of each interval is shown with its error).
                crate::observe::quiet::store_unavailable(&detail);
                OpError::Unavailable {
                    retry_after_secs: UNAVAILABLE_RETRY_AFTER_SECS,
                }
            }
            other => OpError::internal(other),
        }
    }
}

impl From<crate::ids::IdError> for OpError {
    fn from(e: crate::ids::IdError) -> Self {
        OpError::validation(e.to_string())
    }
}
