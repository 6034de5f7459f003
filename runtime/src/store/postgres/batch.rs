//! Plain creations written together: concurrent creations with nothing beside the run and
//! its events (no idempotency key, no A2A task, no interrupt, no durable host event: what
//! a REST `POST /runs` without `Idempotency-Key` writes) go in one statement and one
//! commit, as SQLite's writer groups its commits (issue #33).
//!
//! A creation's cost on PostgreSQL is mostly the server's per-statement and per-commit
//! work, not its rows: measured with pgbench (-M prepared, 8 clients, the `echo` run and
//! its four events at migration 11), the server spent 0.355-0.375 ms of CPU per run with
//! one run per statement and 0.110-0.127 ms with eight.
//!
//! No timer: a batch is whatever was queued when a connection for it became free. At most
//! [`IN_FLIGHT`] batch statements run at once, so a lone creation is written at once (one
//! statement, [`CREATE_PLAIN`](super::CREATE_PLAIN), as before), and under load the
//! creations that arrive while the statements in flight commit wait for the next one.
//! Rows go in ordered by (tenant, status), the order every other writer of `run_counts`
//! takes its rows in, so two batches whose count triggers share a slot cannot deadlock.
//! A batch that fails for a reason that is not transient is written again one run at a
//! time, so one bad creation fails alone.

use super::{NewRow, all, insert_new_run};
use crate::store::{RunRecord, StoreError, sql};
use deadpool_postgres::Pool;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::{Semaphore, mpsc, oneshot};

/// Creations one statement writes at most.
const MAX_BATCH: usize = 64;

/// Batch statements in flight at once, each on its own pooled connection.
const IN_FLIGHT: usize = 2;

/// A creation waiting for its batch, and where its outcome goes.
struct Pending {
    row: NewRow,
    reply: oneshot::Sender<Result<RunRecord, StoreError>>,
}

/// The queue of plain creations and the task that writes them.
pub(super) struct Creates {
    queue: mpsc::UnboundedSender<Pending>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Creates {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Creates {
    pub(super) fn start(pool: Pool) -> Creates {
        // Unbounded: each entry is a request awaiting its answer, so the queue is
        // bounded by the requests the host admits (its concurrency limit).
        let (queue, rx) = mpsc::unbounded_channel();
        let task = tokio::spawn(run(pool, rx));
        Creates { queue, task }
    }

    /// Writes `row` (a run with its first change applied and its events) in the next
    /// batch; the run as stored.
    pub(super) async fn create(&self, row: NewRow) -> Result<RunRecord, StoreError> {
        let (reply, answer) = oneshot::channel();
        self.queue
            .send(Pending { row, reply })
            .map_err(|_| StoreError::Unavailable("the store is shutting down".into()))?;
        answer.await.unwrap_or_else(|_| {
            Err(StoreError::Unavailable(
                "the creation was not written".into(),
            ))
        })
    }
}

async fn run(pool: Pool, mut rx: mpsc::UnboundedReceiver<Pending>) {
    let slots = Arc::new(Semaphore::new(IN_FLIGHT));
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
        let pool = pool.clone();
        tokio::spawn(async move {
            write(&pool, batch).await;
            drop(slot);
        });
    }
}

/// Writes one batch and answers each of its creations.
async fn write(pool: &Pool, batch: Vec<Pending>) {
    let client = match pool.get().await {
        Ok(c) => c,
        Err(e) => {
            let e = StoreError::from(e);
            for p in batch {
                let _ = p.reply.send(Err(copy(&e)));
            }
            return;
        }
    };
    if batch.len() > 1 {
        match insert_batch(&client, &batch).await {
            Ok(mut orders) => {
                for mut p in batch {
                    let out = match orders.remove(&p.row.run.run_id) {
                        Some(order) => {
                            p.row.run.list_order = order;
                            Ok(p.row.run)
                        }
                        None => Err(StoreError::Database("a run was not created".into())),
                    };
                    let _ = p.reply.send(out);
                }
                return;
            }
            // Nothing was written; the fault is the server's, not a creation's.
            Err(e @ StoreError::Unavailable(_)) => {
                for p in batch {
                    let _ = p.reply.send(Err(copy(&e)));
                }
                return;
            }
            // One creation may be at fault: each on its own, so only it fails.
            Err(_) => {}
        }
    }
    for p in batch {
        let out = insert_new_run(&client, &p.row, None, None)
            .await
            .and_then(|run| {
                run.ok_or_else(|| StoreError::Database("a run was not created".into()))
            });
        let _ = p.reply.send(out);
    }
}

/// The batch's error for each of its creations.
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
    batch: &[Pending],
) -> Result<HashMap<String, i64>, StoreError> {
    let runs = || batch.iter().map(|p| &p.row.run);
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
            p.row
                .events
                .iter()
                .enumerate()
                .map(move |(i, e)| (&p.row.run, i, e))
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
