//! Moves runs through their nodes. Every step is one guarded store transaction, so a
//! cancel that lands between two steps wins and the executor simply stops; progress (the
//! current node, an absolute wait deadline) is stored, so a restarted host resumes where
//! the killed one stopped. A step the store fails (a dropped connection, a locked
//! database) left nothing behind and is retried with backoff: store errors never fail a
//! run, only the workflow's own outcome or a definition the engine cannot execute do.

use super::call_state::{self, CallStep};
use super::definition::{self, Instr, InterruptKind};
use super::events;
use super::executor::{
    Engine, EngineError, Suspended, SuspendedAt, failure, payload_error, with_node_result,
};
use super::plan::{Batch, step_outcome, step_span};
use super::retry::Backoff;
use crate::clock::now_ms;
use crate::status::{DRIVABLE, Lifecycle, RunStatus, TERMINAL};
use crate::store::{
    Advanced, Guard, NewEvent, OnResolve, PlanFirst, RunPatch, RunRecord, StoreError, Topic,
};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What a step leaves for the next one.
#[allow(
    clippy::large_enum_variant,
    reason = "`Continue` is the common case, moved once per step"
)]
enum Step {
    /// Go on from the run as this commit left it.
    Continue(RunRecord),
    Stop,
}

/// What planning a run's first commit inside its creation decided, for after the commit.
struct FirstOutcome {
    more: bool,
    suspended: Option<SuspendedAt>,
}

/// Handed back by [`Engine::first_step`]: whether (and how) the planned first commit
/// went, read by [`Engine::start_created`] once the creation is committed.
pub struct FirstStep {
    outcome: Arc<Mutex<Option<FirstOutcome>>>,
}

impl Engine {
    /// Drives a run in the background. If a task already drives it, that task is asked
    /// to look at the run once more before it stops, so a change that lands while the
    /// task is finishing (a resolve right after a suspend) is never dropped.
    pub fn start(self: &Arc<Self>, run_id: &str) {
        self.start_from(run_id, None);
    }

    /// [`Engine::start`] from the run as its last commit left it (`known`), so the first
    /// step does not read it again; the step's guard fences any change made meanwhile.
    fn start_from(self: &Arc<Self>, run_id: &str, mut known: Option<RunRecord>) {
        {
            let Ok(mut active) = self.active.lock() else {
                return;
            };
            if let Some(again) = active.get_mut(run_id) {
                *again = true;
                return;
            }
            active.insert(run_id.to_owned(), false);
        }
        let engine = self.clone();
        let run_id = run_id.to_owned();
        tokio::spawn(async move {
            loop {
                let held = engine.drive_leased(&run_id, known.take()).await;
                {
                    let Ok(mut active) = engine.active.lock() else {
                        return;
                    };
                    match active.get_mut(&run_id) {
                        Some(again) if *again => {
                            *again = false;
                            continue;
                        }
                        _ => {}
                    }
                }
                // A change made on another replica while this one held the lease could
                // not be picked up there; after letting go, look once more.
                if held
                    && engine.store.shared()
                    && !*engine.shutdown.borrow()
                    && engine.needs_driver(&run_id).await
                {
                    continue;
                }
                if let Ok(mut active) = engine.active.lock() {
                    active.remove(&run_id);
                }
                return;
            }
        });
    }

    async fn needs_driver(&self, run_id: &str) -> bool {
        matches!(self.store.get_run(run_id).await, Ok(Some(run)) if run.status.needs_driver())
    }

    /// Drives a run while holding its lease, renewing it; false when another replica
    /// holds it (that one drives the run).
    async fn drive_leased(self: &Arc<Self>, run_id: &str, known: Option<RunRecord>) -> bool {
        let ttl = i64::try_from(self.lease_ttl.as_millis()).unwrap_or(i64::MAX);
        match self.store.acquire_lease(run_id, &self.replica, ttl).await {
            Ok(true) => {}
            Ok(false) => return false,
            Err(e) => {
                tracing::warn!(run_id, error = %e, "cannot take the run's lease; the sweep will retry");
                return false;
            }
        }
        if !self.store.shared() {
            self.drive(run_id, known).await;
            return true;
        }
        let renew = async {
            loop {
                tokio::time::sleep(self.lease_ttl / 3).await;
                match self.store.acquire_lease(run_id, &self.replica, ttl).await {
                    Ok(true) => {}
                    Ok(false) => {
                        tracing::warn!(
                            run_id,
                            "lost the run's lease to another replica; stopping here"
                        );
                        return;
                    }
                    // Writes stay fenced by the lease, so driving on is safe; the next
                    // renewal may succeed before the lease runs out.
                    Err(e) => tracing::warn!(run_id, error = %e, "cannot renew the run's lease"),
                }
            }
        };
        tokio::select! {
            _ = self.drive(run_id, known) => {}
            _ = renew => {}
        }
        if let Err(e) = self.store.release_lease(run_id, &self.replica).await {
            tracing::warn!(run_id, error = %e, "cannot release the run's lease; it expires by itself");
        }
        true
    }

    /// On a shared store, picks up runs no live replica holds (their replica died)
    /// every half lease, until shutdown.
    pub fn spawn_sweeper(self: &Arc<Self>) {
        if !self.store.shared() {
            return;
        }
        let engine = self.clone();
        let mut shutdown = self.shutdown.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    _ = tokio::time::sleep(engine.lease_ttl / 2) => {}
                    _ = shutdown.changed() => return,
                }
                match engine.store.unleased_runs(&DRIVABLE).await {
                    Ok(ids) => {
                        for id in ids {
                            engine.start(&id);
                        }
                    }
                    Err(e) => tracing::warn!(error = %e, "cannot look for runs without a driver"),
                }
            }
        });
    }

    /// Picks up every unfinished run after a start: pending and running runs go on (a
    /// wait keeps its stored deadline), suspended and paused runs stay as they are.
    pub async fn resume_unfinished(self: &Arc<Self>) -> Result<usize, EngineError> {
        let runs = self.store.unfinished_runs().await?;
        let mut resumed = 0;
        for run in runs {
            if run.status.needs_driver() {
                self.start(&run.run_id);
                resumed += 1;
            }
        }
        Ok(resumed)
    }

    /// Steps the run until it stops, suspends or ends. A step is one guarded store
    /// transaction, so a step the store failed left nothing behind, and the next attempt
    /// re-reads the run: a step whose commit did land (only its answer was lost) is
    /// seen as done and not repeated. Retries go on until shutdown; on a shared store the
    /// lease renewal in `drive_leased` ends this when another replica takes the run over,
    /// and every write is fenced by the lease besides.
    async fn drive(self: &Arc<Self>, run_id: &str, mut known: Option<RunRecord>) {
        let mut backoff = Backoff::default();
        // `known`: the run as the last commit left it (this driver's, or the one that
        // started it): the next step starts from it instead of reading it again (the
        // commit's guard and lease fence any change made meanwhile). After a failure it
        // is read afresh.
        loop {
            if *self.shutdown.borrow() {
                return;
            }
            let error = match self.step(run_id, known.take()).await {
                Ok(Step::Continue(run)) => {
                    known = Some(run);
                    backoff.reset();
                    continue;
                }
                Ok(Step::Stop) => return,
                Err(EngineError::Store(e)) => e,
                Err(
                    definition
                    @ (EngineError::MissingWorkflow { .. } | EngineError::Payload { .. }),
                ) => match self.fail_by_host(run_id, &definition).await {
                    Ok(()) => return,
                    Err(e) => e,
                },
            };
            match error {
                // The run changed under the engine (a cancel, a takeover, a deletion):
                // whoever changed it decides what comes next.
                StoreError::Guard { .. } | StoreError::LeaseLost | StoreError::RunNotFound(_) => {
                    return;
                }
                StoreError::Database(_) | StoreError::Unavailable(_) => {
                    let delay = backoff.next_delay();
                    tracing::warn!(
                        run_id,
                        error = %error,
                        retry_in_ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
                        "the store failed during a step; retrying it from the run as stored"
                    );
                    if !self.pause(delay).await {
                        return;
                    }
                }
                // Answers to interrupt and idempotency calls the executor never makes.
                StoreError::NoOpenInterrupt
                | StoreError::InterruptAlreadyResolved
                | StoreError::IdempotencyMismatch
                | StoreError::DataDirInUse(_) => {
                    tracing::error!(run_id, error = %error, "unexpected store answer to an engine step; leaving the run as it is");
                    return;
                }
            }
        }
    }

    /// Sleeps before a retry; false when the host shuts down meanwhile.
    async fn pause(&self, delay: Duration) -> bool {
        let mut shutdown = self.shutdown.clone();
        if *shutdown.borrow() {
            return false;
        }
        tokio::select! {
            _ = tokio::time::sleep(delay) => true,
            _ = shutdown.changed() => false,
        }
    }

    /// Fails a run the engine cannot execute, as `internal_error`; a store error here is
    /// returned so the caller retries like any other step.
    async fn fail_by_host(&self, run_id: &str, e: &EngineError) -> Result<(), StoreError> {
        tracing::error!(run_id, error = %e, "the engine cannot execute the run; failing it");
        let Some(run) = self.store.get_run(run_id).await? else {
            return Ok(());
        };
        let (patch, mut events) = failure(&run, "internal_error", &e.to_string(), None);
        // A run that never got to start still starts before it fails, so its log reads
        // as every other run's does.
        if run.status == RunStatus::Pending
            && let Ok(started) = events::run_started(&run)
        {
            events.insert(0, started);
        }
        let guard = Guard::StatusNotIn(&TERMINAL);
        self.advance(run_id, guard, patch, events).await?;
        Ok(())
    }

    /// Takes the run as far as it goes without waiting, and commits that once: a run that
    /// needs no wait, input or outside call completes in one transaction.
    async fn step(&self, run_id: &str, known: Option<RunRecord>) -> Result<Step, EngineError> {
        let run = match known {
            Some(run) => run,
            None => {
                let Some(run) = self.store.get_run(run_id).await? else {
                    return Ok(Step::Stop);
                };
                self.confirm_suspend(&run).await?;
                run
            }
        };
        if !matches!(run.status, RunStatus::Pending | RunStatus::Running) {
            return Ok(Step::Stop);
        }
        let wf = self.workflow_of(&run)?;
        let waiting = run.status == RunStatus::Running && run.wait_until.is_some();
        let mut batch = Batch::new(run);
        if waiting {
            // A wait in progress (its deadline stored, so a restart keeps it): wait it
            // out, then its completion starts the batch.
            let node_id = usize::try_from(batch.run.node_index)
                .ok()
                .and_then(|i| wf.program.get(i))
                .map(|n| n.id().to_owned())
                .unwrap_or_default();
            match self.wait_out(&batch.run, &node_id).await? {
                Some(done) => batch.apply(done.0, done.1),
                None => return Ok(Step::Stop),
            }
        }
        let mut suspended = None;
        // A calling node with its call under way: the outside call comes first (outside
        // any transaction), and its outcome starts the batch.
        let mut planning = true;
        let mut more_after_call = false;
        let current = usize::try_from(batch.run.node_index)
            .ok()
            .and_then(|i| wf.program.get(i));
        if batch.run.status == RunStatus::Running
            && !waiting
            && let Some(Instr::Node(node)) = current
            && call_state::call_state(&batch.run.state, definition::node_id(node)).is_some()
        {
            let span = step_span(&wf, &batch.run);
            let called =
                tracing::Instrument::instrument(self.call_out(&batch.run, node), span.clone())
                    .await?;
            if let CallStep::Done(patch, _) | CallStep::End(patch, _) = &called {
                step_outcome(&span, patch);
            }
            match called {
                CallStep::Done(patch, events) => batch.apply(patch, events),
                CallStep::Checkpoint(patch, events) => {
                    batch.apply(patch, events);
                    planning = false;
                    more_after_call = true;
                }
                CallStep::End(patch, events) => {
                    batch.apply(patch, events);
                    planning = false;
                }
                CallStep::Suspend(patch, events, at) => {
                    batch.apply(patch, events);
                    suspended = Some(at);
                    planning = false;
                }
                CallStep::Stopped => return Ok(Step::Stop),
            }
        }
        let more = if !planning {
            more_after_call
        } else {
            self.plan_batch(&wf, &mut batch, &mut suspended)?
        };
        let Batch {
            guard,
            patch,
            events,
            ..
        } = batch;
        let advanced = match self.advance(run_id, guard, patch, events).await {
            Ok(advanced) => advanced,
            Err(e) => {
                if let Some(at) = &suspended
                    && matches!(e, StoreError::Database(_) | StoreError::Unavailable(_))
                    && let Ok(mut pending) = self.unconfirmed_suspends.lock()
                {
                    pending.insert(run_id.to_owned(), at.interrupt_id.clone());
                }
                return Err(e.into());
            }
        };
        if let Some(at) = suspended {
            if let Some(hook) = self.on_suspend.get() {
                hook(Suspended {
                    run: advanced.run,
                    node_id: at.node_id,
                    interrupt_id: at.interrupt_id,
                    kind: at.kind,
                });
            }
            return Ok(Step::Stop);
        }
        Ok(if more {
            Step::Continue(advanced.run)
        } else {
            Step::Stop
        })
    }

    /// The first commit of a run, planned inside its creation's transaction from the run
    /// as inserted (what [`Engine::step`] would commit first), and what to do once the
    /// creation is committed. A workflow that needs no wait, input or outside call is
    /// created finished: one transaction, and no driver task at all.
    pub fn first_step(self: &Arc<Self>) -> (PlanFirst, FirstStep) {
        let outcome: Arc<Mutex<Option<FirstOutcome>>> = Arc::default();
        let engine = self.clone();
        let slot = outcome.clone();
        let plan: PlanFirst = Box::new(move |run: &RunRecord| {
            if run.status != RunStatus::Pending {
                return None;
            }
            // A workflow the engine cannot execute is failed by the driver, as before.
            let wf = engine.workflow_of(run).ok()?;
            let mut batch = Batch::new(run.clone());
            let mut suspended = None;
            let more = engine
                .plan_batch(&wf, &mut batch, &mut suspended)
                .map_err(|e| tracing::debug!(run_id = %run.run_id, error = %e, "first step left to the driver"))
                .ok()?;
            if let Ok(mut slot) = slot.lock() {
                *slot = Some(FirstOutcome { more, suspended });
            }
            Some((batch.patch, batch.events))
        });
        (plan, FirstStep { outcome })
    }

    /// After a creation that carried [`Engine::first_step`] is committed (not on a
    /// replay): drives the run on from `run` (as committed) if it has more to do, calls
    /// the suspend hook if it suspended, or starts it as any run if nothing was planned.
    pub fn start_created(self: &Arc<Self>, run: &RunRecord, first: FirstStep) {
        let outcome = first.outcome.lock().ok().and_then(|mut o| o.take());
        match outcome {
            None => self.start(&run.run_id),
            Some(FirstOutcome {
                suspended: Some(at),
                ..
            }) => {
                if let Some(hook) = self.on_suspend.get() {
                    hook(Suspended {
                        run: run.clone(),
                        node_id: at.node_id,
                        interrupt_id: at.interrupt_id,
                        kind: at.kind,
                    });
                }
            }
            Some(FirstOutcome { more: true, .. }) => {
                self.start_from(&run.run_id, Some(run.clone()))
            }
            Some(FirstOutcome { more: false, .. }) => {}
        }
    }

    /// After a suspending write whose answer was lost: if the interrupt it opened is the
    /// run's open one, the write landed and the suspend hook runs now, once. A store error
    /// here keeps the question for the next attempt.
    async fn confirm_suspend(&self, run: &RunRecord) -> Result<(), StoreError> {
        let expected = match self.unconfirmed_suspends.lock() {
            Ok(pending) => pending.get(&run.run_id).cloned(),
            Err(_) => None,
        };
        let Some(expected) = expected else {
            return Ok(());
        };
        let open = self.store.open_interrupt(&run.run_id).await?;
        if let Ok(mut pending) = self.unconfirmed_suspends.lock() {
            pending.remove(&run.run_id);
        }
        if let Some(open) = open.filter(|i| i.interrupt_id == expected)
            && let Some(hook) = self.on_suspend.get()
        {
            hook(Suspended {
                run: run.clone(),
                node_id: open.node_id,
                interrupt_id: open.interrupt_id,
                kind: open.kind,
            });
        }
        Ok(())
    }

    /// Waits until the run's stored deadline. `None` when the run stopped being one to
    /// drive meanwhile (a cancel) or the host stops; else the wait's completion, to start
    /// the next commit with.
    async fn wait_out(
        &self,
        run: &RunRecord,
        node_id: &str,
    ) -> Result<Option<(RunPatch, Vec<NewEvent>)>, EngineError> {
        let Some(deadline) = run.wait_until else {
            return Ok(None);
        };
        let mut wakes = self.store.subscribe(&[Topic::Run(run.run_id.clone())]);
        let mut shutdown = self.shutdown.clone();
        loop {
            let left = deadline - now_ms();
            if left <= 0 {
                break;
            }
            tokio::select! {
                _ = tokio::time::sleep(std::time::Duration::from_millis(left as u64)) => break,
                _ = shutdown.changed() => return Ok(None),
                _ = wakes.recv() => {
                    // Someone else changed this run (a cancel), or everything must be
                    // re-read: look before sleeping on.
                    let current = self.store.get_run(&run.run_id).await?;
                    if current.is_none_or(|r| r.status != RunStatus::Running) {
                        return Ok(None);
                    }
                }
            }
        }
        let completed =
            events::node_completed(node_id, None).map_err(payload_error(&run.run_id))?;
        let patch = RunPatch {
            node_index: Some(run.node_index + 1),
            wait_until: Some(None),
            ..Default::default()
        };
        Ok(Some((patch, vec![completed])))
    }

    /// The change that resolving an interrupt makes, built inside the store's transaction.
    pub fn on_resolve(&self) -> OnResolve {
        Box::new(move |interrupt, run| {
            let resume = interrupt.resume_value.clone().unwrap_or(Value::Null);
            // The interrupt's ids and kind were checked when it was raised; a stored one
            // the model refuses still resolves (the resolve is the caller's), and the
            // host says so in its log.
            let resolved = events::interrupt_resolved(interrupt, &resume).unwrap_or_else(|e| {
                tracing::error!(run_id = %run.run_id, error = %e, "interrupt.resolved does not fit its model");
                NewEvent {
                    event_type: "interrupt.resolved".into(),
                    node_id: Some(interrupt.node_id.clone()),
                    payload: json!({"nodeId": interrupt.node_id, "interruptId": interrupt.interrupt_id}),
                }
            });
            let mut events = vec![resolved];
            let declined = interrupt.kind == definition::kind_str(InterruptKind::Credential)
                && resume.get("outcome").and_then(Value::as_str) == Some("declined");
            if declined {
                let (patch, more) = failure(
                    run,
                    "connector_auth_declined",
                    "the credential request was declined",
                    Some(&interrupt.node_id),
                );
                events.extend(more);
                return (patch, events);
            }
            // A remote peer's question: the answer goes back to it, and the run stays on
            // the calling node until the remote side finishes.
            if let Some(patch) = call_state::on_answer(run, &interrupt.node_id, &resume) {
                return (patch, events);
            }
            if let Ok(completed) = events::node_completed(&interrupt.node_id, None) {
                events.push(completed);
            }
            let patch = RunPatch {
                status: Some(RunStatus::Running),
                node_index: Some(run.node_index + 1),
                state: Some(with_node_result(&run.state, &interrupt.node_id, resume)),
                ..Default::default()
            };
            (patch, events)
        })
    }

    /// After a resolve or a create, whatever the run needs next happens in the background.
    pub fn after_change(self: &Arc<Self>, advanced: &Advanced) {
        if matches!(advanced.run.status, RunStatus::Pending | RunStatus::Running) {
            self.start_from(&advanced.run.run_id, Some(advanced.run.clone()));
        } else if advanced.run.status.is_terminal() {
            // Ended here (a cancel, a declined credential) while a remote task it called
            // was still open: the remote side is told.
            self.cancel_remote_calls(&advanced.run);
        }
    }
}
