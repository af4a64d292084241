//! Trial merges for the conflict forecast: a run onto its target's tip, and two runs with
//! each other, merged in-process (gix, merge-ORT level) the way integrate merges. Every
//! object a trial merge makes (merged blobs, trees, virtual merge bases) is kept in memory
//! and dropped after it: nothing is written to the object database, and there is no
//! checkout and no index. What each trial found is kept in a [`Cache`] keyed by the
//! commits merged, for as long as its owner keeps it (a long-lived front end across its
//! frames; one command for its own life).

use std::collections::{HashMap, HashSet};

use gix::ObjectId;

use super::error::{Error, Result};

/// The tip of run `run`'s commits, as [`super::run_range::tip`] finds it (its branch,
/// else `refs/crew/attempts/<run>`), when the repository's own store holds that commit:
/// a fenced run's commits are in its quarantine until its attempt ends, and its branch
/// may point at one the store does not have yet. `None` then, and when there is no tip.
pub fn stored_tip(repo: &gix::Repository, branch: &str, run: &str) -> Option<ObjectId> {
    let tip = super::refs::tip(repo, &format!("refs/heads/{branch}"))
        .ok()
        .flatten()
        .or_else(|| {
            super::refs::tip(repo, &super::run_range::attempts_ref(run))
                .ok()
                .flatten()
        })?;
    repo.has_object(tip).then_some(tip)
}

/// What a trial merge found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Trial {
    Clean,
    /// The paths that conflict, sorted.
    Conflicts(Vec<String>),
}

impl Trial {
    pub fn is_clean(&self) -> bool {
        matches!(self, Trial::Clean)
    }

    /// The paths that conflict (none for a clean merge).
    pub fn paths(&self) -> &[String] {
        match self {
            Trial::Clean => &[],
            Trial::Conflicts(paths) => paths,
        }
    }
}

/// What a trial merges: the key of its result in the [`Cache`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Key {
    /// A run's tip onto a target's tip. The run's base decides the merge: when the tip
    /// contains it, the run's branch is merged in (their merge base); when not, exactly
    /// base..run is applied, as integrate does.
    Onto {
        tip: ObjectId,
        run: ObjectId,
        base: ObjectId,
    },
    /// Two runs' tips, the smaller id first (whether they conflict does not depend on
    /// which is ours).
    Pair(ObjectId, ObjectId),
}

/// What trial merges found, by the commits merged. A commit never changes, so an entry
/// never goes stale; an owner that keeps the cache for long keeps only what its latest
/// [`Trials`] used, once there are more than [`Cache::KEPT`] entries.
#[derive(Debug, Default)]
pub struct Cache {
    found: HashMap<Key, Trial>,
}

impl Cache {
    /// Above this many entries, a [`Trials`] that ends keeps only the ones it used.
    pub const KEPT: usize = 4096;

    pub fn len(&self) -> usize {
        self.found.len()
    }

    pub fn is_empty(&self) -> bool {
        self.found.is_empty()
    }
}

/// A session of trial merges on one repository, reading and filling `cache`.
pub struct Trials<'c> {
    /// The repository, its object writes going to memory.
    repo: gix::Repository,
    cache: &'c mut Cache,
    used: HashSet<Key>,
    merged: usize,
}

impl<'c> Trials<'c> {
    /// Trial merges in `repo`, whose own handle is left as it is: the session works on a
    /// copy whose object writes go to memory.
    pub fn new(repo: &gix::Repository, cache: &'c mut Cache) -> Trials<'c> {
        let mut repo = repo.clone().with_object_memory();
        // The runs share most of their trees and blobs: decoded once, read many times.
        repo.object_cache_size_if_unset(32 * 1024 * 1024);
        Trials {
            repo,
            cache,
            used: HashSet::new(),
            merged: 0,
        }
    }

    /// How many merges this session made (the rest came from the cache).
    pub fn merged(&self) -> usize {
        self.merged
    }

    /// Run tip `run` (cut from `base`) merged onto `tip`, as integrate would merge it.
    pub fn onto(&mut self, tip: ObjectId, run: ObjectId, base: ObjectId) -> Result<Trial> {
        self.found(Key::Onto { tip, run, base })
    }

    /// Run tips `a` and `b` merged with each other (on their merge base).
    /// A merge that cannot be made (an object missing or unreadable) is an error.
    pub fn pair(&mut self, a: ObjectId, b: ObjectId) -> Result<Trial> {
        self.found(Key::Pair(a.min(b), a.max(b)))
    }

    fn found(&mut self, key: Key) -> Result<Trial> {
        self.used.insert(key);
        if let Some(found) = self.cache.found.get(&key) {
            return Ok(found.clone());
        }
        let found = self.merge(key);
        // What the merge wrote is of no further use: the memory is emptied either way.
        self.repo.objects.reset_object_memory();
        let found = found?;
        self.merged += 1;
        self.cache.found.insert(key, found.clone());
        Ok(found)
    }

    fn merge(&self, key: Key) -> Result<Trial> {
        let repo = &self.repo;
        let what = match key {
            Key::Onto { tip, run, .. } => format!("cannot merge {run} onto {tip} on trial"),
            Key::Pair(a, b) => format!("cannot merge {a} with {b} on trial"),
        };
        let fail = |e: gix::Error| Error::within(&what, e);
        let labels = gix::merge::blob::builtin_driver::text::Labels {
            ancestor: Some("base".into()),
            current: Some("ours".into()),
            other: Some("theirs".into()),
        };
        let options = repo.tree_merge_options().map_err(fail)?;
        let tree = |id: ObjectId| -> std::result::Result<ObjectId, gix::Error> {
            Ok(repo.find_commit(id)?.tree_id()?.detach())
        };
        let (ours, theirs) = match key {
            // A target that does not contain the run's base gets exactly base..run.
            Key::Onto { tip, run, base } if !super::merge::is_ancestor(repo, base, tip) => {
                let (base, tip, run) = (tree(base), tree(tip), tree(run));
                let outcome = repo.merge_trees(
                    base.map_err(fail)?,
                    tip.map_err(fail)?,
                    run.map_err(fail)?,
                    labels,
                    options,
                );
                return Ok(conflicts(outcome.map_err(fail)?));
            }
            Key::Onto { tip, run, .. } => (tip, run),
            Key::Pair(a, b) => (a, b),
        };
        let options: gix::merge::commit::Options = options.into();
        let outcome = repo
            .merge_commits(
                ours,
                theirs,
                labels,
                options.with_allow_missing_merge_base(true),
            )
            .map_err(fail)?;
        Ok(conflicts(outcome.tree_merge))
    }
}

/// What a merge's outcome holds: clean, or the paths git would leave conflicted.
fn conflicts(outcome: gix::merge::tree::Outcome<'_>) -> Trial {
    match super::merge::unresolved_paths(&outcome) {
        None => Trial::Clean,
        Some(paths) => Trial::Conflicts(paths),
    }
}

impl Drop for Trials<'_> {
    fn drop(&mut self) {
        if self.cache.found.len() > Cache::KEPT {
            let used = std::mem::take(&mut self.used);
            self.cache.found.retain(|key, _| used.contains(key));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    use crate::git::test_git as git;

    /// `f` with its ten lines, line `n` replaced by `text`, committed on what is checked
    /// out; the commit's id.
    fn commit(dir: &Path, edits: &[(usize, &str)]) -> ObjectId {
        let lines: Vec<String> = (1..=10)
            .map(|i| {
                (edits.iter().find(|(n, _)| *n == i))
                    .map_or(format!("line {i}"), |(_, t)| t.to_string())
            })
            .collect();
        std::fs::write(dir.join("f"), lines.join("\n") + "\n").unwrap();
        git(dir, &["add", "f"]);
        git(dir, &["commit", "-q", "-m", "x"]);
        ObjectId::from_hex(git(dir, &["rev-parse", "HEAD"]).as_bytes()).unwrap()
    }

    fn objects(dir: &Path) -> usize {
        walkdir::WalkDir::new(dir.join(".git/objects"))
            .into_iter()
            .count()
    }

    #[test]
    fn a_target_without_the_runs_base_gets_exactly_the_runs_change_and_nothing_is_written() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        git(dir, &["init", "-q", "-b", "main"]);
        let root = commit(dir, &[]);
        // The run's base changed line 9; the run, line 2.
        let base = commit(dir, &[(9, "base's nine")]);
        let run = commit(dir, &[(9, "base's nine"), (2, "run's two")]);
        // A target that does not contain the base changed line 9 its own way.
        git(dir, &["checkout", "-q", "-b", "other", &root.to_string()]);
        let target = commit(dir, &[(9, "target's nine")]);
        let before = objects(dir);

        let repo = gix::open(dir).unwrap();
        let mut cache = Cache::default();
        let mut trials = Trials::new(&repo, &mut cache);
        // Integrate applies base..run alone: clean.
        assert_eq!(trials.onto(target, run, base).unwrap(), Trial::Clean);
        // Merged as branches, the base's line 9 meets the target's.
        assert_eq!(
            trials.pair(target, run).unwrap(),
            Trial::Conflicts(vec!["f".into()])
        );
        // Both ways round is one pair, found in the cache.
        assert_eq!(
            trials.pair(run, target).unwrap(),
            Trial::Conflicts(vec!["f".into()])
        );
        // A target that contains the base merges the branch in.
        assert_eq!(trials.onto(base, run, base).unwrap(), Trial::Clean);
        assert_eq!(trials.merged(), 3);
        drop(trials);
        assert_eq!(cache.len(), 3);
        let mut again = Trials::new(&repo, &mut cache);
        assert_eq!(again.onto(target, run, base).unwrap(), Trial::Clean);
        assert_eq!(again.merged(), 0, "found in the cache");
        drop(again);
        assert_eq!(objects(dir), before, "a trial merge wrote an object");
        // A commit that is not there is an error, not a verdict.
        let missing = ObjectId::from_hex(&[b'1'; 40]).unwrap();
        let mut trials = Trials::new(&repo, &mut cache);
        assert!(trials.pair(missing, run).is_err());
        drop(trials);
        assert_eq!(cache.len(), 3);
    }
}
