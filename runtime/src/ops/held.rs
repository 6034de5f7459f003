//! Durable host events a request raises before it creates a run (A2A and MCP record their
//! `negotiation.decided` first), held back and written in the creation's transaction, so
//! a request that creates a run is one commit. An edge runs a request inside
//! [`Ops::holding_host_events`]; what no creation took is written when the request ends,
//! before its answer goes out, so an answered request always has its events stored.

use std::cell::RefCell;
use std::future::Future;

use super::{OpError, Ops};
use crate::store::HostEventRecord;

tokio::task_local! {
    static HELD: RefCell<Vec<HostEventRecord>>;
}

/// Holds `event` when the current request holds its host events; gives it back otherwise.
pub(super) fn hold(event: HostEventRecord) -> Option<HostEventRecord> {
    let mut event = Some(event);
    let _ = HELD.try_with(|held| {
        if let Some(e) = event.take() {
            held.borrow_mut().push(e);
        }
    });
    event
}

/// The events held so far, taken (for a creation to write).
pub(super) fn take() -> Vec<HostEventRecord> {
    HELD.try_with(|held| held.take()).unwrap_or_default()
}

/// Gives back events a creation took but did not write (it failed).
pub(super) fn give_back(events: Vec<HostEventRecord>) {
    if events.is_empty() {
        return;
    }
    let _ = HELD.try_with(|held| {
        let mut held = held.borrow_mut();
        let later = std::mem::take(&mut *held);
        held.extend(events);
        held.extend(later);
    });
}

/// Host events a request holds, handed to a task it spawns to do its work (task-locals
/// do not follow a spawn): [`hand_over_host_events`], then
/// [`Ops::holding_host_events_from`] in the task.
pub struct HeldHostEvents(Vec<HostEventRecord>);

/// Takes the current request's held host events for a task it spawns.
pub fn hand_over_host_events() -> HeldHostEvents {
    HeldHostEvents(take())
}

impl Ops {
    /// Runs one request holding its durable host events back for a creation's
    /// transaction; writes whatever is still held when `request` ends, before its answer
    /// is returned. `Err` when they cannot be written: the request must then not be
    /// answered as if they were.
    pub async fn holding_host_events<T>(
        &self,
        request: impl Future<Output = T>,
    ) -> Result<T, OpError> {
        self.holding_host_events_from(HeldHostEvents(Vec::new()), request)
            .await
    }

    /// [`Ops::holding_host_events`], starting with what a request handed over.
    pub async fn holding_host_events_from<T>(
        &self,
        held: HeldHostEvents,
        request: impl Future<Output = T>,
    ) -> Result<T, OpError> {
        let (out, left) = HELD
            .scope(RefCell::new(held.0), async {
                let out = request.await;
                (out, take())
            })
            .await;
        for event in left {
            self.runs.append_host_event(event).await?;
        }
        Ok(out)
    }
}
