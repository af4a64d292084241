//! The scheduler: which runs hold their backend's concurrency slots, starting queued runs
//! as slots free, starting supervisors, and settling the store (reaping runs whose
//! supervisor died, then promoting the queue) as the first step of a command that acts.
//! It sits above the supervisor: it drives a run through `run::supervisor` (the hidden
//! `supervise` command, a native run's delivery) and, when the supervisor reports a freed
//! slot, starts the queued runs; the supervisor never starts a run itself.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::run::error::{Context, Result};

use super::filing::NotFiled;
use super::supervisor::{self, Delivered};
use crate::core::dispatch::{slot_limit, slots_in_use};
use crate::core::flight::Backend as BackendConfig;
use crate::core::record::{Phase, RunRecord};
use crate::core::stamp;
use crate::state::runs::RunStore;
use crate::sys::clock::now_millis;

/// Brings the store up to date before a command that acts reads it: runs whose
/// supervisor died are filed as abandoned, and queued runs start where slots are free.
/// Returns the ledger rows of reaped runs that could not be written.
pub fn settle(store: &RunStore, repo_dir: &Path) -> Result<Vec<NotFiled>> {
    // One read of the live pointers serves both: reaping never touches queued runs.
    let live = store.live()?;
    let reaped = super::reap::reap_dead(store, repo_dir, &live)?;
    if !reaped.is_empty() || live.iter().any(|r| r.phase == Phase::Queued) {
        promote(store, repo_dir)?;
    }
    Ok(reaped.into_iter().filter_map(|r| r.not_filed).collect())
}

/// Drives run `run` (the hidden `supervise` command, started detached by dispatch and by
/// promotion): its supervisor drives it to its end or to `needs-help`; when that freed
/// its slot, queued runs start; then the lead's notify command is told, once the run's
/// lock is let go (a lead that answers a needs-help from its notification at once finds
/// the run free for the next supervisor). Ledger rows that could not be written go to
/// `not_filed`.
pub fn supervise(
    repo: &crate::git::Repository,
    store: &RunStore,
    run: &str,
    not_filed: &mut dyn FnMut(NotFiled),
) -> Result<()> {
    let mut report = supervisor::Report::default();
    let driven = supervisor::drive(repo, store, run, &mut report);
    let told = after_supervisor(store, &supervisor::repo_dir(repo), report, not_filed);
    if told {
        // What the notifier left running (a `setsid` daemon) came back to this process,
        // the subreaper, when the notifier ended: nothing outlives the run's supervisor.
        super::process::kill_descendants(std::process::id());
        super::process::reap_orphans();
    }
    driven
}

/// Takes the reply of a native run through its supervisor (`run::supervisor::deliver`);
/// when the run ended or parked, queued runs start, and the lead's notify command is told.
pub fn deliver(
    repo: &crate::git::Repository,
    store: &RunStore,
    run: &str,
    reply: &str,
    not_filed: &mut dyn FnMut(NotFiled),
) -> Result<Delivered> {
    let mut report = supervisor::Report::default();
    let delivered = supervisor::deliver(repo, store, run, reply, &mut report)?;
    after_supervisor(store, &supervisor::repo_dir(repo), report, not_filed);
    Ok(delivered)
}

/// What follows a supervisor's work, in this order: a freed slot goes to the queue, the
/// lead is told of the change, the rows not written are handed on. Whether the lead was
/// told.
fn after_supervisor(
    store: &RunStore,
    repo_dir: &Path,
    report: supervisor::Report,
    not_filed: &mut dyn FnMut(NotFiled),
) -> bool {
    if report.freed_slot {
        // A queued run of this backend (or of this worker) may start.
        let _ = promote(store, repo_dir);
    }
    let told = report.notice.is_some();
    if let Some(record) = report.notice {
        super::notify::tell(store, repo_dir, &record);
    }
    for row in report.not_filed {
        not_filed(row);
    }
    told
}

/// The phase a parked run goes back to when the lead answers it: `working` while its
/// backend has a free slot (it held none while parked), else `queued`.
pub fn readmit(store: &RunStore, record: &RunRecord) -> Result<Phase> {
    let live = store.live()?;
    let config: BackendConfig =
        crate::state::run_files::backend(&store.run_dir(&record.run)).unwrap_or_default();
    let busy = slots_in_use(&live, &record.backend, Some(&record.run));
    Ok(if busy >= slot_limit(&config) {
        Phase::Queued
    } else {
        Phase::Working
    })
}

/// Starts queued runs, oldest first, while their backend has a free slot. Called when a
/// run ends or parks (after its supervisor reports the freed slot) and by every command
/// that acts, so a queue never
/// stalls for long even when a supervisor died.
pub fn promote(store: &RunStore, repo_dir: &Path) -> Result<Vec<String>> {
    // With nothing queued there is nothing to start: the dispatch turn is not taken (a
    // run that ends finds it busy with dispatches). A run queued after this look is its
    // dispatch's to start: it promotes once the run is ready.
    if !store.live()?.iter().any(|r| r.phase == Phase::Queued) {
        return Ok(Vec::new());
    }
    let _lock = store.dispatch_lock(Duration::from_secs(30))?;
    let live = store.live()?;
    let mut started = Vec::new();
    let mut busy: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
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
        let config: BackendConfig = match crate::state::run_files::backend(&run_dir) {
            Ok(config) => config,
            Err(crate::state::run_files::Unread::Missing(_)) => continue,
            Err(bad) => return Err(bad.into()),
        };
        let limit = slot_limit(&config);
        let used = busy
            .entry(record.backend.clone())
            .or_insert_with(|| slots_in_use(&live, &record.backend, None));
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
        next.started_at = stamp::whole_second(stamp::from_millis(now));
        next.deadline = stamp::whole_second(stamp::from_millis(
            now.saturating_add(next.budget_s.saturating_mul(1000)),
        ));
        if let Ok(task_prompt) = crate::state::run_files::task_prompt(&run_dir) {
            std::fs::write(
                &next.prompt_file,
                super::prompt::worker(&next, &task_prompt),
            )?;
        }
        if !store.update_live(&next)? {
            continue;
        }
        *used += 1;
        if let Some(worker) = &next.worker {
            busy_workers.insert(worker.clone());
        }
        start_supervisor(repo_dir, &next.run, &run_dir)?;
        started.push(next.run);
    }
    Ok(started)
}

/// Starts `git crew supervise RUN` detached: a session of its own (so every process of
/// the run can be found and ended through it), no terminal, output to the run's folder.
/// It outlives this process.
pub fn start_supervisor(repo_dir: &Path, run: &str, run_dir: &Path) -> Result<u32> {
    let exe = std::env::current_exe().context("cannot find the git-crew binary")?;
    let log = super::output::open_append(&crate::core::layout::supervisor_log(run_dir))?;
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
    crate::sys::process::new_session(&mut command);
    let mut child = command.spawn().context("cannot start the supervisor")?;
    let pid = child.id();
    // Another run's supervisor, not something a worker of this process left behind.
    super::process::spare(pid);
    // Waited for, so that a process that lives on after starting it (the console, a
    // supervisor promoting the queue) keeps no zombie; a command that exits first leaves
    // it to init.
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    Ok(pid)
}

/// An answered run, on its way again.
pub struct Advised {
    /// The advice as the worker reads it.
    pub advice_file: std::path::PathBuf,
    /// The supervisor started for it, when its backend had a slot (else it is queued, or
    /// the lead works it: a native run).
    pub supervisor_pid: Option<u32>,
}

/// Answers a run waiting for help with `text`: the advice is filed for the next attempt,
/// the time it waited is given back to its budget, and it goes back to work — resuming
/// its session — where its backend has a free slot, else to the queue. `None` when the
/// run ended meanwhile.
pub fn advise(
    store: &RunStore,
    repo_dir: &Path,
    record: &mut RunRecord,
    text: &str,
) -> Result<Option<Advised>> {
    let run_dir = store.run_dir(&record.run);
    let file = crate::core::layout::advice(&run_dir, record.attempts + 1);
    std::fs::write(&file, super::prompt::advice(record, text))?;
    // The budget did not run while the run waited for the lead.
    if let Some(parked) = record.parked_at {
        let waited = crate::sys::clock::now()
            .duration_since(parked)
            .max(jiff::SignedDuration::ZERO);
        record.deadline = crate::core::stamp::whole_second(
            record
                .deadline
                .checked_add(waited)
                .unwrap_or(jiff::Timestamp::MAX),
        );
    }
    record.parked_at = None;
    record.needs_help = None;
    record.decision = None;
    record.supervisor_pid = None;
    let native = record.adapter == crate::core::flight::AdapterKind::Native;
    if native {
        // The lead works a native run itself: the answer is in the advice file.
        record.phase = Phase::Working;
    } else {
        std::fs::write(
            crate::core::layout::next_prompt(&run_dir),
            file.to_string_lossy().as_bytes(),
        )?;
        // Parked, the run held no slot; it waits in the queue when its backend is full.
        record.phase = readmit(store, record)?;
    }
    if !store.update_live(record)? {
        return Ok(None);
    }
    let supervisor_pid = if record.phase == Phase::Working && !native {
        Some(start_supervisor(repo_dir, &record.run, &run_dir)?)
    } else {
        None
    };
    Ok(Some(Advised {
        advice_file: file,
        supervisor_pid,
    }))
}
