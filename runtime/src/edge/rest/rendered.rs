//! `getRun` answers kept under their run's detail stamp (issue #33).
//!
//! A client polling a run it waits on asks for the same bytes again and again; making
//! them was most of a GET (a read transaction, the run's JSON columns parsed, the
//! snapshot built, serialized and fingerprinted for its ETag). Kept here, a GET of an
//! unchanged run is the stamp's lookup and a copy of a reference. The stamp
//! ([`crate::ops::Ops::snapshot_stamp`]) is taken before the read the answer is made
//! from and moves, before any write's answer, with every commit that may change the run's
//! detail, so a kept answer is one the store would give now; a store that cannot say
//! (PostgreSQL, whose replicas write beside this process) gives no stamp and nothing is
//! kept. Keys are the bound run id, whose tenant the caller's was checked against before
//! the lookup, so a kept answer only ever reaches the tenant it was made for.
//!
//! Bounded by bytes: past [`BUDGET`] everything kept is dropped at once (the answers are
//! made again as they are asked for), and an answer over [`LARGEST`] is never kept.

use std::collections::HashMap;
use std::sync::Mutex;

use axum::body::Bytes;
use axum::http::HeaderValue;

/// The most bytes of answers kept at once.
const BUDGET: usize = 16 << 20;

/// An answer larger than this is made each time (a run with large inputs would push the
/// others out).
const LARGEST: usize = 256 << 10;

/// One answer: its body and its ETag.
#[derive(Clone)]
pub struct Rendered {
    pub body: Bytes,
    pub etag: HeaderValue,
}

struct Kept {
    stamp: u64,
    rendered: Rendered,
}

#[derive(Default)]
struct Held {
    bytes: usize,
    runs: HashMap<String, Kept>,
}

/// The kept `getRun` answers (see the module's comment).
#[derive(Default)]
pub struct RenderedRuns {
    held: Mutex<Held>,
}

impl RenderedRuns {
    /// The answer kept for `run_id` if it was made under `stamp`.
    pub fn get(&self, run_id: &str, stamp: u64) -> Option<Rendered> {
        let held = self.held.lock().ok()?;
        let kept = held.runs.get(run_id)?;
        (kept.stamp == stamp).then(|| kept.rendered.clone())
    }

    /// Keeps `rendered`, made from a read that began after `stamp` was taken.
    pub fn keep(&self, run_id: String, stamp: u64, rendered: Rendered) {
        let size = rendered.body.len() + run_id.len();
        if rendered.body.len() > LARGEST {
            return;
        }
        let Ok(mut held) = self.held.lock() else {
            return;
        };
        if let Some(old) = held.runs.get(&run_id) {
            if old.stamp > stamp {
                // A read older than the kept one finished later: keep the newer.
                return;
            }
            let old_size = old.rendered.body.len() + run_id.len();
            held.bytes -= old_size;
        } else if held.bytes + size > BUDGET {
            held.runs.clear();
            held.bytes = 0;
        }
        held.bytes += size;
        held.runs.insert(run_id, Kept { stamp, rendered });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(body: &'static str) -> Rendered {
        Rendered {
            body: Bytes::from_static(body.as_bytes()),
            etag: HeaderValue::from_static("\"1-x\""),
        }
    }

    #[test]
    fn an_answer_is_given_back_only_under_its_stamp() {
        let kept = RenderedRuns::default();
        kept.keep("t/a".into(), 3, answer("{\"a\":1}"));
        assert_eq!(kept.get("t/a", 3).unwrap().body, "{\"a\":1}");
        assert!(kept.get("t/a", 4).is_none(), "the run changed since");
        assert!(
            kept.get("u/a", 3).is_none(),
            "another tenant's id is another key"
        );
        kept.keep("t/a".into(), 4, answer("{\"a\":2}"));
        assert_eq!(kept.get("t/a", 4).unwrap().body, "{\"a\":2}");
        kept.keep("t/a".into(), 3, answer("{\"a\":1}"));
        assert_eq!(
            kept.get("t/a", 4).unwrap().body,
            "{\"a\":2}",
            "an older read finishing late does not replace a newer answer"
        );
    }

    #[test]
    fn the_bytes_kept_stay_within_the_budget() {
        let kept = RenderedRuns::default();
        let body: &'static str = Box::leak("x".repeat(LARGEST).into_boxed_str());
        for i in 0..(2 * BUDGET / LARGEST) {
            kept.keep(format!("t/r{i}"), 1, answer(body));
            let held = kept.held.lock().unwrap();
            assert!(held.bytes <= BUDGET);
            let counted: usize = held
                .runs
                .iter()
                .map(|(k, v)| k.len() + v.rendered.body.len())
                .sum();
            assert_eq!(counted, held.bytes);
        }
        let too_large: &'static str = Box::leak("x".repeat(LARGEST + 1).into_boxed_str());
        kept.keep("t/big".into(), 1, answer(too_large));
        assert!(kept.get("t/big", 1).is_none());
    }
}
