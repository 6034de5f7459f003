//! How long store calls take, for `/metrics`: every SQLite call (queueing for its
//! connection's thread included) and every PostgreSQL statement, as a Prometheus
//! histogram per backend; and how PostgreSQL's batched calls group (the batches sent and
//! the calls they carried, by kind). Process-wide: two hosts in one process share it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the histogram's buckets, in seconds.
pub const BUCKETS: [f64; 9] = [0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0];

/// The backends measured.
#[derive(Debug, Clone, Copy)]
pub enum Backend {
    Sqlite = 0,
    Postgres = 1,
}

impl Backend {
    pub const ALL: [Backend; 2] = [Backend::Sqlite, Backend::Postgres];

    pub fn label(self) -> &'static str {
        match self {
            Backend::Sqlite => "sqlite",
            Backend::Postgres => "postgres",
        }
    }
}

struct Histogram {
    buckets: [AtomicU64; BUCKETS.len()],
    count: AtomicU64,
    micros: AtomicU64,
}

// Constants, not statics, on purpose: each use is a fresh counter (clippy's interior
// mutability lint is about a constant used as if it were shared).
#[allow(clippy::declare_interior_mutable_const)]
const ZERO: AtomicU64 = AtomicU64::new(0);
#[allow(clippy::declare_interior_mutable_const)]
const EMPTY: Histogram = Histogram {
    buckets: [ZERO; BUCKETS.len()],
    count: ZERO,
    micros: ZERO,
};
static HISTOGRAMS: [Histogram; 2] = [EMPTY, EMPTY];

/// Records one call of `backend` that took `took`.
pub fn record(backend: Backend, took: Duration) {
    let h = &HISTOGRAMS[backend as usize];
    let secs = took.as_secs_f64();
    for (bound, n) in BUCKETS.iter().zip(&h.buckets) {
        if secs <= *bound {
            n.fetch_add(1, Ordering::Relaxed);
        }
    }
    h.count.fetch_add(1, Ordering::Relaxed);
    h.micros.fetch_add(
        u64::try_from(took.as_micros()).unwrap_or(u64::MAX),
        Ordering::Relaxed,
    );
}

/// A backend's histogram as read now: cumulative bucket counts, count, sum (seconds).
pub struct Snapshot {
    pub backend: Backend,
    pub buckets: [u64; BUCKETS.len()],
    pub count: u64,
    pub seconds: f64,
}

/// Every backend that has recorded a call.
pub fn snapshot() -> Vec<Snapshot> {
    Backend::ALL
        .iter()
        .filter_map(|&backend| {
            let h = &HISTOGRAMS[backend as usize];
            let count = h.count.load(Ordering::Relaxed);
            (count > 0).then(|| Snapshot {
                backend,
                buckets: std::array::from_fn(|i| h.buckets[i].load(Ordering::Relaxed)),
                count,
                #[allow(clippy::cast_precision_loss)]
                seconds: h.micros.load(Ordering::Relaxed) as f64 / 1e6,
            })
        })
        .collect()
}

/// The calls PostgreSQL sends several to a statement (`store/postgres/batch.rs`).
#[derive(Debug, Clone, Copy)]
pub enum Batched {
    /// Plain creations.
    Create = 0,
    /// `getRun` details.
    Detail = 1,
}

impl Batched {
    pub const ALL: [Batched; 2] = [Batched::Create, Batched::Detail];

    pub fn label(self) -> &'static str {
        match self {
            Batched::Create => "create",
            Batched::Detail => "detail",
        }
    }
}

/// Per kind: batches sent, calls they carried.
static BATCHES: [[AtomicU64; 2]; 2] = [[ZERO, ZERO], [ZERO, ZERO]];

/// Records one batch of `kind` carrying `calls` calls.
pub fn record_batch(kind: Batched, calls: usize) {
    let [batches, carried] = &BATCHES[kind as usize];
    batches.fetch_add(1, Ordering::Relaxed);
    carried.fetch_add(u64::try_from(calls).unwrap_or(u64::MAX), Ordering::Relaxed);
}

/// Every kind that has sent a batch: (kind, batches, calls).
pub fn batches() -> Vec<(Batched, u64, u64)> {
    Batched::ALL
        .iter()
        .filter_map(|&kind| {
            let [batches, carried] = &BATCHES[kind as usize];
            let sent = batches.load(Ordering::Relaxed);
            (sent > 0).then(|| (kind, sent, carried.load(Ordering::Relaxed)))
        })
        .collect()
}
