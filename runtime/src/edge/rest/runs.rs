//! `/runs` handlers: create, get, list, cancel, resolve an interrupt. Requests are read
//! into, and answers written from, the generated models of the OpenAPI document.

use super::discovery::etag_matches;
use super::error::ApiError;
use super::extract::{Caller, JsonBody, PathParams, QueryMap, run_id};
use super::rendered::{Rendered, RenderedRuns};
use crate::app::AppState;
use crate::generated::models::{
    CancelRunRequest, CancelRunResponse, CreateRunResponse, ResolveInterruptRequest,
    ResolveInterruptResponse, RunList,
};
use crate::ids::project;
use crate::ops::{CreateRunRequest, ListParams, OpError, RunRecord, Transport};
use crate::wire::wire;
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use siphasher::sip128::SipHasher13;
use std::sync::Arc;

const IDEMPOTENT_REPLAY: HeaderName = HeaderName::from_static("openwop-idempotent-replay");

fn links(run: &RunRecord) -> (String, String) {
    let p = project(&run.run_id);
    (format!("/runs/{p}"), format!("/runs/{p}/events"))
}

pub async fn create_run(
    State(state): State<AppState>,
    Caller(subject): Caller,
    headers: HeaderMap,
    JsonBody(body): JsonBody<CreateRunRequest>,
) -> Result<Response, ApiError> {
    let key = match headers.get("idempotency-key") {
        None => None,
        Some(v) => Some(v.to_str().map_err(|_| {
            ApiError::new(
                crate::generated::errors::ErrorCode::IdempotencyKeyInvalid,
                "`Idempotency-Key` must be visible ASCII",
            )
        })?),
    };
    // The trace the request continues (the `traceparent` header): the run keeps it, so
    // its calls to peers continue that trace.
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let trace = crate::trace::select(None, header("traceparent"), header("tracestate"))
        .map(|tc| tc.traceparent);
    let created = state
        .ops
        .create_run_with(
            &subject,
            body,
            Transport::Rest,
            key,
            crate::ops::CreateWith {
                trace,
                ..Default::default()
            },
        )
        .await?;
    let (status_url, events_url) = links(&created.run);
    let body = CreateRunResponse {
        run_id: wire("runId", created.run.run_id.as_str()).map_err(OpError::internal)?,
        status: created.run.status,
        events_url,
        status_url: status_url.clone(),
    };
    let mut resp = (StatusCode::CREATED, Json(body)).into_response();
    if let Ok(loc) = HeaderValue::from_str(&status_url) {
        resp.headers_mut().insert(header::LOCATION, loc);
    }
    if created.replay {
        resp.headers_mut()
            .insert(IDEMPOTENT_REPLAY, HeaderValue::from_static("true"));
    }
    Ok(resp)
}

pub async fn get_run(
    State(state): State<AppState>,
    kept: Arc<RenderedRuns>,
    Caller(subject): Caller,
    path: PathParams,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let id = run_id(path.get("run_id"))?;
    // Taken before the read (`rendered`): an answer kept under it is the one a read now
    // would make.
    let stamp = state.ops.snapshot_stamp(&subject, &id)?;
    let key = id.as_bound();
    let rendered = match stamp.and_then(|s| kept.get(&key, s)) {
        Some(hit) => hit,
        None => {
            let (run, view) = state.ops.get_snapshot(&subject, &id).await?;
            let body = serde_json::to_vec(&view)
                .map_err(|e| ApiError::from(crate::ops::OpError::Internal(e.to_string())))?;
            let etag = run_etag(run.last_sequence + 1, &body);
            let rendered = Rendered {
                etag: HeaderValue::from_str(&etag).unwrap_or(HeaderValue::from_static("\"0\"")),
                body: body.into(),
            };
            if let Some(stamp) = stamp {
                kept.keep(key, stamp, rendered.clone());
            }
            rendered
        }
    };
    if etag_matches(&headers, rendered.etag.to_str().unwrap_or_default()) {
        return Ok((StatusCode::NOT_MODIFIED, [(header::ETAG, rendered.etag)]).into_response());
    }
    Ok((
        StatusCode::OK,
        [
            (header::ETAG, rendered.etag),
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            ),
        ],
        rendered.body,
    )
        .into_response())
}

/// The strong ETag of a run's representation: the sequence the run's next event will
/// take, and a 128-bit SipHash-1-3 of the body's bytes, so the tag changes whenever a byte
/// of the representation does. The hash key is fixed, so every replica and every restart
/// gives the same bytes the same tag (a validator got from one replica holds on another).
/// It is a fingerprint, not a MAC: it authenticates nothing, it tells two representations
/// apart (a chance collision between two bodies of one run at one sequence is 2^-128). It
/// costs a fraction of the SHA-256 it replaces (64 bits of that), in software.
fn run_etag(next_sequence: i64, body: &[u8]) -> String {
    let digest = SipHasher13::new_with_keys(0, 0).hash(body).as_u128();
    format!("\"{next_sequence}-{digest:032x}\"")
}

pub async fn list_runs(
    State(state): State<AppState>,
    Caller(subject): Caller,
    QueryMap(q): QueryMap,
) -> Result<Json<RunList>, ApiError> {
    let limit = match q.get("limit") {
        None => None,
        Some(l) => Some(
            l.parse::<usize>()
                .ok()
                .filter(|n| *n >= 1)
                .ok_or_else(|| ApiError::validation("`limit` must be a positive integer"))?,
        ),
    };
    let params = ListParams {
        limit,
        cursor: q.get("cursor").cloned(),
        workflow_id: match q.get("workflowId") {
            // The workflowId grammar (ids.schema.json): an empty or malformed filter is a
            // mistake to report, not a filter that matches nothing.
            Some(w)
                if w.is_empty()
                    || w.len() > 128
                    || !w
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"._~:-".contains(&b)) =>
            {
                return Err(ApiError::validation(format!(
                    "`workflowId` `{w}` is not a workflow id"
                )));
            }
            other => other.cloned(),
        },
        status: match q.get("status") {
            None => None,
            Some(s) => Some(s.parse().map_err(|_| {
                ApiError::validation(format!("`status` `{s}` is not a run status"))
            })?),
        },
    };
    let page = state.ops.list_runs(&subject, params).await?;
    let runs = state.ops.snapshots(&page.runs).await?;
    Ok(Json(RunList {
        runs,
        next_cursor: page
            .next_cursor
            .map(|c| wire("nextCursor", c))
            .transpose()
            .map_err(OpError::internal)?,
    }))
}

/// Checks an `Idempotency-Key` on a mutation that is idempotent by itself (cancel,
/// resolve: repeating one changes nothing more), so the key is not stored; a key the
/// contract would refuse on create (empty, over 255 bytes, not visible ASCII) is refused
/// here too rather than silently passed over.
fn check_idempotency_key(headers: &HeaderMap) -> Result<(), ApiError> {
    let Some(v) = headers.get("idempotency-key") else {
        return Ok(());
    };
    let key = v.as_bytes();
    if key.is_empty() || key.len() > 255 || !key.iter().all(|b| (0x21..0x7f).contains(b)) {
        return Err(ApiError::new(
            crate::generated::errors::ErrorCode::IdempotencyKeyInvalid,
            "`Idempotency-Key` must be 1-255 visible ASCII characters",
        ));
    }
    Ok(())
}

pub async fn cancel_run(
    State(state): State<AppState>,
    Caller(subject): Caller,
    path: PathParams,
    headers: HeaderMap,
    JsonBody(body): JsonBody<Option<CancelRunRequest>>,
) -> Result<Json<CancelRunResponse>, ApiError> {
    check_idempotency_key(&headers)?;
    let id = run_id(path.get("run_id"))?;
    // The model holds `reason` to 1..=256 characters.
    let reason = body.and_then(|b| b.reason).map(String::from);
    let run = state.ops.cancel_run(&subject, &id, reason).await?;
    Ok(Json(cancel_response(&run)?))
}

/// The answer of a cancel: `cancelled` once `run.cancelled` is appended (this host appends
/// it in the cancel's own transaction), `cancelling` while it cascades.
fn cancel_response(run: &RunRecord) -> Result<CancelRunResponse, ApiError> {
    use crate::generated::models::CancelRunResponseStatus as S;
    use crate::status::RunStatus;
    let status = match run.status {
        RunStatus::Cancelled => S::Cancelled,
        RunStatus::Cancelling => S::Cancelling,
        other => {
            return Err(
                OpError::internal(format!("a cancel answered with status `{other}`")).into(),
            );
        }
    };
    Ok(CancelRunResponse {
        run_id: wire("runId", run.run_id.as_str()).map_err(OpError::internal)?,
        status,
    })
}

/// The answer of a resolve, by run or by token.
pub fn resolved(run: &RunRecord, node_id: &str) -> Result<ResolveInterruptResponse, ApiError> {
    Ok(ResolveInterruptResponse {
        run_id: wire("runId", run.run_id.as_str()).map_err(OpError::internal)?,
        // Checked against the id grammar by the resolve.
        node_id: wire("nodeId", node_id).map_err(OpError::internal)?,
        interrupt_id: None,
        status: run.status,
    })
}

/// An author-minted id (a nodeId, an artifactId) from its path segment, with the `~XX`
/// projection undone as for agentId and workflowId: clients (the SDK among them) project
/// every byte outside `[A-Za-z0-9._-]`, so `review:legal` arrives as `review~3Alegal`, and
/// a segment of dots is projected so that no URL parser drops it. A segment that does
/// not unproject (a raw `~` that starts no escape) is taken as written: it names the id
/// a client that does not project meant, or none.
pub(crate) fn author_id(segment: &str) -> String {
    crate::ids::unproject_segment(segment).unwrap_or_else(|_| segment.to_owned())
}

pub async fn resolve_interrupt(
    State(state): State<AppState>,
    Caller(subject): Caller,
    path: PathParams,
    headers: HeaderMap,
    JsonBody(body): JsonBody<ResolveInterruptRequest>,
) -> Result<Json<ResolveInterruptResponse>, ApiError> {
    check_idempotency_key(&headers)?;
    let id = run_id(path.get("run_id"))?;
    let node_id = author_id(path.get("node_id"));
    let run = state
        .ops
        .resolve_interrupt(&subject, &id, &node_id, body.resume_value)
        .await?;
    Ok(Json(resolved(&run, &node_id)?))
}

#[cfg(test)]
mod tests {
    use super::run_etag;

    /// The tag is a function of the bytes alone, fixed across builds and processes (so
    /// replicas agree), and any change of a byte or of the sequence changes it.
    #[test]
    fn the_run_etag_tracks_the_bytes_and_is_the_same_everywhere() {
        let body = br#"{"runId":"r","status":"running"}"#;
        let tag = run_etag(3, body);
        assert_eq!(tag, run_etag(3, body));
        assert_ne!(tag, run_etag(3, br#"{"runId":"r","status":"waiting"}"#));
        assert_ne!(tag, run_etag(4, body));
        assert_ne!(run_etag(3, b""), run_etag(3, b" "));
        // Pinned: another process or replica computes this same tag for these bytes.
        assert_eq!(tag, PINNED);
    }

    const PINNED: &str = "\"3-0f84d8735c5273bf0b8c2559df2d89fc\"";
}
