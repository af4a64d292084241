//! `git crew doctor [--fix]`: find and repair rot, never losing a commit.

use clap::Args;
use serde_json::json;

use super::context::CommandContext;
use super::error::{CrewError, Result};
use super::ui::Report;
use crate::core::flight::WorktreeCleanup;
use crate::core::record::Phase;
use crate::run::supervisor;
use crate::state::runs::RunStore;

/// Find rot: dead supervisors, orphaned worker processes, stale live pointers, orphan
/// worktrees, missing hooks, notes that diverged from a remote's. With --fix, repair what can be repaired without losing work.
///
/// Runs whose supervisor died are marked abandoned by every command (their commits are
/// kept); doctor reports them. Orphan worktrees are listed, never removed.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  git crew doctor\n  git crew doctor --fix")]
pub struct DoctorArgs {
    /// Repair what can be repaired.
    #[arg(long)]
    pub fix: bool,
}

struct Problem {
    kind: &'static str,
    detail: String,
    fixed: bool,
}

pub fn run(ctx: &CommandContext, args: DoctorArgs) -> Result<Report> {
    let repo = ctx.repo()?;
    let repo_dir = ctx.workdir()?.to_path_buf();
    let store = RunStore::new(&crate::git::repo::state_dir(repo));
    let mut problems = Vec::new();

    let before = store.live().map_err(CrewError::internal)?;
    for record in supervisor::reap_dead(&store, &repo_dir, &before).map_err(CrewError::internal)? {
        problems.push(Problem {
            kind: "dead-supervisor",
            detail: if record.outcome == Some(crate::core::record::Outcome::Abandoned) {
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
        });
    }
    // Integrations that died after their target moved: completed (or, when the target
    // never moved, their notes taken back).
    for run in crate::run::integrate::unfinished(&store) {
        let fixed = args.fix
            && crate::sys::lock::Lock::take(
                store.root(),
                "integrate",
                std::time::Duration::from_secs(600),
            )
            .is_ok_and(|_turn| {
                crate::run::integrate::resume(
                    &repo_dir,
                    repo,
                    &store,
                    &run,
                    WorktreeCleanup::Never.as_str(),
                )
                .is_ok()
            });
        problems.push(Problem {
            kind: "integration-unfinished",
            detail: format!(
                "an integrate of run {run} died half-way; `git crew doctor --fix` or `git crew integrate {run}` finishes it"
            ),
            fixed,
        });
    }
    let mut live = store.live().map_err(CrewError::internal)?;
    // Decide from the facts sealed at dispatch, not from what a pointer says.
    for record in &mut live {
        let _ = crate::git::seal::restore(repo, record);
    }
    let known: Vec<String> = live
        .iter()
        .map(|r| r.run.clone())
        .chain(
            store
                .finished()
                .map_err(CrewError::internal)?
                .into_iter()
                .map(|r| r.run),
        )
        .collect();

    // Worker processes of this repository's runs that are no longer live.
    for (pid, run) in crew_processes(&store.root().join("worktrees")) {
        if live.iter().any(|r| r.run == run) {
            continue;
        }
        if args.fix {
            crate::sys::process::kill_group(pid);
        }
        problems.push(Problem {
            kind: "orphan-process",
            detail: format!("process {pid} still works for run {run}, which is not live"),
            fixed: args.fix,
        });
    }

    // Verify commands whose git-crew died (a killed `verify` or `integrate`): nothing
    // will stop them.
    let runs_dir = store.root().join("runs");
    for (pgid, run) in orphan_verifiers(&runs_dir) {
        if args.fix {
            crate::sys::process::kill_group(pgid);
            // Gone before their checkouts are looked at.
            let until = std::time::Instant::now() + std::time::Duration::from_secs(2);
            while !crate::sys::process::environ(pgid).is_empty()
                && std::time::Instant::now() < until
            {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        problems.push(Problem {
            kind: "orphan-verify",
            detail: format!(
                "verify process group {pgid} of run {run} outlived the git-crew that started it"
            ),
            fixed: args.fix,
        });
    }

    // Throwaway checkouts (verify, integrate) that a killed command left registered.
    let busy: Vec<String> = crew_env_runs();
    for (path, run) in crate::git::worktree::throwaways(&repo_dir, &runs_dir) {
        if busy.contains(&run) {
            continue;
        }
        let fixed = args.fix && crate::git::worktree::remove_throwaway(&repo_dir, &path).is_ok();
        problems.push(Problem {
            kind: "stale-checkout",
            detail: format!(
                "{} (run {run}) was left by a verify or integrate that did not finish",
                path.display()
            ),
            fixed,
        });
    }

    // Live pointers that cannot be read: named, never fixed by guesswork (their
    // processes are left alone; the task and scope stay held).
    for record in live.iter().filter(|r| r.unreadable.is_some()) {
        problems.push(Problem {
            kind: "unreadable-pointer",
            detail: format!(
                "the live pointer of run {} cannot be read ({}); it still holds task `{}` and scope {}: repair or remove {} by hand",
                record.run,
                record.unreadable.as_deref().unwrap_or_default(),
                record.task,
                record.scope.join(" "),
                store.live_path(&record.run).display()
            ),
            fixed: false,
        });
    }

    // Live pointers whose worktree is gone.
    for record in live.iter().filter(|r| r.unreadable.is_none()) {
        if record.phase != Phase::Queued && !std::path::Path::new(&record.worktree).exists() {
            let fixed = args.fix
                && supervisor::abandon(
                    &store,
                    &repo_dir,
                    record.clone(),
                    "its worktree is gone (doctor)",
                )
                .is_ok_and(|r| r.is_some());
            problems.push(Problem {
                kind: "stale-pointer",
                detail: format!(
                    "run {} is live but its worktree {} is gone",
                    record.run, record.worktree
                ),
                fixed,
            });
        }
    }

    // Worktrees no run knows: listed, never removed.
    if let Ok(entries) = std::fs::read_dir(store.root().join("worktrees")) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !known.contains(&name) {
                problems.push(Problem {
                    kind: "orphan-worktree",
                    detail: format!(
                        "{} belongs to no run; inspect it, then `git worktree remove` it yourself",
                        entry.path().display()
                    ),
                    fixed: false,
                });
            }
        }
    }

    // Hooks init installed that are gone.
    if let Ok(Some(record)) = crate::state::init_record::InitRecord::load(store.root()) {
        let dir = record
            .hooks_dir
            .clone()
            .unwrap_or_else(|| crate::git::hooks_dir::hooks_dir(repo));
        for name in ["pre-commit", "post-merge"] {
            let text = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
            if !text.contains(crate::core::hookblock::BEGIN) {
                problems.push(Problem {
                    kind: "hook-missing",
                    detail: format!(
                        "{} has lost git-crew's block; run `git crew init` to put it back",
                        dir.join(name).display()
                    ),
                    fixed: false,
                });
            }
        }
    }

    // Notes fetched from a remote that the local notes do not contain yet.
    if let Ok(tracking) = crate::git::refs::under(repo, "refs/notes/remotes/") {
        for (name, _) in tracking {
            let Some((remote, leaf)) = name
                .strip_prefix("refs/notes/remotes/")
                .and_then(|rest| rest.split_once('/'))
            else {
                continue;
            };
            let local = format!("refs/notes/{leaf}");
            if !crate::git::notes::ALL.contains(&local.as_str()) {
                continue;
            }
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
            let fixed = args.fix && crate::git::sync::merge_into(repo, &local, &name).is_ok();
            problems.push(Problem {
                kind: "notes-diverged",
                detail: format!(
                    "{local} does not contain the notes fetched from {remote}; `git crew sync {remote}` merges them by line union"
                ),
                fixed,
            });
        }
    }

    let open = problems.iter().filter(|p| !p.fixed).count();
    let list: Vec<_> = problems
        .iter()
        .map(|p| json!({"kind": p.kind, "detail": p.detail, "fixed": p.fixed}))
        .collect();
    let human = if problems.is_empty() {
        "no problems found".to_string()
    } else {
        problems
            .iter()
            .map(|p| {
                format!(
                    "{}{}: {}",
                    if p.fixed { "fixed " } else { "" },
                    p.kind,
                    p.detail
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let fence = crate::core::dispatch::describe_fence(crate::sys::fence::kernel_abi());
    let human = format!("{human}\nfence: {fence}");
    let mut report = Report::new(json!({"problems": list, "fence": fence}), human);
    if open > 0 {
        report.status = super::ui::Status::Failed(
            CrewError::check(
                "problems-found",
                format!("{open} problem(s) need attention"),
            )
            .hinted(if args.fix {
                "the rest needs a person"
            } else {
                "`git crew doctor --fix` repairs what it can"
            }),
        );
    }
    Ok(report)
}

/// Processes working for a run of this repository — a `CREW_RUN` in their environment
/// and a `CREW_WORKTREE` under `worktrees` — as (process group, run).
fn crew_processes(worktrees: &std::path::Path) -> Vec<(u32, String)> {
    let prefix = worktrees.to_string_lossy().into_owned();
    let mut out = Vec::new();
    for pid in crate::sys::process::all_pids() {
        let environ = crate::sys::process::environ(pid);
        let var = |name: &str| crate::sys::process::env_var(&environ, name);
        let (Some(run), Some(worktree)) = (var("CREW_RUN"), var("CREW_WORKTREE")) else {
            continue;
        };
        if !worktree.starts_with(&prefix) {
            continue;
        }
        let pgid = crate::sys::process::group_and_session(pid).map_or(pid, |(group, _)| group);
        if !out.iter().any(|(g, _)| *g == pgid) {
            out.push((pgid, run));
        }
    }
    out
}

/// Verify commands of this repository's runs whose parent is no longer a git-crew
/// process, as (process group, run): their group leader carries `CREW_VERIFIER_DIR` under
/// `runs_dir` and `CREW_RUN`.
fn orphan_verifiers(runs_dir: &std::path::Path) -> Vec<(u32, String)> {
    let prefix = runs_dir.to_string_lossy().into_owned();
    // Compared without the " (deleted)" a rebuilt or reinstalled binary leaves.
    let exe = |pid: &str| {
        std::fs::read_link(format!("/proc/{pid}/exe"))
            .ok()
            .map(|p| {
                let text = p.to_string_lossy().into_owned();
                text.strip_suffix(" (deleted)")
                    .map(String::from)
                    .unwrap_or(text)
            })
    };
    let me = exe("self");
    let mut out = Vec::new();
    for pid in crate::sys::process::all_pids() {
        if crate::sys::process::group_and_session(pid).map(|(g, _)| g) != Some(pid) {
            continue;
        }
        let environ = crate::sys::process::environ(pid);
        let var = |name: &str| crate::sys::process::env_var(&environ, name);
        let (Some(run), Some(dir)) = (var("CREW_RUN"), var("CREW_VERIFIER_DIR")) else {
            continue;
        };
        if !dir.starts_with(&prefix) {
            continue;
        }
        // Any git-crew parent counts: the same binary, or one named git-crew elsewhere.
        let parent_is_crew = crate::sys::process::parent(pid)
            .and_then(|ppid| exe(&ppid.to_string()))
            .is_some_and(|parent| Some(&parent) == me.as_ref() || parent.ends_with("/git-crew"));
        if !parent_is_crew {
            out.push((pid, run));
        }
    }
    out
}

/// The runs some process is working for right now (a `CREW_RUN` in its environment).
fn crew_env_runs() -> Vec<String> {
    crate::sys::process::all_pids()
        .into_iter()
        .filter_map(|pid| {
            crate::sys::process::env_var(&crate::sys::process::environ(pid), "CREW_RUN")
        })
        .collect()
}
