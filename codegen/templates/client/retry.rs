//! Retries: which failures deserve another attempt, and how long to wait before it.
//! Written by hand (`codegen/templates/client/retry.rs`).

use std::time::{Duration, Instant, SystemTime};

use super::Error;

/// When and how often a failed call is sent again. Set one on the client
/// ([`ClientBuilder::retry`](super::ClientBuilder::retry)) and override it per call (the
/// builders' `retry(..)`).
///
/// A call is retried when its error [is retryable](Error::is_retryable) (a connection error,
/// a timeout, an answer cut short, `408`, `429`, a `5xx` but `501` and `505`, also from a
/// proxy that sends no error envelope, or a code the error registry marks retriable) and it is
/// safe to repeat: a `GET`, `PUT`, `DELETE`, `HEAD` or `OPTIONS`, or a `POST` that carries an
/// `Idempotency-Key` (the SDK mints one for every operation that accepts it, and sends the same
/// key on every attempt, so a retried `createRun` starts one run).
///
/// A `429` and a failure to connect are retried whatever the method: the host acted on
/// nothing, so sending again cannot act twice.
///
/// The wait before attempt `n + 1` is `Retry-After` when the answer carries one (seconds or an
/// HTTP date) and it is at most [`RetryPolicy::max_retry_after`], plus a random share of it
/// (up to half of it, at least up to `initial_backoff`, at most `max_backoff`) so that the
/// clients one rate limit refused together do not come back together; a longer `Retry-After`
/// ends the retries and the caller gets the error (its [`Error::retry_after`] says how long the
/// host asked for). Without `Retry-After` it is exponential: `initial_backoff * 2^(n-1)`, at
/// most `max_backoff`, with "equal jitter" (a random point in the upper half) so that many
/// clients do not retry in step.
///
/// The per-attempt timeout ([`ClientBuilder::timeout`](super::ClientBuilder::timeout)) bounds
/// one attempt; [`RetryPolicy::max_elapsed`] bounds the whole call, attempts and waits
/// together: no retry is waited for past it, and the last attempt's timeout is cut to what is
/// left of it.
///
/// Defaults: 3 attempts in all, 500 ms initial backoff, 8 s maximum backoff, `Retry-After`
/// honoured up to 60 s, jitter on, no bound on the whole call.
///
/// ```
/// use openwop_sdk::client::{Client, RetryPolicy};
/// use std::time::Duration;
///
/// // Up to 5 attempts, but the caller hears back within 20 s whatever happens.
/// let policy = RetryPolicy::default()
///     .max_attempts(5)
///     .max_elapsed(Duration::from_secs(20));
/// let client = Client::builder("http://127.0.0.1:8080").retry(policy).build()?;
/// # Ok::<(), openwop_sdk::client::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct RetryPolicy {
    max_attempts: u32,
    initial_backoff: Duration,
    max_backoff: Duration,
    max_retry_after: Duration,
    jitter: bool,
    max_elapsed: Option<Duration>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 3,
            initial_backoff: Duration::from_millis(500),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
            jitter: true,
            max_elapsed: None,
        }
    }
}

impl RetryPolicy {
    /// One attempt, no retries.
    pub fn none() -> Self {
        Self {
            max_attempts: 1,
            ..Self::default()
        }
    }

    /// How many attempts in all, the first included (at least 1).
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// The wait before the first retry, when the answer names none.
    pub fn initial_backoff(mut self, wait: Duration) -> Self {
        self.initial_backoff = wait;
        self
    }

    /// The longest computed wait between two attempts.
    pub fn max_backoff(mut self, wait: Duration) -> Self {
        self.max_backoff = wait;
        self
    }

    /// The longest `Retry-After` the client waits for; a longer one ends the retries.
    pub fn max_retry_after(mut self, wait: Duration) -> Self {
        self.max_retry_after = wait;
        self
    }

    /// Whether waits are randomised (on by default): computed backoffs, and a share added to
    /// `Retry-After`.
    pub fn jitter(mut self, on: bool) -> Self {
        self.jitter = on;
        self
    }

    /// The longest a whole call may take, every attempt and every wait between them
    /// included. A retry whose wait would end past it is not made (the caller gets the last
    /// error), and an attempt's timeout is cut to what is left, so a host that never answers
    /// costs this much and no more.
    pub fn max_elapsed(mut self, limit: Duration) -> Self {
        self.max_elapsed = Some(limit);
        self
    }

    /// How many attempts in all.
    pub fn attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The bound on the whole call, when there is one.
    pub fn elapsed_limit(&self) -> Option<Duration> {
        self.max_elapsed
    }

    /// The wait before the next attempt of a call that began at `started`, as
    /// [`RetryPolicy::delay`] says, but `None` when that attempt would begin past
    /// `max_elapsed`.
    pub(crate) fn delay_within(
        &self,
        attempt: u32,
        retry_after: Option<Duration>,
        started: Instant,
    ) -> Option<Duration> {
        let wait = self.delay(attempt, retry_after)?;
        match self.max_elapsed {
            // A `Retry-After` so large that the sum overflows is past any limit.
            Some(limit)
                if started
                    .elapsed()
                    .checked_add(wait)
                    .is_none_or(|end| end >= limit) =>
            {
                None
            }
            _ => Some(wait),
        }
    }

    /// An attempt's timeout, cut to what is left of `max_elapsed` for a call that began at
    /// `started`.
    pub(crate) fn attempt_timeout(
        &self,
        timeout: Option<Duration>,
        started: Instant,
    ) -> Option<Duration> {
        let Some(limit) = self.max_elapsed else {
            return timeout;
        };
        // At least a millisecond: a zero timeout would not be a timeout to every transport.
        let left = limit
            .saturating_sub(started.elapsed())
            .max(Duration::from_millis(1));
        Some(timeout.map_or(left, |t| t.min(left)))
    }

    /// The wait before the attempt after failed attempt `attempt` (1-based), given the
    /// `Retry-After` the failure carried; `None` when there is no further attempt.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>) -> Option<Duration> {
        if attempt >= self.max_attempts {
            return None;
        }
        if let Some(wait) = retry_after {
            if wait > self.max_retry_after {
                return None;
            }
            // Never sooner than asked, but not all at the same instant either: every client
            // a rate limit refused at once is told the same `Retry-After`, and retrying in
            // step they are refused together again (40 callers of one client against a host
            // limiting to 20/s: 15 got through without this, 40 with it). Up to half the
            // wait more, at least up to the initial backoff, at most the maximum backoff.
            if !self.jitter {
                return Some(wait);
            }
            return Some(spread_retry_after(
                wait,
                self.initial_backoff,
                self.max_backoff,
            ));
        }
        let factor = 1u32 << attempt.saturating_sub(1).min(16);
        let wait = self
            .initial_backoff
            .saturating_mul(factor)
            .min(self.max_backoff);
        if !self.jitter || wait.is_zero() {
            return Some(wait);
        }
        let half = wait / 2;
        let spread = (wait - half).as_nanos().max(1) as u64;
        Some(half + Duration::from_nanos(random_u64() % spread))
    }
}

/// `wait` (a `Retry-After`) plus a random share of it, up to half of it, at least up to
/// `floor`, at most `cap`: never sooner than the host asked, but the clients it refused
/// together do not come back together.
pub(crate) fn spread_retry_after(wait: Duration, floor: Duration, cap: Duration) -> Duration {
    let spread = (wait / 2).max(floor).min(cap).as_nanos().max(1) as u64;
    wait.saturating_add(Duration::from_nanos(random_u64() % spread))
}

/// `Retry-After` as delay-seconds or an HTTP date (RFC 9110 §10.2.3); a date in the past is
/// zero.
pub(crate) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Randomness for jitter and idempotency keys, from the operating system. Should the OS
/// refuse, the clock's nanoseconds still spread clients apart.
pub(crate) fn random_u64() -> u64 {
    getrandom::u64().unwrap_or_else(|_| {
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or_default()
    })
}

/// A fresh `Idempotency-Key` for one logical call (128 random bits).
pub(crate) fn mint_idempotency_key() -> String {
    format!("openwop-rust-{:016x}{:016x}", random_u64(), random_u64())
}

impl Error {
    /// Whether sending the same request again may succeed: a connection error, a timeout or
    /// an answer cut short; `408`, `429` or a `5xx`; an error code the registry marks
    /// retriable; or `idempotency_in_flight`. (Whether it is *safe* to send again is the
    /// method's and the `Idempotency-Key`'s business; the client checks both before it
    /// retries.) A `Stream` error is retryable as its last failure is (a stream that gave up
    /// on silence is); opening the stream again may succeed.
    ///
    /// The registry marks `idempotency_in_flight` not retriable: sent again *at once*, the
    /// request meets the same first attempt still at work. It is the answer a client's own
    /// retry gets when its first attempt timed out but the host is still acting on it, and
    /// after a wait the same key is answered with that first attempt's result, so the client
    /// waits (`Retry-After` when given, else its backoff) and asks again.
    pub fn is_retryable(&self) -> bool {
        match self {
            Error::Transport(e) => !(e.is_builder() || e.is_redirect() || e.is_status()),
            Error::Api { status, .. } => {
                retryable_status(*status)
                    || self.registry_code().is_some_and(|c| c.retriable())
                    || self.code_text().as_deref() == Some("idempotency_in_flight")
            }
            Error::Http { status, .. } => retryable_status(*status),
            Error::TimedOut { .. } => true,
            // A stream that gave up: as its last failure is (silence is a timeout).
            Error::Stream { last, .. } => last.as_ref().is_none_or(|last| last.is_retryable()),
            _ => false,
        }
    }

    /// How long the host asked the client to wait (`Retry-After`, in seconds or as an HTTP
    /// date), when the answer says.
    pub fn retry_after(&self) -> Option<Duration> {
        let value = self.headers()?.get("retry-after")?.to_str().ok()?;
        parse_retry_after(value, SystemTime::now())
    }

    /// Whether the host certainly acted on nothing: it refused the request for its rate
    /// (`429`), or no connection was made. Such a request may be sent again whatever its
    /// method.
    pub(crate) fn acted_on_nothing(&self) -> bool {
        match self {
            Error::Transport(e) => e.is_connect(),
            Error::Api { status, .. } | Error::Http { status, .. } => *status == 429,
            _ => false,
        }
    }

    /// True when the request or the connection timed out; for a `Stream` error, when its
    /// last failure did, or the stream gave up on silence (nothing received for the idle
    /// timeout).
    pub fn is_timeout(&self) -> bool {
        match self {
            Error::Transport(e) => e.is_timeout(),
            Error::TimedOut { .. } => true,
            // No last error: the stream ended on silence.
            Error::Stream { last, .. } => last.as_ref().is_none_or(|last| last.is_timeout()),
            _ => false,
        }
    }
}

/// `408`, `429` and the `5xx` that say "not now" (`501 Not Implemented` and `505 HTTP
/// Version Not Supported` say "never").
fn retryable_status(status: u16) -> bool {
    matches!(status, 408 | 429 | 500 | 502..=504 | 506..=599)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let now = httpdate::parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT").unwrap();
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:40 GMT", now),
            Some(Duration::from_secs(3))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn backoff_grows_is_capped_and_jittered_into_the_upper_half() {
        let policy = RetryPolicy::default()
            .max_attempts(10)
            .initial_backoff(Duration::from_millis(100))
            .max_backoff(Duration::from_millis(1000));
        for (attempt, full) in [(1, 100), (2, 200), (3, 400), (4, 800), (5, 1000), (9, 1000)] {
            let wait = policy.delay(attempt, None).unwrap();
            let full = Duration::from_millis(full);
            assert!(wait >= full / 2 && wait <= full, "{attempt}: {wait:?}");
        }
        assert_eq!(policy.delay(10, None), None);
        let exact = policy.clone().jitter(false);
        assert_eq!(exact.delay(3, None), Some(Duration::from_millis(400)));
    }

    #[test]
    fn retry_after_wins_up_to_its_cap() {
        let policy = RetryPolicy::default().max_retry_after(Duration::from_secs(5));
        assert_eq!(
            policy
                .clone()
                .jitter(false)
                .delay(1, Some(Duration::from_secs(4))),
            Some(Duration::from_secs(4))
        );
        assert_eq!(policy.delay(1, Some(Duration::from_secs(6))), None);
        assert_eq!(RetryPolicy::none().delay(1, None), None);
    }

    /// Callers told the same `Retry-After` come back spread over up to half of it more,
    /// never sooner.
    #[test]
    fn retry_after_is_spread_but_never_shortened() {
        let policy = RetryPolicy::default();
        let asked = Duration::from_secs(2);
        let waits: Vec<Duration> = (0..40)
            .map(|_| policy.delay(1, Some(asked)).unwrap())
            .collect();
        assert!(
            waits.iter().all(|w| *w >= asked && *w < asked + asked / 2),
            "{waits:?}"
        );
        let distinct: std::collections::BTreeSet<_> = waits.iter().collect();
        assert!(distinct.len() > 20, "{waits:?}");
        // A zero Retry-After is spread over the initial backoff.
        let now = policy.delay(1, Some(Duration::ZERO)).unwrap();
        assert!(now < Duration::from_millis(500), "{now:?}");
    }

    #[test]
    fn minted_keys_differ() {
        assert_ne!(mint_idempotency_key(), mint_idempotency_key());
        assert!(mint_idempotency_key().len() <= 255);
    }
}
