//! What `doctor` decides, as values: the kinds of rot it names, which processes work for
//! a run that is no longer live, which verify commands outlived the git-crew that started
//! them, and which fetched notes refs it compares with the local ones (which refs in a
//! task's ref folder are strays is `core::strays`'s decision). The facts (the
//! process table and each process's environment, live runs, refs) are gathered by
//! `run::doctor`, which also carries out the repairs; no processes, no files, no git here.

use serde::Serialize;

/// One kind of rot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ProblemKind {
    /// A run lost its supervisor (every command that acts marks it abandoned).
    DeadSupervisor,
    /// An integrate died half-way.
    IntegrationUnfinished,
    /// A worker process still works for a run that is not live.
    OrphanProcess,
    /// A verify command outlived the git-crew that started it.
    OrphanVerify,
    /// A throwaway checkout (verify, integrate) a killed command left registered.
    StaleCheckout,
    /// A live pointer that cannot be read.
    UnreadablePointer,
    /// A finished run's record that cannot be read: the run commands pass over it.
    UnreadableRecord,
    /// A live run whose worktree is gone.
    StalePointer,
    /// A worktree no run knows.
    OrphanWorktree,
    /// A hook init installed lost git-crew's block.
    HookMissing,
    /// Local notes that do not contain the notes fetched from a remote.
    NotesDiverged,
    /// A ref in a task's ref folder (`refs/heads/crew/<task>/`) that is no run's branch.
    StrayTaskRef,
}

impl ProblemKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProblemKind::DeadSupervisor => "dead-supervisor",
            ProblemKind::IntegrationUnfinished => "integration-unfinished",
            ProblemKind::OrphanProcess => "orphan-process",
            ProblemKind::OrphanVerify => "orphan-verify",
            ProblemKind::StaleCheckout => "stale-checkout",
            ProblemKind::UnreadablePointer => "unreadable-pointer",
            ProblemKind::UnreadableRecord => "unreadable-record",
            ProblemKind::StalePointer => "stale-pointer",
            ProblemKind::OrphanWorktree => "orphan-worktree",
            ProblemKind::HookMissing => "hook-missing",
            ProblemKind::NotesDiverged => "notes-diverged",
            ProblemKind::StrayTaskRef => "stray-task-ref",
        }
    }
}

/// One problem found, and whether `--fix` repaired it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Problem {
    pub kind: ProblemKind,
    pub detail: String,
    pub fixed: bool,
}

/// One process of the process table, as far as doctor asks about it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProcessFacts {
    pub pid: u32,
    /// Its process group, when it could be read.
    pub group: Option<u32>,
    /// `CREW_RUN` in its environment.
    pub run: Option<String>,
    /// `CREW_WORKTREE` in its environment.
    pub worktree: Option<String>,
    /// `CREW_VERIFIER_DIR` in its environment.
    pub verifier_dir: Option<String>,
    /// The executable of its parent (read only for a process with `CREW_VERIFIER_DIR`).
    pub parent_exe: Option<String>,
}

/// The process groups working for a run of this repository — a `CREW_RUN` and a
/// `CREW_WORKTREE` under `worktrees` — whose run is not among `live`, as (group, run).
/// A group is named once, for the first of its processes.
pub fn orphan_processes(
    processes: &[ProcessFacts],
    worktrees: &str,
    live: &[&str],
) -> Vec<(u32, String)> {
    let mut groups: Vec<(u32, String)> = Vec::new();
    for process in processes {
        let (Some(run), Some(worktree)) = (&process.run, &process.worktree) else {
            continue;
        };
        if !worktree.starts_with(worktrees) {
            continue;
        }
        let group = process.group.unwrap_or(process.pid);
        if !groups.iter().any(|(g, _)| *g == group) {
            groups.push((group, run.clone()));
        }
    }
    groups.retain(|(_, run)| !live.contains(&run.as_str()));
    groups
}

/// The runs of this repository some process works for right now: a `CREW_RUN` with a
/// `CREW_WORKTREE` under `worktrees` or a `CREW_VERIFIER_DIR` under `runs_dir`. Another
/// repository's run of the same id is not this one's.
pub fn busy_runs(processes: &[ProcessFacts], worktrees: &str, runs_dir: &str) -> Vec<String> {
    processes
        .iter()
        .filter(|p| {
            p.worktree
                .as_deref()
                .is_some_and(|w| w.starts_with(worktrees))
                || p.verifier_dir
                    .as_deref()
                    .is_some_and(|d| d.starts_with(runs_dir))
        })
        .filter_map(|p| p.run.clone())
        .collect()
}

/// Verify commands of this repository's runs whose parent is no longer a git-crew
/// process, as (process group, run): their group leader carries `CREW_VERIFIER_DIR`
/// under `runs_dir` and `CREW_RUN`. Any git-crew parent counts: `me` (this binary), or
/// one named `git-crew` elsewhere.
pub fn orphan_verifiers(
    processes: &[ProcessFacts],
    runs_dir: &str,
    me: Option<&str>,
) -> Vec<(u32, String)> {
    processes
        .iter()
        .filter(|p| p.group == Some(p.pid))
        .filter_map(|p| {
            let (Some(run), Some(dir)) = (&p.run, &p.verifier_dir) else {
                return None;
            };
            if !dir.starts_with(runs_dir) {
                return None;
            }
            let parent_is_crew = p
                .parent_exe
                .as_deref()
                .is_some_and(|parent| Some(parent) == me || parent.ends_with("/git-crew"));
            (!parent_is_crew).then(|| (p.pid, run.clone()))
        })
        .collect()
}

/// For a notes ref fetched from a remote (`refs/notes/remotes/<remote>/<leaf>`) whose
/// local counterpart is one of git-crew's (`ours`): (the remote, the local ref).
pub fn tracked_notes(tracking: &str, ours: &[&str]) -> Option<(String, String)> {
    let (remote, leaf) = tracking
        .strip_prefix("refs/notes/remotes/")
        .and_then(|rest| rest.split_once('/'))?;
    let local = format!("refs/notes/{leaf}");
    ours.contains(&local.as_str())
        .then(|| (remote.to_string(), local))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process(pid: u32, group: u32, run: &str, worktree: &str) -> ProcessFacts {
        ProcessFacts {
            pid,
            group: Some(group),
            run: Some(run.into()),
            worktree: Some(worktree.into()),
            ..ProcessFacts::default()
        }
    }

    fn verifier(pid: u32, group: u32, run: &str, dir: &str, parent: Option<&str>) -> ProcessFacts {
        ProcessFacts {
            pid,
            group: Some(group),
            run: Some(run.into()),
            verifier_dir: Some(dir.into()),
            parent_exe: parent.map(String::from),
            ..ProcessFacts::default()
        }
    }

    #[test]
    fn every_kind_reads_as_it_serializes() {
        for kind in [
            ProblemKind::DeadSupervisor,
            ProblemKind::IntegrationUnfinished,
            ProblemKind::OrphanProcess,
            ProblemKind::OrphanVerify,
            ProblemKind::StaleCheckout,
            ProblemKind::UnreadablePointer,
            ProblemKind::StalePointer,
            ProblemKind::OrphanWorktree,
            ProblemKind::HookMissing,
            ProblemKind::NotesDiverged,
            ProblemKind::StrayTaskRef,
        ] {
            assert_eq!(
                serde_json::to_value(kind).unwrap(),
                serde_json::Value::from(kind.as_str())
            );
        }
    }

    #[test]
    fn a_worker_of_a_run_that_is_not_live_is_an_orphan_once_per_group() {
        let processes = [
            process(10, 10, "r1", "/repo/.git/crew/worktrees/r1"),
            process(11, 10, "r1", "/repo/.git/crew/worktrees/r1/sub"),
            process(20, 20, "r2", "/repo/.git/crew/worktrees/r2"),
            // Another repository's run, and a process without a worktree.
            process(30, 30, "r3", "/other/.git/crew/worktrees/r3"),
            ProcessFacts {
                pid: 40,
                run: Some("r4".into()),
                ..ProcessFacts::default()
            },
            // An unreadable group counts as the process's own.
            ProcessFacts {
                group: None,
                ..process(50, 0, "r5", "/repo/.git/crew/worktrees/r5")
            },
        ];
        assert_eq!(
            orphan_processes(&processes, "/repo/.git/crew/worktrees", &["r2"]),
            [(10, "r1".to_string()), (50, "r5".to_string())]
        );
    }

    #[test]
    fn a_verifier_is_an_orphan_when_no_git_crew_is_its_parent() {
        let runs = "/repo/.git/crew/runs";
        let dir = "/repo/.git/crew/runs/r1/verify";
        let me = Some("/usr/bin/git-crew-dev");
        let processes = [
            verifier(1, 1, "r1", dir, Some("/bin/sh")),
            verifier(2, 2, "r2", dir, me),
            verifier(3, 3, "r3", dir, Some("/opt/bin/git-crew")),
            // Not a group leader; another repository's; a parent gone.
            verifier(4, 1, "r4", dir, Some("/bin/sh")),
            verifier(5, 5, "r5", "/other/.git/crew/runs/r5", Some("/bin/sh")),
            verifier(6, 6, "r6", dir, None),
        ];
        assert_eq!(
            orphan_verifiers(&processes, runs, me),
            [(1, "r1".to_string()), (6, "r6".to_string())]
        );
    }

    #[test]
    fn only_git_crews_notes_fetched_from_a_remote_are_compared() {
        let ours = ["refs/notes/crew", "refs/notes/crew-ledger"];
        assert_eq!(
            tracked_notes("refs/notes/remotes/origin/crew", &ours),
            Some(("origin".to_string(), "refs/notes/crew".to_string()))
        );
        assert_eq!(
            tracked_notes("refs/notes/remotes/origin/commits", &ours),
            None
        );
        assert_eq!(tracked_notes("refs/notes/remotes/origin", &ours), None);
        assert_eq!(tracked_notes("refs/notes/crew", &ours), None);
    }

    #[test]
    fn a_run_is_busy_only_by_a_process_of_this_repository() {
        let p = |run: &str, worktree: Option<&str>, verifier: Option<&str>| ProcessFacts {
            run: Some(run.into()),
            worktree: worktree.map(String::from),
            verifier_dir: verifier.map(String::from),
            ..ProcessFacts::default()
        };
        let processes = [
            p("a", Some("/r/.git/crew/worktrees/a"), None),
            p("b", None, Some("/r/.git/crew/runs/b/verifier-again")),
            p("c", Some("/other/.git/crew/worktrees/c"), None),
            p("d", None, None),
        ];
        assert_eq!(
            busy_runs(&processes, "/r/.git/crew/worktrees", "/r/.git/crew/runs"),
            ["a", "b"]
        );
    }
}
