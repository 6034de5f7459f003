//! `/readyz` and `/metrics` with the refresh SLA's part added: the stock answers of
//! `crate::observe`, plus an `interop` detail and the SLA's series. Readiness keeps its
//! status: a window running out needs a human, not a load balancer pulling the host.

use std::sync::Arc;

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::Value;

use super::Sla;
use crate::ops::Ops;

/// The largest stock body read back (both are small).
const BODY_LIMIT: usize = 4 * 1024 * 1024;

pub async fn readyz(State((ops, sla)): State<(Arc<Ops>, Arc<Sla>)>) -> Response {
    let (parts, body) = crate::observe::readyz(State(ops)).await.into_parts();
    let bytes = axum::body::to_bytes(body, BODY_LIMIT)
        .await
        .unwrap_or_default();
    let mut doc: Value = serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::Null);
    let (detail, _) = sla.detail();
    if let Some(o) = doc.as_object_mut() {
        o.insert("interop".into(), detail);
    }
    (parts.status, axum::Json(doc)).into_response()
}

pub async fn metrics(
    State((metrics, ops, sla)): State<(Arc<crate::observe::Metrics>, Arc<Ops>, Arc<Sla>)>,
) -> Response {
    let (parts, body) = crate::observe::metrics(State((metrics, ops)))
        .await
        .into_parts();
    let mut bytes = axum::body::to_bytes(body, BODY_LIMIT)
        .await
        .map(|b| b.to_vec())
        .unwrap_or_default();
    bytes.extend_from_slice(sla.metrics_text().as_bytes());
    bytes.extend_from_slice(crate::reload::metrics_text().as_bytes());
    Response::from_parts(parts, axum::body::Body::from(bytes))
}
