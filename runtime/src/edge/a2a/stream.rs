//! Streaming (SendStreamingMessage, SubscribeToTask): the Task first, then a statusUpdate
//! per status change and an artifactUpdate per published artifact; the stream ends at a
//! terminal state, or at an interrupted one where the peer has to act. A stream the host
//! cannot go on with (its store failed for longer than a watch retries) ends with the
//! error as its last item, which each binding renders in its own shape: the client then
//! knows to resubscribe rather than take the close for the task's end.

use crate::status::Lifecycle;

use futures::Stream;
use openwop_generated::models::A2aStreamResponse;
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

/// One item of a stream: a `StreamResponse`, or the error that ends the stream.
pub type Item = Result<A2aStreamResponse, Fault>;

/// Starts streaming `run` as `StreamResponse` objects. The first item is produced before
/// this returns, so an error reading the task is still a plain error answer.
pub async fn open(
    state: A2aState,
    subject: Subject,
    run: RunRecord,
    history: Option<usize>,
    until: Until,
) -> Result<impl Stream<Item = Item>, Fault> {
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
        // The stream's last item, when the host cannot go on with it.
        let sender = &tx;
        let fail = move |e: Fault| async move {
            tracing::warn!(error = %e.message, "an A2A stream ended by a failure; the client may resubscribe");
            let _ = sender.send(Err(e)).await;
        };
        if tx.send(Ok(first.as_stream_task())).await.is_err() {
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
        let mut last_state = first.task.status.state.clone();
        let mut sent_artifacts = !first.task.artifacts.is_empty();
        let mut watch = match state.app.ops.watch(&subject, &id, run.last_sequence).await {
            Ok(watch) => watch,
            Err(e) => return fail(e.into()).await,
        };
        loop {
            // A client that went away ends the task at once, not at the run's next event.
            let next = tokio::select! {
                _ = tx.closed() => return,
                next = watch.next() => next,
            };
            let update = match next {
                Some(Ok(update)) => update,
                Some(Err(e)) => return fail(e.into()).await,
                None => return,
            };
            let now = match state
                .project_in_stream(
                    &update.run,
                    Shape {
                        history_length: Some(0),
                        include_artifacts: true,
                    },
                )
                .await
            {
                Ok(now) => now,
                Err(e) => return fail(e).await,
            };
            if !sent_artifacts && !now.task.artifacts.is_empty() {
                sent_artifacts = true;
                for update in now.as_artifact_updates() {
                    if tx.send(Ok(update)).await.is_err() {
                        return;
                    }
                }
            }
            if now.task.status.state != last_state || ends(&now) {
                last_state = now.task.status.state.clone();
                if tx.send(Ok(now.as_status_update())).await.is_err() {
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
