//! Moves runs through their nodes. Every step is one guarded store transaction, so a
//! cancel that lands between two steps wins and the executor simply stops; progress (the
//! current node, an absolute wait deadline) is stored, so a restarted host resumes where
//! the killed one stopped. A step the store fails (a dropped connection, a locked
//! database) left nothing behind and is retried with backoff: store errors never fail a
//! run, only the workflow's own outcome or a definition the engine cannot execute do.

use super::artifacts;
use super::calls::{self, CallStep};
use super::definition::{self, Instr, InterruptKind, Node};
use super::events;
use super::registry::{Registry, Workflow};
use super::retry::Backoff;
use super::status;
use super::template;
use crate::clock::now_ms;
use crate::status::{DRIVABLE, Lifecycle, RunStatus, TERMINAL};
use crate::store::{
    Advanced, Guard, NewEvent, NewInterrupt, OnResolve, PlanFirst, RunPatch, RunRecord, RunStore,
    StoreError, Topic,
};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// The engine layer's error type. Which variant an error is decides what happens to the
/// run: a store error is never the workflow's fault, so the step is retried; a definition
/// the engine cannot execute fails the run, since retrying would fail the same way.
#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The store did not take or answer a call (a dropped connection, a locked database,
    /// a pool timeout), or refused it because the run changed under the engine (a guard,
    /// a lost lease). The run is left as it was.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A definition error: the run's workflow is gone from this host.
    #[error("run `{run_id}` names workflow `{workflow_id}`, which this host no longer has")]
    MissingWorkflow { run_id: String, workflow_id: String },
    /// A value the run would put into an event is not one its payload model accepts (a
    /// stored run from before a corpus change, or a host bug): retrying would fail alike.
    #[error("run `{run_id}`: an event payload cannot be built: {message}")]
    Payload { run_id: String, message: String },
}

/// What a step leaves for the next one.
enum Step {
    /// Go on from the run as this commit left it.
    Continue(RunRecord),
    Stop,
}

/// How many nodes one commit may cover: a long chain of instant nodes still shows
/// progress, and a transaction stays small.
const MAX_NODES_PER_COMMIT: usize = 64;

/// What one node does to the run, decided in memory.
enum Planned {
    /// Applied, and the next node may follow in the same commit.
    Next(RunPatch, Vec<NewEvent>),
    /// Applied, then committed; the run has ended (completed or failed).
    End(RunPatch, Vec<NewEvent>),
    /// Applied, then committed; the run waits on a deadline it now stores.
    Wait(RunPatch, Vec<NewEvent>),
    /// Applied, then committed; the run is suspended on this interrupt.
    Suspend(RunPatch, Vec<NewEvent>, SuspendedAt),
    /// Applied, then committed; the next step makes the node's outside call.
    Call(RunPatch, Vec<NewEvent>),
}

/// The interrupt a suspending commit opens, for the suspend hook.
pub(super) struct SuspendedAt {
    pub(super) node_id: String,
    pub(super) interrupt_id: String,
    pub(super) kind: String,
}

/// Steps decided in memory, committed together: the run as it will stand, the one
/// patch that gets it there from the stored run, and every event in order. The guard is
/// the stored status the batch started from, so a cancel committed meanwhile wins.
struct Batch {
    run: RunRecord,
    guard: Guard,
    patch: RunPatch,
    events: Vec<NewEvent>,
    nodes: usize,
}

impl Batch {
    fn new(run: RunRecord) -> Batch {
        let guard = match run.status {
            RunStatus::Pending => Guard::StatusIn(&[RunStatus::Pending]),
            _ => running(),
        };
        Batch {
            run,
            guard,
            patch: RunPatch::default(),
            events: Vec::new(),
            nodes: 0,
        }
    }

    /// Adds one step: later fields win, events append, and the in-memory run follows.
    fn apply(&mut self, step: RunPatch, events: Vec<NewEvent>) {
        let run = &mut self.run;
        if let Some(s) = step.status {
            run.status = s;
            self.patch.status = Some(s);
        }
        if let Some(n) = step.node_index {
            run.node_index = n;
            self.patch.node_index = Some(n);
        }
        if let Some(w) = step.wait_until {
            run.wait_until = w;
            self.patch.wait_until = Some(w);
        }
        if let Some(state) = step.state {
            run.state = state.clone();
            self.patch.state = Some(state);
        }
        if let Some(outputs) = step.outputs {
            run.outputs = Some(outputs.clone());
            self.patch.outputs = Some(outputs);
        }
        if let Some(error) = step.error {
            run.error = Some(error.clone());
            self.patch.error = Some(error);
        }
        if step.open_interrupt.is_some() {
            self.patch.open_interrupt = step.open_interrupt;
        }
        self.patch.close_interrupts |= step.close_interrupts;
        self.events.extend(events);
    }
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

/// How long a replica's claim on a run lasts without renewal, unless configured.
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(10);

/// A run that has just suspended on an interrupt.
#[derive(Debug, Clone)]
pub struct Suspended {
    pub run: RunRecord,
    pub node_id: String,
    pub interrupt_id: String,
    pub kind: String,
}

/// Called after each suspension is committed (the interrupt notice goes out from there).
pub type SuspendHook = Arc<dyn Fn(Suspended) + Send + Sync>;

/// The executor and the workflows it knows.
pub struct Engine {
    on_suspend: std::sync::OnceLock<SuspendHook>,
    store: Arc<dyn RunStore>,
    registry: Registry,
    /// Runs with a driving task, and whether it must look once more before stopping.
    active: Mutex<HashMap<String, bool>>,
    /// Interrupts whose suspending write failed with a store error, by run: the commit
    /// may have landed with only its answer lost, and then the suspend hook is still owed.
    unconfirmed_suspends: Mutex<HashMap<String, String>>,
    shutdown: watch::Receiver<bool>,
    /// This process's name on run leases.
    replica: String,
    lease_ttl: Duration,
    /// The remote peers calling nodes reach (none unless configured).
    peers: std::sync::OnceLock<crate::peers::Peers>,
}

fn running() -> Guard {
    Guard::StatusIn(&[RunStatus::Running])
}

/// A payload the models refused, as the engine's error for the run.
fn payload_error(run_id: &str) -> impl FnOnce(String) -> EngineError + '_ {
    move |message| EngineError::Payload {
        run_id: run_id.to_owned(),
        message,
    }
}

/// `run.failed` plus the patch that ends the run.
pub(super) fn failure(
    run: &RunRecord,
    code: &str,
    message: &str,
    node_id: Option<&str>,
) -> (RunPatch, Vec<NewEvent>) {
    let error = events::error_object(code, message);
    // The snapshot's `error` is the same {code, message} the event carries.
    let stored = serde_json::to_value(&error).unwrap_or_else(|_| json!({}));
    let patch = RunPatch {
        status: Some(RunStatus::Failed),
        error: Some(stored),
        wait_until: Some(None),
        close_interrupts: true,
        ..Default::default()
    };
    (patch, vec![events::run_failed(run, error, node_id)])
}

/// The exported span of one step of `run` at its current node (none without a collector,
/// or past the last node): a child of the trace the run was created in.
fn step_span(wf: &Workflow, run: &RunRecord) -> tracing::Span {
    if !crate::observe::otel::on() {
        return tracing::Span::none();
    }
    let Some(instr) = usize::try_from(run.node_index)
        .ok()
        .and_then(|i| wf.program.get(i))
    else {
        return tracing::Span::none();
    };
    let kind = match instr {
        Instr::LoopStart { .. } | Instr::LoopEnd { .. } => "core.repeat",
        Instr::Node(node) => match node {
            Node::Transform { .. } => "core.transform",
            Node::Wait { .. } => "core.wait",
            Node::Fail { .. } => "core.fail",
            Node::Interrupt { .. } => "core.interrupt",
            Node::A2a { .. } => "core.a2a",
            Node::Mcp { .. } => "core.mcp",
            Node::McpClient { .. } => "core.mcp-client",
            Node::Http { .. } => "core.http",
            Node::Repeat { .. } => "core.repeat",
        },
    };
    let trace = run
        .state
        .get(crate::peers::TRACE_STATE_KEY)
        .and_then(Value::as_str);
    crate::observe::otel::step_span(&run.run_id, &run.workflow_id, instr.id(), kind, trace)
}

/// Marks a step span failed when the step failed the run.
fn step_outcome(span: &tracing::Span, patch: &RunPatch) {
    if patch.status == Some(RunStatus::Failed) {
        let error = patch.error.as_ref();
        let text = |k: &str| {
            error
                .and_then(|e| e.get(k))
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        crate::observe::otel::step_failed(span, &text("code"), &text("message"));
    }
}

/// The template context of a run.
pub(super) fn context(run: &RunRecord) -> Value {
    json!({
        "inputs": run.inputs,
        "nodes": run.state.get("nodes").cloned().unwrap_or_else(|| json!({})),
        // The passes each open `repeat` block has completed.
        "loops": run.state.get("loops").cloned().unwrap_or_else(|| json!({})),
        "run": {"id": run.run_id, "workflowId": run.workflow_id},
    })
}

pub(super) fn with_node_result(state: &Value, node_id: &str, value: Value) -> Value {
    let mut state = state.as_object().cloned().unwrap_or_default();
    let nodes = state
        .entry("nodes")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(m) = nodes {
        m.insert(node_id.to_owned(), value);
    }
    Value::Object(state)
}

/// A node (or block) whose `when` rendered falsy: no events, no value, on to `next`.
fn skipped(run: &RunRecord, id: &str, next: i64) -> Planned {
    let mut state = run.state.as_object().cloned().unwrap_or_default();
    if let Some(Value::Object(nodes)) = state.get_mut("nodes") {
        nodes.remove(id);
    }
    Planned::Next(
        RunPatch {
            node_index: Some(next),
            state: Some(Value::Object(state)),
            ..Default::default()
        },
        vec![],
    )
}

/// The state with a block's pass count set, or removed once the block is done.
fn with_passes(state: &Value, id: &str, passes: Option<u64>) -> Value {
    let mut state = state.as_object().cloned().unwrap_or_default();
    let loops = state
        .entry("loops")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(m) = loops {
        match passes {
            Some(n) => {
                m.insert(id.to_owned(), json!(n));
            }
            None => {
                m.remove(id);
            }
        }
    }
    if state
        .get("loops")
        .and_then(Value::as_object)
        .is_some_and(Map::is_empty)
    {
        state.remove("loops");
    }
    Value::Object(state)
}

impl Engine {
    pub fn new(
        store: Arc<dyn RunStore>,
        registry: Registry,
        shutdown: watch::Receiver<bool>,
    ) -> Arc<Self> {
        Self::with_lease_ttl(store, registry, shutdown, DEFAULT_LEASE_TTL)
    }

    /// An engine whose run leases last `lease_ttl` without renewal: how long a run
    /// waits after its replica dies before another takes it over.
    pub fn with_lease_ttl(
        store: Arc<dyn RunStore>,
        registry: Registry,
        shutdown: watch::Receiver<bool>,
        lease_ttl: Duration,
    ) -> Arc<Self> {
        let replica = format!("replica-{}", crate::ids::mint_opaque());
        let lease_ttl = lease_ttl.max(Duration::from_millis(300));
        Arc::new(Self {
            on_suspend: std::sync::OnceLock::new(),
            store,
            registry,
            active: Mutex::new(HashMap::new()),
            unconfirmed_suspends: Mutex::new(HashMap::new()),
            shutdown,
            replica,
            lease_ttl,
            peers: std::sync::OnceLock::new(),
        })
    }

    /// Installs the remote peers calling nodes reach; the first set stays.
    pub fn set_peers(&self, peers: crate::peers::Peers) {
        if self.peers.set(peers).is_err() {
            tracing::warn!("the engine's peers were already set");
        }
    }

    /// The configured peers and the one way to reach them (the engine's call nodes, and
    /// conformance mode's invoke seams, which drive the same clients).
    pub fn peers(&self) -> &crate::peers::Peers {
        static NONE: std::sync::OnceLock<crate::peers::Peers> = std::sync::OnceLock::new();
        self.peers
            .get()
            .unwrap_or_else(|| NONE.get_or_init(crate::peers::Peers::default))
    }

    pub(super) fn store(&self) -> &Arc<dyn RunStore> {
        &self.store
    }

    pub(super) fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.shutdown.clone()
    }

    /// Installs what happens after a run suspends; the first hook set stays.
    pub fn set_on_suspend(&self, hook: SuspendHook) {
        if self.on_suspend.set(hook).is_err() {
            tracing::warn!("the engine's suspend hook was already set");
        }
    }

    /// This process's name on run leases.
    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// Every engine write: fenced by this replica's lease on the run.
    async fn advance(
        &self,
        run_id: &str,
        guard: Guard,
        mut patch: RunPatch,
        events: Vec<NewEvent>,
    ) -> Result<Advanced, StoreError> {
        patch.lease_owner = Some(self.replica.clone());
        self.store.advance(run_id, guard, patch, events).await
    }

    pub fn registry(&self) -> &Registry {
        &self.registry
    }

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

    /// Whether a failed run was failed by the host itself (a step it could not execute,
    /// a workflow it no longer has) rather than by the workflow's own outcome (a `fail`
    /// node, or an interrupt answered on its failure path). A failing run stays on the
    /// node that failed it, so the node says which. Store errors never fail a run (the
    /// step is retried), so they never show up here.
    pub fn failed_by_host(&self, run: &RunRecord) -> bool {
        if run.status != RunStatus::Failed {
            return false;
        }
        let Ok(wf) = self.workflow_of(run) else {
            return true;
        };
        let node = usize::try_from(run.node_index)
            .ok()
            .and_then(|i| wf.program.get(i));
        // A calling node fails on the remote side's answer: the workflow's outcome too.
        !matches!(
            node,
            Some(Instr::Node(
                Node::Fail { .. }
                    | Node::Interrupt { .. }
                    | Node::A2a { .. }
                    | Node::Mcp { .. }
                    | Node::Http { .. }
                    | Node::McpClient { .. }
            ))
        )
    }

    pub(super) fn workflow_of(&self, run: &RunRecord) -> Result<Arc<Workflow>, EngineError> {
        self.registry
            .get(&run.workflow_id)
            .ok_or_else(|| EngineError::MissingWorkflow {
                run_id: run.run_id.clone(),
                workflow_id: run.workflow_id.clone(),
            })
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
            && calls::call_state(&batch.run.state, definition::node_id(node)).is_some()
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

    /// Plans nodes in memory from `batch.run` as far as they go without waiting, input or
    /// an outside call, onto `batch`; true when the run has more to do after this commit
    /// (a wait, a call, the per-commit cap), with `suspended` set when it suspends.
    fn plan_batch(
        &self,
        wf: &Workflow,
        batch: &mut Batch,
        suspended: &mut Option<SuspendedAt>,
    ) -> Result<bool, EngineError> {
        Ok(loop {
            match batch.run.status {
                RunStatus::Pending => {
                    let ev = events::run_started(&batch.run)
                        .map_err(payload_error(&batch.run.run_id))?;
                    let start = RunPatch {
                        status: Some(RunStatus::Running),
                        ..Default::default()
                    };
                    batch.apply(start, vec![ev]);
                }
                RunStatus::Running => match self.plan_node(wf, &batch.run)? {
                    Planned::Next(patch, events) => batch.apply(patch, events),
                    Planned::End(patch, events) => {
                        batch.apply(patch, events);
                        break false;
                    }
                    Planned::Wait(patch, events) => {
                        batch.apply(patch, events);
                        break true;
                    }
                    Planned::Suspend(patch, events, at) => {
                        batch.apply(patch, events);
                        *suspended = Some(at);
                        break false;
                    }
                    Planned::Call(patch, events) => {
                        batch.apply(patch, events);
                        break true;
                    }
                },
                _ => break false,
            }
            batch.nodes += 1;
            if batch.nodes >= MAX_NODES_PER_COMMIT {
                break true;
            }
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

    /// [`Engine::plan_node_untraced`] in the run step's exported span (none without a
    /// collector).
    fn plan_node(&self, wf: &Workflow, run: &RunRecord) -> Result<Planned, EngineError> {
        let span = step_span(wf, run);
        let _entered = span.enter();
        let planned = self.plan_node_untraced(wf, run);
        if let Ok(Planned::End(patch, _)) = &planned {
            step_outcome(&span, patch);
        }
        planned
    }

    /// What the run's current node does, decided in memory from the run as it stands.
    fn plan_node_untraced(&self, wf: &Workflow, run: &RunRecord) -> Result<Planned, EngineError> {
        let def = &wf.definition;
        let ctx = context(run);
        let index = usize::try_from(run.node_index).unwrap_or(usize::MAX);
        let invalid = payload_error(&run.run_id);
        let Some(instr) = wf.program.get(index) else {
            // Past the last node: the run is done.
            let rendered = def
                .outputs
                .as_ref()
                .map(|t| template::render(t, &ctx))
                .unwrap_or_else(|| json!({}));
            let outputs = match rendered {
                Value::Object(_) => rendered,
                Value::Null => json!({}),
                other => json!({"value": other}),
            };
            let ev = events::run_completed(run, &outputs);
            let patch = RunPatch {
                status: Some(RunStatus::Completed),
                outputs: Some(outputs),
                ..Default::default()
            };
            return Ok(Planned::End(patch, vec![ev]));
        };
        let next = run.node_index + 1;
        let node = match instr {
            Instr::LoopStart { id, when, end } => {
                if let Some(when) = when
                    && !template::truthy(&template::render(when, &ctx))
                {
                    return Ok(skipped(run, id, *end as i64 + 1));
                }
                let state = with_passes(&run.state, id, Some(0));
                let patch = RunPatch {
                    node_index: Some(next),
                    state: Some(state),
                    ..Default::default()
                };
                let started = events::node_started(id, "core.repeat").map_err(invalid)?;
                return Ok(Planned::Next(patch, vec![started]));
            }
            Instr::LoopEnd {
                id,
                start,
                max,
                until,
            } => {
                let passes = run
                    .state
                    .get("loops")
                    .and_then(|l| l.get(id.as_str()))
                    .and_then(Value::as_u64)
                    .unwrap_or(0)
                    + 1;
                let satisfied = until
                    .as_ref()
                    .is_some_and(|u| template::truthy(&template::render(u, &ctx)));
                if !satisfied && passes < *max {
                    let patch = RunPatch {
                        node_index: Some(*start as i64 + 1),
                        state: Some(with_passes(&run.state, id, Some(passes))),
                        ..Default::default()
                    };
                    return Ok(Planned::Next(patch, vec![]));
                }
                let value = json!({"passes": passes, "satisfied": satisfied});
                let completed = events::node_completed(id, Some(&value)).map_err(invalid)?;
                let state = with_node_result(&with_passes(&run.state, id, None), id, value);
                let patch = RunPatch {
                    node_index: Some(next),
                    state: Some(state),
                    ..Default::default()
                };
                return Ok(Planned::Next(patch, vec![completed]));
            }
            Instr::Node(node) => node,
        };
        let node_id = definition::node_id(node);
        if let Some(when) = definition::when_of(node)
            && !template::truthy(&template::render(when, &ctx))
        {
            return Ok(skipped(run, node_id, next));
        }
        let invalid = payload_error(&run.run_id);
        Ok(match node {
            Node::A2a { .. } | Node::Mcp { .. } | Node::Http { .. } | Node::McpClient { .. } => {
                // The call itself happens outside the transaction: first the node starts
                // and what its call needs is stored, so a restart resumes it.
                let kind = match node {
                    Node::A2a { .. } => "core.a2a",
                    Node::Mcp { .. } => "core.mcp",
                    Node::McpClient { .. } => "core.mcp-client",
                    _ => "core.http",
                };
                let patch = RunPatch {
                    state: Some(calls::begin(&run.state, node_id)),
                    ..Default::default()
                };
                Planned::Call(
                    patch,
                    vec![events::node_started(node_id, kind).map_err(invalid)?],
                )
            }
            Node::Repeat { .. } => {
                // `definition::compile` turns every block into markers.
                return Err(EngineError::Payload {
                    run_id: run.run_id.clone(),
                    message: format!("node `{node_id}`: a block reached the executor uncompiled"),
                });
            }
            Node::Transform {
                value, artifact, ..
            } => {
                let out = template::render(value, &ctx);
                let mut events =
                    vec![events::node_started(node_id, "core.transform").map_err(invalid)?];
                let mut state = run.state.clone();
                if let Some(artifact) = artifact {
                    let (recorded, id) = artifacts::record(
                        &state,
                        node_id,
                        &artifact.artifact_type,
                        artifact.name.as_deref().map(|n| n.as_str()),
                        &out,
                    );
                    state = recorded;
                    events.push(
                        events::artifact_created(&id, &artifact.artifact_type, node_id)
                            .map_err(payload_error(&run.run_id))?,
                    );
                }
                events.push(
                    events::node_completed(node_id, Some(&out))
                        .map_err(payload_error(&run.run_id))?,
                );
                let patch = RunPatch {
                    node_index: Some(next),
                    state: Some(with_node_result(&state, node_id, out)),
                    ..Default::default()
                };
                Planned::Next(patch, events)
            }
            Node::Fail { code, message, .. } => {
                let message = template::render(&json!(message.as_str()), &ctx);
                let (patch, mut events) = failure(
                    run,
                    code,
                    message.as_str().unwrap_or_default(),
                    Some(node_id),
                );
                events.insert(
                    0,
                    events::node_started(node_id, "core.fail").map_err(invalid)?,
                );
                // The node failed, then the run: `node.failed` carries the same error.
                let error = events::error_object(code, message.as_str().unwrap_or_default());
                events.insert(
                    1,
                    events::node_failed(node_id, error).map_err(payload_error(&run.run_id))?,
                );
                Planned::End(patch, events)
            }
            Node::Wait { .. } => {
                // `definition::parse` refused a wait without exactly one amount.
                let (amount, unit_ms) = definition::wait_amount(node).unwrap_or((Value::Null, 0));
                let amount = match amount {
                    Value::String(s) => template::render(&json!(s), &ctx),
                    other => other.clone(),
                };
                let ms = amount
                    .as_u64()
                    .and_then(|v| v.checked_mul(unit_ms))
                    .and_then(|v| i64::try_from(v).ok());
                let Some(amount) = ms else {
                    let (patch, events) = failure(
                        run,
                        "validation_error",
                        &format!(
                            "node `{}`: the wait time is not a non-negative integer",
                            node_id
                        ),
                        Some(node_id),
                    );
                    return Ok(Planned::End(patch, events));
                };
                // The deadline is stored with the commit, so a restarted host keeps it.
                let patch = RunPatch {
                    wait_until: Some(Some(now_ms().saturating_add(amount))),
                    ..Default::default()
                };
                let started = events::node_started(node_id, "core.wait").map_err(invalid)?;
                Planned::Wait(patch, vec![started])
            }
            Node::Interrupt { interrupt, .. } => {
                let data = interrupt
                    .data
                    .clone()
                    .map_or_else(|| json!({}), Value::Object);
                let data = template::render(&data, &ctx);
                let interrupt_id = crate::ids::mint_bound(&run.tenant).as_bound();
                let kind = definition::kind_str(interrupt.kind);
                let [requested, suspended] =
                    events::suspension(&run.run_id, node_id, &interrupt_id, kind, &data)
                        .map_err(payload_error(&run.run_id))?;
                let started = events::node_started(node_id, "core.interrupt").map_err(invalid)?;
                let patch = RunPatch {
                    status: Some(status::suspended_status(interrupt.kind)),
                    open_interrupt: Some(NewInterrupt {
                        node_id: node_id.to_owned(),
                        interrupt_id: interrupt_id.clone(),
                        kind: kind.into(),
                        data,
                    }),
                    ..Default::default()
                };
                let events = vec![started, requested, suspended];
                Planned::Suspend(
                    patch,
                    events,
                    SuspendedAt {
                        node_id: node_id.to_owned(),
                        interrupt_id,
                        kind: kind.to_owned(),
                    },
                )
            }
        })
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
            if let Some(patch) = calls::on_answer(run, &interrupt.node_id, &resume) {
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
