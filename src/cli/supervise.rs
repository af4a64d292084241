//! The hidden `git crew supervise RUN`: the detached supervisor of one run, started by
//! dispatch and by the scheduler. What it does is `ops::supervise`'s; its stdout and
//! stderr go to the run's supervisor log.

use clap::Args;
use serde::Serialize;

use super::context::CommandContext;
use super::error::Result;
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
    let request = crate::ops::supervise::Request { run: args.run };
    let supervised = crate::ops::supervise::supervise(ctx, &request)?;
    Ok(Report::of(
        &SuperviseOutput {
            run: &supervised.run,
        },
        "",
    ))
}
