//! The runs side of the store: the [`RunStore`] trait and its records.

use serde_json::Value;

use super::{RunStatus, StoreFuture, Subscription, Topic};

/// A run as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRecord {
    pub run_id: String,
    pub tenant: String,
    pub workflow_id: String,
    pub status: RunStatus,
    pub owner: Value,
    pub transport: String,
    pub inputs: Value,
    /// Values the engine carries between nodes (node outputs, resume values).
    pub state: Value,
    pub outputs: Option<Value>,
    pub error: Option<Value>,
    /// Index of the node the engine is on.
    pub node_index: i64,
    /// Absolute deadline (ms since epoch) of the wait in progress, if any.
    pub wait_until: Option<i64>,
    pub created_ms: i64,
    pub updated_ms: i64,
    /// Sequence of the newest event, -1 when the log is empty.
    pub last_sequence: i64,
    /// Monotonic creation order, used for newest-first listing and cursors.
    pub list_order: i64,
    /// What the creator attached to the run, returned on its snapshot.
    pub annotations: RunAnnotations,
}

impl RunRecord {
    /// A new run as both backends insert it at `now`: step 0, no events, nothing settled.
    /// `list_order` is the database's to assign. The backends build the record they wrote
    /// instead of reading the row back (the writer bounds every write's throughput).
    pub fn inserted(run: NewRun, now: i64, list_order: i64) -> RunRecord {
        RunRecord {
            list_order,
            run_id: run.run_id,
            tenant: run.tenant,
            workflow_id: run.workflow_id,
            status: run.status,
            owner: run.owner,
            transport: run.transport,
            inputs: run.inputs,
            state: run.state,
            outputs: None,
            error: None,
            node_index: 0,
            wait_until: None,
            created_ms: now,
            updated_ms: now,
            last_sequence: -1,
            annotations: run.annotations,
        }
    }

    /// What `sql::apply_patch!` does to the stored row, done to this record: the patch's
    /// fields that are set replace the run's (its state, outputs and error are taken out of
    /// the patch), `appended` events follow the last one, and the run was updated `now`.
    pub fn apply(&mut self, patch: &mut RunPatch, appended: usize, now: i64) {
        if let Some(status) = patch.status {
            self.status = status;
        }
        if let Some(index) = patch.node_index {
            self.node_index = index;
        }
        if let Some(wait) = patch.wait_until {
            self.wait_until = wait;
        }
        if let Some(state) = patch.state.take() {
            self.state = state;
        }
        if let Some(outputs) = patch.outputs.take() {
            self.outputs = Some(outputs);
        }
        if let Some(error) = patch.error.take() {
            self.error = Some(error);
        }
        self.last_sequence += appended as i64;
        self.updated_ms = now;
    }
}

/// createRun's `agentId`, `tags` and `metadata`, kept with the run and returned on its
/// snapshot (tags and metadata also on `run.started`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunAnnotations {
    pub agent_id: Option<String>,
    /// A JSON array of strings, when given.
    pub tags: Option<Value>,
    /// A JSON object, when given.
    pub metadata: Option<Value>,
}

/// What `create_run` needs.
#[derive(Debug, Clone)]
pub struct NewRun {
    pub run_id: String,
    pub tenant: String,
    pub workflow_id: String,
    pub status: RunStatus,
    pub owner: Value,
    pub transport: String,
    pub inputs: Value,
    /// The engine state the run starts with (`{}` for most runs).
    pub state: Value,
    pub annotations: RunAnnotations,
}

/// An `Idempotency-Key` claimed together with a run creation.
#[derive(Debug, Clone)]
pub struct IdempotencyClaim {
    pub tenant: String,
    pub principal: String,
    pub key: String,
    /// Digest of the canonical request body.
    pub body_hash: String,
    /// The first claim wins whatever its body: a replay with another body returns the
    /// claimed run instead of a mismatch (an A2A messageId: the map's SendMessage row).
    pub any_body: bool,
}

/// The result of `create_run`.
#[derive(Debug, Clone)]
pub struct Created {
    pub run: RunRecord,
    /// True when an earlier request with the same key and body created the run.
    pub replay: bool,
    /// The A2A contextId bound to the run, when the creation carried an [`A2aStart`]
    /// (on a replay: the one bound the first time).
    pub context_id: Option<String>,
    /// The host events written with the creation, as stored (durable ones with `seq`).
    pub host_events: Vec<HostEventRecord>,
}

/// What a creation writes beside the run, in the same transaction: a new A2A task's
/// context and first message, and the host events its operation produced, so creating
/// an A2A task is one commit.
#[derive(Default)]
pub struct CreateWith {
    pub a2a: Option<A2aStart>,
    /// Durable ones are stored with the run (and only if it is); ephemeral ones are
    /// published once it is committed.
    pub host_events: Vec<HostEventRecord>,
    /// The run's first change, planned from the run as inserted and applied in the same
    /// transaction (as `advance` would, without guard or lease: nobody else has seen the
    /// run yet); never applied on a replay (PostgreSQL plans before its one statement
    /// finds out whether the key is held, so the plan must be pure). `None` from it:
    /// nothing to apply.
    pub first_step: Option<PlanFirst>,
    /// Leave `first_step` unset: the run stays pending until the engine starts it after
    /// the commit, for a creation followed by a write its progress must see (an inline
    /// A2A push configuration, which would miss a run that finished inside its creation).
    pub start_later: bool,
    /// The W3C `traceparent` the creating request continued (well formed, from the edge's
    /// trace selection): `ops` keeps it in the run's state, so the calls the run makes to
    /// peers continue the caller's trace. Not written by the store itself.
    pub trace: Option<String>,
}

/// Plans a new run's first change inside its creation ([`CreateWith::first_step`]).
pub type PlanFirst = Box<dyn FnOnce(&RunRecord) -> Option<(RunPatch, Vec<NewEvent>)> + Send>;

/// Builds a task's first A2A message from the run id and the contextId bound to it.
pub type StampMessage = Box<dyn FnOnce(&str, &str) -> Value + Send>;

/// The A2A side of a task started by a message: `context_id` is bound to the run (a
/// replay keeps the first binding) and the message is appended to its history unless
/// one with the same non-empty `message_id` is there already — exactly what
/// `InteropStore::a2a_bind_context` and `a2a_append_message` do, in the creation's
/// transaction.
pub struct A2aStart {
    pub context_id: String,
    pub message_id: String,
    pub message: StampMessage,
}

/// An event before the store gives it its sequence, id and time.
#[derive(Debug, Clone)]
pub struct NewEvent {
    pub event_type: String,
    pub node_id: Option<String>,
    pub payload: Value,
}

/// An event as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRecord {
    pub run_id: String,
    pub sequence: i64,
    pub event_id: String,
    pub event_type: String,
    pub node_id: Option<String>,
    pub payload: Value,
    pub timestamp_ms: i64,
}

/// An interrupt to open together with a run change.
#[derive(Debug, Clone)]
pub struct NewInterrupt {
    pub node_id: String,
    pub interrupt_id: String,
    pub kind: String,
    pub data: Value,
}

/// An interrupt as stored.
#[derive(Debug, Clone, PartialEq)]
pub struct InterruptRecord {
    pub run_id: String,
    pub node_id: String,
    pub interrupt_id: String,
    pub kind: String,
    pub data: Value,
    /// `open`, `resolved` or `closed` (the run ended while it was open).
    pub state: String,
    pub resume_value: Option<Value>,
}

/// A condition on the run's current status, checked inside the transaction.
#[derive(Debug, Clone)]
pub enum Guard {
    StatusIn(&'static [RunStatus]),
    StatusNotIn(&'static [RunStatus]),
}

impl Guard {
    pub(crate) fn admits(&self, status: RunStatus) -> bool {
        match self {
            Guard::StatusIn(list) => list.contains(&status),
            Guard::StatusNotIn(list) => !list.contains(&status),
        }
    }
}

/// Fields of a run to change; `None` keeps the stored value. Both backends apply a patch
/// with one shared statement (`sql::APPLY_PATCH`), so what a patch means is said once.
#[derive(Debug, Clone, Default)]
pub struct RunPatch {
    pub status: Option<RunStatus>,
    pub node_index: Option<i64>,
    pub wait_until: Option<Option<i64>>,
    pub state: Option<Value>,
    pub outputs: Option<Value>,
    pub error: Option<Value>,
    pub open_interrupt: Option<NewInterrupt>,
    /// Close every open interrupt (the run is ending).
    pub close_interrupts: bool,
    /// Apply only while this replica holds the run's lease (the engine's writes), so a
    /// replica that lost its lease cannot append behind the one that took it over.
    pub lease_owner: Option<String>,
}

/// The result of a run change.
#[derive(Debug, Clone)]
pub struct Advanced {
    pub run: RunRecord,
    pub events: Vec<EventRecord>,
}

/// Builds the change that resolving an interrupt makes, from the stored interrupt.
pub type OnResolve =
    Box<dyn FnOnce(&InterruptRecord, &RunRecord) -> (RunPatch, Vec<NewEvent>) + Send>;

/// A run and what its snapshot shows beside it ([`RunStore::run_detail`]).
#[derive(Debug, Clone, PartialEq)]
pub struct RunDetail {
    /// The run, its `state` left as JSON null: no view shows it, and reading it would make
    /// a snapshot's cost grow with the run's working state.
    pub run: RunRecord,
    pub open_interrupt: Option<InterruptRecord>,
    /// The A2A contextId bound when the run was started over A2A.
    pub context_id: Option<String>,
}

/// Which runs [`RunStore::query_runs`] returns, in which order, and how many.
#[derive(Debug, Clone)]
pub struct RunQuery {
    /// Runs of this tenant only.
    pub tenant: String,
    /// Runs in one of these statuses; empty: any status.
    pub statuses: Vec<RunStatus>,
    pub workflow_id: Option<String>,
    /// Runs of this A2A contextId: the one bound to the run, else the run id itself (a
    /// run started over REST is its own context).
    pub context_id: Option<String>,
    /// Runs last updated at or after this (ms since the epoch).
    pub updated_since_ms: Option<i64>,
    /// A condition on the run's open interrupt (A2A tells `auth-required`, a credential
    /// interrupt, from `input-required` this way).
    pub open_interrupt: Option<OpenInterrupt>,
    pub order: RunOrder,
    /// At most this many runs.
    pub limit: usize,
    /// Also count every run the filters admit, whatever the page (A2A `totalSize`).
    pub count_total: bool,
}

impl RunQuery {
    /// Every run of `tenant`, newest first, `limit` at a time.
    pub fn newest_first(tenant: impl Into<String>, limit: usize) -> RunQuery {
        RunQuery {
            tenant: tenant.into(),
            statuses: Vec::new(),
            workflow_id: None,
            context_id: None,
            updated_since_ms: None,
            open_interrupt: None,
            order: RunOrder::Created { before: None },
            limit,
            count_total: false,
        }
    }
}

/// A condition on the kind of a run's open interrupt (an empty list: no condition).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenInterrupt {
    /// The run has an open interrupt of one of these kinds.
    OfKind(Vec<String>),
    /// The run has no open interrupt of any of these kinds (or none at all).
    NotOfKind(Vec<String>),
}

/// The order of a run listing, with its keyset cursor: a page starts strictly after the
/// cursor, so runs created or updated meanwhile never shift a page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunOrder {
    /// Newest created first (`list_order` descending); `before`: the `list_order` of the
    /// last run of the previous page.
    Created { before: Option<i64> },
    /// Last updated first (`updated_ms` descending, then run id descending in byte
    /// order); `after`: the last run of the previous page.
    Updated { after: Option<UpdatedCursor> },
}

/// Where a listing by last update stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdatedCursor {
    pub updated_ms: i64,
    pub run_id: String,
}

impl UpdatedCursor {
    /// The cursor after `run`.
    pub fn after(run: &RunRecord) -> UpdatedCursor {
        UpdatedCursor {
            updated_ms: run.updated_ms,
            run_id: run.run_id.clone(),
        }
    }
}

/// A page of runs.
#[derive(Debug, Clone)]
pub struct RunPage {
    pub runs: Vec<RunRecord>,
    /// Every run the filters admit, when [`RunQuery::count_total`] asked for it.
    pub total: Option<u64>,
}

/// A durable host event as stored (ephemeral ones are only published).
#[derive(Debug, Clone, PartialEq)]
pub struct HostEventRecord {
    /// Store-assigned order; 0 for ephemeral events.
    pub seq: i64,
    pub tenant: String,
    pub event_id: String,
    pub event_type: String,
    pub delivery: String,
    pub workspace_id: Option<String>,
    pub payload: Value,
    pub timestamp_ms: i64,
}

impl HostEventRecord {
    /// A new host event of `tenant` with a fresh event id; the store numbers it (`seq`)
    /// when a durable one is appended.
    pub fn new(
        tenant: String,
        event_type: &str,
        delivery: &str,
        payload: Value,
        timestamp_ms: i64,
    ) -> HostEventRecord {
        HostEventRecord {
            seq: 0,
            tenant,
            event_id: crate::ids::mint_event_id(),
            event_type: event_type.to_owned(),
            delivery: delivery.to_owned(),
            workspace_id: None,
            payload,
            timestamp_ms,
        }
    }
}

/// Persistence for runs: their rows, event logs and interrupts, idempotency keys, leases,
/// host events and the secrets every replica shares, plus the wake-ups that announce
/// their commits. Every change of a run is one transaction.
pub trait RunStore: Send + Sync {
    /// Inserts a run, claiming `idempotency` in the same transaction when given. A key
    /// already held with the same body hash returns the earlier run with `replay: true`.
    fn create_run(
        &self,
        run: NewRun,
        idempotency: Option<IdempotencyClaim>,
    ) -> StoreFuture<'_, Created> {
        self.create_run_with(run, idempotency, CreateWith::default())
    }

    /// [`RunStore::create_run`], writing `with` in the same transaction (on a replay
    /// too, beside the earlier run); nothing of it is written when the creation fails.
    fn create_run_with(
        &self,
        run: NewRun,
        idempotency: Option<IdempotencyClaim>,
        with: CreateWith,
    ) -> StoreFuture<'_, Created>;

    fn get_run(&self, run_id: &str) -> StoreFuture<'_, Option<RunRecord>>;

    /// Runs of one tenant that the query's filters admit, in its order, one page at a
    /// time (and how many in all, if asked, read in the same snapshot).
    fn query_runs(&self, query: RunQuery) -> StoreFuture<'_, RunPage>;

    /// Runs that are not terminal: what the engine looks at after a start.
    fn unfinished_runs(&self) -> StoreFuture<'_, Vec<RunRecord>>;

    /// Applies `patch` and appends `events` (sequences continue without gaps) in one
    /// transaction, if `guard` admits the current status.
    fn advance(
        &self,
        run_id: &str,
        guard: Guard,
        patch: RunPatch,
        events: Vec<NewEvent>,
    ) -> StoreFuture<'_, Advanced>;

    /// Resolves the open interrupt at `node_id` with a conditional update, so that of two
    /// concurrent calls exactly one wins; the winner's change comes from `on_resolve`.
    fn resolve_interrupt(
        &self,
        run_id: &str,
        node_id: &str,
        resume_value: Value,
        on_resolve: OnResolve,
    ) -> StoreFuture<'_, Advanced>;

    /// A run with what its snapshot shows beside it (the open interrupt, the A2A contextId
    /// it was started with), read in one store call: a snapshot read is one hop, not three.
    fn run_detail(&self, run_id: &str) -> StoreFuture<'_, Option<RunDetail>>;

    /// A number that changes whenever the run's detail ([`RunStore::run_detail`]) may
    /// have changed, known without reading the database: take it before reading the
    /// detail, and what was made from that read holds while the stamp stays the same (a
    /// write's answer comes after its stamp moved). `None`: this store cannot say (other
    /// processes write it, as PostgreSQL's replicas do), so nothing read may be kept.
    fn detail_stamp(&self, _run_id: &str) -> Option<u64> {
        None
    }

    /// [`RunStore::run_detail`] of each id, in the order given, ids with no run left out:
    /// a page of runs is read in one store call, not one per run (on PostgreSQL, one round
    /// trip per run made a 100-run `listRuns` page cost 20 ms; issue #33).
    fn run_details(&self, run_ids: Vec<String>) -> StoreFuture<'_, Vec<RunDetail>> {
        Box::pin(async move {
            let mut out = Vec::with_capacity(run_ids.len());
            for id in &run_ids {
                if let Some(detail) = self.run_detail(id).await? {
                    out.push(detail);
                }
            }
            Ok(out)
        })
    }

    /// The open interrupt of a run, if any.
    fn open_interrupt(&self, run_id: &str) -> StoreFuture<'_, Option<InterruptRecord>>;

    /// Events with `sequence > after`, oldest first, at most `limit`.
    fn events_since(
        &self,
        run_id: &str,
        after: i64,
        limit: usize,
    ) -> StoreFuture<'_, Vec<EventRecord>>;

    /// Stores a durable host event (assigning `seq`) or publishes an ephemeral one.
    fn append_host_event(&self, event: HostEventRecord) -> StoreFuture<'_, HostEventRecord>;

    /// Durable host events of a tenant with `seq > after`, oldest first.
    fn host_events(
        &self,
        tenant: &str,
        after: i64,
        limit: usize,
    ) -> StoreFuture<'_, Vec<HostEventRecord>>;

    /// The stored position of a tenant's durable host event, by its id; `None` for an id
    /// that is unknown or another tenant's. One lookup, whatever the length of the log.
    fn host_event_seq(&self, tenant: &str, event_id: &str) -> StoreFuture<'_, Option<i64>>;

    /// Wake-ups for the commits of `topics` (a run, a tenant's host log, every run), in
    /// this process and, on a shared store, on every replica; a hint to re-read, never
    /// the data (ephemeral host events excepted, which exist only as wake-ups).
    fn subscribe(&self, topics: &[Topic]) -> Subscription;

    /// True when other processes may share this store, so runs need leases and a sweep
    /// for runs whose driver died.
    fn shared(&self) -> bool {
        false
    }

    /// Takes or renews the lease on a run for `ttl_ms`: won when nobody holds it, `owner`
    /// already does, or the holder let it expire. A single-process store always wins.
    fn acquire_lease(&self, run_id: &str, owner: &str, ttl_ms: i64) -> StoreFuture<'_, bool>;

    /// Gives the lease up if `owner` holds it.
    fn release_lease(&self, run_id: &str, owner: &str) -> StoreFuture<'_, ()>;

    /// Runs with a status in `statuses` that no replica holds a live lease on.
    fn unleased_runs(&self, statuses: &'static [RunStatus]) -> StoreFuture<'_, Vec<String>>;

    /// A secret every replica must share (a signing key): the first `candidate` stored
    /// under `name` wins and is what every later call returns.
    fn shared_secret(&self, name: &str, candidate: Vec<u8>) -> StoreFuture<'_, Vec<u8>>;

    /// Drops durable host events beyond each tenant's `keep` newest or older than
    /// `before_ms`, never one after its tenant's floor in `floors` (the position of the
    /// least advanced stream following that log). Returns how many were dropped.
    fn prune_host_events(
        &self,
        keep: i64,
        before_ms: i64,
        floors: std::collections::HashMap<String, i64>,
    ) -> StoreFuture<'_, u64>;

    /// The newest migration the database has applied (a round trip: `/readyz` reads it).
    fn schema_version(&self) -> StoreFuture<'_, i64>;

    /// Runs by status, the push outbox depth and the dead letters (`/metrics`).
    fn gauges(&self) -> StoreFuture<'_, super::StoreGauges>;

    /// Why writes fail now, when the last write failed for a transient fault (a full
    /// disk, a locked database); `None` once one succeeds. A store whose reads and writes
    /// fail alike (PostgreSQL: a lost server fails `schema_version` too) keeps the default.
    fn write_fault(&self) -> Option<String> {
        None
    }

    /// One small real write (a row of the `secrets` table rewritten), so `/readyz` can
    /// see writes succeed again after [`RunStore::write_fault`] while no request writes.
    fn probe_write(&self) -> StoreFuture<'_, ()> {
        Box::pin(async { Ok(()) })
    }
}
