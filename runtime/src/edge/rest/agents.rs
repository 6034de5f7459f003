//! `/agents` handlers: the caller's agent inventory (`models::AgentList`) and one entry of
//! it (`models::Agent`).

use super::error::ApiError;
use super::extract::{Caller, PathParams};
use crate::app::AppState;
use crate::generated::models::{Agent, AgentList};
use axum::Json;
use axum::extract::State;

pub async fn list_agents(
    State(state): State<AppState>,
    Caller(subject): Caller,
) -> Json<AgentList> {
    Json(AgentList {
        agents: state.ops.list_agents(&subject),
    })
}

pub async fn get_agent(
    State(state): State<AppState>,
    Caller(subject): Caller,
    path: PathParams,
) -> Result<Json<Agent>, ApiError> {
    // A segment that does not unproject names no agent: the same 404 as an unknown id
    // (the contract documents no 400 here).
    let agent_id = crate::ids::unproject_segment(path.get("agent_id"))
        .map_err(|_| ApiError::from(crate::ops::OpError::AgentNotFound))?;
    Ok(Json(state.ops.get_agent(&subject, &agent_id)?))
}
