//! `git crew dispatch`: a worker in its own worktree, in the background, at once.

use std::path::PathBuf;

use clap::Args;

use super::context::CommandContext;
use super::error::{CrewError, Result};
use super::flight::{RoutingArgs, resolve};
use super::ui::Report;
use crate::core::dispatch::{Flags, PromptSource, prompt_source, request};
use crate::run::dispatch;
use crate::view::dispatch::{Dispatched, DryRun};

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
    #[command(flatten)]
    pub routing: RoutingArgs,
}

pub fn run(ctx: &CommandContext, args: DispatchArgs) -> Result<Report> {
    let flight = resolve(ctx, &args.routing)?.flight;
    let repo = ctx.repo()?;
    let repo_dir = ctx.workdir()?.to_path_buf();
    let mut warnings: Vec<String> = Vec::new();
    let mut stale_days = None;
    let store = super::runs::settled(ctx)?;
    let from_plan = match &args.plan {
        Some(name) => {
            let (plan, found) = plan_task(ctx, &store, &flight, name, &args.task)?;
            warnings.extend(found.warnings);
            stale_days = found.stale_days;
            Some((plan, found.task))
        }
        None => None,
    };
    let task = from_plan.as_ref().map(|(_, t)| t);
    let prompt = match prompt_source(args.prompt.as_deref(), args.prompt_file.as_deref(), task) {
        PromptSource::Text(text) => text,
        PromptSource::FlagFile(file) => read_prompt(&ctx.cwd.join(file))?,
        PromptSource::TaskFile(file) => read_prompt(&repo_dir.join(file))?,
        PromptSource::Missing => {
            return Err(CrewError::usage(
                "no-prompt",
                format!(
                    "task {} of the plan has no prompt or prompt_file",
                    args.task
                ),
            )
            .hinted("add one to the plan, or pass --prompt / --prompt-file"));
        }
    };
    let base_rev = args.base.clone().unwrap_or_else(|| "HEAD".into());
    let base = crate::git::worktree::rev_parse(&repo_dir, &base_rev).map_err(|e| {
        CrewError::usage("bad-base", e.to_string()).hinted("--base takes a branch, tag or commit")
    })?;
    let flags = Flags {
        base_ref: base_branch(repo, args.base.as_deref()),
        task: args.task.clone(),
        scope: args.scope.clone(),
        role: args.role,
        verify: args.verify.clone(),
        size_h: args.size,
        worker: args.worker.clone(),
        backend: args.routing.backend.clone(),
        model: args.routing.model.clone(),
        effort: args.routing.effort.clone(),
        time_budget: args.routing.time_budget.clone(),
        queue: args.queue,
        continue_until_pass: args.continue_until_pass,
        transcripts: args.transcripts.as_ref().map(|d| match d.is_empty() {
            true => PathBuf::new(),
            false => ctx.cwd.join(d),
        }),
    };
    let request = request(flags, prompt, from_plan.as_ref().map(|(p, t)| (p, t)));
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

/// Task `task` of plan `name` as a dispatch takes it: refused when the plan or the task
/// is not there, or a gate holds it; with the warnings it carries (a stale plan).
pub(super) fn plan_task(
    ctx: &CommandContext,
    store: &crate::state::runs::RunStore,
    flight: &crate::core::flight::Flight,
    name: &str,
    task: &str,
) -> Result<(crate::core::plan::Plan, crate::run::plans::ForDispatch)> {
    let plan = super::plan::load(ctx, Some(name))?;
    let found = crate::run::plans::task_for_dispatch(
        ctx.repo()?,
        store,
        ctx.workdir()?,
        &plan,
        task,
        flight,
    )
    .map_err(CrewError::internal)?
    .map_err(CrewError::from)?;
    Ok((plan, found))
}

/// Carries out (or, for `--dry-run`, only decides) the dispatch `request` asks for, cut
/// from `base`, and renders it: `dispatch` and `retry` alike.
pub(super) fn start_and_report(
    ctx: &CommandContext,
    store: &crate::state::runs::RunStore,
    flight: &crate::core::flight::Flight,
    request: &crate::core::dispatch::Request,
    (base, dry_run): (String, bool),
    outcome: Outcome,
) -> Result<Report> {
    let repo = ctx.repo()?;
    let repo_dir = ctx.workdir()?.to_path_buf();
    let started = dispatch::start(repo, &repo_dir, store, flight, request, base, dry_run)
        .map_err(CrewError::internal)?
        .map_err(CrewError::from)?;
    report(repo, &repo_dir, store, flight, started, outcome)
}

/// What a dispatch (or a retry) hands back besides the run it started.
pub(super) struct Outcome {
    /// `--wait`: block until the run ends and print its result.
    pub wait: bool,
    /// How `--wait` prints what it waited for.
    pub format: super::ui::Format,
    pub warnings: Vec<String>,
    /// Days since the plan file changed, when it is stale.
    pub stale_days: Option<i64>,
}

/// Renders a dispatch carried out (or, for `--dry-run`, only decided): the run that
/// would start, the run's result once it ends (`--wait`), or the run that started.
pub(super) fn report(
    repo: &crate::git::Repository,
    repo_dir: &std::path::Path,
    store: &crate::state::runs::RunStore,
    flight: &crate::core::flight::Flight,
    started: dispatch::Started,
    outcome: Outcome,
) -> Result<Report> {
    let Outcome {
        wait,
        format,
        mut warnings,
        stale_days,
    } = outcome;
    warnings.extend(started.warnings);
    let plan = &started.plan;
    let Some(record) = started.record else {
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
        let output = DryRun::of(record, &plan.escalated_from, &warnings);
        return Ok(Report::of(&output, human));
    };
    if wait {
        for warning in &warnings {
            eprintln!("warning: {warning}");
        }
        return super::wait::wait_for(
            store,
            Some(repo_dir),
            format,
            std::slice::from_ref(&record.run),
            false,
            None,
        );
    }
    let session_plan = dispatch::session_plan(store, flight, &record);
    let split_advice = crate::run::ledger::split_advice(repo, &record);
    warnings.extend(split_advice.clone());
    for warning in &warnings {
        eprintln!("warning: {warning}");
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
    let output = Dispatched {
        stale_days,
        session_plan,
        split_advice,
        warnings: &warnings,
        ..Dispatched::of(&record, &plan.escalated_from)
    };
    Ok(Report::of(&output, human))
}

/// A prompt file (`--prompt-file`, a plan task's `prompt_file`): a regular file of at
/// most 1 MiB.
fn read_prompt(path: &std::path::Path) -> Result<String> {
    let bytes = super::context::read_given(
        path,
        crate::core::layout::PROMPT_FILE_CAP,
        "the prompt file",
    )?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The branch a run is cut from: HEAD's branch, or `--base` when it names a local branch.
pub(super) fn base_branch(repo: &crate::git::Repository, base: Option<&str>) -> Option<String> {
    match base {
        None => crate::git::refs::head_branch(repo),
        Some(rev) => {
            let rev = rev.strip_prefix("refs/heads/").unwrap_or(rev);
            crate::git::refs::exists(repo, &format!("refs/heads/{rev}")).then(|| rev.to_string())
        }
    }
}

/// `--size`: a finite number of worker-hours above zero (a record must read back).
fn size_hours(text: &str) -> std::result::Result<f64, String> {
    match text.parse::<f64>() {
        Ok(h) if h.is_finite() && h > 0.0 && h <= 10_000.0 => Ok(h),
        _ => Err(format!(
            "`{text}` is not a size: give worker-hours above zero, such as 2 or 0.5"
        )),
    }
}
