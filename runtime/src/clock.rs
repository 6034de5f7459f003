//! Wall-clock helpers: milliseconds since the epoch and RFC 3339 timestamps, without a
//! calendar dependency.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// `2026-12-02T18:23:06.123Z` for a millisecond timestamp.
pub fn rfc3339(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let millis = ms.rem_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    let (h, min, s) = (rem / 3600, (rem % 3600) / 60, rem % 60);
    if !(0..=9999).contains(&y) {
        return format!("{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}.{millis:03}Z");
    }
    // Every snapshot and event carries timestamps; writing the digits in place costs a
    // tenth of `format!`'s padded-integer formatting.
    let mut out = *b"0000-00-00T00:00:00.000Z";
    for (at, width, value) in [
        (0, 4, y),
        (5, 2, i64::from(m)),
        (8, 2, i64::from(d)),
        (11, 2, h),
        (14, 2, min),
        (17, 2, s),
        (20, 3, millis),
    ] {
        let mut v = value;
        for i in (at..at + width).rev() {
            out[i] = b'0' + (v % 10) as u8;
            v /= 10;
        }
    }
    out.iter().map(|&b| char::from(b)).collect()
}

/// `Thu, 03 Dec 2026 18:09:59 GMT` (RFC 9110 IMF-fixdate) for a millisecond timestamp:
/// what `Last-Modified` carries.
pub fn http_date(ms: i64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{}, {d:02} {} {y:04} {:02}:{:02}:{:02} GMT",
        DAYS[days.rem_euclid(7) as usize],
        MONTHS[(m - 1) as usize],
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Howard Hinnant's days-to-civil algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Days since the Unix epoch of a `YYYY-MM-DD` date; `None` unless it is a real date.
pub fn parse_date(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = s.get(r)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())
            .flatten()
    };
    let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let days = days_from_civil(y, m, d);
    // A date that does not round-trip (2026-02-30) is not a date.
    (civil_from_days(days) == (y, m as u32, d as u32)).then_some(days)
}

/// `YYYY-MM-DD` of a day number (days since the Unix epoch).
pub fn date_of_day(days: i64) -> String {
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The day number (days since the Unix epoch) a millisecond timestamp falls on.
pub fn day_of(ms: i64) -> i64 {
    ms.div_euclid(86_400_000)
}

/// Howard Hinnant's days-from-civil algorithm (the inverse of [`civil_from_days`]).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// What time it is for code a test must move through time (the refresh SLA): the system
/// clock plus an offset that only [`Clock::advance`] changes. Clones share the offset.
#[derive(Debug, Clone, Default)]
pub struct Clock {
    offset_ms: std::sync::Arc<std::sync::atomic::AtomicI64>,
}

impl Clock {
    /// The system clock.
    pub fn system() -> Self {
        Self::default()
    }

    /// Milliseconds since the Unix epoch, as this clock reads.
    pub fn now_ms(&self) -> i64 {
        now_ms() + self.offset_ms.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Today's day number (days since the Unix epoch).
    pub fn today(&self) -> i64 {
        day_of(self.now_ms())
    }

    /// Sets this clock (and every clone of it) to noon UTC of day number `day`, back or
    /// forth: a test of the refresh SLA must not depend on the day it runs.
    pub fn set_day(&self, day: i64) {
        let target = day * 86_400_000 + 43_200_000;
        self.offset_ms
            .store(target - now_ms(), std::sync::atomic::Ordering::Relaxed);
    }

    /// Moves this clock (and every clone of it) forward.
    pub fn advance(&self, by: std::time::Duration) {
        let ms = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        self.offset_ms
            .fetch_add(ms, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Today's date as `(year, month, day)`, for the validators' refresh-window rule.
pub fn today() -> (i32, u32, u32) {
    let (y, m, d) = civil_from_days(now_ms().div_euclid(86_400_000));
    (y as i32, m, d)
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_known_instants() {
        assert_eq!(super::rfc3339(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(
            super::rfc3339(1_796_235_786_123),
            "2026-12-02T18:23:06.123Z"
        );
        assert_eq!(super::rfc3339(951_782_400_000), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn the_digit_writer_agrees_with_format_across_the_calendar() {
        let general = |ms: i64| {
            let (secs, millis) = (ms.div_euclid(1000), ms.rem_euclid(1000));
            let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
            let (y, m, d) = super::civil_from_days(days);
            format!(
                "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
                rem / 3600,
                (rem % 3600) / 60,
                rem % 60
            )
        };
        // From year 0 to 9999 in uneven steps (every field changes), and the edges.
        let mut ms = -62_167_219_200_000_i64;
        while ms < 253_402_300_800_000 {
            assert_eq!(super::rfc3339(ms), general(ms), "{ms}");
            ms += 86_399_999_937;
        }
        for ms in [
            -62_167_219_200_001,
            253_402_300_799_999,
            253_402_300_800_000,
        ] {
            assert_eq!(super::rfc3339(ms), general(ms), "{ms}");
        }
    }

    #[test]
    fn dates_parse_and_print_back() {
        assert_eq!(super::parse_date("1970-01-01"), Some(0));
        let d = super::parse_date("2026-11-20").unwrap();
        assert_eq!(super::date_of_day(d), "2026-11-20");
        assert_eq!(super::date_of_day(d + 90), "2027-02-18");
        assert_eq!(super::parse_date("2026-02-30"), None);
        assert_eq!(super::parse_date("2026-1-01"), None);
        assert_eq!(
            super::parse_date("2028-02-29")
                .map(super::date_of_day)
                .as_deref(),
            Some("2028-02-29")
        );
    }

    #[test]
    fn a_moved_clock_moves_every_clone() {
        let clock = super::Clock::system();
        let other = clock.clone();
        let before = other.today();
        clock.advance(std::time::Duration::from_secs(10 * 86_400));
        assert!(other.today() >= before + 10);
    }

    #[test]
    fn http_dates_are_imf_fixdate() {
        assert_eq!(super::http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(
            super::http_date(1_796_235_786_123),
            "Wed, 02 Dec 2026 18:23:06 GMT"
        );
    }
}
