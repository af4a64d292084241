//! `git crew show RUN` and `git crew transcript RUN`.

use clap::Args;
use serde::Serialize;

use super::context::CommandContext;
use super::error::Result;
use super::ui::Report;

/// Show one run's record.
///
/// Fences, phase, attempts, extracted footer, verify result, decision; for a pass
/// awaiting integration or a live run with commits, the conflict forecast: whether it
/// merges cleanly onto its target's current tip (or which paths conflict), and which other
/// such runs it conflicts with.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  git crew show 20261202-101500-1a2b")]
pub struct ShowArgs {
    #[arg(value_parser = super::runs::run_address, add = super::complete::runs())]
    pub run: String,
}

/// The run as it is: a read, so nothing is settled — a live run whose supervisor died is
/// shown live, its supervisor `dead`.
pub fn run(ctx: &CommandContext, args: ShowArgs) -> Result<Report> {
    let shown = crate::ops::show::show(ctx, &crate::ops::show::Request { run: args.run })?;
    let now = crate::sys::clock::now_millis();
    let crate::ops::show::Shown { found, forecast } = &shown;
    let human =
        crate::view::result::shown_block(&found.record, found.supervisor, forecast.as_ref(), now);
    Ok(Report::of(&shown.output(now), human))
}

/// `transcript`: the run, its task, where the transcript is archived and the transcript
/// itself (SPEC §2 command table, `transcript RUN`).
#[derive(Debug, Serialize)]
pub struct TranscriptOutput<'a> {
    pub run: &'a str,
    pub task: &'a str,
    pub path: &'a std::path::Path,
    pub transcript: &'a str,
}

/// Print a run's archived raw transcript.
///
/// For debugging: the only command that does.
///
/// The transcript holds every attempt of the run's task, each under a metadata header.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  git crew transcript 20261202-101500-1a2b | less")]
pub struct TranscriptArgs {
    #[arg(value_parser = super::runs::run_address, add = super::complete::runs())]
    pub run: String,
}

pub fn transcript(ctx: &CommandContext, args: TranscriptArgs) -> Result<Report> {
    let crate::ops::show::Transcript { record, path, text } =
        crate::ops::show::transcript(ctx, &crate::ops::show::Request { run: args.run })?;
    let output = TranscriptOutput {
        run: &record.run,
        task: &record.task,
        path: &path,
        transcript: &text,
    };
    // Piped, the data is the transcript itself; `--json` still wraps it.
    let mut report = Report::of(&output, text.as_str());
    report.raw = true;
    Ok(report)
}
