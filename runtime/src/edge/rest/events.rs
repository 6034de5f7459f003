//! The run log on the wire: SSE at `/runs/{runId}/events` and long-poll at
//! `/runs/{runId}/events/poll`.

use super::error::ApiError;
use super::extract::{Caller, PathParams, QueryMap, run_id};
use crate::app::AppState;
use crate::generated::errors::ErrorCode;
use crate::generated::models::PollEventsResponse;
use crate::ops::{EventRecord, OpError, RunWatch, event_view, to_json};
use axum::Json;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::time::Duration;

/// Stream modes this host serves.
const SUPPORTED_STREAM_MODES: &[&str] = &["updates"];
const KEEP_ALIVE: Duration = Duration::from_secs(15);

fn check_stream_mode(mode: Option<&String>) -> Result<(), ApiError> {
    let Some(mode) = mode else { return Ok(()) };
    let ok = !mode.is_empty()
        && mode
            .split(',')
            .all(|m| SUPPORTED_STREAM_MODES.contains(&m.trim()));
    if ok {
        Ok(())
    } else {
        Err(ApiError::new(
            ErrorCode::UnsupportedStreamMode,
            format!("streamMode `{mode}` is not served by this host"),
        )
        .with_details(json!({"supported": SUPPORTED_STREAM_MODES})))
    }
}

/// `Last-Event-ID: N` → resume strictly after N.
fn last_event_id(headers: &HeaderMap) -> Result<i64, ApiError> {
    match headers.get("last-event-id") {
        None => Ok(-1),
        Some(v) => v
            .to_str()
            .ok()
            .map(str::trim)
            .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|s| s.parse::<i64>().ok())
            .ok_or_else(|| {
                ApiError::validation("`Last-Event-ID` must be a non-negative event sequence number")
            }),
    }
}

/// One SSE frame per event; the stream closes after the run's last event (or at once
/// for a finished run with nothing after the cursor).
struct Tail {
    watch: RunWatch,
    ready: VecDeque<EventRecord>,
    /// An `error` frame was sent: the stream closes next.
    failed: bool,
}

/// The frame that ends a stream the host cannot go on with (its store failed for longer
/// than a watch retries): an `error` event with the error envelope, carrying no `id`,
/// so the client's `Last-Event-ID` stays the last event it got and a reconnection
/// resumes right after it; `retry` tells an EventSource when to reconnect.
pub(super) fn error_frame(e: OpError) -> Event {
    tracing::warn!(error = %e, "an event stream ended by a store failure; the client may resume");
    let retry_ms = e.retry_after().unwrap_or(1) * 1000;
    let body = serde_json::to_value(ApiError::from(e).envelope()).unwrap_or_else(|_| json!({}));
    Event::default()
        .event("error")
        .retry(Duration::from_millis(retry_ms))
        .data(body.to_string())
}

impl Tail {
    async fn next(&mut self) -> Option<Event> {
        if self.failed {
            return None;
        }
        loop {
            if let Some(ev) = self.ready.pop_front() {
                let view = match event_view(&ev) {
                    Ok(view) => view,
                    Err(e) => {
                        tracing::warn!(error = %e, "event stream ended by an event it cannot show");
                        return None;
                    }
                };
                return Some(
                    Event::default()
                        .id(ev.sequence.to_string())
                        .event(ev.event_type.clone())
                        .data(to_json(&view)),
                );
            }
            match self.watch.next().await? {
                Ok(update) => self.ready.extend(update.events),
                Err(e) => {
                    self.failed = true;
                    return Some(error_frame(e));
                }
            }
        }
    }
}

pub async fn stream_events(
    State(state): State<AppState>,
    Caller(subject): Caller,
    path: PathParams,
    headers: HeaderMap,
    QueryMap(q): QueryMap,
) -> Result<Response, ApiError> {
    let id = run_id(path.get("run_id"))?;
    // Authorization first: a foreign or unknown run answers the same whatever the cursor.
    state.ops.get_run(&subject, &id).await?;
    check_stream_mode(q.get("streamMode"))?;
    let cursor = last_event_id(&headers)?;
    let tail = Tail {
        watch: state.ops.watch(&subject, &id, cursor).await?,
        ready: VecDeque::new(),
        failed: false,
    };
    let stream = futures::stream::unfold(tail, |mut tail| async move {
        tail.next().await.map(|ev| (Ok::<_, Infallible>(ev), tail))
    });
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response())
}

pub async fn poll_events(
    State(state): State<AppState>,
    Caller(subject): Caller,
    path: PathParams,
    QueryMap(q): QueryMap,
) -> Result<Json<PollEventsResponse>, ApiError> {
    let id = run_id(path.get("run_id"))?;
    state.ops.get_run(&subject, &id).await?;
    let after = match q.get("afterSequence") {
        None => -1,
        Some(s) => s.parse::<i64>().ok().filter(|n| *n >= -1).ok_or_else(|| {
            ApiError::validation(
                "`afterSequence` must be an integer >= 0 (or -1, the lastSequence of an empty log)",
            )
        })?,
    };
    let timeout = match q.get("timeout") {
        None => 30,
        Some(s) => s
            .parse::<u64>()
            .ok()
            .filter(|n| (0..=60).contains(n))
            .ok_or_else(|| {
                ApiError::validation("`timeout` must be an integer number of seconds from 0 to 60")
            })?,
    };
    let res = state
        .ops
        .poll(&subject, &id, after, Duration::from_secs(timeout))
        .await?;
    // The log's highest sequence when the answer was built (-1 for an empty log), not the
    // last event of this answer: a poll past the end still tells where the log stands, and a
    // client can see that a terminal run's answer stopped at a page before the end.
    let last = res.events.last().map_or(res.run.last_sequence, |e| {
        e.sequence.max(res.run.last_sequence)
    });
    Ok(Json(PollEventsResponse {
        run_id: crate::wire::wire("runId", res.run.run_id.as_str()).map_err(OpError::internal)?,
        events: res
            .events
            .iter()
            .map(event_view)
            .collect::<Result<_, _>>()?,
        last_sequence: last,
        status: res.run.status,
        is_terminal: res.run.status.is_terminal(),
    }))
}
