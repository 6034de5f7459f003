//! Where push configurations, their secrets, the delivery outbox and dead letters live.
//!
//! [`PushStore`] is the whole interface the push code uses; `pg_store` implements it on
//! PostgreSQL for replicas sharing one database, and `suite` runs one set of tests on
//! both. The SQLite implementation keeps four tables in the A2A side file
//! (`a2a.sqlite`), none of them the task rows: a configuration names its secret by an
//! opaque reference, and the secret row is the only place a token or credential is
//! written (deleted with the configuration, or after the task's final push).

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use rusqlite::{Connection, OptionalExtension, params};

use super::super::tasks::TaskStoreError;

pub type PushFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, TaskStoreError>> + Send + 'a>>;

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

/// Persistence of push configurations and deliveries.
pub trait PushStore: Send + Sync {
    /// Stores a configuration (replacing one with the same task and id, and its secret).
    fn put(&self, config: StoredConfig, secret: Secret) -> PushFuture<'_, ()>;
    fn get(&self, run_id: &str, config_id: &str) -> PushFuture<'_, Option<StoredConfig>>;
    /// The task's configurations, oldest first.
    fn list(&self, run_id: &str) -> PushFuture<'_, Vec<StoredConfig>>;
    /// Removes a configuration of this task, its secret and its pending deliveries.
    /// Absent is fine (delete is idempotent); another task's config is never touched.
    fn delete(&self, run_id: &str, config_id: &str) -> PushFuture<'_, bool>;
    /// Runs with at least one configuration still open.
    fn runs_with_configs(&self) -> PushFuture<'_, Vec<String>>;
    /// Enqueues a push of `state` for every open configuration of the run that has not
    /// pushed that state last; `last` closes them to further pushes. `observed_seq` is the
    /// run's last event sequence when `state` was read: a configuration that already
    /// pushed a later observation refuses an older one, so a replica that read the run
    /// just before another replica's newer push cannot push a stale state after it.
    /// Returns how many deliveries were enqueued.
    fn enqueue_change(
        &self,
        run_id: &str,
        state: &str,
        body: &str,
        last: bool,
        observed_seq: i64,
        now_ms: i64,
    ) -> PushFuture<'_, usize>;
    /// Due deliveries, at most one per configuration (its oldest), so one receiver sees
    /// a task's states in order.
    fn due(&self, now_ms: i64, limit: usize) -> PushFuture<'_, Vec<Delivery>>;
    /// When the next pending delivery is due, if any.
    fn next_due_ms(&self) -> PushFuture<'_, Option<i64>>;
    fn secret(&self, run_id: &str, config_id: &str) -> PushFuture<'_, Option<Secret>>;
    fn retry_later(&self, delivery_id: &str, attempts: u32, next_ms: i64) -> PushFuture<'_, ()>;
    /// Settles a delivery that succeeded; a `last` one discards its configuration.
    fn delivered(&self, delivery: &Delivery) -> PushFuture<'_, ()>;
    /// Settles an exhausted delivery as a dead letter; a `last` one discards its
    /// configuration.
    fn dead_letter(
        &self,
        delivery: &Delivery,
        attempts: u32,
        reason: &str,
        now_ms: i64,
    ) -> PushFuture<'_, ()>;
    fn dead_letters(&self) -> PushFuture<'_, Vec<DeadLetter>>;
}

const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS push_configs (
    run_id TEXT NOT NULL,
    config_id TEXT NOT NULL,
    url TEXT NOT NULL,
    scheme TEXT,
    secret_ref TEXT NOT NULL,
    last_state TEXT,
    last_seq INTEGER,
    closed INTEGER NOT NULL DEFAULT 0,
    created_ms INTEGER NOT NULL,
    PRIMARY KEY (run_id, config_id)
);
CREATE TABLE IF NOT EXISTS push_secrets (
    secret_ref TEXT PRIMARY KEY,
    token TEXT,
    credentials TEXT
);
CREATE TABLE IF NOT EXISTS push_outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    delivery_id TEXT NOT NULL UNIQUE,
    run_id TEXT NOT NULL,
    config_id TEXT NOT NULL,
    state TEXT NOT NULL,
    body TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_ms INTEGER NOT NULL,
    last INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS push_dead_letters (
    delivery_id TEXT PRIMARY KEY,
    run_id TEXT NOT NULL,
    config_id TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL,
    reason TEXT NOT NULL,
    at_ms INTEGER NOT NULL
);
"#;

/// [`PushStore`] on SQLite.
#[derive(Clone)]
pub struct SqlitePushStore {
    conn: Arc<Mutex<Connection>>,
}

fn prepare(conn: &Connection) -> Result<(), TaskStoreError> {
    // Deleted secrets are overwritten in the file, not merely unlinked from the b-tree.
    conn.pragma_update(None, "secure_delete", "ON")?;
    conn.execute_batch(SCHEMA)?;
    // Files made before `last_seq` existed gain it (NULL: no observation yet).
    let has_last_seq: bool = conn.query_row(
        "SELECT COUNT(*) > 0 FROM pragma_table_info('push_configs') WHERE name = 'last_seq'",
        [],
        |r| r.get(0),
    )?;
    if !has_last_seq {
        conn.execute_batch("ALTER TABLE push_configs ADD COLUMN last_seq INTEGER")?;
    }
    Ok(())
}

impl SqlitePushStore {
    pub fn open(path: &Path) -> Result<SqlitePushStore, TaskStoreError> {
        let conn = Connection::open(path)?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.busy_timeout(std::time::Duration::from_secs(5))?;
        prepare(&conn)?;
        Ok(SqlitePushStore {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    pub fn in_memory() -> Result<SqlitePushStore, TaskStoreError> {
        let conn = Connection::open_in_memory()?;
        prepare(&conn)?;
        Ok(SqlitePushStore {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    fn with<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, TaskStoreError> + Send + 'static,
    ) -> PushFuture<'_, T> {
        let conn = self.conn.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let mut guard = conn.lock().map_err(|_| TaskStoreError::Poisoned)?;
                f(&mut guard)
            })
            .await
            .map_err(|_| TaskStoreError::Join)?
        })
    }
}

fn config_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<StoredConfig> {
    Ok(StoredConfig {
        run_id: r.get(0)?,
        config_id: r.get(1)?,
        url: r.get(2)?,
        scheme: r.get(3)?,
        created_ms: r.get(4)?,
    })
}

const CONFIG_COLUMNS: &str = "run_id, config_id, url, scheme, created_ms";

/// Removes a configuration with its secret and its pending deliveries.
fn discard(
    tx: &rusqlite::Transaction<'_>,
    run_id: &str,
    config_id: &str,
) -> rusqlite::Result<bool> {
    tx.execute(
        "DELETE FROM push_secrets WHERE secret_ref IN (SELECT secret_ref FROM push_configs WHERE run_id = ?1 AND config_id = ?2)",
        params![run_id, config_id],
    )?;
    tx.execute(
        "DELETE FROM push_outbox WHERE run_id = ?1 AND config_id = ?2",
        params![run_id, config_id],
    )?;
    Ok(tx.execute(
        "DELETE FROM push_configs WHERE run_id = ?1 AND config_id = ?2",
        params![run_id, config_id],
    )? > 0)
}

impl PushStore for SqlitePushStore {
    fn put(&self, config: StoredConfig, secret: Secret) -> PushFuture<'_, ()> {
        self.with(move |c| {
            let tx = c.transaction()?;
            discard(&tx, &config.run_id, &config.config_id)?;
            let secret_ref = format!("sec-{}", crate::ids::mint_opaque());
            tx.execute(
                "INSERT INTO push_secrets (secret_ref, token, credentials) VALUES (?1, ?2, ?3)",
                params![secret_ref, secret.token, secret.credentials],
            )?;
            tx.execute(
                "INSERT INTO push_configs (run_id, config_id, url, scheme, secret_ref, created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![config.run_id, config.config_id, config.url, config.scheme, secret_ref, config.created_ms],
            )?;
            tx.commit()?;
            Ok(())
        })
    }

    fn get(&self, run_id: &str, config_id: &str) -> PushFuture<'_, Option<StoredConfig>> {
        let (run_id, config_id) = (run_id.to_owned(), config_id.to_owned());
        self.with(move |c| {
            Ok(c.query_row(
                &format!(
                    "SELECT {CONFIG_COLUMNS} FROM push_configs WHERE run_id = ?1 AND config_id = ?2"
                ),
                params![run_id, config_id],
                config_row,
            )
            .optional()?)
        })
    }

    fn list(&self, run_id: &str) -> PushFuture<'_, Vec<StoredConfig>> {
        let run_id = run_id.to_owned();
        self.with(move |c| {
            let mut stmt = c.prepare(&format!(
                "SELECT {CONFIG_COLUMNS} FROM push_configs WHERE run_id = ?1 ORDER BY created_ms, config_id"
            ))?;
            Ok(stmt.query_map(params![run_id], config_row)?.collect::<Result<_, _>>()?)
        })
    }

    fn delete(&self, run_id: &str, config_id: &str) -> PushFuture<'_, bool> {
        let (run_id, config_id) = (run_id.to_owned(), config_id.to_owned());
        self.with(move |c| {
            let tx = c.transaction()?;
            let removed = discard(&tx, &run_id, &config_id)?;
            tx.commit()?;
            Ok(removed)
        })
    }

    fn runs_with_configs(&self) -> PushFuture<'_, Vec<String>> {
        self.with(|c| {
            let mut stmt = c.prepare(
                "SELECT DISTINCT run_id FROM push_configs WHERE closed = 0 ORDER BY run_id",
            )?;
            Ok(stmt
                .query_map([], |r| r.get(0))?
                .collect::<Result<_, _>>()?)
        })
    }

    fn enqueue_change(
        &self,
        run_id: &str,
        state: &str,
        body: &str,
        last: bool,
        observed_seq: i64,
        now_ms: i64,
    ) -> PushFuture<'_, usize> {
        let (run_id, state, body) = (run_id.to_owned(), state.to_owned(), body.to_owned());
        self.with(move |c| {
            let tx = c.transaction()?;
            let targets: Vec<String> = {
                let mut stmt = tx.prepare(
                    "SELECT config_id FROM push_configs WHERE run_id = ?1 AND closed = 0 AND (last_state IS NULL OR last_state != ?2)
                     AND (last_seq IS NULL OR last_seq <= ?3)",
                )?;
                stmt.query_map(params![run_id, state, observed_seq], |r| r.get(0))?.collect::<Result<_, _>>()?
            };
            for config_id in &targets {
                tx.execute(
                    "INSERT INTO push_outbox (delivery_id, run_id, config_id, state, body, next_ms, last) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    params![format!("pd-{}", crate::ids::mint_opaque()), run_id, config_id, state, body, now_ms, last],
                )?;
                tx.execute(
                    "UPDATE push_configs SET last_state = ?3, closed = ?4, last_seq = ?5 WHERE run_id = ?1 AND config_id = ?2",
                    params![run_id, config_id, state, last, observed_seq],
                )?;
            }
            tx.commit()?;
            Ok(targets.len())
        })
    }

    fn due(&self, now_ms: i64, limit: usize) -> PushFuture<'_, Vec<Delivery>> {
        self.with(move |c| {
            let mut stmt = c.prepare(
                "SELECT delivery_id, run_id, config_id, state, body, attempts, last FROM push_outbox o
                 WHERE next_ms <= ?1
                   AND seq = (SELECT MIN(seq) FROM push_outbox p WHERE p.run_id = o.run_id AND p.config_id = o.config_id)
                 ORDER BY next_ms, seq LIMIT ?2",
            )?;
            Ok(stmt
                .query_map(params![now_ms, limit as i64], |r| {
                    Ok(Delivery {
                        delivery_id: r.get(0)?,
                        run_id: r.get(1)?,
                        config_id: r.get(2)?,
                        state: r.get(3)?,
                        body: r.get(4)?,
                        attempts: r.get(5)?,
                        last: r.get(6)?,
                    })
                })?
                .collect::<Result<_, _>>()?)
        })
    }

    fn next_due_ms(&self) -> PushFuture<'_, Option<i64>> {
        self.with(|c| Ok(c.query_row("SELECT MIN(next_ms) FROM push_outbox", [], |r| r.get(0))?))
    }

    fn secret(&self, run_id: &str, config_id: &str) -> PushFuture<'_, Option<Secret>> {
        let (run_id, config_id) = (run_id.to_owned(), config_id.to_owned());
        self.with(move |c| {
            Ok(c.query_row(
                "SELECT s.token, s.credentials FROM push_configs p JOIN push_secrets s ON s.secret_ref = p.secret_ref
                 WHERE p.run_id = ?1 AND p.config_id = ?2",
                params![run_id, config_id],
                |r| Ok(Secret { token: r.get(0)?, credentials: r.get(1)? }),
            )
            .optional()?)
        })
    }

    fn retry_later(&self, delivery_id: &str, attempts: u32, next_ms: i64) -> PushFuture<'_, ()> {
        let delivery_id = delivery_id.to_owned();
        self.with(move |c| {
            c.execute(
                "UPDATE push_outbox SET attempts = ?2, next_ms = ?3 WHERE delivery_id = ?1",
                params![delivery_id, attempts, next_ms],
            )?;
            Ok(())
        })
    }

    fn delivered(&self, delivery: &Delivery) -> PushFuture<'_, ()> {
        let d = delivery.clone();
        self.with(move |c| {
            let tx = c.transaction()?;
            tx.execute(
                "DELETE FROM push_outbox WHERE delivery_id = ?1",
                params![d.delivery_id],
            )?;
            if d.last {
                discard(&tx, &d.run_id, &d.config_id)?;
            }
            tx.commit()?;
            Ok(())
        })
    }

    fn dead_letter(
        &self,
        delivery: &Delivery,
        attempts: u32,
        reason: &str,
        now_ms: i64,
    ) -> PushFuture<'_, ()> {
        let (d, reason) = (delivery.clone(), reason.to_owned());
        self.with(move |c| {
            let tx = c.transaction()?;
            tx.execute("DELETE FROM push_outbox WHERE delivery_id = ?1", params![d.delivery_id])?;
            tx.execute(
                "INSERT OR REPLACE INTO push_dead_letters (delivery_id, run_id, config_id, state, attempts, reason, at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![d.delivery_id, d.run_id, d.config_id, d.state, attempts, reason, now_ms],
            )?;
            if d.last {
                discard(&tx, &d.run_id, &d.config_id)?;
            }
            tx.commit()?;
            Ok(())
        })
    }

    fn dead_letters(&self) -> PushFuture<'_, Vec<DeadLetter>> {
        self.with(|c| {
            let mut stmt = c.prepare(
                "SELECT delivery_id, run_id, config_id, state, attempts, reason, at_ms FROM push_dead_letters ORDER BY at_ms, delivery_id",
            )?;
            Ok(stmt
                .query_map([], |r| {
                    Ok(DeadLetter {
                        delivery_id: r.get(0)?,
                        run_id: r.get(1)?,
                        config_id: r.get(2)?,
                        state: r.get(3)?,
                        attempts: r.get(4)?,
                        reason: r.get(5)?,
                        at_ms: r.get(6)?,
                    })
                })?
                .collect::<Result<_, _>>()?)
        })
    }
}
