//! Convenience on top of the generated operations: follow a run to its end, answer its
//! interrupts. Written by hand (`codegen/templates/client/convenience.rs`); everything it
//! does goes through the generated builders, so it needs nothing the corpus does not say.
// openwop-codegen: requires operation getRun
// openwop-codegen: requires operation streamRunEvents
// openwop-codegen: requires operation resolveInterruptByRun
// openwop-codegen: requires model RunEvent
// openwop-codegen: requires model RunEventPayload
// openwop-codegen: requires model RunEventType
// openwop-codegen: requires model RunSnapshot
// openwop-codegen: requires model InterruptRequested
// openwop-codegen: requires model ResolveInterruptResponse

use super::{Client, Conditional, Error, HeaderMap};
use crate::models::{
    InterruptRequested, ResolveInterruptResponse, RunEvent, RunEventPayload, RunSnapshot,
};

/// An interrupt a run raised, as its `interrupt.requested` event carried it.
#[derive(Debug, Clone)]
pub struct RaisedInterrupt {
    /// The run that is waiting.
    pub run_id: String,
    /// The suspended node (what `resolve_interrupt` needs).
    pub node_id: String,
    /// The interrupt as the node raised it (`kind`, `data`, `resumeSchema`, …);
    /// `payload.typed_data()` gives the kind's own payload (`ApprovalData`, …).
    pub payload: InterruptRequested,
    /// The event itself.
    pub event: RunEvent,
}

impl RaisedInterrupt {
    /// The interrupt of an `interrupt.requested` event; `None` for any other event, or one
    /// without a node.
    pub fn from_event(event: &RunEvent) -> Option<Self> {
        let Ok(RunEventPayload::InterruptRequested(payload)) = event.typed_payload() else {
            return None;
        };
        Some(Self {
            run_id: event.run_id.to_string(),
            node_id: event.node_id.as_ref()?.to_string(),
            payload,
            event: event.clone(),
        })
    }
}

impl Client {
    /// Resolves the open interrupt at `node_id` of `run_id` with `resume_value` (it must
    /// satisfy the interrupt's `resumeSchema`; an approval takes `{"action": "accept"}`).
    pub async fn resolve_interrupt(
        &self,
        run_id: &str,
        node_id: &str,
        resume_value: impl Into<serde_json::Value>,
    ) -> Result<ResolveInterruptResponse, Error> {
        self.resolve_interrupt_by_run(run_id, node_id)
            .resume_value(resume_value)
            .send()
            .await
            .map(|answer| answer.into_inner())
    }

    /// The run's snapshot as it is now.
    pub async fn run_snapshot(&self, run_id: &str) -> Result<RunSnapshot, Error> {
        match self.get_run(run_id).send().await?.into_inner() {
            Conditional::Fresh(snapshot) => Ok(snapshot),
            // Only a request carrying If-None-Match can be answered 304.
            Conditional::NotModified => Err(Error::Decode {
                status: 304,
                message: "304 to a read without If-None-Match".to_owned(),
                body: String::new(),
                headers: HeaderMap::new(),
            }),
        }
    }

    /// Follows the run's event stream until the run is finished, then answers the final
    /// snapshot. A run waiting on an interrupt keeps this waiting until someone resolves
    /// it; see [`Client::run_to_end`].
    pub async fn wait_until_terminal(&self, run_id: &str) -> Result<RunSnapshot, Error> {
        self.follow_run(run_id, |_| {}).await
    }

    /// As [`Client::wait_until_terminal`], calling `on_event` with every event in order
    /// (events the crate cannot decode are skipped).
    pub async fn follow_run(
        &self,
        run_id: &str,
        mut on_event: impl FnMut(&RunEvent),
    ) -> Result<RunSnapshot, Error> {
        let no_answer: Option<fn(&RaisedInterrupt) -> serde_json::Value> = None;
        self.drive(run_id, no_answer, &mut on_event).await
    }

    /// A stream of the run's events, resumed after `last` when given.
    async fn events_after(
        &self,
        run_id: &str,
        last: Option<&str>,
    ) -> Result<super::EventStream<RunEvent>, Error> {
        let mut open = self.stream_run_events(run_id);
        if let Some(id) = last {
            open = open.last_event_id(id);
        }
        open.send().await
    }

    /// The snapshot once the run is finished; `None` while it is not. A host ends the
    /// stream after the terminal event, but a proxy may close a long stream early, and an
    /// ended stream alone does not make a run finished.
    async fn finished(&self, run_id: &str) -> Result<Option<RunSnapshot>, Error> {
        let snapshot = self.run_snapshot(run_id).await?;
        Ok(snapshot.status.is_terminal().then_some(snapshot))
    }

    /// Follows the run to its end, answering every interrupt it raises with the resume value
    /// `answer` gives, and calling `on_event` with every event; answers the final snapshot.
    ///
    /// The stream starts at the beginning of the run's log, so `answer` is also called for
    /// interrupts raised before this call, including ones already resolved: their
    /// resolution is refused by the host (`409`/`410`) and skipped, and so is one another
    /// client answered first. Keep `answer` free of side effects, or check the interrupt
    /// against [`Client::run_snapshot`]'s open `interrupts` before acting.
    pub async fn run_to_end(
        &self,
        run_id: &str,
        mut answer: impl FnMut(&RaisedInterrupt) -> serde_json::Value,
        mut on_event: impl FnMut(&RunEvent),
    ) -> Result<RunSnapshot, Error> {
        self.drive(run_id, Some(&mut answer), &mut on_event).await
    }

    /// Follows the run until its status is terminal, resuming a stream that ends before,
    /// and answers each interrupt with `answer` when there is one. A terminal event
    /// (`run.completed`, `run.failed`, `run.cancelled`) ends the reading at once: nothing
    /// follows it, so the stream is not read (or reconnected) to its end, and one `getRun`
    /// confirms the status.
    async fn drive(
        &self,
        run_id: &str,
        mut answer: Option<impl FnMut(&RaisedInterrupt) -> serde_json::Value>,
        on_event: &mut impl FnMut(&RunEvent),
    ) -> Result<RunSnapshot, Error> {
        let mut last: Option<String> = None;
        loop {
            let mut events = self.events_after(run_id, last.as_deref()).await?;
            while let Some(item) = events.next_event().await {
                let event = match item {
                    Ok(event) => event,
                    Err(Error::Decode { .. }) => continue,
                    Err(e) => return Err(e),
                };
                last = event.id.clone().or(last);
                let event = event.data;
                on_event(&event);
                if ends_run(&event) {
                    break;
                }
                if let (Some(answer), Some(raised)) =
                    (answer.as_mut(), RaisedInterrupt::from_event(&event))
                {
                    let value = answer(&raised);
                    match self.resolve_interrupt(run_id, &raised.node_id, value).await {
                        Ok(_) => {}
                        // Resolved already, expired or cancelled: the log goes on without us.
                        Err(Error::Api {
                            status: 409 | 410, ..
                        }) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
            if let Some(snapshot) = self.finished(run_id).await? {
                return Ok(snapshot);
            }
            // Ended before the run did: resume after the last event, after a pause so that
            // a host or proxy that keeps closing at once is not asked in a tight loop.
            tokio::time::sleep(REOPEN_PAUSE).await;
        }
    }
}

/// Whether the event ends its run (a terminal status follows; the log holds nothing after).
fn ends_run(event: &RunEvent) -> bool {
    super::stream::ends_run_type(event.type_.as_str())
}

/// The pause before a run's stream that ended early is opened again.
const REOPEN_PAUSE: std::time::Duration = std::time::Duration::from_secs(1);
