//! Streaming (SendStreamingMessage, SubscribeToTask): the Task first, then a statusUpdate
//! per status change and an artifactUpdate per published artifact; the stream ends at a
//! terminal state, or at an interrupted one where the peer has to act.

use crate::status::Lifecycle;

use futures::Stream;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;

use super::errors::Fault;
use super::project::{self, Shape};
use super::service::A2aState;
use crate::identity::Subject;
use crate::ids::BoundId;
use crate::ops::RunRecord;

/// Where a stream ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Until {
    /// At a terminal state (SubscribeToTask).
    Terminal,
    /// At a terminal state or one where the peer has to act (SendStreamingMessage).
    Interrupted,
}

/// Starts streaming `run` as `StreamResponse` objects. The first item is produced before
/// this returns, so an error reading the task is still a plain error answer.
pub async fn open(
    state: A2aState,
    subject: Subject,
    run: RunRecord,
    history: Option<usize>,
    until: Until,
) -> Result<impl Stream<Item = Value>, Fault> {
    let first = state
        .project(
            &run,
            Shape {
                history_length: history,
                include_artifacts: true,
            },
        )
        .await?;
    let (tx, rx) = mpsc::channel(16);
    tokio::spawn(async move {
        if tx.send(first.as_stream_task()).await.is_err() {
            return;
        }
        let ends = |p: &project::Projected| {
            p.status.is_terminal() || (until == Until::Interrupted && p.status.is_suspended())
        };
        if ends(&first) {
            return;
        }
        let Ok(id) = BoundId::parse_bound(&run.run_id) else {
            return;
        };
        let mut last_state = first.task["status"]["state"].clone();
        let mut sent_artifacts = first.task.get("artifacts").is_some();
        let mut watch = match state.app.ops.watch(&subject, &id, run.last_sequence).await {
            Ok(watch) => watch,
            Err(e) => {
                tracing::warn!(error = %e, "A2A stream ended early");
                return;
            }
        };
        loop {
            // A client that went away ends the task at once, not at the run's next event.
            let next = tokio::select! {
                _ = tx.closed() => return,
                next = watch.next() => next,
            };
            let update = match next {
                Some(Ok(update)) => update,
                Some(Err(e)) => {
                    tracing::warn!(error = %e, "A2A stream ended early");
                    return;
                }
                None => return,
            };
            let Ok(now) = state
                .project(
                    &update.run,
                    Shape {
                        history_length: Some(0),
                        include_artifacts: true,
                    },
                )
                .await
            else {
                return;
            };
            if !sent_artifacts && now.task.get("artifacts").is_some() {
                sent_artifacts = true;
                for update in now.as_artifact_updates() {
                    if tx.send(update).await.is_err() {
                        return;
                    }
                }
            }
            if now.task["status"]["state"] != last_state || ends(&now) {
                last_state = now.task["status"]["state"].clone();
                if tx.send(now.as_status_update()).await.is_err() {
                    return;
                }
            }
            if ends(&now) {
                return;
            }
        }
    });
    Ok(ReceiverStream::new(rx))
}
