//! Detail stamps: a number per run that changes whenever the run's detail (its row, its
//! open interrupt, its A2A context: what [`RunStore::run_detail`] reads) may have changed,
//! so a reader can keep what it made from a detail and know, without reading the store,
//! when that is stale ([`RunStore::detail_stamp`]).
//!
//! The writer thread calls [`Stamps::changed`] after each commit and before it answers the
//! writes in it, so a client that has its write's answer never gets the older detail. The
//! writer learns what a write touched from SQLite itself (an update hook on its
//! connection, `conn::spawn_writer`): a write that changed a row of `runs`, `interrupts`
//! or `a2a_tasks` stamps the run it was made for ([`super::SqliteStore::write_run`]), or,
//! made for no run, every run. A write path that forgets to name its run costs cached
//! answers, never a stale one.
//!
//! How a reader uses it: take the stamp, then read; keep the result under that stamp;
//! trust it later only while the stamp is the same. A commit the read did not see was
//! stamped after the read's stamp was taken (the stamp follows the commit), so it shows.
//!
//! [`RunStore::run_detail`]: crate::store::RunStore::run_detail
//! [`RunStore::detail_stamp`]: crate::store::RunStore::detail_stamp

use std::collections::HashMap;
use std::sync::Mutex;

/// Runs whose stamps are kept one by one; past this many, every run's stamp moves at once
/// (the map is emptied and the floor raised), so the memory stays bounded whatever the
/// number of runs written.
const KEPT: usize = 65_536;

/// What changed in one commit.
#[derive(Debug, Default)]
pub(super) struct Changes {
    /// The runs whose detail may have changed.
    pub runs: Vec<String>,
    /// A detail may have changed for a run not named: every stamp moves.
    pub all: bool,
}

impl Changes {
    pub fn is_empty(&self) -> bool {
        self.runs.is_empty() && !self.all
    }
}

#[derive(Default)]
struct Clock {
    /// The last stamp given.
    now: u64,
    /// The stamp of every run not in `runs`.
    floor: u64,
    runs: HashMap<String, u64>,
}

/// The stamps of a store's runs (see the module's comment).
#[derive(Default)]
pub(super) struct Stamps {
    clock: Mutex<Clock>,
}

impl Stamps {
    /// The stamp of `run_id` now.
    pub fn stamp(&self, run_id: &str) -> Option<u64> {
        let clock = self.clock.lock().ok()?;
        Some(
            clock
                .runs
                .get(run_id)
                .copied()
                .unwrap_or(0)
                .max(clock.floor),
        )
    }

    /// Moves the stamps of what `changes` names. Called after the commit that made them.
    pub fn changed(&self, changes: &Changes) {
        if changes.is_empty() {
            return;
        }
        // A poisoned lock means a reader panicked holding it: no stamp is trusted again
        // (`stamp` answers `None` from then on), so there is nothing to move.
        let Ok(mut clock) = self.clock.lock() else {
            return;
        };
        clock.now += 1;
        let now = clock.now;
        if changes.all || clock.runs.len() + changes.runs.len() > KEPT {
            clock.runs.clear();
            clock.floor = now;
            return;
        }
        for run in &changes.runs {
            clock.runs.insert(run.clone(), now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runs(ids: &[&str]) -> Changes {
        Changes {
            runs: ids.iter().map(|s| (*s).to_owned()).collect(),
            all: false,
        }
    }

    #[test]
    fn a_change_moves_its_runs_stamp_and_no_other() {
        let s = Stamps::default();
        let (a0, b0) = (s.stamp("t/a").unwrap(), s.stamp("t/b").unwrap());
        s.changed(&runs(&["t/a"]));
        assert_ne!(s.stamp("t/a").unwrap(), a0);
        assert_eq!(s.stamp("t/b").unwrap(), b0);
        let a1 = s.stamp("t/a").unwrap();
        s.changed(&runs(&["t/a"]));
        assert_ne!(s.stamp("t/a").unwrap(), a1);
        s.changed(&Changes::default());
        assert_eq!(s.stamp("t/b").unwrap(), b0);
    }

    #[test]
    fn a_change_of_no_named_run_moves_every_stamp() {
        let s = Stamps::default();
        s.changed(&runs(&["t/a"]));
        let (a, b) = (s.stamp("t/a").unwrap(), s.stamp("t/b").unwrap());
        s.changed(&Changes {
            runs: vec![],
            all: true,
        });
        assert_ne!(s.stamp("t/a").unwrap(), a);
        assert_ne!(s.stamp("t/b").unwrap(), b);
    }

    #[test]
    fn past_the_kept_runs_every_stamp_moves_and_none_goes_back() {
        let s = Stamps::default();
        s.changed(&runs(&["t/a"]));
        let (a, b) = (s.stamp("t/a").unwrap(), s.stamp("t/b").unwrap());
        let many: Vec<String> = (0..KEPT).map(|i| format!("t/r{i}")).collect();
        s.changed(&Changes {
            runs: many,
            all: false,
        });
        assert!(s.clock.lock().unwrap().runs.len() <= KEPT);
        let (a2, b2) = (s.stamp("t/a").unwrap(), s.stamp("t/b").unwrap());
        assert!(a2 > a && b2 > b, "every stamp moved forward");
        s.changed(&runs(&["t/a"]));
        assert!(s.stamp("t/a").unwrap() > a2);
        assert_eq!(s.stamp("t/b").unwrap(), b2);
    }
}
