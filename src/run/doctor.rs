//! `doctor`'s checks: each looks for one kind of rot — runs whose supervisor died,
//! integrates that died half-way, worker and verify processes nothing will stop, throwaway
//! checkouts, unreadable and stale live pointers, worktrees no run knows, refs in a task's
//! ref folder that are no run's branch, hooks that lost git-crew's block, notes that
//! diverged from a remote's — and, with `fix`, repairs what can be repaired without
//! losing a commit. Problems come back as values
//! (`core::doctor::Problem`); which process is an orphan is `core::doctor`'s decision,
//! the rendering is `cli::doctor`'s. Orphan worktrees and unreadable pointers are only
//! named, never removed.

use crate::run::error::Result;
use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::core::doctor::{self, Problem, ProblemKind, ProcessFacts};
use crate::core::flight::WorktreeCleanup;
use crate::core::record::{Outcome, Phase, RunRecord};
use crate::run::filing::NotFiled;
use crate::run::reap;
use crate::state::runs::RunStore;
use crate::sys::process;

/// What doctor found, and the kernel write fence this machine offers.
pub struct Checkup {
    pub problems: Vec<Problem>,
    /// `landlock-v<ABI>`, or `none`.
    pub fence: String,
    /// Ledger rows of the runs it ended that could not be written.
    pub not_filed: Vec<NotFiled>,
}

/// Runs every check in turn; with `fix`, repairs as it goes.
pub fn check(
    repo: &crate::git::Repository,
    repo_dir: &Path,
    store: &RunStore,
    fix: bool,
) -> Result<Checkup> {
    let mut not_filed = Vec::new();
    let mut problems = dead_supervisors(store, repo_dir, &mut not_filed)?;
    problems.extend(unfinished_integrations(repo, repo_dir, store, fix));
    let mut live = store.live()?;
    // Decide from the facts sealed at dispatch, not from what a pointer says.
    for record in &mut live {
        let _ = crate::git::seal::restore(repo, record);
    }
    // Every finished record is read once, for the runs doctor knows and the records it
    // cannot read.
    let (finished, unreadable) = store.finished_and_unreadable()?;
    let known: HashSet<String> = live
        .iter()
        .map(|r| r.run.clone())
        .chain(finished.into_iter().map(|r| r.run))
        .collect();
    // The processes at work for runs, looked at once (again after a fix killed some).
    let processes = crew_processes();
    problems.extend(orphan_processes(&processes, store, &live, fix));
    let runs_dir = store.runs_dir();
    problems.extend(orphan_verifiers(&processes, &runs_dir, fix));
    let processes = match fix {
        true => crew_processes(),
        false => processes,
    };
    problems.extend(stale_checkouts(
        &processes, store, repo, repo_dir, &runs_dir, fix,
    ));
    problems.extend(unreadable_pointers(store, &live));
    problems.extend(unreadable_records(unreadable));
    problems.extend(stale_pointers(store, repo_dir, &live, fix, &mut not_filed));
    problems.extend(orphan_worktrees(store, &known));
    problems.extend(stray_refs(repo, store, fix));
    problems.extend(missing_hooks(repo, repo_dir, store, fix));
    problems.extend(diverged_notes(repo, fix));
    Ok(Checkup {
        problems,
        fence: {
            let abi = crate::sys::fence::kernel_abi();
            crate::core::dispatch::describe_fence(abi, abi.is_some() && crate::sys::ns::available())
        },
        not_filed,
    })
}

/// Runs whose supervisor died: marked abandoned (or their filing completed) whether or not
/// `fix` is asked for, as every command that acts does.
fn dead_supervisors(
    store: &RunStore,
    repo_dir: &Path,
    not_filed: &mut Vec<NotFiled>,
) -> Result<Vec<Problem>> {
    let before = store.live()?;
    let reaped = reap::reap_dead(store, repo_dir, &before)?;
    Ok(reaped
        .into_iter()
        .map(|reap::Ended { record, not_filed: row }| {
            not_filed.extend(row);
            record
        })
        .map(|record| Problem {
            kind: ProblemKind::DeadSupervisor,
            detail: if record.outcome == Some(Outcome::Abandoned) {
                format!(
                    "run {} (task {}) lost its supervisor; marked abandoned, branch {} kept",
                    record.run, record.task, record.branch
                )
            } else {
                format!(
                    "run {} (task {}) lost its supervisor while filing its outcome; the filing was completed ({})",
                    record.run,
                    record.task,
                    record.outcome.map_or("-", |o| o.as_str())
                )
            },
            fixed: true,
        })
        .collect())
}

/// Integrations that died after their target moved: completed (or, when the target never
/// moved, their notes taken back).
fn unfinished_integrations(
    repo: &crate::git::Repository,
    repo_dir: &Path,
    store: &RunStore,
    fix: bool,
) -> Vec<Problem> {
    crate::run::landing::unfinished(store)
        .into_iter()
        .map(|run| {
            let fixed = fix
                && store
                    .integrate_lock(Duration::from_secs(600))
                .is_ok_and(|_turn| {
                    // A remote out of reach decides nothing: the journal stays.
                    crate::run::landing::resume(
                        repo_dir,
                        repo,
                        store,
                        &run,
                        WorktreeCleanup::Never,
                    )
                    .is_ok_and(|r| !matches!(r, crate::run::landing::Resumed::Unreachable(_)))
                });
            Problem {
                kind: ProblemKind::IntegrationUnfinished,
                detail: format!(
                    "an integrate of run {run} died half-way; `git crew doctor --fix` or `git crew integrate {run}` finishes it"
                ),
                fixed,
            }
        })
        .collect()
}

/// Worker processes of this repository's runs that are no longer live; `fix` kills their
/// process groups.
fn orphan_processes(
    processes: &[ProcessFacts],
    store: &RunStore,
    live: &[RunRecord],
    fix: bool,
) -> Vec<Problem> {
    let worktrees = store.worktrees_dir();
    let live: Vec<&str> = live.iter().map(|r| r.run.as_str()).collect();
    doctor::orphan_processes(processes, &worktrees.to_string_lossy(), &live)
        .into_iter()
        .map(|(pid, run)| {
            if fix {
                process::kill_group(pid);
            }
            Problem {
                kind: ProblemKind::OrphanProcess,
                detail: format!("process {pid} still works for run {run}, which is not live"),
                fixed: fix,
            }
        })
        .collect()
}

/// Verify commands whose git-crew died (a killed `verify` or `integrate`): nothing will
/// stop them. `fix` kills their process groups and waits (briefly) until they are gone,
/// before their checkouts are looked at.
fn orphan_verifiers(processes: &[ProcessFacts], runs_dir: &Path, fix: bool) -> Vec<Problem> {
    let me = process::own_exe();
    doctor::orphan_verifiers(processes, &runs_dir.to_string_lossy(), me.as_deref())
        .into_iter()
        .map(|(pgid, run)| {
            if fix {
                process::kill_group(pgid);
                let until = Instant::now() + Duration::from_secs(2);
                // Every member, not only the leader: a verify's children hold its checkout too.
                while process::group_alive(pgid) && Instant::now() < until {
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
            Problem {
                kind: ProblemKind::OrphanVerify,
                detail: format!(
                    "verify process group {pgid} of run {run} outlived the git-crew that started it"
                ),
                fixed: fix,
            }
        })
        .collect()
}

/// Throwaway checkouts (verify, integrate) that a killed command left registered, of runs
/// no process works for right now.
fn stale_checkouts(
    processes: &[ProcessFacts],
    store: &RunStore,
    repo: &crate::git::Repository,
    repo_dir: &Path,
    runs_dir: &Path,
    fix: bool,
) -> Vec<Problem> {
    let busy = crate::core::doctor::busy_runs(
        processes,
        &store.worktrees_dir().to_string_lossy(),
        &runs_dir.to_string_lossy(),
    );
    crate::git::worktree::throwaways(repo.common_dir(), runs_dir)
        .into_iter()
        .filter(|(_, run)| !busy.contains(run))
        .map(|(path, run)| {
            let fixed = fix && crate::git::worktree::remove_throwaway(repo_dir, &path).is_ok();
            Problem {
                kind: ProblemKind::StaleCheckout,
                detail: format!(
                    "{} (run {run}) was left by a verify or integrate that did not finish",
                    path.display()
                ),
                fixed,
            }
        })
        .collect()
}

/// Finished runs whose record cannot be read: only a person can mend or remove the file.
fn unreadable_records(unreadable: Vec<crate::state::runs::Unreadable>) -> Vec<Problem> {
    unreadable
        .into_iter()
        .map(|u| Problem {
            kind: ProblemKind::UnreadableRecord,
            detail: format!("{u}; restore the file from a backup, or remove it"),
            fixed: false,
        })
        .collect()
}

/// Live pointers that cannot be read: named, never fixed by guesswork (their processes
/// are left alone; the task and scope stay held).
fn unreadable_pointers(store: &RunStore, live: &[RunRecord]) -> Vec<Problem> {
    live.iter()
        .filter(|r| r.unreadable.is_some())
        .map(|record| Problem {
            kind: ProblemKind::UnreadablePointer,
            detail: format!(
                "the live pointer of run {} cannot be read ({}); it still holds task `{}` and scope {}: repair or remove {} by hand",
                record.run,
                record.unreadable.as_deref().unwrap_or_default(),
                record.task,
                record.scope.join(" "),
                store.live_path(&record.run).display()
            ),
            fixed: false,
        })
        .collect()
}

/// Live pointers whose worktree is gone; `fix` abandons their runs.
fn stale_pointers(
    store: &RunStore,
    repo_dir: &Path,
    live: &[RunRecord],
    fix: bool,
    not_filed: &mut Vec<NotFiled>,
) -> Vec<Problem> {
    live.iter()
        .filter(|r| r.unreadable.is_none())
        .filter(|r| r.phase != Phase::Queued && !Path::new(&r.worktree).exists())
        .map(|record| {
            let ended = match fix {
                true => reap::abandon(
                    store,
                    repo_dir,
                    record.clone(),
                    "its worktree is gone (doctor)",
                )
                .ok()
                .flatten(),
                false => None,
            };
            let fixed = ended.is_some();
            not_filed.extend(ended.and_then(|e| e.not_filed));
            Problem {
                kind: ProblemKind::StalePointer,
                detail: format!(
                    "run {} is live but its worktree {} is gone",
                    record.run, record.worktree
                ),
                fixed,
            }
        })
        .collect()
}

/// Worktrees no run knows: listed, never removed.
fn orphan_worktrees(store: &RunStore, known: &HashSet<String>) -> Vec<Problem> {
    let Ok(entries) = std::fs::read_dir(store.worktrees_dir()) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|entry| !known.contains(&entry.file_name().to_string_lossy().into_owned()))
        .map(|entry| Problem {
            kind: ProblemKind::OrphanWorktree,
            detail: format!(
                "{} belongs to no run; inspect it, then `git worktree remove` it yourself",
                entry.path().display()
            ),
            fixed: false,
        })
        .collect()
}

/// Refs in a task's ref folder that are no run's branch: what a worker made there beside
/// its branch, when its supervisor could not take it out (killed with kill -9) or ran
/// before git-crew did. `fix` keeps what each points at under `refs/crew/strays/<run>/`
/// and takes it out, as `prune` does — save in the folder of a task with a live run.
fn stray_refs(repo: &crate::git::Repository, store: &RunStore, fix: bool) -> Vec<Problem> {
    match crate::run::strays::settle(repo, store, fix) {
        Ok(strays) => strays
            .into_iter()
            .map(|stray| Problem {
                kind: ProblemKind::StrayTaskRef,
                detail: stray.describe("git crew doctor --fix"),
                fixed: stray.removed,
            })
            .collect(),
        Err(err) => vec![Problem {
            kind: ProblemKind::StrayTaskRef,
            detail: format!(
                "the tasks' ref folders could not be looked at: {}",
                crate::fault::chain(&err)
            ),
            fixed: false,
        }],
    }
}

/// Hooks init installed that lost git-crew's block (a hook manager such as husky wrote
/// its hooks again on `npm install`); `fix` puts the block back.
fn missing_hooks(
    repo: &crate::git::Repository,
    repo_dir: &Path,
    store: &RunStore,
    fix: bool,
) -> Vec<Problem> {
    let Ok(Some(record)) = crate::state::init_record::InitRecord::load(store.root()) else {
        return Vec::new();
    };
    let dir = record
        .hooks_dir
        .clone()
        .unwrap_or_else(|| crate::git::hooks_dir::hooks_dir(repo));
    let missing: Vec<&str> = crate::core::install::SHIMS
        .iter()
        .map(|(name, _)| *name)
        .filter(|name| !crate::git::hooks_dir::has_block(&dir, name).unwrap_or(false))
        .collect();
    if missing.is_empty() {
        return Vec::new();
    }
    let restored = if fix {
        crate::run::install::restore_hooks(repo, repo_dir)
    } else {
        Ok(Vec::new())
    };
    let (restored, failure) = match restored {
        Ok(restored) => (restored, None),
        Err(err) => (Vec::new(), Some(crate::fault::chain(&err))),
    };
    missing
        .into_iter()
        .map(|name| {
            let fixed = restored.iter().any(|(n, _)| *n == name);
            let detail = match (&failure, fixed) {
                (_, true) => format!(
                    "{} had lost git-crew's block; put back",
                    dir.join(name).display()
                ),
                (Some(err), false) => format!(
                    "{} has lost git-crew's block, and it could not be put back: {err}",
                    dir.join(name).display()
                ),
                (None, false) => format!(
                    "{} has lost git-crew's block; `git crew doctor --fix` or `git crew init` puts it back",
                    dir.join(name).display()
                ),
            };
            Problem {
                kind: ProblemKind::HookMissing,
                detail,
                fixed,
            }
        })
        .collect()
}

/// Notes fetched from a remote that the local notes do not contain yet; `fix` merges them
/// by line union.
fn diverged_notes(repo: &crate::git::Repository, fix: bool) -> Vec<Problem> {
    let Ok(tracking) = crate::git::refs::under(repo, "refs/notes/remotes/") else {
        return Vec::new();
    };
    let mut problems = Vec::new();
    for (name, _) in tracking {
        let Some((remote, local)) = doctor::tracked_notes(&name, &crate::git::notes::ALL) else {
            continue;
        };
        let theirs = crate::git::notes::tip(repo, &name).ok().flatten();
        let ours = crate::git::notes::tip(repo, &local).ok().flatten();
        let contained = match (ours, theirs) {
            (_, None) => true,
            (Some(o), Some(t)) => crate::git::merge::is_ancestor(repo, t, o),
            (None, Some(_)) => false,
        };
        if contained {
            continue;
        }
        let fixed = fix && crate::git::sync::merge_into(repo, &local, &name).is_ok();
        problems.push(Problem {
            kind: ProblemKind::NotesDiverged,
            detail: format!(
                "{local} does not contain the notes fetched from {remote}; `git crew sync {remote}` merges them by line union"
            ),
            fixed,
        });
    }
    problems
}

/// The processes working for some run right now (a `CREW_RUN` in their environment), with
/// what doctor asks of them.
fn crew_processes() -> Vec<ProcessFacts> {
    process::all_pids()
        .into_iter()
        .filter_map(|pid| {
            let environ = process::environ(pid);
            let var = |name: &str| process::env_var(&environ, name);
            let run = var("CREW_RUN")?;
            let verifier_dir = var("CREW_VERIFIER_DIR");
            Some(ProcessFacts {
                pid,
                group: process::group_and_session(pid).map(|(group, _)| group),
                run: Some(run),
                worktree: var("CREW_WORKTREE"),
                parent_exe: verifier_dir
                    .as_ref()
                    .and_then(|_| process::parent(pid))
                    .and_then(process::exe),
                verifier_dir,
            })
        })
        .collect()
}
