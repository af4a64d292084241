//! What people read about a run, as values: short durations (`1m12s/25m`), relative
//! times (`3m ago`), the integration state and the tone a phase is shown in. Pure: the
//! caller gives the time now; colour and layout are the renderers' business.

use crate::core::record::{Outcome, Phase, RunRecord};
/// The text helpers every rendering shares, from `core` (whose decisions word things too).
pub use crate::core::text::{count, printable, sanitize, truncate};

/// A duration as people write it: `45s`, `1m12s`, `25m`, `1h05m`, `2d03h`. Seconds are
/// shown under an hour (dropped when zero), minutes under a day, hours beyond.
pub fn duration(secs: u64) -> String {
    let (d, h, m, s) = (secs / 86_400, secs / 3600 % 24, secs / 60 % 60, secs % 60);
    match (d, h, m, s) {
        (0, 0, 0, s) => format!("{s}s"),
        (0, 0, m, 0) => format!("{m}m"),
        (0, 0, m, s) => format!("{m}m{s:02}s"),
        (0, h, 0, _) => format!("{h}h"),
        (0, h, m, _) => format!("{h}h{m:02}m"),
        (d, 0, _, _) => format!("{d}d"),
        (d, h, _, _) => format!("{d}d{h:02}h"),
    }
}

/// Elapsed against budget: `1m12s/25m`.
pub fn elapsed_of_budget(elapsed_s: u64, budget_s: u64) -> String {
    format!("{}/{}", duration(elapsed_s), duration(budget_s))
}

/// A time relative to `now` (both Unix milliseconds): `just now`, `12s ago`, `3m ago`,
/// `2h ago`, `3d ago`, in the largest whole unit; a time ahead of now is `in 5m`.
pub fn ago(then_ms: u64, now_ms: u64) -> String {
    let (secs, ahead) = if now_ms >= then_ms {
        ((now_ms - then_ms) / 1000, false)
    } else {
        ((then_ms - now_ms) / 1000, true)
    };
    let whole = match secs {
        0..5 => return "just now".to_string(),
        5..60 => format!("{secs}s"),
        60..3600 => format!("{}m", secs / 60),
        3600..86_400 => format!("{}h", secs / 3600),
        _ => format!("{}d", secs / 86_400),
    };
    if ahead {
        format!("in {whole}")
    } else {
        format!("{whole} ago")
    }
}

/// Unix milliseconds of a timestamp (0 before the epoch).
pub fn millis(at: jiff::Timestamp) -> u64 {
    u64::try_from(at.as_millisecond()).unwrap_or(0)
}

/// Where a finished run stands with respect to its target branch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntegrationState {
    /// Merged; its record note is on the target.
    Integrated,
    /// Passed verify and waits for `integrate`.
    AwaitingIntegration,
    /// Accepted on its footer, with no verify command: integrate takes it, unverified.
    Unverified,
}

impl IntegrationState {
    pub fn as_str(self) -> &'static str {
        match self {
            IntegrationState::Integrated => "integrated",
            IntegrationState::AwaitingIntegration => "awaiting integration",
            IntegrationState::Unverified => "unverified",
        }
    }

    /// The state of `record`: none while it runs or when it did not pass.
    pub fn of(record: &RunRecord) -> Option<IntegrationState> {
        if record.integration.is_some() {
            return Some(IntegrationState::Integrated);
        }
        if record.outcome != Some(Outcome::Pass) || !record.phase.is_final() {
            return None;
        }
        match &record.verify {
            Some(v) if v.passed => Some(IntegrationState::AwaitingIntegration),
            Some(_) => None,
            None => Some(IntegrationState::Unverified),
        }
    }
}

/// How a phase is shown: what a colour, where there is one, says about it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    /// Waiting its turn, or ended by the lead: nothing to look at.
    Quiet,
    /// Working.
    Busy,
    /// The lead is needed.
    Attention,
    /// Done and passed.
    Good,
    /// Failed, rejected or out of time.
    Bad,
}

impl Tone {
    pub fn of(phase: Phase) -> Tone {
        match phase {
            Phase::Queued | Phase::Abandoned => Tone::Quiet,
            Phase::Preparing | Phase::Working | Phase::Verifying => Tone::Busy,
            Phase::NeedsHelp | Phase::AwaitingAttach => Tone::Attention,
            Phase::Done => Tone::Good,
            Phase::Failed | Phase::TimedOut | Phase::Rejected => Tone::Bad,
        }
    }
}

/// A diff stat as git's `--shortstat` words it: `1 file changed, 3 insertions(+),
/// 1 deletion(-)`; `no change` for none.
pub fn diff_stat(diff: &crate::core::record::DiffStat) -> String {
    if diff.files.is_empty() {
        return "no change".to_string();
    }
    let mut parts = vec![format!(
        "{} changed",
        count(diff.files.len(), "file", "files")
    )];
    let n = |x: u64| usize::try_from(x).unwrap_or(usize::MAX);
    if diff.insertions > 0 {
        parts.push(format!(
            "{}(+)",
            count(n(diff.insertions), "insertion", "insertions")
        ));
    }
    if diff.deletions > 0 {
        parts.push(format!(
            "{}(-)",
            count(n(diff.deletions), "deletion", "deletions")
        ));
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::record::{Integration, Verify};

    #[test]
    fn sanitized_text_keeps_what_can_be_seen_and_drops_every_escape() {
        let footer = "Done.\x1b]52;c;ZWNobyBwd25lZA==\x07 Copied.\n\x1b[2KGone line\n\
                      \x1b[8mhidden\x1b[0m\tshown\r\n";
        assert_eq!(
            sanitize(footer),
            "Done. Copied.\nGone line\nhidden\tshown\n"
        );
        assert_eq!(
            sanitize("a\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\"),
            "alink"
        );
        assert_eq!(sanitize("a\u{9b}31mred\u{9d}0;t\u{9c}b"), "aredb");
        assert_eq!(sanitize("\x1b(Bplain\x1b7\x1bc\x7f\x00\x08."), "plain.");
        // An unterminated string ends at the line: what follows is kept.
        assert_eq!(sanitize("x\x1b]0;title\nnext"), "x\nnext");
        // An ESC inside a string, or after another, starts a sequence of its own.
        assert_eq!(sanitize("x\x1b]0;t\x1b[31my"), "xy");
        assert_eq!(sanitize("x\x1b\x1b[2Ky\x1b"), "xy");
        assert_eq!(sanitize("x\x1b\ny"), "x\ny");
        assert_eq!(sanitize("plain — ünïcödé\n"), "plain — ünïcödé\n");
        for c in (0u32..0x20).chain(0x7f..0xa0).filter_map(char::from_u32) {
            let out = sanitize(&format!("a{c}b"));
            assert!(
                out.chars()
                    .all(|o| !o.is_control() || o == '\n' || o == '\t'),
                "{c:?}"
            );
        }
    }

    #[test]
    fn printable_text_is_one_line_without_escapes() {
        assert_eq!(printable("\u{1b}[31mred\u{1b}[0m done"), "red done");
        assert_eq!(printable("a\u{1b}]0;title\u{7}b"), "ab");
        assert_eq!(printable("a\u{1b}]8;;http://x\u{1b}\\link"), "alink");
        assert_eq!(printable("10%\r50%\r100%"), "100%");
        assert_eq!(printable("tab\there\u{8}\u{0}"), "tab here");
        assert_eq!(printable("bell\u{7} rung"), "bell rung");
        assert_eq!(printable("\u{1b}[2J\u{1b}[H"), "");
        assert_eq!(printable("unterminated \u{1b}[12"), "unterminated");
        assert_eq!(printable("two\nlines"), "two lines");
        assert_eq!(printable("plain — ünïcödé"), "plain — ünïcödé");
    }

    #[test]
    fn durations_read_like_people_write_them() {
        assert_eq!(duration(0), "0s");
        assert_eq!(duration(45), "45s");
        assert_eq!(duration(72), "1m12s");
        assert_eq!(duration(65), "1m05s");
        assert_eq!(duration(1500), "25m");
        assert_eq!(duration(3600), "1h");
        assert_eq!(duration(3900 + 59), "1h05m");
        assert_eq!(duration(86_400), "1d");
        assert_eq!(duration(2 * 86_400 + 3 * 3600 + 7), "2d03h");
        assert_eq!(elapsed_of_budget(72, 1500), "1m12s/25m");
    }

    #[test]
    fn relative_times_use_the_largest_whole_unit() {
        let now = 10_000_000_000;
        assert_eq!(ago(now, now), "just now");
        assert_eq!(ago(now - 4_999, now), "just now");
        assert_eq!(ago(now - 12_000, now), "12s ago");
        assert_eq!(ago(now - 200_000, now), "3m ago");
        assert_eq!(ago(now - 2 * 3_600_000 - 1, now), "2h ago");
        assert_eq!(ago(now - 3 * 86_400_000, now), "3d ago");
        assert_eq!(ago(now + 300_000, now), "in 5m");
    }

    #[test]
    fn the_integration_state_follows_outcome_verify_and_integration() {
        let mut r = RunRecord::example();
        r.phase = Phase::Done;
        r.outcome = Some(Outcome::Pass);
        r.integration = None;
        r.verify = Some(Verify {
            command: "true".into(),
            reward: 1.0,
            passed: true,
            problem: None,
            decided_by: Some(crate::core::record::DecidedBy::Exit),
            exit_code: Some(0),
        });
        assert_eq!(
            IntegrationState::of(&r),
            Some(IntegrationState::AwaitingIntegration)
        );
        r.verify = None;
        assert_eq!(IntegrationState::of(&r), Some(IntegrationState::Unverified));
        r.integration = Some(Integration {
            into: "main".into(),
            commit: "abc".into(),
            at: "2026-01-01T00:00:00Z".into(),
            by: "lead".into(),
            squash: false,
            forced_unverified: false,
        });
        assert_eq!(IntegrationState::of(&r), Some(IntegrationState::Integrated));
        r.integration = None;
        r.phase = Phase::Failed;
        r.outcome = Some(Outcome::Fail);
        assert_eq!(IntegrationState::of(&r), None);
        r.phase = Phase::Working;
        r.outcome = None;
        assert_eq!(IntegrationState::of(&r), None);
    }

    #[test]
    fn tones_and_counts_and_cuts() {
        assert_eq!(Tone::of(Phase::NeedsHelp), Tone::Attention);
        assert_eq!(Tone::of(Phase::Rejected), Tone::Bad);
        assert_eq!(count(0, "worker", "workers"), "0 workers");
        assert_eq!(count(1, "run", "runs"), "1 run");
        assert_eq!(truncate("add-login-form", 8), "add-log…");
        assert_eq!(truncate("routes", 8), "routes");
        assert_eq!(truncate("routes", 0), "");
    }

    #[test]
    fn a_diff_stat_reads_like_gits_shortstat() {
        let mut diff = crate::core::record::DiffStat::default();
        assert_eq!(diff_stat(&diff), "no change");
        diff.files = vec!["a".into()];
        diff.insertions = 1;
        assert_eq!(diff_stat(&diff), "1 file changed, 1 insertion(+)");
        diff.files.push("b".into());
        diff.insertions = 3;
        diff.deletions = 1;
        assert_eq!(
            diff_stat(&diff),
            "2 files changed, 3 insertions(+), 1 deletion(-)"
        );
    }
}
