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
    let agent_id = crate::ids::unproject_segment(path.get("agent_id"))?;
    Ok(Json(state.ops.get_agent(&subject, &agent_id)?))
}
