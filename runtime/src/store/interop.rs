//! The interop side of the store: what the A2A and MCP edges keep beside the runs, behind
//! [`InteropStore`]. It lives in the runs' database (one SQLite file, or the replicas'
//! PostgreSQL), so every replica sees one copy and a restart keeps it.
//!
//! A2A push secrets are held apart from their configurations: a configuration names its
//! secret by an opaque reference, and the secret row is the only place a token or
//! credential is written (deleted with the configuration, or after the task's final push;
//! SQLite overwrites deleted content, `secure_delete`).

use serde_json::Value;

use super::StoreFuture;

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

/// A configuration as stored: everything but the secret material.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredConfig {
    pub run_id: String,
    pub config_id: String,
    pub url: String,
    /// `authentication.scheme`, when the config has one.
    pub scheme: Option<String>,
    pub created_ms: i64,
}

/// The secret material of one configuration, held apart from it.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret {
    pub token: Option<String>,
    pub credentials: Option<String>,
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

/// One pending push.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub delivery_id: String,
    pub run_id: String,
    pub config_id: String,
    /// The A2A task state the push reports.
    pub state: String,
    /// The `StreamResponse` JSON sent.
    pub body: String,
    pub attempts: u32,
    /// The task's last push: the configuration is discarded once it is settled.
    pub last: bool,
}

/// An exhausted delivery. It names the delivery and never holds its body, headers or
/// secret; A2A clients never see it (they recover with GetTask).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetter {
    pub delivery_id: String,
    pub run_id: String,
    pub config_id: String,
    pub state: String,
    pub attempts: u32,
    pub reason: String,
    pub at_ms: i64,
}

/// What an A2A task shows beside its run ([`InteropStore::a2a_task`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct A2aTask {
    pub open_interrupt: Option<super::InterruptRecord>,
    pub context_id: Option<String>,
    pub history: Vec<Value>,
}

/// Persistence for the interop state of A2A and MCP.
pub trait InteropStore: Send + Sync {
    // ---- A2A task side: the contextId and the A2A messages of a task (a run) ----

    /// Binds an A2A contextId to a run once; a later bind returns the first value.
    fn a2a_bind_context(&self, run_id: &str, context_id: &str) -> StoreFuture<'_, String>;

    /// The contextId bound to a run, if any.
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

    /// What a task's projection reads beside the run, in one store call: the run's open
    /// interrupt, the contextId bound to it and its history (as
    /// [`RunStore::open_interrupt`](super::RunStore::open_interrupt),
    /// [`InteropStore::a2a_context_of`] and [`InteropStore::a2a_history`] answer them).
    fn a2a_task(&self, run_id: &str) -> StoreFuture<'_, A2aTask>;

    // ---- A2A push: configurations, their secrets, the outbox, dead letters ----

    /// Stores a configuration (replacing one with the same task and id, and its secret).
    fn push_put(&self, config: StoredConfig, secret: Secret) -> StoreFuture<'_, ()>;

    /// [`InteropStore::push_put`] unless the task already holds `max` other
    /// configurations (a replacement of one by its id always passes); `false` when
    /// refused, nothing written. Checked and written in one transaction, serialised per
    /// task, so concurrent registrations cannot pass the bound together.
    fn push_put_within(
        &self,
        config: StoredConfig,
        secret: Secret,
        max: usize,
    ) -> StoreFuture<'_, bool>;

    fn push_get(&self, run_id: &str, config_id: &str) -> StoreFuture<'_, Option<StoredConfig>>;

    /// The task's configurations, oldest first.
    fn push_list(&self, run_id: &str) -> StoreFuture<'_, Vec<StoredConfig>>;

    /// Removes a configuration of this task, its secret and its pending deliveries.
    /// Absent is fine (delete is idempotent); another task's config is never touched.
    fn push_delete(&self, run_id: &str, config_id: &str) -> StoreFuture<'_, bool>;

    /// Runs with at least one configuration still open.
    fn push_runs(&self) -> StoreFuture<'_, Vec<String>>;

    /// Whether a configuration registered through another process sharing this store may
    /// exist: the push watcher asks before it reads a task's configurations on a commit.
    /// A store only this process writes is never asked (the watcher knows its own
    /// registrations). `true`, the safe answer, unless the store hears of every
    /// registration: PostgreSQL answers `false` until one is announced to it.
    fn push_configs_possible(&self) -> bool {
        true
    }

    /// Enqueues a push of `state` for every open configuration of the run that has not
    /// pushed that state last; `last` closes them to further pushes. `observed_seq` is the
    /// run's last event sequence when `state` was read: a configuration that already
    /// pushed a later observation refuses an older one, so a replica that read the run
    /// just before another replica's newer push cannot push a stale state after it.
    /// Returns how many deliveries were enqueued.
    fn push_enqueue(
        &self,
        run_id: &str,
        state: &str,
        body: &str,
        last: bool,
        observed_seq: i64,
        now_ms: i64,
    ) -> StoreFuture<'_, usize>;

    /// Due deliveries, at most one per configuration (its oldest), so one receiver sees
    /// a task's states in order. On a shared database the deliveries returned are claimed
    /// for a while, so each attempt is made by one replica.
    fn push_due(&self, now_ms: i64, limit: usize) -> StoreFuture<'_, Vec<Delivery>>;

    /// When the next pending delivery is due, if any.
    fn push_next_due_ms(&self) -> StoreFuture<'_, Option<i64>>;

    /// The secret material of a configuration.
    fn push_secret(&self, run_id: &str, config_id: &str) -> StoreFuture<'_, Option<Secret>>;

    fn push_retry_later(
        &self,
        delivery_id: &str,
        attempts: u32,
        next_ms: i64,
    ) -> StoreFuture<'_, ()>;

    /// Settles a delivery that succeeded; a `last` one discards its configuration.
    fn push_delivered(&self, delivery: &Delivery) -> StoreFuture<'_, ()>;

    /// Settles an exhausted delivery as a dead letter; a `last` one discards its
    /// configuration.
    fn push_dead_letter(
        &self,
        delivery: &Delivery,
        attempts: u32,
        reason: &str,
        now_ms: i64,
    ) -> StoreFuture<'_, ()>;

    fn push_dead_letters(&self) -> StoreFuture<'_, Vec<DeadLetter>>;

    // ---- MCP: 2025-11-25 sessions and single-use claims ----

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

    /// Records `key` in `scope` once: true for the first caller, false for every later
    /// one (single-use tokens such as MCP `requestState`). The record may be forgotten
    /// after `expires_ms`.
    fn claim_once(&self, scope: &str, key: &str, expires_ms: i64) -> StoreFuture<'_, bool>;
}
