//! `git crew dispatch`: a worker in its own worktree, in the background, at once.

use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use super::context::CommandContext;
use super::error::{CrewError, ErrorKind, Result};
use super::flight::{RoutingArgs, resolve};
use super::ui::Report;
use crate::git::hooks_dir;
use crate::run::dispatch::{self, Refusal, Request};
use crate::state::locks::Lock;

const EXAMPLES: &str = "Examples:\n  git crew dispatch --task routes --scope 'src/routes/**' --prompt 'Add the /crew routes.'\n  git crew dispatch --task audit --role review --prompt-file docs/review.md --backend claude\n  git crew dispatch --task fix-login --scope src/auth/ --prompt-file task.md --verify 'cargo test auth' --wait";

/// Start a worker on a task, in its own worktree, in the background.
///
/// Cuts a worktree and branch `crew/<task>/<run>` from HEAD (or --base), fences it (write
/// scope, time budget, delivery contract, NEEDS-HELP), starts the worker under a detached
/// supervisor and returns the run id at once. Refused (exit 4) when the task already has
/// an in-flight run, when the scope overlaps an in-flight run's, or when the backend is at
/// its concurrency limit.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct DispatchArgs {
    /// The task id (becomes part of the branch name).
    #[arg(long)]
    pub task: String,
    /// The task, as text.
    #[arg(
        long,
        conflicts_with = "prompt_file",
        required_unless_present = "prompt_file"
    )]
    pub prompt: Option<String>,
    /// The task, from a file.
    #[arg(long, value_name = "FILE")]
    pub prompt_file: Option<PathBuf>,
    /// A glob the run may write (repeatable); required for implement and cleanup runs.
    #[arg(long, value_name = "GLOB")]
    pub scope: Vec<String>,
    /// implement | review | investigate | cleanup.
    #[arg(long, default_value = "implement")]
    pub role: String,
    /// The command that checks the work, run in the worktree.
    #[arg(long, value_name = "CMD")]
    pub verify: Option<String>,
    /// Cut the worktree from this revision instead of HEAD.
    #[arg(long, value_name = "REV")]
    pub base: Option<String>,
    /// Block until the run ends and print its result, as `git crew wait` does.
    #[arg(long)]
    pub wait: bool,
    /// Beyond the backend's concurrency, queue the run (phase `queued`) instead of
    /// refusing it; it starts when a slot frees.
    #[arg(long)]
    pub queue: bool,
    /// When verify fails, try again while the time budget remains and the task has fewer
    /// than two failures with this model: the same session with a plain rejection where
    /// the backend resumes sessions, else a fresh one with the verifier's feedback.
    #[arg(long)]
    pub continue_until_pass: bool,
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
    let prompt = match (&args.prompt, &args.prompt_file) {
        (Some(text), _) => text.clone(),
        (None, Some(file)) => std::fs::read_to_string(ctx.cwd.join(file)).map_err(|e| {
            CrewError::new(
                ErrorKind::NotFound,
                "file-not-found",
                format!("cannot read {}: {e}", file.display()),
            )
        })?,
        (None, None) => unreachable!("clap requires one of --prompt and --prompt-file"),
    };
    let base_rev = args.base.clone().unwrap_or_else(|| "HEAD".into());
    let base = crate::git::worktree::rev_parse(&repo_dir, &base_rev).map_err(|e| {
        CrewError::usage("bad-base", e.to_string()).hinted("--base takes a branch, tag or commit")
    })?;
    let base_ref = base_branch(repo, args.base.as_deref());
    let store = super::runs::store(ctx)?;
    let request = Request {
        base_ref,
        task: args.task.clone(),
        prompt,
        scope: args.scope.clone(),
        role: args.role.clone(),
        verify: args.verify.clone(),
        backend: args.routing.backend.clone(),
        model: args.routing.model.clone(),
        effort: args.routing.effort.clone(),
        time_budget: args.routing.time_budget.clone(),
        queue: args.queue,
        continue_until_pass: args.continue_until_pass,
        transcripts: args.transcripts.as_ref().map(|d| {
            if d.is_empty() {
                PathBuf::new()
            } else {
                ctx.cwd.join(d)
            }
        }),
    };
    let _guard =
        Lock::take(store.root(), "dispatch", std::time::Duration::from_secs(30)).map_err(|e| {
            CrewError::new(ErrorKind::Refused, "dispatch-busy", e.to_string())
                .hinted("another dispatch is under way; try again")
        })?;
    let live = store.live().map_err(CrewError::internal)?;
    let ledger =
        crate::run::ledger::rows(repo, Some(&request.task)).map_err(CrewError::internal)?;
    // Both failures' evidence, for an escalated prompt: what was measured, never output.
    // Read only when a dispatch escalates.
    let evidence = |task: &str, model: &str| -> Vec<String> {
        store
            .finished()
            .unwrap_or_default()
            .iter()
            .filter(|r| r.task == task && r.model.as_deref() == Some(model))
            .filter(|r| {
                r.outcome
                    .is_some_and(|o| o != crate::core::record::Outcome::Pass)
            })
            .map(|r| {
                format!(
                    "run {}: {} — {}",
                    r.run,
                    r.phase.as_str(),
                    r.decision.as_deref().unwrap_or("no decision recorded")
                )
            })
            .collect()
    };
    let plan = dispatch::plan(
        &flight,
        &request,
        &live,
        &ledger,
        &evidence,
        base,
        dispatch::new_run_id(),
        &store,
    )
    .map_err(|r| match r {
        Refusal::Usage(m) => CrewError::usage("dispatch-invalid", m),
        Refusal::State(m) => CrewError::new(ErrorKind::Refused, "dispatch-refused", m)
            .hinted("`git crew status` shows the in-flight runs"),
        Refusal::HumanReport { task, model } => {
            let dir = store.root().join("reports");
            let path = dir.join(format!("{}.md", task.replace('/', "_")));
            let written = std::fs::create_dir_all(&dir).and_then(|_| {
                std::fs::write(
                    &path,
                    crate::core::policy::human_report(&task, &model, &ledger),
                )
            });
            let mut err = CrewError::new(
                ErrorKind::Attention,
                "human-report",
                format!("task {task} failed twice with {model} at the top tier: no third try"),
            );
            if written.is_ok() {
                err = err.hinted(format!("read the human report at {}", path.display()));
            }
            err
        }
    })?;
    let worktree_config = repo
        .config_snapshot()
        .boolean("extensions.worktreeConfig")
        .unwrap_or(false);
    if !worktree_config {
        return Err(CrewError::usage(
            "not-initialised",
            "extensions.worktreeConfig is off: a run worktree could not carry its own identity and hooks",
        )
        .hinted("run `git crew init` once in this repository"));
    }
    let run_hooks = store.root().join("hooks");
    dispatch::ensure_run_hooks(&run_hooks, &hooks_dir::hooks_dir(repo))
        .map_err(CrewError::internal)?;
    let record =
        dispatch::apply(&plan, repo, &repo_dir, &run_hooks, &store).map_err(CrewError::internal)?;
    drop(_guard);
    if args.wait {
        return super::wait::wait_for(
            &store,
            Some(&repo_dir),
            std::slice::from_ref(&record.run),
            false,
            None,
        );
    }
    let fields = json!({
        "run": record.run,
        "task": record.task,
        "role": record.role,
        "phase": record.phase,
        "worktree": record.worktree,
        "branch": record.branch,
        "base": record.base,
        "backend": record.backend,
        "model": record.model,
        "effort": record.effort,
        "tier": record.tier,
        "scope": record.scope,
        "deadline": record.deadline,
    });
    let mut fields = fields;
    if let Some(escalation) = &plan.escalated_from {
        fields["escalated_from"] = serde_json::to_value(escalation).map_err(CrewError::internal)?;
    }
    if record.adapter == "native" {
        fields["directive"] = json!({
            "worktree": record.worktree,
            "prompt_file": record.prompt_file,
            "manifest": record.manifest,
            "fences": {
                "scope": record.scope,
                "time_budget_s": record.budget_s,
                "deadline": record.deadline,
                "delivery": "end the reply with ## Result, ## How to verify, ## Deferred / concerns",
                "needs_help": "first line NEEDS-HELP: with tried:, options:, leaning:, cost-if-wrong:",
            },
            "attach": format!("git crew attach {} --session <ID>", record.run),
            "deliver": format!("git crew deliver {} --reply-file <FILE>", record.run),
        });
    }
    let human = format!(
        "dispatched {} (task {}) to {} in {}",
        record.run, record.task, record.backend, record.worktree
    );
    Ok(Report::new(fields, human))
}

/// The branch a run is cut from: HEAD's branch, or `--base` when it names a local branch.
fn base_branch(repo: &gix::Repository, base: Option<&str>) -> Option<String> {
    match base {
        None => repo
            .head_name()
            .ok()
            .flatten()
            .map(|name| name.shorten().to_string()),
        Some(rev) => {
            let rev = rev.strip_prefix("refs/heads/").unwrap_or(rev);
            repo.try_find_reference(format!("refs/heads/{rev}").as_str())
                .ok()
                .flatten()
                .map(|_| rev.to_string())
        }
    }
}
