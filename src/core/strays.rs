//! Refs a worker leaves in its task's ref folder, as values. The write fence lets a run's
//! processes write `refs/heads/crew/<task>/` so that they can commit on the run's branch
//! `crew/<task>/<run>`; it cannot stop them making other refs there (`git branch
//! crew/<task>/hotfix`, `git update-ref refs/heads/crew/<task>/a/b`). Only the run's
//! branch belongs in the folder, and the branches of the task's earlier runs that were
//! there when the run was dispatched: anything else a run leaves is a *stray*. Strays are
//! taken out of the folder and what they point at is kept under
//! `refs/crew/strays/<run>/<name>`, so nothing is lost and nothing is left looking like
//! a run's branch. (Not under `refs/crew/attempts/<run>/`: that name is a ref of its own,
//! and git cannot hold a ref and a folder of refs under one name.)
//!
//! Two deciders: [`sweep`] for the supervisor, which compares the folder with what it
//! held at dispatch; [`leftovers`] for `doctor` and `prune`, which knows no snapshot and
//! takes every ref in a task's folder that is no known run's branch. [`keep_names`] says
//! where each is kept (a worker's ref name is untrusted input) and [`discrepancies`] how a
//! run's result names them. The facts (refs as git reads them, loose files it does not)
//! come from `git::refs`; nothing here reads git or files.

use serde::{Deserialize, Serialize};

/// Where the branches of runs live.
pub const HEADS: &str = "refs/heads/crew/";
/// Where strays are kept, one folder per run.
pub const KEPT: &str = "refs/crew/strays/";

/// A task's ref folder, as a full ref name prefix: `refs/heads/crew/<task>/`.
pub fn folder(task: &str) -> String {
    format!("{HEADS}{task}/")
}

/// A run's own branch, as a full ref name.
pub fn own_branch(task: &str, run: &str) -> String {
    format!("{HEADS}{task}/{run}")
}

/// Where run `run`'s strays are kept: `refs/crew/strays/<run>/`.
pub fn kept_folder(run: &str) -> String {
    format!("{KEPT}{run}/")
}

/// A ref name for people: `crew/<task>/hotfix` for `refs/heads/crew/<task>/hotfix`.
pub fn short(name: &str) -> &str {
    name.strip_prefix("refs/heads/").unwrap_or(name)
}

/// Something found in a ref folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Found {
    /// Its full name (`refs/heads/crew/<task>/hotfix`).
    pub name: String,
    /// The object it points at (hex), when that object is in the store.
    pub target: Option<String>,
    /// Whether git reads it as a ref. A loose file git does not (a name git refuses, such
    /// as `x.lock`, content that names no object, a symbolic link) is no ref to git, but
    /// it is a leftover all the same.
    pub git_reads: bool,
}

/// A ref that was in the folder when the run started and points elsewhere now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Moved {
    pub name: String,
    pub from: Option<String>,
    pub to: Option<String>,
}

/// What the supervisor found at the end of an attempt.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sweep {
    /// New in the folder and not the run's branch: the run's doing, taken out.
    pub strays: Vec<Found>,
    /// There before the run, moved since: named, left where they are (another run's
    /// branch is that run's; `prune` or `integrate` may have a say in it meanwhile).
    pub moved: Vec<Moved>,
}

/// The strays run `run` of `task` left: what is in its task's folder `now` that was not
/// there `before` (at dispatch) and is not its own branch. Only one run of a task is live
/// at a time and no other task's folder nests in this one (dispatch refuses both), so
/// nothing else makes refs here while the run is live.
pub fn sweep(task: &str, run: &str, before: &[Found], now: &[Found]) -> Sweep {
    let folder = folder(task);
    let own = own_branch(task, run);
    let mut out = Sweep::default();
    for found in now {
        if !found.name.starts_with(&folder) || found.name == own {
            continue;
        }
        match before.iter().find(|b| b.name == found.name) {
            None => out.strays.push(found.clone()),
            Some(was) if found.git_reads && was.git_reads && was.target != found.target => {
                out.moved.push(Moved {
                    name: found.name.clone(),
                    from: was.target.clone(),
                    to: found.target.clone(),
                });
            }
            Some(_) => {}
        }
    }
    out
}

/// A run git-crew knows (a live pointer or a finished run's record).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Known {
    pub run: String,
    /// Empty when it is not known (a live pointer that cannot be read).
    pub task: String,
    pub live: bool,
}

/// A ref in some task's folder that is no known run's branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leftover {
    pub found: Found,
    pub task: String,
    /// The task's latest run: where it is kept (`refs/crew/strays/<run>/`). Which run made
    /// it is not known; the latest is the last one that could.
    pub run: String,
    /// The task has a live run: it is named, not moved — that run's supervisor takes
    /// what its worker makes when the attempt ends, and a git of its may be at work in
    /// the folder right now.
    pub live: bool,
}

/// The strays among everything found under `refs/heads/crew/`, for `doctor` and
/// `prune`: in the folder of a task git-crew knows (the deepest, when task ids nest),
/// and not the branch `crew/<task>/<run>` of any run it knows. Refs under a folder no
/// known run's task names are not git-crew's and are left out. In the folder of a task
/// with a live run, only what git reads as a ref is named: a loose file git does not read
/// there may be a lock of a git at work.
pub fn leftovers(found: &[Found], known: &[Known]) -> Vec<Leftover> {
    use std::collections::{HashMap, HashSet};
    // What every known run says, gathered once: the branches they own, and for each task
    // (by its folder) whether a run of it is live and its latest run (run ids sort by the
    // time they were made).
    let owned: HashSet<String> = known.iter().map(|k| own_branch(&k.task, &k.run)).collect();
    let taskless: Vec<String> = known
        .iter()
        .filter(|k| k.task.is_empty())
        .map(|k| format!("/{}", k.run))
        .collect();
    let mut tasks: HashMap<String, (&str, bool, &str)> = HashMap::new();
    for k in known.iter().filter(|k| !k.task.is_empty()) {
        let task = tasks
            .entry(folder(&k.task))
            .or_insert((k.task.as_str(), false, k.run.as_str()));
        task.1 |= k.live;
        task.2 = task.2.max(k.run.as_str());
    }
    let mut out = Vec::new();
    for f in found {
        if owned.contains(&f.name) || taskless.iter().any(|end| f.name.ends_with(end.as_str())) {
            continue;
        }
        // The deepest folder of a known task that holds it.
        let Some((task, live, run)) = f
            .name
            .match_indices('/')
            .filter_map(|(i, _)| tasks.get(&f.name[..=i]))
            .next_back()
        else {
            continue;
        };
        if *live && !f.git_reads {
            continue;
        }
        out.push(Leftover {
            found: f.clone(),
            task: task.to_string(),
            run: run.to_string(),
            live: *live,
        });
    }
    out
}

/// The most folders a kept name keeps; deeper ones are joined into the last.
const MAX_DEPTH: usize = 8;
/// The longest a component of a kept name gets.
const MAX_COMPONENT: usize = 64;

/// A name made by a worker, relative to its task's folder (`hotfix`, `a/b`), made safe to
/// keep: every component only letters, digits, `-`, `_` and `.` (anything else is `_`),
/// never starting or ending with `.`, never `..` nor `.lock` at the end, at most 64
/// characters; no empty component; at most eight folders deep. A name git accepts in
/// the usual spelling (`hotfix`, `a/b`, `fix-1.2`) is kept as it is.
pub fn sanitize(rel: &str) -> String {
    let mut parts: Vec<String> = rel
        .split('/')
        .filter(|p| !p.is_empty())
        .map(|part| {
            let mut p: String = part
                .chars()
                .map(|c| {
                    if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                        c
                    } else {
                        '_'
                    }
                })
                .take(MAX_COMPONENT)
                .collect();
            while p.contains("..") {
                p = p.replace("..", "._");
            }
            if p.starts_with('.') {
                p.insert(0, '_');
            }
            if p.ends_with('.') || p.ends_with(".lock") {
                p.push('_');
            }
            p
        })
        .collect();
    if parts.len() > MAX_DEPTH {
        let tail = parts.split_off(MAX_DEPTH - 1).join("_");
        parts.push(tail.chars().take(MAX_COMPONENT).collect());
    }
    if parts.is_empty() {
        "ref".to_string()
    } else {
        parts.join("/")
    }
}

/// Whether two ref names cannot both exist: the same, or one a folder of the other.
fn clash(a: &str, b: &str) -> bool {
    a == b || a.starts_with(&format!("{b}/")) || b.starts_with(&format!("{a}/"))
}

/// Where each of `names` (strays of `task`'s folder, full names) is kept for `run`:
/// `refs/crew/strays/<run>/<sanitized name>`, made unique against `existing` (the refs
/// under `refs/crew/strays/<run>/` already) and each other by a `-2`, `-3`, ... on its
/// first component — two refs cannot be one name, nor one a folder of the other.
pub fn keep_names(run: &str, task: &str, names: &[&str], existing: &[String]) -> Vec<String> {
    let base = kept_folder(run);
    let prefix = folder(task);
    let mut taken: Vec<String> = existing.to_vec();
    let mut out = Vec::new();
    for name in names {
        let rel = name
            .strip_prefix(&prefix)
            .unwrap_or_else(|| short(name).trim_start_matches("crew/"));
        let rel = sanitize(rel);
        let (first, rest) = match rel.split_once('/') {
            Some((first, rest)) => (first.to_string(), format!("/{rest}")),
            None => (rel.clone(), String::new()),
        };
        let mut candidate = format!("{base}{rel}");
        let mut n = 2;
        while taken.iter().any(|t| clash(t, &candidate)) {
            candidate = format!("{base}{first}-{n}{rest}");
            n += 1;
        }
        taken.push(candidate.clone());
        out.push(candidate);
    }
    out
}

/// What became of one stray.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Taken {
    /// The stray's full name.
    #[serde(rename = "ref")]
    pub name: String,
    /// What it pointed at (hex), when that is in the store.
    pub target: Option<String>,
    /// Where that is kept now (`null` when it pointed at nothing to keep, or it stays).
    pub kept_as: Option<String>,
    /// It is gone from the task's folder.
    pub removed: bool,
    /// Why it is still there, when it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// A commit id for people: its first 12 characters.
fn abbrev(id: &str) -> &str {
    &id[..id.len().min(12)]
}

/// A stray `doctor` or `prune` found: in a task's ref folder, no run's branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Stray {
    /// Its full name.
    #[serde(rename = "ref")]
    pub name: String,
    pub task: String,
    /// What it points at (hex), when that is in the store.
    pub target: Option<String>,
    /// Whether git reads it as a ref (else it is a loose file git does not read).
    pub git_reads: bool,
    /// Where what it points at is kept (or would be, when nothing was changed).
    pub kept_as: Option<String>,
    /// It was taken out of the folder.
    pub removed: bool,
    /// Why it is still there, when taking it out failed.
    pub left: Option<String>,
    /// Its task has a live run: named, left alone.
    pub live: bool,
}

impl Stray {
    /// One line for people; `fix` is the command that takes it out, for one still there.
    pub fn describe(&self, fix: &str) -> String {
        let what = if self.git_reads {
            format!(
                "{} ({})",
                short(&self.name),
                self.target.as_deref().map_or("no object", abbrev)
            )
        } else {
            format!("{} (a file git does not read as a ref)", short(&self.name))
        };
        let place = format!(
            "in the ref folder of task {} and no run's branch",
            self.task
        );
        let keep = match (&self.kept_as, &self.target) {
            (Some(kept), Some(target)) => format!("{} kept as {kept}", abbrev(target)),
            _ => "nothing to keep (it points at no object in the store)".to_string(),
        };
        if self.removed {
            format!("{what} was {place}: taken out; {keep}")
        } else if self.live {
            format!(
                "{what} is {place}; left alone while the task has a live run (its supervisor takes what its worker leaves)"
            )
        } else if let Some(why) = &self.left {
            format!("{what} is {place}; it could not be taken out: {why}")
        } else {
            format!("{what} is {place}; `{fix}` takes it out: {keep}")
        }
    }
}

/// What became of a stray, for people: `removed; 0123456789ab kept as refs/crew/...`.
pub fn outcome(taken: &Taken) -> String {
    if !taken.removed {
        return format!(
            "still there: {}",
            taken.error.as_deref().unwrap_or("it was not removed")
        );
    }
    match (&taken.kept_as, &taken.target) {
        (Some(kept), Some(target)) => format!("removed; {} kept as {kept}", abbrev(target)),
        _ => "removed (it pointed at no object in the store)".to_string(),
    }
}

/// The lines a run's `discrepancies` gets for its strays: one per stray this process took
/// (`taken`), one per ref it found moved, and one per ref kept under
/// `refs/crew/strays/<run>/` (`kept`) that none of those names — kept by an earlier
/// supervisor of the run (before it parked) or by `doctor`/`prune` meanwhile.
pub fn discrepancies(
    task: &str,
    run: &str,
    taken: &[Taken],
    moved: &[Moved],
    kept: &[String],
) -> Vec<String> {
    let own = short(&own_branch(task, run)).to_string();
    let mut out: Vec<String> = taken
        .iter()
        .map(|t| {
            format!(
                "the worker made {} in its task's ref folder, beside its branch {own}: {}",
                short(&t.name),
                outcome(t)
            )
        })
        .collect();
    out.extend(moved.iter().map(|m| {
        format!(
            "{}, which was there when the run started, moved from {} to {} while it ran",
            short(&m.name),
            m.from.as_deref().map_or("nothing", abbrev),
            m.to.as_deref().map_or("nothing", abbrev),
        )
    }));
    out.extend(
        kept.iter()
            .filter(|k| !taken.iter().any(|t| t.kept_as.as_ref() == Some(*k)))
            .map(|k| {
                format!(
                    "{k} keeps a ref the run left in its task's ref folder (crew/{task}/), beside its branch {own}"
                )
            }),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(name: &str, target: Option<&str>) -> Found {
        Found {
            name: name.to_string(),
            target: target.map(String::from),
            git_reads: true,
        }
    }

    fn junk(name: &str) -> Found {
        Found {
            git_reads: false,
            ..found(name, None)
        }
    }

    const RUN: &str = "20260101-000000-0002";
    const OLD: &str = "20260101-000000-0001";

    #[test]
    fn a_sweep_takes_what_is_new_and_not_the_runs_branch() {
        let own = own_branch("t", RUN);
        let old = own_branch("t", OLD);
        let before = [found(&old, Some("a1")), found(&own, Some("b0"))];
        let now = [
            found(&old, Some("a1")),
            found(&own, Some("b1")),
            found("refs/heads/crew/t/hotfix", Some("c1")),
            found("refs/heads/crew/t/a/b", Some("c2")),
            junk("refs/heads/crew/t/x.lock"),
            // Another task's folder, and a task whose name begins with this one's.
            found("refs/heads/crew/u/hotfix", Some("c3")),
            found("refs/heads/crew/tt/x", Some("c3")),
        ];
        let sweep = sweep("t", RUN, &before, &now);
        let names: Vec<&str> = sweep.strays.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "refs/heads/crew/t/hotfix",
                "refs/heads/crew/t/a/b",
                "refs/heads/crew/t/x.lock"
            ]
        );
        assert!(sweep.moved.is_empty());
    }

    #[test]
    fn a_ref_there_before_is_never_the_runs_and_is_named_when_it_moved() {
        let old = own_branch("t", OLD);
        let before = [
            found(&old, Some("a1")),
            found("refs/heads/crew/t/left", Some("l1")),
            junk("refs/heads/crew/t/x.lock"),
        ];
        // A run's branch re-made after prune deleted it is new all the same.
        let now = [
            found(&old, Some("a2")),
            found("refs/heads/crew/t/left", Some("l1")),
            junk("refs/heads/crew/t/x.lock"),
        ];
        let sweep = sweep("t", RUN, &before, &now);
        assert!(sweep.strays.is_empty());
        assert_eq!(
            sweep.moved,
            [Moved {
                name: old.clone(),
                from: Some("a1".into()),
                to: Some("a2".into())
            }]
        );
        let sweep = super::sweep("t", RUN, &[], &[found(&old, Some("a1"))]);
        assert_eq!(sweep.strays.len(), 1);
    }

    fn known(run: &str, task: &str, live: bool) -> Known {
        Known {
            run: run.into(),
            task: task.into(),
            live,
        }
    }

    #[test]
    fn leftovers_are_refs_in_a_known_tasks_folder_that_no_known_run_owns() {
        let runs = [
            known(OLD, "t", false),
            known(RUN, "t", false),
            known("20260101-000000-0003", "api/v2", false),
            known("20260101-000000-0004", "api", false),
        ];
        let refs = [
            found(&own_branch("t", RUN), Some("a")),
            found(&own_branch("t", OLD), Some("a")),
            found("refs/heads/crew/t/hotfix", Some("b")),
            junk("refs/heads/crew/t/broken name"),
            found("refs/heads/crew/api/v2/x", Some("c")),
            found("refs/heads/crew/api/y", Some("c")),
            found(&own_branch("api/v2", "20260101-000000-0003"), Some("a")),
            // A folder no known run's task names: not git-crew's.
            found("refs/heads/crew/mine", Some("d")),
            found("refs/heads/crew/other/z", Some("d")),
        ];
        let left = leftovers(&refs, &runs);
        let got: Vec<(&str, &str, &str)> = left
            .iter()
            .map(|l| (l.found.name.as_str(), l.task.as_str(), l.run.as_str()))
            .collect();
        let expected = [
            ("refs/heads/crew/t/hotfix", "t", RUN),
            ("refs/heads/crew/t/broken name", "t", RUN),
            ("refs/heads/crew/api/v2/x", "api/v2", "20260101-000000-0003"),
            ("refs/heads/crew/api/y", "api", "20260101-000000-0004"),
        ];
        assert_eq!(got, expected);
    }

    #[test]
    fn a_live_tasks_folder_names_refs_only_and_moves_none() {
        let runs = [known(OLD, "t", false), known(RUN, "t", true)];
        let refs = [
            found("refs/heads/crew/t/hotfix", Some("b")),
            junk(&format!("refs/heads/crew/t/{RUN}.lock")),
        ];
        let left = leftovers(&refs, &runs);
        assert_eq!(left.len(), 1);
        assert!(left[0].live);
        assert_eq!(left[0].run, RUN);
        // A live run whose pointer cannot be read owns its branch all the same.
        let runs = [known(OLD, "t", false), known(RUN, "", true)];
        let refs = [found(&own_branch("t", RUN), Some("a"))];
        assert!(leftovers(&refs, &runs).is_empty());
    }

    #[test]
    fn a_workers_name_is_made_safe_and_a_usual_one_kept_as_it_is() {
        for usual in ["hotfix", "a/b", "fix-1.2", "x_y/z-9"] {
            assert_eq!(sanitize(usual), usual);
        }
        let cases = [
            ("x.lock", "x.lock_"),
            ("a..b", "a._b"),
            ("...", "_._._"),
            (".hidden/y", "_.hidden/y"),
            ("sp ace/t\tab", "sp_ace/t_ab"),
            ("a//b/", "a/b"),
            ("@{u}", "__u_"),
            ("ünï", "_n_"),
            ("end.", "end._"),
            ("", "ref"),
            ("///", "ref"),
            ("a/b/c/d/e/f/g/h/i/j", "a/b/c/d/e/f/g/h_i_j"),
        ];
        for (raw, safe) in cases {
            assert_eq!(sanitize(raw), safe, "{raw:?}");
        }
        assert_eq!(sanitize(&"z".repeat(300)).len(), MAX_COMPONENT);
        // Whatever comes in, what goes out is a name git takes.
        for raw in [
            "..lock",
            "a.lock/b.lock",
            ".",
            "..",
            "a/./b",
            "-x",
            "x~1^2:3?*[",
            "a\\b",
        ] {
            let safe = sanitize(raw);
            assert!(
                safe.split('/').all(|p| !p.is_empty()
                    && !p.starts_with('.')
                    && !p.ends_with('.')
                    && !p.ends_with(".lock")
                    && !p.contains("..")
                    && p.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))),
                "{raw:?} -> {safe:?}"
            );
        }
    }

    #[test]
    fn kept_names_never_clash() {
        let base = kept_folder(RUN);
        let names = [
            "refs/heads/crew/t/hotfix",
            "refs/heads/crew/t/a/b",
            "refs/heads/crew/t/a b",
            "refs/heads/crew/t/a_b",
        ];
        let existing = vec![format!("{base}hotfix"), format!("{base}a")];
        let kept = keep_names(RUN, "t", &names, &existing);
        assert_eq!(
            kept,
            [
                format!("{base}hotfix-2"),
                format!("{base}a-2/b"),
                format!("{base}a_b"),
                format!("{base}a_b-2"),
            ]
        );
        let all: Vec<&String> = existing.iter().chain(&kept).collect();
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert!(!clash(a, b), "{a} {b}");
            }
        }
        // A name from outside the folder keeps its path below crew/.
        assert_eq!(
            keep_names(RUN, "t", &["refs/heads/crew/u/x"], &[]),
            [format!("{base}u/x")]
        );
    }

    #[test]
    fn a_runs_discrepancies_name_each_stray_and_what_keeps_it() {
        let base = kept_folder(RUN);
        let taken = [
            Taken {
                name: "refs/heads/crew/t/hotfix".into(),
                target: Some("0123456789abcdef0123".into()),
                kept_as: Some(format!("{base}hotfix")),
                removed: true,
                error: None,
            },
            Taken {
                name: "refs/heads/crew/t/x.lock".into(),
                target: None,
                kept_as: None,
                removed: true,
                error: None,
            },
        ];
        let moved = [Moved {
            name: own_branch("t", OLD),
            from: Some("aaaa".into()),
            to: None,
        }];
        let kept = [format!("{base}hotfix"), format!("{base}a/b")];
        let lines = discrepancies("t", RUN, &taken, &moved, &kept);
        assert_eq!(
            lines,
            [
                format!(
                    "the worker made crew/t/hotfix in its task's ref folder, beside its branch crew/t/{RUN}: removed; 0123456789ab kept as {base}hotfix"
                ),
                format!(
                    "the worker made crew/t/x.lock in its task's ref folder, beside its branch crew/t/{RUN}: removed (it pointed at no object in the store)"
                ),
                format!(
                    "crew/t/{OLD}, which was there when the run started, moved from aaaa to nothing while it ran"
                ),
                format!(
                    "{base}a/b keeps a ref the run left in its task's ref folder (crew/t/), beside its branch crew/t/{RUN}"
                ),
            ]
        );
        let stuck = Taken {
            removed: false,
            error: Some("it moved while it was looked at".into()),
            ..taken[0].clone()
        };
        assert_eq!(
            outcome(&stuck),
            "still there: it moved while it was looked at"
        );
    }

    #[test]
    fn a_stray_reads_as_what_became_of_it() {
        let base = kept_folder(RUN);
        let mut s = Stray {
            name: "refs/heads/crew/t/hotfix".into(),
            task: "t".into(),
            target: Some("0123456789abcdef".into()),
            git_reads: true,
            kept_as: Some(format!("{base}hotfix")),
            removed: false,
            left: None,
            live: false,
        };
        assert_eq!(
            s.describe("git crew doctor --fix"),
            format!(
                "crew/t/hotfix (0123456789ab) is in the ref folder of task t and no run's branch; `git crew doctor --fix` takes it out: 0123456789ab kept as {base}hotfix"
            )
        );
        s.removed = true;
        assert_eq!(
            s.describe("-"),
            format!(
                "crew/t/hotfix (0123456789ab) was in the ref folder of task t and no run's branch: taken out; 0123456789ab kept as {base}hotfix"
            )
        );
        s.removed = false;
        s.live = true;
        assert!(s.describe("-").ends_with(
            "left alone while the task has a live run (its supervisor takes what its worker leaves)"
        ));
        let junk = Stray {
            name: "refs/heads/crew/t/x.lock".into(),
            target: None,
            git_reads: false,
            kept_as: None,
            live: false,
            left: Some("it is a folder now".into()),
            ..s
        };
        assert_eq!(
            junk.describe("-"),
            "crew/t/x.lock (a file git does not read as a ref) is in the ref folder of task t and no run's branch; it could not be taken out: it is a folder now"
        );
    }
}
