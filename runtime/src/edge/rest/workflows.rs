//! `/workflows` handlers: the workflows the caller may start, and one definition.

use super::error::ApiError;
use super::extract::{Caller, PathParams};
use crate::app::AppState;
use axum::Json;
use axum::extract::State;
use serde_json::{Value, json};

pub async fn list_workflows(State(state): State<AppState>, Caller(subject): Caller) -> Json<Value> {
    let workflows: Vec<Value> = state
        .ops
        .list_workflows(&subject)
        .iter()
        .map(|w| {
            let d = &w.definition;
            let mut summary = json!({"workflowId": d.id, "inputSchema": d.input_schema});
            if let Some(name) = &d.name {
                summary["name"] = json!(name);
            }
            if let Some(description) = &d.description {
                summary["description"] = json!(description);
            }
            summary
        })
        .collect();
    Json(json!({ "workflows": workflows }))
}

pub async fn get_workflow(
    State(state): State<AppState>,
    Caller(subject): Caller,
    path: PathParams,
) -> Result<Json<Value>, ApiError> {
    let workflow_id = crate::ids::unproject_segment(path.get("workflow_id"))?;
    let workflow = state.ops.get_workflow(&subject, &workflow_id)?;
    Ok(Json(workflow.document.clone()))
}
