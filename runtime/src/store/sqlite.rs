//! The embedded default store: one SQLite file in WAL mode, one writer connection and a
//! few readers, every call on a blocking thread.

use super::*;
use crate::clock::now_ms;
use crate::status::Lifecycle;
use rusqlite::{Connection, OptionalExtension, Row, TransactionBehavior, params};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

mod schema;

const READERS: usize = 3;

struct Inner {
    writer: Mutex<Connection>,
    readers: Vec<Mutex<Connection>>,
    next_reader: AtomicUsize,
    wakeups: Arc<dyn Wakeups>,
}

/// SQLite behind the [`Store`] trait.
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

fn open(path: &Path) -> Result<Connection, StoreError> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    // In WAL mode NORMAL keeps every committed transaction through a process crash or
    // SIGKILL (the WAL is written before commit returns); only an OS crash or power loss
    // can drop the last transactions. FULL would fsync each commit, several per run.
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    Ok(conn)
}

impl SqliteStore {
    /// Opens (creating if needed) `dir/openwop.sqlite3`.
    pub fn open(dir: &Path, wakeups: Arc<dyn Wakeups>) -> Result<Self, StoreError> {
        std::fs::create_dir_all(dir).map_err(|e| {
            StoreError::Database(format!("cannot create data dir {}: {e}", dir.display()))
        })?;
        let path = dir.join("openwop.sqlite3");
        let mut writer = open(&path)?;
        schema::migrate(&mut writer)?;
        let mut readers = Vec::with_capacity(READERS);
        for _ in 0..READERS {
            readers.push(Mutex::new(open(&path)?));
        }
        Ok(Self {
            inner: Arc::new(Inner {
                writer: Mutex::new(writer),
                readers,
                next_reader: AtomicUsize::new(0),
                wakeups,
            }),
        })
    }

    fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> StoreFuture<'static, T> {
        let inner = self.inner.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let mut conn = inner
                    .writer
                    .lock()
                    .map_err(|_| StoreError::Database("writer lock poisoned".into()))?;
                f(&mut conn)
            })
            .await
            .map_err(|e| StoreError::Database(format!("store task failed: {e}")))?
        })
    }

    fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> StoreFuture<'static, T> {
        let inner = self.inner.clone();
        Box::pin(async move {
            tokio::task::spawn_blocking(move || {
                let i = inner.next_reader.fetch_add(1, Ordering::Relaxed) % inner.readers.len();
                let conn = inner.readers[i]
                    .lock()
                    .map_err(|_| StoreError::Database("reader lock poisoned".into()))?;
                f(&conn)
            })
            .await
            .map_err(|e| StoreError::Database(format!("store task failed: {e}")))?
        })
    }
}

fn json_col(row: &Row<'_>, idx: &str) -> rusqlite::Result<Value> {
    let text: String = row.get(idx)?;
    serde_json::from_str(&text).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
    })
}

fn opt_json_col(row: &Row<'_>, idx: &str) -> rusqlite::Result<Option<Value>> {
    let text: Option<String> = row.get(idx)?;
    text.map(|t| serde_json::from_str(&t))
        .transpose()
        .map_err(|e| {
            rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
        })
}

/// The status column, parsed once here; an unknown one fails the read, naming the run.
fn status_col(row: &Row<'_>) -> rusqlite::Result<RunStatus> {
    let raw: String = row.get("status")?;
    let run_id: String = row.get("run_id")?;
    parse_status(&run_id, &raw).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(0, rusqlite::types::Type::Text, Box::new(e))
    })
}

const RUN_COLS: &str = "list_order, run_id, tenant, workflow_id, status, owner, transport, inputs, state, outputs, error, node_index, wait_until, created_ms, updated_ms, last_sequence";

fn run_row(row: &Row<'_>) -> rusqlite::Result<RunRecord> {
    Ok(RunRecord {
        list_order: row.get("list_order")?,
        run_id: row.get("run_id")?,
        tenant: row.get("tenant")?,
        workflow_id: row.get("workflow_id")?,
        status: status_col(row)?,
        owner: json_col(row, "owner")?,
        transport: row.get("transport")?,
        inputs: json_col(row, "inputs")?,
        state: json_col(row, "state")?,
        outputs: opt_json_col(row, "outputs")?,
        error: opt_json_col(row, "error")?,
        node_index: row.get("node_index")?,
        wait_until: row.get("wait_until")?,
        created_ms: row.get("created_ms")?,
        updated_ms: row.get("updated_ms")?,
        last_sequence: row.get("last_sequence")?,
    })
}

fn event_row(row: &Row<'_>) -> rusqlite::Result<EventRecord> {
    Ok(EventRecord {
        run_id: row.get("run_id")?,
        sequence: row.get("sequence")?,
        event_id: row.get("event_id")?,
        event_type: row.get("type")?,
        node_id: row.get("node_id")?,
        payload: json_col(row, "payload")?,
        timestamp_ms: row.get("ts_ms")?,
    })
}

fn interrupt_row(row: &Row<'_>) -> rusqlite::Result<InterruptRecord> {
    Ok(InterruptRecord {
        run_id: row.get("run_id")?,
        node_id: row.get("node_id")?,
        interrupt_id: row.get("interrupt_id")?,
        kind: row.get("kind")?,
        data: json_col(row, "data")?,
        state: row.get("state")?,
        resume_value: opt_json_col(row, "resume_value")?,
    })
}

fn host_row(row: &Row<'_>) -> rusqlite::Result<HostEventRecord> {
    Ok(HostEventRecord {
        seq: row.get("seq")?,
        tenant: row.get("tenant")?,
        event_id: row.get("event_id")?,
        event_type: row.get("type")?,
        delivery: row.get("delivery")?,
        workspace_id: row.get("workspace_id")?,
        payload: json_col(row, "payload")?,
        timestamp_ms: row.get("ts_ms")?,
    })
}

fn load_run(conn: &Connection, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
    Ok(conn
        .query_row(
            &format!("SELECT {RUN_COLS} FROM runs WHERE run_id = ?1"),
            [run_id],
            run_row,
        )
        .optional()?)
}

/// Applies a patch and appends events inside an open transaction.
fn apply(
    tx: &rusqlite::Transaction<'_>,
    run: &RunRecord,
    patch: RunPatch,
    events: Vec<NewEvent>,
) -> Result<Advanced, StoreError> {
    let now = now_ms();
    let mut stored = Vec::with_capacity(events.len());
    let mut seq = run.last_sequence;
    for ev in events {
        seq += 1;
        let rec = EventRecord {
            run_id: run.run_id.clone(),
            sequence: seq,
            event_id: crate::ids::mint_event_id(),
            event_type: ev.event_type,
            node_id: ev.node_id,
            payload: ev.payload,
            timestamp_ms: now,
        };
        tx.execute(
            "INSERT INTO events (run_id, sequence, event_id, type, node_id, payload, ts_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![rec.run_id, rec.sequence, rec.event_id, rec.event_type, rec.node_id, rec.payload.to_string(), rec.timestamp_ms],
        )?;
        stored.push(rec);
    }
    if patch.close_interrupts {
        tx.execute(
            "UPDATE interrupts SET state = 'closed' WHERE run_id = ?1 AND state = 'open'",
            [&run.run_id],
        )?;
    }
    if let Some(i) = &patch.open_interrupt {
        tx.execute(
            "INSERT INTO interrupts (run_id, node_id, interrupt_id, kind, data, state) VALUES (?1, ?2, ?3, ?4, ?5, 'open')",
            params![run.run_id, i.node_id, i.interrupt_id, i.kind, i.data.to_string()],
        )?;
    }
    let next = patch.applied_to(run, seq, now);
    tx.execute(
        "UPDATE runs SET status = ?2, node_index = ?3, wait_until = ?4, state = ?5, outputs = ?6, error = ?7, last_sequence = ?8, updated_ms = ?9 WHERE run_id = ?1",
        params![
            next.run_id,
            next.status.as_str(),
            next.node_index,
            next.wait_until,
            next.state.to_string(),
            next.outputs.as_ref().map(Value::to_string),
            next.error.as_ref().map(Value::to_string),
            next.last_sequence,
            next.updated_ms
        ],
    )?;
    Ok(Advanced {
        run: next,
        events: stored,
    })
}

impl Store for SqliteStore {
    fn create_run(
        &self,
        run: NewRun,
        idempotency: Option<IdempotencyClaim>,
    ) -> StoreFuture<'_, Created> {
        self.write(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            if let Some(claim) = &idempotency {
                let held: Option<(String, String)> = tx
                    .query_row(
                        "SELECT body_hash, run_id FROM idempotency WHERE tenant = ?1 AND principal = ?2 AND key = ?3",
                        params![claim.tenant, claim.principal, claim.key],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .optional()?;
                if let Some((hash, run_id)) = held {
                    if hash != claim.body_hash {
                        return Err(StoreError::IdempotencyMismatch);
                    }
                    let existing = load_run(&tx, &run_id)?.ok_or(StoreError::RunNotFound(run_id))?;
                    return Ok(Created { run: existing, replay: true });
                }
            }
            let now = now_ms();
            tx.execute(
                "INSERT INTO runs (run_id, tenant, workflow_id, status, owner, transport, inputs, state, node_index, created_ms, updated_ms, last_sequence)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?9, 0, ?8, ?8, -1)",
                params![run.run_id, run.tenant, run.workflow_id, run.status.as_str(), run.owner.to_string(), run.transport, run.inputs.to_string(), now, run.state.to_string()],
            )?;
            if let Some(claim) = &idempotency {
                tx.execute(
                    "INSERT INTO idempotency (tenant, principal, key, body_hash, run_id, created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                    params![claim.tenant, claim.principal, claim.key, claim.body_hash, run.run_id, now],
                )?;
            }
            let created = load_run(&tx, &run.run_id)?.ok_or_else(|| StoreError::RunNotFound(run.run_id.clone()))?;
            tx.commit()?;
            Ok(Created { run: created, replay: false })
        })
    }

    fn get_run(&self, run_id: &str) -> StoreFuture<'_, Option<RunRecord>> {
        let run_id = run_id.to_owned();
        self.read(move |conn| load_run(conn, &run_id))
    }

    fn list_runs(&self, q: ListQuery) -> StoreFuture<'_, Vec<RunRecord>> {
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {RUN_COLS} FROM runs WHERE tenant = ?1
                   AND (?2 IS NULL OR workflow_id = ?2)
                   AND (?3 IS NULL OR status = ?3)
                   AND (?4 IS NULL OR list_order < ?4)
                 ORDER BY list_order DESC LIMIT ?5"
            ))?;
            let rows = stmt.query_map(
                params![
                    q.tenant,
                    q.workflow_id,
                    q.status.map(RunStatus::as_str),
                    q.before,
                    q.limit as i64
                ],
                run_row,
            )?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
    }

    fn unfinished_runs(&self) -> StoreFuture<'_, Vec<RunRecord>> {
        self.read(move |conn| {
            let mut stmt =
                conn.prepare(&format!("SELECT {RUN_COLS} FROM runs ORDER BY list_order"))?;
            let rows = stmt.query_map([], run_row)?;
            let mut out = Vec::new();
            for r in rows {
                let r = r?;
                if !r.status.is_terminal() {
                    out.push(r);
                }
            }
            Ok(out)
        })
    }

    fn advance(
        &self,
        run_id: &str,
        guard: Guard,
        patch: RunPatch,
        events: Vec<NewEvent>,
    ) -> StoreFuture<'_, Advanced> {
        let run_id = run_id.to_owned();
        let wakeups = self.inner.wakeups.clone();
        let fut = self.write(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let run =
                load_run(&tx, &run_id)?.ok_or_else(|| StoreError::RunNotFound(run_id.clone()))?;
            if !guard.admits(run.status) {
                return Err(StoreError::Guard { status: run.status });
            }
            let out = apply(&tx, &run, patch, events)?;
            tx.commit()?;
            Ok(out)
        });
        Box::pin(async move {
            let out = fut.await?;
            wakeups.publish(Wake::Run(out.run.run_id.clone()));
            Ok(out)
        })
    }

    fn resolve_interrupt(
        &self,
        run_id: &str,
        node_id: &str,
        resume_value: Value,
        on_resolve: OnResolve,
    ) -> StoreFuture<'_, Advanced> {
        let run_id = run_id.to_owned();
        let node_id = node_id.to_owned();
        let wakeups = self.inner.wakeups.clone();
        let fut = self.write(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            let changed = tx.execute(
                "UPDATE interrupts SET state = 'resolved', resume_value = ?3 WHERE run_id = ?1 AND node_id = ?2 AND state = 'open'",
                params![run_id, node_id, resume_value.to_string()],
            )?;
            let interrupt = tx
                .query_row("SELECT * FROM interrupts WHERE run_id = ?1 AND node_id = ?2", params![run_id, node_id], interrupt_row)
                .optional()?;
            let Some(interrupt) = interrupt else {
                return Err(StoreError::NoOpenInterrupt);
            };
            if changed == 0 {
                return Err(StoreError::InterruptAlreadyResolved);
            }
            let run = load_run(&tx, &run_id)?.ok_or_else(|| StoreError::RunNotFound(run_id.clone()))?;
            let (patch, events) = on_resolve(&interrupt, &run);
            let out = apply(&tx, &run, patch, events)?;
            tx.commit()?;
            Ok(out)
        });
        Box::pin(async move {
            let out = fut.await?;
            wakeups.publish(Wake::Run(out.run.run_id.clone()));
            Ok(out)
        })
    }

    fn open_interrupt(&self, run_id: &str) -> StoreFuture<'_, Option<InterruptRecord>> {
        let run_id = run_id.to_owned();
        self.read(move |conn| {
            Ok(conn
                .query_row(
                    "SELECT * FROM interrupts WHERE run_id = ?1 AND state = 'open'",
                    [run_id],
                    interrupt_row,
                )
                .optional()?)
        })
    }

    fn events_since(
        &self,
        run_id: &str,
        after: i64,
        limit: usize,
    ) -> StoreFuture<'_, Vec<EventRecord>> {
        let run_id = run_id.to_owned();
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT * FROM events WHERE run_id = ?1 AND sequence > ?2 ORDER BY sequence LIMIT ?3",
            )?;
            let rows = stmt.query_map(params![run_id, after, limit as i64], event_row)?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
    }

    fn append_host_event(&self, event: HostEventRecord) -> StoreFuture<'_, HostEventRecord> {
        let wakeups = self.inner.wakeups.clone();
        if event.delivery != "durable" {
            return Box::pin(async move {
                wakeups.publish(Wake::Host(Box::new(event.clone())));
                Ok(event)
            });
        }
        let fut = self.write(move |conn| {
            conn.execute(
                "INSERT INTO host_events (tenant, event_id, type, delivery, workspace_id, payload, ts_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![event.tenant, event.event_id, event.event_type, event.delivery, event.workspace_id, event.payload.to_string(), event.timestamp_ms],
            )?;
            Ok(HostEventRecord { seq: conn.last_insert_rowid(), ..event })
        });
        Box::pin(async move {
            let stored = fut.await?;
            wakeups.publish(Wake::Host(Box::new(stored.clone())));
            Ok(stored)
        })
    }

    fn host_events(
        &self,
        tenant: &str,
        after: i64,
        limit: usize,
    ) -> StoreFuture<'_, Vec<HostEventRecord>> {
        let tenant = tenant.to_owned();
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT * FROM host_events WHERE tenant = ?1 AND seq > ?2 ORDER BY seq LIMIT ?3",
            )?;
            let rows = stmt.query_map(params![tenant, after, limit as i64], host_row)?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
    }

    fn subscribe(&self) -> tokio::sync::broadcast::Receiver<Wake> {
        self.inner.wakeups.subscribe()
    }

    // One process owns the file, so there is nobody to share a run with.
    fn acquire_lease(&self, _run_id: &str, _owner: &str, _ttl_ms: i64) -> StoreFuture<'_, bool> {
        Box::pin(async { Ok(true) })
    }

    fn release_lease(&self, _run_id: &str, _owner: &str) -> StoreFuture<'_, ()> {
        Box::pin(async { Ok(()) })
    }

    fn unleased_runs(&self, statuses: &'static [RunStatus]) -> StoreFuture<'_, Vec<String>> {
        self.read(move |conn| {
            let mut stmt = conn.prepare("SELECT run_id, status FROM runs ORDER BY list_order")?;
            let rows =
                stmt.query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
            let mut out = Vec::new();
            for r in rows {
                let (id, status) = r?;
                if statuses.iter().any(|s| s.as_str() == status) {
                    out.push(id);
                }
            }
            Ok(out)
        })
    }

    fn claim_once(&self, scope: &str, key: &str, expires_ms: i64) -> StoreFuture<'_, bool> {
        let (scope, key) = (scope.to_owned(), key.to_owned());
        self.write(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.execute(
                "DELETE FROM claims WHERE scope = ?1 AND expires_ms < ?2",
                params![scope, now_ms()],
            )?;
            let n = tx.execute(
                "INSERT OR IGNORE INTO claims (scope, key, expires_ms) VALUES (?1, ?2, ?3)",
                params![scope, key, expires_ms],
            )?;
            tx.commit()?;
            Ok(n == 1)
        })
    }

    fn shared_secret(&self, name: &str, candidate: Vec<u8>) -> StoreFuture<'_, Vec<u8>> {
        let name = name.to_owned();
        self.write(move |conn| {
            conn.execute(
                "INSERT OR IGNORE INTO secrets (name, value) VALUES (?1, ?2)",
                params![name, candidate],
            )?;
            Ok(
                conn.query_row("SELECT value FROM secrets WHERE name = ?1", [name], |r| {
                    r.get(0)
                })?,
            )
        })
    }

    fn a2a_bind_context(&self, run_id: &str, context_id: &str) -> StoreFuture<'_, String> {
        let (run_id, context_id) = (run_id.to_owned(), context_id.to_owned());
        self.write(move |conn| {
            conn.execute(
                "INSERT OR IGNORE INTO a2a_tasks (run_id, context_id) VALUES (?1, ?2)",
                params![run_id, context_id],
            )?;
            Ok(conn.query_row(
                "SELECT context_id FROM a2a_tasks WHERE run_id = ?1",
                [run_id],
                |r| r.get(0),
            )?)
        })
    }

    fn a2a_context_of(&self, run_id: &str) -> StoreFuture<'_, Option<String>> {
        let run_id = run_id.to_owned();
        self.read(move |conn| {
            Ok(conn
                .query_row(
                    "SELECT context_id FROM a2a_tasks WHERE run_id = ?1",
                    [run_id],
                    |r| r.get(0),
                )
                .optional()?)
        })
    }

    fn a2a_append_message(
        &self,
        run_id: &str,
        message_id: &str,
        message: Value,
    ) -> StoreFuture<'_, bool> {
        let run_id = run_id.to_owned();
        // NULLs never collide under UNIQUE, so messages without an id always append.
        let message_id = (!message_id.is_empty()).then(|| message_id.to_owned());
        self.write(move |conn| {
            let n = conn.execute(
                "INSERT OR IGNORE INTO a2a_messages (run_id, seq, message_id, message)
                 VALUES (?1, (SELECT COALESCE(MAX(seq), -1) + 1 FROM a2a_messages WHERE run_id = ?1), ?2, ?3)",
                params![run_id, message_id, message.to_string()],
            )?;
            Ok(n == 1)
        })
    }

    fn a2a_history(&self, run_id: &str) -> StoreFuture<'_, Vec<Value>> {
        let run_id = run_id.to_owned();
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT message FROM a2a_messages WHERE run_id = ?1 ORDER BY seq",
            )?;
            let rows = stmt.query_map([run_id], |r| r.get::<_, String>(0))?;
            let mut out = Vec::new();
            for text in rows {
                out.push(serde_json::from_str(&text?).map_err(|e| {
                    StoreError::Database(format!("a stored A2A message is not JSON: {e}"))
                })?);
            }
            Ok(out)
        })
    }

    fn open_session(
        &self,
        id: &str,
        principal_digest: &str,
        version: &str,
        expires_ms: i64,
    ) -> StoreFuture<'_, ()> {
        let (id, principal_digest, version) = (
            id.to_owned(),
            principal_digest.to_owned(),
            version.to_owned(),
        );
        self.write(move |conn| {
            let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.execute(
                "DELETE FROM mcp_sessions WHERE expires_ms < ?1",
                params![now_ms()],
            )?;
            tx.execute(
                "INSERT INTO mcp_sessions (id, principal_digest, version, expires_ms) VALUES (?1, ?2, ?3, ?4)",
                params![id, principal_digest, version, expires_ms],
            )?;
            tx.commit()?;
            Ok(())
        })
    }

    fn session(&self, id: &str) -> StoreFuture<'_, Option<SessionRecord>> {
        let id = id.to_owned();
        self.read(move |conn| {
            Ok(conn
                .prepare_cached(
                    "SELECT principal_digest, version, expires_ms FROM mcp_sessions WHERE id = ?1 AND expires_ms >= ?2",
                )?
                .query_row(params![id, now_ms()], |r| {
                    Ok(SessionRecord {
                        principal_digest: r.get(0)?,
                        version: r.get(1)?,
                        expires_ms: r.get(2)?,
                    })
                })
                .optional()?)
        })
    }

    fn touch_session(&self, id: &str, expires_ms: i64) -> StoreFuture<'_, bool> {
        let id = id.to_owned();
        self.write(move |conn| {
            let n = conn.execute(
                "UPDATE mcp_sessions SET expires_ms = max(expires_ms, ?2) WHERE id = ?1 AND expires_ms >= ?3",
                params![id, expires_ms, now_ms()],
            )?;
            Ok(n == 1)
        })
    }

    fn close_session(&self, id: &str, principal_digest: &str) -> StoreFuture<'_, bool> {
        let (id, principal_digest) = (id.to_owned(), principal_digest.to_owned());
        self.write(move |conn| {
            let n = conn.execute(
                "DELETE FROM mcp_sessions WHERE id = ?1 AND principal_digest = ?2 AND expires_ms >= ?3",
                params![id, principal_digest, now_ms()],
            )?;
            Ok(n == 1)
        })
    }
}
