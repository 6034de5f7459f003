//! `/agents` handlers: the caller's agent inventory and one entry of it.

use super::error::ApiError;
use super::extract::{Caller, PathParams};
use crate::app::AppState;
use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

pub async fn list_agents(State(state): State<AppState>, Caller(subject): Caller) -> Json<Value> {
    Json(json!({"agents": state.ops.list_agents(&subject)}))
}

pub async fn get_agent(
    State(state): State<AppState>,
    Caller(subject): Caller,
    path: PathParams,
) -> Result<Json<Value>, ApiError> {
    let agent_id = crate::ids::unproject_segment(path.get("agent_id"))?;
    let entry = state.ops.get_agent(&subject, &agent_id)?;
    Ok(Json(json!(entry)))
}
