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
// openwop-codegen: requires model NodeSuspended
// openwop-codegen: requires model InterruptResolved
// openwop-codegen: requires model ResolveInterruptResponse
// openwop-codegen: requires field RunEvent.run_id
// openwop-codegen: requires field RunEvent.node_id
// openwop-codegen: requires field RunEvent.sequence
// openwop-codegen: requires field RunEvent.type_
// openwop-codegen: requires field RunSnapshot.status
// openwop-codegen: requires field InterruptRequested.kind
// openwop-codegen: requires variant RunEventPayload::InterruptRequested

use std::fmt;
use std::future::Future;
use std::ops::ControlFlow;
use std::pin::Pin;
use std::time::{Duration, Instant};

use super::{Client, Error, RetryPolicy};
use crate::models::{
    InterruptRequested, ResolveInterruptResponse, RunEvent, RunEventPayload, RunSnapshot,
};

/// An interrupt a run raised, as its `interrupt.requested` event carried it, with the id
/// the `node.suspended` after it names.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct RaisedInterrupt {
    /// The run that is waiting.
    pub run_id: String,
    /// The suspended node (what `resolve_interrupt` needs).
    pub node_id: String,
    /// The interrupt's id (the snapshot's `interrupts[].interruptId`), from the
    /// `node.suspended` event that follows `interrupt.requested`; `None` from
    /// [`RaisedInterrupt::from_event`], and when the host named none. A node that suspends
    /// again (a loop around it) raises a new interrupt with a new id at the same node.
    pub interrupt_id: Option<String>,
    /// The interrupt as the node raised it (`kind`, `data`, `resumeSchema`, …);
    /// `payload.typed_data()` gives the kind's own payload (`ApprovalData`, …).
    pub payload: InterruptRequested,
    /// The event itself.
    pub event: RunEvent,
}

/// What an `on_event` callback of [`FollowRun::on_event`] (or [`Client::run_to_end`])
/// answers: nothing (`()`, keep following), or a [`ControlFlow`]: `Break(())` stops
/// following after this event, and `send()` answers the run's snapshot as it is then.
pub trait EventFlow {
    /// Whether following stops after this event.
    fn stops(self) -> bool;
}

impl EventFlow for () {
    fn stops(self) -> bool {
        false
    }
}

impl EventFlow for ControlFlow<()> {
    fn stops(self) -> bool {
        self.is_break()
    }
}

/// The resume value an interrupt answerer gives, later: `None` leaves the interrupt open
/// (for a person, another service).
type AnswerFuture<'a> = Pin<Box<dyn Future<Output = Option<serde_json::Value>> + Send + 'a>>;

/// An interrupt answerer, sync or async, as [`FollowRun`] keeps it: in a `Mutex` (only ever
/// reached through `&mut`, never locked against anyone) so that a `FollowRun` is `Sync`, and
/// `send()`'s future `Send`, without asking the answerer to be `Sync`.
type Answerer<'a> =
    std::sync::Mutex<Box<dyn FnMut(RaisedInterrupt) -> AnswerFuture<'a> + Send + 'a>>;

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
            interrupt_id: None,
            payload,
            event: event.clone(),
        })
    }
}

impl Client {
    /// Resolves the open interrupt at `node_id` of `run_id` with `resume_value` (anything that
    /// serialises; it must satisfy the interrupt's `resumeSchema`: an approval takes
    /// `{"action": "accept"}`).
    pub async fn resolve_interrupt(
        &self,
        run_id: &str,
        node_id: &str,
        resume_value: impl serde::Serialize,
    ) -> Result<ResolveInterruptResponse, Error> {
        self.resolve_interrupt_by_run(run_id, node_id)
            .resume_value(resume_value)
            .send()
            .await
            .map(|answer| answer.into_inner())
    }

    /// The run's snapshot as it is now.
    pub async fn run_snapshot(&self, run_id: &str) -> Result<RunSnapshot, Error> {
        self.get_run(run_id)
            .send()
            .await
            .map(|answer| answer.into_inner())
    }

    /// Follows the run's event stream until the run is finished, then answers the final
    /// snapshot. A run waiting on an interrupt keeps this waiting until someone resolves
    /// it; see [`Client::run_to_end`]. [`Client::follow_run`] is the same with options.
    pub async fn wait_until_terminal(&self, run_id: &str) -> Result<RunSnapshot, Error> {
        self.follow_run(run_id).send().await
    }

    /// Follows the run's events until the run is finished, and answers the final snapshot:
    /// set what you need on the [`FollowRun`] it answers, then `send().await`. It takes
    /// what the event stream takes (where to resume, the idle timeout, how many failed
    /// reconnections end it, headers, the retry policy), a callback for every event, and
    /// one that answers interrupts.
    ///
    /// ```no_run
    /// use std::time::Duration;
    ///
    /// # async fn demo(client: openwop_sdk::client::Client) -> Result<(), openwop_sdk::client::Error> {
    /// let done = client
    ///     .follow_run("acme/run_0123456789abcdef")
    ///     // Events after the 41st: the ones a previous process had not handled yet.
    ///     .last_event_id("41")
    ///     .idle_timeout(Duration::from_secs(20))
    ///     .on_event(|event| println!("#{} {}", event.sequence, event.type_))
    ///     .send()
    ///     .await?;
    /// println!("ended {}", done.status);
    /// # Ok(()) }
    /// ```
    pub fn follow_run(&self, run_id: &str) -> FollowRun<'_> {
        FollowRun {
            client: self,
            run_id: run_id.to_owned(),
            last_event_id: None,
            idle_timeout: None,
            reconnect_for: None,
            max_reconnects: None,
            headers: Vec::new(),
            retry: None,
            timeout: None,
            on_event: |_| {},
            answer: None,
        }
    }

    /// Follows the run to its end, answering every interrupt it raises with the resume value
    /// `answer` gives (a `Value`, or an `Option<Value>`: `None` leaves that interrupt open,
    /// for a person), and calling `on_event` with every event (it may answer
    /// `ControlFlow::Break(())` to stop following: see [`EventFlow`]); answers the final
    /// snapshot. The same as `follow_run(run_id).answer_interrupts(answer).on_event(on_event)`,
    /// which also takes the stream's options; [`FollowRun::answer_interrupts_with`] takes an
    /// async answerer.
    ///
    /// The stream starts at the beginning of the run's log, so it reads interrupts raised
    /// before this call too. `answer` is called only for one that is still open: the
    /// interrupt's id (named by the `node.suspended` event after its `interrupt.requested`)
    /// must be among the open `interrupts` of the run's snapshot, read just before. An
    /// interrupt resolved since (earlier in the log, or by another client), or any in a
    /// finished run, is skipped without calling `answer`. An answer that took a while (an
    /// async answerer that was not ready at once) is checked again before it is sent. The
    /// resolve call names the node, not the interrupt (`resolveInterruptByRun` takes no
    /// interrupt id), so an interrupt resolved in the instant between that check and the
    /// call, and raised again at the same node, would take the answer; a resolution the host
    /// refuses (`409`, `410`, or `404 interrupt_not_found`) is skipped.
    ///
    /// An answer that cannot be delivered for a failure worth retrying (a host restarting)
    /// is kept, with the same idempotency key, and sent again while following rides out the
    /// failure, within [`FollowRun::reconnect_for`].
    pub async fn run_to_end<R, C>(
        &self,
        run_id: &str,
        answer: impl FnMut(&RaisedInterrupt) -> R + Send,
        on_event: impl FnMut(&RunEvent) -> C,
    ) -> Result<RunSnapshot, Error>
    where
        R: Into<Option<serde_json::Value>>,
        C: EventFlow,
    {
        self.follow_run(run_id)
            .answer_interrupts(answer)
            .on_event(on_event)
            .send()
            .await
    }
}

/// Follows a run to its end: made by [`Client::follow_run`]; set what you need, then
/// `send().await` answers the final snapshot.
///
/// It reads the run's event stream (`streamRunEvents`) and stops at the run's terminal
/// event (`run.completed`, `run.failed`, `run.cancelled`), which one `getRun` confirms. A
/// stream that ends before (a proxy closing a long stream) is opened again after the last
/// event read, so every event is seen once, in order, whatever the connection does. Events
/// the crate cannot decode are skipped. The stream options apply to each stream it opens;
/// headers and the retry policy to every call it makes.
#[must_use = "following does nothing until it is sent"]
pub struct FollowRun<'a, E = fn(&RunEvent)> {
    client: &'a Client,
    run_id: String,
    last_event_id: Option<String>,
    idle_timeout: Option<Duration>,
    reconnect_for: Option<Duration>,
    max_reconnects: Option<u32>,
    headers: Vec<(String, String)>,
    retry: Option<RetryPolicy>,
    /// `Some(None)`: no timeout.
    timeout: Option<Option<Duration>>,
    on_event: E,
    answer: Option<Answerer<'a>>,
}

/// Header values are left out, as the builders' own `Debug` leaves them out: a per-call
/// `Authorization` is a credential.
impl<E> fmt::Debug for FollowRun<'_, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let header_names: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("FollowRun")
            .field("run_id", &self.run_id)
            .field("last_event_id", &self.last_event_id)
            .field("idle_timeout", &self.idle_timeout)
            .field("reconnect_for", &self.reconnect_for)
            .field("max_reconnects", &self.max_reconnects)
            .field("header_names", &header_names)
            .field("retry", &self.retry)
            .field("timeout", &self.timeout)
            .field("answers_interrupts", &self.answer.is_some())
            .finish_non_exhaustive()
    }
}

impl<'a, E, C> FollowRun<'a, E>
where
    E: FnMut(&RunEvent) -> C,
    C: EventFlow,
{
    /// Starts after this event id (`Last-Event-ID`) instead of at the beginning of the
    /// run's log: a process that stored the last id it handled picks up from there. Later
    /// reconnections resume after the newest id read, as the event stream's do.
    pub fn last_event_id(mut self, id: impl Into<String>) -> Self {
        self.last_event_id = Some(id.into());
        self
    }

    /// How long the stream may stay silent (not even a keep-alive comment) before it counts
    /// as dropped and reconnects (default
    /// [`DEFAULT_STREAM_IDLE_TIMEOUT`](super::DEFAULT_STREAM_IDLE_TIMEOUT)).
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = Some(timeout);
        self
    }

    /// How long following goes on while everything fails (the stream's reconnections,
    /// opening it again, reading the run), from the first failure in a row (default
    /// [`DEFAULT_RECONNECT_FOR`](super::DEFAULT_RECONNECT_FOR), 120 s: a host restart or
    /// deploy is waited out). An event read, or a stream opened, starts the count over; past
    /// it `send()` answers the last error.
    pub fn reconnect_for(mut self, budget: Duration) -> Self {
        self.reconnect_for = Some(budget);
        self
    }

    /// How many failures in a row end the following with an error, besides
    /// [`FollowRun::reconnect_for`]'s time (no count by default): each stream's failed
    /// reconnections, and each time a stream that gave up could not be replaced.
    pub fn max_reconnects(mut self, attempts: u32) -> Self {
        self.max_reconnects = Some(attempts);
        self
    }

    /// Sends one more header with every call it makes (the stream, `getRun`, resolving
    /// interrupts), as the builders' `header(..)` does: an `Authorization` here replaces the
    /// client's API key for them.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The retry policy of every call it makes (opening a stream, `getRun`, resolving
    /// interrupts) instead of the client's; an open stream's reconnections, and opening a
    /// stream again after one gave up, are bounded by [`FollowRun::reconnect_for`].
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = Some(policy);
        self
    }

    /// The timeout of every call it makes (opening a stream, which also waits at most the
    /// idle timeout for the host's answer; `getRun`; resolving interrupts), per attempt,
    /// instead of the client's. Following itself has no total timeout: a run may wait on a
    /// person for days.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(Some(timeout));
        self
    }

    /// No timeout for the calls it makes (opening a stream still waits at most the idle
    /// timeout for the host's answer).
    pub fn no_timeout(mut self) -> Self {
        self.timeout = Some(None);
        self
    }

    /// Calls `on_event` with every event, in order. It answers `()`, or a [`ControlFlow`]:
    /// `ControlFlow::Break(())` stops following after this event, and `send()` answers the
    /// run's snapshot as it is then (its status need not be terminal).
    pub fn on_event<F, D>(self, on_event: F) -> FollowRun<'a, F>
    where
        F: FnMut(&RunEvent) -> D,
        D: EventFlow,
    {
        FollowRun {
            client: self.client,
            run_id: self.run_id,
            last_event_id: self.last_event_id,
            idle_timeout: self.idle_timeout,
            reconnect_for: self.reconnect_for,
            max_reconnects: self.max_reconnects,
            headers: self.headers,
            retry: self.retry,
            timeout: self.timeout,
            on_event,
            answer: self.answer,
        }
    }

    /// Answers every interrupt the run raises with the resume value `answer` gives: a
    /// `Value`, or an `Option<Value>` whose `None` leaves the interrupt open (for a person,
    /// or another service), and following goes on. See [`Client::run_to_end`]: it is
    /// called only for an interrupt the run's snapshot lists as open, so not for one
    /// resolved before (earlier in the log, or by another client), nor in a finished run.
    /// For an answer that needs to wait (ask a model, a queue), see
    /// [`FollowRun::answer_interrupts_with`].
    pub fn answer_interrupts<F, R>(self, mut answer: F) -> Self
    where
        F: FnMut(&RaisedInterrupt) -> R + Send + 'a,
        R: Into<Option<serde_json::Value>>,
    {
        self.answer_interrupts_with(move |raised| {
            let value = answer(&raised).into();
            async move { value }
        })
    }

    /// Answers every interrupt the run raises with what the future `answer` gives resolves
    /// to: `Some(resume value)`, or `None` to leave the interrupt open. Following waits for
    /// it (events after the interrupt are read once it is answered). As with
    /// [`FollowRun::answer_interrupts`], only open interrupts are offered; an answer that
    /// was not ready at once is sent only if its interrupt is still open when it comes.
    ///
    /// ```no_run
    /// # async fn demo(client: openwop_sdk::client::Client) -> Result<(), openwop_sdk::client::Error> {
    /// use serde_json::json;
    ///
    /// let done = client
    ///     .follow_run("acme/run_0123456789abcdef")
    ///     .answer_interrupts_with(|raised| async move {
    ///         // Approvals are answered here; anything else waits for a person.
    ///         (raised.payload.kind.to_string() == "approval").then(|| json!({"action": "accept"}))
    ///     })
    ///     .send()
    ///     .await?;
    /// # let _ = done; Ok(()) }
    /// ```
    pub fn answer_interrupts_with<F, Fut>(mut self, mut answer: F) -> Self
    where
        F: FnMut(RaisedInterrupt) -> Fut + Send + 'a,
        Fut: Future<Output = Option<serde_json::Value>> + Send + 'a,
    {
        self.answer = Some(std::sync::Mutex::new(Box::new(move |raised| {
            Box::pin(answer(raised))
        })));
        self
    }

    /// Follows the run until its status is terminal and answers its final snapshot.
    ///
    /// A terminal event ends the reading at once: nothing follows it, so the stream is not
    /// read (or reconnected) to its end, and one `getRun` confirms the status. A stream that
    /// ends before the run does is resumed after its last event; so is one that gave up
    /// reconnecting, or could not be opened or confirmed for a failure worth retrying, for as
    /// long as [`FollowRun::reconnect_for`] allows. An event whose `sequence` is at or below
    /// the last one read (a host that sent it again) is skipped.
    pub async fn send(mut self) -> Result<RunSnapshot, Error> {
        let options = super::stream::StreamOptions {
            reconnect_for: self.reconnect_for.unwrap_or(super::DEFAULT_RECONNECT_FOR),
            max_reconnects: self.max_reconnects,
            ..Default::default()
        };
        let mut place = Place {
            last_event_id: self.last_event_id.take(),
            last_sequence: None,
            progressed: false,
            failing_since: None,
            raised: None,
            answering: None,
            run_ended: false,
        };
        let mut failures = 0;
        loop {
            place.progressed = false;
            let outcome = self.follow_once(&mut place).await;
            if place.progressed {
                failures = 0;
            }
            match outcome {
                Ok(Some(snapshot)) => return Ok(snapshot),
                // Ended before the run did: resume after the last event, after a pause so
                // that a host or proxy that keeps closing at once is not asked in a tight
                // loop.
                Ok(None) => tokio::time::sleep(REOPEN_PAUSE).await,
                Err(Stop::Retry(e)) => {
                    failures += 1;
                    let since = *place.failing_since.get_or_insert_with(Instant::now);
                    if options.spent(failures, since) {
                        return Err(e);
                    }
                    let wait = super::stream::reconnect_wait(None, failures);
                    tokio::time::sleep(wait).await;
                }
                Err(Stop::Fail(e)) => return Err(e),
            }
        }
    }

    /// Reads one stream of the run's events, after `place`, to its end or the run's
    /// terminal event, then asks whether the run is finished. An answer not yet delivered,
    /// or an interrupt not yet offered to the answerer, is dealt with first.
    async fn follow_once(&mut self, place: &mut Place) -> Result<Option<RunSnapshot>, Stop> {
        // An interrupt whose `node.suspended` has not been read yet waits for it on the new
        // stream.
        self.settle(place, true).await?;
        let mut events = self
            .events_after(place.last_event_id.as_deref())
            .await
            .map_err(Stop::new)?;
        // The host answers again: the time of failures in a row starts over (their count
        // only once an event comes).
        place.failing_since = None;
        loop {
            // An `interrupt.requested` waits for the `node.suspended` right after it, which
            // names the interrupt; a host that sends none is not waited on for long.
            let item = if place.raised.is_some() {
                match tokio::time::timeout(SUSPENDED_WITHIN, events.next_event()).await {
                    Ok(item) => item,
                    Err(_) => {
                        self.settle(place, false).await?;
                        continue;
                    }
                }
            } else {
                events.next_event().await
            };
            let Some(item) = item else { break };
            let event = match item {
                Ok(event) => event,
                Err(Error::Decode { .. }) => continue,
                Err(e) => {
                    // The stream's failures in a row began before this one ended it.
                    if let Some(since) = events.failing_since() {
                        place.failing_since = Some(since);
                    }
                    return Err(Stop::new(e));
                }
            };
            place.last_event_id = event.id.clone().or(place.last_event_id.take());
            let event = event.data;
            if place
                .last_sequence
                .is_some_and(|last| event.sequence <= last)
            {
                continue;
            }
            place.last_sequence = Some(event.sequence);
            place.made_progress();
            if (self.on_event)(&event).stops() {
                // Asked to stop: the run as it is now, and no reopening after a failure.
                return self.snapshot().await.map(Some).map_err(Stop::Fail);
            }
            if ends_run(&event) {
                // Nothing is open once the run has ended.
                place.raised = None;
                break;
            }
            if self.answer.is_none() {
                continue;
            }
            match event.typed_payload() {
                Ok(RunEventPayload::NodeSuspended(suspended)) => {
                    if let Some(raised) = place
                        .raised
                        .as_mut()
                        .filter(|raised| raised.node_id == *suspended.node_id)
                    {
                        raised.interrupt_id = Some(suspended.interrupt_id.to_string());
                    }
                    self.settle(place, false).await?;
                }
                Ok(RunEventPayload::InterruptResolved(resolved)) => {
                    // Resolved before it was offered (by someone else): not open.
                    if place
                        .raised
                        .as_ref()
                        .is_some_and(|raised| raised.node_id == *resolved.node_id)
                    {
                        place.raised = None;
                    }
                    self.settle(place, false).await?;
                }
                _ => {
                    // Anything else after an `interrupt.requested`: the host named no id.
                    self.settle(place, false).await?;
                    if let Some(raised) = RaisedInterrupt::from_event(&event) {
                        place.raised = Some(raised);
                    }
                }
            }
        }
        self.finished().await.map_err(Stop::new)
    }

    /// Offers the interrupt waiting in `place` to the answerer, if it is still open, and
    /// delivers the answer waiting there. A failure worth retrying keeps both where they are
    /// (the answer with its idempotency key), for the next try within the reconnection
    /// budget. With `named_only`, an interrupt whose id is not known yet stays waiting.
    async fn settle(&mut self, place: &mut Place, named_only: bool) -> Result<(), Stop> {
        let offer = place
            .raised
            .take_if(|raised| !named_only || raised.interrupt_id.is_some());
        if let Some(raised) = offer {
            let still_open = match self.is_open(place, &raised).await {
                Ok(open) => open,
                Err(e) => {
                    place.raised = Some(raised);
                    return Err(Stop::new(e));
                }
            };
            if still_open {
                if let Some(answer) = self.answer.as_mut() {
                    let answer = answer.get_mut().unwrap_or_else(|e| e.into_inner());
                    let mut answering = answer(raised.clone());
                    // An answer that was not ready at once may come after the interrupt
                    // was resolved some other way: it is checked again before it is sent.
                    let mut waited = false;
                    let value = std::future::poll_fn(|cx| {
                        let poll = answering.as_mut().poll(cx);
                        waited |= poll.is_pending();
                        poll
                    })
                    .await;
                    // `None`: left open, for someone else to answer.
                    if let Some(value) = value {
                        place.answering = Some(Answering {
                            raised,
                            value,
                            key: super::retry::mint_idempotency_key(),
                            check: waited,
                        });
                    }
                }
            }
        }
        let Some(answering) = place.answering.as_mut() else {
            return Ok(());
        };
        if answering.check {
            let raised = answering.raised.clone();
            match self.is_open(place, &raised).await {
                Ok(true) => {}
                Ok(false) => {
                    place.answering = None;
                    return Ok(());
                }
                Err(e) => return Err(Stop::new(e)),
            }
        }
        let Some(answering) = place.answering.as_mut() else {
            return Ok(());
        };
        // Checked once: a retry of the same answer, with the same key, is not held back.
        answering.check = false;
        match self.resolve(answering).await {
            Ok(()) => {
                place.answering = None;
                place.made_progress();
                Ok(())
            }
            // Resolved already, expired or cancelled, or no longer open at that node: the
            // log goes on without us.
            Err(Error::Api {
                status: 409 | 410, ..
            }) => {
                place.answering = None;
                Ok(())
            }
            Err(e @ Error::Api { status: 404, .. })
                if e.code_text().as_deref() == Some("interrupt_not_found") =>
            {
                place.answering = None;
                Ok(())
            }
            // Kept, with its key: following again delivers it (the host answers a repeat
            // of one it acted on with its first answer).
            Err(e) => Err(Stop::new(e)),
        }
    }

    /// Whether the interrupt is open now: the run's snapshot lists its id (or, when the host
    /// named none, an open interrupt at its node). Nothing is open in a finished run, and
    /// once one snapshot has said so, no other is asked for.
    async fn is_open(&self, place: &mut Place, raised: &RaisedInterrupt) -> Result<bool, Error> {
        if place.run_ended {
            return Ok(false);
        }
        let snapshot = self.snapshot().await?;
        if snapshot.status.is_terminal() {
            place.run_ended = true;
            return Ok(false);
        }
        Ok(snapshot.interrupts.iter().any(|open| {
            match raised.interrupt_id.as_deref() {
                Some(id) => open.interrupt_id.as_str() == id,
                None => open.node_id.as_str() == raised.node_id,
            }
        }))
    }

    /// A stream of the run's events, resumed after `last` when given, with the options.
    async fn events_after(
        &self,
        last: Option<&str>,
    ) -> Result<super::EventStream<RunEvent>, Error> {
        let mut open = self.client.stream_run_events(&self.run_id);
        if let Some(id) = last {
            open = open.last_event_id(id);
        }
        if let Some(timeout) = self.idle_timeout {
            open = open.idle_timeout(timeout);
        }
        if let Some(budget) = self.reconnect_for {
            open = open.reconnect_for(budget);
        }
        if let Some(attempts) = self.max_reconnects {
            open = open.max_reconnects(attempts);
        }
        if let Some(policy) = &self.retry {
            open = open.retry(policy.clone());
        }
        match self.timeout {
            Some(Some(timeout)) => open = open.timeout(timeout),
            Some(None) => open = open.no_timeout(),
            None => {}
        }
        for (name, value) in &self.headers {
            open = open.header(name, value);
        }
        open.send().await
    }

    /// The snapshot once the run is finished; `None` while it is not. A host ends the
    /// stream after the terminal event, but a proxy may close a long stream early, and an
    /// ended stream alone does not make a run finished.
    async fn finished(&self) -> Result<Option<RunSnapshot>, Error> {
        let snapshot = self.snapshot().await?;
        Ok(snapshot.status.is_terminal().then_some(snapshot))
    }

    /// The run's snapshot as it is now, with the headers and retry policy.
    async fn snapshot(&self) -> Result<RunSnapshot, Error> {
        let mut read = self.client.get_run(&self.run_id);
        if let Some(policy) = &self.retry {
            read = read.retry(policy.clone());
        }
        match self.timeout {
            Some(Some(timeout)) => read = read.timeout(timeout),
            Some(None) => read = read.no_timeout(),
            None => {}
        }
        for (name, value) in &self.headers {
            read = read.header(name, value);
        }
        Ok(read.send().await?.into_inner())
    }

    /// Delivers an answer: resolves the interrupt at its node with its value and its
    /// idempotency key, with the headers and retry policy.
    async fn resolve(&self, answering: &Answering) -> Result<(), Error> {
        let mut resolve = self
            .client
            .resolve_interrupt_by_run(&self.run_id, &answering.raised.node_id)
            .resume_value(&answering.value)
            .idempotency_key(answering.key.clone());
        if let Some(policy) = &self.retry {
            resolve = resolve.retry(policy.clone());
        }
        match self.timeout {
            Some(Some(timeout)) => resolve = resolve.timeout(timeout),
            Some(None) => resolve = resolve.no_timeout(),
            None => {}
        }
        for (name, value) in &self.headers {
            resolve = resolve.header(name, value);
        }
        resolve.send().await.map(|_| ())
    }
}

/// Where following has got to.
struct Place {
    last_event_id: Option<String>,
    last_sequence: Option<u64>,
    /// An event was read since the last failure.
    progressed: bool,
    /// When the current failures in a row began.
    failing_since: Option<Instant>,
    /// An interrupt read but not yet offered to the answerer (its `node.suspended`, which
    /// names it, may still be coming; or asking whether it is open failed).
    raised: Option<RaisedInterrupt>,
    /// An answer given but not yet delivered.
    answering: Option<Answering>,
    /// A snapshot said the run is finished: no interrupt is open.
    run_ended: bool,
}

/// An answer on its way: the interrupt, the value, and the idempotency key every attempt
/// to deliver it sends.
struct Answering {
    raised: RaisedInterrupt,
    value: serde_json::Value,
    key: String,
    /// Whether it must be found still open before it is sent (the answerer took a while).
    check: bool,
}

impl Place {
    fn made_progress(&mut self) {
        self.progressed = true;
        self.failing_since = None;
    }
}

/// Why one stream's following stopped short of the run's end.
enum Stop {
    /// A failure worth following again after (within the reconnection budget).
    Retry(Error),
    /// The answer.
    Fail(Error),
}

impl Stop {
    fn new(e: Error) -> Self {
        if e.is_retryable() {
            Stop::Retry(e)
        } else {
            Stop::Fail(e)
        }
    }
}

/// Whether the event ends its run (a terminal status follows; the log holds nothing after).
fn ends_run(event: &RunEvent) -> bool {
    super::stream::ends_run_type(event.type_.as_str())
}

/// How long an `interrupt.requested` waits for the `node.suspended` that names it (the
/// host appends both together) before it is offered without an id.
const SUSPENDED_WITHIN: Duration = Duration::from_secs(2);

/// The pause before a run's stream that ended early is opened again.
const REOPEN_PAUSE: std::time::Duration = std::time::Duration::from_secs(1);
