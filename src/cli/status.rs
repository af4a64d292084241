//! `git crew status [RUN]` (alias `ls`): in-flight and recent runs.

use clap::Args;
use serde::Serialize;

use super::context::CommandContext;
use super::error::{CrewError, Result};
use super::runs;
use super::ui::Report;

const EXAMPLES: &str =
    "Examples:\n  git crew status\n  git crew status 20261202-101500-1a2b\n  git crew ls --all";

/// List in-flight and recent runs: phase, elapsed/budget, session, last activity.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct StatusArgs {
    /// Only this run.
    #[arg(value_parser = super::runs::run_address)]
    pub run: Option<String>,
    /// How many finished runs to include (most recent first).
    #[arg(long, default_value_t = 20)]
    pub recent: usize,
    /// Include every finished run.
    #[arg(long)]
    pub all: bool,
}

/// `status` / `ls`: the runs, oldest first (SPEC §2, `status`'s `"runs"`).
#[derive(Debug, Serialize)]
pub struct StatusOutput<'a> {
    pub runs: Vec<crate::core::result::RunResult<'a>>,
}

pub fn run(ctx: &CommandContext, args: StatusArgs) -> Result<Report> {
    let store = runs::settled(ctx)?;
    let mut records = match &args.run {
        Some(run) => vec![runs::load(&store, &runs::resolve(&store, run)?)?],
        None => {
            let mut live = store.live().map_err(CrewError::internal)?;
            let finished = if args.all {
                store.finished()
            } else {
                store.finished_recent(args.recent)
            }
            .map_err(CrewError::internal)?;
            live.extend(finished);
            live
        }
    };
    records.sort_by(|a, b| a.started_at.cmp(&b.started_at).then(a.run.cmp(&b.run)));
    let human = if records.is_empty() {
        "no runs".to_string()
    } else {
        records
            .iter()
            .map(runs::result_line)
            .collect::<Vec<_>>()
            .join("\n")
    };
    let output = StatusOutput {
        runs: records.iter().map(runs::result).collect(),
    };
    Ok(Report::of(&output, human))
}
