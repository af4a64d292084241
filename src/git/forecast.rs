//! Trial merges for the conflict forecast: a run onto its target's tip, and two runs with
//! each other, merged in-process (gix, merge-ORT level) the way integrate merges. Every
//! object a trial merge makes (merged blobs, trees, virtual merge bases) is kept in memory
//! and dropped after it: nothing is written to the object database, and there is no
//! checkout and no index. What each trial found is kept in a [`Cache`] keyed by the
//! commits merged, for as long as its owner keeps it (a long-lived front end across its
//! frames; one command for its own life).

use std::collections::{HashMap, HashSet};

use gix::ObjectId;

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

/// A trial merge that could not be made (an object missing or unreadable).
#[derive(Debug, thiserror::Error)]
#[error("cannot merge {what} on trial")]
pub struct TrialError {
    what: String,
    #[source]
    source: Box<dyn std::error::Error + Send + Sync>,
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
    pub fn onto(
        &mut self,
        tip: ObjectId,
        run: ObjectId,
        base: ObjectId,
    ) -> Result<Trial, TrialError> {
        self.found(Key::Onto { tip, run, base })
    }

    /// Run tips `a` and `b` merged with each other (on their merge base).
    pub fn pair(&mut self, a: ObjectId, b: ObjectId) -> Result<Trial, TrialError> {
        self.found(Key::Pair(a.min(b), a.max(b)))
    }

    fn found(&mut self, key: Key) -> Result<Trial, TrialError> {
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

    fn merge(&self, key: Key) -> Result<Trial, TrialError> {
        use gix::merge::tree::TreatAsUnresolved;
        let repo = &self.repo;
        let fail = |what: String| {
            move |e: gix::Error| TrialError {
                what,
                source: Box::new(e),
            }
        };
        let what = match key {
            Key::Onto { tip, run, .. } => format!("{run} onto {tip}"),
            Key::Pair(a, b) => format!("{a} with {b}"),
        };
        let labels = gix::merge::blob::builtin_driver::text::Labels {
            ancestor: Some("base".into()),
            current: Some("ours".into()),
            other: Some("theirs".into()),
        };
        let options = repo.tree_merge_options().map_err(fail(what.clone()))?;
        let commits = |ours: ObjectId, theirs: ObjectId| {
            let options: gix::merge::commit::Options = options.clone().into();
            repo.merge_commits(
                ours,
                theirs,
                labels.clone(),
                options.with_allow_missing_merge_base(true),
            )
            .map(|outcome| outcome.tree_merge)
        };
        let outcome = match key {
            Key::Onto { tip, run, base } if !super::merge::is_ancestor(repo, base, tip) => {
                let tree = |id: ObjectId| -> Result<ObjectId, gix::Error> {
                    Ok(repo.find_commit(id)?.tree_id()?.detach())
                };
                let trees = (|| Ok((tree(base)?, tree(tip)?, tree(run)?)))()
                    .map_err(fail(what.clone()))?;
                repo.merge_trees(trees.0, trees.1, trees.2, labels.clone(), options.clone())
            }
            Key::Onto { tip, run, .. } => commits(tip, run),
            Key::Pair(a, b) => commits(a, b),
        }
        .map_err(fail(what))?;
        let how = TreatAsUnresolved::git();
        if !outcome.has_unresolved_conflicts(how) {
            return Ok(Trial::Clean);
        }
        let mut paths: Vec<String> = outcome
            .conflicts
            .iter()
            .filter(|c| c.is_unresolved(how))
            .flat_map(|c| {
                [
                    c.ours.location().to_string(),
                    c.theirs.location().to_string(),
                ]
            })
            .collect();
        paths.sort();
        paths.dedup();
        Ok(Trial::Conflicts(paths))
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
