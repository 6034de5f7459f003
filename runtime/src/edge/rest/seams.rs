//! Conformance mode's seams (`crate::conformance`): test-only endpoints under
//! `/conformance/seams/` that a certification suite calls to set up what it cannot reach
//! through the production wire. Mounted only in conformance mode (a stock host answers
//! 404, which the suite reads as "not offered"); each is Bearer-authenticated and acts in
//! the caller's tenant.

use super::error::ApiError;
use super::extract::{Caller, JsonBody};
use crate::app::AppState;
use crate::generated::errors::ErrorCode;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::{Value, json};

/// `POST /conformance/seams/sample/auth/credential/mint`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MintRequest {
    lane: String,
}

/// Mints a new api key, and so a new Subject, in the caller's tenant: the suite needs a
/// second principal of the same tenant (an approver not listed, a caller who does not
/// own a run). Only the `api-key` lane exists on this host.
pub async fn mint(
    State(state): State<AppState>,
    Caller(subject): Caller,
    JsonBody(body): JsonBody<MintRequest>,
) -> Result<(StatusCode, Json<Value>), ApiError> {
    if body.lane != "api-key" {
        return Err(ApiError::new(
            ErrorCode::ValidationError,
            format!(
                "lane `{}`: this host mints credentials of the `api-key` lane only",
                body.lane
            ),
        ));
    }
    let (credential, minted) = state
        .keys
        .mint(&subject.tenant)
        .map_err(|e| ApiError::new(ErrorCode::InternalError, e.to_string()))?;
    Ok((
        StatusCode::CREATED,
        Json(json!({
            "lane": "api-key",
            "credential": credential,
            "subjectId": minted.subject_id,
        })),
    ))
}
