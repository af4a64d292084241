//! `git crew advise RUN --text T`: answer a NEEDS-HELP by resuming the same session.

use clap::Args;

use super::context::CommandContext;
use super::error::Result;
use super::ui::Report;

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
    let request = crate::ops::advise::Request {
        run: args.run,
        text: args.text,
    };
    Ok(report(&crate::ops::advise::advise(ctx, &request)?))
}

/// The run as it resumes, for JSON and for people.
pub fn report(advised: &crate::ops::advise::Advised) -> Report {
    let record = &advised.record;
    let human = format!(
        "advised {}; its session {} resumes",
        record.run,
        record.session.as_deref().unwrap_or("(new)")
    );
    Report::of(&advised.output(), human)
}
