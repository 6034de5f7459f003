//! Calls written or read together: concurrent calls of one kind go to the database in
//! one statement, as SQLite's writer groups its commits (issue #33). Two kinds:
//!
//! - **plain creations**, with nothing beside the run and its events (no idempotency key,
//!   no A2A task, no interrupt, no durable host event: what a REST `POST /runs` without
//!   `Idempotency-Key` writes): one statement and one commit for the batch;
//! - **run details** (a run, its open interrupt and its contextId: what `getRun` reads):
//!   one `= ANY($1)` statement for the batch.
//!
//! A call's cost on PostgreSQL is mostly the server's per-statement (and per-commit) work,
//! not its rows: measured with pgbench (-M prepared, 8 clients, PostgreSQL's CPU from
//! /proc), a creation of the `echo` run with its four events took 0.355-0.375 ms of the
//! server's CPU one to a statement and 0.110-0.127 ms eight to a statement; a run detail
//! 0.108-0.116 ms alone and 0.021 ms eight to a statement.
//!
//! No timer: a batch is whatever was queued when one of its kind's slots
//! ([`CREATE_SLOTS`], [`DETAIL_SLOTS`]) became free, so a lone call goes to the database
//! at once (a creation alone as [`CREATE_PLAIN`](super::CREATE_PLAIN), a read alone as
//! `RUN_DETAIL`, as before), and under load the calls that arrive while the statements in
//! flight run wait for the next one. A read's statement starts after the read was asked,
//! so it sees every commit answered before the read arrived.
//!
//! Creations go in ordered by (tenant, status), the order every other writer of
//! `run_counts` takes its rows in, so two batches whose count triggers share a slot
//! cannot deadlock. A batch of creations that fails for a reason that is not transient is
//! written again one run at a time, so one bad creation fails alone.

use super::{NewRow, RUN_DETAIL, all, detail_row, details_by_id, insert_new_run, one};
use crate::store::latency::{self, Batched};
use crate::store::{RunDetail, RunRecord, StoreError, sql};
use deadpool_postgres::Pool;
use serde_json::Value;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::{Semaphore, mpsc, oneshot};

/// Calls one statement carries at most.
const MAX_BATCH: usize = 64;

/// Creation statements in flight at once: one. What arrives while it runs (and its commit
/// waits for the WAL flush) goes in the next, so the batches grow with the load and each
/// statement's and commit's cost is shared by more runs. In `bench/replicas/run.sh`
/// (2026-12-07 04:14-04:30 UTC, a quiet window, no steal) one slot read 0.63-0.69x of
/// SQLite with 5.4 creations a statement and PostgreSQL at 0.074-0.089 ms per request;
/// two slots 0.54-0.61x with 2.9 a statement and 0.086-0.115 ms. (Two slots had won on
/// 2026-12-07 01:10-01:30, when a read's cached plan could scan the whole `runs` table:
/// see `RUN_DETAILS`; those measurements were mostly that scan.)
const CREATE_SLOTS: usize = 1;

/// `getRun` reads in flight at once: two, so a read need not wait for a whole batch
/// before it (reads commit nothing; one, two or three slots measured alike).
const DETAIL_SLOTS: usize = 2;

/// A call waiting for its batch, and where its outcome goes.
struct Pending<T, R> {
    call: T,
    reply: oneshot::Sender<Result<R, StoreError>>,
}

/// The queue of one kind of call and the task that sends its batches.
pub(super) struct Batches<T, R> {
    queue: mpsc::UnboundedSender<Pending<T, R>>,
    task: tokio::task::JoinHandle<()>,
    /// Batches sent so far (what the tests check batching by).
    #[cfg_attr(not(test), allow(dead_code))]
    sent: Arc<AtomicU64>,
}

impl<T, R> Drop for Batches<T, R> {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl<T: Send + 'static, R: Send + 'static> Batches<T, R> {
    fn start<F, Fut>(pool: Pool, kind: Batched, slots: usize, send: F) -> Self
    where
        F: Fn(Pool, Vec<Pending<T, R>>) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        // Unbounded: each entry is a request awaiting its answer, so the queue is
        // bounded by the requests the host admits (its concurrency limit).
        let (queue, rx) = mpsc::unbounded_channel();
        let sent = Arc::new(AtomicU64::new(0));
        let task = tokio::spawn(run(pool, kind, slots, rx, send, sent.clone()));
        Batches { queue, task, sent }
    }

    #[cfg(test)]
    fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// `call`, sent with the calls queued beside it; its outcome.
    pub(super) async fn call(&self, call: T) -> Result<R, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.queue
            .send(Pending { call, reply })
            .map_err(|_| StoreError::Unavailable("the store is shutting down".into()))?;
        answer
            .await
            .unwrap_or_else(|_| Err(StoreError::Unavailable("the call was not answered".into())))
    }
}

/// Plain creations: a run with its first change applied and its events; the run as
/// stored.
pub(super) type Creates = Batches<NewRow, RunRecord>;

/// Run details by run id.
pub(super) type Details = Batches<String, Option<RunDetail>>;

pub(super) fn creates(pool: Pool) -> Creates {
    Batches::start(pool, Batched::Create, CREATE_SLOTS, write_creations)
}

pub(super) fn details(pool: Pool) -> Details {
    Batches::start(pool, Batched::Detail, DETAIL_SLOTS, read_details)
}

async fn run<T, R, F, Fut>(
    pool: Pool,
    kind: Batched,
    slots: usize,
    mut rx: mpsc::UnboundedReceiver<Pending<T, R>>,
    send: F,
    sent: Arc<AtomicU64>,
) where
    T: Send + 'static,
    R: Send + 'static,
    F: Fn(Pool, Vec<Pending<T, R>>) -> Fut,
    Fut: Future<Output = ()> + Send + 'static,
{
    let slots = Arc::new(Semaphore::new(slots));
    loop {
        // A slot first, then the queue: what arrives while every slot is busy waits
        // here and goes in one batch.
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let Some(first) = rx.recv().await else {
            return;
        };
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(p) => batch.push(p),
                Err(_) => break,
            }
        }
        sent.fetch_add(1, Ordering::Relaxed);
        latency::record_batch(kind, batch.len());
        let batch = send(pool.clone(), batch);
        tokio::spawn(async move {
            batch.await;
            drop(slot);
        });
    }
}

/// A connection for a batch, or the error each of its calls gets.
async fn connection<T, R>(
    pool: &Pool,
    batch: Vec<Pending<T, R>>,
) -> Option<(deadpool_postgres::Object, Vec<Pending<T, R>>)> {
    match pool.get().await {
        Ok(c) => Some((c, batch)),
        Err(e) => {
            fail(batch, &StoreError::from(e));
            None
        }
    }
}

/// Answers every call of `batch` with `e`.
fn fail<T, R>(batch: Vec<Pending<T, R>>, e: &StoreError) {
    for p in batch {
        let _ = p.reply.send(Err(copy(e)));
    }
}

/// Writes one batch of creations and answers each.
async fn write_creations(pool: Pool, batch: Vec<Pending<NewRow, RunRecord>>) {
    let Some((client, batch)) = connection(&pool, batch).await else {
        return;
    };
    if batch.len() > 1 {
        match insert_batch(&client, &batch).await {
            Ok(mut orders) => {
                for mut p in batch {
                    let out = match orders.remove(&p.call.run.run_id) {
                        Some(order) => {
                            p.call.run.list_order = order;
                            Ok(p.call.run)
                        }
                        None => Err(StoreError::Database("a run was not created".into())),
                    };
                    let _ = p.reply.send(out);
                }
                return;
            }
            // Nothing was written; the fault is the server's, not a creation's.
            Err(e @ StoreError::Unavailable(_)) => return fail(batch, &e),
            // One creation may be at fault: each on its own, so only it fails.
            Err(_) => {}
        }
    }
    for p in batch {
        let out = insert_new_run(&client, &p.call, None, None)
            .await
            .and_then(|run| {
                run.ok_or_else(|| StoreError::Database("a run was not created".into()))
            });
        let _ = p.reply.send(out);
    }
}

/// Reads one batch of run details and answers each (a run asked twice gets its detail
/// twice).
async fn read_details(pool: Pool, batch: Vec<Pending<String, Option<RunDetail>>>) {
    let Some((client, batch)) = connection(&pool, batch).await else {
        return;
    };
    let batch = match <[_; 1]>::try_from(batch) {
        Ok([p]) => {
            let out = one(&client, RUN_DETAIL, &[&p.call], detail_row).await;
            let _ = p.reply.send(out);
            return;
        }
        Err(batch) => batch,
    };
    let ids: Vec<&str> = batch.iter().map(|p| p.call.as_str()).collect();
    match details_by_id(&client, &ids).await {
        Ok(found) => {
            for p in batch {
                let _ = p.reply.send(Ok(found.get(&p.call).cloned()));
            }
        }
        Err(e) => fail(batch, &e),
    }
}

/// The batch's error, for each of its calls (the variant kept where the edges tell them apart).
fn copy(e: &StoreError) -> StoreError {
    match e {
        StoreError::Unavailable(text) => StoreError::Unavailable(text.clone()),
        other => StoreError::Database(other.to_string()),
    }
}

/// Runs and events of a batch in one statement; each run's `list_order` by its id.
/// Parameters: $1..$17 one array per column of the runs (as [`CREATE_PLAIN`]'s $1..$17,
/// in its order), $18..$24 the events' run ids, sequences, ids, types, nodes, payloads
/// and times.
const CREATE_BATCH: &str = concat!(
    "WITH created AS (INSERT INTO runs (",
    sql::new_run_cols!(),
    ", wait_until, outputs, error)
         SELECT r.run_id, r.tenant, r.workflow_id, r.status, r.owner, r.transport, r.inputs,
                r.state, r.node_index, r.created_ms, r.created_ms, r.last_sequence,
                r.agent_id, r.tags, r.metadata, r.wait_until, r.outputs, r.error
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],
                     $6::text[], $7::text[], $8::text[], $9::bigint[], $10::text[],
                     $11::text[], $12::text[], $13::bigint[], $14::bigint[], $15::bigint[],
                     $16::text[], $17::text[])
              AS r(run_id, tenant, workflow_id, status, owner, transport, inputs, state,
                   created_ms, agent_id, tags, metadata, node_index, last_sequence,
                   wait_until, outputs, error)
         ORDER BY r.tenant, r.status
         RETURNING run_id, list_order
     ), appended AS (INSERT INTO events (",
    sql::event_cols!(),
    ") SELECT * FROM unnest($18::text[], $19::bigint[], $20::text[], $21::text[],
                           $22::text[], $23::text[], $24::bigint[])
     )
     SELECT run_id, list_order FROM created"
);

async fn insert_batch(
    c: &deadpool_postgres::Object,
    batch: &[Pending<NewRow, RunRecord>],
) -> Result<HashMap<String, i64>, StoreError> {
    let runs = || batch.iter().map(|p| &p.call.run);
    let text = |f: fn(&RunRecord) -> &str| runs().map(f).collect::<Vec<&str>>();
    let json = |f: fn(&RunRecord) -> Option<&Value>| {
        runs()
            .map(|r| f(r).map(Value::to_string))
            .collect::<Vec<Option<String>>>()
    };
    let ids = text(|r| &r.run_id);
    let tenants = text(|r| &r.tenant);
    let workflows = text(|r| &r.workflow_id);
    let statuses = text(|r| r.status.as_str());
    let owners: Vec<String> = runs().map(|r| r.owner.to_string()).collect();
    let transports = text(|r| &r.transport);
    let inputs: Vec<String> = runs().map(|r| r.inputs.to_string()).collect();
    let states: Vec<String> = runs().map(|r| r.state.to_string()).collect();
    let created: Vec<i64> = runs().map(|r| r.created_ms).collect();
    let agents: Vec<Option<&str>> = runs().map(|r| r.annotations.agent_id.as_deref()).collect();
    let tags = json(|r| r.annotations.tags.as_ref());
    let metadata = json(|r| r.annotations.metadata.as_ref());
    let node_index: Vec<i64> = runs().map(|r| r.node_index).collect();
    let last_sequence: Vec<i64> = runs().map(|r| r.last_sequence).collect();
    let wait_until: Vec<Option<i64>> = runs().map(|r| r.wait_until).collect();
    let outputs = json(|r| r.outputs.as_ref());
    let errors = json(|r| r.error.as_ref());

    let events = || {
        batch.iter().flat_map(|p| {
            p.call
                .events
                .iter()
                .enumerate()
                .map(move |(i, e)| (&p.call.run, i, e))
        })
    };
    let ev_runs: Vec<&str> = events().map(|(r, _, _)| r.run_id.as_str()).collect();
    // As a single creation numbers them: from 0, in the order the plan gave.
    let ev_seqs: Vec<i64> = events().map(|(_, i, _)| i as i64).collect();
    let ev_ids: Vec<String> = events().map(|_| crate::ids::mint_event_id()).collect();
    let ev_types: Vec<&str> = events().map(|(_, _, e)| e.event_type.as_str()).collect();
    let ev_nodes: Vec<Option<&str>> = events().map(|(_, _, e)| e.node_id.as_deref()).collect();
    let ev_payloads: Vec<String> = events().map(|(_, _, e)| e.payload.to_string()).collect();
    let ev_times: Vec<i64> = events().map(|(r, _, _)| r.created_ms).collect();

    let rows = all(
        c,
        CREATE_BATCH,
        &[
            &ids,
            &tenants,
            &workflows,
            &statuses,
            &owners,
            &transports,
            &inputs,
            &states,
            &created,
            &agents,
            &tags,
            &metadata,
            &node_index,
            &last_sequence,
            &wait_until,
            &outputs,
            &errors,
            &ev_runs,
            &ev_seqs,
            &ev_ids,
            &ev_types,
            &ev_nodes,
            &ev_payloads,
            &ev_times,
        ],
        |r| Ok((r.text_at(0)?, r.int_at(1)?)),
    )
    .await?;
    Ok(rows.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::super::PgStore;
    use crate::store::scratch::{ScratchSchema, skip_postgres};
    use crate::store::{RunStore, suite::new_run};

    /// The batched read is prepared once per pooled connection and may be kept as a
    /// generic plan made while `runs` is empty or small (a new database): that plan must
    /// still probe `runs` by its run-id index, never scan the table, or the connection
    /// scans every run for each read as the table grows (`super::RUN_DETAILS`).
    #[tokio::test(flavor = "multi_thread")]
    async fn batched_reads_probe_the_run_id_index_even_as_a_generic_plan_on_an_empty_table() {
        if skip_postgres("batch::batched_reads_probe_the_run_id_index") {
            return;
        }
        let schema = ScratchSchema::create().await.expect("PostgreSQL");
        // Migrated, and no run stored.
        drop(PgStore::connect(&schema.url()).await.expect("connect"));
        let (client, conn) = tokio_postgres::connect(&schema.url(), tokio_postgres::NoTls)
            .await
            .expect("connect");
        tokio::spawn(conn);
        let explain = format!(
            "PREPARE details(text[]) AS {};
             SET plan_cache_mode = force_generic_plan;
             EXPLAIN EXECUTE details('{{t/a,t/b}}')",
            super::super::RUN_DETAILS
        );
        let plan: Vec<String> = client
            .simple_query(&explain)
            .await
            .expect("explain")
            .into_iter()
            .filter_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_owned),
                _ => None,
            })
            .collect();
        let plan = plan.join("\n");
        assert!(
            plan.contains("Index Scan using runs_run_id_key on runs")
                && !plan.contains("Seq Scan on runs")
                && !plan.contains("Bitmap Heap Scan on runs"),
            "the generic plan reads runs otherwise than one probe per id:\n{plan}"
        );
    }

    /// Many `getRun` reads at once share statements, and each gets its own run's detail
    /// (a run asked for twice, twice; a run that does not exist, `None`).
    #[tokio::test(flavor = "multi_thread")]
    async fn concurrent_reads_share_statements_and_each_gets_its_own_run() {
        if skip_postgres("batch::concurrent_reads_share_statements") {
            return;
        }
        let schema = ScratchSchema::create().await.expect("PostgreSQL");
        let store = PgStore::connect(&schema.url()).await.expect("connect");
        for i in 0..3 {
            store
                .create_run(new_run(&format!("t/r{i}")), None)
                .await
                .expect("create");
        }
        let before = store.inner.details.sent();
        let reads: Vec<_> = (0..48)
            .map(|i| {
                let store = store.clone();
                tokio::spawn(async move {
                    let id = format!("t/r{}", i % 4);
                    (store.run_detail(&id).await.expect("read"), id)
                })
            })
            .collect();
        for read in reads {
            let (detail, id) = read.await.expect("task");
            match detail {
                Some(d) => assert_eq!(d.run.run_id, id),
                None => assert_eq!(id, "t/r3", "only the run never created is absent"),
            }
        }
        let statements = store.inner.details.sent() - before;
        assert!(statements < 48, "{statements} statements for 48 reads");
        // `/metrics` counts them too (process-wide: other tests add to it).
        let (_, batches, calls) = crate::store::latency::batches()
            .into_iter()
            .find(|(kind, ..)| matches!(kind, crate::store::latency::Batched::Detail))
            .expect("detail batches counted");
        assert!(
            batches >= statements && calls >= 48,
            "{batches} batches, {calls} calls"
        );
    }
}
