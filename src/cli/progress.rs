//! The live status line of the commands that take time — `wait`, `dispatch --wait` and
//! `integrate` — drawn by `indicatif` on stderr, and only when stderr is a terminal (not
//! `TERM=dumb`): piped or redirected, it prints nothing at all. It is cleared before the
//! command prints its result. Its one colour follows `NO_COLOR` and `CLICOLOR`.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use crate::core::record::{Phase, RunRecord};

/// A status line on stderr, cleared when dropped.
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A line that names the runs still being waited for ([`Progress::runs`]).
    pub fn for_runs() -> Progress {
        Progress::new("{spinner:.cyan} {wide_msg}")
    }

    /// A line that names the step a command is at and how long it has taken
    /// ([`Progress::step`]).
    pub fn for_steps() -> Progress {
        Progress::new("{spinner:.cyan} {msg} ({elapsed})")
    }

    fn new(template: &str) -> Progress {
        // `stderr()` is hidden when stderr is not a terminal, or is a dumb one.
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style);
        }
        if !bar.is_hidden() {
            bar.enable_steady_tick(Duration::from_millis(120));
        }
        Progress { bar }
    }

    /// Shows the runs still being waited for, as of `now` (Unix milliseconds).
    pub fn runs(&self, left: &[&RunRecord], now: u64) {
        if !self.bar.is_hidden() {
            self.bar.set_message(runs_left(left, now));
        }
    }

    /// Runs `f` with the line taken off the screen, so what it writes to stderr (a
    /// warning) is not drawn over.
    pub fn suspend<T>(&self, f: impl FnOnce() -> T) -> T {
        self.bar.suspend(f)
    }

    /// Shows that the command moved on to `text`; the time shown counts from here.
    pub fn step(&self, text: String) {
        self.bar.reset_elapsed();
        self.bar.set_message(text);
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.bar.finish_and_clear();
    }
}

/// `2 runs left: routes working 1m12s, auth verifying 8s`.
pub fn runs_left(left: &[&RunRecord], now: u64) -> String {
    let runs: Vec<String> = left
        .iter()
        .map(|record| match record.phase {
            // Not started: no time of its own to show.
            Phase::Queued | Phase::AwaitingAttach => {
                format!("{} {}", record.task, record.phase.as_str())
            }
            phase => format!(
                "{} {} {}",
                record.task,
                phase.as_str(),
                elapsed(crate::core::stamp::elapsed_s(record.started_at, now))
            ),
        })
        .collect();
    let count = match runs.len() {
        1 => "1 run left".to_string(),
        n => format!("{n} runs left"),
    };
    format!("{count}: {}", runs.join(", "))
}

/// `45s`, `1m12s`, `2h05m`.
pub fn elapsed(seconds: u64) -> String {
    match seconds {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_line_names_each_run_left_with_its_phase_and_time() {
        let mut routes = RunRecord::example();
        routes.task = "routes".into();
        routes.phase = Phase::Working;
        let start = crate::core::stamp::millis(routes.started_at);
        let mut auth = routes.clone();
        auth.task = "auth".into();
        auth.phase = Phase::Verifying;
        let mut ui = routes.clone();
        ui.task = "ui".into();
        ui.phase = Phase::Queued;
        assert_eq!(
            runs_left(&[&routes], start + 72_000),
            "1 run left: routes working 1m12s"
        );
        assert_eq!(
            runs_left(&[&routes, &auth, &ui], start + 8_500),
            "3 runs left: routes working 8s, auth verifying 8s, ui queued"
        );
    }

    #[test]
    fn times_are_short() {
        assert_eq!(elapsed(0), "0s");
        assert_eq!(elapsed(59), "59s");
        assert_eq!(elapsed(60), "1m00s");
        assert_eq!(elapsed(3599), "59m59s");
        assert_eq!(elapsed(3600 * 2 + 5 * 60 + 9), "2h05m");
    }
}
