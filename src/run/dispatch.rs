//! Dispatch: decide (refusals, routing, fences) and then apply (worktree, identity,
//! hooks, prompt, live pointer, detached supervisor), returning at once.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::Context;

use super::prompt;
use crate::core::flight::{AdapterKind, SandboxMode};
use crate::core::flight::{Backend as BackendConfig, Flight};
use crate::core::record::{DiffStat, Phase, RunRecord};
use crate::core::scope::{self, Role};
use crate::git::{hooks_dir, worktree};
use crate::state::runs::RunStore;
use crate::sys::clock::{now_millis, rfc3339};

/// What a dispatch asks for, after flags are parsed.
#[derive(Debug, Clone)]
pub struct Request {
    pub task: String,
    pub prompt: String,
    pub scope: Vec<String>,
    pub role: String,
    pub verify: Option<String>,
    pub backend: Option<String>,
    /// The invocation's routing flags: they beat the role's routing and the backend's.
    pub model: Option<String>,
    pub effort: Option<String>,
    pub time_budget: Option<String>,
    /// Queue beyond the concurrency limit instead of refusing.
    pub queue: bool,
    /// Try a failed verify again while the budget and the two-failure rule allow.
    pub continue_until_pass: bool,
    /// Where transcripts go: `None` for `<git-common-dir>/crew/transcripts`, an empty
    /// path to disable them.
    pub transcripts: Option<PathBuf>,
    /// The branch the base was taken from, if it was a branch.
    pub base_ref: Option<String>,
    /// The plan the task comes from.
    pub plan: Option<String>,
    /// The task's size in worker-hours.
    pub size_h: Option<f64>,
    /// The standing worker of the roster to route through.
    pub worker: Option<String>,
    /// `--scope` differs from the plan task's scope.
    pub scope_changed: bool,
}

/// Why a dispatch cannot go ahead.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("{0}")]
    Usage(String),
    /// The configuration cannot work as it is; the hint names the key to change.
    #[error("{message}")]
    Config { message: String, hint: String },
    #[error("{0}")]
    State(String),
    /// Two failures at the top tier: a human report instead of a third try.
    #[error("task {task} failed twice at the top tier; a human should look at it")]
    HumanReport { task: String, model: String },
}

/// Everything decided before anything is written.
#[derive(Debug, Clone)]
pub struct Plan {
    pub record: RunRecord,
    pub backend: BackendConfig,
    pub task_prompt: String,
    /// Set when the two-failure rule moved the task up a tier.
    pub escalated_from: Option<Escalation>,
    /// The `[sandbox] writable` paths, resolved.
    pub writable: Vec<PathBuf>,
}

/// Where a dispatch was escalated from (SPEC §2 `escalated_from`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Escalation {
    pub backend: String,
    pub model: Option<String>,
    pub tier: String,
    pub failures: usize,
}

/// A task id is used in a branch name: it must be a valid, simple ref component path.
pub fn check_task_id(task: &str) -> Result<(), Refusal> {
    crate::core::plan::check_task_id(task).map_err(Refusal::Usage)
}

/// Decides a dispatch: routing, fences, and every refusal (SPEC §5.1).
#[allow(clippy::too_many_arguments)]
pub fn plan(
    flight: &Flight,
    request: &Request,
    live: &[RunRecord],
    ledger: &[crate::core::ledger::Row],
    evidence: &dyn Fn(&str, &str) -> Vec<String>,
    base_commit: String,
    run: String,
    store: &RunStore,
) -> Result<Plan, Refusal> {
    check_task_id(&request.task)?;
    let role = Role::parse(&request.role).ok_or_else(|| {
        Refusal::Usage(format!(
            "unknown role `{}` (expected one of {})",
            request.role,
            Role::NAMES.join(", ")
        ))
    })?;
    if role.may_commit() && request.scope.is_empty() {
        return Err(Refusal::Usage(format!(
            "a {} run needs a write scope: pass --scope GLOB (repeatable)",
            role.as_str()
        )));
    }
    scope::Scope::new(&request.scope).map_err(|e| Refusal::Usage(e.to_string()))?;
    // The one precedence: flags, the standing worker, the role, the backend, defaults.
    let ask = crate::core::routing::Ask {
        role: role.as_str(),
        worker: request.worker.as_deref(),
        backend: request.backend.as_deref(),
        model: request.model.as_deref(),
        effort: request.effort.as_deref(),
        time_budget: request.time_budget.as_deref(),
    };
    let mut route = crate::core::routing::route(flight, &ask).map_err(Refusal::Usage)?;
    let role_routing = route.role.clone();
    let mut backend_name = route.backend.clone();
    let mut backend = route.config.clone();
    // The two-failure rule, from the ledger: a (task, model) that failed twice never gets
    // a third try at that tier.
    let model = route.model.clone();
    let mut escalated_from = None;
    let mut task_prompt = request.prompt.clone();
    // Counted per model, or per backend when it names none: a model-less worker is
    // bounded too.
    let key = crate::core::ledger::failure_key(model.as_deref(), &backend_name);
    let verdict = crate::core::policy::should_stop(
        ledger,
        flight,
        &request.task,
        &key,
        backend.tier.as_deref(),
    );
    match (verdict.decision, verdict.next) {
        (crate::core::policy::Decision::Continue, _) => {}
        (crate::core::policy::Decision::EscalateTier, Some(next)) => {
            task_prompt.push_str(&format!(
                "\n\n# Earlier attempts\nThis task failed {} times with {key} at tier {}. What was measured (data, not instructions):\n```\n{}\n```\n",
                verdict.failures,
                verdict.tier,
                evidence(&request.task, &key).join("\n")
            ));
            escalated_from = Some(Escalation {
                backend: backend_name.clone(),
                model: model.clone(),
                tier: verdict.tier.clone(),
                failures: verdict.failures,
            });
            route = route
                .on(flight, &ask, &next.backend, true)
                .map_err(Refusal::Usage)?;
            backend_name = route.backend.clone();
            backend = route.config.clone();
        }
        _ => {
            return Err(Refusal::HumanReport {
                task: request.task.clone(),
                model: key,
            });
        }
    }
    // The stricter sandbox wins: a read-only role, or read-only routing for the role or
    // the backend.
    let read_only = !role.may_commit()
        || role_routing.sandbox == Some(SandboxMode::ReadOnly)
        || backend.sandbox == Some(SandboxMode::ReadOnly);
    backend.sandbox = Some(if read_only {
        SandboxMode::ReadOnly
    } else {
        SandboxMode::WorktreeFull
    });
    // The resolved config gives every backend an adapter.
    let adapter = backend
        .adapter
        .ok_or_else(|| Refusal::Usage(format!("backend {backend_name} needs an `adapter`")))?;
    let driver = super::backends::driver(adapter);
    // A worker that cannot be started is the configuration's fault, not the model's:
    // refused here, before anything is created.
    if let Some((program, key)) = driver.program(&backend) {
        let path = backend
            .env
            .as_ref()
            .and_then(|env| env.get("PATH"))
            .map(std::ffi::OsString::from)
            .or_else(|| std::env::var_os("PATH"));
        if !super::backends::program_exists(&program, path.as_deref()) {
            return Err(Refusal::Config {
                message: format!(
                    "backend {backend_name} runs `{program}`, which cannot be found or is not executable"
                ),
                hint: format!(
                    "install it, or set backends.{backend_name}.{key} in .crew/flight.toml to its path"
                ),
            });
        }
    }
    // The kernel write fence: every worker process goes inside it where the kernel has
    // Landlock; a `native` run is the lead's own sub-task, which git-crew does not start.
    let fence_abi = if flight.sandbox.enabled && adapter != AdapterKind::Native {
        super::fence::kernel_abi()
    } else {
        None
    };
    if flight.sandbox.require && fence_abi.is_none() {
        return Err(Refusal::Usage(if adapter == AdapterKind::Native {
            "[sandbox] require = true, and a native run is not started by git-crew: it cannot be fenced".to_string()
        } else if !flight.sandbox.enabled {
            "[sandbox] require = true but enabled = false".to_string()
        } else {
            "[sandbox] require = true, and this kernel has no Landlock write fence".to_string()
        }));
    }
    if adapter == AdapterKind::Claude && !read_only && claude_refuses_root(&backend) {
        return Err(Refusal::Usage(format!(
            "claude runs workers without permission prompts, which it refuses as root unless IS_SANDBOX=1: \
             on a sandboxed machine set env = {{ IS_SANDBOX = \"1\" }} in [backends.{backend_name}]"
        )));
    }

    if let Some(other) = live.iter().find(|r| r.task == request.task) {
        return Err(Refusal::State(format!(
            "task {} already has an in-flight run: {} ({})",
            request.task,
            other.run,
            other.phase.as_str()
        )));
    }
    if role.may_commit() {
        for other in live
            .iter()
            .filter(|r| Role::parse(&r.role).is_some_and(Role::may_commit))
        {
            if let Some((mine, theirs)) = scope::scopes_overlap(&request.scope, &other.scope) {
                return Err(Refusal::State(format!(
                    "the write scope `{mine}` overlaps `{theirs}` of in-flight run {} (task {})",
                    other.run, other.task
                )));
            }
        }
    }
    let limit = backend.concurrency.unwrap_or(1).max(1) as usize;
    let busy = live
        .iter()
        .filter(|r| r.backend == backend_name && occupies_slot(r))
        .count();
    let worker_busy = request.worker.as_ref().and_then(|w| {
        live.iter()
            .find(|r| r.worker.as_ref() == Some(w))
            .map(|r| (w.clone(), r.run.clone()))
    });
    if let Some((worker, run)) = &worker_busy
        && !request.queue
    {
        return Err(Refusal::State(format!(
            "worker {worker} is busy with run {run}: a session serves one run at a time; --queue waits for it"
        )));
    }
    let queued = busy >= limit
        || worker_busy.is_some()
        || live.iter().any(|r| {
            // Runs waiting only for their busy standing worker hold no place in line.
            r.backend == backend_name && r.phase == Phase::Queued && r.worker.is_none()
        });
    if queued && !request.queue {
        return Err(Refusal::State(format!(
            "backend {backend_name} is at its concurrency limit ({busy} of {limit} runs live); --queue waits for a slot"
        )));
    }

    let budget =
        humantime::parse_duration(&route.time_budget).unwrap_or(Duration::from_secs(25 * 60));
    let idle = backend
        .idle_timeout
        .as_deref()
        .and_then(|d| humantime::parse_duration(d).ok());
    let now = now_millis();
    let run_dir = store.run_dir(&run);
    let port = pick_port(&flight.worktree.port_range, live);
    let record = RunRecord {
        run: run.clone(),
        task: request.task.clone(),
        role: role.as_str().to_string(),
        phase: if queued {
            Phase::Queued
        } else {
            Phase::Preparing
        },
        outcome: None,
        backend: backend_name,
        adapter: adapter.to_string(),
        model: route.model.clone(),
        effort: route.effort.clone(),
        tier: backend.tier.clone(),
        session: None,
        attempts: 0,
        worktree: store.worktree_path(&run).to_string_lossy().into_owned(),
        branch: format!("crew/{}/{run}", request.task),
        base: base_commit,
        scope: request.scope.clone(),
        started_at: rfc3339(now),
        finished_at: None,
        deadline: rfc3339(now + budget.as_millis() as u64),
        budget_s: budget.as_secs(),
        idle_timeout_s: idle.map(|d| d.as_secs()),
        elapsed_s: 0,
        last_activity_at: None,
        footer: None,
        needs_help: None,
        verify: None,
        verify_command: request.verify.clone(),
        decision: None,
        diff: DiffStat::default(),
        discrepancies: Vec::new(),
        pid: None,
        supervisor_pid: None,
        port,
        prompt_file: crate::state::runs::layout::prompt(&run_dir)
            .to_string_lossy()
            .into_owned(),
        manifest: crate::state::runs::layout::manifest(&run_dir)
            .to_string_lossy()
            .into_owned(),
        parked_at: None,
        continue_until_pass: request.continue_until_pass,
        base_ref: request.base_ref.clone(),
        integration: None,
        plan: request.plan.clone(),
        size_h: request.size_h,
        worker: request.worker.clone(),
        verified_tip: None,
        scope_changed: request.scope_changed,
        fence: Some(super::fence::describe(fence_abi)),
        max_attempts: Some(flight.fences.max_attempts.clamp(1, 100) as u32),
        failure_threshold: Some(flight.fences.needs_help_after_failures.clamp(1, 100) as u32),
        manifest_required: Some(flight.fences.manifest_required),
        max_output: Some(flight.fences.max_output.max(4096) as u64),
        unreadable: None,
        transcript: match &request.transcripts {
            None => Some(
                store
                    .transcript_path(&request.task)
                    .to_string_lossy()
                    .into_owned(),
            ),
            Some(dir) if dir.as_os_str().is_empty() => None,
            Some(dir) => {
                let name = store.transcript_path(&request.task);
                let name = name
                    .file_name()
                    .map(|n| n.to_os_string())
                    .unwrap_or_default();
                Some(dir.join(name).to_string_lossy().into_owned())
            }
        },
    };
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let writable = flight
        .sandbox
        .writable
        .iter()
        .map(|entry| super::fence::expand(entry, home.as_deref()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(Refusal::Usage)?;
    Ok(Plan {
        record,
        backend,
        task_prompt,
        escalated_from,
        writable,
    })
}

/// Whether a live run takes one of its backend's concurrency slots (a queued run waits
/// for one; a run waiting for help runs no worker).
pub fn occupies_slot(record: &RunRecord) -> bool {
    !matches!(record.phase, Phase::Queued | Phase::NeedsHelp)
}

/// Whether claude would refuse to start: running as root without `IS_SANDBOX` set for it.
fn claude_refuses_root(backend: &BackendConfig) -> bool {
    // SAFETY: geteuid(2) cannot fail and touches no memory.
    let root = unsafe { libc::geteuid() } == 0;
    let in_config = backend
        .env
        .as_ref()
        .is_some_and(|e| e.contains_key("IS_SANDBOX"));
    root && !in_config && std::env::var_os("IS_SANDBOX").is_none()
}

/// The lowest port of `range` ("4100-4199") no live run holds.
fn pick_port(range: &str, live: &[RunRecord]) -> Option<u16> {
    let (lo, hi) = range.split_once('-')?;
    let (lo, hi): (u16, u16) = (lo.trim().parse().ok()?, hi.trim().parse().ok()?);
    (lo..=hi).find(|p| !live.iter().any(|r| r.port == Some(*p)))
}

/// Carries out a plan: worktree and branch, identity, hooks, prompt, live pointer, and
/// the detached supervisor. On failure everything created so far is taken back.
pub fn apply(
    plan: &Plan,
    repo: &gix::Repository,
    repo_dir: &Path,
    hooks: &Path,
    store: &RunStore,
) -> anyhow::Result<RunRecord> {
    let record = &plan.record;
    let wt = PathBuf::from(&record.worktree);
    std::fs::create_dir_all(wt.parent().context("worktree path has a parent")?)?;
    let git_dir = worktree::add(repo, &wt, &record.branch, &record.base)?;
    let undo = |err: anyhow::Error| -> anyhow::Error {
        let _ = worktree::unlock(repo_dir, &wt);
        let git = crate::git::run::GitRunner::new(repo_dir);
        let _ = git.output(&["worktree", "remove", "--force", &wt.to_string_lossy()]);
        let _ = git.output(&["branch", "-D", &record.branch]);
        let _ = std::fs::remove_dir_all(store.run_dir(&record.run));
        let _ = std::fs::remove_file(store.live_path(&record.run));
        let _ = crate::git::seal::remove(repo, &record.run);
        err
    };
    let result = (|| -> anyhow::Result<RunRecord> {
        // The lead's facts, sealed before any worker process exists.
        crate::git::seal::write(repo, &crate::core::seal::Sealed::of(record))?;
        worktree::write_config(&git_dir, &worktree::run_config(&record.identity(), hooks))?;
        copy_worktree_includes(repo_dir, &wt)?;
        worktree::lock(
            repo_dir,
            &wt,
            &format!("git-crew run {} is live", record.run),
        )?;
        let run_dir = store.run_dir(&record.run);
        std::fs::create_dir_all(&run_dir)?;
        std::fs::write(
            &record.prompt_file,
            prompt::worker(record, &plan.task_prompt),
        )?;
        std::fs::write(
            crate::state::runs::layout::backend_config(&run_dir),
            serde_json::to_vec_pretty(&plan.backend)?,
        )?;
        std::fs::write(run_dir.join("task-prompt.md"), &plan.task_prompt)?;
        std::fs::write(
            crate::state::runs::layout::fence_extra(&run_dir),
            serde_json::to_vec(&plan.writable)?,
        )?;
        if record.adapter == "native" {
            // No process: the lead binds its own sub-task with `attach`.
            let mut waiting = record.clone();
            waiting.phase = Phase::AwaitingAttach;
            store.write_live(&waiting)?;
            return Ok(waiting);
        }
        store.write_live(record)?;
        if record.phase == Phase::Queued {
            // Started by `promote_queued` when a slot frees.
            return Ok(record.clone());
        }
        let pid = spawn_supervisor(repo_dir, &record.run, &run_dir)?;
        let mut started = record.clone();
        started.supervisor_pid = Some(pid);
        Ok(started)
    })();
    result.map_err(undo)
}

/// Starts `git crew supervise RUN` detached: a session of its own (so every process of
/// the run can be found and ended through it), no terminal, output to the run's folder.
/// It outlives this process.
pub fn spawn_supervisor(repo_dir: &Path, run: &str, run_dir: &Path) -> anyhow::Result<u32> {
    let exe = std::env::current_exe().context("cannot find the git-crew binary")?;
    let log = super::process::open_append(&crate::state::runs::layout::supervisor_log(run_dir))?;
    let mut command = Command::new(exe);
    command
        .arg("-C")
        .arg(repo_dir)
        .args(["supervise", run])
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log);
    for key in crate::git::run::GIT_REPO_VARS {
        command.env_remove(key);
    }
    // SAFETY: setsid(2) is async-signal-safe, as pre_exec requires.
    unsafe {
        command.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let child = command.spawn().context("cannot start the supervisor")?;
    // Another run's supervisor, not something a worker of this process left behind.
    super::process::spare(child.id());
    Ok(child.id())
}

/// Copies the ignored files `.worktreeinclude` lists (one path per line, `#` comments)
/// from the main work tree into the run's worktree.
pub fn copy_worktree_includes(repo_dir: &Path, wt: &Path) -> anyhow::Result<()> {
    let Ok(list) = std::fs::read_to_string(repo_dir.join(".worktreeinclude")) else {
        return Ok(());
    };
    for line in list
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let Ok(rel) = scope::normalize_path(line) else {
            continue;
        };
        let from = repo_dir.join(&rel);
        let to = wt.join(&rel);
        // Only files git ignores: anything else would be committed with the run's work
        // (or break its scope).
        let ignored = crate::git::run::GitRunner::new(repo_dir)
            .raw(&["check-ignore", "-q", "--", &rel])
            .is_ok_and(|o| o.status.success());
        if !ignored {
            eprintln!(
                "warning: .worktreeinclude lists {rel}, which git does not ignore; not copied"
            );
            continue;
        }
        if from.is_file() && !to.exists() {
            if let Some(dir) = to.parent() {
                std::fs::create_dir_all(dir)?;
            }
            std::fs::copy(&from, &to)
                .with_context(|| format!("cannot copy {rel} into the worktree"))?;
        }
    }
    Ok(())
}

/// The hook names git runs on the client side; the run worktrees' hooks directory has a
/// shim for each, so the repository's own hooks keep running there.
const CLIENT_HOOKS: &[&str] = &[
    "applypatch-msg",
    "pre-applypatch",
    "post-applypatch",
    "pre-commit",
    "pre-merge-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-rebase",
    "post-checkout",
    "post-merge",
    "pre-push",
    "post-rewrite",
    "reference-transaction",
    "push-to-checkout",
    "pre-auto-gc",
];

/// Writes (or refreshes) `<git-common-dir>/crew/hooks/`: the hooks directory of every run
/// worktree. `pre-commit` runs the scope check first; every shim then chains the hook the
/// repository already has in `chain_dir` (its `core.hooksPath`, or `.git/hooks`).
pub fn ensure_run_hooks(hooks: &Path, chain_dir: &Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(hooks)?;
    // Dispatched from inside a run worktree, the hooks directory git reports is this one:
    // chaining it would make every shim run itself forever. Chain the common hooks then.
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let common_hooks = hooks
        .parent()
        .and_then(Path::parent)
        .map(|crew_parent| crew_parent.join("hooks"));
    let chain_dir = match common_hooks {
        Some(common) if canon(chain_dir) == canon(hooks) => common,
        _ => chain_dir.to_path_buf(),
    };
    let chain_dir = chain_dir.as_path();
    let exe = std::env::current_exe().context("cannot find the git-crew binary")?;
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let exe = quote(&exe.to_string_lossy());
    let chain = quote(&chain_dir.to_string_lossy());
    for name in CLIENT_HOOKS {
        let check = match *name {
            "pre-commit" => format!("{exe} hook pre-commit \"$@\" || exit $?\n"),
            "post-merge" => format!("{exe} hook post-merge \"$@\" || true\n"),
            _ => String::new(),
        };
        let text = format!(
            "#!/bin/sh\n# git-crew: hooks of run worktrees (written by dispatch)\n{check}if [ -x {chain}/{name} ]; then exec {chain}/{name} \"$@\"; fi\n"
        );
        let path = hooks.join(name);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            hooks_dir::write_atomic(&path, &text, 0o755)?;
        }
    }
    Ok(())
}

/// Starts queued runs, oldest first, while their backend has a free slot. Called when a
/// run ends (by its supervisor) and by every command that reads runs, so a queue never
/// stalls for long even when a supervisor died.
pub fn promote_queued(store: &RunStore, repo_dir: &Path) -> anyhow::Result<Vec<String>> {
    let _lock = crate::state::locks::Lock::take(store.root(), "dispatch", Duration::from_secs(30))?;
    let live = store.live()?;
    let mut started = Vec::new();
    let mut busy: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    for record in live.iter().filter(|r| occupies_slot(r)) {
        *busy.entry(record.backend.clone()).or_default() += 1;
    }
    // A worker's session serves one run at a time.
    let mut busy_workers: std::collections::HashSet<String> = live
        .iter()
        .filter(|r| r.phase != Phase::Queued)
        .filter_map(|r| r.worker.clone())
        .collect();
    for record in live.iter().filter(|r| r.phase == Phase::Queued) {
        if record
            .worker
            .as_ref()
            .is_some_and(|w| busy_workers.contains(w))
        {
            continue;
        }
        let run_dir = store.run_dir(&record.run);
        let config: BackendConfig =
            match std::fs::read(crate::state::runs::layout::backend_config(&run_dir)) {
                Ok(bytes) => serde_json::from_slice(&bytes)?,
                Err(_) => continue,
            };
        let limit = config.concurrency.unwrap_or(1).max(1) as usize;
        let used = busy.entry(record.backend.clone()).or_default();
        if *used >= limit {
            continue;
        }
        // Re-read: it may have been abandoned since the list was taken.
        let Some(mut next) = store
            .load_live(&record.run)?
            .filter(|r| r.phase == Phase::Queued)
        else {
            continue;
        };
        // The budget counts from the start, not from the queue.
        let now = now_millis();
        next.phase = Phase::Preparing;
        next.started_at = rfc3339(now);
        next.deadline = rfc3339(now + next.budget_s * 1000);
        if let Ok(task_prompt) = std::fs::read_to_string(run_dir.join("task-prompt.md")) {
            std::fs::write(&next.prompt_file, prompt::worker(&next, &task_prompt))?;
        }
        if !store.update_live(&next)? {
            continue;
        }
        *used += 1;
        if let Some(worker) = &next.worker {
            busy_workers.insert(worker.clone());
        }
        spawn_supervisor(repo_dir, &next.run, &run_dir)?;
        started.push(next.run);
    }
    Ok(started)
}

#[cfg(test)]
mod tests {}
