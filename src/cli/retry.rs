//! `git crew retry RUN [--text FEEDBACK]`: the task of an ended run, dispatched again
//! under the same fences with feedback on how the run went.

use clap::Args;

use super::context::CommandContext;
use super::error::Result;
use super::flight::RoutingArgs;
use super::runs;
use super::ui::Report;

const EXAMPLES: &str = "Examples:\n  git crew retry 20261202-101500-1a2b\n  git crew retry routes --text 'The route must return 404 for an unknown id.' --wait\n  git crew retry @last --backend claude";

/// Dispatch an ended run's task again, with feedback.
///
/// Takes the run's task, role, write scope, verify command, size, plan, standing worker
/// and continuation (the fences as dispatch sealed them), its backend, model and time
/// budget, and dispatches it from HEAD as `dispatch` does: the same refusals apply, and
/// the two-failure rule is asked first (two failures move the task up a tier, or at the
/// top tier refuse it with a human report, exit 5). The prompt is the run's own, followed
/// by a section naming the run and how it ended, with --text, or without it what was
/// measured in the run (verify result, the verifier's report, discrepancies, decision).
/// A run still live is refused (exit 4).
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct RetryArgs {
    /// The run to retry (a run id, a task id, @last, or a unique part of a run id).
    #[arg(value_parser = runs::run_address, add = super::complete::runs())]
    pub run: String,
    /// The lead's feedback for the new run (default: what was measured in RUN).
    #[arg(long, value_name = "FEEDBACK")]
    pub text: Option<String>,
    /// Block until the new run ends and print its result, as `git crew wait` does.
    #[arg(long)]
    pub wait: bool,
    /// Decide everything (routing, fences, refusals) and print the run that would start;
    /// create nothing.
    #[arg(long, conflicts_with = "wait")]
    pub dry_run: bool,
    /// Beyond the backend's concurrency, queue the run instead of refusing it.
    #[arg(long)]
    pub queue: bool,
    /// Routing for the new run (default: the old run's backend, model and time budget).
    #[command(flatten)]
    pub routing: RoutingArgs,
}

pub fn run(ctx: &CommandContext, args: RetryArgs) -> Result<Report> {
    let request = crate::ops::retry::Request {
        run: args.run,
        text: args.text,
        queue: args.queue,
        invocation: args.routing.invocation(),
        dry_run: args.dry_run,
    };
    let dispatched = crate::ops::retry::retry(ctx, &request)?;
    super::dispatch::report(ctx, dispatched, args.wait)
}
