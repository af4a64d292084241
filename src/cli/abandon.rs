//! `git crew abandon RUN`.

use clap::Args;

use super::context::CommandContext;
use super::error::Result;
use super::ui::Report;
use crate::ops::abandon::Abandoned;

/// Stop a run, keeping its branch and commits.
///
/// Stop a run: kill its worker's process group, keep its branch and commits, record the
/// outcome `abandoned`.
///
/// A run that has already ended holds what it left in its worktree and branch; abandoning
/// it gives that work up without losing it: its commits and its worktree's uncommitted
/// changes (as one more commit on top; ignored files are not kept) go under
/// refs/crew/attempts/<run>, so that `git crew prune --all` may remove the worktree and
/// branch. Nothing else changes: its outcome and ledger rows stay as they were. A pass
/// that held its task on a fleet's remote lets it go.
///
/// A run of another machine (one this clone does not know) is looked for on the fleet's
/// remote (--remote, else fleet.remote): a pass its machine never integrated, or a claim
/// whose lease ran out, is dropped there, so the task may be dispatched again; its
/// commits stay under refs/crew/attempts/<run> on the remote. A working run's live claim
/// is its own machine's (exit 4, claim-live).
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  git crew abandon 20261202-101500-1a2b\n  git crew abandon 20261202-101500-1a2b --remote origin"
)]
pub struct AbandonArgs {
    #[arg(value_parser = super::runs::run_address, add = super::complete::runs())]
    pub run: String,
    /// The fleet's remote where a run of another machine holds a claim to drop.
    #[arg(long, value_name = "NAME")]
    pub remote: Option<String>,
}

pub fn abandon(ctx: &CommandContext, args: AbandonArgs) -> Result<Report> {
    let request = crate::ops::abandon::Request {
        run: args.run,
        remote: args.remote,
    };
    Ok(report(&crate::ops::abandon::abandon(ctx, &request)?))
}

/// What abandon did, for JSON and for people.
pub fn report(abandoned: &Abandoned) -> Report {
    let human = match abandoned {
        Abandoned::Stopped(record) => format!(
            "abandoned {} (task {}); branch {} kept",
            record.run, record.task, record.branch
        ),
        Abandoned::Kept {
            record,
            kept,
            released_claim,
        } => {
            let mut human = kept_human(record, kept);
            if *released_claim {
                human.push_str("; its claim on the fleet's remote is let go");
            }
            human
        }
        Abandoned::Dropped(dropped) => format!(
            "dropped run {}'s claim on task {} from {} ({} on machine {}); its commits stay under {} there; the task may be dispatched again",
            dropped.run,
            dropped.task,
            dropped.remote,
            dropped.phase.as_str(),
            dropped.machine,
            dropped.attempt_ref
        ),
    };
    Report::of(&abandoned.output(crate::sys::clock::now_millis()), human)
}

/// An ended run's work, given up and kept under `refs/crew/attempts/<run>`.
fn kept_human(record: &crate::core::record::RunRecord, kept: &crate::run::prune::Kept) -> String {
    match (&kept.commit, kept.already) {
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
    }
}
