//! `git crew wait RUN... [--any] [--timeout D]`.

use std::time::Duration;

use clap::Args;

use super::context::CommandContext;
use super::error::{CrewError, ErrorCode, Result};
use super::progress::{Progress, elapsed};
use super::runs;
use super::ui::{Format, Report};
use crate::ops::wait::{self, Poll, Waited};
use crate::sys::clock::now_millis;
use crate::view::output::StillWorking;

const EXAMPLES: &str = "Examples:\n  git crew wait 20261202-101500-1a2b\n  git crew wait RUN1 RUN2 --any --timeout 10m";

/// Block until runs finish; print their results.
///
/// Footer only, never the transcript.
///
/// Exits 0 when every run passed, 5 when any needs help (and none failed), 1 otherwise;
/// 5 as well when --timeout expires first (the JSON says `"timed_out": true` and lists
/// the runs still working in `"still_working"`). On a terminal, stderr shows the runs
/// left and their phases while it waits.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct WaitArgs {
    /// The runs to wait for.
    #[arg(required = true, value_parser = super::runs::run_address, add = super::complete::runs())]
    pub runs: Vec<String>,
    /// Return as soon as one of them finishes.
    #[arg(long)]
    pub any: bool,
    /// Give up after this long (e.g. 90s, 10m).
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
}

pub fn run(ctx: &CommandContext, args: WaitArgs) -> Result<Report> {
    let timeout = args
        .timeout
        .as_deref()
        .map(|t| {
            humantime::parse_duration(t)
                .map_err(|e| CrewError::new(ErrorCode::BadDuration, format!("--timeout {t}: {e}")))
        })
        .transpose()?;
    let request = wait::Request {
        runs: args.runs,
        any: args.any,
        timeout,
    };
    let waited = with_progress(|on_poll| wait::wait(ctx, &request, on_poll))?;
    Ok(report(ctx.format, &waited, timeout))
}

/// Waits for runs `runs` (whole run ids) as they are, without settling the store first
/// (`dispatch --wait` and `retry --wait`, which just did), and reports them as `wait`
/// does.
pub fn wait_for(
    ctx: &CommandContext,
    runs: &[String],
    any: bool,
    timeout: Option<Duration>,
) -> Result<Report> {
    let request = wait::Request {
        runs: runs.to_vec(),
        any,
        timeout,
    };
    let waited = with_progress(|on_poll| wait::wait_for(ctx, &request, on_poll))?;
    Ok(report(ctx.format, &waited, timeout))
}

/// Runs a wait with, on a terminal, a status line on stderr naming the runs left; the
/// warnings it meets are said with the line taken off the screen.
fn with_progress<T>(wait: impl FnOnce(&mut dyn FnMut(Poll<'_>)) -> T) -> T {
    let mut progress: Option<Progress> = None;
    let result = wait(&mut |poll| match poll {
        Poll::Waiting { left, now } => progress
            .get_or_insert_with(Progress::for_runs)
            .runs(left, now),
        Poll::Warning(warning) => match &progress {
            Some(progress) => progress.suspend(|| super::ui::warn(&warning)),
            None => super::ui::warn(&warning),
        },
    });
    drop(progress);
    result
}

/// The runs waited for, for JSON and for people; exit 0 when every run judged passed, 5
/// when one needs the lead (and none failed) or the timeout came first, 1 otherwise. For
/// people, a timeout is also said on stderr.
fn report(format: Format, waited: &Waited, timeout: Option<Duration>) -> Report {
    let output = waited.output(now_millis());
    if waited.timed_out && format == Format::Human {
        eprint!("{}", timed_out_note(timeout, &output.still_working));
    }
    let human = waited
        .runs
        .iter()
        .map(runs::result_block)
        .collect::<Vec<_>>()
        .join("\n\n");
    Report::with_status(&output, human, waited.status())
}

/// For people, on stderr: the wait gave up, on which runs, and what to do next.
fn timed_out_note(timeout: Option<Duration>, left: &[StillWorking]) -> String {
    let after = timeout.map_or(String::new(), |t| {
        format!(" after {}", elapsed(t.as_secs()))
    });
    let mut out = format!(
        "wait: timed out{after}; still working: {}\n",
        left.iter()
            .map(|r| format!(
                "{} ({} {} {})",
                r.task,
                r.run,
                r.phase.as_str(),
                elapsed(r.elapsed_s)
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let runs: Vec<&str> = left.iter().map(|r| r.run).collect();
    out.push_str(&format!(
        "hint: git crew wait {} waits again; git crew status shows what they are doing\n",
        runs.join(" ")
    ));
    out
}
