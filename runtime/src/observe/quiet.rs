//! Refusals counted, not logged one by one: under a flood (a million 401s, a connection
//! cap hit every millisecond, a store that went away) a line per request fills disks and
//! hides everything else. Each refusal adds to a per-process counter (`/metrics`:
//! `openwop_refusals_total{reason}`) and to the current interval's count; the first
//! refusal or request after an interval ends writes one line with the counts of that
//! interval (and a sample of the store's error, when it was the store).

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// Why a request or connection was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No valid credential (401).
    Unauthenticated,
    /// A principal's rate limit, or an address's limit on requests without a valid
    /// credential (429).
    RateLimited,
    /// The host-wide connection cap (503 at accept).
    ConnectionCap,
    /// An address's share of connections (refused at accept).
    AddressConnectionCap,
    /// A body larger than the limit (413).
    BodyTooLarge,
    /// A body that stopped arriving (408).
    BodyTimeout,
    /// A transient store fault or a request past its deadline (503).
    Unavailable,
    /// A connection the listener could not accept (out of file descriptors: `EMFILE`,
    /// `ENFILE`); the accept loop pauses and tries again.
    AcceptFailed,
}

impl Refusal {
    pub const ALL: [Refusal; KINDS] = [
        Refusal::Unauthenticated,
        Refusal::RateLimited,
        Refusal::ConnectionCap,
        Refusal::AddressConnectionCap,
        Refusal::BodyTooLarge,
        Refusal::BodyTimeout,
        Refusal::Unavailable,
        Refusal::AcceptFailed,
    ];

    /// The metric label and the log field.
    pub fn label(self) -> &'static str {
        match self {
            Refusal::Unauthenticated => "unauthenticated",
            Refusal::RateLimited => "rate_limited",
            Refusal::ConnectionCap => "connection_cap",
            Refusal::AddressConnectionCap => "address_connection_cap",
            Refusal::BodyTooLarge => "body_too_large",
            Refusal::BodyTimeout => "body_timeout",
            Refusal::Unavailable => "unavailable",
            Refusal::AcceptFailed => "accept_failed",
        }
    }

    /// What an answer's status says was refused, if it is one of the refusals counted.
    pub fn of_status(status: u16) -> Option<Refusal> {
        match status {
            401 => Some(Refusal::Unauthenticated),
            429 => Some(Refusal::RateLimited),
            413 => Some(Refusal::BodyTooLarge),
            408 => Some(Refusal::BodyTimeout),
            503 => Some(Refusal::Unavailable),
            _ => None,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

const KINDS: usize = 8;

/// How often the counts are written at most.
pub const INTERVAL: Duration = Duration::from_secs(10);

struct Counts {
    total: [AtomicU64; KINDS],
    pending: [AtomicU64; KINDS],
    started: Instant,
    /// Milliseconds since `started` when the current interval began.
    interval_began: AtomicU64,
    /// The last store error seen in the interval.
    store_error: Mutex<Option<String>>,
    /// The last accept error seen in the interval.
    accept_error: Mutex<Option<String>>,
}

fn counts() -> &'static Counts {
    static COUNTS: std::sync::OnceLock<Counts> = std::sync::OnceLock::new();
    COUNTS.get_or_init(|| Counts {
        total: Default::default(),
        pending: Default::default(),
        started: Instant::now(),
        interval_began: AtomicU64::new(0),
        store_error: Mutex::new(None),
        accept_error: Mutex::new(None),
    })
}

/// Counts one refusal.
pub fn refused(kind: Refusal) {
    let c = counts();
    c.total[kind.index()].fetch_add(1, Relaxed);
    c.pending[kind.index()].fetch_add(1, Relaxed);
    tick();
}

/// A transient store fault behind a `503`: kept as the interval's sample (the `503`
/// itself is counted by the access log).
pub fn store_unavailable(detail: &str) {
    tracing::debug!(error = %detail, "the store is unavailable");
    if let Ok(mut e) = counts().store_error.lock() {
        *e = Some(detail.to_owned());
    }
}

/// A connection the listener could not accept: counted, its error kept as the
/// interval's sample. Out of descriptors, the accept loop fails every time it tries (each
/// 100 ms), so a line per failure would be the flood this module exists to avoid.
pub fn accept_failed(e: &std::io::Error) {
    tracing::debug!(error = %e, "accept failed");
    if let Ok(mut last) = counts().accept_error.lock() {
        *last = Some(e.to_string());
    }
    refused(Refusal::AcceptFailed);
}

/// Writes the last interval's counts if it has ended (one atomic read otherwise).
pub fn tick() {
    let c = counts();
    let now = u64::try_from(c.started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let began = c.interval_began.load(Relaxed);
    let interval = u64::try_from(INTERVAL.as_millis()).unwrap_or(u64::MAX);
    if now.saturating_sub(began) < interval
        || c.interval_began
            .compare_exchange(began, now, Relaxed, Relaxed)
            .is_err()
    {
        return;
    }
    let taken: Vec<(Refusal, u64)> = Refusal::ALL
        .iter()
        .map(|k| (*k, c.pending[k.index()].swap(0, Relaxed)))
        .collect();
    let store_error = c.store_error.lock().ok().and_then(|mut e| e.take());
    let accept_error = c.accept_error.lock().ok().and_then(|mut e| e.take());
    if taken.iter().all(|(_, n)| *n == 0) {
        return;
    }
    let n = |k: Refusal| taken[k.index()].1;
    tracing::warn!(
        interval_ms = now - began,
        unauthenticated = n(Refusal::Unauthenticated),
        rate_limited = n(Refusal::RateLimited),
        connection_cap = n(Refusal::ConnectionCap),
        address_connection_cap = n(Refusal::AddressConnectionCap),
        body_too_large = n(Refusal::BodyTooLarge),
        body_timeout = n(Refusal::BodyTimeout),
        unavailable = n(Refusal::Unavailable),
        accept_failed = n(Refusal::AcceptFailed),
        store_error = store_error.as_deref().unwrap_or(""),
        accept_error = accept_error.as_deref().unwrap_or(""),
        "requests and connections refused since the last report"
    );
}

/// Every refusal since the process started, by kind (`/metrics`).
pub fn totals() -> Vec<(Refusal, u64)> {
    let c = counts();
    Refusal::ALL
        .iter()
        .map(|k| (*k, c.total[k.index()].load(Relaxed)))
        .collect()
}
