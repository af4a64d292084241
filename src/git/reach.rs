//! Which of a run's commits nothing else keeps — `git rev-list --count <tips>
//! ^<keepers>` — for many runs at once, in-process: one walk for every run that shares
//! its targets (the branch it was integrated into, the branch it was cut from), then each
//! run's own count from that walk's commits alone. prune and doctor ask it for every
//! finished run on each call; the walk costs the history between the targets and the
//! runs once, not once per run.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use gix::ObjectId;

use super::error::{Context, Result};

/// One run's question: how many commits its `tips` reach that neither its `targets` nor
/// its `own` keepers (`refs/crew/attempts/<run>`) reach.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ask {
    pub tips: Vec<ObjectId>,
    /// Keepers other runs share (the tips of target and base branches).
    pub targets: Vec<ObjectId>,
    /// Keepers of this run alone.
    pub own: Vec<ObjectId>,
}

impl Ask {
    /// Every keeper, targets first.
    pub fn keepers(&self) -> Vec<ObjectId> {
        let mut all = self.targets.clone();
        all.extend(self.own.iter().copied());
        all
    }
}

/// The count for each ask, in order (`None` for an ask whose commits could not be
/// walked). The asks with the same targets share one walk: the commits their tips and
/// own keepers reach that the targets do not (found the way git's `rev-list` finds
/// them); each ask's count is then the commits of that set its tips reach less those its
/// own keepers reach, found within the set.
pub fn unreached(repo: &gix::Repository, asks: &[Ask]) -> Vec<Option<u64>> {
    let mut out = vec![None; asks.len()];
    let mut groups: BTreeMap<Vec<ObjectId>, Vec<usize>> = BTreeMap::new();
    for (i, ask) in asks.iter().enumerate() {
        if ask.tips.is_empty() {
            out[i] = Some(0);
            continue;
        }
        let mut targets = ask.targets.clone();
        targets.sort();
        targets.dedup();
        groups.entry(targets).or_default().push(i);
    }
    for (targets, members) in groups {
        let mut visible: Vec<ObjectId> = members
            .iter()
            .flat_map(|&i| asks[i].tips.iter().chain(&asks[i].own).copied())
            .collect();
        visible.sort();
        visible.dedup();
        match unkept_by(repo, &visible, &targets) {
            Ok(free) => {
                for i in members {
                    out[i] = Some(count(&free, &asks[i]));
                }
            }
            // One run's commit that cannot be read (a worktree's HEAD naming an object
            // that is not there) leaves the others counted: each is walked alone.
            Err(_) => {
                for i in members {
                    let ask = &asks[i];
                    let visible: Vec<ObjectId> = ask.tips.iter().chain(&ask.own).copied().collect();
                    out[i] = unkept_by(repo, &visible, &targets)
                        .ok()
                        .map(|free| count(&free, ask));
                }
            }
        }
    }
    out
}

/// The commits of `free` that `ask`'s tips reach and its own keepers do not.
fn count(free: &HashMap<ObjectId, Vec<ObjectId>>, ask: &Ask) -> u64 {
    let reached = within(free, &ask.tips);
    let kept = within(free, &ask.own);
    reached.difference(&kept).count() as u64
}

/// The commits `visible` reaches that `hidden` does not, each with its parents.
fn unkept_by(
    repo: &gix::Repository,
    visible: &[ObjectId],
    hidden: &[ObjectId],
) -> Result<HashMap<ObjectId, Vec<ObjectId>>> {
    let walk = repo
        .rev_walk(visible.iter().copied())
        .with_hidden(hidden.iter().copied())
        .all()
        .context("cannot walk the runs' commits")?;
    let mut free = HashMap::new();
    for info in walk {
        let info = info.context("cannot walk the runs' commits")?;
        free.insert(info.id, info.parent_ids.to_vec());
    }
    Ok(free)
}

/// The commits of `free` that `tips` reach through `free` alone. That is every commit of
/// `free` they reach: a commit reachable from a keeper has all its ancestors reachable
/// from it, so no path from a tip to a commit of `free` leaves it.
fn within(free: &HashMap<ObjectId, Vec<ObjectId>>, tips: &[ObjectId]) -> HashSet<ObjectId> {
    let mut seen = HashSet::new();
    let mut todo: Vec<ObjectId> = tips
        .iter()
        .copied()
        .filter(|t| free.contains_key(t))
        .collect();
    while let Some(id) = todo.pop() {
        if !seen.insert(id) {
            continue;
        }
        if let Some(parents) = free.get(&id) {
            todo.extend(parents.iter().filter(|p| free.contains_key(*p)));
        }
    }
    seen
}

/// How many commits `tips` reach that none of `keepers` reaches, asked of the git binary
/// (`git rev-list --count`), one process per question: the reference [`unreached`] is
/// tested against.
pub fn unreached_by_git(repo_dir: &Path, tips: &[ObjectId], keepers: &[ObjectId]) -> Result<u64> {
    if tips.is_empty() {
        return Ok(0);
    }
    let mut args = vec!["rev-list".to_string(), "--count".to_string()];
    args.extend(tips.iter().map(ToString::to_string));
    args.extend(keepers.iter().map(|k| format!("^{k}")));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = super::run::GitRunner::new(repo_dir).output(&args)?;
    out.trim()
        .parse()
        .with_context(|| format!("git rev-list --count printed {out:?}"))
}
