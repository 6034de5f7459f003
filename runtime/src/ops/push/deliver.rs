//! Push delivery: a watcher turns task state changes into outbox rows, a sender posts
//! them through the egress guard, retrying per the retry policy and dead-lettering what
//! is exhausted. Both resume from the persisted outbox and configurations at start. The
//! body is the A2A edge's (a [`PushRender`]); when and how it travels is decided here.

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use serde_json::json;
use tokio::sync::{Notify, mpsc, watch};

use super::{PushRender, Rendered};
use crate::egress::Egress;
use crate::observe::otel;
use crate::store::{Delivery, InteropStore, RunStore, Secret, Topic, Wake};

/// How the wait between attempts grows (webhooks `retryPolicy.backoff`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backoff {
    None,
    Fixed,
    Exponential,
}

impl Backoff {
    pub fn as_str(self) -> &'static str {
        match self {
            Backoff::None => "none",
            Backoff::Fixed => "fixed",
            Backoff::Exponential => "exponential",
        }
    }
}

/// The webhooks `retryPolicy` semantics applied to pushes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in total, the first included.
    pub max_attempts: u32,
    pub backoff: Backoff,
    /// Wait before the second attempt.
    pub initial_delay: Duration,
    /// Upper bound on any single wait.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 5,
            backoff: Backoff::Exponential,
            initial_delay: Duration::from_secs(1),
            max_delay: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// The wait after the `attempts`-th failed attempt.
    pub fn delay_after(&self, attempts: u32) -> Duration {
        let d = match self.backoff {
            Backoff::None => Duration::ZERO,
            Backoff::Fixed => self.initial_delay,
            Backoff::Exponential => self
                .initial_delay
                .saturating_mul(1u32 << attempts.saturating_sub(1).min(20)),
        };
        d.min(self.max_delay)
    }

    /// The policy as the webhooks facet spells it.
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "maxAttempts": self.max_attempts,
            "backoff": self.backoff.as_str(),
            "initialDelayMs": self.initial_delay.as_millis() as u64,
            "maxDelayMs": self.max_delay.as_millis() as u64,
        })
    }
}

/// The media type of a push body.
pub const PUSH_CONTENT_TYPE: &str = crate::wire::A2A_JSON;

/// The `Authorization` header of a push: `{scheme} {credentials}` from the config, else
/// `Bearer {token}`; nothing when the config holds neither.
pub fn authorization(scheme: Option<&str>, secret: &Secret) -> Option<String> {
    match (scheme, &secret.credentials, &secret.token) {
        (Some(scheme), Some(credentials), _) => Some(format!("{scheme} {credentials}")),
        (_, _, Some(token)) => Some(format!("Bearer {token}")),
        _ => None,
    }
}

/// Starts the watcher and the sender. `kick` receives run ids whose configurations just
/// changed (a registration) so their current state is pushed without waiting for the
/// next event.
pub(super) fn spawn(
    watcher: Watcher,
    egress: Egress,
    policy: RetryPolicy,
    kick: mpsc::UnboundedReceiver<String>,
) {
    let outbox = Arc::new(Notify::new());
    let (store, runs, shutdown) = (
        watcher.store.clone(),
        watcher.runs.clone(),
        watcher.shutdown.clone(),
    );
    tokio::spawn(watch_runs(watcher, kick, outbox.clone()));
    tokio::spawn(send_pushes(store, runs, egress, policy, outbox, shutdown));
}

/// What the watcher reads: the runs, the push configurations, and how a run becomes a
/// push body.
pub(super) struct Watcher {
    pub runs: Arc<dyn RunStore>,
    pub store: Arc<dyn InteropStore>,
    pub render: Arc<dyn PushRender>,
    pub shutdown: watch::Receiver<bool>,
    /// Whether any configuration may exist: on a store of its own (SQLite) this process
    /// stores every one, so until it has (or found one at start) a run's commit needs no
    /// look at the configurations (one store read per commit saved). A shared store's
    /// configurations may come from any replica: looked at once the store says another
    /// replica may have registered one (`push_configs_possible`; PostgreSQL hears of each
    /// registration before the wake-ups of every later commit).
    pub configured: Arc<std::sync::atomic::AtomicBool>,
}

impl Watcher {
    fn may_have_configs(&self) -> bool {
        self.configured.load(std::sync::atomic::Ordering::SeqCst)
            || (self.runs.shared() && self.store.push_configs_possible())
    }
}

/// One task at a time, in wake-up order, so a config never gets an older state enqueued
/// after a newer one.
///
/// Forks: this host does not serve run forks yet, so every run seen here is an original
/// run. When forks arrive, a replay fork must not push its re-emitted history and must not
/// inherit its source run's push configurations (interop.md §"A2A push delivery"); the
/// configurations are keyed by run id, so a fork starts with none.
async fn watch_runs(
    watcher: Watcher,
    mut kick: mpsc::UnboundedReceiver<String>,
    outbox: Arc<Notify>,
) {
    // Every run: any of them may have push configurations.
    let mut wakes = watcher.runs.subscribe(&[Topic::AllRuns]);
    let mut shutdown = watcher.shutdown.clone();
    // Changes made while the host was down: look at every run that still has configs.
    observe_all(&watcher, &outbox).await;
    loop {
        let run_id = tokio::select! {
            _ = stopped(&mut shutdown) => return,
            Some(id) = kick.recv() => id,
            wake = wakes.recv() => match wake {
                Wake::Run(id) => id,
                Wake::Host(_) => continue,
                // Missed wake-ups (a lagging subscriber, or a shared store whose
                // notifications were lost): look at every configured task again.
                Wake::Resync => {
                    observe_all(&watcher, &outbox).await;
                    continue;
                }
            },
        };
        observe(&watcher, &run_id, &outbox).await;
    }
}

use crate::ops::watch::stopped;

async fn observe_all(watcher: &Watcher, outbox: &Notify) {
    match watcher.store.push_runs().await {
        Ok(runs) => {
            if !runs.is_empty() {
                watcher
                    .configured
                    .store(true, std::sync::atomic::Ordering::SeqCst);
            }
            for run_id in runs {
                observe(watcher, &run_id, outbox).await;
            }
        }
        Err(e) => tracing::error!(error = %e, "push: cannot list configured tasks"),
    }
}

/// Enqueues the run's current state for every config that has not pushed it yet.
async fn observe(watcher: &Watcher, run_id: &str, outbox: &Notify) {
    if !watcher.may_have_configs() {
        return;
    }
    let store = watcher.store.as_ref();
    let configured = match store.push_list(run_id).await {
        Ok(list) => !list.is_empty(),
        Err(e) => {
            tracing::error!(error = %e, "push: cannot read configs");
            return;
        }
    };
    if !configured {
        return;
    }
    let run = match watcher.runs.get_run(run_id).await {
        Ok(Some(run)) => run,
        Ok(None) => return,
        Err(e) => {
            tracing::error!(error = %e, "push: cannot read the run");
            return;
        }
    };
    let Some(Rendered { state, body, last }) = watcher.render.render(&run).await else {
        return;
    };
    match store
        .push_enqueue(
            run_id,
            state,
            &body,
            last,
            run.last_sequence,
            crate::clock::now_ms(),
        )
        .await
    {
        Ok(0) => {}
        Ok(n) => {
            tracing::debug!(run_id, state, deliveries = n, "push enqueued");
            outbox.notify_one();
        }
        Err(e) => tracing::error!(error = %e, "push: cannot enqueue"),
    }
}

/// Attempts in flight at once, all tenants together.
const MAX_IN_FLIGHT: usize = 64;
/// Attempts one tenant may have in flight: a tenant whose receivers never answer holds
/// at most this many of [`MAX_IN_FLIGHT`], and the rest stay free for everyone else.
const PER_TENANT: usize = 8;
/// Attempts in flight to one destination (scheme, host and port), across tenants.
const PER_DESTINATION: usize = 4;
/// Due deliveries taken from the outbox per round.
const DUE_BATCH: usize = 32;
/// How far a delivery over its tenant's or destination's share is put back: behind every
/// delivery already due, so the next round reaches other tenants first.
const DEFER_MS: i64 = 1_000;

/// What is in flight, by tenant and by destination; each attempt is its own task, so
/// the sender never waits for one before starting the next.
#[derive(Default)]
struct Lanes {
    counts: std::sync::Mutex<LaneCounts>,
    /// An attempt ended: a slot is free.
    freed: Notify,
}

#[derive(Default)]
struct LaneCounts {
    total: usize,
    tenants: std::collections::HashMap<String, usize>,
    destinations: std::collections::HashMap<String, usize>,
}

fn bump(map: &mut std::collections::HashMap<String, usize>, key: &str, cap: usize) -> bool {
    let n = map.entry(key.to_owned()).or_default();
    if *n >= cap {
        return false;
    }
    *n += 1;
    true
}

fn drop_one(map: &mut std::collections::HashMap<String, usize>, key: &str) {
    if let Some(n) = map.get_mut(key) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            map.remove(key);
        }
    }
}

impl Lanes {
    fn total(&self) -> usize {
        self.counts.lock().map_or(MAX_IN_FLIGHT, |c| c.total)
    }

    /// A slot for one of `tenant`'s attempts, if the tenant and the host have room.
    fn take_tenant(self: &Arc<Self>, tenant: &str) -> Option<TenantSlot> {
        let mut c = self.counts.lock().ok()?;
        if c.total >= MAX_IN_FLIGHT || !bump(&mut c.tenants, tenant, PER_TENANT) {
            return None;
        }
        c.total += 1;
        Some(TenantSlot {
            lanes: self.clone(),
            tenant: tenant.to_owned(),
        })
    }

    /// A slot at `destination`, if it has room.
    fn take_destination(self: &Arc<Self>, destination: &str) -> Option<DestinationSlot> {
        let mut c = self.counts.lock().ok()?;
        bump(&mut c.destinations, destination, PER_DESTINATION).then(|| DestinationSlot {
            lanes: self.clone(),
            destination: destination.to_owned(),
        })
    }
}

struct TenantSlot {
    lanes: Arc<Lanes>,
    tenant: String,
}

impl Drop for TenantSlot {
    fn drop(&mut self) {
        if let Ok(mut c) = self.lanes.counts.lock() {
            c.total = c.total.saturating_sub(1);
            drop_one(&mut c.tenants, &self.tenant);
        }
        self.lanes.freed.notify_one();
    }
}

struct DestinationSlot {
    lanes: Arc<Lanes>,
    destination: String,
}

impl Drop for DestinationSlot {
    fn drop(&mut self) {
        if let Ok(mut c) = self.lanes.counts.lock() {
            drop_one(&mut c.destinations, &self.destination);
        }
    }
}

/// The tenant of a run id (`tenant/opaque`).
fn tenant_of(run_id: &str) -> &str {
    run_id.split_once('/').map_or(run_id, |(t, _)| t)
}

/// Where a push goes, for the per-destination share: scheme, host and port.
fn destination_of(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(u) => format!(
            "{}://{}:{}",
            u.scheme(),
            u.host_str().unwrap_or(""),
            u.port_or_known_default().unwrap_or(0)
        ),
        Err(_) => url.to_owned(),
    }
}

/// Puts a delivery back without counting an attempt: it is due again after every
/// delivery that is due now.
async fn defer(store: &dyn InteropStore, delivery: &Delivery) {
    let next = crate::clock::now_ms() + DEFER_MS;
    if let Err(e) = store
        .push_retry_later(&delivery.delivery_id, delivery.attempts, next)
        .await
    {
        tracing::error!(error = %e, "push: cannot put a delivery back");
    }
}

async fn send_pushes(
    store: Arc<dyn InteropStore>,
    runs: Arc<dyn RunStore>,
    egress: Egress,
    policy: RetryPolicy,
    outbox: Arc<Notify>,
    mut shutdown: watch::Receiver<bool>,
) {
    let lanes = Arc::new(Lanes::default());
    loop {
        if *shutdown.borrow() {
            return;
        }
        let free = MAX_IN_FLIGHT.saturating_sub(lanes.total());
        if free == 0 {
            tokio::select! {
                _ = stopped(&mut shutdown) => return,
                _ = lanes.freed.notified() => {}
                _ = tokio::time::sleep(Duration::from_secs(1)) => {}
            }
            continue;
        }
        let now = crate::clock::now_ms();
        // Claimed: nothing handed out here is due again while its attempt runs.
        let due = match store.push_due(now, free.min(DUE_BATCH)).await {
            Ok(d) => d,
            Err(e) => {
                tracing::error!(error = %e, "push: cannot read the outbox");
                Vec::new()
            }
        };
        if due.is_empty() {
            let wait = match store.push_next_due_ms().await {
                Ok(Some(at)) => Duration::from_millis((at - now).clamp(1, 60_000) as u64),
                _ => Duration::from_secs(60),
            };
            tokio::select! {
                _ = stopped(&mut shutdown) => return,
                _ = outbox.notified() => {}
                // An attempt ended (a retry may now be due sooner than any claim ends).
                _ = lanes.freed.notified() => {}
                _ = tokio::time::sleep(wait) => {}
            }
            continue;
        }
        // `due` holds at most one delivery per configuration, so attempts run side by
        // side without reordering any receiver's pushes. Each is its own task: a
        // receiver that never answers holds its own slot, never the queue behind it.
        for delivery in due {
            match lanes.take_tenant(tenant_of(&delivery.run_id)) {
                Some(slot) => {
                    let (store, runs, egress, lanes) =
                        (store.clone(), runs.clone(), egress.clone(), lanes.clone());
                    tokio::spawn(async move {
                        let (store, runs) = (store.as_ref(), runs.as_ref());
                        attempt(store, runs, &egress, &policy, delivery, &lanes).await;
                        drop(slot);
                    });
                }
                None => defer(store.as_ref(), &delivery).await,
            }
        }
    }
}

async fn attempt(
    store: &dyn InteropStore,
    runs: &dyn RunStore,
    egress: &Egress,
    policy: &RetryPolicy,
    delivery: Delivery,
    lanes: &Arc<Lanes>,
) {
    let (config, secret) = match (
        store.push_get(&delivery.run_id, &delivery.config_id).await,
        store
            .push_secret(&delivery.run_id, &delivery.config_id)
            .await,
    ) {
        (Ok(Some(c)), Ok(Some(s))) => (c, s),
        (Ok(None), _) | (_, Ok(None)) => {
            // Deleted since it was enqueued: its credential is gone, and so is the push.
            let _ = store
                .push_delivered(&Delivery {
                    last: false,
                    ..delivery
                })
                .await;
            return;
        }
        (Err(e), _) | (_, Err(e)) => {
            tracing::error!(error = %e, "push: cannot read the config");
            return;
        }
    };
    let Some(_destination) = lanes.take_destination(&destination_of(&config.url)) else {
        // The receiver already has its share in flight: another round.
        defer(store, &delivery).await;
        return;
    };
    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(PUSH_CONTENT_TYPE));
    if let Some(auth) = authorization(config.scheme.as_deref(), &secret) {
        match HeaderValue::from_str(&auth) {
            Ok(mut v) => {
                v.set_sensitive(true);
                headers.insert(AUTHORIZATION, v);
            }
            Err(_) => {
                tracing::warn!(config_id = %delivery.config_id, "push credential is not a valid header value")
            }
        }
    }
    let attempts = delivery.attempts + 1;
    let span = delivery_span(runs, &delivery, &config.url, attempts).await;
    let body = delivery.body.clone().into_bytes();
    let outcome = otel::post_traced(egress, &config.url, headers, body, span).await;
    let now = crate::clock::now_ms();
    let settled = match outcome {
        Ok(status) => {
            tracing::debug!(delivery_id = %delivery.delivery_id, status, attempts, "push delivered");
            store.push_delivered(&delivery).await
        }
        Err(e) if attempts >= policy.max_attempts => {
            tracing::warn!(
                delivery_id = %delivery.delivery_id, run_id = %delivery.run_id, config_id = %delivery.config_id,
                attempts, reason = %e, "push dead-lettered"
            );
            store
                .push_dead_letter(&delivery, attempts, &e.to_string(), now)
                .await
        }
        Err(e) => {
            let next = now + policy.delay_after(attempts).as_millis() as i64;
            tracing::info!(delivery_id = %delivery.delivery_id, attempts, reason = %e, "push failed; will retry");
            store
                .push_retry_later(&delivery.delivery_id, attempts, next)
                .await
        }
    };
    if let Err(e) = settled {
        tracing::error!(error = %e, "push: cannot record the outcome");
    }
}

/// The CLIENT span of one push attempt (none without a collector), in the trace the run
/// was created in: read from the run only when spans are exported.
async fn delivery_span(
    runs: &dyn RunStore,
    delivery: &Delivery,
    url: &str,
    attempt: u32,
) -> tracing::Span {
    if !otel::on() {
        return tracing::Span::none();
    }
    let run = runs.get_run(&delivery.run_id).await.ok().flatten();
    let trace = run.as_ref().and_then(|r| {
        r.state
            .get(crate::peers::TRACE_STATE_KEY)
            .and_then(serde_json::Value::as_str)
    });
    otel::delivery_span(otel::Delivery {
        kind: "push",
        url,
        run_id: &delivery.run_id,
        run_traceparent: trace,
        task_state: Some(&delivery.state),
        attempt,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_follows_the_retry_policy_semantics() {
        let p = |backoff| RetryPolicy {
            max_attempts: 9,
            backoff,
            initial_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(500),
        };
        assert_eq!(p(Backoff::None).delay_after(3), Duration::ZERO);
        assert_eq!(p(Backoff::Fixed).delay_after(3), Duration::from_millis(100));
        let e = p(Backoff::Exponential);
        assert_eq!(
            [1, 2, 3, 4].map(|n| e.delay_after(n).as_millis()),
            [100, 200, 400, 500]
        );
    }

    #[test]
    fn authorization_prefers_the_scheme_and_falls_back_to_a_bearer_token() {
        let both = Secret {
            token: Some("t".into()),
            credentials: Some("c".into()),
        };
        assert_eq!(
            authorization(Some("Basic"), &both).as_deref(),
            Some("Basic c")
        );
        let token = Secret {
            token: Some("t".into()),
            credentials: None,
        };
        assert_eq!(authorization(None, &token).as_deref(), Some("Bearer t"));
        assert_eq!(authorization(None, &Secret::default()), None);
    }
}
