//! `/workflows` handlers: the workflows the caller may start (`models::WorkflowList`), and
//! one definition.

use super::error::ApiError;
use super::extract::{Caller, PathParams};
use crate::app::AppState;
use crate::generated::models::{WorkflowList, WorkflowSummary};
use axum::Json;
use axum::extract::State;
use serde_json::Value;

pub async fn list_workflows(
    State(state): State<AppState>,
    Caller(subject): Caller,
) -> Result<Json<WorkflowList>, ApiError> {
    let workflows = state
        .ops
        .list_workflows(&subject)
        .iter()
        .map(|w| {
            let d = &w.definition;
            Ok(WorkflowSummary {
                workflow_id: d.id.clone(),
                name: d.name.clone(),
                description: d.description.clone(),
                input_schema: Some(d.input_schema.clone()),
            })
        })
        .collect::<Result<_, ApiError>>()?;
    Ok(Json(WorkflowList { workflows }))
}

/// The definition as its author wrote it (JSON or YAML, answered as JSON): the document
/// itself, which `schemas/v2/workflow-definition.schema.json` describes, not a view the
/// host builds.
pub async fn get_workflow(
    State(state): State<AppState>,
    Caller(subject): Caller,
    path: PathParams,
) -> Result<Json<Value>, ApiError> {
    // A segment that does not unproject (`~u`, `~5`) names no workflow: the same 404 as
    // an unknown id (the contract documents no 400 here).
    let raw = path.get("workflow_id");
    let workflow_id = crate::ids::unproject_segment(raw).map_err(|_| {
        ApiError::from(crate::ops::OpError::WorkflowNotFound {
            workflow_id: raw.to_owned(),
        })
    })?;
    let workflow = state.ops.get_workflow(&subject, &workflow_id)?;
    Ok(Json(workflow.document.clone()))
}
