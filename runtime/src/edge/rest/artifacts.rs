//! `GET /runs/{runId}/artifacts/{artifactId}` (getArtifact): an artifact a node of the run
//! recorded, as a `RunArtifact`, or as an A2A 1.0 Artifact when the caller asks for
//! `application/a2a+json` (so an A2A client reads it in its own vocabulary).

use super::error::ApiError;
use super::extract::{Caller, PathParams, run_id};
use crate::app::AppState;
use crate::edge::a2a::A2A_JSON;
use crate::generated::models::RunArtifact;
use crate::ops::OpError;
use crate::wire::wire;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

pub async fn get_artifact(
    State(state): State<AppState>,
    Caller(subject): Caller,
    path: PathParams,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let id = run_id(path.get("run_id"))?;
    let (run_id, artifact) = state
        .ops
        .get_artifact(
            &subject,
            &id,
            &super::runs::author_id(path.get("artifact_id")),
        )
        .await?;
    let wants_a2a = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|m| {
            m.split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case(A2A_JSON))
        });
    let (media_type, body) = if wants_a2a {
        let mut a2a = Map::new();
        a2a.insert("artifactId".into(), json!(artifact.artifact_id));
        if let Some(name) = &artifact.name {
            a2a.insert("name".into(), json!(name));
        }
        // The one renderer of A2A parts, the same the task projection uses.
        a2a.insert(
            "parts".into(),
            crate::edge::a2a::project::parts(&[crate::ops::Part::Data(artifact.data)]),
        );
        (A2A_JSON, Value::Object(a2a))
    } else {
        let body = RunArtifact {
            run_id: wire("runId", run_id.as_str()).map_err(OpError::internal)?,
            artifact_id: wire("artifactId", artifact.artifact_id.as_str())
                .map_err(OpError::internal)?,
            artifact_type: wire("artifactType", artifact.artifact_type.as_str())
                .map_err(OpError::internal)?,
            node_id: wire("nodeId", artifact.node_id.as_str()).ok(),
            name: artifact.name.as_deref().and_then(|n| wire("name", n).ok()),
            data: artifact.data,
        };
        (
            "application/json",
            serde_json::to_value(&body).map_err(OpError::internal)?,
        )
    };
    let bytes = serde_json::to_vec(&body).map_err(OpError::internal)?;
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, HeaderValue::from_static(media_type))],
        bytes,
    )
        .into_response())
}
