//! Wake-ups, keyed: a commit wakes only those who follow what it changed.
//!
//! A subscriber names its [`Topic`]s — one run, one tenant's host log, or every run (the
//! A2A push watcher, which follows whichever run has push configurations) — and a commit
//! on run A reaches the subscribers of A (and of every run), never those of run B. A
//! wake-up only says "look again": subscribers always re-read the store, so a lost or
//! coalesced wake-up costs latency, never data. A subscriber that falls too far behind,
//! and every subscriber when a shared store's notifications may have been lost (its
//! LISTEN connection dropped), gets [`Wake::Resync`]: re-read everything followed.
//!
//! The hub is in process. PostgreSQL feeds it from LISTEN/NOTIFY (whose payload names
//! the run, or carries the host event with its tenant), so a subscriber on one replica is
//! woken by the commits of every other, keyed the same way.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

use tokio::sync::Notify;

use super::HostEventRecord;

/// What changed.
#[derive(Debug, Clone, PartialEq)]
pub enum Wake {
    /// The run with this id has new events or a new state.
    Run(String),
    /// A host event of a tenant; ephemeral events travel only here.
    Host(Box<HostEventRecord>),
    /// Something may have changed unannounced (notifications were lost, or this
    /// subscriber fell behind): re-read everything followed.
    Resync,
}

/// What a subscriber follows.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Topic {
    /// Commits of one run.
    Run(String),
    /// Host events of one tenant.
    Tenant(String),
    /// Commits of every run.
    AllRuns,
}

/// Wake-ups a subscriber keeps before it counts as behind (then: one `Resync`).
const BACKLOG: usize = 1024;

struct Slot {
    id: u64,
    queue: Mutex<VecDeque<Wake>>,
    behind: AtomicBool,
    notify: Notify,
}

impl Slot {
    fn deliver(&self, wake: &Wake) {
        {
            let Ok(mut q) = self.queue.lock() else { return };
            // A run's wake-up is a hint to re-read: one pending per run is enough.
            if matches!(wake, Wake::Run(_)) && q.contains(wake) {
                return;
            }
            if q.len() >= BACKLOG {
                q.clear();
                self.behind.store(true, Ordering::SeqCst);
            } else {
                q.push_back(wake.clone());
            }
        }
        self.notify.notify_one();
    }

    fn take(&self) -> Option<Wake> {
        if self.behind.swap(false, Ordering::SeqCst) {
            return Some(Wake::Resync);
        }
        self.queue.lock().ok()?.pop_front()
    }
}

#[derive(Default)]
struct Topics {
    runs: HashMap<String, Vec<Arc<Slot>>>,
    tenants: HashMap<String, Vec<Arc<Slot>>>,
    all_runs: Vec<Arc<Slot>>,
}

impl Topics {
    fn slots(&mut self, topic: &Topic) -> &mut Vec<Arc<Slot>> {
        match topic {
            Topic::Run(id) => self.runs.entry(id.clone()).or_default(),
            Topic::Tenant(t) => self.tenants.entry(t.clone()).or_default(),
            Topic::AllRuns => &mut self.all_runs,
        }
    }

    fn remove(&mut self, topic: &Topic, id: u64) {
        let emptied = {
            let slots = self.slots(topic);
            slots.retain(|s| s.id != id);
            slots.is_empty()
        };
        if emptied {
            match topic {
                Topic::Run(run) => {
                    self.runs.remove(run);
                }
                Topic::Tenant(t) => {
                    self.tenants.remove(t);
                }
                Topic::AllRuns => {}
            }
        }
    }
}

#[derive(Default)]
struct HubInner {
    topics: Mutex<Topics>,
    next_id: AtomicU64,
}

/// The in-process wake-up hub of one store. Cloning shares it.
#[derive(Clone, Default)]
pub struct WakeHub {
    inner: Arc<HubInner>,
}

impl WakeHub {
    /// Follows `topics` from now on; dropping the subscription stops it.
    pub fn subscribe(&self, topics: &[Topic]) -> Subscription {
        let slot = Arc::new(Slot {
            id: self.inner.next_id.fetch_add(1, Ordering::Relaxed),
            queue: Mutex::new(VecDeque::new()),
            behind: AtomicBool::new(false),
            notify: Notify::new(),
        });
        let mut topics = topics.to_vec();
        topics.dedup();
        if let Ok(mut all) = self.inner.topics.lock() {
            for t in &topics {
                all.slots(t).push(slot.clone());
            }
        }
        Subscription {
            slot,
            topics,
            hub: Arc::downgrade(&self.inner),
        }
    }

    /// Wakes the subscribers of what `wake` names: a run's, plus those of every run; a
    /// host event's tenant's; everyone for a resync.
    /// Publishes a host event to the followers of its tenant's host log, copying it only
    /// when there is one (most commits have none, and the copy was a measurable part of a
    /// durable A2A request).
    pub fn publish_host(&self, ev: &HostEventRecord) {
        let Ok(topics) = self.inner.topics.lock() else {
            return;
        };
        let Some(followers) = topics.tenants.get(&ev.tenant).filter(|f| !f.is_empty()) else {
            return;
        };
        let wake = Wake::Host(Box::new(ev.clone()));
        for s in followers {
            s.deliver(&wake);
        }
    }

    pub fn publish(&self, wake: Wake) {
        let Ok(topics) = self.inner.topics.lock() else {
            return;
        };
        match &wake {
            Wake::Run(id) => {
                for s in topics.runs.get(id).into_iter().flatten() {
                    s.deliver(&wake);
                }
                for s in &topics.all_runs {
                    s.deliver(&wake);
                }
            }
            Wake::Host(ev) => {
                for s in topics.tenants.get(&ev.tenant).into_iter().flatten() {
                    s.deliver(&wake);
                }
            }
            Wake::Resync => {
                let every = topics
                    .runs
                    .values()
                    .chain(topics.tenants.values())
                    .flatten()
                    .chain(&topics.all_runs);
                for s in every {
                    s.deliver(&wake);
                }
            }
        }
    }

    /// How many subscriptions follow `topic` (for tests and diagnostics).
    pub fn followers(&self, topic: &Topic) -> usize {
        let Ok(topics) = self.inner.topics.lock() else {
            return 0;
        };
        match topic {
            Topic::Run(id) => topics.runs.get(id).map_or(0, Vec::len),
            Topic::Tenant(t) => topics.tenants.get(t).map_or(0, Vec::len),
            Topic::AllRuns => topics.all_runs.len(),
        }
    }
}

/// Wake-ups for the topics one subscriber follows.
pub struct Subscription {
    slot: Arc<Slot>,
    topics: Vec<Topic>,
    hub: Weak<HubInner>,
}

impl Subscription {
    /// The next wake-up. Cancel-safe: a wake-up that arrives while nobody waits is kept
    /// for the next call.
    pub async fn recv(&mut self) -> Wake {
        loop {
            if let Some(w) = self.slot.take() {
                return w;
            }
            self.slot.notify.notified().await;
        }
    }

    /// A wake-up if one is pending, without waiting.
    pub fn try_recv(&mut self) -> Option<Wake> {
        self.slot.take()
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        if let Some(hub) = self.hub.upgrade()
            && let Ok(mut topics) = hub.topics.lock()
        {
            for t in &self.topics {
                topics.remove(t, self.slot.id);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn host(tenant: &str) -> Wake {
        Wake::Host(Box::new(HostEventRecord {
            seq: 0,
            tenant: tenant.into(),
            event_id: "e".into(),
            event_type: "negotiation.decided".into(),
            delivery: "ephemeral".into(),
            workspace_id: None,
            payload: json!({}),
            timestamp_ms: 0,
        }))
    }

    #[test]
    fn a_commit_wakes_only_the_followers_of_its_run_and_of_every_run() {
        let hub = WakeHub::default();
        let mut a = hub.subscribe(&[Topic::Run("t/a".into())]);
        let mut b: Vec<_> = (0..1000)
            .map(|_| hub.subscribe(&[Topic::Run("t/b".into())]))
            .collect();
        let mut every = hub.subscribe(&[Topic::AllRuns]);
        let mut tenant = hub.subscribe(&[Topic::Tenant("t".into())]);
        hub.publish(Wake::Run("t/a".into()));
        hub.publish(Wake::Run("t/a".into()));
        assert_eq!(a.try_recv(), Some(Wake::Run("t/a".into())));
        assert_eq!(a.try_recv(), None, "one pending wake-up per run");
        assert_eq!(every.try_recv(), Some(Wake::Run("t/a".into())));
        assert!(b.iter_mut().all(|s| s.try_recv().is_none()));
        assert_eq!(tenant.try_recv(), None);
        hub.publish(host("t"));
        hub.publish(host("u"));
        assert_eq!(tenant.try_recv(), Some(host("t")));
        assert_eq!(tenant.try_recv(), None);
        assert_eq!(a.try_recv(), None);
        hub.publish(Wake::Resync);
        assert_eq!(b[0].try_recv(), Some(Wake::Resync));
        assert_eq!(tenant.try_recv(), Some(Wake::Resync));
    }

    #[test]
    fn a_subscriber_that_falls_behind_is_told_to_resync() {
        let hub = WakeHub::default();
        let mut every = hub.subscribe(&[Topic::AllRuns]);
        for i in 0..=BACKLOG {
            hub.publish(Wake::Run(format!("t/{i}")));
        }
        assert_eq!(every.try_recv(), Some(Wake::Resync));
        assert_eq!(every.try_recv(), None);
    }

    #[test]
    fn dropping_a_subscription_unregisters_it() {
        let hub = WakeHub::default();
        let topic = Topic::Run("t/a".into());
        let s = hub.subscribe(&[topic.clone(), Topic::AllRuns]);
        assert_eq!(hub.followers(&topic), 1);
        drop(s);
        assert_eq!(hub.followers(&topic), 0);
        assert_eq!(hub.followers(&Topic::AllRuns), 0);
    }

    #[tokio::test]
    async fn recv_waits_for_the_next_wake_up() {
        let hub = WakeHub::default();
        let mut s = hub.subscribe(&[Topic::Run("t/a".into())]);
        let publisher = hub.clone();
        tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            publisher.publish(Wake::Run("t/b".into()));
            publisher.publish(Wake::Run("t/a".into()));
        });
        let got = tokio::time::timeout(std::time::Duration::from_secs(5), s.recv())
            .await
            .expect("woken");
        assert_eq!(got, Wake::Run("t/a".into()));
    }
}
