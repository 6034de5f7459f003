//! Persistence: the [`Store`] trait every layer above talks to, and its records.
//!
//! The trait is object-safe (`Arc<dyn Store>`) so the host picks SQLite (one process) or
//! PostgreSQL (several replicas on one database); SQL and transactions never leak above it. Statuses are plain strings
//! here? No: a status is the generated `RunStatus`, parsed once where a row is read, so no
//! layer above ever sees a string it has to guess about.

mod migrate;
mod postgres;
#[doc(hidden)]
pub mod scratch;
mod sqlite;
mod wakeups;

#[cfg(test)]
mod suite;

pub use postgres::PgStore;
pub use sqlite::SqliteStore;
pub use wakeups::{LocalWakeups, Wake, Wakeups};

pub use crate::status::RunStatus;
use serde_json::Value;
use std::future::Future;
use std::pin::Pin;

/// The future type of every store method.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// The store layer's one error type.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("no run `{0}`")]
    RunNotFound(String),
    #[error("the run is `{}`, which this change does not apply to", status.as_str())]
    Guard { status: RunStatus },
    #[error("no open interrupt at this node")]
    NoOpenInterrupt,
    #[error("the interrupt at this node has already been resolved or closed")]
    InterruptAlreadyResolved,
    #[error("this Idempotency-Key was used before with a different request body")]
    IdempotencyMismatch,
    #[error("this replica no longer holds the run's lease")]
    LeaseLost,
    #[error("database error: {0}")]
    Database(String),
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        StoreError::Database(e.to_string())
    }
}

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
}

/// An `Idempotency-Key` claimed together with a run creation.
#[derive(Debug, Clone)]
pub struct IdempotencyClaim {
    pub tenant: String,
    pub principal: String,
    pub key: String,
    /// Digest of the canonical request body.
    pub body_hash: String,
}

/// The result of `create_run`.
#[derive(Debug, Clone)]
pub struct Created {
    pub run: RunRecord,
    /// True when an earlier request with the same key and body created the run.
    pub replay: bool,
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
    fn admits(&self, status: RunStatus) -> bool {
        match self {
            Guard::StatusIn(list) => list.contains(&status),
            Guard::StatusNotIn(list) => !list.contains(&status),
        }
    }
}

/// A stored status, or the error that says which run holds a status this host does not
/// know (a newer host's, or a damaged row): never guessed at.
pub(crate) fn parse_status(run_id: &str, raw: &str) -> Result<RunStatus, StoreError> {
    raw.parse()
        .map_err(|_| StoreError::Database(format!("run `{run_id}` has the unknown status `{raw}`")))
}

/// Fields of a run to change; `None` keeps the stored value.
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

impl RunPatch {
    /// The run as it stands once this patch is applied, its last event being
    /// `last_sequence`, at `now_ms`: what every backend writes back and returns.
    pub fn applied_to(self, run: &RunRecord, last_sequence: i64, now_ms: i64) -> RunRecord {
        let mut next = run.clone();
        if let Some(s) = self.status {
            next.status = s;
        }
        if let Some(n) = self.node_index {
            next.node_index = n;
        }
        if let Some(w) = self.wait_until {
            next.wait_until = w;
        }
        if let Some(s) = self.state {
            next.state = s;
        }
        if let Some(o) = self.outputs {
            next.outputs = Some(o);
        }
        if let Some(e) = self.error {
            next.error = Some(e);
        }
        next.last_sequence = last_sequence;
        next.updated_ms = now_ms;
        next
    }
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

/// Filters and page position of `list_runs`.
#[derive(Debug, Clone)]
pub struct ListQuery {
    pub tenant: String,
    pub workflow_id: Option<String>,
    pub status: Option<RunStatus>,
    /// Only runs strictly older than this `list_order`.
    pub before: Option<i64>,
    pub limit: usize,
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

/// A 2025-11-25 MCP session as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionRecord {
    /// Digest of the principal that opened it: only that principal may use it.
    pub principal_digest: String,
    /// The protocol revision `initialize` settled on.
    pub version: String,
    /// Idle expiry (ms since epoch), moved forward by `touch_session`.
    pub expires_ms: i64,
}

/// Persistence for runs, their event logs, interrupts, idempotency keys and host events.
pub trait Store: Send + Sync {
    /// Inserts a run, claiming `idempotency` in the same transaction when given. A key
    /// already held with the same body hash returns the earlier run with `replay: true`.
    fn create_run(
        &self,
        run: NewRun,
        idempotency: Option<IdempotencyClaim>,
    ) -> StoreFuture<'_, Created>;

    fn get_run(&self, run_id: &str) -> StoreFuture<'_, Option<RunRecord>>;

    /// Runs of one tenant, newest first.
    fn list_runs(&self, query: ListQuery) -> StoreFuture<'_, Vec<RunRecord>>;

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

    /// Wake-ups for new run events and host events; a hint to re-read, never the data.
    fn subscribe(&self) -> tokio::sync::broadcast::Receiver<Wake>;

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

    /// Records `key` in `scope` once: true for the first caller, false for every later
    /// one (single-use tokens). The record may be forgotten after `expires_ms`.
    fn claim_once(&self, scope: &str, key: &str, expires_ms: i64) -> StoreFuture<'_, bool>;

    /// A secret every replica must share (a signing key): the first `candidate` stored
    /// under `name` wins and is what every later call returns.
    fn shared_secret(&self, name: &str, candidate: Vec<u8>) -> StoreFuture<'_, Vec<u8>>;

    /// Binds an A2A contextId to a run once; a later bind returns the first value.
    fn a2a_bind_context(&self, run_id: &str, context_id: &str) -> StoreFuture<'_, String>;

    fn a2a_context_of(&self, run_id: &str) -> StoreFuture<'_, Option<String>>;

    /// Appends an A2A message to a task's history unless one with the same non-empty
    /// `message_id` is there already; true when it was appended.
    fn a2a_append_message(
        &self,
        run_id: &str,
        message_id: &str,
        message: Value,
    ) -> StoreFuture<'_, bool>;

    /// The task's A2A messages, oldest first.
    fn a2a_history(&self, run_id: &str) -> StoreFuture<'_, Vec<Value>>;

    /// Stores a new MCP session; expired ones are swept here, so none piles up.
    fn open_session(
        &self,
        id: &str,
        principal_digest: &str,
        version: &str,
        expires_ms: i64,
    ) -> StoreFuture<'_, ()>;

    /// The session `id` unless it is unknown, closed or expired.
    fn session(&self, id: &str) -> StoreFuture<'_, Option<SessionRecord>>;

    /// Moves a live session's expiry to `expires_ms`; false when there is none.
    fn touch_session(&self, id: &str, expires_ms: i64) -> StoreFuture<'_, bool>;

    /// Deletes the live session `id` if `principal_digest` opened it; true when it did.
    fn close_session(&self, id: &str, principal_digest: &str) -> StoreFuture<'_, bool>;
}
