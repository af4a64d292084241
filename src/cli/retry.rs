//! `git crew retry RUN [--text FEEDBACK]`: the task of an ended run, dispatched again
//! under the same fences with feedback on how the run went.

use std::path::{Path, PathBuf};

use clap::Args;

use super::context::CommandContext;
use super::dispatch::{Outcome, base_branch, plan_task, start_and_report};
use super::error::{CrewError, ErrorKind, Result};
use super::flight::{RoutingArgs, resolve};
use super::runs;
use super::ui::Report;
use crate::core::record::RunRecord;
use crate::core::retry;
use crate::state::runs::RunStore;

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
    let repo = ctx.repo()?;
    let repo_dir = ctx.workdir()?.to_path_buf();
    let store = runs::settled(ctx)?;
    let run = runs::resolve(&store, &args.run)?;
    let mut old = runs::load(&store, &run)?;
    if let Some(why) = retry::refusal(&old, store.live_path(&run).exists()) {
        return Err(CrewError::new(ErrorKind::Refused, "run-in-flight", why).hinted(format!(
            "wait for it (`git crew wait {run}`), answer it if it asks (`git crew advise`), or stop it (`git crew abandon {run}`); then retry it"
        )));
    }
    // The fences are the ones dispatch sealed, never what the record says now.
    match crate::git::seal::read(repo, &run).map_err(CrewError::internal)? {
        Some(sealed) => {
            sealed.restore(&mut old);
        }
        None => {
            return Err(CrewError::check(
                "record-tampered",
                format!(
                    "run {run} has no seal (refs/crew/sealed/{run}): nothing vouches for its fences"
                ),
            )
            .hinted("dispatch the task afresh with `git crew dispatch`"));
        }
    }
    // The spend fence goes with the run too, unless this retry sets its own.
    let mut routing = args.routing.clone();
    routing.max_cost = routing.max_cost.or(old.max_cost_usd.map(|c| c.to_string()));
    routing.max_tokens = routing.max_tokens.or(old.max_tokens.map(|t| t.to_string()));
    let flight = resolve(ctx, &routing)?.flight;
    let task_prompt = std::fs::read_to_string(crate::core::layout::task_prompt(
        &store.run_dir(&run),
    ))
    .map_err(|e| {
        CrewError::new(
            ErrorKind::NotFound,
            "prompt-not-found",
            format!("the prompt of run {run} cannot be read: {e}"),
        )
        .hinted("dispatch the task afresh with `git crew dispatch --prompt ...`")
    })?;
    let section = crate::run::prompt::retry(&store, &old, args.text.as_deref());
    let mut warnings = Vec::new();
    let mut stale_days = None;
    // A plan's gates hold a retry as they hold a dispatch.
    if let Some(name) = &old.plan {
        let (_, found) = plan_task(ctx, &store, &flight, name, &old.task)?;
        warnings.extend(found.warnings);
        stale_days = found.stale_days;
    }
    let overrides = retry::Overrides {
        backend: args.routing.backend.clone(),
        model: args.routing.model.clone(),
        effort: args.routing.effort.clone(),
        time_budget: args.routing.time_budget.clone(),
        queue: args.queue,
    };
    let request = retry::request(
        &old,
        retry::prompt(&task_prompt, &section),
        base_branch(repo, None),
        transcripts(&store, &old),
        overrides,
    );
    let base = crate::git::worktree::rev_parse(&repo_dir, "HEAD").map_err(|e| {
        CrewError::usage("bad-base", e.to_string())
            .hinted("a retry is cut from HEAD: commit something first")
    })?;
    let outcome = Outcome {
        wait: args.wait,
        format: ctx.format,
        warnings,
        stale_days,
    };
    start_and_report(
        ctx,
        &store,
        &flight,
        &request,
        (base, args.dry_run),
        outcome,
    )
}

/// Where the old run's transcript went, as a dispatch request says it: the default
/// (`None`), disabled (an empty path) or a folder of its own.
fn transcripts(store: &RunStore, record: &RunRecord) -> Option<PathBuf> {
    match &record.transcript {
        None => Some(PathBuf::new()),
        Some(path) if Path::new(path) == store.transcript_path(&record.task) => None,
        Some(path) => Path::new(path).parent().map(Path::to_path_buf),
    }
}
