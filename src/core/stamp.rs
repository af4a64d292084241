//! Row timestamps that keep their order through a line union. A row's `at` has
//! microseconds, and a row appended to a note is stamped strictly after every row the note
//! already holds (a hybrid logical clock per note): rows one clone records in the same
//! second — a `fail` after a `pass` — keep their order on every clone a sync reaches, and
//! the latest by `at` is the latest recorded.

use jiff::{Timestamp, ToSpan};

/// The last second RFC 3339 can write (`9999-12-31T23:59:59Z`), in seconds since the epoch.
const LAST_WRITABLE_S: i64 = 253_402_300_799;

/// `at` as a point in time: RFC 3339 with any fraction (or none), a `T` or a space
/// between date and time, an offset or none (UTC); `None` when it is not one.
pub fn parse(at: &str) -> Option<Timestamp> {
    let at = at.trim();
    if let Ok(t) = at.parse::<Timestamp>() {
        return Some(t);
    }
    // Without an offset, a time is UTC (as `humantime::parse_rfc3339_weak` reads it).
    let civil = at.parse::<jiff::civil::DateTime>().ok()?;
    jiff::tz::TimeZone::UTC.to_timestamp(civil).ok()
}

/// RFC 3339 UTC with microseconds, always six digits.
pub fn format(at: Timestamp) -> String {
    format!("{at:.6}")
}

/// RFC 3339 UTC to the second (a fraction is cut, not rounded).
pub fn format_seconds(at: Timestamp) -> String {
    format!("{:.0}", whole_second(at))
}

/// `at` cut to the whole second it falls in.
pub fn whole_second(at: Timestamp) -> Timestamp {
    Timestamp::from_second(at.as_second()).unwrap_or(at)
}

/// The time `millis` milliseconds after the epoch (the latest there is when past it).
pub fn from_millis(millis: u64) -> Timestamp {
    i64::try_from(millis)
        .ok()
        .and_then(|m| Timestamp::from_millisecond(m).ok())
        .unwrap_or(Timestamp::MAX)
}

/// Milliseconds since the epoch of `at` (0 before it).
pub fn millis(at: Timestamp) -> u64 {
    u64::try_from(at.as_millisecond()).unwrap_or(0)
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
            let next = latest
                .checked_add(1.microsecond())
                .ok()
                .filter(|t| t.as_second() < LAST_WRITABLE_S);
            match next {
                Some(next) => format!("{HEAD}{}{}", format(next), &rest[end..]),
                None => line.to_string(),
            }
        }
        _ => line.to_string(),
    }
}

/// RFC 3339 UTC to the second, from milliseconds since the epoch.
pub fn seconds_of_millis(millis: u64) -> String {
    format_seconds(from_millis(millis))
}

/// Whole seconds from `started_at` to `now` (milliseconds since the epoch); 0 when
/// `started_at` is not after the epoch or is later than `now`.
pub fn elapsed_s(started_at: Timestamp, now: u64) -> u64 {
    let started = started_at.as_millisecond();
    if started < 0 {
        return 0;
    }
    now.saturating_sub(started as u64) / 1000
}

fn unreadable<E: serde::de::Error>(text: &str) -> E {
    E::custom(format_args!("`{text}` is not an RFC 3339 time"))
}

/// Serde for a stamp written to the second (`2026-01-01T00:00:00Z`), read at any
/// precision: `#[serde(with = "crate::core::stamp::seconds")]`.
pub mod seconds {
    use jiff::Timestamp;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(at: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format_seconds(*at))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(d)?;
        super::parse(&text).ok_or_else(|| super::unreadable(&text))
    }

    /// Written the same; an unreadable stamp reads as the epoch (the oldest time), so a
    /// file of many entries is never lost to one hand-edited stamp.
    pub mod lenient {
        use jiff::Timestamp;
        use serde::{Deserialize, Deserializer, Serializer};

        pub fn serialize<S: Serializer>(at: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
            super::serialize(at, s)
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
            let text = std::borrow::Cow::<str>::deserialize(d)?;
            Ok(super::super::parse(&text).unwrap_or(Timestamp::UNIX_EPOCH))
        }
    }

    /// The same for an `Option` (`null` when absent).
    pub mod option {
        use jiff::Timestamp;
        use serde::{Deserialize, Deserializer, Serializer};

        pub fn serialize<S: Serializer>(at: &Option<Timestamp>, s: S) -> Result<S::Ok, S::Error> {
            match at {
                Some(at) => super::serialize(at, s),
                None => s.serialize_none(),
            }
        }

        pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Timestamp>, D::Error> {
            match Option::<std::borrow::Cow<str>>::deserialize(d)? {
                Some(text) => super::super::parse(&text)
                    .map(Some)
                    .ok_or_else(|| super::super::unreadable(&text)),
                None => Ok(None),
            }
        }
    }
}

/// Serde for a stamp written with microseconds (`2026-01-01T00:00:00.123456Z`), read at
/// any precision: `#[serde(with = "crate::core::stamp::micros")]`.
pub mod micros {
    use jiff::Timestamp;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(at: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format(*at))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(d)?;
        super::parse(&text).ok_or_else(|| super::unreadable(&text))
    }
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

    #[derive(Debug, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Both {
        #[serde(with = "super::seconds")]
        s: Timestamp,
        #[serde(with = "super::seconds::option")]
        o: Option<Timestamp>,
        #[serde(with = "super::micros")]
        m: Timestamp,
    }

    fn both(json: &str) -> Result<Both, serde_json::Error> {
        serde_json::from_str(json)
    }

    #[test]
    fn the_adapters_round_trip_at_both_precisions() {
        let text = r#"{"s":"2026-01-01T00:00:00Z","o":"2026-01-01T00:10:00Z","m":"2026-01-01T00:00:00.123456Z"}"#;
        let value = both(text).unwrap();
        assert_eq!(serde_json::to_string(&value).unwrap(), text);
        assert_eq!(serde_json::from_str::<Both>(text).unwrap(), value);
        let none = r#"{"s":"2026-01-01T00:00:00Z","o":null,"m":"2026-01-01T00:00:00.000000Z"}"#;
        assert_eq!(serde_json::to_string(&both(none).unwrap()).unwrap(), none);
    }

    #[test]
    fn the_adapters_read_any_precision_and_write_their_own() {
        // Six digits where the field has seconds, none where it has microseconds, nine,
        // a space for the `T`, no `Z`, an offset: all read, each written its own way.
        let value = both(
            r#"{"s":"2026-01-01T00:00:00.999999Z","o":"2026-01-01 00:10:00","m":"2026-01-01T00:00:00Z"}"#,
        )
        .unwrap();
        assert_eq!(
            serde_json::to_string(&value).unwrap(),
            r#"{"s":"2026-01-01T00:00:00Z","o":"2026-01-01T00:10:00Z","m":"2026-01-01T00:00:00.000000Z"}"#
        );
        let value = both(
            r#"{"s":"2026-01-01T01:00:00+01:00","o":null,"m":"2026-01-01T00:00:00.123456789Z"}"#,
        )
        .unwrap();
        assert_eq!(
            serde_json::to_string(&value).unwrap(),
            r#"{"s":"2026-01-01T00:00:00Z","o":null,"m":"2026-01-01T00:00:00.123456Z"}"#
        );
    }

    #[test]
    fn a_garbage_stamp_is_an_error_not_a_panic() {
        for bad in [
            "",
            "yesterday",
            "2026-13-01T00:00:00Z",
            "2026-01-01T25:00:00Z",
            "2026-01-01T00:00:00Z!",
        ] {
            let s = format!(r#"{{"s":"{bad}","o":null,"m":"2026-01-01T00:00:00Z"}}"#);
            assert!(both(&s).is_err(), "{bad}");
            let o =
                format!(r#"{{"s":"2026-01-01T00:00:00Z","o":"{bad}","m":"2026-01-01T00:00:00Z"}}"#);
            assert!(both(&o).is_err(), "{bad}");
            let m = format!(r#"{{"s":"2026-01-01T00:00:00Z","o":null,"m":"{bad}"}}"#);
            assert!(both(&m).is_err(), "{bad}");
            assert_eq!(parse(bad), None, "{bad}");
        }
        assert!(both(r#"{"s":5,"o":null,"m":"2026-01-01T00:00:00Z"}"#).is_err());
    }

    #[test]
    fn elapsed_seconds_are_typed_arithmetic() {
        let start = parse("2026-01-01T00:00:00Z").unwrap();
        assert_eq!(elapsed_s(start, millis(start) + 90_999), 90);
        assert_eq!(elapsed_s(start, millis(start) - 5), 0);
        assert_eq!(seconds_of_millis(1_000_000), "1970-01-01T00:16:40Z");
        assert_eq!(
            format_seconds(from_millis(1_767_225_600_999)),
            "2026-01-01T00:00:00Z"
        );
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
