//! In-process wake-ups for SSE and long-poll waiters.
//!
//! A wake-up only says "look again": waiters always re-read the store, so a lost or
//! lagged wake-up costs latency, never data. PostgreSQL feeds the same channel from
//! LISTEN/NOTIFY, so a waiter on one replica sees what another appended.

use super::HostEventRecord;
use tokio::sync::broadcast;

/// What changed.
#[derive(Debug, Clone)]
pub enum Wake {
    /// The run with this id has new events.
    Run(String),
    /// A host event for a tenant; ephemeral events travel only here.
    Host(Box<HostEventRecord>),
    /// Something may have changed unannounced (notifications were lost): re-read all.
    Resync,
}

/// Publishes and subscribes to wake-ups.
pub trait Wakeups: Send + Sync {
    fn publish(&self, wake: Wake);
    fn subscribe(&self) -> broadcast::Receiver<Wake>;
}

/// One broadcast channel for the whole process.
pub struct LocalWakeups {
    tx: broadcast::Sender<Wake>,
}

impl Default for LocalWakeups {
    fn default() -> Self {
        Self {
            tx: broadcast::channel(1024).0,
        }
    }
}

impl Wakeups for LocalWakeups {
    fn publish(&self, wake: Wake) {
        // No receiver is fine: nobody is waiting.
        let _ = self.tx.send(wake);
    }

    fn subscribe(&self) -> broadcast::Receiver<Wake> {
        self.tx.subscribe()
    }
}
