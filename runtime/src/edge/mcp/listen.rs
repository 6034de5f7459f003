//! `subscriptions/listen` on streamable HTTP: a long-lived SSE stream whose first message
//! acknowledges the honoured subset of what the client asked for, then carries
//! `notifications/tasks` for the tasks it named, each tagged with the subscription id.
//!
//! Honoured: `taskIds` (tasks extension declared), minus those the caller cannot read —
//! left out exactly as unknown ones, so the acknowledgement discloses nothing. Not
//! honoured: list-changed kinds (the tool list is fixed for the life of the process and
//! `server/discover` says `listChanged: false`) and resource subscriptions (no resources).

use std::collections::HashMap;
use std::convert::Infallible;

use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::McpState;
use super::gate::TASKS_EXTENSION;
use super::rpc::{Message, result_body};
use super::service::Ctx;
use crate::ids::BoundId;
use crate::store::{Topic, Wake};

const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

fn notification(method: &str, mut params: Value, id: &Value) -> Event {
    if let Some(obj) = params.as_object_mut() {
        let meta = obj.entry("_meta").or_insert_with(|| json!({}));
        meta[SUBSCRIPTION_ID] = id.clone();
    }
    let body = json!({"jsonrpc": "2.0", "method": method, "params": params});
    Event::default().event("message").data(body.to_string())
}

/// Opens the stream. Ends when the client goes away (the stream is dropped) or, with a
/// final result to the listen id, when the host shuts down.
pub async fn open(state: McpState, ctx: Ctx, message: Message) -> Response {
    let id = message.id.clone().unwrap_or(Value::Null);
    let asked = message
        .params
        .get("notifications")
        .cloned()
        .unwrap_or(json!({}));
    let tasks_declared = match &ctx.era {
        super::service::Era::Modern(d) => d.has_extension(TASKS_EXTENSION),
        super::service::Era::Legacy(_) => false,
    };
    // Subscribe to the runs asked for before reading them, so no change between the two
    // is missed; wake-ups of those the caller cannot read are ignored below.
    let asked_runs: Vec<Topic> = match asked.get("taskIds").and_then(Value::as_array) {
        Some(ids) if tasks_declared => ids
            .iter()
            .filter_map(Value::as_str)
            .filter_map(|id| BoundId::parse_bound(id).ok())
            .map(|id| Topic::Run(id.as_bound()))
            .collect(),
        _ => Vec::new(),
    };
    let mut wakes = state.app.ops.runs().subscribe(&asked_runs);
    let mut watched: HashMap<String, String> = HashMap::new(); // runId -> taskId as asked
    if tasks_declared && let Some(ids) = asked.get("taskIds").and_then(Value::as_array) {
        for task_id in ids.iter().filter_map(Value::as_str) {
            if let Ok(run) = state
                .load_task(&ctx.subject, &json!({"taskId": task_id}))
                .await
            {
                watched.insert(run.run_id.clone(), task_id.to_owned());
            }
        }
    }
    let mut honoured = json!({});
    if !watched.is_empty() {
        let mut ids: Vec<&String> = watched.values().collect();
        ids.sort();
        honoured["taskIds"] = json!(ids);
    }
    let mut shutdown = state.app.shutdown.clone();
    // A task feeds the stream through a channel; when the client goes away the receiver
    // is dropped and `tx.closed()` ends the task.
    let (tx, rx) = tokio::sync::mpsc::channel::<Event>(16);
    tokio::spawn(async move {
        let ack = notification(
            "notifications/subscriptions/acknowledged",
            json!({"notifications": honoured}),
            &id,
        );
        if tx.send(ack).await.is_err() {
            return;
        }
        // Where each watched task stood when last told, so a wake-up that changed nothing
        // for it sends nothing.
        let mut last: HashMap<String, Value> = HashMap::new();
        loop {
            let changed: Vec<String> = tokio::select! {
                _ = tx.closed() => return,
                _ = shutdown.wait_for(|v| *v) => break,
                wake = wakes.recv() => match wake {
                    Wake::Run(run_id) if watched.contains_key(&run_id) => vec![run_id],
                    Wake::Run(_) | Wake::Host(_) => continue,
                    Wake::Resync => watched.keys().cloned().collect(),
                },
            };
            for run_id in changed {
                let Some(task_id) = watched.get(&run_id).cloned() else {
                    continue;
                };
                // Authorized again on every notification: what tasks/get would answer now.
                let Ok(run) = state
                    .load_task(&ctx.subject, &json!({"taskId": task_id}))
                    .await
                else {
                    continue;
                };
                let Ok(mut view) = state.task_view(&run, true).await else {
                    continue;
                };
                if let Some(obj) = view.as_object_mut() {
                    obj.remove("resultType");
                }
                if last.get(&run_id) == Some(&view) {
                    continue;
                }
                last.insert(run_id.clone(), view.clone());
                if tx
                    .send(notification("notifications/tasks", view, &id))
                    .await
                    .is_err()
                {
                    return;
                }
            }
        }
        // A graceful end: the final result to the listen id.
        let end = result_body(
            &id,
            json!({"resultType": "complete", "_meta": {SUBSCRIPTION_ID: id.clone()}}),
        );
        let _ = tx
            .send(Event::default().event("message").data(end.to_string()))
            .await;
    });
    let stream = futures::StreamExt::map(
        tokio_stream::wrappers::ReceiverStream::new(rx),
        Ok::<Event, Infallible>,
    );
    let mut resp = Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response();
    resp.headers_mut().insert(
        "x-accel-buffering",
        axum::http::HeaderValue::from_static("no"),
    );
    resp
}
