//! `/interrupts/{token}`: inspect and resolve an interrupt by its resume token. The token
//! is the whole credential (no Bearer); it is checked before anything else, so a bad
//! token gets the same 401 whatever the request carries.

use super::error::ApiError;
use super::extract::{JsonBody, PathParams};
use super::runs::resolved;
use crate::app::AppState;
use crate::generated::models::{
    InterruptPayload, ResolveInterruptRequest, ResolveInterruptResponse,
};
use axum::Json;
use axum::extract::State;

pub async fn inspect(
    State(state): State<AppState>,
    path: PathParams,
) -> Result<Json<InterruptPayload>, ApiError> {
    Ok(Json(
        state.ops.interrupt_view_by_token(path.get("token")).await?,
    ))
}

pub async fn resolve(
    State(state): State<AppState>,
    path: PathParams,
    body: Result<JsonBody<ResolveInterruptRequest>, ApiError>,
) -> Result<Json<ResolveInterruptResponse>, ApiError> {
    let token = path.get("token");
    state.ops.interrupt_by_token(token).await?;
    let JsonBody(body) = body?;
    let (run, node_id) = state.ops.resolve_by_token(token, body.resume_value).await?;
    Ok(Json(resolved(&run, &node_id)?))
}
