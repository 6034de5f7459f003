//! The shared store: PostgreSQL, so several host replicas can serve one set of runs.
//!
//! Every change of a run locks its row first (`SELECT ... FOR UPDATE`), so sequences stay
//! contiguous and two writers on two replicas serialise exactly as two tasks in one
//! process do. Commits announce themselves with NOTIFY; a LISTEN connection per store
//! turns them into the same [`Wake`]s the SQLite store publishes in process.

mod listen;
mod migrate;

use super::*;
use crate::clock::now_ms;
use deadpool_postgres::{GenericClient, Manager, ManagerConfig, Pool, RecyclingMethod};
use serde_json::json;
use std::sync::Arc;
use tokio::sync::broadcast;
use tokio_postgres::{NoTls, Row};

/// Connections the pool keeps; each request holds one for a transaction or a read.
const POOL_SIZE: usize = 16;

/// Milliseconds since the epoch on the database's clock, so replicas with skewed clocks
/// still agree on when a lease ran out.
const DB_NOW_MS: &str = "(extract(epoch from clock_timestamp()) * 1000)::bigint";

/// Advisory lock class for serialising durable host events of one tenant, so their
/// `seq` commits in order and a reader's cursor never passes a gap that fills later.
const HOST_EVENTS_LOCK: i32 = 0x6f77_0001;

struct Inner {
    pool: Pool,
    channel: String,
    wakes: broadcast::Sender<Wake>,
    listener: tokio::task::JoinHandle<()>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.listener.abort();
    }
}

/// PostgreSQL behind the [`Store`] trait.
#[derive(Clone)]
pub struct PgStore {
    inner: Arc<Inner>,
}

fn db_error(e: tokio_postgres::Error) -> StoreError {
    match e.as_db_error() {
        Some(db) => StoreError::Database(format!("{}: {}", db.code().code(), db.message())),
        None => match std::error::Error::source(&e) {
            Some(cause) => StoreError::Database(format!("{e}: {cause}")),
            None => StoreError::Database(e.to_string()),
        },
    }
}

impl From<tokio_postgres::Error> for StoreError {
    fn from(e: tokio_postgres::Error) -> Self {
        db_error(e)
    }
}

impl From<deadpool_postgres::PoolError> for StoreError {
    fn from(e: deadpool_postgres::PoolError) -> Self {
        match e {
            deadpool_postgres::PoolError::Backend(e) => db_error(e),
            other => StoreError::Database(format!("no database connection: {other}")),
        }
    }
}

fn json_text(row: &Row, col: &str) -> Result<Value, StoreError> {
    let text: String = row.try_get(col)?;
    serde_json::from_str(&text)
        .map_err(|e| StoreError::Database(format!("column {col} is not JSON: {e}")))
}

fn opt_json_text(row: &Row, col: &str) -> Result<Option<Value>, StoreError> {
    let text: Option<String> = row.try_get(col)?;
    text.map(|t| serde_json::from_str(&t))
        .transpose()
        .map_err(|e| StoreError::Database(format!("column {col} is not JSON: {e}")))
}

fn status_strs(statuses: &[RunStatus]) -> Vec<&'static str> {
    statuses.iter().map(|s| s.as_str()).collect()
}

const RUN_COLS: &str = "list_order, run_id, tenant, workflow_id, status, owner, transport, inputs, state, outputs, error, node_index, wait_until, created_ms, updated_ms, last_sequence";

fn run_row(row: &Row) -> Result<RunRecord, StoreError> {
    Ok(RunRecord {
        list_order: row.try_get("list_order")?,
        run_id: row.try_get("run_id")?,
        tenant: row.try_get("tenant")?,
        workflow_id: row.try_get("workflow_id")?,
        status: parse_status(&row.try_get::<_, String>("run_id")?, row.try_get("status")?)?,
        owner: json_text(row, "owner")?,
        transport: row.try_get("transport")?,
        inputs: json_text(row, "inputs")?,
        state: json_text(row, "state")?,
        outputs: opt_json_text(row, "outputs")?,
        error: opt_json_text(row, "error")?,
        node_index: row.try_get("node_index")?,
        wait_until: row.try_get("wait_until")?,
        created_ms: row.try_get("created_ms")?,
        updated_ms: row.try_get("updated_ms")?,
        last_sequence: row.try_get("last_sequence")?,
    })
}

fn event_row(row: &Row) -> Result<EventRecord, StoreError> {
    Ok(EventRecord {
        run_id: row.try_get("run_id")?,
        sequence: row.try_get("sequence")?,
        event_id: row.try_get("event_id")?,
        event_type: row.try_get("type")?,
        node_id: row.try_get("node_id")?,
        payload: json_text(row, "payload")?,
        timestamp_ms: row.try_get("ts_ms")?,
    })
}

fn interrupt_row(row: &Row) -> Result<InterruptRecord, StoreError> {
    Ok(InterruptRecord {
        run_id: row.try_get("run_id")?,
        node_id: row.try_get("node_id")?,
        interrupt_id: row.try_get("interrupt_id")?,
        kind: row.try_get("kind")?,
        data: json_text(row, "data")?,
        state: row.try_get("state")?,
        resume_value: opt_json_text(row, "resume_value")?,
    })
}

fn host_row(row: &Row) -> Result<HostEventRecord, StoreError> {
    Ok(HostEventRecord {
        seq: row.try_get("seq")?,
        tenant: row.try_get("tenant")?,
        event_id: row.try_get("event_id")?,
        event_type: row.try_get("type")?,
        delivery: row.try_get("delivery")?,
        workspace_id: row.try_get("workspace_id")?,
        payload: json_text(row, "payload")?,
        timestamp_ms: row.try_get("ts_ms")?,
    })
}

async fn load_run<C: GenericClient>(c: &C, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
    let stmt = c
        .prepare_cached(&format!("SELECT {RUN_COLS} FROM runs WHERE run_id = $1"))
        .await?;
    c.query_opt(&stmt, &[&run_id])
        .await?
        .as_ref()
        .map(run_row)
        .transpose()
}

/// Inserts a new run (step 0, no events yet) and returns it as stored.
async fn insert_run<C: GenericClient>(
    c: &C,
    run: &NewRun,
    now: i64,
) -> Result<RunRecord, StoreError> {
    let stmt = c
        .prepare_cached(&format!(
            "INSERT INTO runs (run_id, tenant, workflow_id, status, owner, transport, inputs, state, node_index, created_ms, updated_ms, last_sequence)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $9, 0, $8, $8, -1) RETURNING {RUN_COLS}"
        ))
        .await?;
    let (owner, inputs, state) = (
        run.owner.to_string(),
        run.inputs.to_string(),
        run.state.to_string(),
    );
    let row = c
        .query_one(
            &stmt,
            &[
                &run.run_id,
                &run.tenant,
                &run.workflow_id,
                &run.status.as_str(),
                &owner,
                &run.transport,
                &inputs,
                &now,
                &state,
            ],
        )
        .await?;
    run_row(&row)
}

/// Locks the run's row for the rest of the transaction; also returns who holds its lease.
async fn lock_run<C: GenericClient>(
    c: &C,
    run_id: &str,
) -> Result<Option<(RunRecord, Option<String>)>, StoreError> {
    let stmt = c
        .prepare_cached(&format!(
            "SELECT {RUN_COLS}, lease_owner FROM runs WHERE run_id = $1 FOR UPDATE"
        ))
        .await?;
    match c.query_opt(&stmt, &[&run_id]).await? {
        Some(row) => Ok(Some((run_row(&row)?, row.try_get("lease_owner")?))),
        None => Ok(None),
    }
}

/// Queues a wake-up; PostgreSQL delivers it to every listener when the transaction commits.
async fn notify<C: GenericClient>(c: &C, channel: &str, payload: &str) -> Result<(), StoreError> {
    let stmt = c.prepare_cached("SELECT pg_notify($1, $2)").await?;
    c.query(&stmt, &[&channel, &payload]).await?;
    Ok(())
}

/// Applies a patch and appends events inside an open transaction that holds the run's lock.
async fn apply<C: GenericClient>(
    c: &C,
    channel: &str,
    run: &RunRecord,
    patch: RunPatch,
    events: Vec<NewEvent>,
) -> Result<Advanced, StoreError> {
    let now = now_ms();
    let mut stored = Vec::with_capacity(events.len());
    let mut seq = run.last_sequence;
    for ev in events {
        seq += 1;
        stored.push(EventRecord {
            run_id: run.run_id.clone(),
            sequence: seq,
            event_id: crate::ids::mint_event_id(),
            event_type: ev.event_type,
            node_id: ev.node_id,
            payload: ev.payload,
            timestamp_ms: now,
        });
    }
    if !stored.is_empty() {
        // One statement for all of a step's events: each round trip costs more than a row.
        let insert = c
            .prepare_cached(
                "INSERT INTO events (run_id, sequence, event_id, type, node_id, payload, ts_ms)
                 SELECT $1, s, e, t, n, p, $7 FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[]) AS u(s, e, t, n, p)",
            )
            .await?;
        let sequences: Vec<i64> = stored.iter().map(|e| e.sequence).collect();
        let ids: Vec<&str> = stored.iter().map(|e| e.event_id.as_str()).collect();
        let types: Vec<&str> = stored.iter().map(|e| e.event_type.as_str()).collect();
        let nodes: Vec<Option<&str>> = stored.iter().map(|e| e.node_id.as_deref()).collect();
        let payloads: Vec<String> = stored.iter().map(|e| e.payload.to_string()).collect();
        c.execute(
            &insert,
            &[
                &run.run_id,
                &sequences,
                &ids,
                &types,
                &nodes,
                &payloads,
                &now,
            ],
        )
        .await?;
    }
    if patch.close_interrupts {
        let stmt = c
            .prepare_cached(
                "UPDATE interrupts SET state = 'closed' WHERE run_id = $1 AND state = 'open'",
            )
            .await?;
        c.execute(&stmt, &[&run.run_id]).await?;
    }
    if let Some(i) = &patch.open_interrupt {
        let stmt = c
            .prepare_cached("INSERT INTO interrupts (run_id, node_id, interrupt_id, kind, data, state) VALUES ($1, $2, $3, $4, $5, 'open')")
            .await?;
        c.execute(
            &stmt,
            &[
                &run.run_id,
                &i.node_id,
                &i.interrupt_id,
                &i.kind,
                &i.data.to_string(),
            ],
        )
        .await?;
    }
    let next = patch.applied_to(run, seq, now);
    // The NOTIFY rides on the update: PostgreSQL sends it to every listener at commit.
    let stmt = c
        .prepare_cached(
            "WITH changed AS (
                UPDATE runs SET status = $2, node_index = $3, wait_until = $4, state = $5, outputs = $6, error = $7, last_sequence = $8, updated_ms = $9
                WHERE run_id = $1 RETURNING run_id
             ) SELECT pg_notify($10, $11) FROM changed",
        )
        .await?;
    c.query(
        &stmt,
        &[
            &next.run_id,
            &next.status.as_str(),
            &next.node_index,
            &next.wait_until,
            &next.state.to_string(),
            &next.outputs.as_ref().map(Value::to_string),
            &next.error.as_ref().map(Value::to_string),
            &next.last_sequence,
            &next.updated_ms,
            &channel,
            &listen::run_payload(&next.run_id),
        ],
    )
    .await?;
    Ok(Advanced {
        run: next,
        events: stored,
    })
}

impl PgStore {
    /// Connects to `url` (`postgres://user@host:port/db`), applies pending migrations and
    /// starts listening for other replicas' changes.
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let config: tokio_postgres::Config = url
            .parse()
            .map_err(|e| StoreError::Database(format!("invalid PostgreSQL URL: {e}")))?;
        Self::connect_with(config).await
    }

    /// The connection pool, for tables kept beside the runs' (A2A push) by code outside
    /// this module.
    pub(crate) fn pool(&self) -> Pool {
        self.inner.pool.clone()
    }

    /// As [`PgStore::connect`], from a parsed configuration.
    pub async fn connect_with(config: tokio_postgres::Config) -> Result<Self, StoreError> {
        let manager = Manager::from_config(
            config.clone(),
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(POOL_SIZE)
            .build()
            .map_err(|e| StoreError::Database(format!("cannot build the connection pool: {e}")))?;
        let schema = {
            let mut client = pool.get().await?;
            migrate::run(&mut client).await?;
            let row = client.query_one("SELECT current_schema()", &[]).await?;
            row.try_get::<_, String>(0)?
        };
        // Replicas on one schema share a channel; other schemas (tests) stay apart.
        let channel = listen::channel_for(&schema);
        let wakes = broadcast::channel(1024).0;
        let (ready_tx, ready) = tokio::sync::oneshot::channel();
        let listener = tokio::spawn(listen::run(
            config,
            channel.clone(),
            wakes.clone(),
            ready_tx,
        ));
        // Subscribers from now on hear every later commit, ephemeral host events included.
        let _ = ready.await;
        Ok(Self {
            inner: Arc::new(Inner {
                pool,
                channel,
                wakes,
                listener,
            }),
        })
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        Ok(self.inner.pool.get().await?)
    }
}

impl Store for PgStore {
    fn create_run(
        &self,
        run: NewRun,
        idempotency: Option<IdempotencyClaim>,
    ) -> StoreFuture<'_, Created> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let now = now_ms();
            let Some(claim) = &idempotency else {
                // One statement is its own transaction.
                return Ok(Created {
                    run: insert_run(&client, &run, now).await?,
                    replay: false,
                });
            };
            let tx = client.transaction().await?;
            // The key goes in first: a concurrent request with the same key, on any
            // replica, waits on this row and then sees it, instead of racing to a
            // second run.
            let stmt = tx
                .prepare_cached(
                    "INSERT INTO idempotency (tenant, principal, key, body_hash, run_id, created_ms) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
                )
                .await?;
            let inserted = tx
                .execute(
                    &stmt,
                    &[
                        &claim.tenant,
                        &claim.principal,
                        &claim.key,
                        &claim.body_hash,
                        &run.run_id,
                        &now,
                    ],
                )
                .await?;
            if inserted == 0 {
                let stmt = tx
                    .prepare_cached("SELECT body_hash, run_id FROM idempotency WHERE tenant = $1 AND principal = $2 AND key = $3")
                    .await?;
                let row = tx
                    .query_one(&stmt, &[&claim.tenant, &claim.principal, &claim.key])
                    .await?;
                let (hash, run_id): (String, String) = (row.try_get(0)?, row.try_get(1)?);
                if hash != claim.body_hash {
                    return Err(StoreError::IdempotencyMismatch);
                }
                let existing = load_run(&tx, &run_id)
                    .await?
                    .ok_or(StoreError::RunNotFound(run_id))?;
                return Ok(Created {
                    run: existing,
                    replay: true,
                });
            }
            let created = insert_run(&tx, &run, now).await?;
            tx.commit().await?;
            Ok(Created {
                run: created,
                replay: false,
            })
        })
    }

    fn get_run(&self, run_id: &str) -> StoreFuture<'_, Option<RunRecord>> {
        let run_id = run_id.to_owned();
        Box::pin(async move {
            let client = self.client().await?;
            load_run(&client, &run_id).await
        })
    }

    fn list_runs(&self, q: ListQuery) -> StoreFuture<'_, Vec<RunRecord>> {
        Box::pin(async move {
            let client = self.client().await?;
            let stmt = client
                .prepare_cached(&format!(
                    "SELECT {RUN_COLS} FROM runs WHERE tenant = $1
                       AND ($2::text IS NULL OR workflow_id = $2)
                       AND ($3::text IS NULL OR status = $3)
                       AND ($4::bigint IS NULL OR list_order < $4)
                     ORDER BY list_order DESC LIMIT $5"
                ))
                .await?;
            let limit = q.limit as i64;
            let rows = client
                .query(
                    &stmt,
                    &[
                        &q.tenant,
                        &q.workflow_id,
                        &q.status.map(RunStatus::as_str),
                        &q.before,
                        &limit,
                    ],
                )
                .await?;
            rows.iter().map(run_row).collect()
        })
    }

    fn unfinished_runs(&self) -> StoreFuture<'_, Vec<RunRecord>> {
        let finished = status_strs(&crate::status::TERMINAL);
        Box::pin(async move {
            let client = self.client().await?;
            let stmt = client
                .prepare_cached(&format!(
                    "SELECT {RUN_COLS} FROM runs WHERE status <> ALL($1) ORDER BY list_order"
                ))
                .await?;
            let rows = client.query(&stmt, &[&finished]).await?;
            rows.iter().map(run_row).collect()
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
        Box::pin(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            let (run, holder) = lock_run(&tx, &run_id)
                .await?
                .ok_or_else(|| StoreError::RunNotFound(run_id.clone()))?;
            if let Some(owner) = &patch.lease_owner
                && holder.as_ref() != Some(owner)
            {
                return Err(StoreError::LeaseLost);
            }
            if !guard.admits(run.status) {
                return Err(StoreError::Guard { status: run.status });
            }
            let out = apply(&tx, &self.inner.channel, &run, patch, events).await?;
            tx.commit().await?;
            // The NOTIFY reaches this replica too, but a direct wake saves the round trip.
            let _ = self.inner.wakes.send(Wake::Run(out.run.run_id.clone()));
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
        Box::pin(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            // The run's row first, as every writer does, so a resolve and a cancel never
            // deadlock; the conditional update then lets exactly one resolve win.
            let Some((run, _)) = lock_run(&tx, &run_id).await? else {
                return Err(StoreError::NoOpenInterrupt);
            };
            let stmt = tx
                .prepare_cached(
                    "UPDATE interrupts SET state = 'resolved', resume_value = $3 WHERE run_id = $1 AND node_id = $2 AND state = 'open'",
                )
                .await?;
            let changed = tx
                .execute(&stmt, &[&run_id, &node_id, &resume_value.to_string()])
                .await?;
            let stmt = tx
                .prepare_cached("SELECT * FROM interrupts WHERE run_id = $1 AND node_id = $2")
                .await?;
            let Some(row) = tx.query_opt(&stmt, &[&run_id, &node_id]).await? else {
                return Err(StoreError::NoOpenInterrupt);
            };
            let interrupt = interrupt_row(&row)?;
            if changed == 0 {
                return Err(StoreError::InterruptAlreadyResolved);
            }
            let (patch, events) = on_resolve(&interrupt, &run);
            let out = apply(&tx, &self.inner.channel, &run, patch, events).await?;
            tx.commit().await?;
            let _ = self.inner.wakes.send(Wake::Run(out.run.run_id.clone()));
            Ok(out)
        })
    }

    fn open_interrupt(&self, run_id: &str) -> StoreFuture<'_, Option<InterruptRecord>> {
        let run_id = run_id.to_owned();
        Box::pin(async move {
            let client = self.client().await?;
            let stmt = client
                .prepare_cached("SELECT * FROM interrupts WHERE run_id = $1 AND state = 'open'")
                .await?;
            client
                .query_opt(&stmt, &[&run_id])
                .await?
                .as_ref()
                .map(interrupt_row)
                .transpose()
        })
    }

    fn events_since(
        &self,
        run_id: &str,
        after: i64,
        limit: usize,
    ) -> StoreFuture<'_, Vec<EventRecord>> {
        let run_id = run_id.to_owned();
        Box::pin(async move {
            let client = self.client().await?;
            let stmt = client.prepare_cached("SELECT * FROM events WHERE run_id = $1 AND sequence > $2 ORDER BY sequence LIMIT $3").await?;
            let limit = limit as i64;
            let rows = client.query(&stmt, &[&run_id, &after, &limit]).await?;
            rows.iter().map(event_row).collect()
        })
    }

    fn append_host_event(&self, event: HostEventRecord) -> StoreFuture<'_, HostEventRecord> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            let stored = if event.delivery == "durable" {
                let lock = tx
                    .prepare_cached("SELECT pg_advisory_xact_lock($1, hashtext($2))")
                    .await?;
                tx.query(&lock, &[&HOST_EVENTS_LOCK, &event.tenant]).await?;
                let stmt = tx
                    .prepare_cached(
                        "INSERT INTO host_events (tenant, event_id, type, delivery, workspace_id, payload, ts_ms) VALUES ($1, $2, $3, $4, $5, $6, $7) RETURNING seq",
                    )
                    .await?;
                let row = tx
                    .query_one(
                        &stmt,
                        &[
                            &event.tenant,
                            &event.event_id,
                            &event.event_type,
                            &event.delivery,
                            &event.workspace_id,
                            &event.payload.to_string(),
                            &event.timestamp_ms,
                        ],
                    )
                    .await?;
                HostEventRecord {
                    seq: row.try_get(0)?,
                    ..event
                }
            } else {
                event
            };
            // Ephemeral events exist only in this notification, so they reach every
            // replica's subscribers (this one's included) through LISTEN, exactly once.
            match listen::host_payload(&stored) {
                Some(payload) => notify(&tx, &self.inner.channel, &payload).await?,
                None => {
                    tracing::warn!(event_type = %stored.event_type, "host event too large to announce to other replicas; delivered locally");
                    let _ = self.inner.wakes.send(Wake::Host(Box::new(stored.clone())));
                }
            }
            tx.commit().await?;
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
        Box::pin(async move {
            let client = self.client().await?;
            let stmt = client.prepare_cached("SELECT * FROM host_events WHERE tenant = $1 AND seq > $2 ORDER BY seq LIMIT $3").await?;
            let limit = limit as i64;
            let rows = client.query(&stmt, &[&tenant, &after, &limit]).await?;
            rows.iter().map(host_row).collect()
        })
    }

    fn subscribe(&self) -> broadcast::Receiver<Wake> {
        self.inner.wakes.subscribe()
    }

    fn shared(&self) -> bool {
        true
    }

    fn acquire_lease(&self, run_id: &str, owner: &str, ttl_ms: i64) -> StoreFuture<'_, bool> {
        let (run_id, owner) = (run_id.to_owned(), owner.to_owned());
        Box::pin(async move {
            let client = self.client().await?;
            let stmt = client
                .prepare_cached(&format!(
                    "UPDATE runs SET lease_owner = $2, lease_expires_ms = {DB_NOW_MS} + $3
                     WHERE run_id = $1 AND (lease_owner IS NULL OR lease_owner = $2 OR lease_expires_ms < {DB_NOW_MS})"
                ))
                .await?;
            Ok(client.execute(&stmt, &[&run_id, &owner, &ttl_ms]).await? == 1)
        })
    }

    fn release_lease(&self, run_id: &str, owner: &str) -> StoreFuture<'_, ()> {
        let (run_id, owner) = (run_id.to_owned(), owner.to_owned());
        Box::pin(async move {
            let client = self.client().await?;
            let stmt = client
                .prepare_cached("UPDATE runs SET lease_owner = NULL, lease_expires_ms = NULL WHERE run_id = $1 AND lease_owner = $2")
                .await?;
            client.execute(&stmt, &[&run_id, &owner]).await?;
            Ok(())
        })
    }

    fn unleased_runs(&self, statuses: &'static [RunStatus]) -> StoreFuture<'_, Vec<String>> {
        let statuses = status_strs(statuses);
        Box::pin(async move {
            let client = self.client().await?;
            let stmt = client
                .prepare_cached(&format!(
                    "SELECT run_id FROM runs WHERE status = ANY($1) AND (lease_owner IS NULL OR lease_expires_ms < {DB_NOW_MS}) ORDER BY list_order"
                ))
                .await?;
            let rows = client.query(&stmt, &[&statuses]).await?;
            rows.iter()
                .map(|r| r.try_get(0).map_err(StoreError::from))
                .collect()
        })
    }

    fn claim_once(&self, scope: &str, key: &str, expires_ms: i64) -> StoreFuture<'_, bool> {
        let (scope, key) = (scope.to_owned(), key.to_owned());
        Box::pin(async move {
            let client = self.client().await?;
            let purge = client
                .prepare_cached("DELETE FROM claims WHERE scope = $1 AND expires_ms < $2")
                .await?;
            client.execute(&purge, &[&scope, &now_ms()]).await?;
            let stmt =
                client.prepare_cached("INSERT INTO claims (scope, key, expires_ms) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING").await?;
            Ok(client.execute(&stmt, &[&scope, &key, &expires_ms]).await? == 1)
        })
    }

    fn shared_secret(&self, name: &str, candidate: Vec<u8>) -> StoreFuture<'_, Vec<u8>> {
        let name = name.to_owned();
        Box::pin(async move {
            let client = self.client().await?;
            let stmt = client
                .prepare_cached(
                    "INSERT INTO secrets (name, value) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                )
                .await?;
            client.execute(&stmt, &[&name, &candidate]).await?;
            let stmt = client
                .prepare_cached("SELECT value FROM secrets WHERE name = $1")
                .await?;
            Ok(client.query_one(&stmt, &[&name]).await?.try_get(0)?)
        })
    }

    fn a2a_bind_context(&self, run_id: &str, context_id: &str) -> StoreFuture<'_, String> {
        let (run_id, context_id) = (run_id.to_owned(), context_id.to_owned());
        Box::pin(async move {
            let client = self.client().await?;
            let stmt = client.prepare_cached("INSERT INTO a2a_tasks (run_id, context_id) VALUES ($1, $2) ON CONFLICT DO NOTHING").await?;
            client.execute(&stmt, &[&run_id, &context_id]).await?;
            let stmt = client
                .prepare_cached("SELECT context_id FROM a2a_tasks WHERE run_id = $1")
                .await?;
            Ok(client.query_one(&stmt, &[&run_id]).await?.try_get(0)?)
        })
    }

    fn a2a_context_of(&self, run_id: &str) -> StoreFuture<'_, Option<String>> {
        let run_id = run_id.to_owned();
        Box::pin(async move {
            let client = self.client().await?;
            let stmt = client
                .prepare_cached("SELECT context_id FROM a2a_tasks WHERE run_id = $1")
                .await?;
            Ok(client
                .query_opt(&stmt, &[&run_id])
                .await?
                .map(|r| r.try_get(0))
                .transpose()?)
        })
    }

    fn a2a_append_message(
        &self,
        run_id: &str,
        message_id: &str,
        message: Value,
    ) -> StoreFuture<'_, bool> {
        let run_id = run_id.to_owned();
        let message_id = (!message_id.is_empty()).then(|| message_id.to_owned());
        Box::pin(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            // The task's row (or, before it exists, the advisory lock) orders appends, so
            // two replicas never pick the same `seq`.
            let lock = tx
                .prepare_cached("SELECT pg_advisory_xact_lock($1, hashtext($2))")
                .await?;
            tx.query(&lock, &[&(HOST_EVENTS_LOCK + 1), &run_id]).await?;
            let stmt = tx
                .prepare_cached(
                    "INSERT INTO a2a_messages (run_id, seq, message_id, message)
                     VALUES ($1, (SELECT COALESCE(MAX(seq), -1) + 1 FROM a2a_messages WHERE run_id = $1), $2, $3)
                     ON CONFLICT DO NOTHING",
                )
                .await?;
            let n = tx
                .execute(&stmt, &[&run_id, &message_id, &message.to_string()])
                .await?;
            tx.commit().await?;
            Ok(n == 1)
        })
    }

    fn a2a_history(&self, run_id: &str) -> StoreFuture<'_, Vec<Value>> {
        let run_id = run_id.to_owned();
        Box::pin(async move {
            let client = self.client().await?;
            let stmt = client
                .prepare_cached("SELECT message FROM a2a_messages WHERE run_id = $1 ORDER BY seq")
                .await?;
            let rows = client.query(&stmt, &[&run_id]).await?;
            rows.iter().map(|r| json_text(r, "message")).collect()
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
        Box::pin(async move {
            let client = self.client().await?;
            let sweep = client
                .prepare_cached("DELETE FROM mcp_sessions WHERE expires_ms < $1")
                .await?;
            client.execute(&sweep, &[&now_ms()]).await?;
            let stmt = client
                .prepare_cached("INSERT INTO mcp_sessions (id, principal_digest, version, expires_ms) VALUES ($1, $2, $3, $4)")
                .await?;
            client
                .execute(&stmt, &[&id, &principal_digest, &version, &expires_ms])
                .await?;
            Ok(())
        })
    }

    fn session(&self, id: &str) -> StoreFuture<'_, Option<SessionRecord>> {
        let id = id.to_owned();
        Box::pin(async move {
            let client = self.client().await?;
            let stmt = client
                .prepare_cached("SELECT principal_digest, version, expires_ms FROM mcp_sessions WHERE id = $1 AND expires_ms >= $2")
                .await?;
            let Some(row) = client.query_opt(&stmt, &[&id, &now_ms()]).await? else {
                return Ok(None);
            };
            Ok(Some(SessionRecord {
                principal_digest: row.try_get(0)?,
                version: row.try_get(1)?,
                expires_ms: row.try_get(2)?,
            }))
        })
    }

    fn touch_session(&self, id: &str, expires_ms: i64) -> StoreFuture<'_, bool> {
        let id = id.to_owned();
        Box::pin(async move {
            let client = self.client().await?;
            let stmt = client
                .prepare_cached("UPDATE mcp_sessions SET expires_ms = GREATEST(expires_ms, $2) WHERE id = $1 AND expires_ms >= $3")
                .await?;
            Ok(client
                .execute(&stmt, &[&id, &expires_ms, &now_ms()])
                .await?
                == 1)
        })
    }

    fn close_session(&self, id: &str, principal_digest: &str) -> StoreFuture<'_, bool> {
        let (id, principal_digest) = (id.to_owned(), principal_digest.to_owned());
        Box::pin(async move {
            let client = self.client().await?;
            let stmt = client
                .prepare_cached("DELETE FROM mcp_sessions WHERE id = $1 AND principal_digest = $2 AND expires_ms >= $3")
                .await?;
            Ok(client
                .execute(&stmt, &[&id, &principal_digest, &now_ms()])
                .await?
                == 1)
        })
    }
}

/// A host event as a NOTIFY carries it: the whole record, so ephemeral events (which are
/// stored nowhere) reach other replicas.
fn host_event_json(ev: &HostEventRecord) -> Value {
    json!({
        "seq": ev.seq,
        "tenant": ev.tenant,
        "eventId": ev.event_id,
        "type": ev.event_type,
        "delivery": ev.delivery,
        "workspaceId": ev.workspace_id,
        "payload": ev.payload,
        "ts": ev.timestamp_ms,
    })
}
