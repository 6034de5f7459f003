//! The reloadable configuration as one value ([`Snapshot`]) and the one cell that holds it
//! ([`Live`]), read by the key ring, the operations and the peers and swapped whole by a
//! reload (see [`super`]). It depends on none of its readers' modules: only on the data
//! it holds.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, RwLock};

use crate::identity::entry::Entry;
use crate::peers::peer::Peer;
use crate::settings::Visibility;

/// The reloadable configuration as one value: what a request reads all of.
#[derive(Clone, Default)]
pub struct Snapshot {
    pub(crate) keys: Arc<Vec<Entry>>,
    pub(crate) visibility: Arc<Visibility>,
    pub(crate) peers: Arc<BTreeMap<String, Arc<Peer>>>,
    /// Counts the swaps of this cell (0 as built).
    pub generation: u64,
}

/// The cell the key ring, the operations and the peers of one host share (each clone is
/// the same cell). A component built alone has a cell of its own; `Host::build` puts all
/// three in the key ring's.
#[derive(Clone, Default)]
pub struct Live(Arc<RwLock<Arc<Snapshot>>>);

tokio::task_local! {
    /// The snapshot a request was pinned to, with the cell it came from.
    static PINNED: (usize, Arc<Snapshot>);
}

impl Live {
    fn id(&self) -> usize {
        Arc::as_ptr(&self.0) as usize
    }

    /// The snapshot this task was pinned to (by this cell), else the one in force.
    pub fn current(&self) -> Arc<Snapshot> {
        PINNED
            .try_with(|(id, pinned)| (*id == self.id()).then(|| pinned.clone()))
            .ok()
            .flatten()
            .unwrap_or_else(|| self.0.read().unwrap_or_else(|e| e.into_inner()).clone())
    }

    /// Replaces the snapshot with `change` applied to a copy of the one in force: one
    /// swap, whatever `change` touches.
    pub(crate) fn swap(&self, change: impl FnOnce(&mut Snapshot)) {
        let mut cell = self.0.write().unwrap_or_else(|e| e.into_inner());
        let mut next = Snapshot::clone(&cell);
        change(&mut next);
        next.generation = cell.generation + 1;
        *cell = Arc::new(next);
    }

    /// Runs `work` pinned to the snapshot in force now: every read of this cell inside it
    /// (on this task) sees that snapshot, whatever a reload swaps meanwhile.
    pub async fn pinned<F: Future>(&self, work: F) -> F::Output {
        PINNED.scope((self.id(), self.current()), work).await
    }

    /// `work` pinned to the snapshot the calling task is pinned to (or the one in force),
    /// for a task a request spawns.
    pub fn carried<F: Future>(&self, work: F) -> impl Future<Output = F::Output> + use<F> {
        PINNED.scope((self.id(), self.current()), work)
    }
}
