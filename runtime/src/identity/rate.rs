//! Per-principal rate limits: a token bucket per authenticated caller (its key), checked
//! by every edge right after the credential is resolved, so one caller's flood is refused
//! with `429` and a `Retry-After` in that edge's own shape while others go on.

use std::collections::HashMap;
use std::sync::Mutex;
#[cfg(test)]
use std::time::Duration;
use std::time::Instant;

use super::Subject;

/// How fast one principal may call.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateConfig {
    /// Requests per second a principal may sustain; `0` turns the limit off.
    pub per_second: f64,
    /// Requests a principal may make at once after being idle.
    pub burst: f64,
}

impl Default for RateConfig {
    fn default() -> Self {
        RateConfig {
            per_second: 100.0,
            burst: 200.0,
        }
    }
}

/// A refusal: when the caller may try again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limited {
    /// Whole seconds, at least 1 (the `Retry-After` value).
    pub retry_after_secs: u64,
}

impl Limited {
    pub fn message(self) -> String {
        format!(
            "too many requests for this api key; retry after {} s",
            self.retry_after_secs
        )
    }

    /// The message when an address has spent its requests without a valid credential.
    pub fn unauthenticated_message(self) -> String {
        format!(
            "too many requests without a valid credential from this address; retry after {} s",
            self.retry_after_secs
        )
    }
}

struct Bucket {
    tokens: f64,
    at: Instant,
}

/// The buckets of every principal seen recently.
pub struct RateLimiter {
    config: RateConfig,
    buckets: Mutex<HashMap<String, Bucket>>,
}

/// Buckets kept before full (idle) ones are forgotten.
const PRUNE_ABOVE: usize = 4096;

impl RateLimiter {
    pub fn new(config: RateConfig) -> Self {
        RateLimiter {
            config,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one request's token for `subject`, or says how long to wait.
    pub fn admit(&self, subject: &Subject) -> Result<(), Limited> {
        self.admit_at(&subject.subject_id, Instant::now())
    }

    /// Takes one request's token for any other key (an address), or says how long to wait.
    pub fn admit_key(&self, key: &str) -> Result<(), Limited> {
        self.admit_at(key, Instant::now())
    }

    fn admit_at(&self, principal: &str, now: Instant) -> Result<(), Limited> {
        let RateConfig { per_second, burst } = self.config;
        if per_second <= 0.0 {
            return Ok(());
        }
        let burst = burst.max(1.0);
        let Ok(mut buckets) = self.buckets.lock() else {
            return Ok(());
        };
        if buckets.len() > PRUNE_ABOVE {
            buckets.retain(|_, b| {
                b.tokens + now.duration_since(b.at).as_secs_f64() * per_second < burst
            });
        }
        let bucket = buckets.entry(principal.to_owned()).or_insert(Bucket {
            tokens: burst,
            at: now,
        });
        let refill = now.duration_since(bucket.at).as_secs_f64() * per_second;
        bucket.tokens = (bucket.tokens + refill).min(burst);
        bucket.at = now;
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            Ok(())
        } else {
            let wait = ((1.0 - bucket.tokens) / per_second).ceil().max(1.0);
            Err(Limited {
                #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                retry_after_secs: wait.min(86_400.0) as u64,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_principal_past_its_burst_waits_and_others_do_not() {
        let limiter = RateLimiter::new(RateConfig {
            per_second: 0.5,
            burst: 3.0,
        });
        let t0 = Instant::now();
        for _ in 0..3 {
            limiter.admit_at("a", t0).expect("within the burst");
        }
        let refused = limiter.admit_at("a", t0).expect_err("past the burst");
        assert_eq!(refused.retry_after_secs, 2, "one token every 2 s");
        limiter
            .admit_at("b", t0)
            .expect("another principal is not held up");
        limiter
            .admit_at("a", t0 + Duration::from_secs(2))
            .expect("refilled");
    }

    #[test]
    fn zero_turns_the_limit_off() {
        let limiter = RateLimiter::new(RateConfig {
            per_second: 0.0,
            burst: 0.0,
        });
        for _ in 0..1000 {
            limiter.admit_at("a", Instant::now()).expect("no limit");
        }
    }
}
