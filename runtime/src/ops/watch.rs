//! Following a run, and a tenant's host log: the one way every edge waits for what
//! happens next (REST SSE and long-poll, A2A streams and blocking sends, MCP calls and
//! `subscriptions/listen`).
//!
//! A watch subscribes to its run's wake-ups before it first reads, so nothing committed
//! between a read and the wait is missed, and it wakes only for its own run (or tenant):
//! the cost of a commit does not grow with the streams open on other runs. Wake-ups are
//! hints; a watch always re-reads the store.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::{OpError, Ops};
use crate::identity::Subject;
use crate::ids::BoundId;
use crate::status::RunStatus;
use crate::store::{EventRecord, HostEventRecord, RunRecord, RunStore, Subscription, Topic, Wake};

/// How many events one read takes at most.
const PAGE: usize = 500;

/// How long a watch keeps retrying a store that fails transiently (a terminated
/// connection, a restarting server, a full disk) before it gives up with the error,
/// unless the host sets its own ([`Ops::with_stream_retry`]). Well past a PostgreSQL
/// restart or a pool reconnecting; a stream that must end then ends with an error in its
/// edge's shape, so its client resumes from the last event it got.
pub const RETRY_WITHIN: std::time::Duration = std::time::Duration::from_secs(60);
const RETRY_FIRST: Duration = Duration::from_millis(100);
const RETRY_MAX: Duration = Duration::from_secs(5);

/// A watch's retries of transient store faults: backing off from 0.1 s to 5 s, for
/// `within` ([`RETRY_WITHIN`] by default) since the first failure of a run of them.
struct Retry {
    within: Duration,
    failing_since: Option<tokio::time::Instant>,
    delay: Duration,
}

impl Retry {
    fn within(within: Duration) -> Retry {
        Retry {
            within,
            failing_since: None,
            delay: Duration::ZERO,
        }
    }

    /// How long to wait before reading again after `e`; `None` when `e` is not worth
    /// another read (not transient, or failing for too long).
    fn after(&mut self, e: &OpError) -> Option<Duration> {
        if !matches!(e, OpError::Unavailable { .. }) {
            return None;
        }
        let now = tokio::time::Instant::now();
        let since = *self.failing_since.get_or_insert(now);
        let spent = now.duration_since(since);
        if spent >= self.within {
            return None;
        }
        // Never past the window: the last read falls at its end, not up to 5 s later.
        self.delay = (self.delay * 2)
            .clamp(RETRY_FIRST, RETRY_MAX)
            .min(self.within - spent);
        tracing::debug!(
            retry_in_ms = u64::try_from(self.delay.as_millis()).unwrap_or(u64::MAX),
            "a stream's store read failed; reading again"
        );
        Some(self.delay)
    }

    fn reset(&mut self) {
        self.failing_since = None;
        self.delay = Duration::ZERO;
    }
}

/// `read` until it succeeds, fails with something other than a transient store fault, has
/// failed for `within`, or the host stops: [`Ops::read_for_stream`].
async fn retry_transient<T, F, Fut>(
    within: Duration,
    mut shutdown: watch::Receiver<bool>,
    mut read: F,
) -> Result<T, OpError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, OpError>>,
{
    let mut retry = Retry::within(within);
    loop {
        let e = match read().await {
            Ok(value) => return Ok(value),
            Err(e) => e,
        };
        match retry.after(&e) {
            Some(delay) if !*shutdown.borrow() => pause(delay, &mut shutdown).await,
            _ => return Err(e),
        }
    }
}

/// Waits `delay` unless the host stops first (then the caller sees the stop flag).
async fn pause(delay: Duration, shutdown: &mut watch::Receiver<bool>) {
    tokio::select! {
        _ = stopped(shutdown) => {}
        _ = tokio::time::sleep(delay) => {}
    }
}

/// What a follower of a run sees next: the events after its cursor (oldest first), and
/// the run as read after them (so never older than its newest event).
#[derive(Debug, Clone)]
pub struct Update {
    pub run: RunRecord,
    pub events: Vec<EventRecord>,
}

/// A run being followed from a cursor. Ends after the update that holds the run's last
/// event once the run is terminal, or at once for a terminal run with nothing after the
/// cursor, or when the host shuts down.
pub struct RunWatch {
    runs: Arc<dyn RunStore>,
    run_id: String,
    cursor: i64,
    wakes: Subscription,
    shutdown: watch::Receiver<bool>,
    done: bool,
    retry: Retry,
}

impl RunWatch {
    /// The sequence of the last event handed out (`-1` before the first).
    pub fn cursor(&self) -> i64 {
        self.cursor
    }

    /// The next update: at once when there are events after the cursor, else when some
    /// arrive. `None` when the watch has ended. Cancel-safe: dropping the future loses
    /// nothing (the cursor moves only when an update is returned). A transient store
    /// fault is retried with backoff for the host's window ([`RETRY_WITHIN`]); only then
    /// is it returned, and the watch ends with it (a caller ends its stream there).
    pub async fn next(&mut self) -> Option<Result<Update, OpError>> {
        loop {
            if self.done || *self.shutdown.borrow() {
                return None;
            }
            match self.read().await {
                Read::Update(update) => {
                    self.retry.reset();
                    return Some(Ok(update));
                }
                Read::Failed(e) => match self.retry.after(&e) {
                    Some(delay) => {
                        pause(delay, &mut self.shutdown).await;
                        continue;
                    }
                    None => {
                        // Read no more: a stream that ended here is resumed by its
                        // client, not by more reads of a store that keeps failing.
                        self.done = true;
                        return Some(Err(e));
                    }
                },
                Read::Ended => return None,
                Read::Nothing => self.retry.reset(),
            }
            tokio::select! {
                _ = stopped(&mut self.shutdown) => {}
                _ = self.wakes.recv() => {}
            }
        }
    }

    /// One look without waiting: an update when there are events after the cursor,
    /// `Ok(None)` when there are none yet (or the watch has ended).
    pub async fn try_next(&mut self) -> Result<Option<Update>, OpError> {
        if self.done {
            return Ok(None);
        }
        match self.read().await {
            Read::Update(update) => Ok(Some(update)),
            Read::Failed(e) => Err(e),
            Read::Ended | Read::Nothing => Ok(None),
        }
    }

    async fn read(&mut self) -> Read {
        loop {
            let events = match self
                .runs
                .events_since(&self.run_id, self.cursor, PAGE)
                .await
            {
                Ok(events) => events,
                Err(e) => return Read::Failed(e.into()),
            };
            let run = match self.runs.get_run(&self.run_id).await {
                Ok(Some(run)) => run,
                // Deleted under the watch: nothing more will happen to it.
                Ok(None) => {
                    self.done = true;
                    return Read::Ended;
                }
                Err(e) => return Read::Failed(e.into()),
            };
            if let Some(last) = events.last() {
                self.cursor = last.sequence;
                self.done = run.status.is_terminal() && self.cursor >= run.last_sequence;
                return Read::Update(Update { run, events });
            }
            // The run was read after its events: a commit that landed between the two
            // reads shows as a newer run than the events say. Read the events again.
            if run.last_sequence > self.cursor {
                continue;
            }
            if run.status.is_terminal() {
                self.done = true;
                return Read::Ended;
            }
            return Read::Nothing;
        }
    }

    /// [`RunWatch::next`], giving up after `timeout` (`None` then, the watch still usable).
    pub async fn next_within(&mut self, timeout: Duration) -> Option<Result<Update, OpError>> {
        tokio::time::timeout(timeout, self.next())
            .await
            .unwrap_or(None)
    }
}

#[allow(
    clippy::large_enum_variant,
    reason = "`Update` is the common case, moved once per read"
)]
enum Read {
    Update(Update),
    Nothing,
    Ended,
    Failed(OpError),
}

/// A tenant's durable host events from a cursor; never ends on its own (only at
/// shutdown). Ephemeral events reach a watcher too, without a cursor of their own.
pub struct HostWatch {
    runs: Arc<dyn RunStore>,
    tenant: String,
    cursor: i64,
    /// This stream's place in the host log, which retention never cuts past.
    floor: HostFloor,
    wakes: Subscription,
    shutdown: watch::Receiver<bool>,
    ready: std::collections::VecDeque<HostEventRecord>,
    retry: Retry,
}

impl HostWatch {
    /// The next host event, or `None` at shutdown. Transient store faults are retried
    /// as [`RunWatch::next`] retries them.
    pub async fn next(&mut self) -> Option<Result<HostEventRecord, OpError>> {
        loop {
            if *self.shutdown.borrow() {
                return None;
            }
            if let Some(event) = self.ready.pop_front() {
                return Some(Ok(event));
            }
            match self.runs.host_events(&self.tenant, self.cursor, PAGE).await {
                Ok(events) if !events.is_empty() => {
                    self.retry.reset();
                    self.cursor = events.last().map_or(self.cursor, |e| e.seq);
                    // Read into memory: the store may let them go now.
                    self.floor.advance(self.cursor);
                    self.ready.extend(events);
                    continue;
                }
                Ok(_) => self.retry.reset(),
                Err(e) => {
                    let e = OpError::from(e);
                    match self.retry.after(&e) {
                        Some(delay) => {
                            pause(delay, &mut self.shutdown).await;
                            continue;
                        }
                        None => return Some(Err(e)),
                    }
                }
            }
            tokio::select! {
                _ = stopped(&mut self.shutdown) => {}
                wake = self.wakes.recv() => {
                    // An ephemeral event exists only in its wake-up.
                    if let Wake::Host(event) = wake
                        && event.delivery == "ephemeral"
                        && event.tenant == self.tenant
                    {
                        self.ready.push_back(*event);
                    }
                }
            }
        }
    }
}

/// Where every connected host-log stream of this process stands, by tenant: retention
/// (`Ops::prune_host_events`) never drops an event a stream has not read yet.
#[derive(Default)]
pub(crate) struct HostFloors {
    next: std::sync::atomic::AtomicU64,
    streams: std::sync::Mutex<std::collections::HashMap<u64, (String, i64)>>,
}

impl HostFloors {
    fn register(self: &Arc<Self>, tenant: &str, cursor: i64) -> HostFloor {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Ok(mut s) = self.streams.lock() {
            s.insert(id, (tenant.to_owned(), cursor));
        }
        HostFloor {
            floors: self.clone(),
            id,
        }
    }

    /// The least advanced position of each tenant's streams.
    pub(crate) fn by_tenant(&self) -> std::collections::HashMap<String, i64> {
        let mut out: std::collections::HashMap<String, i64> = std::collections::HashMap::new();
        if let Ok(s) = self.streams.lock() {
            for (tenant, cursor) in s.values() {
                let e = out.entry(tenant.clone()).or_insert(*cursor);
                *e = (*e).min(*cursor);
            }
        }
        out
    }
}

/// One stream's entry in [`HostFloors`], removed when the stream ends.
pub(crate) struct HostFloor {
    floors: Arc<HostFloors>,
    id: u64,
}

impl HostFloor {
    fn advance(&self, cursor: i64) {
        if let Ok(mut s) = self.floors.streams.lock()
            && let Some(entry) = s.get_mut(&self.id)
        {
            entry.1 = cursor;
        }
    }
}

impl Drop for HostFloor {
    fn drop(&mut self) {
        if let Ok(mut s) = self.floors.streams.lock() {
            s.remove(&self.id);
        }
    }
}

/// Resolves once the host is stopping; never, when nothing can stop it (no sender).
pub(crate) async fn stopped(rx: &mut watch::Receiver<bool>) {
    if rx.wait_for(|v| *v).await.is_err() {
        std::future::pending::<()>().await;
    }
}

impl Ops {
    /// Whether the host is stopping.
    pub fn stopping(&self) -> bool {
        *self.shutdown.borrow()
    }

    /// Follows a run the caller may read, from just after event `after` (`-1`: from the
    /// start). Authorized once, here; a foreign or unknown run is refused as `get_run`
    /// refuses it.
    pub async fn watch(
        &self,
        subject: &Subject,
        id: &BoundId,
        after: i64,
    ) -> Result<RunWatch, OpError> {
        // Subscribe before the first read, so no commit falls between read and wait.
        let wakes = self.runs.subscribe(&[Topic::Run(id.as_bound())]);
        let run = self.load(subject, id).await?;
        Ok(RunWatch {
            runs: self.runs.clone(),
            run_id: run.run_id,
            cursor: after,
            wakes,
            shutdown: self.shutdown.clone(),
            done: false,
            retry: Retry::within(self.stream_retry),
        })
    }

    /// `read`, retried on a transient store fault as a watch retries its own reads (the
    /// host's stream window, backing off), so a stream that reads more than its watch
    /// (A2A's task side for each update) rides out the same outage its watch does.
    pub async fn read_for_stream<T, F, Fut>(&self, read: F) -> Result<T, OpError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, OpError>>,
    {
        retry_transient(self.stream_retry, self.shutdown.clone(), read).await
    }

    /// Follows the caller's tenant's host log from just after `after` (`-1`: the start).
    pub fn watch_host(&self, subject: &Subject, after: i64) -> HostWatch {
        HostWatch {
            floor: self.host_floors.register(&subject.tenant, after),
            wakes: self
                .runs
                .subscribe(&[Topic::Tenant(subject.tenant.to_string())]),
            runs: self.runs.clone(),
            tenant: subject.tenant.to_string(),
            cursor: after,
            shutdown: self.shutdown.clone(),
            ready: Default::default(),
            retry: Retry::within(self.stream_retry),
        }
    }

    /// Waits until `run`'s status satisfies `until`, the run ends, `timeout` passes or the
    /// host shuts down, and returns the run as last read. The one wait behind A2A's
    /// blocking SendMessage and MCP's tools/call.
    pub async fn settle(
        &self,
        subject: &Subject,
        run: RunRecord,
        until: impl Fn(RunStatus) -> bool,
        timeout: Duration,
    ) -> Result<RunRecord, OpError> {
        if until(run.status) || run.status.is_terminal() {
            return Ok(run);
        }
        let id = BoundId::parse_bound(&run.run_id).map_err(OpError::internal)?;
        let mut watch = self.watch(subject, &id, run.last_sequence).await?;
        let deadline = tokio::time::Instant::now() + timeout;
        let mut latest = run;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Ok(latest);
            }
            match watch.next_within(left).await {
                Some(Ok(update)) => {
                    latest = update.run;
                    if until(latest.status) || latest.status.is_terminal() {
                        return Ok(latest);
                    }
                }
                Some(Err(e)) => return Err(e),
                // Timed out, shut down, or the run ended (its last update was seen).
                None => return Ok(latest),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unavailable() -> OpError {
        OpError::Unavailable {
            retry_after_secs: 1,
        }
    }

    /// A stream's extra read rides out a transient fault as its watch does, gives up after
    /// the window, and never retries what is not transient.
    #[tokio::test]
    async fn a_streams_read_rides_out_a_transient_fault_within_the_window() {
        let never = watch::channel(false).1;
        let mut failures = 2;
        let read = retry_transient(Duration::from_secs(5), never.clone(), || {
            let fail = failures > 0;
            failures -= 1;
            async move { if fail { Err(unavailable()) } else { Ok(7) } }
        });
        assert_eq!(read.await.ok(), Some(7));

        let mut calls = 0;
        let gave_up = retry_transient(Duration::from_millis(250), never.clone(), || {
            calls += 1;
            async { Err::<(), _>(unavailable()) }
        })
        .await;
        assert!(matches!(gave_up, Err(OpError::Unavailable { .. })));
        assert!((2..=4).contains(&calls), "{calls} reads in 250 ms");

        let mut calls = 0;
        let not_transient = retry_transient(Duration::from_secs(5), never, || {
            calls += 1;
            async {
                Err::<(), _>(OpError::RunNotFound {
                    run_id: "t/x".into(),
                })
            }
        })
        .await;
        assert!(matches!(not_transient, Err(OpError::RunNotFound { .. })));
        assert_eq!(calls, 1);
    }
}
