//! `GET /host/events`: the caller tenant's host events, as a JSON list or as SSE when the
//! client asks for `text/event-stream`. Durable events carry an SSE `id:` (their eventId)
//! and are replayed after `Last-Event-ID`; ephemeral ones reach live subscribers only.

use super::error::ApiError;
use super::extract::{Caller, QueryMap};
use crate::app::AppState;
use crate::ops::{HostEventRecord, HostWatch, host_event_view, to_json};
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde_json::json;
use std::convert::Infallible;
use std::time::Duration;

fn frame(ev: &HostEventRecord) -> Option<Event> {
    let view = host_event_view(ev)
        .map_err(|e| tracing::warn!(error = %e, "a host event it cannot show is left out"))
        .ok()?;
    let e = Event::default()
        .event(ev.event_type.clone())
        .data(to_json(&view));
    Some(if ev.delivery == "durable" {
        e.id(ev.event_id.clone())
    } else {
        e
    })
}

/// One SSE frame per host event; durable ones carry their id. A store failure past the
/// watch's retries ends the stream with an `error` frame (`events::error_frame`).
async fn next_frame(watch: &mut Option<HostWatch>) -> Option<Event> {
    loop {
        match watch.as_mut()?.next().await? {
            Ok(ev) => match frame(&ev) {
                Some(frame) => return Some(frame),
                None => continue,
            },
            Err(e) => {
                *watch = None;
                return Some(super::events::error_frame(e));
            }
        }
    }
}

pub async fn host_events(
    State(state): State<AppState>,
    Caller(subject): Caller,
    headers: HeaderMap,
    QueryMap(q): QueryMap,
) -> Result<Response, ApiError> {
    let wants_sse = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|a| a.contains("text/event-stream"));
    // `Last-Event-ID` is an eventId or nothing, on either answer (the JSON page reads its
    // cursor from `after`, but a malformed header is still refused, not passed over).
    if let Some(v) = headers.get("last-event-id") {
        let ok = v.to_str().is_ok_and(|s| {
            (16..=128).contains(&s.trim().len())
                && s.trim()
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._~-".contains(&b))
        });
        if !ok {
            return Err(ApiError::validation(
                "`Last-Event-ID` must be an eventId (16-128 of A-Z a-z 0-9 . _ ~ -)",
            ));
        }
    }
    if !wants_sse {
        let after = match q.get("after") {
            None => 0,
            Some(id) => state.ops.host_event_position(&subject, id).await?,
        };
        let events = state.ops.host_events(&subject, after, 1000).await?;
        return Ok(
            // A JSON page beside the SSE stream the corpus describes: `{events: [HostEvent]}`
            // has no schema of its own, so the list is JSON around typed events.
            Json(json!({"events": events.iter().map(host_event_view).collect::<Result<Vec<_>, _>>()?}))
                .into_response(),
        );
    }
    let cursor = match headers.get("last-event-id").and_then(|v| v.to_str().ok()) {
        None => 0,
        Some(id) => state.ops.host_event_position(&subject, id.trim()).await?,
    };
    let watch = Some(state.ops.watch_host(&subject, cursor));
    let stream = futures::stream::unfold(watch, |mut w| async move {
        next_frame(&mut w)
            .await
            .map(|e| (Ok::<_, Infallible>(e), w))
    });
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response())
}
