//! The hidden `git crew supervise RUN`: the detached supervisor of one run, started by
//! dispatch and by the scheduler. What it does is `run::queue::supervise`'s; its stdout
//! and stderr go to the run's supervisor log.

use clap::Args;
use serde::Serialize;

use super::context::CommandContext;
use super::error::{CrewError, Result};
use super::ui::Report;

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
    crate::run::queue::supervise(repo, &store, &args.run, &mut |not_filed| {
        super::ui::warn(&not_filed.to_string())
    })
    .map_err(CrewError::internal)?;
    Ok(Report::of(&SuperviseOutput { run: &args.run }, ""))
}
