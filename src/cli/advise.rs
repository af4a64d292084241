//! `git crew advise RUN --text T`: answer a NEEDS-HELP by resuming the same session.

use clap::Args;
use serde::Serialize;

use super::context::CommandContext;
use super::error::{CrewError, ErrorKind, Result};
use super::runs;
use super::ui::Report;
use crate::core::record::Phase;

/// `advise`: the run as it resumes — its phase (`working`, or `queued` when its backend is
/// full), session, new supervisor (null when none was started), deadline moved by the
/// time it waited, and the file the advice was written to (SPEC §2 `advise`, §5.5).
#[derive(Debug, Serialize)]
pub struct AdviseOutput<'a> {
    pub run: &'a str,
    pub phase: Phase,
    pub session: Option<&'a str>,
    pub supervisor_pid: Option<u32>,
    pub deadline: String,
    pub advice_file: &'a std::path::Path,
}

/// Answer a worker's NEEDS-HELP, resuming its session.
///
/// Answer a worker's NEEDS-HELP: its session resumes with the advice, under the same fences.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  git crew advise 20261202-101500-1a2b --text 'Use sqlite; it is already a dependency.'"
)]
pub struct AdviseArgs {
    #[arg(value_parser = super::runs::run_address, add = super::complete::runs())]
    pub run: String,
    /// The answer.
    #[arg(long)]
    pub text: String,
}

pub fn run(ctx: &CommandContext, args: AdviseArgs) -> Result<Report> {
    let store = runs::settled(ctx)?;
    // One answer at a time: a second advise waits here, then finds the run working.
    let run = runs::resolve(&store, &args.run)?;
    let _lock = store
        .run_lock(&run)
        .map_err(|e| CrewError::new(ErrorKind::Refused, "run-busy", e.to_string()))?;
    let mut record = runs::load(&store, &run)?;
    if record.phase != Phase::NeedsHelp {
        return Err(CrewError::new(
            ErrorKind::Refused,
            "not-waiting-for-help",
            format!(
                "run {} is {}, not waiting for help",
                record.run,
                record.phase.as_str()
            ),
        ));
    }
    let repo_dir = ctx.workdir()?.to_path_buf();
    let advised = crate::run::queue::advise(&store, &repo_dir, &mut record, &args.text)
        .map_err(CrewError::internal)?
        .ok_or_else(|| {
            CrewError::new(
                ErrorKind::Refused,
                "run-ended",
                format!("run {} has ended", record.run),
            )
        })?;
    let human = format!(
        "advised {}; its session {} resumes",
        record.run,
        record.session.as_deref().unwrap_or("(new)")
    );
    let output = AdviseOutput {
        run: &record.run,
        phase: record.phase,
        session: record.session.as_deref(),
        supervisor_pid: advised.supervisor_pid,
        deadline: crate::core::stamp::format_seconds(record.deadline),
        advice_file: &advised.advice_file,
    };
    Ok(Report::of(&output, human))
}
