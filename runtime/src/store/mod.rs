//! Persistence, split by concern behind two small traits every layer above talks to:
//!
//! - [`RunStore`] (`runs.rs`): runs, their event logs and interrupts, idempotency keys,
//!   leases, host events, shared secrets, and the wake-ups that announce their commits;
//! - [`InteropStore`] (`interop.rs`): what A2A and MCP keep beside the runs — A2A
//!   contexts and history, push configurations, their secrets, the push outbox and dead
//!   letters, MCP sessions, single-use claims (MCP `requestState`).
//!
//! Both are object-safe (`Arc<dyn ...>`); each backend is one struct implementing both on
//! one database: [`SqliteStore`] (one process, one file in the data dir) and [`PgStore`]
//! (any number of replicas on one PostgreSQL database). Both run the SQL of `sql.rs`
//! (column lists, row mapping, the statements both engines read) and the migrations of
//! `migrations/` (`migrate.rs`), so a column is added in one place. SQL and transactions
//! never leak above this module. A status is the generated `RunStatus`, parsed once where
//! a row is read.

mod interop;
pub mod latency;
mod migrate;
mod postgres;
mod runs;
#[doc(hidden)]
pub mod scratch;
mod sql;
mod sqlite;
mod wakeups;

#[cfg(test)]
mod interop_suite;
#[cfg(test)]
mod suite;

pub use interop::*;
pub use postgres::PgStore;
pub use runs::*;
pub use sqlite::SqliteStore;
pub use sqlite::backup::{Written as BackupWritten, backup as backup_sqlite};
pub use wakeups::{Subscription, Topic, Wake, WakeHub};

pub use crate::status::RunStatus;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

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
    /// A fault the database recovers from by itself or once an operator steps in: a lost
    /// connection, a pool timeout, a full disk, a busy or locked database. Nothing of the
    /// call was applied; the edges answer it `503` with `Retry-After`, never `500`.
    #[error("the database is unavailable: {0}")]
    Unavailable(String),
    /// The SQLite data dir is held by another process (it was not opened).
    #[error("{0}")]
    DataDirInUse(String),
}

impl From<rusqlite::Error> for StoreError {
    fn from(e: rusqlite::Error) -> Self {
        use rusqlite::ErrorCode as C;
        match &e {
            // Busy or locked (another writer, a checkpoint), full (the disk or the file's
            // page limit), an I/O error (a disk that went away), a file that cannot be
            // opened now: none is about the call itself, each may pass.
            rusqlite::Error::SqliteFailure(f, _)
                if matches!(
                    f.code,
                    C::DatabaseBusy
                        | C::DatabaseLocked
                        | C::DiskFull
                        | C::SystemIoFailure
                        | C::CannotOpen
                ) =>
            {
                StoreError::Unavailable(e.to_string())
            }
            _ => StoreError::Database(e.to_string()),
        }
    }
}

impl StoreError {
    /// Whether the call may succeed if made again later (see [`StoreError::Unavailable`]).
    pub fn is_transient(&self) -> bool {
        matches!(self, StoreError::Unavailable(_))
    }
}

/// The outcome of a store's last write, for [`RunStore::write_fault`].
#[derive(Default)]
pub(crate) struct WriteHealth(std::sync::Mutex<Option<String>>);

impl WriteHealth {
    /// Notes how a write ended: a transient fault is remembered, anything else (a
    /// success, or a refusal the database answered) clears it.
    pub(crate) fn note<T>(&self, outcome: &Result<T, StoreError>) {
        let fault = match outcome {
            Err(e) if e.is_transient() => Some(e.to_string()),
            _ => None,
        };
        if let Ok(mut last) = self.0.lock()
            && *last != fault
        {
            match &fault {
                Some(e) => tracing::warn!(error = %e, "store writes are failing"),
                None => tracing::info!("store writes succeed again"),
            }
            *last = fault;
        }
    }

    pub(crate) fn fault(&self) -> Option<String> {
        self.0.lock().ok().and_then(|f| f.clone())
    }
}

/// A stored status, or the error that says which run holds a status this host does not
/// know (a newer host's, or a damaged row): never guessed at.
pub(crate) fn parse_status(run_id: &str, raw: &str) -> Result<RunStatus, StoreError> {
    raw.parse()
        .map_err(|_| StoreError::Database(format!("run `{run_id}` has the unknown status `{raw}`")))
}

/// The newest migration this host knows: a database that has applied it is ready for it.
pub fn latest_migration() -> i64 {
    migrate::MIGRATIONS.last().map_or(0, |m| m.version)
}

/// Counts an operator watches (`/metrics`), read from the database in one call.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StoreGauges {
    /// Runs by status (statuses with no run are absent).
    pub runs_by_status: Vec<(RunStatus, i64)>,
    /// A2A push deliveries not yet delivered or dead-lettered (due or waiting to retry).
    pub push_pending: i64,
    /// Push deliveries given up on.
    pub push_dead_letters: i64,
}

/// Both stores of one backend, on one database.
#[derive(Clone)]
pub struct Stores {
    pub runs: Arc<dyn RunStore>,
    pub interop: Arc<dyn InteropStore>,
}

impl Stores {
    /// One backend's store behind both traits.
    pub fn of<S: RunStore + InteropStore + 'static>(store: S) -> Stores {
        let store = Arc::new(store);
        Stores {
            runs: store.clone(),
            interop: store,
        }
    }

    /// SQLite in `data_dir` unless `database` names a PostgreSQL database.
    pub async fn open(data_dir: &Path, database: Option<&str>) -> Result<Stores, StoreError> {
        match database {
            None => Ok(Stores::of(SqliteStore::open(data_dir)?)),
            Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                Ok(Stores::of(PgStore::connect(url).await?))
            }
            Some(_) => Err(StoreError::Database(
                "--database takes a postgres:// URL (without it, runs are kept in SQLite in the data dir)".into(),
            )),
        }
    }
}
