//! `/interrupts/{token}`: inspect and resolve an interrupt by its resume token. The token
//! is the whole credential (no Bearer); it is checked before anything else, so a bad
//! token gets the same 401 whatever the request carries.

use super::error::ApiError;
use super::extract::{JsonBody, PathParams};
use super::runs::ResolveBody;
use crate::app::AppState;
use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

pub async fn inspect(
    State(state): State<AppState>,
    path: PathParams,
) -> Result<Json<Value>, ApiError> {
    let (run, open) = state.ops.interrupt_by_token(path.get("token")).await?;
    // The interrupt payload as raised, the same shape `interrupt.requested` carries.
    Ok(Json(json!({
        "kind": open.kind,
        "key": format!("{}:{}", run.run_id, open.node_id),
        "data": open.data,
    })))
}

pub async fn resolve(
    State(state): State<AppState>,
    path: PathParams,
    body: Result<JsonBody<ResolveBody>, ApiError>,
) -> Result<Json<Value>, ApiError> {
    let token = path.get("token");
    state.ops.interrupt_by_token(token).await?;
    let JsonBody(body) = body?;
    let (run, node_id) = state.ops.resolve_by_token(token, body.resume_value).await?;
    Ok(Json(
        json!({"runId": run.run_id, "nodeId": node_id, "status": run.status.as_str()}),
    ))
}
