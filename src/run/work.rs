//! The runner's view of a fleet's remote (`git crew work --remote`): the claims every
//! machine holds there, and the target as the remote has it, which the local target
//! catches up with (a fast-forward) so that a task is cut from a base that holds what
//! its dependencies landed, and a plan's derived status reads the remote's landings.

use std::collections::BTreeMap;
use std::path::Path;

use crate::core::fleet::FleetClaim;
use crate::git::{self, merge, refs};
use crate::run::error::Result;

/// Where the remote's copy of the target is kept here.
pub fn tracking_target(remote: &str, target: &str) -> String {
    format!("refs/remotes/{remote}/{target}")
}

/// What catching up with the remote's target did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaughtUp {
    /// The local target is the remote's (or the remote has none).
    Same,
    /// The local target moved forward to the remote's.
    Advanced,
    /// The local target holds commits the remote lacks, and nothing of the remote's is
    /// missing here: left as it is.
    Ahead,
    /// The two have parted, or the checkout could not be moved: left as it is; why.
    Left(String),
}

/// What one look at the remote found.
pub struct Look {
    /// What catching up with the remote's target did (none without a target here).
    pub caught_up: Option<CaughtUp>,
    /// The tasks the remote's claims hold with a lease that has not run out, each with
    /// its claim (`None`: a claim git-crew cannot read, which holds its task until
    /// someone removes it).
    pub claims: BTreeMap<String, Option<FleetClaim>>,
    /// Notes refs whose remote side could not be merged here: why.
    pub notes_unmerged: Vec<String>,
}

/// One look at the remote, in one fetch: its target (into
/// `refs/remotes/<remote>/<target>`), its notes and its claims. The notes are merged into
/// the local ones by line union (the gates' verdicts and the ledger, fleet-wide; pushed
/// by the landings, and by a `sync`), the local target catches up with the remote's,
/// and the claims live at `now_ms` are read.
pub fn look(repo_dir: &Path, remote: &str, target: Option<&str>, now_ms: u64) -> Result<Look> {
    match target {
        Some(target) => git::fleet::fetch_landing(repo_dir, remote, target)?,
        None => {
            git::fleet::fetch(repo_dir, remote)?;
            git::sync::fetch(repo_dir, remote)?;
        }
    }
    let repo = git::repo::open(repo_dir)?;
    let notes_unmerged = super::fleet::merge_fetched_notes(&repo, remote);
    let caught_up = match target {
        Some(target) => Some(catch_up(repo_dir, remote, target)?),
        None => None,
    };
    let repo = git::repo::open(repo_dir)?;
    let (seen, _) = git::fleet::seen(&repo, remote)?;
    let claims = seen
        .into_iter()
        .filter(|s| s.claim.as_ref().is_none_or(|c| !c.expired(now_ms)))
        .map(|s| (s.task, s.claim))
        .collect();
    Ok(Look {
        caught_up,
        claims,
        notes_unmerged,
    })
}

/// Brings the local target forward to the remote's as last fetched
/// (`refs/remotes/<remote>/<target>`) when it is behind: in its checkout with `git merge
/// --ff-only` (which refuses a checkout whose changes it would touch), else the ref alone.
pub fn catch_up(repo_dir: &Path, remote: &str, target: &str) -> Result<CaughtUp> {
    let repo = git::repo::open(repo_dir)?;
    let Some(theirs) = refs::tip(&repo, &tracking_target(remote, target))? else {
        return Ok(CaughtUp::Same);
    };
    let ours = refs::tip(&repo, &format!("refs/heads/{target}"))?;
    if ours == Some(theirs) {
        return Ok(CaughtUp::Same);
    }
    if let Some(ours) = ours {
        if merge::is_ancestor(&repo, theirs, ours) {
            return Ok(CaughtUp::Ahead);
        }
        if !merge::is_ancestor(&repo, ours, theirs) {
            return Ok(CaughtUp::Left(format!(
                "{target} and {remote}/{target} have parted: the runner works from {target} as it is"
            )));
        }
    }
    match (merge::checked_out_in(&repo, target)?, ours) {
        (Some(worktree), Some(ours)) => {
            // The hooks leave this fast-forward alone: what it brings in was recorded
            // where it landed.
            let env = (super::post_merge::INTEGRATING_VAR, "fleet");
            if let Err(e) = merge::fast_forward(&repo, &worktree, (ours, theirs), false, env) {
                return Ok(CaughtUp::Left(format!(
                    "{target} is behind {remote}/{target} and its checkout could not move: {}",
                    crate::fault::chain(&e)
                )));
            }
        }
        (_, Some(ours)) => merge::advance(
            &repo,
            target,
            ours,
            theirs,
            &format!("crew: caught up with {remote}"),
        )?,
        (_, None) => merge::set_ref(
            &repo,
            &format!("refs/heads/{target}"),
            theirs,
            &format!("crew: caught up with {remote}"),
        )?,
    }
    Ok(CaughtUp::Advanced)
}
