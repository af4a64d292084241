//! The dispatch decision (SPEC §5.1): routing, escalation, fences and every refusal, as a
//! value. The facts it needs (live runs, the task's ledger, the kernel's fence, the
//! clock, the paths of the new run) are gathered first by `run::dispatch`, which then
//! applies the plan; `--dry-run` prints it and changes nothing.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::core::flight::{AdapterKind, Backend as BackendConfig, Flight, SandboxMode};
use crate::core::ledger::{Row, Tally};
use crate::core::record::{DiffStat, Phase, RunRecord};
use crate::core::scope::{self, Role};

/// What a dispatch asks for, after flags are parsed.
#[derive(Debug, Clone)]
pub struct Request {
    pub task: String,
    pub prompt: String,
    pub scope: Vec<String>,
    pub role: Role,
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
    /// The run this dispatch retries (`git crew retry`).
    pub retry_of: Option<String>,
    /// The fleet's remote to claim the task on first (`--remote`; `fleet.remote` when
    /// none).
    pub remote: Option<String>,
}

/// Why a dispatch cannot go ahead.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("{0}")]
    Usage(String),
    /// A scope glob that cannot be a write scope.
    #[error("{0}")]
    Scope(scope::ScopeError),
    /// The configuration cannot work as it is; the hint names the key to change.
    #[error("{message}")]
    Config { message: String, hint: String },
    #[error("{0}")]
    State(String),
    /// Two failures at the top tier: a human report instead of a third try.
    #[error("task {task} failed twice at the top tier; a human should look at it")]
    HumanReport {
        task: String,
        model: String,
        /// The human report (SPEC §5.4), for the lead to read instead of a third try.
        report: String,
        /// Where it was filed, once it is.
        filed: Option<PathBuf>,
    },
    /// Another dispatch holds the dispatch lock.
    #[error("{0}")]
    Busy(String),
    /// The task's branch folder holds another task's, or lies in it.
    #[error("task `{task}` and task `{other}` nest")]
    Nests { task: String, other: String },
    /// A `[sandbox] writable` path would void the fence.
    #[error("{0}")]
    Sandbox(String),
    /// `git crew init` has not run here.
    #[error("extensions.worktreeConfig is off")]
    NotInitialised,
    /// The fleet's remote is not a remote of this repository.
    #[error("no remote {0}")]
    NoRemote(String),
    /// The fleet's remote cannot be reached.
    #[error("{0}")]
    RemoteUnreachable(String),
    /// The fleet's remote refused the claim's push (a hook, a protected ref).
    #[error("{0}")]
    RemoteRefused(String),
    /// git has no committer identity here.
    #[error("git has no committer identity")]
    NoIdentity,
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
    /// The `[notify]` command, told when the run needs help or ends.
    pub notify: Option<crate::core::notify::Notifier>,
    /// `[worktree] ignore`: more of what git ignores in the run's worktree.
    pub ignore: Vec<String>,
}

/// Where a dispatch was escalated from (SPEC §2 `escalated_from`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
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

/// A worker program that cannot be found, and the config key that names it.
pub type Missing = (String, &'static str);

/// What the invocation says, before a plan's task fills the gaps.
#[derive(Debug, Clone, Default)]
pub struct Flags {
    pub task: String,
    pub scope: Vec<String>,
    pub role: Option<Role>,
    pub verify: Option<String>,
    pub size_h: Option<f64>,
    pub worker: Option<String>,
    pub backend: Option<String>,
    pub model: Option<String>,
    pub effort: Option<String>,
    pub time_budget: Option<String>,
    pub queue: bool,
    pub continue_until_pass: bool,
    pub transcripts: Option<PathBuf>,
    pub base_ref: Option<String>,
}

/// Where a dispatch's prompt comes from: the flags, else the plan's task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PromptSource {
    Text(String),
    /// A file named by `--prompt-file` (relative to where the lead stands).
    FlagFile(PathBuf),
    /// A file the plan's task names (relative to the repository).
    TaskFile(PathBuf),
    /// The plan's task has neither a prompt nor a prompt file.
    Missing,
}

/// `--prompt` beats `--prompt-file`, which beats the task's `prompt` and `prompt_file`.
pub fn prompt_source(
    prompt: Option<&str>,
    prompt_file: Option<&Path>,
    task: Option<&crate::core::plan::Task>,
) -> PromptSource {
    match (prompt, prompt_file, task) {
        (Some(text), _, _) => PromptSource::Text(text.to_string()),
        (None, Some(file), _) => PromptSource::FlagFile(file.to_path_buf()),
        (None, None, Some(t)) => match (&t.prompt, &t.prompt_file) {
            (Some(text), _) => PromptSource::Text(text.clone()),
            (None, Some(file)) => PromptSource::TaskFile(PathBuf::from(file)),
            (None, None) => PromptSource::Missing,
        },
        (None, None, None) => PromptSource::Missing,
    }
}

/// The request: the flags first, then the plan's task, then the defaults (role
/// `implement`). A task's prompt is headed by where it comes from.
pub fn request(
    flags: Flags,
    prompt: String,
    from: Option<(&crate::core::plan::Plan, &crate::core::plan::Task)>,
) -> Request {
    let task = from.map(|(_, t)| t);
    let prompt = match from {
        Some((plan, t)) => format!(
            "Plan {} ({}), task {}, wave {}.\n\n{prompt}",
            plan.id,
            crate::core::layout::plan_file(&plan.id),
            t.id,
            t.wave
        ),
        None => prompt,
    };
    Request {
        scope_changed: task.is_some_and(|t| !flags.scope.is_empty() && flags.scope != t.scope),
        scope: if flags.scope.is_empty() {
            task.map(|t| t.scope.clone()).unwrap_or_default()
        } else {
            flags.scope
        },
        role: flags.role.or(task.map(|t| t.role)).unwrap_or_default(),
        verify: flags.verify.or(task.and_then(|t| t.verify.clone())),
        plan: from.map(|(p, _)| p.id.clone()),
        size_h: flags.size_h.or(task.and_then(|t| t.size)),
        worker: flags.worker.or(task.and_then(|t| t.worker.clone())),
        task: flags.task,
        prompt,
        backend: flags.backend,
        model: flags.model,
        effort: flags.effort,
        time_budget: flags.time_budget,
        queue: flags.queue,
        continue_until_pass: flags.continue_until_pass,
        transcripts: flags.transcripts,
        base_ref: flags.base_ref,
        retry_of: None,
        remote: None,
    }
}

/// What a dispatch decision reads besides the config and the request, gathered before.
pub struct Facts<'a> {
    /// The live runs (their slots, workers and ports).
    pub live: &'a [RunRecord],
    /// The claims runs hold on their tasks and scopes (`core::claim`).
    pub claims: &'a [crate::core::claim::Claim],
    /// What the two-failure rule needs of the task's ledger rows.
    pub ledger: &'a Tally,
    /// The task's ledger rows, for a human report; read only when a dispatch asks for one.
    pub history: &'a dyn Fn() -> Vec<Row>,
    /// What was measured in the task's failed runs under a failure key, as lines for an
    /// escalated prompt; asked only when a dispatch escalates.
    pub evidence: &'a dyn Fn(&str, &str) -> Vec<String>,
    /// Why a backend's worker cannot be started: the program it runs and the key that
    /// names it, when that program cannot be found.
    pub unstartable: &'a dyn Fn(&BackendConfig) -> Result<Option<Missing>, String>,
    /// The commit the run is cut from, and the new run's id.
    pub base: String,
    pub run: String,
    /// Now, in milliseconds since the epoch.
    pub now_ms: u64,
    /// The running kernel's Landlock ABI, if it has one.
    pub fence_abi: Option<i32>,
    /// Whether a worker can get a private /tmp in its own namespaces here.
    pub namespaces: bool,
    /// This process runs as root, and `IS_SANDBOX` is not in its environment.
    pub root_unsandboxed: bool,
    pub home: Option<PathBuf>,
    /// Where the new run's folder and worktree go, and its task's default transcript.
    pub run_dir: PathBuf,
    pub worktree: PathBuf,
    pub transcript: PathBuf,
}

/// Decides a dispatch: routing, fences, and every refusal (SPEC §5.1).
pub fn decide(flight: &Flight, request: &Request, facts: &Facts) -> Result<Plan, Refusal> {
    let live = facts.live;
    let ledger = facts.ledger;
    let evidence = facts.evidence;
    let run = facts.run.clone();
    check_task_id(&request.task)?;
    let role = request.role;
    if role.may_commit() && request.scope.is_empty() {
        return Err(Refusal::Usage(format!(
            "a {} run needs a write scope: pass --scope GLOB (repeatable)",
            role.as_str()
        )));
    }
    scope::Scope::new(&request.scope).map_err(Refusal::Scope)?;
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
    let verdict = crate::core::policy::should_stop(ledger, flight, &key, backend.tier.as_deref());
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
                report: crate::core::policy::human_report(&request.task, &key, &(facts.history)()),
                model: key,
                filed: None,
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
    // A worker that cannot be started is the configuration's fault, not the model's:
    // refused here, before anything is created.
    let unstartable = (facts.unstartable)(&backend).map_err(Refusal::Usage)?;
    if let Some((program, key)) = unstartable {
        {
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
    let fence_abi = facts
        .fence_abi
        .filter(|_| flight.sandbox.enabled && adapter != AdapterKind::Native);
    let require = flight.sandbox.require;
    let demand = match require {
        crate::core::flight::Require::LandlockNs => "\"landlock+ns\"",
        _ => "true",
    };
    if require != crate::core::flight::Require::Nothing && fence_abi.is_none() {
        return Err(Refusal::Usage(if adapter == AdapterKind::Native {
            format!(
                "[sandbox] require = {demand}, and a native run is not started by git-crew: it cannot be fenced"
            )
        } else if !flight.sandbox.enabled {
            format!("[sandbox] require = {demand} but enabled = false")
        } else {
            format!("[sandbox] require = {demand}, and this kernel has no Landlock write fence")
        }));
    }
    let namespaces = fence_abi.is_some() && facts.namespaces;
    if require == crate::core::flight::Require::LandlockNs && !namespaces {
        return Err(Refusal::Usage(
            "[sandbox] require = \"landlock+ns\", and this machine does not let git-crew give a worker its own user and mount namespaces (a private /tmp)".to_string(),
        ));
    }
    for entry in backend.seed.iter().flatten() {
        if let Err(message) = crate::core::workenv::check_seed(entry) {
            return Err(Refusal::Usage(format!("backends.{backend_name}.{message}")));
        }
    }
    let sandbox_in_config = backend
        .env
        .as_ref()
        .is_some_and(|e| e.contains_key("IS_SANDBOX"));
    if adapter == AdapterKind::Claude && !read_only && facts.root_unsandboxed && !sandbox_in_config
    {
        return Err(Refusal::Usage(format!(
            "claude runs workers without permission prompts, which it refuses as root unless IS_SANDBOX=1: \
             on a sandboxed machine set env = {{ IS_SANDBOX = \"1\" }} in [backends.{backend_name}]"
        )));
    }

    let wanted = crate::core::claim::Wanted {
        task: &request.task,
        writes: role.may_commit(),
        scope: &request.scope,
    };
    if let Some(clash) = crate::core::claim::clash(&wanted, facts.claims) {
        return Err(Refusal::State(clash.to_string()));
    }
    let limit = slot_limit(&backend);
    let busy = slots_in_use(live, &backend_name, None);
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
    let now = facts.now_ms;
    let run_dir = &facts.run_dir;
    let port = pick_port(&flight.worktree.port_range, live);
    let record = RunRecord {
        run: run.clone(),
        task: request.task.clone(),
        role,
        phase: if queued {
            Phase::Queued
        } else {
            Phase::Preparing
        },
        outcome: None,
        backend: backend_name,
        adapter,
        model: route.model.clone(),
        effort: route.effort.clone(),
        tier: backend.tier.clone(),
        session: None,
        attempts: 0,
        worktree: facts.worktree.to_string_lossy().into_owned(),
        branch: format!("crew/{}/{run}", request.task),
        base: facts.base.clone(),
        scope: request.scope.clone(),
        started_at: crate::core::stamp::whole_second(crate::core::stamp::from_millis(now)),
        finished_at: None,
        deadline: crate::core::stamp::whole_second(crate::core::stamp::from_millis(
            now.saturating_add(u64::try_from(budget.as_millis()).unwrap_or(u64::MAX)),
        )),
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
        prompt_file: crate::core::layout::prompt(run_dir)
            .to_string_lossy()
            .into_owned(),
        manifest: crate::core::layout::manifest(run_dir)
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
        fence: Some(describe_fence(fence_abi, namespaces)),
        max_attempts: Some(flight.fences.max_attempts.clamp(1, 100) as u32),
        failure_threshold: Some(flight.fences.needs_help_after_failures.clamp(1, 100) as u32),
        manifest_required: Some(flight.fences.manifest_required),
        max_output: Some(flight.fences.max_output.max(4096) as u64),
        max_file_size: Some(flight.fences.max_file_size_bytes()),
        max_cost_usd: flight.fences.max_cost_usd,
        max_tokens: flight.fences.max_tokens.map(|n| n.max(1) as u64),
        price: route
            .model
            .as_deref()
            .and_then(|model| flight.prices.get(model))
            .and_then(|p| p.price()),
        usage: None,
        retry_of: request.retry_of.clone(),
        pruned: None,
        // A native run's worker is the lead's own sub-task, which git-crew does not
        // start: it readies its worktree itself.
        setup: flight
            .worktree
            .setup
            .as_deref()
            .map(str::trim)
            .filter(|c| !c.is_empty() && adapter != crate::core::flight::AdapterKind::Native)
            .map(|command| {
                let timeout = humantime::parse_duration(&flight.worktree.setup_timeout)
                    .unwrap_or(Duration::from_secs(10 * 60));
                crate::core::record::Setup::pending(command, timeout.as_secs().max(1))
            }),
        unreadable: None,
        transcript: match &request.transcripts {
            None => Some(facts.transcript.to_string_lossy().into_owned()),
            Some(dir) if dir.as_os_str().is_empty() => None,
            Some(dir) => {
                let name = facts
                    .transcript
                    .file_name()
                    .map(|n| n.to_os_string())
                    .unwrap_or_default();
                Some(dir.join(name).to_string_lossy().into_owned())
            }
        },
    };
    let writable = flight
        .sandbox
        .writable
        .iter()
        .map(|entry| expand(entry, facts.home.as_deref()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(Refusal::Usage)?;
    Ok(Plan {
        record,
        backend,
        task_prompt,
        escalated_from,
        writable,
        notify: crate::core::notify::Notifier::of(&flight.notify),
        ignore: flight.worktree.ignore.clone(),
    })
}

/// How many runs a backend may have working at once (`concurrency`, at least one).
pub fn slot_limit(backend: &BackendConfig) -> usize {
    backend.concurrency.unwrap_or(1).max(1) as usize
}

/// How many of `backend`'s concurrency slots the live runs hold, leaving out run `except`
/// (one that asks for its slot back).
pub fn slots_in_use(live: &[RunRecord], backend: &str, except: Option<&str>) -> usize {
    live.iter()
        .filter(|r| r.backend == backend && Some(r.run.as_str()) != except && occupies_slot(r))
        .count()
}

/// Whether a live run takes one of its backend's concurrency slots (a queued run waits
/// for one; a run waiting for help runs no worker).
pub fn occupies_slot(record: &RunRecord) -> bool {
    !matches!(record.phase, Phase::Queued | Phase::NeedsHelp)
}

/// The lowest port of `range` ("4100-4199") no live run holds.
fn pick_port(range: &str, live: &[RunRecord]) -> Option<u16> {
    let (lo, hi) = range.split_once('-')?;
    let (lo, hi): (u16, u16) = (lo.trim().parse().ok()?, hi.trim().parse().ok()?);
    (lo..=hi).find(|p| !live.iter().any(|r| r.port == Some(*p)))
}

/// Where the branches that may nest with `task` are (see [`nesting`]), as (ref folders to
/// list, refs to look up): the branch folder of the first component of its name
/// (`refs/heads/crew/a/` for `a/b`, `refs/heads/crew/<task>/` for a name of one
/// component), which holds its own branches, those of every longer task under it and
/// those of every task its name lies in; and a branch named for each of those tasks alone
/// (`refs/heads/crew/a`). No other branch can nest with it, so no other is read.
pub fn nesting_places(task: &str) -> (Vec<String>, Vec<String>) {
    let first = task.split('/').next().unwrap_or(task);
    let parts: Vec<&str> = task.split('/').collect();
    let exact = (1..parts.len())
        .map(|n| format!("refs/heads/crew/{}", parts[..n].join("/")))
        .collect();
    (vec![format!("refs/heads/crew/{first}/")], exact)
}

/// Another task whose branch folder holds, or lies in, `task`'s (`api` and `api/v2`),
/// among the branches under `refs/heads/crew/` (full names).
pub fn nesting(task: &str, branches: &[String]) -> Option<String> {
    branches.iter().find_map(|name| {
        let rest = name.strip_prefix("refs/heads/crew/")?;
        // `crew/<task>/<run>`: the task is all but the last component.
        let other = rest.rsplit_once('/').map_or(rest, |(task, _)| task);
        (other != task
            && (other.starts_with(&format!("{task}/")) || task.starts_with(&format!("{other}/"))))
        .then(|| other.to_string())
    })
}

/// What a standing worker's run does with sessions (`session_plan`): resume the worker's
/// last session on this backend, or start afresh, and why.
pub fn session_plan(
    worker: &str,
    adapter: &str,
    backend: &str,
    resumable_across_worktrees: bool,
    reuse: bool,
    last: Option<&str>,
) -> String {
    match last {
        _ if !resumable_across_worktrees => format!(
            "a fresh session: {adapter} resumes a session only in the directory it started in, so worker {worker} starts afresh in each worktree"
        ),
        _ if !reuse => format!("a fresh session: backend {backend} does not reuse sessions"),
        Some(id) => format!("resumes worker {worker}'s session {id}"),
        None => format!("a fresh session: worker {worker} has none yet"),
    }
}

/// What `"fence"` says: `landlock-v<ABI>+ns` (the write fence, and a private /tmp in the
/// worker's own namespaces), `landlock-v<ABI>` (the write fence alone), or `none`.
pub fn describe_fence(abi: Option<i32>, namespaces: bool) -> String {
    match abi {
        Some(abi) if namespaces => format!("landlock-v{abi}+ns"),
        Some(abi) => format!("landlock-v{abi}"),
        None => "none".to_string(),
    }
}

/// Whether a run's fence (its `"fence"`) gives its processes a private /tmp.
pub fn fence_has_namespaces(fence: Option<&str>) -> bool {
    fence.is_some_and(|f| f.starts_with("landlock") && f.ends_with("+ns"))
}

/// Expands a `writable` entry: `~/x` is under the home folder; a relative one is refused.
pub fn expand(entry: &str, home: Option<&Path>) -> Result<PathBuf, String> {
    let path = match (entry.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        (Some(_), None) => return Err(format!("`{entry}`: there is no home folder")),
        _ if entry == "~" => home
            .map(Path::to_path_buf)
            .ok_or_else(|| format!("`{entry}`: there is no home folder"))?,
        _ => PathBuf::from(entry),
    };
    if !path.is_absolute() {
        return Err(format!(
            "[sandbox] writable entry `{entry}` must be absolute or start with ~/"
        ));
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::flight::{Invocation, Layer, LayerSource, resolve};

    fn flight(extra: &str) -> Flight {
        let text = format!(
            "default_backend = \"low\"\n\
             [backends.low]\nadapter = \"command\"\nargv = [\"w\"]\nmodel = \"small\"\ntier = \"low\"\n\
             [backends.high]\nadapter = \"command\"\nargv = [\"w\"]\nmodel = \"big\"\ntier = \"high\"\n\
             [backends.cl]\nadapter = \"claude\"\n{extra}"
        );
        let layer = LayerSource {
            layer: Layer::Project,
            origin: "p".into(),
            text,
            has_lines: true,
        };
        resolve(&[layer], &Invocation::default()).unwrap().flight
    }

    fn request(task: &str, scope: &[&str]) -> Request {
        Request {
            task: task.into(),
            prompt: "do it".into(),
            scope: scope.iter().map(|s| s.to_string()).collect(),
            role: Role::Implement,
            verify: None,
            backend: None,
            model: None,
            effort: None,
            time_budget: None,
            queue: false,
            continue_until_pass: false,
            transcripts: None,
            base_ref: Some("main".into()),
            plan: None,
            size_h: None,
            worker: None,
            scope_changed: false,
            remote: None,
            retry_of: None,
        }
    }

    fn failure(task: &str, model: &str) -> Row {
        serde_json::from_value(serde_json::json!({
            "at": "2026-01-01T00:00:00Z", "run": "r", "attempt": 1, "task": task,
            "backend": "low", "model": model, "role": "implement", "claimed": "done",
            "outcome": "fail", "wall_s": 1, "files_changed": 1, "scope_changed": false,
            "effort": null, "tier": null, "worker": null, "reward": null, "size_h": null
        }))
        .unwrap()
    }

    struct World {
        live: Vec<RunRecord>,
        ledger: Vec<Row>,
        missing: bool,
        root: bool,
        abi: Option<i32>,
        ns: bool,
    }

    impl World {
        fn new() -> World {
            World {
                live: Vec::new(),
                ledger: Vec::new(),
                missing: false,
                root: false,
                abi: None,
                ns: false,
            }
        }

        fn decide(&self, flight: &Flight, request: &Request) -> Result<Plan, Refusal> {
            let evidence = |_: &str, key: &str| vec![format!("run r: failed — under {key}")];
            let missing = self.missing;
            let unstartable = move |_: &BackendConfig| -> Result<Option<Missing>, String> {
                Ok(missing.then(|| ("w".to_string(), "argv")))
            };
            let claims: Vec<crate::core::claim::Claim> = self
                .live
                .iter()
                .map(crate::core::claim::Claim::of)
                .collect();
            let tally = Tally::of_rows(&self.ledger, &request.task);
            let history = || self.ledger.clone();
            let facts = Facts {
                live: &self.live,
                claims: &claims,
                ledger: &tally,
                history: &history,
                evidence: &evidence,
                unstartable: &unstartable,
                base: "a".repeat(40),
                run: "20260101-000000-0001".into(),
                now_ms: 1_000_000,
                fence_abi: self.abi,
                namespaces: self.ns,
                root_unsandboxed: self.root,
                home: Some(PathBuf::from("/home/u")),
                run_dir: PathBuf::from("/r/runs/x"),
                worktree: PathBuf::from("/r/worktrees/x"),
                transcript: PathBuf::from("/r/transcripts/k.log"),
            };
            decide(flight, request, &facts)
        }
    }

    fn live(mut record: RunRecord, run: &str) -> RunRecord {
        record.run = run.into();
        record.phase = Phase::Working;
        record
    }

    #[test]
    fn a_worktree_setup_is_carried_by_every_run_but_a_native_one() {
        let world = World::new();
        let f = flight("[worktree]\nsetup = \" npm ci \"\nsetup_timeout = \"90s\"\n");
        let plan = world.decide(&f, &request("api", &["src/**"])).unwrap();
        let setup = plan.record.setup.expect("a setup");
        assert_eq!((setup.command.as_str(), setup.timeout_s), ("npm ci", 90));
        assert!(!setup.ran());
        let mut native = request("api", &["src/**"]);
        native.backend = Some("native".into());
        let plan = world.decide(&f, &native).unwrap();
        assert_eq!(plan.record.setup, None);
        let plan = world
            .decide(&flight(""), &request("api", &["src/**"]))
            .unwrap();
        assert_eq!(plan.record.setup, None);
    }

    #[test]
    fn a_plain_request_becomes_a_record_with_its_branch_fence_and_deadline() {
        let f = flight("");
        let mut world = World::new();
        let plan = world.decide(&f, &request("api", &["src/**"])).unwrap();
        let r = &plan.record;
        assert_eq!(r.branch, "crew/api/20260101-000000-0001");
        assert_eq!(r.phase, Phase::Preparing);
        assert_eq!(
            (r.backend.as_str(), r.model.as_deref()),
            ("low", Some("small"))
        );
        assert_eq!(r.fence.as_deref(), Some("none"));
        assert_eq!(r.worktree, "/r/worktrees/x");
        assert_eq!(r.transcript.as_deref(), Some("/r/transcripts/k.log"));
        assert_eq!(
            crate::core::stamp::format_seconds(r.started_at),
            "1970-01-01T00:16:40Z"
        );
        assert!(plan.escalated_from.is_none());
        world.abi = Some(7);
        let plan = world.decide(&f, &request("api", &["src/**"])).unwrap();
        assert_eq!(plan.record.fence.as_deref(), Some("landlock-v7"));
        world.ns = true;
        let plan = world.decide(&f, &request("api", &["src/**"])).unwrap();
        assert_eq!(plan.record.fence.as_deref(), Some("landlock-v7+ns"));
        let strict = flight("[sandbox]\nrequire = \"landlock+ns\"\n");
        assert!(world.decide(&strict, &request("api", &["src/**"])).is_ok());
        world.ns = false;
        assert!(matches!(
            world.decide(&strict, &request("api", &["src/**"])),
            Err(Refusal::Usage(m)) if m.contains("landlock+ns") && m.contains("namespaces")
        ));
        let fenced = flight("[sandbox]\nrequire = true\n");
        let plan = world.decide(&fenced, &request("api", &["src/**"])).unwrap();
        assert_eq!(plan.record.fence.as_deref(), Some("landlock-v7"));
        let seeded = flight("seed = [\"../etc\"]\n");
        let mut to_claude = request("api", &["src/**"]);
        to_claude.backend = Some("cl".into());
        assert!(matches!(
            world.decide(&seeded, &to_claude),
            Err(Refusal::Usage(m)) if m.contains("seed entry `../etc`")
        ));
        let off = flight("[sandbox]\nenabled = false\n");
        let plan = world.decide(&off, &request("api", &["src/**"])).unwrap();
        assert_eq!(plan.record.fence.as_deref(), Some("none"));
    }

    #[test]
    fn the_file_size_cap_is_sealed_into_the_record_in_bytes() {
        let world = World::new();
        let plan = world
            .decide(&flight(""), &request("api", &["src/**"]))
            .unwrap();
        assert_eq!(plan.record.max_file_size, Some(100 << 20));
        let small = flight("[fences]\nmax_file_size = \"1.5 MiB\"\n");
        let plan = world.decide(&small, &request("api", &["src/**"])).unwrap();
        assert_eq!(plan.record.max_file_size, Some(3 << 19));
        assert_eq!(plan.record.file_size_cap(), 3 << 19);
    }

    #[test]
    fn a_committing_run_needs_a_scope_and_a_valid_task_id() {
        let f = flight("");
        let world = World::new();
        assert!(matches!(
            world.decide(&f, &request("api", &[])),
            Err(Refusal::Usage(m)) if m.contains("needs a write scope")
        ));
        assert!(matches!(
            world.decide(&f, &request("bad..id", &["x"])),
            Err(Refusal::Usage(_))
        ));
        let mut review = request("look", &[]);
        review.role = Role::Review;
        let plan = world.decide(&f, &review).unwrap();
        assert_eq!(plan.backend.sandbox, Some(SandboxMode::ReadOnly));
    }

    #[test]
    fn a_live_task_an_overlapping_scope_and_a_full_backend_are_refused() {
        let f = flight("");
        let mut world = World::new();
        let first = world.decide(&f, &request("api", &["src/**"])).unwrap();
        world.live.push(live(first.record, "20260101-000000-0000"));
        assert!(matches!(
            world.decide(&f, &request("api", &["docs/**"])),
            Err(Refusal::State(m)) if m.contains("already has an in-flight run")
        ));
        assert!(matches!(
            world.decide(&f, &request("ui", &["src/ui/**"])),
            Err(Refusal::State(m)) if m.contains("overlaps")
        ));
        assert!(matches!(
            world.decide(&f, &request("docs", &["docs/**"])),
            Err(Refusal::State(m)) if m.contains("concurrency limit")
        ));
        let mut queued = request("docs", &["docs/**"]);
        queued.queue = true;
        assert_eq!(
            world.decide(&f, &queued).unwrap().record.phase,
            Phase::Queued
        );
    }

    #[test]
    fn a_worker_that_cannot_start_is_the_configs_fault() {
        let f = flight("");
        let mut world = World::new();
        world.missing = true;
        match world.decide(&f, &request("api", &["src/**"])) {
            Err(Refusal::Config { message, hint }) => {
                assert!(message.contains("`w`"), "{message}");
                assert!(hint.contains("backends.low.argv"), "{hint}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn claude_as_root_is_refused_unless_sandboxed_or_read_only() {
        let f = flight("");
        let mut world = World::new();
        world.root = true;
        let mut ask = request("api", &["src/**"]);
        ask.backend = Some("cl".into());
        assert!(
            matches!(world.decide(&f, &ask), Err(Refusal::Usage(m)) if m.contains("IS_SANDBOX"))
        );
        ask.role = Role::Review;
        assert!(world.decide(&f, &ask).is_ok());
        let sandboxed = flight("env = { IS_SANDBOX = \"1\" }\n");
        ask.role = Role::Implement;
        assert!(world.decide(&sandboxed, &ask).is_ok());
    }

    #[test]
    fn two_failures_escalate_a_tier_and_at_the_top_ask_for_a_human() {
        let f = flight("");
        let mut world = World::new();
        world.ledger = vec![failure("api", "small"), failure("api", "small")];
        let plan = world.decide(&f, &request("api", &["src/**"])).unwrap();
        assert_eq!(plan.record.tier.as_deref(), Some("mid"));
        assert_ne!(plan.record.backend, "low");
        let from = plan.escalated_from.unwrap();
        assert_eq!((from.model.as_deref(), from.failures), (Some("small"), 2));
        assert!(
            plan.task_prompt.contains("under small"),
            "{}",
            plan.task_prompt
        );
        world.ledger = vec![failure("api", "big"), failure("api", "big")];
        let mut top = request("api", &["src/**"]);
        top.backend = Some("high".into());
        assert!(matches!(
            world.decide(&f, &top),
            Err(Refusal::HumanReport { model, report, .. }) if model == "big" && !report.is_empty()
        ));
    }

    #[test]
    fn tasks_whose_branch_folders_nest_are_named() {
        let branches = vec![
            "refs/heads/crew/api/20260101-000000-0001".to_string(),
            "refs/heads/crew/ui/x/20260101-000000-0002".to_string(),
        ];
        assert_eq!(nesting("api/v2", &branches).as_deref(), Some("api"));
        assert_eq!(nesting("ui", &branches).as_deref(), Some("ui/x"));
        assert_eq!(nesting("api", &branches), None);
        assert_eq!(nesting("apis", &branches), None);
    }

    #[test]
    fn the_nesting_check_needs_only_the_branches_of_its_places() {
        let names: Vec<String> = [
            "api/20260101-000000-0001",
            "api/v2/20260101-000000-0002",
            "api/v2/deep/20260101-000000-0003",
            "apis/20260101-000000-0004",
            "ui",
            "ui/x/20260101-000000-0005",
            "a/b/c/20260101-000000-0006",
            "solo/20260101-000000-0007",
        ]
        .iter()
        .map(|n| format!("refs/heads/crew/{n}"))
        .collect();
        // Every task that nests with `task`, each branch asked about alone.
        let nesting_all = |task: &str, names: &[String]| -> BTreeSet<String> {
            (names.iter())
                .filter_map(|n| nesting(task, std::slice::from_ref(n)))
                .collect()
        };
        use std::collections::BTreeSet;
        let tasks = [
            "api",
            "api/v2",
            "api/v2/deep",
            "api/v3",
            "apis",
            "ui",
            "ui/x",
            "ui/x/y",
            "a",
            "a/b",
            "a/b/c/d",
            "solo",
            "other",
            "x/y/z",
        ];
        let mut nested = 0;
        for task in tasks {
            let (folders, exact) = nesting_places(task);
            let read: Vec<String> = (names.iter())
                .filter(|n| folders.iter().any(|f| n.starts_with(f.as_str())) || exact.contains(n))
                .cloned()
                .collect();
            let everything = nesting_all(task, &names);
            assert_eq!(nesting_all(task, &read), everything, "{task}");
            assert_eq!(
                nesting(task, &read).is_some(),
                !everything.is_empty(),
                "{task}"
            );
            nested += usize::from(!everything.is_empty());
        }
        // The cases are not all of one kind.
        assert!(nested > 4 && nested < tasks.len() - 2, "{nested}");
    }

    #[test]
    fn ports_go_to_the_lowest_free_one() {
        let f = flight("[worktree]\nport_range = \"4100-4101\"\n");
        let mut world = World::new();
        let first = world.decide(&f, &request("a", &["a/**"])).unwrap();
        assert_eq!(first.record.port, Some(4100));
        world.live.push(live(first.record, "20260101-000000-0000"));
        let mut second = request("b", &["b/**"]);
        second.queue = true;
        assert_eq!(world.decide(&f, &second).unwrap().record.port, Some(4101));
    }
}
