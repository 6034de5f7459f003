//! How long the executor waits before retrying a step the store could not take: doubling
//! from 100 ms to 5 s, each delay jittered so replicas that lost the same database do not
//! come back in lockstep.

use std::time::Duration;

const FIRST: Duration = Duration::from_millis(100);
const MAX: Duration = Duration::from_secs(5);

/// Bounded exponential backoff; `reset` after a step goes through.
#[derive(Debug)]
pub(super) struct Backoff {
    next: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Self { next: FIRST }
    }
}

impl Backoff {
    pub(super) fn reset(&mut self) {
        self.next = FIRST;
    }

    /// The next delay: between half and all of the current step, which then doubles.
    pub(super) fn next_delay(&mut self) -> Duration {
        let step = self.next;
        self.next = (step * 2).min(MAX);
        let half = step / 2;
        half + half.mul_f64(unit_random())
    }
}

/// A number in [0, 1]; the clock's nanoseconds when the OS random source is unavailable
/// (jitter only spreads retries, it guards nothing).
fn unit_random() -> f64 {
    let mut bytes = [0u8; 4];
    let raw = if getrandom::fill(&mut bytes).is_ok() {
        u32::from_le_bytes(bytes)
    } else {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or_default()
    };
    f64::from(raw) / f64::from(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_within_jitter_up_to_the_cap_and_reset() {
        let mut b = Backoff::default();
        let mut step = FIRST;
        for _ in 0..10 {
            let d = b.next_delay();
            assert!(
                d >= step / 2 && d <= step,
                "{d:?} outside [{:?}, {step:?}]",
                step / 2
            );
            step = (step * 2).min(MAX);
        }
        assert!(b.next_delay() <= MAX);
        b.reset();
        assert!(b.next_delay() <= FIRST);
    }
}
