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
use serde::Serialize;
use serde_json::Value;

use super::McpState;
use super::ctx::{Ctx, Era};
use super::gate::TASKS_EXTENSION;
use super::rpc::{Message, RpcError, result_body};
use super::wire::{Outgoing, ResultType, SubscriptionMeta, WithSubscription};
use crate::ids::BoundId;
use crate::ops::OpError;
use axum::http::StatusCode;
use futures::StreamExt;

/// A notification of the subscription `id`: its params, then `_meta` naming it.
fn notification<P: Serialize>(method: &str, params: P, id: &Value) -> String {
    let params = WithSubscription {
        params,
        meta: SubscriptionMeta {
            subscription_id: id,
        },
    };
    Outgoing::notification(method, params).text()
}

/// `notifications/subscriptions/acknowledged` params: what of the request is honoured.
#[derive(Serialize)]
struct Acknowledged<'a> {
    notifications: Honoured<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Honoured<'a> {
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    task_ids: &'a [String],
}

/// The final result of a listen that ended gracefully.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Ended {
    result_type: ResultType,
}

/// Opens the stream on streamable HTTP. Ends when the client goes away (the stream is
/// dropped) or, with a final response to the listen id, when the host shuts down (a
/// result) or cannot go on (an error: the client listens again). A store that cannot
/// be read while the subscription is set up answers 503 with `Retry-After` instead.
pub async fn open(state: McpState, ctx: Ctx, message: Message) -> Response {
    let (tx, rx) = tokio::sync::mpsc::channel::<String>(16);
    let id = message.echo_id();
    if let Err(e) = start(state, ctx, message, tx).await {
        return super::rpc::error_response(&e, Some(&id));
    }
    let stream = futures::StreamExt::map(tokio_stream::wrappers::ReceiverStream::new(rx), |v| {
        Ok::<Event, Infallible>(Event::default().event("message").data(v))
    });
    let mut resp = Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response();
    resp.headers_mut().insert(
        "x-accel-buffering",
        axum::http::HeaderValue::from_static("no"),
    );
    resp
}

/// Starts a subscription whose messages (the acknowledgement first, then the
/// notifications, then a final response at shutdown or when the host cannot go on) go
/// to `tx`, on any transport (the SSE stream above, stdout on stdio). It ends when `tx`'s
/// receiver is dropped. `Err`: the store could not be read to set it up (a transient
/// fault, answered as the mount answers one); nothing was sent.
pub async fn start(
    state: McpState,
    ctx: Ctx,
    message: Message,
    tx: tokio::sync::mpsc::Sender<String>,
) -> Result<tokio::task::JoinHandle<()>, RpcError> {
    // The final result echoes the request id as sent; the subscription id in `_meta` is
    // that id as a value.
    let raw_id = message.echo_id();
    let id = raw_id.value();
    // Read loosely, as the request is open to kinds this host does not honour: only
    // `taskIds`' strings are taken.
    let asked_ids = message
        .params
        .get("notifications")
        .and_then(|n| n.get("taskIds"))
        .and_then(Value::as_array);
    let modes = ctx.modes();
    let tasks_declared = match &ctx.era {
        Era::Modern(d) => d.has_extension(TASKS_EXTENSION),
        Era::Legacy(_) => false,
    };
    // One watch per task the caller may read, from its state now; the others are left
    // out of the acknowledgement exactly as unknown ids.
    let mut watches = futures::stream::SelectAll::new();
    let mut honoured_ids: Vec<String> = Vec::new();
    if tasks_declared && let Some(ids) = asked_ids {
        for task_id in ids.iter().filter_map(Value::as_str) {
            // A store that cannot be read says nothing about the task: the listen is
            // refused for now rather than acknowledged without it.
            let run = match state.load_task(&ctx.subject, task_id).await {
                Ok(run) => run,
                Err(e) if e.http == StatusCode::SERVICE_UNAVAILABLE => return Err(e),
                Err(_) => continue,
            };
            let Ok(bound) = BoundId::parse_bound(&run.run_id) else {
                continue;
            };
            let watch = match state
                .app
                .ops
                .watch(&ctx.subject, &bound, run.last_sequence)
                .await
            {
                Ok(watch) => watch,
                Err(e @ OpError::Unavailable { .. }) => return Err(e.into()),
                Err(_) => continue,
            };
            honoured_ids.push(task_id.to_owned());
            watches.push(Box::pin(futures::stream::unfold(
                watch,
                |mut w| async move { w.next().await.map(|update| (update, w)) },
            )));
        }
    }
    honoured_ids.sort();
    let mut shutdown = state.app.shutdown.clone();
    // A task feeds the stream through a channel; when the client goes away the receiver
    // is dropped and `tx.closed()` ends the task.
    Ok(tokio::spawn(async move {
        let honoured = Acknowledged {
            notifications: Honoured {
                task_ids: &honoured_ids,
            },
        };
        let ack = notification("notifications/subscriptions/acknowledged", honoured, &id);
        if tx.send(ack).await.is_err() {
            return;
        }
        let fail = |e: RpcError| {
            tracing::warn!(code = e.code, error = %e.message, "a listen stream ended by a failure; the client may listen again");
            let (tx, body) = (&tx, e.body(Some(&raw_id)));
            async move {
                let _ = tx.send(body).await;
            }
        };
        // Where each watched task stood when last told, so an update that changed nothing
        // the client sees sends nothing.
        let mut last: HashMap<String, String> = HashMap::new();
        loop {
            let update = tokio::select! {
                _ = tx.closed() => return,
                _ = shutdown.wait_for(|v| *v) => break,
                // Every watched task ended: the stream stays open until the client or
                // the host ends it.
                Some(update) = watches.next(), if !watches.is_empty() => update,
            };
            // A watch whose store failed for longer than it retries, or a view that
            // cannot be read: the subscription ends with the error as its response, the
            // shape a client re-listens on (MCP 2026 streams are not resumed; the new
            // listen's notifications carry each task's state as it is then).
            let run = match update {
                Ok(update) => update.run,
                Err(e) => return fail(RpcError::from(e)).await,
            };
            // A notification carries the task, not a result: no `resultType`.
            let mut view = match state.task_view_in_stream(&run, modes).await {
                Ok(view) => view,
                Err(e) => return fail(e).await,
            };
            view.result_type = None;
            // The whole message is compared: it differs only where the task does.
            let sent = notification("notifications/tasks", &view, &id);
            if last.get(&run.run_id) == Some(&sent) {
                continue;
            }
            last.insert(run.run_id.clone(), sent.clone());
            if tx.send(sent).await.is_err() {
                return;
            }
        }
        // A graceful end: the final result to the listen id.
        let ended = WithSubscription {
            params: Ended {
                result_type: ResultType::COMPLETE,
            },
            meta: SubscriptionMeta {
                subscription_id: &id,
            },
        };
        let end = result_body(&raw_id, &ended);
        let _ = tx.send(end).await;
    }))
}
