//! `git crew abandon RUN` and the hidden `git crew supervise RUN`.

use clap::Args;
use serde::Serialize;

use super::context::CommandContext;
use super::error::{CrewError, ErrorKind, Result};
use super::runs;
use super::ui::Report;
use crate::run::supervisor;

/// Stop a run, keeping its branch and commits.
///
/// Stop a run: kill its worker's process group, keep its branch and commits, record the
/// outcome `abandoned`.
///
/// A run that has already ended holds what it left in its worktree and branch; abandoning
/// it gives that work up without losing it: its commits and its worktree's uncommitted
/// changes (as one more commit on top; ignored files are not kept) go under
/// refs/crew/attempts/<run>, so that `git crew prune --all` may remove the worktree and
/// branch. Nothing else changes: its outcome and ledger rows stay as they were.
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
        return keep(ctx, &store, &record);
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

/// What `abandon` of an ended run prints: the run, and what now keeps its work.
#[derive(Debug, Serialize)]
struct Given<'a> {
    run: crate::view::result::RunResult<'a>,
    kept: &'a crate::run::prune::Kept,
}

/// An ended run's work, given up and kept under `refs/crew/attempts/<run>`.
fn keep(
    ctx: &CommandContext,
    store: &crate::state::runs::RunStore,
    record: &crate::core::record::RunRecord,
) -> Result<Report> {
    let repo = ctx.repo()?;
    let _turn = store
        .integrate_lock(std::time::Duration::from_secs(600))
        .map_err(CrewError::internal)?;
    let kept = match crate::run::prune::keep(repo, store, record).map_err(CrewError::internal)? {
        Ok(kept) => kept,
        Err(crate::run::prune::NotKept::Unreadable(why)) => {
            return Err(CrewError::new(
                ErrorKind::Refused,
                "worktree-unreadable",
                format!(
                    "run {} has ended; what it holds cannot be kept: {why}",
                    record.run
                ),
            )
            .hinted("inspect its worktree by hand; `git crew prune` leaves it alone meanwhile"));
        }
    };
    let human = match (&kept.commit, kept.already) {
        (None, _) => format!(
            "run {} had already ended ({}) and holds nothing to keep",
            record.run,
            record.phase.as_str()
        ),
        (Some(_), true) => format!(
            "run {} had already ended ({}); {} already keeps everything it holds",
            record.run,
            record.phase.as_str(),
            kept.attempts_ref
        ),
        (Some(_), false) => format!(
            "run {} had already ended ({}); its work is kept under {}{}; `git crew prune --all` may remove its worktree and branch",
            record.run,
            record.phase.as_str(),
            kept.attempts_ref,
            if kept.uncommitted.is_empty() {
                String::new()
            } else {
                format!(
                    " ({} uncommitted kept as one more commit)",
                    crate::core::prune::plural(kept.uncommitted.len() as u64, "path")
                )
            }
        ),
    };
    let output = Given {
        run: runs::result(record),
        kept: &kept,
    };
    Ok(Report::of(&output, human))
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
