//! Row timestamps that keep their order through a line union. A row's `at` has
//! microseconds, and a row appended to a note is stamped strictly after every row the note
//! already holds (a hybrid logical clock per note): rows one clone records in the same
//! second — a `fail` after a `pass` — keep their order on every clone a sync reaches, and
//! the latest by `at` is the latest recorded.

use std::time::{Duration, SystemTime};

/// `at` as a point in time (RFC 3339, with or without a fraction); `None` when it is not
/// one.
pub fn parse(at: &str) -> Option<SystemTime> {
    humantime::parse_rfc3339_weak(at).ok()
}

/// RFC 3339 UTC with microseconds.
pub fn format(at: SystemTime) -> String {
    humantime::format_rfc3339_micros(at).to_string()
}

/// Orders two `at` values by the time they name (a second-precision stamp and one with a
/// fraction compare by time, not as text); an unreadable one sorts first.
pub fn cmp(a: &str, b: &str) -> std::cmp::Ordering {
    parse(a).cmp(&parse(b))
}

/// `line` (a JSON row whose first field is `"at"`) restamped, when needed, to one
/// microsecond after the latest `at` among the rows of `note`.
pub fn after(note: &str, line: &str) -> String {
    const HEAD: &str = "{\"at\":\"";
    let Some(rest) = line.strip_prefix(HEAD) else {
        return line.to_string();
    };
    let Some(end) = rest.find('"') else {
        return line.to_string();
    };
    let ours = &rest[..end];
    let latest = note
        .lines()
        .filter_map(|l| l.strip_prefix(HEAD))
        .filter_map(|r| r.find('"').map(|e| &r[..e]))
        .filter_map(parse)
        .max();
    match (latest, parse(ours)) {
        (Some(latest), Some(mine)) if mine <= latest => {
            // A stamp from the far future (a note synced from anywhere) is no reason to
            // stamp past what RFC 3339 can write: then the row keeps its own.
            let next = latest.checked_add(Duration::from_micros(1)).filter(|t| {
                t.duration_since(std::time::UNIX_EPOCH)
                    .is_ok_and(|d| d.as_secs() < 253_402_300_799)
            });
            match next {
                Some(next) => format!("{HEAD}{}{}", format(next), &rest[end..]),
                None => line.to_string(),
            }
        }
        _ => line.to_string(),
    }
}

/// RFC 3339 UTC to the second, from milliseconds since the epoch.
pub fn seconds(millis: u64) -> String {
    humantime::format_rfc3339_seconds(
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(millis),
    )
    .to_string()
}

/// Whole seconds between an RFC 3339 time and `now` (milliseconds since the epoch).
pub fn elapsed_s(started_at: &str, now: u64) -> u64 {
    humantime::parse_rfc3339(started_at)
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| now.saturating_sub(d.as_millis() as u64) / 1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_in_the_same_instant_goes_after_the_latest() {
        let note = "{\"at\":\"2026-01-01T00:00:00.500000Z\",\"v\":\"pass\"}\n{\"at\":\"2026-01-01T00:00:00Z\",\"v\":\"old\"}\n";
        let line = "{\"at\":\"2026-01-01T00:00:00.500000Z\",\"v\":\"fail\"}";
        assert_eq!(
            after(note, line),
            "{\"at\":\"2026-01-01T00:00:00.500001Z\",\"v\":\"fail\"}"
        );
        // A later one, or a line without `at` first, stays as it is.
        let later = "{\"at\":\"2026-01-01T00:00:01Z\",\"v\":\"x\"}";
        assert_eq!(after(note, later), later);
        assert_eq!(after(note, "{\"v\":1}"), "{\"v\":1}");
        // A note from year 9999 never makes a stamp that cannot be written.
        let far = "{\"at\":\"9999-12-31T23:59:59.999999Z\"}\n";
        assert_eq!(after(far, line), line);
    }

    #[test]
    fn stamps_compare_by_time_whatever_their_precision() {
        use std::cmp::Ordering::*;
        assert_eq!(cmp("2026-01-01T00:00:00Z", "2026-01-01T00:00:00.1Z"), Less);
        assert_eq!(
            cmp("2026-01-01T00:00:01Z", "2026-01-01T00:00:00.9Z"),
            Greater
        );
        assert_eq!(
            cmp("2026-01-01T00:00:00.000000Z", "2026-01-01T00:00:00Z"),
            Equal
        );
    }
}
