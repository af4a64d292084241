//! `prune` carried out, and what `doctor` and `init --uninstall --purge` share with it:
//! the facts about every run (from its seal, its worktree seen through git-crew's
//! hardened git, its refs), `core::prune`'s verdict on each, then — unless it is a dry
//! run — the worktrees removed (the files git ignored in them named, never removed
//! silently), the branches deleted and each run's record marked as pruned; and the refs
//! in tasks' ref folders that are no run's branch taken out (`run::strays`). Also
//! `abandon` of a finished run: what it still holds is kept under
//! `refs/crew/attempts/<run>`, so that a prune may remove it without losing a line.

use crate::run::error::{Context, Result};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::Duration;

use serde::Serialize;

use crate::core::prune::{self, Facts, Left, Options, Tree, Verdict};
use crate::core::record::{DiffStat, Outcome, Phase, Pruning, RunRecord};
use crate::git::reach::Ask;
use crate::git::worktree::RunTree;
use crate::git::{ObjectId, merge};
use crate::state::runs::RunStore;

/// What the caller asked for.
#[derive(Debug, Clone, Copy)]
pub struct Request {
    pub all: bool,
    pub older_than_s: Option<u64>,
    pub dry_run: bool,
}

/// A run whose worktree and branch went (or would go, in a dry run).
#[derive(Debug, Serialize)]
pub struct Removed {
    pub run: String,
    pub task: String,
    pub phase: Phase,
    pub outcome: Option<Outcome>,
    /// The worktree removed (`null` when there was none).
    pub worktree: Option<String>,
    /// The branch deleted (`null` when there was none, or it stays).
    pub branch: Option<String>,
    /// What git ignored in the worktree, gone with it (a folder named once: `target/`).
    pub ignored: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch_kept_because: Option<String>,
}

/// Finished work nothing else keeps: listed, never removed.
#[derive(Debug, Serialize)]
pub struct Stranded {
    pub run: String,
    pub task: String,
    pub phase: Phase,
    pub outcome: Option<Outcome>,
    pub age_s: u64,
    pub finished_at: Option<String>,
    pub worktree: Option<String>,
    pub branch: Option<String>,
    /// What its branch changed since its own base (`git crew diff RUN --stat`).
    pub diff: DiffStat,
    /// Its worktree holds uncommitted changes nothing keeps.
    pub dirty: bool,
    /// Those paths (at most 20).
    pub uncommitted: Vec<String>,
    /// `null` when they could not be counted.
    pub unkept_commits: Option<u64>,
    pub why: Vec<String>,
    /// The command that settles it (`null` when the lead must look for themselves).
    pub next: Option<String>,
}

/// A run prune left alone although nothing in it is at risk.
#[derive(Debug, Serialize)]
pub struct Skipped {
    pub run: String,
    pub task: String,
    pub phase: Phase,
    pub why: Left,
}

/// What prune did (or would do).
#[derive(Debug, Serialize)]
pub struct Pruned {
    pub dry_run: bool,
    pub removed: Vec<Removed>,
    pub stranded: Vec<Stranded>,
    pub skipped: Vec<Skipped>,
    /// Refs in a task's ref folder that are no run's branch: taken out (what each points
    /// at kept under `refs/crew/strays/<run>/`), whatever the flags — nothing is lost.
    pub strays: Vec<crate::core::strays::Stray>,
    /// What could not be looked at, for the command to say on stderr.
    #[serde(skip)]
    pub warnings: Vec<String>,
}

/// Decides on every run and, unless `request.dry_run`, removes what may go. Holds the
/// integrate turn meanwhile: no integrate's cleanup works on the same worktrees.
pub fn prune(
    repo: &crate::git::Repository,
    repo_dir: &Path,
    store: &RunStore,
    request: Request,
) -> Result<Pruned> {
    // (A dry run makes no lock file: none there means no integrate ever held it.)
    let wait = Duration::from_secs(600);
    let _turn = match request.dry_run {
        true => store.integrate_lock_if_there(wait)?,
        false => Some(store.integrate_lock(wait)?),
    };
    let options = Options {
        all: request.all,
        older_than_s: request.older_than_s,
        now_ms: crate::sys::clock::now_millis(),
    };
    let mut out = Pruned {
        dry_run: request.dry_run,
        removed: Vec::new(),
        stranded: Vec::new(),
        skipped: Vec::new(),
        strays: Vec::new(),
        warnings: Vec::new(),
    };
    // A dry run changes nothing: the worktrees are looked at as they are.
    let how = match request.dry_run {
        true => How::Inspect,
        false => How::Restore,
    };
    let (live, finished) = survey(repo, store, how)?;
    for record in &live {
        out.skipped.push(Skipped {
            run: record.run.clone(),
            task: record.task.clone(),
            phase: record.phase,
            why: Left::Live,
        });
    }
    for (mut record, seen) in finished {
        match prune::decide(&seen.facts, &options) {
            Verdict::Nothing => {}
            Verdict::Left(why) => out.skipped.push(Skipped {
                run: record.run.clone(),
                task: record.task.clone(),
                phase: record.phase,
                why,
            }),
            Verdict::Stranded { why, next } => {
                out.stranded
                    .push(stranded(repo, &record, &seen, why, next, options.now_ms));
            }
            Verdict::Remove {
                worktree,
                branch,
                branch_kept_because,
            } => {
                let ignored = match worktree {
                    true => seen.ignored.clone(),
                    false => Vec::new(),
                };
                let mut removed = Removed {
                    run: record.run.clone(),
                    task: record.task.clone(),
                    phase: record.phase,
                    outcome: record.outcome,
                    worktree: worktree.then(|| record.worktree.clone()),
                    branch: branch.then(|| record.branch.clone()),
                    ignored,
                    branch_kept_because,
                };
                if request.dry_run {
                    out.removed.push(removed);
                    continue;
                }
                match remove(repo, repo_dir, store, &mut record, &seen, &mut removed) {
                    Ok(()) => out.removed.push(removed),
                    Err(err) => out.stranded.push(stranded(
                        repo,
                        &record,
                        &seen,
                        vec![format!(
                            "it could not be removed: {}",
                            crate::fault::chain(&err)
                        )],
                        None,
                        options.now_ms,
                    )),
                }
            }
        }
    }
    // What was removed above is said whatever comes of the ref folders.
    match crate::run::strays::settle(repo, store, !request.dry_run) {
        Ok(strays) => out.strays = strays,
        Err(err) => out.warnings.push(format!(
            "the tasks' ref folders could not be looked at: {}",
            crate::fault::chain(&err)
        )),
    }
    Ok(out)
}

/// The stranded work among the finished runs, however old (`doctor`). Changes nothing.
pub fn stranded_work(
    repo: &crate::git::Repository,
    repo_dir: &Path,
    store: &RunStore,
) -> Result<Vec<Stranded>> {
    let options = Options {
        all: true,
        older_than_s: None,
        now_ms: crate::sys::clock::now_millis(),
    };
    let _ = repo_dir;
    let (_, finished) = survey(repo, store, How::Inspect)?;
    let mut out = Vec::new();
    for (record, seen) in finished {
        if let Verdict::Stranded { why, next } = prune::decide(&seen.facts, &options) {
            out.push(stranded(repo, &record, &seen, why, next, options.now_ms));
        }
    }
    Ok(out)
}

/// What was seen of one run: the facts, its worktree (restored or inspected, when it is
/// there), the tip of its branch, and what git ignores in its worktree (each path an
/// ignore pattern matches, a folder once: what would go with it).
struct Seen {
    facts: Facts,
    tree: Option<RunTree>,
    tip: Option<ObjectId>,
    ignored: Vec<String>,
}

/// Each finished run looked at, with what was seen of it.
type Looked = Vec<(RunRecord, Seen)>;

/// How the worktrees are looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum How {
    /// Each one's administration is put back as dispatch made it first (a prune that
    /// removes what may go).
    Restore,
    /// Nothing is written (a dry run, doctor): see [`RunTree::inspect`].
    Inspect,
}

/// The live runs, and every finished run that is not live with what was seen of it —
/// its worktree and branch as dispatch sealed them, whatever its record says (without a
/// readable seal, the guards in `look` and `worktree` still hold). What every run needs
/// is read once for all of them: the lead's checkouts, the tips of the branches runs
/// target, and the commits none of their keepers reach (one walk for the runs that share
/// their targets).
fn survey(
    repo: &crate::git::Repository,
    store: &RunStore,
    how: How,
) -> Result<(Vec<RunRecord>, Looked)> {
    // Runs share commits and trees (their base, what they were cut from): each is read
    // once.
    let mut repo = repo.clone();
    repo.object_cache_size_if_unset(16 << 20);
    let (live, mut seen, asks) = gather(&repo, store, how)?;
    let counts = crate::git::reach::unreached(&repo, &asks);
    for ((_, one), count) in seen.iter_mut().zip(counts) {
        one.facts.unkept_commits = count;
    }
    Ok((live, seen))
}

/// What prune and doctor ask of each finished run's commits ([`crate::git::reach`]): the
/// run, and its tips and keepers — looked at as a dry run looks, changing nothing.
pub fn asks(repo: &crate::git::Repository, store: &RunStore) -> Result<Vec<(String, Ask)>> {
    let (_, seen, asks) = gather(repo, store, How::Inspect)?;
    Ok(seen.into_iter().map(|(r, _)| r.run).zip(asks).collect())
}

/// The live runs, and every finished run that is not live with what was seen of it and
/// what to ask of its commits (its count of unkept commits not filled in yet).
fn gather(
    repo: &crate::git::Repository,
    store: &RunStore,
    how: How,
) -> Result<(Vec<RunRecord>, Looked, Vec<Ask>)> {
    let live = store.live()?;
    let live_ids: HashSet<&str> = live.iter().map(|l| l.run.as_str()).collect();
    let checkouts = merge::Checkouts::read(repo);
    let mut branch_tips: HashMap<String, Option<ObjectId>> = HashMap::new();
    let mut seen = Vec::new();
    let mut asks = Vec::new();
    for mut record in store.finished()? {
        if live_ids.contains(record.run.as_str()) {
            continue;
        }
        let _ = crate::git::seal::restore(repo, &mut record);
        let (one, ask) = look(repo, store, &record, how, &checkouts, &mut branch_tips);
        seen.push((record, one));
        asks.push(ask);
    }
    Ok((live, seen, asks))
}

/// Gathers the facts about a finished run, and what to ask of its commits (its facts'
/// count of unkept commits is the caller's to fill in).
fn look(
    repo: &crate::git::Repository,
    store: &RunStore,
    r: &RunRecord,
    how: How,
    checkouts: &merge::Checkouts,
    branch_tips: &mut HashMap<String, Option<ObjectId>>,
) -> (Seen, Ask) {
    let tip = merge::branch_tip(repo, &r.branch).ok().flatten();
    let attempts = crate::git::refs::tip(repo, &crate::git::run_range::attempts_ref(&r.run))
        .ok()
        .flatten();
    let (tree, state, ignored) = worktree(repo, store, r, attempts, how);
    let head = tree.as_ref().and_then(|t| t.head(repo));
    let targets: Vec<ObjectId> = [
        r.integration.as_ref().map(|i| i.into.as_str()),
        r.base_ref.as_deref(),
    ]
    .into_iter()
    .flatten()
    .filter_map(|b| {
        *branch_tips
            .entry(b.to_string())
            .or_insert_with(|| merge::branch_tip(repo, b).ok().flatten())
    })
    .collect();
    let ask = Ask {
        tips: unique(tip.into_iter().chain(head)),
        targets,
        own: attempts.into_iter().collect(),
    };
    // Only the run's own branch is ever deleted (a record a worker could write names no
    // other), and not while the lead has it checked out.
    let own = format!("crew/{}/{}", r.task, r.run);
    let branch_stays = if r.branch != own {
        Some(format!("{} is not the run's own branch {own}", r.branch))
    } else {
        checkouts
            .of(&r.branch)
            .map(|p| format!("it is checked out in {}", p.display()))
    };
    let seen = Seen {
        facts: Facts {
            run: r.run.clone(),
            phase: r.phase,
            outcome: r.outcome,
            live: false,
            integrated: r.integration.is_some(),
            finished_at: r.finished_at,
            worktree: r.worktree.clone(),
            tree: state,
            branch: tip.is_some(),
            unkept_commits: None,
            branch_stays,
        },
        tree,
        tip,
        ignored,
    };
    (seen, ask)
}

/// The run's worktree, looked at with git-crew's own hardened git once its
/// administration is put back as dispatch made it (or, with [`How::Inspect`], read as it
/// is where it is as dispatch made it, else from a corrected copy); and what git ignores
/// in it. What its index says and what is untracked in it are found in-process where
/// that is certain ([`RunTree::indexed`]); git runs only in a worktree where it is not.
fn worktree(
    repo: &crate::git::Repository,
    store: &RunStore,
    r: &RunRecord,
    attempts: Option<ObjectId>,
    how: How,
) -> (Option<RunTree>, Tree, Vec<String>) {
    let path = Path::new(&r.worktree);
    if std::fs::symlink_metadata(path).is_err() {
        return (None, Tree::Absent, Vec::new());
    }
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    if canon(path) != canon(&store.worktree_path(&r.run)) {
        return (
            None,
            Tree::Unreadable(format!(
                "{} is not where git-crew keeps run {}'s worktree",
                path.display(),
                r.run
            )),
            Vec::new(),
        );
    }
    // Someone is at work in it (a merge, a rebase): restoring its administration would
    // throw that away, so it is not even looked at.
    if let Some(state) = RunTree::operation_in_progress(repo.common_dir(), path) {
        return (
            None,
            Tree::Unreadable(format!(
                "an operation is in progress in it ({state}): finish or abort it there"
            )),
            Vec::new(),
        );
    }
    let tree = match how {
        How::Restore => RunTree::restore(repo.common_dir(), path, &r.identity()),
        How::Inspect => RunTree::inspect(repo.common_dir(), path, &r.identity()),
    };
    let tree = match tree {
        Ok(tree) => tree,
        Err(err) => {
            return (
                None,
                Tree::Unreadable(crate::fault::chain(&err)),
                Vec::new(),
            );
        }
    };
    let indexed = tree.indexed(repo);
    if indexed.as_ref().is_some_and(|i| i.at_rest) {
        return (Some(tree), Tree::Clean, Vec::new());
    }
    // A repository nested in the worktree — under a gitlink, or untracked (git names it
    // as a folder, `dir/`, and never looks inside) — holds work git-crew cannot see.
    let untracked_repository = |paths: &[String]| {
        paths.iter().any(|p| {
            p.ends_with('/') && std::fs::symlink_metadata(path.join(p).join(".git")).is_ok()
        })
    };
    // Files git status is told not to look at count as changed: their content is unseen
    // (and `git add` would pass them over, so no snapshot can vouch for them).
    let hidden = match &indexed {
        Some(indexed) => Ok(indexed.hidden.clone()),
        None => tree.hidden_from_status(),
    };
    let hidden = match hidden {
        Ok(hidden) => hidden,
        Err(err) => {
            return (
                Some(tree),
                Tree::Unreadable(crate::fault::chain(&err)),
                Vec::new(),
            );
        }
    };
    let nested = match &indexed {
        Some(indexed) => Ok(indexed.nested),
        None => tree.holds_nested_repository(),
    };
    let held = match indexed.and_then(|i| i.held) {
        Some(held) => Ok(held),
        None => tree.held_by_git(),
    };
    let (held, ignored) = match held {
        Ok(held) => {
            let mut paths = held.uncommitted;
            paths.extend(hidden.iter().cloned());
            (Ok(paths), held.ignored)
        }
        Err(err) => (Err(err), Vec::new()),
    };
    let state = match (nested, held) {
        (Ok(true), _) => Tree::Nested,
        (Err(err), _) | (_, Err(err)) => Tree::Unreadable(crate::fault::chain(&err)),
        (Ok(false), Ok(paths)) if untracked_repository(&paths) => Tree::Nested,
        (Ok(false), Ok(paths)) if paths.is_empty() => Tree::Clean,
        (Ok(false), Ok(paths)) => {
            // Kept when refs/crew/attempts/<run> holds exactly what the worktree holds
            // (an abandon kept it).
            let kept = hidden.is_empty()
                && attempts.is_some_and(|kept| {
                    let held = merge::tree_of(repo, kept).ok();
                    held.is_some() && tree.snapshot_aside().ok() == held
                });
            Tree::Dirty { paths, kept }
        }
    };
    (Some(tree), state, ignored)
}

/// A stranded run as prune and doctor list it.
fn stranded(
    repo: &crate::git::Repository,
    r: &RunRecord,
    seen: &Seen,
    why: Vec<String>,
    next: Option<String>,
    now_ms: u64,
) -> Stranded {
    let diff = crate::git::run_range::audit_range(repo, r)
        .ok()
        .flatten()
        .and_then(|(from, to)| {
            let dir = repo.workdir().unwrap_or(repo.common_dir());
            crate::git::worktree::numstat(dir, &from.to_string(), &to.to_string()).ok()
        })
        .map(|(files, insertions, deletions)| DiffStat {
            files,
            insertions,
            deletions,
        })
        .unwrap_or_default();
    let uncommitted = match &seen.facts.tree {
        Tree::Dirty { paths, kept: false } => paths.iter().take(20).cloned().collect(),
        _ => Vec::new(),
    };
    Stranded {
        run: r.run.clone(),
        task: r.task.clone(),
        phase: r.phase,
        outcome: r.outcome,
        age_s: prune::age_s(r.finished_at, now_ms),
        finished_at: r.finished_at.map(crate::core::stamp::format_seconds),
        worktree: seen.tree.as_ref().map(|_| r.worktree.clone()),
        branch: seen.tip.map(|_| r.branch.clone()),
        diff,
        dirty: !uncommitted.is_empty(),
        uncommitted,
        unkept_commits: seen.facts.unkept_commits,
        why,
        next,
    }
}

/// Removes what the verdict allows and marks the run's record as pruned.
fn remove(
    repo: &crate::git::Repository,
    repo_dir: &Path,
    store: &RunStore,
    record: &mut RunRecord,
    seen: &Seen,
    removed: &mut Removed,
) -> Result<()> {
    if removed.worktree.is_some()
        && let Some(tree) = &seen.tree
    {
        remove_tree(repo_dir, tree)?;
    }
    if removed.branch.is_some() {
        // Only the tip that was seen: a branch that moved since is looked at again next time.
        if merge::branch_tip(repo, &record.branch)? == seen.tip {
            merge::delete_branch(repo, &record.branch)?;
        } else {
            removed.branch = None;
            removed.branch_kept_because = Some("it moved while prune looked at it".into());
        }
    }
    mark(
        store,
        record,
        removed.worktree.is_some(),
        removed.branch.is_some(),
        &removed.ignored,
    )
}

/// Removes a run's worktree and its administration — one the caller saw clean and
/// holding no nested repository (git's own check would run a status of its own in it).
pub fn remove_tree(repo_dir: &Path, tree: &RunTree) -> Result<()> {
    let _ = crate::git::worktree::unlock(repo_dir, &tree.path);
    Ok(tree.remove(repo_dir)?)
}

/// Notes on the run's record what went (it stays readable: `show` says it was pruned).
pub fn mark(
    store: &RunStore,
    record: &mut RunRecord,
    worktree: bool,
    branch: bool,
    ignored: &[String],
) -> Result<()> {
    let before = record.pruned.take();
    record.pruned = Some(Pruning {
        at: crate::sys::clock::stamp_now(),
        worktree: worktree || before.as_ref().is_some_and(|p| p.worktree),
        branch: branch || before.as_ref().is_some_and(|p| p.branch),
        ignored: ignored.to_vec(),
    });
    store.update_record(record)?;
    Ok(())
}

/// What `abandon` kept of a finished run.
#[derive(Debug, Serialize)]
pub struct Kept {
    /// `refs/crew/attempts/<run>`.
    pub attempts_ref: String,
    /// What it points at now (`null` when there was nothing to keep).
    pub commit: Option<String>,
    /// A commit was written for the worktree's uncommitted changes (on top of its HEAD).
    pub uncommitted: Vec<String>,
    /// It already kept everything.
    pub already: bool,
}

/// Why a finished run's work cannot be kept.
#[derive(Debug)]
pub enum NotKept {
    /// A repository is checked out inside its worktree, or the worktree cannot be read.
    Unreadable(String),
}

/// `abandon` of a finished run: its branch's commits, its worktree's HEAD and what its
/// worktree holds uncommitted (untracked files included, ignored ones not) are kept under
/// `refs/crew/attempts/<run>` — the uncommitted state as one more commit on top — so
/// nothing is lost when prune removes the worktree and branch.
pub fn keep(
    repo: &crate::git::Repository,
    store: &RunStore,
    record: &RunRecord,
) -> Result<Result<Kept, NotKept>> {
    let mut record = record.clone();
    crate::git::seal::restore(repo, &mut record)?;
    let name = crate::git::run_range::attempts_ref(&record.run);
    let attempts = crate::git::refs::tip(repo, &name)?;
    let (tree, state, _) = worktree(repo, store, &record, attempts, How::Restore);
    let (uncommitted, kept_already) = match &state {
        Tree::Nested => {
            return Ok(Err(NotKept::Unreadable(format!(
                "a repository is checked out inside {}: look inside it yourself",
                record.worktree
            ))));
        }
        Tree::Unreadable(why) => return Ok(Err(NotKept::Unreadable(why.clone()))),
        Tree::Dirty { paths, kept } => (paths.clone(), *kept),
        Tree::Absent | Tree::Clean => (Vec::new(), false),
    };
    let head = tree.as_ref().and_then(|t| t.head(repo));
    let tip = merge::branch_tip(repo, &record.branch)?;
    let dirty = !uncommitted.is_empty() && !kept_already;
    // Every commit to keep — for a clean worktree only those its target does not reach
    // already — minus those another of them reaches.
    let targets: Vec<ObjectId> = [
        record.integration.as_ref().map(|i| i.into.as_str()),
        record.base_ref.as_deref(),
    ]
    .into_iter()
    .flatten()
    .filter_map(|b| merge::branch_tip(repo, b).ok().flatten())
    .collect();
    let wanted: Vec<ObjectId> = unique(head.into_iter().chain(tip).chain(attempts))
        .into_iter()
        .filter(|c| dirty || !targets.iter().any(|t| merge::is_ancestor(repo, *c, *t)))
        .collect();
    let reached = |a: ObjectId, list: &[ObjectId]| {
        list.iter()
            .any(|b| *b != a && merge::is_ancestor(repo, a, *b))
    };
    let parents: Vec<ObjectId> = wanted
        .iter()
        .copied()
        .filter(|a| !reached(*a, &wanted))
        .collect();
    let keep = match (dirty, parents.as_slice()) {
        (false, []) => None,
        (false, [one]) if Some(*one) == attempts => {
            return Ok(Ok(Kept {
                attempts_ref: name,
                commit: attempts.map(|a| a.to_string()),
                uncommitted: Vec::new(),
                already: true,
            }));
        }
        (false, [one]) => Some(*one),
        (false, many) => {
            let tree = merge::tree_of(repo, many[0])?;
            let message = format!("crew: keep what run {} held\n", record.run);
            Some(merge::commit(repo, &message, tree, many)?)
        }
        (true, parents) => {
            let scratch = store.run_dir(&record.run).join("keep.index");
            let snapshot = tree
                .as_ref()
                .map(|t| t.snapshot(&scratch))
                .transpose()?
                .context("the worktree went while it was looked at")?;
            let message = format!(
                "crew: what run {} left uncommitted, kept when it was abandoned\n",
                record.run
            );
            Some(merge::commit(repo, &message, snapshot, parents)?)
        }
    };
    if let Some(id) = keep {
        merge::set_ref(repo, &name, id, "crew: keep what an abandoned run held")?;
    }
    Ok(Ok(Kept {
        attempts_ref: name,
        commit: keep.or(attempts).map(|c| c.to_string()),
        uncommitted: if dirty { uncommitted } else { Vec::new() },
        already: keep.is_none(),
    }))
}

/// `ids` without repeats, in their order.
fn unique(ids: impl Iterator<Item = ObjectId>) -> Vec<ObjectId> {
    let mut out: Vec<ObjectId> = Vec::new();
    for id in ids {
        if !out.contains(&id) {
            out.push(id);
        }
    }
    out
}
