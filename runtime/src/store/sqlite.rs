//! The embedded default store: one SQLite file (`openwop.sqlite3` in the data dir) in WAL
//! mode, holding the runs and the interop state alike.
//!
//! Store threads own the connections: one writer and a few readers, each fed calls
//! through its own channel (reads go to the readers in turn) and answering on a oneshot,
//! so a store call is one hand-off to a thread that is already there (no blocking-pool
//! task per call). Every statement is
//! compiled once per connection and kept (`prepare_cached`).

pub(super) mod backup;
mod conn;
mod dir_lock;
mod interop;
mod legacy;
mod schema;
mod stamps;

use super::sql::{self, RunStatement};
use super::*;
use crate::clock::now_ms;
use conn::{Job, WriteJob, call, call_write, open, spawn_worker, spawn_writer};
pub(super) use conn::{Tx, all, exec, one};
use rusqlite::{Connection, params};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

const READERS: usize = 3;

/// Connections for point reads made on the calling thread ([`SqliteStore::read_here`]):
/// as many as reads can be in flight at once on the runtime's threads, more than enough.
const HERE: usize = 4;

/// The database file in the data dir.
pub const FILE: &str = "openwop.sqlite3";

struct Inner {
    /// The writer thread's queue: every write, in arrival order.
    writer: mpsc::Sender<WriteJob>,
    /// One queue per reader thread, taken in turn (a shared queue would make the idle
    /// readers contend for it on every call).
    readers: Vec<mpsc::Sender<Job>>,
    next_reader: AtomicUsize,
    /// Reader connections free for [`SqliteStore::read_here`].
    here: std::sync::Mutex<Vec<Connection>>,
    wakeups: WakeHub,
    /// How the last write ended (`/readyz` turns not-ready while writes fail).
    write_health: super::WriteHealth,
    /// The runs' detail stamps, moved by the writer after each commit.
    stamps: Arc<stamps::Stamps>,
    /// This process's exclusive hold on the data dir (released with the last store).
    _lock: Arc<dir_lock::DirLock>,
}

/// SQLite behind [`RunStore`] and [`InteropStore`].
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

impl SqliteStore {
    /// Opens (creating if needed) `dir/openwop.sqlite3`, brings its schema up to date and
    /// takes in the A2A push state an older release kept in `dir/a2a.sqlite` (once).
    pub fn open(dir: &Path) -> Result<Self, StoreError> {
        std::fs::create_dir_all(dir).map_err(|e| {
            StoreError::Database(format!("cannot create data dir {}: {e}", dir.display()))
        })?;
        // Before the file is opened: a second process touches nothing.
        let lock = dir_lock::acquire(dir)?;
        let path = dir.join(FILE);
        let mut writer = open(&path)?;
        schema::migrate(&mut writer)?;
        legacy::import_push_file(dir, &mut writer)?;
        let stamps = Arc::new(stamps::Stamps::default());
        let writer = spawn_writer(writer, stamps.clone())?;
        let mut readers = Vec::with_capacity(READERS);
        for i in 0..READERS {
            readers.push(spawn_worker(
                &format!("openwop-sqlite-reader-{i}"),
                open(&path)?,
            )?);
        }
        let mut here = Vec::with_capacity(HERE);
        for _ in 0..HERE {
            here.push(open(&path)?);
        }
        Ok(Self {
            inner: Arc::new(Inner {
                writer,
                readers,
                next_reader: AtomicUsize::new(0),
                here: std::sync::Mutex::new(here),
                wakeups: WakeHub::default(),
                write_health: super::WriteHealth::default(),
                stamps,
                _lock: lock,
            }),
        })
    }

    /// A write made for no one run: if it changes a row a run's detail is read from,
    /// every run's detail stamp moves (`stamps`).
    fn write<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> StoreFuture<'static, T> {
        self.write_for(|_| None, f)
    }

    /// A write made for the run `run_id`, changing no other run's row, interrupt or task.
    fn write_run<T: Send + 'static>(
        &self,
        run_id: String,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> StoreFuture<'static, T> {
        self.write_for(move |_| Some(run_id), f)
    }

    /// A write whose run is told from its result (`run`).
    fn write_for<T: Send + 'static>(
        &self,
        run: impl FnOnce(&Result<T, StoreError>) -> Option<String> + Send + 'static,
        f: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> StoreFuture<'static, T> {
        let written = call_write(self.inner.writer.clone(), run, f);
        let inner = self.inner.clone();
        Box::pin(async move {
            let out = written.await;
            inner.write_health.note(&out);
            out
        })
    }

    fn read<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> StoreFuture<'static, T> {
        let i = self.inner.next_reader.fetch_add(1, Ordering::Relaxed) % self.inner.readers.len();
        call(self.inner.readers[i].clone(), move |conn| f(conn))
    }
}

impl SqliteStore {
    /// A point read (a run by id, its interrupt, its task side, a page of its events),
    /// run on the calling thread when first polled, with a pooled connection: a lookup by
    /// key takes microseconds, less than the hand-off to a reader thread and back (two
    /// context switches, which were most of a GET's cost). Reads that can scan (listings,
    /// counts) stay on the reader threads, and so does a point read that finds every
    /// pooled connection in use. WAL readers never wait for the writer.
    pub(super) fn read_here<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> StoreFuture<'static, T> {
        let inner = self.inner.clone();
        Box::pin(async move {
            let pooled = inner.here.lock().ok().and_then(|mut free| free.pop());
            let Some(conn) = pooled else {
                let i = inner.next_reader.fetch_add(1, Ordering::Relaxed) % inner.readers.len();
                return call(inner.readers[i].clone(), move |conn| f(conn)).await;
            };
            let started = std::time::Instant::now();
            // A call that panics fails alone, as on a store thread.
            let out = std::panic::catch_unwind(AssertUnwindSafe(|| f(&conn)))
                .unwrap_or_else(|_| Err(StoreError::Database("a store call panicked".into())));
            if let Ok(mut free) = inner.here.lock() {
                free.push(conn);
            }
            super::latency::record(super::latency::Backend::Sqlite, started.elapsed());
            out
        })
    }
}

/// Stores a durable host event, assigning its `seq`.
fn insert_host_event(
    conn: &Connection,
    event: HostEventRecord,
) -> Result<HostEventRecord, StoreError> {
    exec(
        conn,
        sql::INSERT_HOST_EVENT_ROW,
        params![
            event.tenant,
            event.event_id,
            event.event_type,
            event.delivery,
            event.workspace_id,
            event.payload.to_string(),
            event.timestamp_ms
        ],
    )?;
    Ok(HostEventRecord {
        seq: conn.last_insert_rowid(),
        ..event
    })
}

fn load_run(conn: &Connection, run_id: &str) -> Result<Option<RunRecord>, StoreError> {
    one(conn, sql::RUN_BY_ID, [run_id], sql::run)
}

/// A run, its open interrupt and its A2A contextId, read on `conn` (inside the caller's
/// read transaction, so the three agree); `None` when there is no such run.
fn read_detail(conn: &Connection, run_id: &str) -> Result<Option<RunDetail>, StoreError> {
    let Some((run, context_id)) = one(conn, sql::RUN_DETAIL_BY_ID, [run_id], sql::run_and_context)?
    else {
        return Ok(None);
    };
    let open_interrupt = one(conn, sql::OPEN_INTERRUPT_OF, [run_id], sql::interrupt)?;
    Ok(Some(RunDetail {
        open_interrupt,
        context_id,
        run,
    }))
}

/// Inserts a new run's row (`sql::INSERT_RUN`) and gives the record the `list_order`
/// the database assigned. The record is not read back (that meant parsing its JSON
/// columns again); debug builds check it ([`check_written`]).
fn insert_run(tx: &Connection, run: &mut RunRecord) -> Result<(), StoreError> {
    let json = |v: &Option<serde_json::Value>| v.as_ref().map(serde_json::Value::to_string);
    exec(
        tx,
        sql::INSERT_RUN,
        params![
            run.run_id,
            run.tenant,
            run.workflow_id,
            run.status.as_str(),
            run.owner.to_string(),
            run.transport,
            run.inputs.to_string(),
            run.state.to_string(),
            json(&run.outputs),
            json(&run.error),
            run.node_index,
            run.wait_until,
            run.created_ms,
            run.updated_ms,
            run.last_sequence,
            run.annotations.agent_id,
            json(&run.annotations.tags),
            json(&run.annotations.metadata)
        ],
    )?;
    run.list_order = tx.last_insert_rowid();
    Ok(())
}

/// Debug builds: the record the writer built is the row the database holds.
fn check_written(tx: &Connection, record: &RunRecord) -> Result<(), StoreError> {
    if cfg!(debug_assertions) {
        let stored = load_run(tx, &record.run_id)?;
        assert_eq!(
            stored.as_ref(),
            Some(record),
            "the writer's record is not the stored row"
        );
    }
    Ok(())
}

/// Appends `events` to a run's log from sequence `first`, all at `now`.
fn append_events(
    tx: &Connection,
    run_id: &str,
    first: i64,
    events: Vec<NewEvent>,
    now: i64,
) -> Result<Vec<EventRecord>, StoreError> {
    let mut stored = Vec::with_capacity(events.len());
    for (seq, ev) in (first..).zip(events) {
        let rec = EventRecord {
            run_id: run_id.to_owned(),
            sequence: seq,
            event_id: crate::ids::mint_event_id(),
            event_type: ev.event_type,
            node_id: ev.node_id,
            payload: ev.payload,
            timestamp_ms: now,
        };
        exec(
            tx,
            sql::INSERT_EVENT,
            params![
                rec.run_id,
                rec.sequence,
                rec.event_id,
                rec.event_type,
                rec.node_id,
                rec.payload.to_string(),
                rec.timestamp_ms
            ],
        )?;
        stored.push(rec);
    }
    Ok(stored)
}

/// Opens an interrupt of a run; refused while one is open at that node.
fn open_interrupt(tx: &Connection, run_id: &str, i: &NewInterrupt) -> Result<(), StoreError> {
    let opened = exec(
        tx,
        sql::OPEN_INTERRUPT,
        params![
            run_id,
            i.node_id,
            i.interrupt_id,
            i.kind,
            i.data.to_string()
        ],
    )?;
    if opened != 1 {
        return Err(StoreError::Database(format!(
            "an interrupt is already open at node {} of run {run_id}",
            i.node_id
        )));
    }
    Ok(())
}

/// Applies a patch and appends events inside an open transaction.
fn apply(
    tx: &Connection,
    run: RunRecord,
    mut patch: RunPatch,
    events: Vec<NewEvent>,
) -> Result<Advanced, StoreError> {
    let now = now_ms();
    let stored = append_events(tx, &run.run_id, run.last_sequence + 1, events, now)?;
    if patch.close_interrupts {
        exec(tx, sql::CLOSE_INTERRUPTS, [&run.run_id])?;
    }
    if let Some(opening) = &patch.open_interrupt {
        open_interrupt(tx, &run.run_id, opening)?;
    }
    let c = sql::patch(&patch);
    let changed = exec(
        tx,
        sql::APPLY_PATCH,
        params![
            run.run_id,
            c.status,
            c.node_index,
            c.set_wait,
            c.wait_until,
            c.state,
            c.outputs,
            c.error,
            stored.len() as i64,
            now
        ],
    )?;
    if changed != 1 {
        return Err(StoreError::RunNotFound(run.run_id));
    }
    // What `sql::APPLY_PATCH` did to the row, done to the record in hand instead of
    // reading the row back (see `inserted`).
    let mut next = run;
    next.apply(&mut patch, stored.len(), now);
    check_written(tx, &next)?;
    Ok(Advanced {
        run: next,
        events: stored,
    })
}

impl RunStore for SqliteStore {
    fn create_run_with(
        &self,
        run: NewRun,
        idempotency: Option<IdempotencyClaim>,
        with: CreateWith,
    ) -> StoreFuture<'_, Created> {
        let wakeups = self.inner.wakeups.clone();
        // Made for the run it answers with: the new one, or the one its key replays (whose
        // A2A task it may bind).
        let made_for = |out: &Result<(Created, bool), StoreError>| {
            out.as_ref().ok().map(|(c, _)| c.run.run_id.clone())
        };
        let fut = self.write_for(made_for, move |conn| {
            let tx = Tx::write(conn)?;
            let now = now_ms();
            let mut replayed = None;
            if let Some(claim) = &idempotency {
                let held = one(
                    &tx,
                    sql::KEY_HELD,
                    params![claim.tenant, claim.principal, claim.key],
                    |r| Ok((r.text("body_hash")?, r.text("run_id")?)),
                )?;
                if let Some((hash, run_id)) = held {
                    if hash != claim.body_hash && !claim.any_body {
                        return Err(StoreError::IdempotencyMismatch);
                    }
                    replayed =
                        Some(load_run(&tx, &run_id)?.ok_or(StoreError::RunNotFound(run_id))?);
                }
            }
            let replay = replayed.is_some();
            let mut stepped = false;
            let created = match replayed {
                Some(existing) => existing,
                None => {
                    // The first step is planned from the run as it will be inserted (the
                    // database adds only its `list_order`, which no plan reads) and applied
                    // in memory, so the row is written once, already changed, instead of
                    // inserted and then updated through its five indexes again.
                    let mut record = RunRecord::inserted(run, now, 0);
                    let mut step = None;
                    if let Some((mut patch, events)) =
                        with.first_step.and_then(|plan| plan(&record))
                    {
                        record.apply(&mut patch, events.len(), now);
                        step = Some((patch, events));
                    }
                    insert_run(&tx, &mut record)?;
                    if let Some((patch, events)) = step {
                        stepped = true;
                        append_events(&tx, &record.run_id, 0, events, now)?;
                        if let Some(opening) = &patch.open_interrupt {
                            open_interrupt(&tx, &record.run_id, opening)?;
                        }
                    }
                    check_written(&tx, &record)?;
                    if let Some(claim) = &idempotency {
                        exec(
                            &tx,
                            sql::CLAIM_KEY,
                            params![
                                claim.tenant,
                                claim.principal,
                                claim.key,
                                claim.body_hash,
                                record.run_id,
                                now
                            ],
                        )?;
                    }
                    record
                }
            };
            let context_id = match with.a2a {
                Some(a2a) => Some(interop::start_task(&tx, &created.run_id, a2a)?),
                None => None,
            };
            let mut host_events = Vec::with_capacity(with.host_events.len());
            for ev in with.host_events {
                host_events.push(if ev.delivery == "durable" {
                    insert_host_event(&tx, ev)?
                } else {
                    ev
                });
            }
            tx.commit()?;
            Ok((
                Created {
                    run: created,
                    replay,
                    context_id,
                    host_events,
                },
                stepped,
            ))
        });
        Box::pin(async move {
            let (created, stepped) = fut.await?;
            if stepped {
                wakeups.publish(Wake::Run(created.run.run_id.clone()));
            }
            for ev in &created.host_events {
                wakeups.publish_host(ev);
            }
            Ok(created)
        })
    }

    fn get_run(&self, run_id: &str) -> StoreFuture<'_, Option<RunRecord>> {
        let run_id = run_id.to_owned();
        self.read_here(move |conn| load_run(conn, &run_id))
    }

    fn query_runs(&self, q: RunQuery) -> StoreFuture<'_, RunPage> {
        self.read(move |conn| {
            let f = sql::filter(&q);
            let limit = i64::try_from(q.limit).unwrap_or(i64::MAX);
            // One read transaction: the page and the count see the same snapshot.
            let tx = Tx::read(conn)?;
            let runs = match &q.order {
                RunOrder::Created { before } => all(
                    &tx,
                    sql::run_statement(RunStatement::ByCreation, &q, &f),
                    params![
                        q.tenant,
                        f.statuses,
                        q.workflow_id,
                        q.context_id,
                        q.updated_since_ms,
                        f.with_kinds,
                        f.without_kinds,
                        before,
                        limit
                    ],
                    sql::run,
                )?,
                RunOrder::Updated { after } => all(
                    &tx,
                    sql::run_statement(RunStatement::ByUpdate, &q, &f),
                    params![
                        q.tenant,
                        f.statuses,
                        q.workflow_id,
                        q.context_id,
                        q.updated_since_ms,
                        f.with_kinds,
                        f.without_kinds,
                        after.as_ref().map(|c| c.updated_ms),
                        after.as_ref().map(|c| c.run_id.as_str()),
                        limit
                    ],
                    sql::run,
                )?,
            };
            let total = if q.count_total && sql::counted(&q, &f) {
                one(&tx, sql::RUN_TOTAL, params![q.tenant, f.statuses], |r| {
                    r.int("total")
                })?
                .map(|n| u64::try_from(n).unwrap_or(0))
            } else if q.count_total {
                one(
                    &tx,
                    sql::run_statement(RunStatement::Count, &q, &f),
                    params![
                        q.tenant,
                        f.statuses,
                        q.workflow_id,
                        q.context_id,
                        q.updated_since_ms,
                        f.with_kinds,
                        f.without_kinds
                    ],
                    |r| r.int("total"),
                )?
                .map(|n| u64::try_from(n).unwrap_or(0))
            } else {
                None
            };
            tx.commit()?;
            Ok(RunPage { runs, total })
        })
    }

    fn unfinished_runs(&self) -> StoreFuture<'_, Vec<RunRecord>> {
        self.read(move |conn| all(conn, sql::UNFINISHED_RUNS, [], sql::run))
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
        let fut = self.write_run(run_id.clone(), move |conn| {
            let tx = Tx::write(conn)?;
            let run =
                load_run(&tx, &run_id)?.ok_or_else(|| StoreError::RunNotFound(run_id.clone()))?;
            if !guard.admits(run.status) {
                return Err(StoreError::Guard { status: run.status });
            }
            let out = apply(&tx, run, patch, events)?;
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
        resume_value: serde_json::Value,
        on_resolve: OnResolve,
    ) -> StoreFuture<'_, Advanced> {
        let run_id = run_id.to_owned();
        let node_id = node_id.to_owned();
        let wakeups = self.inner.wakeups.clone();
        let fut = self.write_run(run_id.clone(), move |conn| {
            let tx = Tx::write(conn)?;
            let resolved = one(
                &tx,
                sql::RESOLVE_INTERRUPT,
                params![run_id, node_id, resume_value.to_string()],
                sql::interrupt,
            )?;
            let Some(interrupt) = resolved else {
                return Err(
                    if one(&tx, sql::INTERRUPT_AT, params![run_id, node_id], |_| Ok(()))?.is_some()
                    {
                        StoreError::InterruptAlreadyResolved
                    } else {
                        StoreError::NoOpenInterrupt
                    },
                );
            };
            let run =
                load_run(&tx, &run_id)?.ok_or_else(|| StoreError::RunNotFound(run_id.clone()))?;
            let (patch, events) = on_resolve(&interrupt, &run);
            let out = apply(&tx, run, patch, events)?;
            tx.commit()?;
            Ok(out)
        });
        Box::pin(async move {
            let out = fut.await?;
            wakeups.publish(Wake::Run(out.run.run_id.clone()));
            Ok(out)
        })
    }

    fn run_detail(&self, run_id: &str) -> StoreFuture<'_, Option<RunDetail>> {
        let run_id = run_id.to_owned();
        self.read_here(move |conn| {
            // One read transaction: the run and its open interrupt as of one commit (a run
            // read as waiting always shows the interrupt it waits on).
            let tx = Tx::read(conn)?;
            let detail = read_detail(&tx, &run_id)?;
            tx.commit()?;
            Ok(detail)
        })
    }

    fn detail_stamp(&self, run_id: &str) -> Option<u64> {
        // Only this process writes the file (the data dir's lock), all through the writer
        // thread, which moves the stamps.
        self.inner.stamps.stamp(run_id)
    }

    fn run_details(&self, run_ids: Vec<String>) -> StoreFuture<'_, Vec<RunDetail>> {
        self.read_here(move |conn| {
            // One read transaction and one trip to the reader: a page as of one commit.
            let tx = Tx::read(conn)?;
            let mut out = Vec::with_capacity(run_ids.len());
            for run_id in &run_ids {
                out.extend(read_detail(&tx, run_id)?);
            }
            tx.commit()?;
            Ok(out)
        })
    }

    fn open_interrupt(&self, run_id: &str) -> StoreFuture<'_, Option<InterruptRecord>> {
        let run_id = run_id.to_owned();
        self.read_here(move |conn| one(conn, sql::OPEN_INTERRUPT_OF, [run_id], sql::interrupt))
    }

    fn events_since(
        &self,
        run_id: &str,
        after: i64,
        limit: usize,
    ) -> StoreFuture<'_, Vec<EventRecord>> {
        let run_id = run_id.to_owned();
        self.read_here(move |conn| {
            all(
                conn,
                sql::EVENTS_SINCE,
                params![run_id, after, limit as i64],
                sql::event,
            )
        })
    }

    fn append_host_event(&self, event: HostEventRecord) -> StoreFuture<'_, HostEventRecord> {
        let wakeups = self.inner.wakeups.clone();
        if event.delivery != "durable" {
            return Box::pin(async move {
                wakeups.publish_host(&event);
                Ok(event)
            });
        }
        let fut = self.write(move |conn| insert_host_event(conn, event));
        Box::pin(async move {
            let stored = fut.await?;
            wakeups.publish_host(&stored);
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
            all(
                conn,
                sql::HOST_EVENTS_SINCE,
                params![tenant, after, limit as i64],
                sql::host_event,
            )
        })
    }

    fn host_event_seq(&self, tenant: &str, event_id: &str) -> StoreFuture<'_, Option<i64>> {
        let (tenant, event_id) = (tenant.to_owned(), event_id.to_owned());
        self.read(move |conn| {
            one(conn, sql::HOST_EVENT_SEQ, params![event_id, tenant], |r| {
                r.int("seq")
            })
        })
    }

    fn subscribe(&self, topics: &[Topic]) -> Subscription {
        self.inner.wakeups.subscribe(topics)
    }

    // One process owns the file, so there is nobody to share a run with.
    fn acquire_lease(&self, _run_id: &str, _owner: &str, _ttl_ms: i64) -> StoreFuture<'_, bool> {
        Box::pin(async { Ok(true) })
    }

    fn release_lease(&self, _run_id: &str, _owner: &str) -> StoreFuture<'_, ()> {
        Box::pin(async { Ok(()) })
    }

    fn unleased_runs(&self, statuses: &'static [RunStatus]) -> StoreFuture<'_, Vec<String>> {
        let statuses = sql::statuses(statuses);
        self.read(move |conn| all(conn, sql::RUN_IDS_IN, [statuses], |r| r.text("run_id")))
    }

    fn shared_secret(&self, name: &str, candidate: Vec<u8>) -> StoreFuture<'_, Vec<u8>> {
        let name = name.to_owned();
        self.write(move |conn| {
            exec(conn, sql::OFFER_SECRET, params![name, candidate])?;
            one(conn, sql::SECRET_BY_NAME, [name], |r| r.bytes("value"))?
                .ok_or_else(|| StoreError::Database("a secret vanished".into()))
        })
    }

    fn write_fault(&self) -> Option<String> {
        self.inner.write_health.fault()
    }

    fn probe_write(&self) -> StoreFuture<'_, ()> {
        self.write(move |conn| {
            exec(
                conn,
                "INSERT INTO secrets (name, value) VALUES ('openwop.readiness-probe', ?1) \
                 ON CONFLICT (name) DO UPDATE SET value = excluded.value",
                params![crate::clock::now_ms().to_be_bytes().to_vec()],
            )?;
            Ok(())
        })
    }

    fn prune_host_events(
        &self,
        keep: i64,
        before_ms: i64,
        floors: std::collections::HashMap<String, i64>,
    ) -> StoreFuture<'_, u64> {
        self.write(move |conn| {
            let tx = Tx::write(conn)?;
            let tenants = all(&tx, sql::HOST_EVENT_TENANTS, [], |r| r.text("tenant"))?;
            let mut dropped = 0u64;
            for tenant in tenants {
                let count_cut = one(&tx, sql::HOST_EVENT_COUNT_CUT, params![tenant, keep], |r| {
                    r.int("seq")
                })?;
                let age_cut = one(
                    &tx,
                    sql::HOST_EVENT_AGE_CUT,
                    params![tenant, before_ms],
                    |r| r.opt_int("seq"),
                )?
                .flatten();
                if let Some(cut) =
                    sql::host_event_cut(count_cut, age_cut, floors.get(&tenant).copied())
                {
                    dropped += exec(&tx, sql::PRUNE_HOST_EVENTS, params![tenant, cut])? as u64;
                }
            }
            tx.commit()?;
            Ok(dropped)
        })
    }

    fn schema_version(&self) -> StoreFuture<'_, i64> {
        self.read(|conn| Ok(one(conn, sql::SCHEMA_VERSION, [], |r| r.int("version"))?.unwrap_or(0)))
    }

    fn gauges(&self) -> StoreFuture<'_, StoreGauges> {
        self.read(|conn| {
            let tx = Tx::read(conn)?;
            let runs = all(&tx, sql::RUN_COUNTS, [], |r| {
                Ok((r.text("status")?, r.int("n")?))
            })?;
            let push = one(&tx, sql::PUSH_COUNTS, [], |r| {
                Ok((r.int("pending")?, r.int("dead")?))
            })?
            .unwrap_or((0, 0));
            sql::gauges(runs, push)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A write made for no run that changes a run's row (a path that forgot to say its
    /// run) moves every run's detail stamp: it costs kept answers, never a stale one.
    #[tokio::test(flavor = "multi_thread")]
    async fn a_write_for_no_run_that_changes_a_run_moves_every_stamp() {
        let dir = tempfile::tempdir().unwrap();
        let s = SqliteStore::open(dir.path()).unwrap();
        s.create_run(super::super::suite::new_run("t/a"), None)
            .await
            .unwrap();
        let stamps = |s: &SqliteStore| (s.detail_stamp("t/a"), s.detail_stamp("t/b"));
        let (a, b) = stamps(&s);
        s.write(|conn| {
            conn.execute("UPDATE runs SET workflow_id = 'x' WHERE run_id = 't/a'", [])?;
            Ok(())
        })
        .await
        .unwrap();
        let (a2, b2) = stamps(&s);
        assert!(a2 > a && b2 > b, "{a:?} {b:?} -> {a2:?} {b2:?}");
        // One that changes no run's row moves none.
        s.write(|conn| {
            conn.execute("DELETE FROM claims", [])?;
            Ok(())
        })
        .await
        .unwrap();
        assert_eq!(stamps(&s), (a2, b2));
    }
}
