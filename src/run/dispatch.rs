//! Dispatch, applied: gathering the facts `core::dispatch` decides on, then carrying the
//! plan out (worktree, identity, hooks, prompt, live pointer, detached supervisor),
//! returning at once.

use std::path::{Path, PathBuf};

use crate::run::error::{Context, Result};

use super::prompt;
use crate::core::claim::Clash;
use crate::core::dispatch::{Plan, Refusal, Request};
use crate::core::flight::Flight;
use crate::core::ledger::Row;
use crate::core::record::{Phase, RunRecord};
use crate::git::worktree;
use crate::state::claims::Claims;
use crate::state::runs::RunStore;
use crate::sys::clock::now_millis;

/// What a dispatch decision reads of the machine: the kernel's write fence, whether a
/// process can get namespaces of its own (a probe that starts a process), whether it runs
/// as root outside a sandbox. Nothing another dispatch does changes it, so it is found
/// before the dispatch turn.
pub struct Machine {
    fence_abi: Option<i32>,
    namespaces: bool,
    root_unsandboxed: bool,
}

impl Machine {
    pub fn now() -> Machine {
        let fence_abi = crate::sys::fence::kernel_abi();
        Machine {
            fence_abi,
            namespaces: fence_abi.is_some() && crate::sys::ns::available(),
            root_unsandboxed: crate::sys::process::is_root()
                && std::env::var_os("IS_SANDBOX").is_none(),
        }
    }
}

/// Gathers what a dispatch decision reads — the live runs, the task's ledger, the
/// clock, whether the worker's program exists; `machine`'s facts — and decides it.
pub fn plan(
    repo: &crate::git::Repository,
    store: &RunStore,
    flight: &Flight,
    request: &Request,
    (base, machine): (String, &Machine),
    run: String,
) -> Result<Result<Plan, Refusal>> {
    let live = store.live()?;
    let claims = store.held()?;
    // Read under the dispatch turn: the task's head note only, whatever its history.
    let ledger = super::ledger::tally(repo, &request.task)?;
    // Every row, only for a human report.
    let history =
        || -> Vec<Row> { super::ledger::rows(repo, Some(&request.task)).unwrap_or_default() };
    // Both failures' evidence, for an escalated prompt: what was measured, never output.
    // The runs are those the task's own ledger names; only their records are read.
    let evidence = |task: &str, key: &str| -> Vec<String> {
        let rows = history();
        let mut named: Vec<&str> = rows.iter().map(|r| r.run.as_str()).collect();
        named.sort_unstable();
        named.dedup();
        let mut records: Vec<RunRecord> = named
            .into_iter()
            .filter_map(|run| store.load_record(run).ok().flatten())
            .collect();
        records.sort_by(|a, b| a.started_at.cmp(&b.started_at).then(a.run.cmp(&b.run)));
        records
            .iter()
            .filter(|r| {
                r.task == task
                    && crate::core::ledger::failure_key(r.model.as_deref(), &r.backend) == key
            })
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
    let unstartable = |backend: &crate::core::flight::Backend| {
        let Some(kind) = backend.adapter else {
            return Ok(None);
        };
        let driver = super::backends::driver(kind);
        Ok(driver.program(backend).filter(|(program, _)| {
            let path = backend
                .env
                .as_ref()
                .and_then(|env| env.get("PATH"))
                .map(std::ffi::OsString::from)
                .or_else(|| std::env::var_os("PATH"));
            !super::backends::program_exists(program, path.as_deref())
        }))
    };
    let facts = crate::core::dispatch::Facts {
        live: &live,
        claims: &claims,
        ledger: &ledger,
        history: &history,
        evidence: &evidence,
        unstartable: &unstartable,
        base,
        now_ms: now_millis(),
        fence_abi: machine.fence_abi,
        namespaces: machine.namespaces,
        root_unsandboxed: machine.root_unsandboxed,
        home: std::env::var_os("HOME").map(PathBuf::from),
        run_dir: store.run_dir(&run),
        worktree: store.worktree_path(&run),
        transcript: store.transcript_path(&request.task),
        run,
    };
    Ok(crate::core::dispatch::decide(flight, request, &facts))
}

/// A dispatch carried out, or only decided (`dry_run`: `record` is `None`).
pub struct Started {
    pub plan: Plan,
    pub record: Option<RunRecord>,
    /// What the lead should hear of the worktree's making (`.worktreeinclude`).
    pub warnings: Vec<String>,
}

/// How often a dispatch still preparing its run marks the run's live pointer as fresh:
/// well within the grace a pointer with no supervisor gets.
const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(10);

/// Dispatches `request`. In the dispatch turn, only what the next dispatch's decision must
/// see: the nesting check (branch names only, of the task's own folders), the plan, the
/// refusals of a `writable` path that holds the repository and of a repository `init` has
/// not prepared, then (unless `dry_run`) the run's branch, seal, registered worktree and
/// claim (its live pointer, `preparing`). The turn is let go before the checkout: parallel
/// dispatches overlap everything else ([`prepare`]). A human report a refusal carries is
/// filed here.
pub fn start(
    repo: &crate::git::Repository,
    repo_dir: &Path,
    store: &RunStore,
    flight: &Flight,
    request: &Request,
    base: String,
    dry_run: bool,
) -> Result<Result<Started, Refusal>> {
    let machine = Machine::now();
    // In a fleet, the remote's notes (the ledger, the gates' verdicts) are merged in first,
    // outside the turn, so that the decision counts every machine's runs. A remote out of
    // reach is named by the claim below.
    if !dry_run
        && let Some(fleet) = super::fleet::Fleet::of(flight, request.remote.as_deref())
        && crate::git::sync::remotes(repo).contains(&fleet.remote)
    {
        let _ = super::fleet::pull_notes(repo_dir, &fleet.remote);
    }
    let turn = match store.dispatch_lock(std::time::Duration::from_secs(30)) {
        Ok(guard) => guard,
        Err(e) => return Ok(Err(Refusal::Busy(e.to_string()))),
    };
    // A task's worker may write its task's branch folder (`crew/<task>/`): no other task's
    // branches may live in it, nor it in theirs. Only where such a branch can be is
    // listed, by name.
    let (folders, exact) = crate::core::dispatch::nesting_places(&request.task);
    let mut branches = Vec::new();
    for folder in &folders {
        branches.extend(crate::git::refs::names_under(repo, folder)?);
    }
    branches.extend(
        exact
            .into_iter()
            .filter(|name| crate::git::refs::exists(repo, name)),
    );
    if let Some(other) = crate::core::dispatch::nesting(&request.task, &branches) {
        return Ok(Err(Refusal::Nests {
            task: request.task.clone(),
            other,
        }));
    }
    let plan = match plan(
        repo,
        store,
        flight,
        request,
        (base, &machine),
        crate::sys::clock::new_run_id(),
    )? {
        Ok(plan) => plan,
        Err(Refusal::HumanReport {
            task,
            model,
            report,
            ..
        }) => {
            let filed = crate::state::reports::file(store.root(), &task, &report);
            return Ok(Err(Refusal::HumanReport {
                task,
                model,
                report,
                filed,
            }));
        }
        Err(refusal) => return Ok(Err(refusal)),
    };
    // A writable path that holds the repository would void the fence.
    for path in &plan.writable {
        if let Err(m) = super::fence::check_writable(path, repo_dir, repo.common_dir()) {
            return Ok(Err(Refusal::Sandbox(m)));
        }
    }
    if !crate::git::config::worktree_config_on(repo) {
        return Ok(Err(Refusal::NotInitialised));
    }
    // The run's branch is made with a reflog entry, and its commits carry the lead's
    // identity: with none, git would refuse both later, less clearly.
    if crate::git::config::committer(repo).is_none() {
        return Ok(Err(Refusal::NoIdentity));
    }
    if dry_run {
        return Ok(Ok(Started {
            plan,
            record: None,
            warnings: Vec::new(),
        }));
    }
    // In a fleet, the task is claimed on the remote before anything is made here.
    let ticket = match super::fleet::Fleet::of(flight, request.remote.as_deref()) {
        None => None,
        Some(fleet) => match claim_on_remote(repo, repo_dir, store, &fleet, &plan.record)? {
            Ok(ticket) => Some(ticket),
            Err(refusal) => return Ok(Err(refusal)),
        },
    };
    // Nothing was made here, or all of it was taken back: the remote's claim goes too (if
    // it cannot, its lease runs out).
    let let_go = || {
        if let Some(ticket) = &ticket {
            let _ = super::fleet::release(repo_dir, ticket);
        }
    };
    // Decided in this dispatch turn, the claim holds; a claim taken elsewhere meanwhile
    // (a store other processes share) refuses it as the decision would have.
    let claimed = claim(&plan, repo, store);
    if !matches!(claimed, Ok(Ok(_))) {
        let_go();
    }
    let git_dir = match claimed? {
        Ok(git_dir) => git_dir,
        Err(clash) => return Ok(Err(Refusal::State(clash.to_string()))),
    };
    drop(turn);
    let prepared = prepare(&plan, repo, repo_dir, store, &git_dir);
    if prepared.is_err() {
        let_go();
    }
    let (record, warnings) = prepared?;
    Ok(Ok(Started {
        plan,
        record: Some(record),
        warnings,
    }))
}

/// Claims the run's task and scope on the fleet's remote and keeps the ticket in the run's
/// folder (made here, before the run's supervisor can look for it); the refusal when a run
/// elsewhere holds either, the remote is not there or refuses.
fn claim_on_remote(
    repo: &crate::git::Repository,
    repo_dir: &Path,
    store: &RunStore,
    fleet: &super::fleet::Fleet,
    record: &RunRecord,
) -> Result<Result<super::fleet::Ticket, Refusal>> {
    use super::fleet::Claimed;
    if !crate::git::sync::remotes(repo).contains(&fleet.remote) {
        return Ok(Err(Refusal::NoRemote(fleet.remote.clone())));
    }
    let claimed = match super::fleet::claim(repo_dir, fleet, record, now_millis()) {
        Ok(claimed) => claimed,
        Err(e) => {
            return Ok(Err(Refusal::RemoteUnreachable(format!(
                "cannot claim task {} on {}: {}",
                record.task,
                fleet.remote,
                crate::fault::chain(&e)
            ))));
        }
    };
    let ticket = match claimed {
        Claimed::Held(ticket) => ticket,
        Claimed::Refused(held) => return Ok(Err(Refusal::State(held.to_string()))),
        Claimed::RemoteRefused(why) => {
            return Ok(Err(Refusal::RemoteRefused(format!(
                "{} refused the claim on task {}: {why}",
                fleet.remote, record.task
            ))));
        }
    };
    let run_dir = store.run_dir(&record.run);
    let kept = std::fs::create_dir_all(&run_dir)
        .map_err(crate::run::error::Error::from)
        .and_then(|()| super::fleet::save(&run_dir, &ticket));
    if let Err(e) = kept {
        let _ = super::fleet::release(repo_dir, &ticket);
        return Err(e);
    }
    Ok(Ok(ticket))
}

/// What a standing worker's run does with sessions, when the run has a worker: resume
/// the worker's last session on this backend, or start afresh, and why.
pub fn session_plan(store: &RunStore, flight: &Flight, record: &RunRecord) -> Option<String> {
    let worker = record.worker.as_ref()?;
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
    Some(crate::core::dispatch::session_plan(
        worker,
        record.adapter.as_str(),
        &record.backend,
        record.adapter.resumes_across_worktrees(),
        reuse,
        last.as_deref(),
    ))
}

/// Takes the run's place, in the dispatch turn: its branch, its seal (the lead's facts,
/// before any worker process exists), its worktree registered and locked (not checked
/// out yet) and its claim — the live pointer, in phase `preparing` whatever phase the run
/// is to have, so nothing starts it before it is ready. On failure, or a claim that
/// clashes, everything made is taken back. Returns the worktree's private git dir.
fn claim(
    plan: &Plan,
    repo: &crate::git::Repository,
    store: &RunStore,
) -> Result<Result<PathBuf, Clash>> {
    let record = &plan.record;
    let wt = PathBuf::from(&record.worktree);
    std::fs::create_dir_all(wt.parent().context("worktree path has a parent")?)?;
    worktree::create_branch(repo, &record.branch, &record.base)?;
    let claimed = (|| -> Result<Result<PathBuf, Clash>> {
        crate::git::seal::write(repo, &crate::core::seal::Sealed::of(record))?;
        let git_dir = worktree::register(
            repo,
            &wt,
            &record.branch,
            &format!("git-crew run {} is live", record.run),
        )?;
        let mut preparing = record.clone();
        preparing.phase = Phase::Preparing;
        Ok(store.claim(&preparing)?.map(|()| git_dir))
    })();
    if !matches!(claimed, Ok(Ok(_))) {
        take_back(repo, store, record);
    }
    claimed
}

/// Takes back what a dispatch made of `record`'s run: its claim (the live pointer), its
/// worktree and registration, its branch, its folder and its seal. No git process runs.
fn take_back(repo: &crate::git::Repository, store: &RunStore, record: &RunRecord) {
    let _ = store.release(&record.run);
    worktree::discard(repo.common_dir(), Path::new(&record.worktree));
    worktree::delete_branch(repo, &record.branch);
    let _ = std::fs::remove_dir_all(store.run_dir(&record.run));
    let _ = crate::git::seal::remove(repo, &record.run);
}

/// Carries out the rest of a claimed plan, outside the dispatch turn: the checkout,
/// identity, hooks, prompt, then the run's live pointer as the run is to start (queued,
/// awaiting its attach, or preparing with its detached supervisor). While it works it
/// keeps the pointer fresh, so the run is not taken for one whose supervisor died. On
/// failure everything made is taken back — claim, branch, worktree, pointer. Returns the
/// run's record and the warnings of its worktree's making (`.worktreeinclude`).
fn prepare(
    plan: &Plan,
    repo: &crate::git::Repository,
    repo_dir: &Path,
    store: &RunStore,
    git_dir: &Path,
) -> Result<(RunRecord, Vec<String>)> {
    let record = &plan.record;
    let (stop, stopped) = std::sync::mpsc::channel::<()>();
    let prepared = std::thread::scope(|scope| {
        scope.spawn(move || {
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) =
                stopped.recv_timeout(HEARTBEAT)
            {
                store.touch_live(&record.run);
            }
        });
        let prepared = fill(plan, repo, repo_dir, store, git_dir);
        drop(stop);
        prepared
    });
    let (ready, warnings) = match prepared {
        Ok(prepared) => prepared,
        Err(err) => {
            take_back(repo, store, record);
            return Err(err);
        }
    };
    // The pointer as the run is to start. One that went meanwhile (the run was abandoned
    // while it was prepared) is not brought back, and nothing is started for it.
    if !store.update_live(&ready)? {
        crate::run::error::bail!(
            "run {} was ended while it was being prepared; its worktree and branch are kept",
            record.run
        );
    }
    match ready.phase {
        // Started by `queue::promote` when a slot frees — which may have happened while
        // the run was prepared, its pointer holding a slot meanwhile.
        Phase::Queued => {
            super::queue::promote(store, repo_dir)?;
            Ok((ready, warnings))
        }
        // No process: the lead binds its own sub-task with `attach`.
        Phase::AwaitingAttach => Ok((ready, warnings)),
        _ => {
            let pid =
                super::queue::start_supervisor(repo_dir, &record.run, &store.run_dir(&record.run))
                    .inspect_err(|_| {
                        take_back(repo, store, record);
                    })?;
            let mut started = ready;
            started.supervisor_pid = Some(pid);
            Ok((started, warnings))
        }
    }
}

/// Fills the claimed run's worktree and folder: the checkout, the excludes, the
/// worktree's config, `.worktreeinclude`, submodules, the task's ref folder noted, the
/// prompt and the files the supervisor reads. Returns the record as the run is to start,
/// and the warnings of the worktree's making.
fn fill(
    plan: &Plan,
    repo: &crate::git::Repository,
    repo_dir: &Path,
    store: &RunStore,
    git_dir: &Path,
) -> Result<(RunRecord, Vec<String>)> {
    let record = &plan.record;
    let wt = PathBuf::from(&record.worktree);
    let run_hooks = crate::core::layout::run_hooks(store.root());
    super::worktree_files::ensure_run_hooks(&run_hooks, &crate::git::hooks_dir::hooks_dir(repo))?;
    worktree::check_out(&wt)?;
    let mut warnings = Vec::new();
    let run_dir = store.run_dir(&record.run);
    std::fs::create_dir_all(&run_dir)?;
    // What git ignores in the worktree besides the project's rules: the lead's own
    // excludes (which the run's file takes the place of), tool state and the flight's
    // `[worktree] ignore`.
    let lead = crate::git::worktree_files::lead_excludes(repo);
    let excludes = crate::core::worktree_files::excludes_text(
        lead.as_ref()
            .map(|(path, text)| (path.to_str().unwrap_or("?"), text.as_str())),
        &plan.ignore,
    );
    crate::sys::fs::write_atomic(
        &crate::core::layout::run_excludes(&run_dir),
        &excludes,
        0o644,
    )?;
    worktree::write_config(
        git_dir,
        &worktree::run_config(&record.identity(), &run_hooks, &run_dir),
    )?;
    warnings.extend(super::worktree_files::copy_includes(repo_dir, &wt));
    warnings.extend(node_hooks_unreachable(&wt, record));
    // A submodule that cannot be checked out (the lead's copy lacks the commit) is
    // said, not a failed dispatch: the run can still work on the rest, and its setup
    // may fetch it.
    if let Err(e) = crate::git::submodules::init(repo.common_dir(), &wt) {
        warnings.push(format!(
            "{}; the worker finds it empty",
            crate::fault::chain(&e)
        ));
    }
    // What the task's ref folder holds now, its new branch included: anything else
    // the run leaves there is a stray of its.
    super::strays::note(repo, &record.task, &run_dir)?;
    std::fs::write(
        &record.prompt_file,
        prompt::worker(record, &plan.task_prompt),
    )?;
    // Last: a queued run whose files are not there yet is passed over by the queue.
    crate::state::run_files::keep(
        &run_dir,
        &crate::state::run_files::Kept {
            backend: &plan.backend,
            task_prompt: &plan.task_prompt,
            writable: &plan.writable,
            notify: &plan.notify,
        },
    )?;
    let mut ready = record.clone();
    if record.adapter == crate::core::flight::AdapterKind::Native {
        ready.phase = Phase::AwaitingAttach;
    }
    Ok((ready, warnings))
}

/// The warning for a Node project's hook manager that a fresh worktree cannot run
/// (`core::toolchain::node_hooks_unreachable`), from what the worktree holds once made.
fn node_hooks_unreachable(wt: &Path, record: &RunRecord) -> Option<String> {
    let there = |name: &str| std::fs::symlink_metadata(wt.join(name)).is_ok();
    let hooks = crate::core::toolchain::NodeHooks {
        managers: (crate::core::toolchain::NODE_HOOK_MANAGERS.iter())
            .filter(|(file, _)| there(file))
            .map(|(_, manager)| *manager)
            .collect(),
        package_json: there("package.json"),
        node_modules: there("node_modules"),
        setup: record.setup.is_some(),
    };
    crate::core::toolchain::node_hooks_unreachable(&hooks)
}
