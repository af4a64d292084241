//! A run's commits as git holds them: the ref that keeps them once its branch is gone,
//! its tip, and where its own changes start — the range integrate, the supervisor's
//! audit, `diff` and `prune` all read.

use super::error::{Context, Result};

use super::{ObjectId, Repository, merge, refs};
use crate::core::record::RunRecord;

/// `refs/crew/attempts/<run>`: keeps a run's commits reachable once its branch is gone.
pub fn attempts_ref(run: &str) -> String {
    format!("refs/crew/attempts/{run}")
}

/// The tip of run `run`'s commits: its branch's, or — once the branch is gone — what
/// `refs/crew/attempts/<run>` keeps. `None` when neither is there.
pub fn tip(repo: &Repository, branch: &str, run: &str) -> Result<Option<ObjectId>> {
    match merge::branch_tip(repo, branch)? {
        Some(tip) => Ok(Some(tip)),
        None => refs::tip(repo, &attempts_ref(run)),
    }
}

/// Where a run's own changes start: its base, or — when the worker merged the target
/// into its branch — the last target commit the branch contains (the target's changes
/// it brought along are not its own). The supervisor and integrate both audit from here.
pub fn own_base(
    repo: &Repository,
    base: ObjectId,
    run_tip: ObjectId,
    target: Option<ObjectId>,
) -> ObjectId {
    target
        .and_then(|target| refs::merge_base(repo, run_tip, target))
        .filter(|b| *b != base && merge::is_ancestor(repo, base, *b))
        .unwrap_or(base)
}

/// The change integrate would apply and audit for a run, as (from, to): from its own base
/// (its base, or where it last merged the target in) to its branch's tip (or, once the
/// branch is gone, the commits `refs/crew/attempts/<run>` keeps). `None` when neither is
/// there.
pub fn audit_range(repo: &Repository, record: &RunRecord) -> Result<Option<(ObjectId, ObjectId)>> {
    let Some(tip) = tip(repo, &record.branch, &record.run)? else {
        return Ok(None);
    };
    let base = refs::oid(&record.base).context("the run's base")?;
    let target = match &record.base_ref {
        Some(target) => merge::branch_tip(repo, target)?,
        None => None,
    };
    Ok(Some((own_base(repo, base, tip, target), tip)))
}
