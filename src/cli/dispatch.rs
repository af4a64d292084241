//! `git crew dispatch`: a worker in its own worktree, in the background, at once.

use std::path::PathBuf;

use clap::Args;

use super::context::CommandContext;
use super::error::Result;
use super::flight::RoutingArgs;
use super::ui::Report;
use crate::ops::dispatch::{Dispatched, Prompt, Request};

const EXAMPLES: &str = "Examples:\n  git crew dispatch --task routes --scope 'src/routes/**' --prompt 'Add the /crew routes.'\n  git crew dispatch --task audit --role review --prompt-file docs/review.md --backend claude\n  git crew dispatch --task fix-login --scope src/auth/ --prompt-file task.md --verify 'cargo test auth' --wait";

/// Start a worker on a task, in its own worktree.
///
/// In the background.
///
/// Cuts a worktree and branch `crew/<task>/<run>` from HEAD (or --base), fences it (write
/// scope, time budget, delivery contract, NEEDS-HELP), starts the worker under a detached
/// supervisor and returns the run id at once. Refused (exit 4) when the task already has
/// an in-flight run, when the scope overlaps an in-flight run's, or when the backend is at
/// its concurrency limit.
#[derive(Debug, Default, Args)]
#[command(after_help = EXAMPLES)]
pub struct DispatchArgs {
    /// The task id (becomes part of the branch name).
    #[arg(long, add = super::complete::tasks())]
    pub task: String,
    /// The task, as text.
    #[arg(
        long,
        conflicts_with = "prompt_file",
        required_unless_present_any = ["prompt_file", "plan"]
    )]
    pub prompt: Option<String>,
    /// The task, from a file.
    #[arg(long, value_name = "FILE")]
    pub prompt_file: Option<PathBuf>,
    /// A glob the run may write (repeatable); required for implement and cleanup runs.
    #[arg(long, value_name = "GLOB")]
    pub scope: Vec<String>,
    /// What the run is for (default implement): review and investigate runs write a
    /// manifest, never commits.
    #[arg(long, value_enum)]
    pub role: Option<crate::core::scope::Role>,
    /// The command that checks the work, run in the worktree: exit 0 passes, unless its
    /// verifier writes a reward below 1.0 to $CREW_VERIFIER_DIR.
    #[arg(long, value_name = "CMD")]
    pub verify: Option<String>,
    /// Cut the worktree from this revision instead of HEAD.
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    /// Block until the run ends and print its result, as `git crew wait` does.
    #[arg(long)]
    pub wait: bool,
    /// Decide everything (routing, fences, refusals) and print the run that would start;
    /// create nothing.
    #[arg(long, conflicts_with = "wait")]
    pub dry_run: bool,
    /// Beyond the backend's concurrency, queue the run (phase `queued`) instead of
    /// refusing it; it starts when a slot frees.
    #[arg(long)]
    pub queue: bool,
    /// When verify fails, try again while the time budget remains and the task has fewer
    /// than two failures with this model: the same session with a plain rejection where
    /// the backend resumes sessions, else a fresh one with the verifier's feedback.
    #[arg(long)]
    pub continue_until_pass: bool,
    /// Take the task's role, scope, prompt, verify, size and worker from this plan
    /// (.crew/plans/<P>.toml); flags override. Refused (exit 4) while a gate holds the
    /// task's wave under gates.enforce = "strict".
    #[arg(long, value_name = "P")]
    pub plan: Option<String>,
    /// The task's size in worker-hours (for the ledger's horizon and speed factor).
    #[arg(long, value_name = "HOURS", value_parser = size_hours)]
    pub size: Option<f64>,
    /// Route through this standing worker of the roster ([workers.<name>]).
    #[arg(long, value_name = "NAME")]
    pub worker: Option<String>,
    /// Archive raw transcripts in DIR instead of .git/crew/transcripts; "" disables them.
    #[arg(long, value_name = "DIR")]
    pub transcripts: Option<String>,
    /// Claim the task on this git remote first (a fleet of machines sharing it; default
    /// fleet.remote): refused (exit 4, naming the machine) when a run anywhere holds the
    /// task or an overlapping scope.
    #[arg(long, value_name = "NAME")]
    pub remote: Option<String>,
    #[command(flatten)]
    pub routing: RoutingArgs,
}

pub fn run(ctx: &CommandContext, args: DispatchArgs) -> Result<Report> {
    let prompt = match (args.prompt, args.prompt_file) {
        (Some(text), _) => Some(Prompt::Text(text)),
        (None, Some(file)) => Some(Prompt::File(file)),
        (None, None) => None,
    };
    let request = Request {
        task: args.task,
        prompt,
        scope: args.scope,
        role: args.role,
        verify: args.verify,
        base: args.base,
        queue: args.queue,
        continue_until_pass: args.continue_until_pass,
        plan: args.plan,
        size_h: args.size,
        worker: args.worker,
        transcripts: args.transcripts,
        invocation: args.routing.invocation(),
        dry_run: args.dry_run,
        remote: args.remote,
    };
    let dispatched = crate::ops::dispatch::dispatch(ctx, &request)?;
    report(ctx, dispatched, args.wait)
}

/// Renders a dispatch carried out (or, for `--dry-run`, only decided): the run that
/// would start, the run's result once it ends (`wait`), or the run that started —
/// `dispatch` and `retry` alike.
pub(super) fn report(ctx: &CommandContext, dispatched: Dispatched, wait: bool) -> Result<Report> {
    report_saying(ctx, dispatched, wait, true)
}

/// [`report`], saying the warnings on stderr only when `say` (a wave's operation has
/// said them already, as each run started).
pub(super) fn report_saying(
    ctx: &CommandContext,
    dispatched: Dispatched,
    wait: bool,
    say: bool,
) -> Result<Report> {
    let plan = &dispatched.started.plan;
    let Some(record) = &dispatched.started.record else {
        let record = &plan.record;
        let human = format!(
            "would dispatch task {} ({}) on {} {} as {}, scope {}{}",
            record.task,
            record.role,
            record.backend,
            record.model.as_deref().unwrap_or("-"),
            record.phase.as_str(),
            record.scope.join(" "),
            if record.phase == crate::core::record::Phase::Queued {
                " (queued: the backend is at its concurrency)"
            } else {
                ""
            }
        );
        return Ok(Report::of(&dispatched.output(&dispatched.warnings), human));
    };
    if wait {
        for warning in &dispatched.warnings {
            super::ui::warn(warning);
        }
        return super::wait::wait_for(ctx, std::slice::from_ref(&record.run), false, None);
    }
    let warnings = dispatched.said();
    for warning in warnings.iter().filter(|_| say) {
        super::ui::warn(warning);
    }
    let human = format!(
        "dispatched {} (task {}) to {} in {}{}",
        record.run,
        record.task,
        record.backend,
        record.worktree,
        record
            .retry_of
            .as_ref()
            .map(|of| format!(" (a retry of {of})"))
            .unwrap_or_default()
    );
    Ok(Report::of(&dispatched.output(&warnings), human))
}

/// `--size`: a finite number of worker-hours above zero (a record must read back).
fn size_hours(text: &str) -> std::result::Result<f64, String> {
    text.parse::<f64>()
        .map_err(|_| crate::ops::dispatch::size_problem(text))
        .and_then(|h| {
            crate::ops::dispatch::size_hours(h)
                .map_err(|_| crate::ops::dispatch::size_problem(text))
        })
}
