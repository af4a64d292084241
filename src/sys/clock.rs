//! The one clock and the one run-id source.
//!
//! Every wall-clock time git-crew records or prints (a row's `at`, a run's `started_at`,
//! `deadline`, `finished_at`, `parked_at`, the elapsed time of a live run) is read here,
//! and every run id is made here. Durations measured inside one process (a lock's wait,
//! a poll's timeout) use `std::time::Instant` and are no business of this module.
//!
//! # Test-only overrides
//!
//! Two environment variables exist for git-crew's own test suite (`tests/it/common.rs`
//! sets both for every process it starts) so that what the binary prints can be compared
//! from one run of the suite to the next. They are not configuration: nothing outside the
//! tests sets them, and an unreadable value is ignored (the real clock, the real ids).
//!
//! - `GIT_CREW_TEST_NOW=<instant>[@<anchor>]` shifts the clock. `<instant>` is an RFC 3339
//!   time (`2026-01-01T00:00:00Z`) or milliseconds since the epoch; `<anchor>` is a real
//!   time in milliseconds since the epoch. The clock reads `<instant>` at the real time
//!   `<anchor>` and advances with the real clock from there: now = `<instant>` + (real
//!   now − `<anchor>`). Without an anchor, the anchor is the real time of the process's
//!   first reading, so a lone command sees `<instant>`. The clock is shifted, never
//!   frozen: the supervisor turns the recorded deadline back into a timer
//!   (`deadline − now`), the idle watchdog compares two readings, and `elapsed_s` and a
//!   ledger row's wall time subtract `started_at` from now. A frozen clock would make the
//!   watchdog never fire, hand every retry the whole budget again and measure every run
//!   at 0 s. Shifted by one constant that the tests give every process (one anchor per
//!   test), every duration and every order between processes is the real one: the suite
//!   runs the code paths a user runs, on a pinned date.
//! - `GIT_CREW_TEST_RUN_IDS=<folder>` draws run ids from a counter instead of the clock
//!   and the process id. The n-th id (n = 1, 2, ...) is `<stamp>-<n as 4 hex digits>`,
//!   where `<stamp>` is the `<instant>` of `GIT_CREW_TEST_NOW` (else now) as
//!   `YYYYMMDD-HHMMSS`: `20260101-000000-0001`, `20260101-000000-0002`, ... A number is
//!   claimed by creating the file `<folder>/<n>` exclusively, so processes dispatching at
//!   once never draw the same one, and the ids are unique across every repository that
//!   shares the folder (a test's clones included) and sort in the order they were drawn.
//!   Past `ffff`, or when the folder cannot be written, ids come from the clock again.

use std::path::Path;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The variable that shifts the clock (test-only; see the module docs).
pub const TEST_NOW_VAR: &str = "GIT_CREW_TEST_NOW";
/// The variable that draws run ids from a counter (test-only; see the module docs).
pub const TEST_RUN_IDS_VAR: &str = "GIT_CREW_TEST_RUN_IDS";

/// A pinned clock: the instant it reads at the anchor, both in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Pin {
    instant: u64,
    anchor: u64,
}

impl Pin {
    /// `<instant>[@<anchor>]`, the anchor defaulting to `real_now`.
    fn parse(value: &str, real_now: u64) -> Option<Pin> {
        let (instant, anchor) = match value.trim().split_once('@') {
            Some((instant, anchor)) => (instant, Some(anchor.trim())),
            None => (value.trim(), None),
        };
        let instant = match instant.trim().parse::<u64>() {
            Ok(millis) => millis,
            Err(_) => crate::core::stamp::millis(crate::core::stamp::parse(instant)?),
        };
        let anchor = match anchor {
            Some(anchor) => anchor.parse().ok()?,
            None => real_now,
        };
        Some(Pin { instant, anchor })
    }

    /// What the pinned clock reads when the real one reads `real`.
    fn shift(&self, real: SystemTime) -> SystemTime {
        let at = UNIX_EPOCH + Duration::from_millis(self.instant);
        let anchor = UNIX_EPOCH + Duration::from_millis(self.anchor);
        let shifted = match real.duration_since(anchor) {
            Ok(ahead) => at.checked_add(ahead),
            Err(behind) => at.checked_sub(behind.duration()),
        };
        shifted.unwrap_or(real)
    }
}

/// The pin of this process, read once.
fn pin() -> Option<Pin> {
    static PIN: OnceLock<Option<Pin>> = OnceLock::new();
    *PIN.get_or_init(|| {
        let value = std::env::var(TEST_NOW_VAR).ok()?;
        Pin::parse(&value, millis_of(SystemTime::now()))
    })
}

fn millis_of(at: SystemTime) -> u64 {
    at.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// Now, as the system's time.
fn now_system() -> SystemTime {
    let real = SystemTime::now();
    pin().map_or(real, |pin| pin.shift(real))
}

/// Now.
pub fn now() -> jiff::Timestamp {
    jiff::Timestamp::try_from(now_system())
        .unwrap_or_else(|_| crate::core::stamp::from_millis(now_millis()))
}

/// Now, cut to the whole second: what a run's `started_at`, `deadline`, `finished_at`
/// and `parked_at` hold.
pub fn now_s() -> jiff::Timestamp {
    crate::core::stamp::whole_second(now())
}

/// Milliseconds since the epoch.
pub fn now_millis() -> u64 {
    millis_of(now_system())
}

/// Now, as a row's `at`: RFC 3339 UTC with microseconds.
pub fn stamp_now() -> String {
    crate::core::stamp::format(now())
}

/// `YYYYMMDD-HHMMSS`, the head of a run id.
fn id_stamp(millis: u64) -> String {
    let stamp = crate::core::stamp::seconds_of_millis(millis).replace(['-', ':'], "");
    stamp.trim_end_matches('Z').replace('T', "-")
}

/// A new run id: sortable by time, unique on this machine.
pub fn new_run_id() -> String {
    if let Some(folder) = std::env::var_os(TEST_RUN_IDS_VAR) {
        let start = pin().map_or_else(now_millis, |pin| pin.instant);
        if let Some(id) = counted_run_id(Path::new(&folder), start) {
            return id;
        }
    }
    let now = now_millis();
    let salt = (now % 1000) as u32 ^ (std::process::id() << 10);
    format!("{}-{:04x}", id_stamp(now), salt & 0xffff)
}

/// The next run id of the counter kept in `folder` (test-only; see the module docs).
fn counted_run_id(folder: &Path, start: u64) -> Option<String> {
    std::fs::create_dir_all(folder).ok()?;
    for n in 1..=0xffffu32 {
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(folder.join(n.to_string()))
        {
            Ok(_) => return Some(format!("{}-{n:04x}", id_stamp(start))),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(_) => return None,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const JAN_1: u64 = 1_767_225_600_000; // 2026-01-01T00:00:00Z

    #[test]
    fn new_run_ids_are_run_ids() {
        let id = super::new_run_id();
        assert!(crate::core::record::is_run_id(&id), "{id}");
    }

    #[test]
    fn a_pin_reads_its_instant_at_its_anchor_and_advances_from_there() {
        let anchor = 1_800_000_000_000;
        let pin = Pin::parse(&format!("2026-01-01T00:00:00Z@{anchor}"), 0).unwrap();
        assert_eq!(
            pin,
            Pin {
                instant: JAN_1,
                anchor
            }
        );
        let at = |real: u64| millis_of(pin.shift(UNIX_EPOCH + Duration::from_millis(real)));
        assert_eq!(at(anchor), JAN_1);
        assert_eq!(at(anchor + 90_500), JAN_1 + 90_500);
        // A process whose real clock is behind the anchor is behind the instant too.
        assert_eq!(at(anchor - 1_000), JAN_1 - 1_000);
        assert_eq!(
            crate::core::stamp::seconds_of_millis(at(anchor + 30_000)),
            "2026-01-01T00:00:30Z"
        );
    }

    #[test]
    fn a_pin_takes_epoch_millis_and_defaults_its_anchor_to_now() {
        assert_eq!(
            Pin::parse(&JAN_1.to_string(), 42),
            Some(Pin {
                instant: JAN_1,
                anchor: 42
            })
        );
        assert_eq!(
            Pin::parse(" 2026-01-01 00:00:00 ", 7).map(|p| p.instant),
            Some(JAN_1)
        );
        for bad in ["", "yesterday", "2026-01-01T00:00:00Z@soon", "@5", "-5"] {
            assert_eq!(Pin::parse(bad, 0), None, "{bad}");
        }
    }

    #[test]
    fn counted_run_ids_are_run_ids_in_order_and_never_repeat() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("ids");
        let ids: Vec<String> = (0..3)
            .map(|_| counted_run_id(&folder, JAN_1).unwrap())
            .collect();
        assert_eq!(
            ids,
            [
                "20260101-000000-0001",
                "20260101-000000-0002",
                "20260101-000000-0003"
            ]
        );
        assert!(ids.iter().all(|id| crate::core::record::is_run_id(id)));
        // Whoever shares the folder draws the next number; the stamp is its own.
        assert_eq!(
            counted_run_id(&folder, JAN_1 + 86_400_000).unwrap(),
            "20260102-000000-0004"
        );
    }

    #[test]
    fn counted_run_ids_give_way_to_the_clock_when_the_folder_cannot_be_written() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("a-file");
        std::fs::write(&file, "").unwrap();
        assert_eq!(counted_run_id(&file.join("ids"), JAN_1), None);
    }
}
