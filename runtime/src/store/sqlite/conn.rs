//! The SQLite connections: how one is opened, the statement helpers and transactions every
//! store call uses, and the threads that own the connections (each reader runs the calls
//! sent to its queue; the writer takes every write queued meanwhile and commits them as
//! one group, each in its own savepoint). A leaf of `store::sqlite`, whose operations are
//! the parent's.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, OnceLock, RwLock};

use rusqlite::{Connection, Params};

use super::stamps::{Changes, Stamps};
use crate::store::{StoreError, StoreFuture, latency, migrate, sql};

/// Statements each connection keeps compiled: more than the host runs, so none is ever
/// compiled twice.
const STATEMENT_CACHE: usize = 256;

/// A store call, run on the thread that owns a connection.
pub(super) type Job = Box<dyn FnOnce(&mut Connection) + Send>;

/// A write, run on the writer thread, maybe inside a group's transaction
/// ([`Writer::run_group`]): returns whether it failed and what answers its caller once the
/// group's commit is known.
pub(super) type WriteJob = Box<dyn FnOnce(&mut Connection) -> Written + Send>;

/// A write done but not yet answered.
pub(super) struct Written {
    /// Its changes are rolled back (to its savepoint) when it failed.
    failed: bool,
    /// The run it was made for, if any: a change it made to a run's detail is stamped as
    /// that run's, and as every run's without one (`stamps`).
    run: Option<String>,
    /// Answers the caller: with its own result once its group committed, else the
    /// commit's error.
    answer: Box<dyn FnOnce(Result<(), StoreError>) + Send>,
}

/// The most writes one group commit takes.
const MAX_GROUP: usize = 64;

/// Opens one connection to the store's file, set up as every store connection is.
pub(super) fn open(path: &Path) -> Result<Connection, StoreError> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(std::time::Duration::from_secs(5))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    // In WAL mode NORMAL keeps every committed transaction through a process crash or
    // SIGKILL (the WAL is written before commit returns); only an OS crash or power loss
    // can drop the last transactions. FULL would fsync each commit, several per run.
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    // Deleted push secrets are overwritten in the file, not merely unlinked.
    conn.pragma_update(None, "secure_delete", "ON")?;
    // The savepoint each write of a group commit runs in keeps its undo pages in a
    // statement journal: in memory, not a temporary file written on every write.
    conn.pragma_update(None, "temp_store", "MEMORY")?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    // One plan per statement, whatever is bound: without this (STAT4 is compiled in) a
    // kept statement is compiled again whenever a parameter the planner looked at (a
    // run id, a limit) takes a new value, which is every call.
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    Ok(conn)
}

/// The SQLite spelling of a shared statement (`migrate::to_sqlite`), made once per
/// statement for the life of the process.
/// Keyed by the statement's address and length, not its text: hashing a few hundred bytes
/// of SQL on every call cost more than the lookup it served (the statements are `'static`
/// constants, so address and length name one; a duplicated constant is spelled twice).
pub(in crate::store) fn lite(pg: &'static str) -> &'static str {
    static SPELLED: OnceLock<RwLock<HashMap<(usize, usize), &'static str>>> = OnceLock::new();
    let map = SPELLED.get_or_init(Default::default);
    let key = (pg.as_ptr() as usize, pg.len());
    if let Some(s) = map.read().ok().and_then(|m| m.get(&key).copied()) {
        return s;
    }
    let spelled: &'static str = Box::leak(migrate::to_sqlite(pg).into_boxed_str());
    if let Ok(mut m) = map.write() {
        return m.entry(key).or_insert(spelled);
    }
    spelled
}

/// Runs a shared statement; the number of rows it changed.
pub(in crate::store) fn exec(
    conn: &Connection,
    pg: &'static str,
    p: impl Params,
) -> Result<usize, StoreError> {
    Ok(conn.prepare_cached(lite(pg))?.execute(p)?)
}

/// The first row of a shared statement, mapped.
pub(in crate::store) fn one<T>(
    conn: &Connection,
    pg: &'static str,
    p: impl Params,
    map: impl FnOnce(&dyn sql::Row) -> Result<T, StoreError>,
) -> Result<Option<T>, StoreError> {
    let mut stmt = conn.prepare_cached(lite(pg))?;
    let mut rows = stmt.query(p)?;
    match rows.next()? {
        Some(r) => Ok(Some(map(r)?)),
        None => Ok(None),
    }
}

/// Every row of a shared statement, mapped.
pub(in crate::store) fn all<T>(
    conn: &Connection,
    pg: &'static str,
    p: impl Params,
    map: impl Fn(&dyn sql::Row) -> Result<T, StoreError>,
) -> Result<Vec<T>, StoreError> {
    let mut stmt = conn.prepare_cached(lite(pg))?;
    let mut rows = stmt.query(p)?;
    let mut out = Vec::new();
    while let Some(r) = rows.next()? {
        out.push(map(r)?);
    }
    Ok(out)
}

/// A transaction whose BEGIN, COMMIT and ROLLBACK are cached statements too (rusqlite's
/// own transactions compile them on every call): rolled back when dropped uncommitted.
pub(in crate::store) struct Tx<'c> {
    conn: &'c Connection,
    open: bool,
}

impl<'c> Tx<'c> {
    /// A write transaction: takes the write lock at once, so its reads stay current.
    pub(in crate::store) fn write(conn: &'c Connection) -> Result<Tx<'c>, StoreError> {
        Self::begin(conn, "BEGIN IMMEDIATE")
    }

    /// A read transaction: every read in it sees one snapshot.
    pub(in crate::store) fn read(conn: &'c Connection) -> Result<Tx<'c>, StoreError> {
        Self::begin(conn, "BEGIN DEFERRED")
    }

    fn begin(conn: &'c Connection, sql: &str) -> Result<Tx<'c>, StoreError> {
        if !conn.is_autocommit() {
            // Inside the writer's group transaction: the savepoint the group takes
            // around this call commits or rolls back what this transaction would.
            return Ok(Tx { conn, open: false });
        }
        conn.prepare_cached(sql)?.execute([])?;
        Ok(Tx { conn, open: true })
    }

    pub(in crate::store) fn commit(mut self) -> Result<(), StoreError> {
        if !self.open {
            return Ok(());
        }
        self.conn.prepare_cached("COMMIT")?.execute([])?;
        self.open = false;
        Ok(())
    }
}

impl std::ops::Deref for Tx<'_> {
    type Target = Connection;

    fn deref(&self) -> &Connection {
        self.conn
    }
}

impl Drop for Tx<'_> {
    fn drop(&mut self) {
        if self.open
            && !self.conn.is_autocommit()
            && let Ok(mut rollback) = self.conn.prepare_cached("ROLLBACK")
        {
            let _ = rollback.execute([]);
        }
    }
}

/// Starts a thread that owns `conn` and runs the calls sent to the returned queue until
/// every sender is gone (the store was dropped).
pub(super) fn spawn_worker(
    name: &str,
    mut conn: Connection,
) -> Result<mpsc::Sender<Job>, StoreError> {
    let (tx, rx) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || {
            while let Ok(job) = rx.recv() {
                job(&mut conn);
            }
        })
        .map_err(|e| StoreError::Database(format!("cannot start a store thread: {e}")))?;
    Ok(tx)
}

/// Starts the writer thread: it takes every write queued meanwhile (up to [`MAX_GROUP`])
/// and commits them together ([`Writer::run_group`]), so concurrent requests share one commit
/// (one set of WAL frames for the pages they all touch) instead of one commit each.
/// After each commit, before answering, it moves the detail stamps of the runs whose
/// detail the commit changed (`stamps`).
pub(super) fn spawn_writer(
    mut conn: Connection,
    stamps: Arc<Stamps>,
) -> Result<mpsc::Sender<WriteJob>, StoreError> {
    // SQLite says which table each changed row is in (triggers' rows included): a run's
    // detail is read from these three, so a write that changed none of them moves no stamp.
    let touched = Arc::new(AtomicBool::new(false));
    let hook = touched.clone();
    conn.update_hook(Some(
        move |_: rusqlite::hooks::Action, _: &str, table: &str, _: i64| {
            if matches!(table, "runs" | "interrupts" | "a2a_tasks") {
                hook.store(true, Ordering::Relaxed);
            }
        },
    ))?;
    let writer = Writer { stamps, touched };
    let (tx, rx) = mpsc::channel::<WriteJob>();
    std::thread::Builder::new()
        .name("openwop-sqlite-writer".to_owned())
        .spawn(move || {
            while let Ok(first) = rx.recv() {
                let mut group = vec![first];
                while group.len() < MAX_GROUP {
                    match rx.try_recv() {
                        Ok(job) => group.push(job),
                        Err(_) => break,
                    }
                }
                writer.run_group(&mut conn, group);
            }
        })
        .map_err(|e| StoreError::Database(format!("cannot start a store thread: {e}")))?;
    Ok(tx)
}

/// The writer thread's own state beside its connection.
struct Writer {
    stamps: Arc<Stamps>,
    /// Set by the connection's update hook when a row of a run's detail changed.
    touched: Arc<AtomicBool>,
}

impl Writer {
    /// Runs one write and notes in `changes` what it changed of a run's detail.
    fn run(&self, conn: &mut Connection, job: WriteJob, changes: &mut Changes) -> Written {
        self.touched.store(false, Ordering::Relaxed);
        let written = job(conn);
        if self.touched.load(Ordering::Relaxed) {
            match &written.run {
                Some(run) => changes.runs.push(run.clone()),
                None => changes.all = true,
            }
        }
        written
    }

    fn one_by_one(&self, conn: &mut Connection, jobs: impl IntoIterator<Item = WriteJob>) {
        for job in jobs {
            let mut changes = Changes::default();
            let written = self.run(conn, job, &mut changes);
            self.stamps.changed(&changes);
            (written.answer)(Ok(()));
        }
    }

    /// Runs writes in one transaction, each inside its own savepoint (a failed write is
    /// rolled back alone), and answers every caller only once the commit is known: no
    /// write is answered before it is committed, and a failed commit fails them all. One
    /// write alone runs as its own transaction, as it always did.
    fn run_group(&self, conn: &mut Connection, group: Vec<WriteJob>) {
        if group.len() == 1 || !conn.is_autocommit() || step(conn, "BEGIN IMMEDIATE").is_err() {
            return self.one_by_one(conn, group);
        }
        let mut changes = Changes::default();
        let mut answers = Vec::with_capacity(group.len());
        let mut jobs = group.into_iter();
        while let Some(job) = jobs.next() {
            let saved = step(conn, "SAVEPOINT grouped");
            let written = self.run(conn, job, &mut changes);
            answers.push(written.answer);
            if saved.is_err() || conn.is_autocommit() {
                // SQLite ended the transaction itself (an I/O error, a full disk): what
                // the group wrote so far is gone; the rest go one at a time.
                self.stamps.changed(&changes);
                for answer in answers {
                    // Only a fault of the database ends a transaction under a savepoint.
                    answer(Err(StoreError::Unavailable(
                        "the write's transaction was rolled back by the database".into(),
                    )));
                }
                return self.one_by_one(conn, jobs);
            }
            if written.failed {
                let _ = step(conn, "ROLLBACK TO grouped");
            }
            let _ = step(conn, "RELEASE grouped");
        }
        let committed = step(conn, "COMMIT");
        // Stamped whether the commit held or not (a stamp moved for nothing costs a cached
        // answer), and before any caller has its answer.
        self.stamps.changed(&changes);
        match committed {
            Ok(()) => {
                for answer in answers {
                    answer(Ok(()));
                }
            }
            Err(e) => {
                if !conn.is_autocommit() {
                    let _ = step(conn, "ROLLBACK");
                }
                let transient = e.is_transient();
                let e = format!("a group commit failed: {e}");
                for answer in answers {
                    answer(Err(if transient {
                        StoreError::Unavailable(e.clone())
                    } else {
                        StoreError::Database(e.clone())
                    }));
                }
            }
        }
    }
}

fn step(conn: &Connection, sql: &str) -> Result<(), StoreError> {
    conn.prepare_cached(sql)?.execute([])?;
    Ok(())
}

/// [`call`] for the writer: the answer waits for the commit of the group the write ran in.
/// `run`: the run the write was made for, told from its result (`Written::run`).
pub(super) fn call_write<T: Send + 'static>(
    queue: mpsc::Sender<WriteJob>,
    run: impl FnOnce(&Result<T, StoreError>) -> Option<String> + Send + 'static,
    f: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
) -> StoreFuture<'static, T> {
    hand_off(queue, move |tx| -> WriteJob {
        Box::new(move |conn| {
            let out = guarded(f, conn);
            Written {
                failed: out.is_err(),
                run: run(&out),
                answer: Box::new(move |committed| {
                    let _ = tx.send(committed.and(out));
                }),
            }
        })
    })
}

/// Hands `f` to the thread behind `queue` when first polled, and answers with its result.
/// A call that panics fails alone (its transaction rolls back as it unwinds); the thread
/// and its connection go on.
pub(super) fn call<T: Send + 'static>(
    queue: mpsc::Sender<Job>,
    f: impl FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
) -> StoreFuture<'static, T> {
    hand_off(queue, move |tx| -> Job {
        Box::new(move |conn| {
            let _ = tx.send(guarded(f, conn));
        })
    })
}

/// Runs `f`, a panic in it becoming this call's error.
fn guarded<T>(
    f: impl FnOnce(&mut Connection) -> Result<T, StoreError>,
    conn: &mut Connection,
) -> Result<T, StoreError> {
    std::panic::catch_unwind(AssertUnwindSafe(|| f(conn)))
        .unwrap_or_else(|_| Err(StoreError::Database("a store call panicked".into())))
}

/// Queues the job `job` makes around the answer's sender, and awaits the answer (the
/// store latency metric counts from the hand-off to it).
fn hand_off<T: Send + 'static, J: Send + 'static>(
    queue: mpsc::Sender<J>,
    job: impl FnOnce(tokio::sync::oneshot::Sender<Result<T, StoreError>>) -> J + Send + 'static,
) -> StoreFuture<'static, T> {
    Box::pin(async move {
        let started = std::time::Instant::now();
        let (tx, rx) = tokio::sync::oneshot::channel();
        queue
            .send(job(tx))
            .map_err(|_| StoreError::Database("the store threads have stopped".into()))?;
        let out = rx
            .await
            .map_err(|_| StoreError::Database("a store thread dropped a call".into()))?;
        latency::record(latency::Backend::Sqlite, started.elapsed());
        out
    })
}
