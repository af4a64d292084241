//! `git crew dispatch`: a worker in its own worktree, in the background, at once.

use std::path::PathBuf;

use clap::Args;
use serde_json::json;

use super::context::CommandContext;
use super::error::{CrewError, ErrorKind, Result};
use super::flight::{RoutingArgs, resolve};
use super::ui::Report;
use crate::core::plan::{Blocker, Plan};
use crate::git::hooks_dir;
use crate::run::dispatch::{self, Refusal, Request};
use crate::sys::lock::Lock;

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
        required_unless_present_any = ["prompt_file", "plan"]
    )]
    pub prompt: Option<String>,
    /// The task, from a file.
    #[arg(long, value_name = "FILE")]
    pub prompt_file: Option<PathBuf>,
    /// A glob the run may write (repeatable); required for implement and cleanup runs.
    #[arg(long, value_name = "GLOB")]
    pub scope: Vec<String>,
    /// implement | review | investigate | cleanup (default implement).
    #[arg(long)]
    pub role: Option<String>,
    /// The command that checks the work, run in the worktree.
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
    let mut extra = serde_json::Map::new();
    let from_plan = match &args.plan {
        Some(name) => Some(plan_task(
            ctx,
            name,
            &args.task,
            &flight,
            &mut warnings,
            &mut extra,
        )?),
        None => None,
    };
    let task = from_plan.as_ref().map(|(_, t)| t);
    let prompt = match (&args.prompt, &args.prompt_file) {
        (Some(text), _) => text.clone(),
        (None, Some(file)) => read_prompt(&ctx.cwd.join(file))?,
        (None, None) => match task {
            Some(t) => match (&t.prompt, &t.prompt_file) {
                (Some(text), _) => text.clone(),
                (None, Some(file)) => read_prompt(&repo_dir.join(file))?,
                (None, None) => {
                    return Err(CrewError::usage(
                        "no-prompt",
                        format!("task {} of the plan has no prompt or prompt_file", t.id),
                    )
                    .hinted("add one to the plan, or pass --prompt / --prompt-file"));
                }
            },
            None => unreachable!("clap requires --prompt, --prompt-file or --plan"),
        },
    };
    let prompt = match &from_plan {
        Some((plan, t)) => format!(
            "Plan {} (.crew/plans/{}.toml), task {}, wave {}.\n\n{prompt}",
            plan.id, plan.id, t.id, t.wave
        ),
        None => prompt,
    };
    let base_rev = args.base.clone().unwrap_or_else(|| "HEAD".into());
    let base = crate::git::worktree::rev_parse(&repo_dir, &base_rev).map_err(|e| {
        CrewError::usage("bad-base", e.to_string()).hinted("--base takes a branch, tag or commit")
    })?;
    let base_ref = base_branch(repo, args.base.as_deref());
    let store = super::runs::settled(ctx)?;
    let request = Request {
        base_ref,
        task: args.task.clone(),
        prompt,
        scope: if args.scope.is_empty() {
            task.map(|t| t.scope.clone()).unwrap_or_default()
        } else {
            args.scope.clone()
        },
        role: args
            .role
            .clone()
            .or(task.map(|t| t.role.clone()))
            .unwrap_or_else(|| "implement".into()),
        verify: args.verify.clone().or(task.and_then(|t| t.verify.clone())),
        plan: from_plan.as_ref().map(|(p, _)| p.id.clone()),
        size_h: args.size.or(task.and_then(|t| t.size)),
        scope_changed: task.is_some_and(|t| !args.scope.is_empty() && args.scope != t.scope),
        worker: args.worker.clone().or(task.and_then(|t| t.worker.clone())),
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
    // A task's worker may write its task's branch folder (`crew/<task>/`): no other task's
    // branches may live in it, nor it in theirs.
    if let Some(other) = nested_task(repo, &request.task).map_err(CrewError::internal)? {
        return Err(CrewError::new(
            ErrorKind::Refused,
            "task-nests",
            format!(
                "task `{}` and task `{other}` nest (crew/{}/ and crew/{other}/): a worker of one could write the other's branches",
                request.task, request.task
            ),
        )
        .hinted("give the task an id that is not a folder of another task's id, nor under one"));
    }
    let plan = dispatch::plan(
        repo,
        &store,
        &flight,
        &request,
        base,
        crate::sys::clock::new_run_id(),
    )
    .map_err(CrewError::internal)?
    .map_err(|r| match r {
        Refusal::Usage(m) => CrewError::usage("dispatch-invalid", m),
        Refusal::Config { message, hint } => {
            CrewError::usage("backend-unavailable", message).hinted(hint)
        }
        Refusal::State(m) => CrewError::new(ErrorKind::Refused, "dispatch-refused", m)
            .hinted("`git crew status` shows the in-flight runs"),
        Refusal::HumanReport {
            task,
            model,
            report,
        } => {
            let written = dispatch::file_report(&store, &task, &report);
            let mut err = CrewError::new(
                ErrorKind::Attention,
                "human-report",
                format!("task {task} reached its failure limit with {model} at the top tier: no further try"),
            );
            if let Some(path) = written {
                err = err.hinted(format!("read the human report at {}", path.display()));
            }
            err
        }
    })?;
    // A writable path that holds the repository would void the fence.
    for path in &plan.writable {
        crate::run::fence::check_writable(path, &repo_dir, repo.common_dir())
            .map_err(|m| CrewError::usage("sandbox-invalid", m))?;
    }
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
    if args.dry_run {
        let record = &plan.record;
        let mut fields = json!({
            "dry_run": true,
            "task": record.task,
            "role": record.role,
            "phase": record.phase,
            "fence": record.fence,
            "branch": format!("crew/{}/<run>", record.task),
            "base": record.base,
            "backend": record.backend,
            "model": record.model,
            "effort": record.effort,
            "tier": record.tier,
            "scope": record.scope,
            "budget_s": record.budget_s,
            "verify": record.verify_command,
        });
        if let Some(escalation) = &plan.escalated_from {
            fields["escalated_from"] =
                serde_json::to_value(escalation).map_err(CrewError::internal)?;
        }
        if !warnings.is_empty() {
            fields["warnings"] = json!(warnings);
        }
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
        return Ok(Report::new(fields, human));
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
        "fence": record.fence,
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
    for (key, value) in extra {
        fields[key] = value;
    }
    if let Some(worker) = &record.worker {
        let last = crate::state::sessions::load(store.root())
            .workers
            .get(worker)
            .filter(|s| s.backend == record.backend)
            .map(|s| s.session.clone());
        let reuse = flight
            .backends
            .get(&record.backend)
            .and_then(|b| b.session_reuse)
            .unwrap_or(true);
        fields["worker"] = json!(worker);
        fields["session_plan"] = json!(match last {
            _ if !crate::state::sessions::resumable_across_worktrees(&record.adapter) => format!(
                "a fresh session: {} resumes a session only in the directory it started in, so worker {worker} starts afresh in each worktree",
                record.adapter
            ),
            _ if !reuse => format!(
                "a fresh session: backend {} does not reuse sessions",
                record.backend
            ),
            Some(id) => format!("resumes worker {worker}'s session {id}"),
            None => format!("a fresh session: worker {worker} has none yet"),
        });
    }
    if let Some(advice) = split_advice(repo, &record) {
        warnings.push(advice.clone());
        fields["split_advice"] = json!(advice);
    }
    for warning in &warnings {
        eprintln!("warning: {warning}");
    }
    if !warnings.is_empty() {
        fields["warnings"] = json!(warnings);
    }
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

fn read_prompt(path: &std::path::Path) -> Result<String> {
    std::fs::read_to_string(path).map_err(|e| {
        CrewError::new(
            ErrorKind::NotFound,
            "file-not-found",
            format!("cannot read {}: {e}", path.display()),
        )
    })
}

/// The plan and its task `id`, with the plan's gates enforced: under `strict` a task a
/// gate holds is refused (exit 4), under `warn` it goes with a warning. Unfinished
/// dependencies and a stale plan file are warnings.
fn plan_task(
    ctx: &CommandContext,
    name: &str,
    id: &str,
    flight: &crate::core::flight::Flight,
    warnings: &mut Vec<String>,
    extra: &mut serde_json::Map<String, serde_json::Value>,
) -> Result<(Plan, crate::core::plan::Task)> {
    let plan = super::plan::load(ctx, Some(name))?;
    let Some(task) = plan.task(id).cloned() else {
        let ids: Vec<&str> = plan.tasks.iter().map(|t| t.id.as_str()).collect();
        let mut err = CrewError::new(
            ErrorKind::NotFound,
            "task-not-found",
            format!("plan {} has no task {id}", plan.id),
        );
        err = match crate::core::flight::did_you_mean(id, ids.iter().copied()) {
            Some(s) => err.hinted(format!("did you mean `{s}`?")),
            None => err.hinted(format!(
                "`git crew plan status --plan {}` lists its tasks",
                plan.id
            )),
        };
        return Err(err);
    };
    let (statuses, facts) = super::plan::derive(ctx, &plan, flight)?;
    let status = statuses.iter().find(|s| s.task == id);
    let blockers: Vec<&Blocker> = status
        .map(|s| s.blockers.iter().collect())
        .unwrap_or_default();
    // The gates are asked directly: a task that is done or in flight has no blockers in
    // its status, but a gate still holds a new run of it.
    if let Some(warning) = super::plan::check_gates(&plan, &task, &facts, "dispatched")? {
        warnings.push(warning);
    }
    for dep in blockers
        .iter()
        .filter(|b| matches!(b, Blocker::Dependency { .. }))
    {
        warnings.push(format!("task {id} {dep}: dispatched ahead of it"));
    }
    if let Some(days) = stale_days(ctx, &plan.id)
        && days > flight.plans.stale_after_days
    {
        warnings.push(format!(
            "plan {} has not changed for {days} days (plans.stale_after_days = {}): its assumptions may have expired",
            plan.id, flight.plans.stale_after_days
        ));
        extra.insert("stale_days".into(), json!(days));
    }
    Ok((plan, task))
}

/// Days since the plan file last changed: its last commit, or its modification time
/// when it has uncommitted changes or none.
fn stale_days(ctx: &CommandContext, plan: &str) -> Option<i64> {
    let workdir = ctx.workdir().ok()?;
    let rel = format!(".crew/plans/{plan}.toml");
    let dirty = crate::git::worktree::path_is_dirty(workdir, &rel);
    let now = crate::sys::clock::now_millis() as i64 / 1000;
    let changed = if dirty {
        std::fs::metadata(workdir.join(&rel))
            .ok()?
            .modified()
            .ok()?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?
            .as_secs() as i64
    } else {
        crate::git::worktree::last_commit_time(workdir, &rel)?
    };
    Some((now - changed).max(0) / 86_400)
}

/// Advice to split a task whose size is beyond the chosen configuration's competence
/// horizon (from `ledger stats`).
fn split_advice(
    repo: &crate::git::Repository,
    record: &crate::core::record::RunRecord,
) -> Option<String> {
    let size = record.size_h?;
    let stats = crate::run::ledger::learnt(repo).ok()?.stats;
    let mine = stats.iter().find(|s| {
        s.backend == record.backend && s.model == record.model && s.effort == record.effort
    })?;
    let horizon = mine.horizon_h?;
    (size > horizon).then(|| {
        format!(
            "task {} is sized {size}h, beyond the {horizon}h competence horizon of {} {} {}: split it into tasks of at most {horizon}h",
            record.task,
            record.backend,
            record.model.as_deref().unwrap_or("-"),
            record.effort.as_deref().unwrap_or("-"),
        )
    })
}

/// The branch a run is cut from: HEAD's branch, or `--base` when it names a local branch.
fn base_branch(repo: &crate::git::Repository, base: Option<&str>) -> Option<String> {
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

/// Another task whose branch folder holds, or lies in, `task`'s (`api` and `api/v2`).
fn nested_task(repo: &crate::git::Repository, task: &str) -> anyhow::Result<Option<String>> {
    for (name, _) in crate::git::refs::under(repo, "refs/heads/crew/")? {
        let Some(rest) = name.strip_prefix("refs/heads/crew/") else {
            continue;
        };
        // `crew/<task>/<run>`: the task is all but the last component.
        let other = rest.rsplit_once('/').map_or(rest, |(task, _)| task);
        if other != task
            && (other.starts_with(&format!("{task}/")) || task.starts_with(&format!("{other}/")))
        {
            return Ok(Some(other.to_string()));
        }
    }
    Ok(None)
}
