//! The shared store: PostgreSQL, so several host replicas can serve one set of runs and
//! one set of interop state.
//!
//! Every change of a run locks its row first (`SELECT ... FOR UPDATE`), so sequences stay
//! contiguous and two writers on two replicas serialise exactly as two tasks in one
//! process do. Commits announce themselves with NOTIFY (all but a run's creation, which
//! nobody elsewhere can be waiting on: see `insert_new_run`); a LISTEN connection per
//! store turns them into the same [`Wake`]s the SQLite store publishes in process. Every
//! statement is prepared once per pooled connection (`prepare_cached`).

mod batch;
mod interop;
mod listen;
mod migrate;
pub mod tls;

#[cfg(test)]
pub(super) use interop::CLAIM_MS;

use super::sql::{self, RunStatement};
use super::*;
use crate::clock::now_ms;
use deadpool_postgres::{GenericClient, Manager, ManagerConfig, Pool, RecyclingMethod};
use serde_json::Value;
use serde_json::json;
use std::sync::Arc;
use tokio_postgres::NoTls;
use tokio_postgres::types::ToSql;

/// Connections the pool keeps; each request holds one for a transaction or a read.
const POOL_SIZE: usize = 16;

/// Milliseconds since the epoch on the database's clock, so replicas with skewed clocks
/// still agree on when a lease ran out.
macro_rules! db_now_ms {
    () => {
        "(extract(epoch from clock_timestamp()) * 1000)::bigint"
    };
}

/// The runs of the given statuses (`$1`, an array) that no replica drives: no lease, or
/// one expired. Live runs only, spelled as `runs_live` is (`sql::live!`), so the partial
/// index finds them however many finished runs the table holds.
pub(crate) const UNLEASED: &str = concat!(
    "SELECT run_id FROM runs WHERE ",
    sql::live!(),
    " AND status = ANY($1) AND (lease_owner IS NULL OR lease_expires_ms < ",
    db_now_ms!(),
    ") ORDER BY list_order"
);

/// Advisory lock class for serialising durable host events of one tenant, so their
/// `seq` commits in order and a reader's cursor never passes a gap that fills later.
const HOST_EVENTS_LOCK: i32 = 0x6f77_0001;

/// Advisory lock class ordering the A2A history appends of one task.
const A2A_HISTORY_LOCK: i32 = HOST_EVENTS_LOCK + 1;

type Params<'a> = &'a [&'a (dyn ToSql + Sync)];

struct Inner {
    pool: Pool,
    channel: String,
    wakes: WakeHub,
    /// Set once a push configuration may exist on the database: one was found when the
    /// LISTEN connection (re)started, or a replica announced a registration since. Never
    /// cleared. Until then the push watcher skips its look at a task's configurations on
    /// every commit (see [`InteropStore::push_configs_possible`]).
    push_configured: Arc<std::sync::atomic::AtomicBool>,
    listener: tokio::task::JoinHandle<()>,
    /// Plain creations, written together ([`batch`]).
    creates: batch::Creates,
    /// Run details, read together ([`batch`]).
    details: batch::Details,
    /// How the last write ended (`/readyz` turns not-ready while writes fail): reads go
    /// on when only writes fail (a full tablespace: SQLSTATE 53100), so readiness, which
    /// reads, would not see it otherwise.
    write_health: WriteHealth,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.listener.abort();
    }
}

/// PostgreSQL behind [`RunStore`] and [`InteropStore`].
#[derive(Clone)]
pub struct PgStore {
    inner: Arc<Inner>,
}

fn db_error(e: tokio_postgres::Error) -> StoreError {
    match e.as_db_error() {
        Some(db) => {
            let code = db.code().code();
            let text = format!("{code}: {}", db.message());
            if transient_sqlstate(code) {
                StoreError::Unavailable(text)
            } else {
                StoreError::Database(text)
            }
        }
        // No answer from the server: the connection closed or broke (a terminated
        // backend, a restart, the network), or it could not be made.
        None => {
            let text = match std::error::Error::source(&e) {
                Some(cause) => format!("{e}: {cause}"),
                None => e.to_string(),
            };
            let io = std::error::Error::source(&e).is_some_and(|c| c.is::<std::io::Error>());
            if e.is_closed()
                || io
                || text.starts_with("error connecting")
                || text.contains("timeout")
            {
                StoreError::Unavailable(text)
            } else {
                StoreError::Database(text)
            }
        }
    }
}

/// SQLSTATEs that say the server cannot serve now rather than that the statement is
/// wrong: connection exceptions (class 08), insufficient resources (class 53: a full
/// disk, too many connections), an operator intervention (a terminated backend, a
/// shutdown, a server starting: 57P01-57P03), a lock or serialization conflict that
/// lost (40001, 40P01, 55P03).
fn transient_sqlstate(code: &str) -> bool {
    code.starts_with("08")
        || code.starts_with("53")
        || matches!(
            code,
            "57P01" | "57P02" | "57P03" | "40001" | "40P01" | "55P03"
        )
}

impl From<tokio_postgres::Error> for StoreError {
    fn from(e: tokio_postgres::Error) -> Self {
        db_error(e)
    }
}

impl From<deadpool_postgres::PoolError> for StoreError {
    fn from(e: deadpool_postgres::PoolError) -> Self {
        match e {
            // No connection could be made (refused, a database not accepting connections,
            // a server starting or gone): whatever the server said, nothing was asked of it
            // yet, and it may pass.
            deadpool_postgres::PoolError::Backend(e) => match db_error(e) {
                StoreError::Database(text) => {
                    StoreError::Unavailable(format!("no database connection: {text}"))
                }
                other => other,
            },
            // A pool timeout or a closed pool: no connection to be had now.
            other => StoreError::Unavailable(format!("no database connection: {other}")),
        }
    }
}

/// Runs a statement (prepared once per connection); the number of rows it changed.
async fn exec<C: GenericClient>(c: &C, sql: &str, p: Params<'_>) -> Result<u64, StoreError> {
    let started = std::time::Instant::now();
    let stmt = c.prepare_cached(sql).await?;
    let n = c.execute(&stmt, p).await?;
    latency::record(latency::Backend::Postgres, started.elapsed());
    Ok(n)
}

/// The first row of a statement, mapped.
async fn one<C: GenericClient, T>(
    c: &C,
    sql: &str,
    p: Params<'_>,
    map: impl FnOnce(&dyn sql::Row) -> Result<T, StoreError>,
) -> Result<Option<T>, StoreError> {
    let started = std::time::Instant::now();
    let stmt = c.prepare_cached(sql).await?;
    let row = c.query_opt(&stmt, p).await?;
    latency::record(latency::Backend::Postgres, started.elapsed());
    match row {
        Some(row) => Ok(Some(map(&row)?)),
        None => Ok(None),
    }
}

/// Every row of a statement, mapped.
async fn all<C: GenericClient, T>(
    c: &C,
    sql: &str,
    p: Params<'_>,
    map: impl Fn(&dyn sql::Row) -> Result<T, StoreError>,
) -> Result<Vec<T>, StoreError> {
    let started = std::time::Instant::now();
    let stmt = c.prepare_cached(sql).await?;
    let rows = c.query(&stmt, p).await?;
    latency::record(latency::Backend::Postgres, started.elapsed());
    rows.iter().map(|r| map(r)).collect()
}

async fn load_run<C: GenericClient>(c: &C, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
    one(c, sql::RUN_BY_ID, &[&run_id], sql::run).await
}

/// A new run as [`insert_new_run`] writes it: the row with its first change (if one was
/// planned) already applied, and what that change adds beside the row.
struct NewRow {
    /// `list_order` is the database's to assign (0 here; the row returned has it).
    run: RunRecord,
    events: Vec<NewEvent>,
    opening: Option<NewInterrupt>,
    /// A first change was applied (this process's subscribers are woken).
    stepped: bool,
}

impl NewRow {
    /// The run exactly as inserted without a first change (what a plan is made from).
    fn of(run: &NewRun, now: i64) -> NewRow {
        NewRow {
            run: RunRecord::inserted(run.clone(), now, 0),
            events: Vec::new(),
            opening: None,
            stepped: false,
        }
    }

    /// Applies a first change in memory, as `sql::apply_patch!` would to the stored row
    /// (nothing is open yet, so there is nothing to close), so the row is written once
    /// already changed: one statement and one row version instead of an insert followed
    /// by an update in a transaction (four round trips).
    fn step(&mut self, mut patch: RunPatch, events: Vec<NewEvent>) {
        // Changed in the instant it was created.
        let now = self.run.created_ms;
        self.run.apply(&mut patch, events.len(), now);
        self.events = events;
        self.opening = patch.open_interrupt;
        self.stepped = true;
    }
}

/// Claims the key (if any) and inserts the run (its first change applied) with its
/// events, the interrupt it opens, its A2A context and first message, in one statement,
/// so a creation that needs nothing else is one round trip in its own transaction; `None`
/// when the key is already held (nothing written). Parameters: $1..$8 and $16..$18 the
/// run, $9 now, $10..$12 the claim, $13..$15 the A2A context and first message, $19..$23
/// the columns a first change sets, $24..$27 the events' ids, types, nodes and payloads,
/// $28..$31 the interrupt opened (node, id, kind, data) or NULLs. A creation with nothing
/// beside the run and its events runs [`CREATE_PLAIN`] instead.
///
/// No NOTIFY: PostgreSQL serialises every committing transaction that notifies behind one
/// database-wide lock held through its WAL flush (PreCommit_Notify), so notifying
/// commits cannot share a flush; measured here, 330 such commits/s against 4,800-6,900
/// without, 16 clients. No other replica can be waiting on this commit: the run id is
/// minted by this process and first given out in the answer after it, a follower
/// subscribes before it reads (so it reads the committed run), and no push
/// configuration can exist for a run before it does. This process's subscribers are
/// woken directly.
async fn insert_new_run<C: GenericClient>(
    c: &C,
    row: &NewRow,
    claim: Option<&IdempotencyClaim>,
    first: Option<&(String, String, Value)>,
) -> Result<Option<RunRecord>, StoreError> {
    const CREATE: &str = concat!(
        "WITH claim AS (INSERT INTO idempotency (",
        sql::key_cols!(),
        ") SELECT $2, $10, $11, $12, $1, CAST($9 AS BIGINT) WHERE CAST($11 AS TEXT) IS NOT NULL
             ON CONFLICT DO NOTHING RETURNING run_id
         ), created AS (INSERT INTO runs (",
        sql::new_run_cols!(),
        ", wait_until, outputs, error) SELECT $1, $2, $3, $4, $5, $6, $7, $8, $19,
                CAST($9 AS BIGINT), CAST($9 AS BIGINT), $20, CAST($16 AS TEXT),
                CAST($17 AS TEXT), CAST($18 AS TEXT), CAST($21 AS BIGINT), CAST($22 AS TEXT),
                CAST($23 AS TEXT)
             WHERE CAST($11 AS TEXT) IS NULL OR EXISTS (SELECT 1 FROM claim)
             RETURNING ",
        sql::run_cols!(),
        "), bound AS (INSERT INTO a2a_tasks (",
        sql::task_cols!(),
        ") SELECT run_id, $13 FROM created WHERE CAST($13 AS TEXT) IS NOT NULL
         ), first AS (INSERT INTO a2a_messages (",
        sql::message_cols!(),
        ") SELECT run_id, 0, $14, $15 FROM created WHERE CAST($15 AS TEXT) IS NOT NULL
         ), appended AS (INSERT INTO events (",
        sql::event_cols!(),
        ") SELECT created.run_id, u.n - 1, u.e, u.t, u.nd, u.p, CAST($9 AS BIGINT)
             FROM created, unnest($24::text[], $25::text[], $26::text[], $27::text[])
                  WITH ORDINALITY AS u(e, t, nd, p, n)
         ), opened AS (
             INSERT INTO interrupts (run_id, node_id, interrupt_id, kind, data, state)
             SELECT created.run_id, $28, $29, $30, $31, 'open' FROM created
             WHERE CAST($28 AS TEXT) IS NOT NULL
         )
         SELECT * FROM created"
    );
    let run = &row.run;
    let (owner, inputs, state) = (
        run.owner.to_string(),
        run.inputs.to_string(),
        run.state.to_string(),
    );
    let (tags, metadata) = (
        run.annotations.tags.as_ref().map(Value::to_string),
        run.annotations.metadata.as_ref().map(Value::to_string),
    );
    let (outputs, error) = (
        run.outputs.as_ref().map(Value::to_string),
        run.error.as_ref().map(Value::to_string),
    );
    let (principal, key, body_hash) = match claim {
        Some(c) => (Some(&c.principal), Some(&c.key), Some(&c.body_hash)),
        None => (None, None, None),
    };
    let (context, message_id, message) = match first {
        Some((context, id, message)) => (
            Some(context.as_str()),
            (!id.is_empty()).then_some(id.as_str()),
            Some(message.to_string()),
        ),
        None => (None, None, None),
    };
    let ids: Vec<String> = row
        .events
        .iter()
        .map(|_| crate::ids::mint_event_id())
        .collect();
    let types: Vec<&str> = row.events.iter().map(|e| e.event_type.as_str()).collect();
    let nodes: Vec<Option<&str>> = row.events.iter().map(|e| e.node_id.as_deref()).collect();
    let payloads: Vec<String> = row.events.iter().map(|e| e.payload.to_string()).collect();
    if claim.is_none() && first.is_none() && row.opening.is_none() {
        return one(
            c,
            CREATE_PLAIN,
            &[
                &run.run_id,
                &run.tenant,
                &run.workflow_id,
                &run.status.as_str(),
                &owner,
                &run.transport,
                &inputs,
                &state,
                &run.created_ms,
                &run.annotations.agent_id,
                &tags,
                &metadata,
                &run.node_index,
                &run.last_sequence,
                &run.wait_until,
                &outputs,
                &error,
                &ids,
                &types,
                &nodes,
                &payloads,
            ],
            sql::run,
        )
        .await;
    }
    let opening = row.opening.as_ref();
    let data = opening.map(|i| i.data.to_string());
    one(
        c,
        CREATE,
        &[
            &run.run_id,
            &run.tenant,
            &run.workflow_id,
            &run.status.as_str(),
            &owner,
            &run.transport,
            &inputs,
            &state,
            &run.created_ms,
            &principal,
            &key,
            &body_hash,
            &context,
            &message_id,
            &message,
            &run.annotations.agent_id,
            &tags,
            &metadata,
            &run.node_index,
            &run.last_sequence,
            &run.wait_until,
            &outputs,
            &error,
            &ids,
            &types,
            &nodes,
            &payloads,
            &opening.map(|i| i.node_id.as_str()),
            &opening.map(|i| i.interrupt_id.as_str()),
            &opening.map(|i| i.kind.as_str()),
            &data,
        ],
        sql::run,
    )
    .await
}

/// [`insert_new_run`] for a creation with nothing beside the run and its events (no key,
/// no A2A task, no interrupt: a REST create without `Idempotency-Key`). PostgreSQL sets up
/// every data-modifying CTE of a statement on each execution, empty or not: the general
/// statement's four unused ones cost a fifth of its CPU (0.285 against 0.222 ms per
/// creation, pgbench -M prepared, 16 clients). Parameters: $1..$8 the run, $9 now,
/// $10..$12 its annotations, $13..$17 the columns a first change sets (node index, last
/// sequence, wait, outputs, error), $18..$21 the events' ids, types, nodes and payloads.
const CREATE_PLAIN: &str = concat!(
    "WITH created AS (INSERT INTO runs (",
    sql::new_run_cols!(),
    ", wait_until, outputs, error)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $13, $9, $9, $14, $10, $11, $12, $15, $16, $17)
         RETURNING ",
    sql::run_cols!(),
    "), appended AS (INSERT INTO events (",
    sql::event_cols!(),
    ") SELECT created.run_id, u.n - 1, u.e, u.t, u.nd, u.p, $9
             FROM created, unnest($18::text[], $19::text[], $20::text[], $21::text[])
                  WITH ORDINALITY AS u(e, t, nd, p, n)
         )
     SELECT * FROM created"
);

/// Locks the run's row for the rest of the transaction; also returns who holds its lease.
async fn lock_run<C: GenericClient>(
    c: &C,
    run_id: &str,
) -> Result<Option<(RunRecord, Option<String>)>, StoreError> {
    const LOCK: &str = concat!(
        "SELECT ",
        sql::run_cols!(),
        ", lease_owner FROM runs WHERE run_id = $1 FOR UPDATE"
    );
    one(c, LOCK, &[&run_id], |row| {
        Ok((sql::run(row)?, row.opt_text("lease_owner")?))
    })
    .await
}

/// Queues a wake-up; PostgreSQL delivers it to every listener when the transaction commits.
async fn notify<C: GenericClient>(c: &C, channel: &str, payload: &str) -> Result<(), StoreError> {
    exec(c, "SELECT pg_notify($1, $2)", &[&channel, &payload]).await?;
    Ok(())
}

/// A run change in one statement (one round trip): lock the run's row, check the lease
/// and the guard on it, apply the patch (`sql::apply_patch!`, as SQLite does), append
/// the events after the run's last sequence, close and open interrupts, and queue the
/// NOTIFY that wakes every replica at commit. The statement parameters:
/// $1 run; $2..$10 the patch and its event count and time (as `APPLY_PATCH`); $11 lease
/// owner or NULL; $12 guard statuses (`sql::list`), $13 true: the status must be in
/// them, false: not; $14/$15 channel and payload; $16..$19 the events' ids, types, nodes
/// and payloads; $20 close open interrupts; $21..$24 the interrupt to open (node, id,
/// kind, data) or NULLs.
const CHANGE_RUN: &str = concat!(
    "WITH cur AS (
         SELECT status, lease_owner FROM runs WHERE run_id = $1 FOR UPDATE
     ), ok AS (
         SELECT 1 FROM cur
         WHERE (CAST($11 AS TEXT) IS NULL OR lease_owner = $11)
           AND (strpos($12, ',' || status || ',') > 0) = $13
     ), changed AS (",
    sql::apply_patch!(),
    " AND EXISTS (SELECT 1 FROM ok) RETURNING ",
    sql::run_cols!(),
    ", pg_notify($14, $15) AS notified
     ), appended AS (
         INSERT INTO events (",
    sql::event_cols!(),
    ") SELECT changed.run_id, changed.last_sequence - $9 + u.n, u.e, u.t, u.nd, u.p, $10
         FROM changed, unnest($16::text[], $17::text[], $18::text[], $19::text[])
              WITH ORDINALITY AS u(e, t, nd, p, n)
     ), closed AS (
         UPDATE interrupts SET state = 'closed' FROM changed
         WHERE interrupts.run_id = changed.run_id AND interrupts.state = 'open' AND $20
     ), opened AS (
         INSERT INTO interrupts (run_id, node_id, interrupt_id, kind, data, state)
         SELECT changed.run_id, $21, $22, $23, $24, 'open' FROM changed
         WHERE CAST($21 AS TEXT) IS NOT NULL
         ON CONFLICT (run_id, node_id) DO UPDATE SET interrupt_id = excluded.interrupt_id,
             kind = excluded.kind, data = excluded.data, state = 'open', resume_value = NULL
         WHERE interrupts.state <> 'open'
     )
     SELECT changed.*, cur.status AS held_status, cur.lease_owner AS held_by
     FROM cur LEFT JOIN changed ON true"
);

/// A run, its open interrupt and its A2A contextId in one statement (what
/// `sql::RUN_BY_ID`, `sql::OPEN_INTERRUPT_OF` and `sql::CONTEXT_OF` read): one execution
/// instead of three pipelined ones, each with its own implicit transaction.
const RUN_DETAIL: &str = concat!(
    // The run and the interrupt share column names (`run_id`, `state`): each list is
    // selected in a scope of its own and the row is read by position.
    "SELECT r.*, i.*, (SELECT context_id FROM a2a_tasks t WHERE t.run_id = r.run_id) AS context_id
     FROM (SELECT ",
    sql::run_detail_cols!(),
    " FROM runs WHERE run_id = $1) r LEFT JOIN LATERAL (
         SELECT ",
    sql::interrupt_cols!(),
    " FROM interrupts WHERE interrupts.run_id = r.run_id AND interrupts.state = 'open'
         LIMIT 1
     ) i ON true"
);

/// A row of [`RUN_DETAIL`] or [`RUN_DETAILS`]: the run's columns, then the open
/// interrupt's (NULL when none is open), read in order (both lists name `run_id` and
/// `state`), then the contextId.
fn detail_row(r: &dyn sql::Row) -> Result<RunDetail, StoreError> {
    let mut c = sql::Cols::new(r);
    let run = sql::read_run(&mut c)?;
    let open_interrupt = sql::read_opt_interrupt(&mut c)?;
    Ok(RunDetail {
        open_interrupt,
        context_id: r.opt_text("context_id")?,
        run,
    })
}

/// [`RUN_DETAIL`] for every run named in the array $1 (in no particular order; a run
/// named twice, twice).
///
/// One index probe per id, written so (`unnest`, and a `LIMIT` that keeps the lookup a
/// subquery of its own) because the statement is prepared once per pooled connection and,
/// after five executions, PostgreSQL may keep a generic plan for it: `run_id = ANY($1)`
/// planned generic while `runs` was small (a new database's first minute) was a sequential
/// scan, and the connection kept scanning the whole table for every read as it grew, until
/// an autoanalyze replanned it (in `bench/replicas/run.sh`, 757 scans reading 8.6 million
/// rows in one 10-second run, PostgreSQL's CPU per request 0.155 ms against 0.12 without).
/// An equality probe of `runs_run_id_key` is the cheaper plan at every size, empty included.
const RUN_DETAILS: &str = concat!(
    "SELECT r.*, i.*, (SELECT context_id FROM a2a_tasks t WHERE t.run_id = r.run_id) AS context_id
     FROM unnest($1::text[]) AS asked(id) CROSS JOIN LATERAL (SELECT ",
    sql::run_detail_cols!(),
    " FROM runs WHERE runs.run_id = asked.id LIMIT 1) r LEFT JOIN LATERAL (
         SELECT ",
    sql::interrupt_cols!(),
    " FROM interrupts WHERE interrupts.run_id = r.run_id AND interrupts.state = 'open'
         LIMIT 1
     ) i ON true"
);

/// [`RUN_DETAILS`] of `run_ids`, by run id. Each id is probed once however often it is
/// named (pollers of one run share a batch).
async fn details_by_id<C: GenericClient, S: AsRef<str>>(
    c: &C,
    run_ids: &[S],
) -> Result<std::collections::HashMap<String, RunDetail>, StoreError> {
    let mut ids: Vec<&str> = run_ids.iter().map(AsRef::as_ref).collect();
    ids.sort_unstable();
    ids.dedup();
    let found = all(c, RUN_DETAILS, &[&ids], detail_row).await?;
    Ok(found
        .into_iter()
        .map(|d| (d.run.run_id.clone(), d))
        .collect())
}

/// What a run change is checked against.
struct Check<'a> {
    guard: &'a Guard,
    lease_owner: Option<&'a str>,
}

/// Applies a run change with [`CHANGE_RUN`], inside a transaction or as its own.
async fn change_run<C: GenericClient>(
    c: &C,
    channel: &str,
    run_id: &str,
    check: Check<'_>,
    patch: RunPatch,
    events: Vec<NewEvent>,
) -> Result<Advanced, StoreError> {
    let now = now_ms();
    let ids: Vec<String> = events.iter().map(|_| crate::ids::mint_event_id()).collect();
    let types: Vec<&str> = events.iter().map(|e| e.event_type.as_str()).collect();
    let nodes: Vec<Option<&str>> = events.iter().map(|e| e.node_id.as_deref()).collect();
    let payloads: Vec<String> = events.iter().map(|e| e.payload.to_string()).collect();
    let (guard_list, guard_in) = match check.guard {
        Guard::StatusIn(list) => (sql::statuses(list), true),
        Guard::StatusNotIn(list) => (sql::statuses(list), false),
    };
    let p = sql::patch(&patch);
    let count = events.len() as i64;
    let opening = patch.open_interrupt.as_ref();
    let data = opening.map(|i| i.data.to_string());
    let row = one(
        c,
        CHANGE_RUN,
        &[
            &run_id,
            &p.status,
            &p.node_index,
            &p.set_wait,
            &p.wait_until,
            &p.state,
            &p.outputs,
            &p.error,
            &count,
            &now,
            &check.lease_owner,
            &guard_list,
            &guard_in,
            &channel,
            &listen::run_payload(run_id),
            &ids,
            &types,
            &nodes,
            &payloads,
            &patch.close_interrupts,
            &opening.map(|i| i.node_id.as_str()),
            &opening.map(|i| i.interrupt_id.as_str()),
            &opening.map(|i| i.kind.as_str()),
            &data,
        ],
        |r| {
            if r.opt_text("run_id")?.is_some() {
                return Ok(Ok(sql::run(r)?));
            }
            let held_by = r.opt_text("held_by")?;
            if check.lease_owner.is_some() && held_by.as_deref() != check.lease_owner {
                return Ok(Err(StoreError::LeaseLost));
            }
            Ok(Err(StoreError::Guard {
                status: parse_status(run_id, &r.text("held_status")?)?,
            }))
        },
    )
    .await?
    .ok_or_else(|| StoreError::RunNotFound(run_id.to_owned()))??;
    let first = row.last_sequence - count;
    let stored = events
        .into_iter()
        .zip(ids)
        .enumerate()
        .map(|(i, (ev, event_id))| EventRecord {
            run_id: row.run_id.clone(),
            sequence: first + 1 + i as i64,
            event_id,
            event_type: ev.event_type,
            node_id: ev.node_id,
            payload: ev.payload,
            timestamp_ms: now,
        })
        .collect();
    Ok(Advanced {
        run: row,
        events: stored,
    })
}

impl PgStore {
    /// Connects to `url` (`postgres://user@host:port/db`), applies pending migrations and
    /// starts listening for other replicas' changes.
    ///
    /// `sslmode=require` (or `verify-ca`, `verify-full`, with `sslrootcert=FILE`) in the
    /// URL connects over TLS (rustls); see [`tls`].
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        let parsed = tls::parse(url)?;
        let tls = tls::PgTls::for_url(&parsed)?;
        let config: tokio_postgres::Config = parsed
            .url
            .parse()
            .map_err(|e| StoreError::Database(format!("invalid PostgreSQL URL: {e}")))?;
        Self::connect_with_tls(config, tls).await
    }

    /// As [`PgStore::connect`], from a parsed configuration, in plain TCP.
    pub async fn connect_with(config: tokio_postgres::Config) -> Result<Self, StoreError> {
        Self::connect_with_tls(config, tls::PgTls::Plain).await
    }

    /// As [`PgStore::connect`], from a parsed configuration and a connector.
    pub async fn connect_with_tls(
        config: tokio_postgres::Config,
        tls: tls::PgTls,
    ) -> Result<Self, StoreError> {
        let recycling = || ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        };
        let manager = match &tls {
            tls::PgTls::Plain => Manager::from_config(config.clone(), NoTls, recycling()),
            tls::PgTls::Rustls(make) => {
                Manager::from_config(config.clone(), make.clone(), recycling())
            }
        };
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
        let wakes = WakeHub::default();
        let push_configured = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (ready_tx, ready) = tokio::sync::oneshot::channel();
        let listener = tokio::spawn(listen::run(
            config,
            tls,
            channel.clone(),
            wakes.clone(),
            pool.clone(),
            push_configured.clone(),
            ready_tx,
        ));
        // Subscribers from now on hear every later commit, ephemeral host events included.
        let _ = ready.await;
        Ok(Self {
            inner: Arc::new(Inner {
                pool: pool.clone(),
                channel,
                wakes,
                push_configured,
                listener,
                creates: batch::creates(pool.clone()),
                details: batch::details(pool.clone()),
                write_health: WriteHealth::default(),
            }),
        })
    }

    async fn client(&self) -> Result<deadpool_postgres::Object, StoreError> {
        Ok(self.inner.pool.get().await?)
    }

    /// A write, its outcome noted for readiness ([`RunStore::write_fault`]): every write
    /// of both stores goes through here.
    async fn noted<T>(
        &self,
        write: impl std::future::Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let out = write.await;
        self.inner.write_health.note(&out);
        out
    }
}

impl RunStore for PgStore {
    fn create_run_with(
        &self,
        run: NewRun,
        idempotency: Option<IdempotencyClaim>,
        with: CreateWith,
    ) -> StoreFuture<'_, Created> {
        Box::pin(self.noted(async move {
            let now = now_ms();
            // A new run's context is the one asked for, so its first message can be
            // stamped before anything is written.
            let mut a2a = with.a2a;
            let first = a2a.as_mut().map(|start| {
                let stamp = std::mem::replace(&mut start.message, Box::new(|_, _| Value::Null));
                let message = stamp(&run.run_id, &start.context_id);
                (start.context_id.clone(), start.message_id.clone(), message)
            });
            let durable = with.host_events.iter().any(|e| e.delivery == "durable");
            // The first change is planned from the run as it will be inserted (the
            // database only adds its `list_order`), before the insert, so the run is
            // written already changed. The plan is pure; if the key turns out to be held
            // (a replay), its outcome is dropped unapplied.
            let mut row = NewRow::of(&run, now);
            if let Some((patch, events)) = with.first_step.and_then(|plan| plan(&row.run)) {
                row.step(patch, events);
            }
            let stepped = row.stepped;
            let claim = idempotency.as_ref();
            // Nothing beside the run and its events: written with the creations
            // queued beside it, in one statement ([`batch`]).
            let plain = claim.is_none() && first.is_none() && row.opening.is_none() && !durable;
            // The connection of any other creation, kept for its replay.
            let mut held = None;
            // Durable host events take their tenant's lock and go in the same
            // transaction; without them the one statement is the whole transaction.
            let created = if plain {
                Some((self.inner.creates.call(row).await?, Vec::new()))
            } else if durable {
                let client = held.insert(self.client().await?);
                let tx = client.transaction().await?;
                match insert_new_run(&tx, &row, claim, first.as_ref()).await? {
                    Some(inserted) => {
                        let events = self
                            .write_host_events(&tx, with.host_events.clone())
                            .await?;
                        tx.commit().await?;
                        Some((inserted, events))
                    }
                    None => None,
                }
            } else {
                let client = held.insert(self.client().await?);
                insert_new_run(client, &row, claim, first.as_ref())
                    .await?
                    .map(|run| (run, Vec::new()))
            };
            if let Some((run, events)) = created {
                if stepped {
                    // A creation wakes this replica's subscribers only: it sends no
                    // NOTIFY (see `insert_new_run`).
                    self.inner.wakes.publish(Wake::Run(run.run_id.clone()));
                }
                let host_events = if durable { events } else { with.host_events };
                for ev in host_events.iter().filter(|e| e.delivery != "durable") {
                    self.publish_host_event(ev).await;
                }
                return Ok(Created {
                    run,
                    replay: false,
                    context_id: first.map(|(context, _, _)| context),
                    host_events,
                });
            }
            // The key is held (a concurrent request with it, on any replica, waited for
            // this one's commit inside the statement): replay the earlier run.
            let Some(claim) = &idempotency else {
                return Err(StoreError::Database("a run was not created".into()));
            };
            let mut client = match held {
                Some(client) => client,
                None => self.client().await?,
            };
            let tx = client.transaction().await?;
            let (hash, run_id) = one(
                &tx,
                sql::KEY_HELD,
                &[&claim.tenant, &claim.principal, &claim.key],
                |r| Ok((r.text("body_hash")?, r.text("run_id")?)),
            )
            .await?
            .ok_or_else(|| StoreError::Database("a claimed key vanished".into()))?;
            if hash != claim.body_hash && !claim.any_body {
                return Err(StoreError::IdempotencyMismatch);
            }
            let existing = load_run(&tx, &run_id)
                .await?
                .ok_or(StoreError::RunNotFound(run_id))?;
            let context_id = match a2a {
                Some(start) => Some(interop::start_task(&tx, &existing.run_id, start).await?),
                None => None,
            };
            let host_events = self.write_host_events(&tx, with.host_events).await?;
            tx.commit().await?;
            Ok(Created {
                run: existing,
                replay: true,
                context_id,
                host_events,
            })
        }))
    }

    fn get_run(&self, run_id: &str) -> StoreFuture<'_, Option<RunRecord>> {
        let run_id = run_id.to_owned();
        Box::pin(async move {
            let client = self.client().await?;
            load_run(&client, &run_id).await
        })
    }

    fn query_runs(&self, q: RunQuery) -> StoreFuture<'_, RunPage> {
        Box::pin(async move {
            let mut client = self.client().await?;
            let f = sql::filter(&q);
            let limit = i64::try_from(q.limit).unwrap_or(i64::MAX);
            let (after_ms, after_id) = match &q.order {
                RunOrder::Updated { after: Some(c) } => {
                    (Some(c.updated_ms), Some(c.run_id.as_str()))
                }
                _ => (None, None),
            };
            let before = match &q.order {
                RunOrder::Created { before } => *before,
                RunOrder::Updated { .. } => None,
            };
            let filters: [&(dyn ToSql + Sync); 7] = [
                &q.tenant,
                &f.statuses,
                &q.workflow_id,
                &q.context_id,
                &q.updated_since_ms,
                &f.with_kinds,
                &f.without_kinds,
            ];
            let by_creation: Vec<&(dyn ToSql + Sync)> = filters
                .iter()
                .copied()
                .chain([&before as _, &limit as _])
                .collect();
            let by_update: Vec<&(dyn ToSql + Sync)> = filters
                .iter()
                .copied()
                .chain([&after_ms as _, &after_id as _, &limit as _])
                .collect();
            let (page_sql, page_params) = match q.order {
                RunOrder::Created { .. } => (
                    sql::run_statement(RunStatement::ByCreation, &q, &f),
                    by_creation.as_slice(),
                ),
                RunOrder::Updated { .. } => (
                    sql::run_statement(RunStatement::ByUpdate, &q, &f),
                    by_update.as_slice(),
                ),
            };
            if !q.count_total {
                let runs = all(&client, page_sql, page_params, sql::run).await?;
                return Ok(RunPage { runs, total: None });
            }
            // The page and the count in one snapshot, sent together.
            let tx = client
                .build_transaction()
                .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .await?;
            let counted: [&(dyn ToSql + Sync); 2] = [&q.tenant, &f.statuses];
            let (count_sql, count_params) = if sql::counted(&q, &f) {
                (sql::RUN_TOTAL, &counted[..])
            } else {
                (
                    sql::run_statement(RunStatement::Count, &q, &f),
                    &filters[..],
                )
            };
            let (runs, total) = tokio::try_join!(
                all(&tx, page_sql, page_params, sql::run),
                one(&tx, count_sql, count_params, |r| r.int("total")),
            )?;
            tx.commit().await?;
            Ok(RunPage {
                runs,
                total: total.map(|n| u64::try_from(n).unwrap_or(0)),
            })
        })
    }

    fn unfinished_runs(&self) -> StoreFuture<'_, Vec<RunRecord>> {
        Box::pin(async move {
            let client = self.client().await?;
            all(&client, sql::UNFINISHED_RUNS, &[], sql::run).await
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
        Box::pin(self.noted(async move {
            let client = self.client().await?;
            let lease = patch.lease_owner.clone();
            let check = Check {
                guard: &guard,
                lease_owner: lease.as_deref(),
            };
            let out =
                change_run(&client, &self.inner.channel, &run_id, check, patch, events).await?;
            // The NOTIFY reaches this replica too, but a direct wake saves the round trip.
            self.inner.wakes.publish(Wake::Run(out.run.run_id.clone()));
            Ok(out)
        }))
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
        Box::pin(self.noted(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            // The run's row first, as every writer does, so a resolve and a cancel never
            // deadlock; the conditional update then lets exactly one resolve win.
            let Some((run, _)) = lock_run(&tx, &run_id).await? else {
                return Err(StoreError::NoOpenInterrupt);
            };
            let resolved = one(
                &tx,
                sql::RESOLVE_INTERRUPT,
                &[&run_id, &node_id, &resume_value.to_string()],
                sql::interrupt,
            )
            .await?;
            let Some(interrupt) = resolved else {
                let exists = one(&tx, sql::INTERRUPT_AT, &[&run_id, &node_id], |_| Ok(()))
                    .await?
                    .is_some();
                return Err(if exists {
                    StoreError::InterruptAlreadyResolved
                } else {
                    StoreError::NoOpenInterrupt
                });
            };
            let (patch, events) = on_resolve(&interrupt, &run);
            let check = Check {
                guard: &Guard::StatusNotIn(&[]),
                lease_owner: None,
            };
            let out = change_run(&tx, &self.inner.channel, &run_id, check, patch, events).await?;
            tx.commit().await?;
            self.inner.wakes.publish(Wake::Run(out.run.run_id.clone()));
            Ok(out)
        }))
    }

    fn run_detail(&self, run_id: &str) -> StoreFuture<'_, Option<RunDetail>> {
        let run_id = run_id.to_owned();
        // Read with the details asked beside it ([`batch`]).
        Box::pin(self.inner.details.call(run_id))
    }

    fn run_details(&self, run_ids: Vec<String>) -> StoreFuture<'_, Vec<RunDetail>> {
        Box::pin(async move {
            let client = self.client().await?;
            let mut found = details_by_id(&client, &run_ids).await?;
            // The statement's order is the plan's: put the page back in the order asked.
            Ok(run_ids.iter().filter_map(|id| found.remove(id)).collect())
        })
    }

    fn open_interrupt(&self, run_id: &str) -> StoreFuture<'_, Option<InterruptRecord>> {
        let run_id = run_id.to_owned();
        Box::pin(async move {
            let client = self.client().await?;
            one(&client, sql::OPEN_INTERRUPT_OF, &[&run_id], sql::interrupt).await
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
            let limit = limit as i64;
            all(
                &client,
                sql::EVENTS_SINCE,
                &[&run_id, &after, &limit],
                sql::event,
            )
            .await
        })
    }

    fn append_host_event(&self, event: HostEventRecord) -> StoreFuture<'_, HostEventRecord> {
        Box::pin(self.noted(async move {
            let mut client = self.client().await?;
            if event.delivery != "durable" {
                self.announce_host_event(&client, &event).await?;
                return Ok(event);
            }
            // Lock, insert and announce in one statement, unless the announcement might
            // not fit a NOTIFY (judged with the widest seq, which is not known yet).
            let widest = HostEventRecord {
                seq: i64::MAX,
                ..event.clone()
            };
            if listen::host_payload(&widest).is_some() {
                const APPEND: &str = concat!(
                    "WITH locked AS (SELECT pg_advisory_xact_lock($8, hashtext($1)))
                     , stored AS (INSERT INTO host_events (",
                    sql::host_event_cols!(),
                    ") SELECT $1, $2, $3, $4, $5, $6, CAST($7 AS BIGINT) FROM locked
                         RETURNING seq, ",
                    sql::host_event_cols!(),
                    ")
                     SELECT seq, pg_notify($9, 'h' || json_build_object(
                         'seq', seq, 'tenant', tenant, 'eventId', event_id, 'type', type,
                         'delivery', delivery, 'workspaceId', workspace_id,
                         'payload', CAST(payload AS json), 'ts', ts_ms)::text) AS notified
                     FROM stored"
                );
                let seq = one(
                    &client,
                    APPEND,
                    &[
                        &event.tenant,
                        &event.event_id,
                        &event.event_type,
                        &event.delivery,
                        &event.workspace_id,
                        &event.payload.to_string(),
                        &event.timestamp_ms,
                        &HOST_EVENTS_LOCK,
                        &self.inner.channel,
                    ],
                    |r| r.int("seq"),
                )
                .await?
                .ok_or_else(|| StoreError::Database("no seq for a host event".into()))?;
                return Ok(HostEventRecord { seq, ..event });
            }
            let tx = client.transaction().await?;
            let stored = insert_host_event(&tx, event).await?;
            self.announce_host_event(&tx, &stored).await?;
            tx.commit().await?;
            Ok(stored)
        }))
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
            let limit = limit as i64;
            all(
                &client,
                sql::HOST_EVENTS_SINCE,
                &[&tenant, &after, &limit],
                sql::host_event,
            )
            .await
        })
    }

    fn host_event_seq(&self, tenant: &str, event_id: &str) -> StoreFuture<'_, Option<i64>> {
        let (tenant, event_id) = (tenant.to_owned(), event_id.to_owned());
        Box::pin(async move {
            let client = self.client().await?;
            one(&client, sql::HOST_EVENT_SEQ, &[&event_id, &tenant], |r| {
                r.int("seq")
            })
            .await
        })
    }

    fn subscribe(&self, topics: &[Topic]) -> Subscription {
        self.inner.wakes.subscribe(topics)
    }

    fn shared(&self) -> bool {
        true
    }

    fn acquire_lease(&self, run_id: &str, owner: &str, ttl_ms: i64) -> StoreFuture<'_, bool> {
        let (run_id, owner) = (run_id.to_owned(), owner.to_owned());
        Box::pin(self.noted(async move {
            let client = self.client().await?;
            const TAKE: &str = concat!(
                "UPDATE runs SET lease_owner = $2, lease_expires_ms = ",
                db_now_ms!(),
                " + $3 WHERE run_id = $1 AND (lease_owner IS NULL OR lease_owner = $2 OR lease_expires_ms < ",
                db_now_ms!(),
                ")"
            );
            Ok(exec(&client, TAKE, &[&run_id, &owner, &ttl_ms]).await? == 1)
        }))
    }

    fn release_lease(&self, run_id: &str, owner: &str) -> StoreFuture<'_, ()> {
        let (run_id, owner) = (run_id.to_owned(), owner.to_owned());
        Box::pin(self.noted(async move {
            let client = self.client().await?;
            exec(
                &client,
                "UPDATE runs SET lease_owner = NULL, lease_expires_ms = NULL WHERE run_id = $1 AND lease_owner = $2",
                &[&run_id, &owner],
            )
            .await?;
            Ok(())
        }))
    }

    fn unleased_runs(&self, statuses: &'static [RunStatus]) -> StoreFuture<'_, Vec<String>> {
        let statuses: Vec<&str> = statuses.iter().map(|s| s.as_str()).collect();
        Box::pin(async move {
            let client = self.client().await?;
            // Planned afresh each time (an unnamed statement, not `prepare_cached`): a
            // generic plan kept from the first sweeps of a new, empty `runs` is a
            // sequential scan and a sort, and it would stay one as the table grows until
            // an autoanalyze replans it. The sweep runs every half lease, so its planning
            // costs nothing that matters.
            let started = std::time::Instant::now();
            let rows = client.query(UNLEASED, &[&statuses]).await?;
            latency::record(latency::Backend::Postgres, started.elapsed());
            rows.iter().map(|r| sql::Row::text(r, "run_id")).collect()
        })
    }

    fn shared_secret(&self, name: &str, candidate: Vec<u8>) -> StoreFuture<'_, Vec<u8>> {
        let name = name.to_owned();
        Box::pin(self.noted(async move {
            let client = self.client().await?;
            exec(&client, sql::OFFER_SECRET, &[&name, &candidate]).await?;
            one(&client, sql::SECRET_BY_NAME, &[&name], |r| r.bytes("value"))
                .await?
                .ok_or_else(|| StoreError::Database("a secret vanished".into()))
        }))
    }

    fn prune_host_events(
        &self,
        keep: i64,
        before_ms: i64,
        floors: std::collections::HashMap<String, i64>,
    ) -> StoreFuture<'_, u64> {
        Box::pin(self.noted(async move {
            let client = self.client().await?;
            let tenants = all(&client, sql::HOST_EVENT_TENANTS, &[], |r| r.text("tenant")).await?;
            let mut dropped = 0u64;
            for tenant in tenants {
                let count_cut = one(&client, sql::HOST_EVENT_COUNT_CUT, &[&tenant, &keep], |r| {
                    r.int("seq")
                })
                .await?;
                let age_cut = one(
                    &client,
                    sql::HOST_EVENT_AGE_CUT,
                    &[&tenant, &before_ms],
                    |r| r.opt_int("seq"),
                )
                .await?
                .flatten();
                if let Some(cut) =
                    sql::host_event_cut(count_cut, age_cut, floors.get(&tenant).copied())
                {
                    dropped += exec(&client, sql::PRUNE_HOST_EVENTS, &[&tenant, &cut]).await?;
                }
            }
            Ok(dropped)
        }))
    }

    fn write_fault(&self) -> Option<String> {
        self.inner.write_health.fault()
    }

    /// A write that needs a new page where the runs live: a temporary table (in the
    /// database's default tablespace) extended by one row, rolled back. Rewriting a row,
    /// as SQLite's probe does, would pass on a full tablespace (the page has room; the
    /// WAL lives elsewhere) while every new run is refused.
    fn probe_write(&self) -> StoreFuture<'_, ()> {
        Box::pin(self.noted(async move {
            let mut client = self.client().await?;
            let tx = client.transaction().await?;
            tx.batch_execute(
                "CREATE TEMPORARY TABLE openwop_readiness_probe (b bytea) ON COMMIT DROP; \
                 INSERT INTO openwop_readiness_probe VALUES ('\\x00')",
            )
            .await?;
            tx.rollback().await?;
            Ok(())
        }))
    }

    fn schema_version(&self) -> StoreFuture<'_, i64> {
        Box::pin(async move {
            let client = self.client().await?;
            Ok(one(&client, sql::SCHEMA_VERSION, &[], |r| r.int("version"))
                .await?
                .unwrap_or(0))
        })
    }

    fn gauges(&self) -> StoreFuture<'_, StoreGauges> {
        Box::pin(async move {
            let client = self.client().await?;
            let runs = all(&client, sql::RUN_COUNTS, &[], |r| {
                Ok((r.text("status")?, r.int("n")?))
            })
            .await?;
            let push = one(&client, sql::PUSH_COUNTS, &[], |r| {
                Ok((r.int("pending")?, r.int("dead")?))
            })
            .await?
            .unwrap_or((0, 0));
            sql::gauges(runs, push)
        })
    }
}

/// Stores a durable host event in an open transaction, in its tenant's order.
async fn insert_host_event<C: GenericClient>(
    c: &C,
    event: HostEventRecord,
) -> Result<HostEventRecord, StoreError> {
    exec(
        c,
        "SELECT pg_advisory_xact_lock($1, hashtext($2))",
        &[&HOST_EVENTS_LOCK, &event.tenant],
    )
    .await?;
    let seq = one(
        c,
        sql::INSERT_HOST_EVENT,
        &[
            &event.tenant,
            &event.event_id,
            &event.event_type,
            &event.delivery,
            &event.workspace_id,
            &event.payload.to_string(),
            &event.timestamp_ms,
        ],
        |r| r.int("seq"),
    )
    .await?
    .ok_or_else(|| StoreError::Database("no seq for a host event".into()))?;
    Ok(HostEventRecord { seq, ..event })
}

impl PgStore {
    /// Stores the durable ones of `events` in an open transaction and announces them all
    /// at its commit.
    async fn write_host_events<C: GenericClient>(
        &self,
        c: &C,
        events: Vec<HostEventRecord>,
    ) -> Result<Vec<HostEventRecord>, StoreError> {
        let mut stored = Vec::with_capacity(events.len());
        for ev in events {
            let ev = if ev.delivery == "durable" {
                insert_host_event(c, ev).await?
            } else {
                ev
            };
            self.announce_host_event(c, &ev).await?;
            stored.push(ev);
        }
        Ok(stored)
    }

    /// Announces a host event outside any transaction.
    async fn publish_host_event(&self, ev: &HostEventRecord) {
        let announced = match self.client().await {
            Ok(client) => self.announce_host_event(&client, ev).await,
            Err(e) => Err(e),
        };
        if let Err(e) = announced {
            tracing::warn!(error = %e, "cannot announce a host event to other replicas; delivered locally");
            self.inner.wakes.publish(Wake::Host(Box::new(ev.clone())));
        }
    }

    /// Announces a host event to every replica at commit. Ephemeral events exist only in
    /// this notification, so they reach every replica's subscribers (this one's included)
    /// through LISTEN, exactly once.
    async fn announce_host_event<C: GenericClient>(
        &self,
        c: &C,
        ev: &HostEventRecord,
    ) -> Result<(), StoreError> {
        match listen::host_payload(ev) {
            Some(payload) => notify(c, &self.inner.channel, &payload).await,
            None => {
                tracing::warn!(event_type = %ev.event_type, "host event too large to announce to other replicas; delivered locally");
                self.inner.wakes.publish(Wake::Host(Box::new(ev.clone())));
                Ok(())
            }
        }
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
