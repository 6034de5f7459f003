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

/// The token of the path. One that does not even percent-decode is no token this host
/// minted: the same 401 as a forged one, never a 400 that would tell them apart.
fn token(path: Result<PathParams, ApiError>) -> Result<String, ApiError> {
    path.map(|p| p.get("token").to_owned())
        .map_err(|_| crate::ops::OpError::InterruptTokenInvalid.into())
}

pub async fn inspect(
    State(state): State<AppState>,
    path: Result<PathParams, ApiError>,
    headers: axum::http::HeaderMap,
) -> Result<Json<InterruptPayload>, ApiError> {
    let token = token(path)?;
    // The token is the credential: judged before the version, as a key is.
    let view = state.ops.interrupt_view_by_token(&token).await?;
    super::version::check(&headers)?;
    Ok(Json(view))
}

pub async fn resolve(
    State(state): State<AppState>,
    path: Result<PathParams, ApiError>,
    headers: axum::http::HeaderMap,
    body: Result<JsonBody<ResolveInterruptRequest>, ApiError>,
) -> Result<Json<ResolveInterruptResponse>, ApiError> {
    let token = token(path)?;
    let token = token.as_str();
    state.ops.interrupt_by_token(token).await?;
    super::version::check(&headers)?;
    let JsonBody(body) = body?;
    let (run, node_id) = state.ops.resolve_by_token(token, body.resume_value).await?;
    Ok(Json(resolved(&run, &node_id)?))
}
