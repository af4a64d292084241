//! `git crew abandon RUN` and the hidden `git crew supervise RUN`.

use clap::Args;
use serde::Serialize;

use super::context::CommandContext;
use super::error::{CrewError, ErrorKind, Result};
use super::runs;
use super::ui::Report;
use crate::run::supervisor;

/// Stop a run: kill its worker's process group, keep its branch and commits, record the
/// outcome `abandoned`.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  git crew abandon 20261202-101500-1a2b")]
pub struct AbandonArgs {
    #[arg(value_parser = super::runs::run_address, add = super::complete::runs())]
    pub run: String,
}

pub fn abandon(ctx: &CommandContext, args: AbandonArgs) -> Result<Report> {
    let store = runs::settled(ctx)?;
    let record = runs::load(&store, &runs::resolve(&store, &args.run)?)?;
    if record.phase.is_final() {
        return Err(CrewError::new(
            ErrorKind::Refused,
            "run-ended",
            format!(
                "run {} has already ended ({})",
                record.run,
                record.phase.as_str()
            ),
        ));
    }
    let repo_dir = ctx.workdir()?.to_path_buf();
    let run = record.run.clone();
    let Some(record) = supervisor::abandon(&store, &repo_dir, record, "abandoned by the lead")
        .map_err(CrewError::internal)?
    else {
        let ended = runs::load(&store, &run)?;
        return Err(CrewError::new(
            ErrorKind::Refused,
            "run-ended",
            format!(
                "run {run} ended ({}) before it could be abandoned",
                ended.phase.as_str()
            ),
        ));
    };
    let human = format!(
        "abandoned {} (task {}); branch {} kept",
        record.run, record.task, record.branch
    );
    Ok(Report::of(&runs::output(&record), human))
}

/// `supervise` (hidden): the run it drove. Its stdout goes to the supervisor's log.
#[derive(Debug, Serialize)]
pub struct SuperviseOutput<'a> {
    pub run: &'a str,
}

/// Drive a run (started detached by dispatch; not for direct use).
#[derive(Debug, Args)]
pub struct SuperviseArgs {
    #[arg(value_parser = super::runs::run_id)]
    pub run: String,
}

pub fn supervise(ctx: &CommandContext, args: SuperviseArgs) -> Result<Report> {
    let repo = ctx.repo()?;
    let store = crate::state::runs::RunStore::new(&crate::git::repo::state_dir(repo));
    supervisor::supervise(repo, &store, &args.run).map_err(CrewError::internal)?;
    Ok(Report::of(&SuperviseOutput { run: &args.run }, ""))
}
