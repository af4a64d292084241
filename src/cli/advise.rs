//! `git crew advise RUN --text T`: answer a NEEDS-HELP by resuming the same session.

use clap::Args;
use serde_json::json;

use super::context::CommandContext;
use super::error::{CrewError, ErrorKind, Result};
use super::runs;
use super::ui::Report;
use crate::core::record::Phase;
use crate::run::{dispatch, prompt, supervisor};

/// Answer a worker's NEEDS-HELP: its session resumes with the advice, under the same fences.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  git crew advise 20261202-101500-1a2b --text 'Use sqlite; it is already a dependency.'"
)]
pub struct AdviseArgs {
    pub run: String,
    /// The answer.
    #[arg(long)]
    pub text: String,
}

pub fn run(ctx: &CommandContext, args: AdviseArgs) -> Result<Report> {
    let store = runs::store(ctx)?;
    let mut record = runs::load(&store, &args.run)?;
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
    let run_dir = store.run_dir(&record.run);
    let file = run_dir.join(format!("advice-{}.md", record.attempts + 1));
    std::fs::write(&file, prompt::advice(&record, &args.text)).map_err(CrewError::internal)?;
    std::fs::write(
        run_dir.join(supervisor::NEXT_FILE),
        file.to_string_lossy().as_bytes(),
    )
    .map_err(CrewError::internal)?;
    record.phase = Phase::Working;
    record.needs_help = None;
    record.decision = None;
    record.supervisor_pid = None;
    if !store.update_live(&record).map_err(CrewError::internal)? {
        return Err(CrewError::new(
            ErrorKind::Refused,
            "run-ended",
            format!("run {} has ended", record.run),
        ));
    }
    let repo_dir = ctx.workdir()?.to_path_buf();
    let pid = dispatch::spawn_supervisor(&repo_dir, &record.run, &run_dir)
        .map_err(CrewError::internal)?;
    let human = format!(
        "advised {}; its session {} resumes",
        record.run,
        record.session.as_deref().unwrap_or("(new)")
    );
    Ok(Report::new(
        json!({"run": record.run, "phase": record.phase, "session": record.session, "supervisor_pid": pid}),
        human,
    ))
}
