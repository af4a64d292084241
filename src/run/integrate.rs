//! Integrate (SPEC §5.9): a finished, verified run is audited against its scope, merged
//! onto the target's current tip away from anyone's checkout (verified again when the
//! target moved since the run's base), recorded in the notes and `docs/state/crew.json`,
//! and the target is advanced with a compare-and-swap — one integration at a time.
//! Cleanup follows `worktree.cleanup` and never loses work.
//!
//! Plan, then execute: this module gathers the facts, `core::integrate` decides on them
//! (every refusal, the shape of the merge, whether it is verified again, cleanup), and
//! this module applies the [`Landing`] it returns — or, under `--dry-run`, returns it
//! unapplied. What follows the target's advance (the journal, the bookkeeping, cleanup)
//! is `run::landing`'s.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::run::error::{Context, Result};

use super::landing::{self, Cleaned, Journal};
use super::process::RunError;
use super::verify;
use crate::core::integrate::{self, Advance, Built, Facts, Landing, Plan, Refusal, STATE_FILE};
use crate::core::record::{Integration, RunRecord, Verify};
use crate::git::{self, ObjectId, merge, notes};
use crate::state::runs::RunStore;

pub mod remote;

/// The change integrate would apply and audit for a run (`diff` shows it).
pub use crate::git::run_range::audit_range;

/// What the caller asked for.
pub struct Request {
    pub run: String,
    pub into: Option<String>,
    pub squash: bool,
    pub force_unverified: bool,
    /// `worktree.cleanup`.
    pub cleanup: crate::core::flight::WorktreeCleanup,
    /// Whether the run's backend keeps sessions (for the roster).
    pub session_reuse: bool,
    /// Who integrates (`Name <email>`).
    pub by: String,
    /// The verdicts of the gates on the task's wave, for the run record.
    pub gates: Vec<serde_json::Value>,
    /// Decide everything (audit, verdict, the merge) and say what would land; change
    /// nothing.
    pub dry_run: bool,
    /// Land through this fleet remote (`integrate::remote`): onto its tip of the
    /// target, pushed in one atomic push.
    pub remote: Option<String>,
}

impl Request {
    fn asked(&self) -> integrate::Asked {
        integrate::Asked {
            into: self.into.clone(),
            squash: self.squash,
            force_unverified: self.force_unverified,
            dry_run: self.dry_run,
            session_reuse: self.session_reuse,
            cleanup: self.cleanup,
        }
    }
}

/// An integrated run (or, under `--dry-run`, one decided).
pub struct Done {
    /// What landed — or, under `--dry-run`, what would: the plan this integrate applied.
    pub landing: Landing,
    pub record: RunRecord,
    /// The commit that landed (under `--dry-run`, an unreachable one that shows what
    /// would; merged by hand, the commit that brought the run in).
    pub commit: ObjectId,
    pub merged_verify: Option<Verify>,
    pub noted: Vec<ObjectId>,
    pub cleanup: Cleaned,
    pub attempts_ref: String,
    /// Completed from the journal of an integrate that died after its target moved.
    pub completed: bool,
    /// Only decided (`--dry-run`): nothing moved.
    pub dry_run: bool,
    /// Landed through a fleet's remote: how.
    pub remote: Option<remote::Through>,
}

/// Where an integration is, for a caller that shows its progress: integrate itself
/// prints nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Reading the run and auditing its branch against its scope.
    Auditing,
    /// Waiting for the integrations ahead of it (one at a time).
    WaitingTurn,
    /// Building the merge onto the target's tip.
    Merging,
    /// Running the run's verify command on the merged tree.
    Reverifying,
    /// Writing the run record notes and advancing the target.
    WritingNotes,
}

pub fn integrate(
    repo_dir: &Path,
    repo: &crate::git::Repository,
    store: &RunStore,
    request: &Request,
    observe: &dyn Fn(Step),
) -> Result<Result<Done, Refusal>, RunError> {
    let run = &request.run;
    observe(Step::Auditing);
    // An integrate of this run that died half-way is finished first.
    if !request.dry_run && landing::pending(store, run) {
        let _turn = store.integrate_lock(Duration::from_secs(1800))?;
        let completed = match landing::resume(repo_dir, repo, store, run, request.cleanup)? {
            landing::Resumed::Nothing => None,
            landing::Resumed::Completed(completed) => Some(*completed),
            landing::Resumed::Unreachable(why) => return Ok(Err(Refusal::Unreachable(why))),
        };
        if let Some(completed) = completed {
            return Ok(Ok(Done {
                noted: vec![completed.commit],
                landing: completed.landing,
                record: completed.record,
                commit: completed.commit,
                merged_verify: None,
                cleanup: completed.cleanup,
                attempts_ref: git::run_range::attempts_ref(run),
                completed: true,
                dry_run: false,
                remote: None,
            }));
        }
    }
    // Through a fleet's remote: its tip of the target is fetched first.
    if let Some(remote) = &request.remote
        && let Err(why) = remote::prefetch(repo_dir, repo, store, request, remote)
    {
        return Ok(Err(Refusal::Unreachable(why)));
    }
    let facts = gather(repo_dir, repo, store, request)?;
    let plan = match integrate::admit(&facts) {
        Ok(plan) => plan,
        Err(refusal) => {
            return Ok(refused(
                repo_dir,
                repo,
                request,
                facts.record.as_ref(),
                refusal,
            )?);
        }
    };
    match &plan.route {
        integrate::Route::ByHand { target } => {
            let target = crate::git::refs::oid(target)?;
            Ok(by_hand(repo_dir, repo, store, request, plan, target)?)
        }
        integrate::Route::Merge { .. } => match &request.remote {
            Some(remote) => remote::merge_in(repo_dir, store, request, remote, plan, observe),
            None => merge_in(repo_dir, repo, store, request, plan, observe),
        },
    }
}

/// Everything [`integrate::admit`] decides on. The run's commits are looked at only for
/// a record it takes.
fn gather(
    repo_dir: &Path,
    repo: &crate::git::Repository,
    store: &RunStore,
    request: &Request,
) -> Result<Facts> {
    let run = &request.run;
    let live = store.live_path(run).exists();
    let record = store.load(run)?;
    let standing = (record.as_ref())
        .and_then(|r| r.integration.as_ref())
        .is_some_and(|done| standing(repo, done));
    // Read only where admit gets to it (as the branch below), so that a seal that cannot
    // be read never hides an earlier refusal.
    let seal = match (&record, live, standing) {
        (Some(_), false, false) => git::seal::read(repo, run)?,
        _ => None,
    };
    let mut facts = Facts {
        run: run.clone(),
        asked: request.asked(),
        live,
        record,
        standing,
        seal,
        branch: None,
    };
    let Ok(record) = integrate::admit_record(&facts) else {
        return Ok(facts);
    };
    let Some(tip) = git::run_range::tip(repo, &record.branch, run)? else {
        return Ok(facts);
    };
    let base = crate::git::refs::oid(&record.base).context("the run's base")?;
    let head = crate::git::refs::head_branch(repo);
    let target = match integrate::target(&facts.asked, record, head.as_deref()) {
        // Through a fleet's remote: the remote's tip of the target, fetched now.
        Some(into) => match &request.remote {
            Some(remote) => remote::fetched_tip(repo_dir, remote, &into)?,
            None => merge::branch_tip(repo, &into)?,
        },
        None => None,
    };
    let merged = target.is_some_and(|target| merge::is_ancestor(repo, tip, target));
    // The audit: every path the branch changed itself, whatever the hooks let through
    // (`--no-verify` skips them).
    let changes = match merged {
        true => Vec::new(),
        false => {
            git::diff::changed_paths(repo, git::run_range::own_base(repo, base, tip, target), tip)?
        }
    };
    facts.branch = Some(integrate::Branch {
        tip: tip.to_string(),
        base: base.to_string(),
        head,
        descends: merge::is_ancestor(repo, base, tip),
        target: target.map(|t| t.to_string()),
        merged,
        changes,
    });
    Ok(facts)
}

/// A refusal, applied: a scope escape is named and counted once, whichever audit finds
/// it (nothing is counted under `--dry-run`).
fn refused(
    repo_dir: &Path,
    repo: &crate::git::Repository,
    request: &Request,
    record: Option<&RunRecord>,
    refusal: Refusal,
) -> Result<Result<Done, Refusal>> {
    if refusal.counts_as_scope_reject()
        && !request.dry_run
        && let Some(record) = record
    {
        landing::record_scope_reject(repo_dir, repo, record)?;
    }
    Ok(Err(refusal))
}

/// Builds the merge onto the target's tip, verifies it again when the target moved, and
/// advances the target — built again when the target moves under it.
fn merge_in(
    repo_dir: &Path,
    repo: &crate::git::Repository,
    store: &RunStore,
    request: &Request,
    plan: Plan,
    observe: &dyn Fn(Step),
) -> Result<Result<Done, Refusal>, RunError> {
    let run = &request.run;
    let into = plan.into.clone();
    let base = crate::git::refs::oid(&plan.base)?;
    let run_tip = crate::git::refs::oid(&plan.tip)?;
    // One integration at a time: the others wait their turn here.
    observe(Step::WaitingTurn);
    let _turn = store.integrate_lock(Duration::from_secs(1800))?;
    if let Err(refusal) = integrate::turn(&plan, standing_now(repo, store, run)?.as_ref()) {
        return Ok(Err(refusal));
    }
    let mut record = plan.record.clone();
    let at = crate::sys::clock::stamp_now();
    let note = plan.note(&at, &request.by, request.gates.clone());

    for _ in 0..integrate::TRIES {
        observe(Step::Merging);
        let target = match merge::branch_tip(repo, &into)? {
            None => None,
            Some(tip) => {
                let checkout = merge::checked_out_in(repo, &into)?;
                let dirty_checkout = match &checkout {
                    Some(wt) if merge::has_tracked_changes(repo, wt, tip)? => Some(wt.clone()),
                    _ => None,
                };
                Some((
                    tip,
                    checkout,
                    integrate::Target {
                        tip: tip.to_string(),
                        contains_run: merge::is_ancestor(repo, run_tip, tip),
                        contains_base: merge::is_ancestor(repo, base, tip),
                        dirty_checkout,
                        state_file: merge::read_path(repo, tip, STATE_FILE)?,
                    },
                ))
            }
        };
        let onto = match integrate::onto(&plan, &note, target.as_ref().map(|(.., t)| t)) {
            Ok(onto) => onto,
            Err(refusal) => return Ok(refused(repo_dir, repo, request, Some(&record), refusal)?),
        };
        let Some((target_tip, checkout, _)) = target else {
            return Err(crate::run::error::Error::invalid(format!(
                "a merge was planned onto {into}, which is gone"
            ))
            .into());
        };
        // A target that contains the run's base gets the branch merged in. One that does
        // not (reset below the base, another branch) gets exactly the run's own change,
        // base..tip, as one commit: never the history the branch was cut from.
        let built = match merge::merge(
            repo,
            target_tip,
            run_tip,
            onto.range_from.is_some().then_some(base),
            &[(STATE_FILE, onto.state_file.clone().into_bytes())],
        )? {
            merge::Merged::Clean(tree) => Built::Clean {
                // The audited diff is the applied diff: every path the target's tip
                // would change is checked against the scope (the state file is
                // git-crew's own).
                applied: git::diff::changed_between_trees(
                    repo,
                    merge::tree_of(repo, target_tip)?,
                    tree,
                )?
                .into_iter()
                .filter(|c| c.path != STATE_FILE)
                .collect(),
                tree,
            },
            merge::Merged::Conflicts(paths) => Built::Conflicts(paths),
        };
        let (tree, landing) = match integrate::after_merge(&plan, &onto, built) {
            Ok(decided) => decided,
            Err(refusal) => return Ok(refused(repo_dir, repo, request, Some(&record), refusal)?),
        };
        let parents = (landing.parents.iter())
            .map(|p| crate::git::refs::oid(p))
            .collect::<crate::git::error::Result<Vec<_>>>()?;
        let commit = merge::commit(repo, &landing.message, tree, &parents)?;
        if request.dry_run {
            // What would land, decided; the commit is unreachable and nothing moved.
            return Ok(Ok(Done {
                landing,
                record,
                commit,
                merged_verify: None,
                noted: Vec::new(),
                cleanup: Cleaned::kept(),
                attempts_ref: git::run_range::attempts_ref(run),
                completed: false,
                dry_run: true,
                remote: None,
            }));
        }

        // The target moved since the run's base: the merged tree is verified again.
        let mut merged_verify = None;
        if let Some(command) = &landing.reverify {
            observe(Step::Reverifying);
            let outcome = match verify_merged(repo_dir, store, &record, command, commit)? {
                verify::Verified::Done(result) => integrate::Reverified::Done(result),
                verify::Verified::Timeout => integrate::Reverified::Timeout,
                verify::Verified::SetupFailed(problem) => {
                    integrate::Reverified::SetupFailed(problem)
                }
            };
            match integrate::reverified(&plan, outcome) {
                Ok(result) => merged_verify = Some(result),
                Err(refusal) => return Ok(Err(refusal)),
            }
        }

        observe(Step::WritingNotes);
        // Notes first (one commit of the notes ref for all of them), then the target.
        // The worker's commits: the branch's own, not the target's commits it merged in.
        let mut noted = vec![commit];
        noted.extend(notes::commits_between(repo, &[base, target_tip], run_tip)?);
        let (notes_before, notes_after) =
            notes::set_many(repo, notes::CREW, &noted, &note.to_line())?;
        let journal = Journal {
            commit: commit.to_string(),
            into: into.clone(),
            at: at.clone(),
            by: request.by.clone(),
            squash: landing.squash,
            forced_unverified: landing.forced_unverified,
            run_tip: run_tip.to_string(),
            target_before: target_tip.to_string(),
            notes_before: notes_before.map(|n| n.to_string()),
            notes_after: notes_after.to_string(),
            merged_reward: merged_verify.as_ref().map(|v| v.reward),
            applied_as: landing.applied_as.to_string(),
            remote: None,
            ledger_before: None,
            ledger_after: None,
        };
        landing::write_journal(store, run, &journal)?;
        crate::sys::failpoint::crash("integrate-before-target");
        // The verify may have taken a while: the checkout and the target must still be
        // what the merge was built on.
        let still = merge::checked_out_in(repo, &into)? == checkout
            && merge::branch_tip(repo, &into)? == Some(target_tip);
        if !still {
            notes::undo(repo, notes::CREW, notes_after, notes_before)?;
            landing::drop_journal(store, run);
            continue;
        }
        let advanced = match &checkout {
            // Seen without changes to tracked files as the merge was built, when no
            // verify ran since.
            Some(wt) => merge::fast_forward(
                repo,
                wt,
                (target_tip, commit),
                landing.reverify.is_none(),
                (super::post_merge::INTEGRATING_VAR, run),
            ),
            None => merge::advance(
                repo,
                &into,
                target_tip,
                commit,
                &format!("crew: integrate run {run}"),
            ),
        };
        if let Err(err) = advanced {
            notes::undo(repo, notes::CREW, notes_after, notes_before)?;
            landing::drop_journal(store, run);
            let moved = merge::branch_tip(repo, &into)? != Some(target_tip);
            match integrate::advance_failed(moved, checkout, crate::fault::chain(&err)) {
                Advance::Retry => continue,
                Advance::Refused(refusal) => return Ok(Err(refusal)),
                Advance::Failed => return Err(err.into()),
            }
        }

        if merge::branch_tip(repo, &into)? != Some(commit) {
            // The fast-forward went somewhere else (the checkout switched branches under
            // us): the target did not get the run.
            notes::undo(repo, notes::CREW, notes_after, notes_before)?;
            landing::drop_journal(store, run);
            return Err(crate::run::error::Error::invalid(format!(
                "{into} did not end at the integration commit {commit}; check `git reflog` in its checkout"
            ))
            .into());
        }
        crate::sys::failpoint::crash("integrate-after-target");
        // Landed. The submodule commits it moved stay reachable in the lead's copies (a
        // convenience: the objects are in those copies' stores already, so a failure here
        // loses nothing).
        let _ = crate::git::submodules::keep(
            repo.common_dir(),
            repo_dir,
            &record.base,
            &commit.to_string(),
            &record.branch,
        );
        // Keep the run's commits, mark it, file the ledger row, clean up.
        let cleanup = landing::land(
            repo_dir,
            repo,
            store,
            &mut record,
            &journal,
            request.cleanup,
        )?;
        return Ok(Ok(Done {
            landing,
            record,
            commit,
            merged_verify,
            noted,
            cleanup,
            attempts_ref: git::run_range::attempts_ref(run),
            completed: false,
            dry_run: false,
            remote: None,
        }));
    }
    Ok(Err(integrate::kept_moving(&plan)))
}

/// Records a run that `into` already contains, merged by hand: the commit on its
/// first-parent line that brought the run in is audited from its first parent (from the
/// run's base for a fast-forward) and recorded as the post-merge and post-commit hooks
/// record a hand merge; paths outside the scope are a scope rejection (exit 1), the run
/// record note naming them. `--dry-run` only audits.
fn by_hand(
    repo_dir: &Path,
    repo: &crate::git::Repository,
    store: &RunStore,
    request: &Request,
    plan: Plan,
    target: ObjectId,
) -> Result<Result<Done, Refusal>> {
    let run = &request.run;
    let into = &plan.into;
    let base = crate::git::refs::oid(&plan.base)?;
    let run_tip = crate::git::refs::oid(&plan.tip)?;
    let _turn = store.integrate_lock(Duration::from_secs(1800))?;
    if let Err(refusal) = integrate::turn(&plan, standing_now(repo, store, run)?.as_ref()) {
        return Ok(Err(refusal));
    }
    let Some(commit) = merge::landing(repo, target, run_tip)? else {
        crate::run::error::bail!(
            "{into} contains run {run} but no commit of its first-parent line does"
        );
    };
    let fast_forward = merge::is_ancestor(repo, commit, run_tip);
    let old = match merge::parents(repo, commit)?.first() {
        Some(parent) if !fast_forward => *parent,
        _ => base,
    };
    let (files, violations, noted) = if request.dry_run {
        let changes = git::diff::changed_paths(repo, old, commit)?;
        let violations = integrate::audit(&plan.record, &changes);
        (
            changes.into_iter().map(|c| c.path).collect(),
            violations,
            Vec::new(),
        )
    } else {
        let hand = super::post_merge::Hand {
            branch: &plan.record.branch,
            tip: run_tip,
            old,
            new: commit,
            into,
            by: "integrate (a merge made by hand)",
        };
        let merged = super::post_merge::land_by_hand(repo, repo_dir, &hand, &mut |_| {})?;
        let noted = merged
            .noted
            .unwrap_or_default()
            .iter()
            .map(|c| crate::git::refs::oid(c))
            .collect::<crate::git::error::Result<Vec<_>>>()?;
        (merged.files.unwrap_or_default(), merged.violations, noted)
    };
    let hand = integrate::Hand {
        commit: commit.to_string(),
        parents: (merge::parents(repo, commit)?.iter())
            .map(ToString::to_string)
            .collect(),
        fast_forward,
        files,
        violations,
    };
    let landing = match integrate::by_hand(&plan, hand) {
        Ok(landing) => landing,
        Err(refusal) => return Ok(Err(refusal)),
    };
    let (record, cleanup) = match request.dry_run {
        true => (plan.record, Cleaned::kept()),
        false => {
            let mut record = store.load(run)?.unwrap_or(plan.record);
            let cleaned =
                landing::clean(repo_dir, repo, store, &mut record, run_tip, request.cleanup);
            (record, cleaned)
        }
    };
    Ok(Ok(Done {
        landing,
        record,
        commit,
        merged_verify: None,
        noted,
        cleanup,
        attempts_ref: git::run_range::attempts_ref(run),
        completed: false,
        dry_run: request.dry_run,
        remote: None,
    }))
}

/// The run's integration as its record says now, when it still stands: whoever held the
/// integrate turn before may have integrated this very run.
fn standing_now(
    repo: &crate::git::Repository,
    store: &RunStore,
    run: &str,
) -> Result<Option<Integration>> {
    Ok(store
        .load(run)?
        .and_then(|r| r.integration)
        .filter(|done| standing(repo, done)))
}

/// Whether a recorded integration still stands: its commit is on some branch (here, or a
/// remote's as last fetched: landed through a fleet's remote). One merged into a branch
/// since deleted landed nowhere, and the run may be integrated.
fn standing(repo: &crate::git::Repository, done: &Integration) -> bool {
    git::refs::oid(&done.commit).map_or(true, |commit| git::refs::on_a_branch(repo, commit))
}

/// Runs the run's verify command on `commit` in a throwaway worktree.
fn verify_merged(
    repo_dir: &Path,
    store: &RunStore,
    record: &RunRecord,
    command: &str,
    commit: ObjectId,
) -> Result<verify::Verified, RunError> {
    let dir = store.run_dir(&record.run);
    let transcript = record.transcript.clone().map_or_else(
        || crate::core::layout::verify_merged_log(&dir),
        PathBuf::from,
    );
    let deadline = Instant::now() + Duration::from_secs(record.budget_s.max(60));
    verify::in_throwaway(
        &record.run,
        repo_dir,
        &dir.join(crate::core::layout::MERGED_CHECKOUT),
        commit,
        command,
        &crate::core::layout::verifier_merged(&dir),
        &transcript,
        deadline,
        super::fence::base_for(record, &dir)?,
        record.setup.as_ref(),
    )
}
