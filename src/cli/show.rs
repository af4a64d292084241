//! `git crew show RUN` and `git crew transcript RUN`.

use clap::Args;
use serde::Serialize;

use super::context::CommandContext;
use super::error::{CrewError, ErrorCode, Result};
use super::runs;
use super::ui::Report;
use crate::view::result::{FoundOutput, FoundResult};

/// Show one run's record.
///
/// Fences, phase, attempts, extracted footer, verify result, decision.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  git crew show 20261202-101500-1a2b")]
pub struct ShowArgs {
    #[arg(value_parser = super::runs::run_address, add = super::complete::runs())]
    pub run: String,
}

/// The run as it is: a read, so nothing is settled — a live run whose supervisor died is
/// shown live, its supervisor `dead`.
pub fn run(ctx: &CommandContext, args: ShowArgs) -> Result<Report> {
    let store = runs::open(ctx)?;
    let found = runs::found(&store, &runs::resolve(&store, &args.run)?)?;
    let now = crate::sys::clock::now_millis();
    let output = FoundOutput {
        run: FoundResult::at(&found.record, found.supervisor, now),
    };
    let human = crate::view::result::found_block(&found.record, found.supervisor, now);
    Ok(Report::of(&output, human))
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
    let store = runs::open(ctx)?;
    let record = runs::load(&store, &runs::resolve(&store, &args.run)?)?;
    let Some(path) = record.transcript.clone().map(std::path::PathBuf::from) else {
        return Err(CrewError::new(
            ErrorCode::TranscriptDisabled,
            format!(
                "run {} was dispatched with transcripts disabled",
                record.run
            ),
        ));
    };
    let bytes = std::fs::read(&path).map_err(|e| {
        CrewError::new(
            ErrorCode::TranscriptNotFound,
            format!("no transcript at {}: {e}", path.display()),
        )
    })?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
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
