//! Integrate (SPEC §5.9): a finished, verified run is audited against its scope, merged
//! onto the target's current tip away from anyone's checkout (verified again when the
//! target moved since the run's base), recorded in the notes and `docs/state/crew.json`,
//! and the target is advanced with a compare-and-swap — one integration at a time.
//! Cleanup follows `worktree.cleanup` and never loses work.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::git::ObjectId;
use anyhow::Context;

use super::verify;
use crate::core::flight::WorktreeCleanup;
use crate::core::integrate::Refusal;
use crate::core::integrate::{self, RunNote, STATE_FILE};
use crate::core::ledger::Row;
use crate::core::record::{Integration, Outcome, RunRecord, Verify};
use crate::core::scope;
use crate::git::{self, merge, notes};
use crate::state::runs::RunStore;

/// The variable `git merge --ff-only` carries into the hooks while integrate advances a
/// checked-out branch: the post-merge hook leaves that run to integrate.
pub const INTEGRATING_VAR: &str = "GIT_CREW_INTEGRATING";

/// What the caller asked for.
pub struct Request {
    pub run: String,
    pub into: Option<String>,
    pub squash: bool,
    pub force_unverified: bool,
    /// `worktree.cleanup`.
    pub cleanup: WorktreeCleanup,
    /// Whether the run's backend keeps sessions (for the roster).
    pub session_reuse: bool,
    /// Who integrates (`Name <email>`).
    pub by: String,
    /// The verdicts of the gates on the task's wave, for the run record.
    pub gates: Vec<serde_json::Value>,
    /// Decide everything (audit, verdict, the merge) and say what would land; change
    /// nothing.
    pub dry_run: bool,
}

/// What cleanup removed and kept, and why it kept it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Cleaned {
    /// `removed`, `kept` or `gone` (there was none).
    pub worktree: &'static str,
    /// `deleted` or `kept`.
    pub branch: &'static str,
    pub kept_because: Option<String>,
    /// What git ignored in the removed worktree, gone with it (named, never removed
    /// silently; a folder named once: `target/`).
    pub ignored: Vec<String>,
}

impl Cleaned {
    fn kept() -> Cleaned {
        Cleaned {
            worktree: "kept",
            branch: "kept",
            kept_because: None,
            ignored: Vec::new(),
        }
    }
}

/// An integrated run.
pub struct Done {
    pub record: RunRecord,
    pub commit: ObjectId,
    pub into: String,
    pub parents: Vec<ObjectId>,
    pub merged_verify: Option<Verify>,
    pub noted: Vec<ObjectId>,
    pub files: Vec<String>,
    /// Symlinks the run added that point outside its scope (inside the repository).
    pub links_outside_scope: Vec<String>,
    /// `merge`, `squash`, or `range` (the target did not contain the run's base: exactly
    /// base..tip was applied, as one commit).
    pub applied_as: &'static str,
    pub cleanup: Cleaned,
    pub attempts_ref: String,
    /// Completed from the journal of an integrate that died after its target moved.
    pub completed: bool,
    /// Only decided (`--dry-run`): `commit` is what would land; nothing moved.
    pub dry_run: bool,
    /// Merged by hand before: `commit` is the commit that brought it in, recorded now.
    pub by_hand: bool,
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
) -> anyhow::Result<Result<Done, Refusal>> {
    let run = &request.run;
    observe(Step::Auditing);
    // An integrate of this run that died half-way is finished first.
    if !request.dry_run && journal_path(store, run).exists() {
        let _turn = store.integrate_lock(Duration::from_secs(1800))?;
        if let Some(done) = resume(repo_dir, repo, store, run, request.cleanup)? {
            return Ok(Ok(done));
        }
    }
    if store.live_path(run).exists() {
        let phase = store.load(run)?.map_or("in flight", |r| r.phase.as_str());
        return Ok(Err(Refusal::Live(format!("run {run} is still {phase}"))));
    }
    let Some(mut record) = store.load(run)? else {
        return Ok(Err(Refusal::NotFound(format!("no run {run}"))));
    };
    if let Some(done) = &record.integration {
        if standing(repo, done) {
            return Ok(Err(already(run, done)));
        }
        // Merged into a branch that is gone (a trial merge, say): it landed nowhere.
        record.integration = None;
    }
    // Every fact decided on below must be the one dispatch sealed.
    match git::seal::read(repo, run)? {
        None => {
            return Ok(Err(Refusal::Tampered(format!(
                "run {run} has no seal (refs/crew/sealed/{run}): nothing vouches for its record"
            ))));
        }
        Some(sealed) => {
            let differs = sealed.differences(&record);
            if !differs.is_empty() {
                return Ok(Err(Refusal::Tampered(format!(
                    "run {run}'s record disagrees with its seal on {}: it was changed after dispatch",
                    differs.join(", ")
                ))));
            }
        }
    }
    let run_tip = match merge::branch_tip(repo, &record.branch)? {
        Some(tip) => tip,
        None => match crate::git::refs::tip(repo, &attempts_ref(run))? {
            Some(tip) => tip,
            None => {
                return Ok(Err(Refusal::NotFound(format!(
                    "run {run}'s branch {} is gone",
                    record.branch
                ))));
            }
        },
    };
    let base = crate::git::refs::oid(&record.base).context("the run's base")?;
    if let Err(refusal) = integrate::admit_commits(&record, run_tip == base) {
        return Ok(Err(refusal));
    }

    let into = match request.into.clone().or(record.base_ref.clone()) {
        Some(into) => into,
        None => match crate::git::refs::head_branch(repo) {
            Some(name) => name,
            None => {
                return Ok(Err(Refusal::NoTarget(
                    "the run was not cut from a branch and HEAD is detached".into(),
                )));
            }
        },
    };
    // A branch that does not descend from its base was rewritten (a parentless commit, a
    // rebase onto something else): what it would bring is not the run's work.
    if !merge::is_ancestor(repo, base, run_tip) {
        return Ok(Err(Refusal::Rewritten(format!(
            "run {run}'s branch {} no longer descends from its base {base}: it was rewritten",
            record.branch
        ))));
    }
    let target_now = merge::branch_tip(repo, &into)?;
    // Merged by hand already (a conflict the lead resolved and committed, with hooks that
    // did not record it): recorded as the hooks record it, never refused forever.
    if let Some(target) = target_now
        && merge::is_ancestor(repo, run_tip, target)
    {
        return by_hand(
            repo_dir,
            repo,
            store,
            request,
            record,
            (base, run_tip),
            &into,
            target,
        );
    }
    // The audit: every path the branch changed itself, whatever the hooks let through
    // (`--no-verify` skips them).
    let changes =
        git::diff::changed_paths(repo, own_base(repo, base, run_tip, target_now), run_tip)?;
    let identity = record.identity();
    // A scope escape is named and counted once, whichever audit finds it.
    let refuse = |changes: &[scope::Change]| -> anyhow::Result<Option<Refusal>> {
        let violations: Vec<String> = scope::check_commit(&identity, changes)
            .iter()
            .map(ToString::to_string)
            .collect();
        if violations.is_empty() {
            return Ok(None);
        }
        if !request.dry_run {
            record_scope_reject(repo_dir, repo, &record)?;
        }
        Ok(Some(Refusal::Scope(violations)))
    };
    if let Some(refusal) = refuse(&changes)? {
        return Ok(Err(refusal));
    }
    let verified = match integrate::verdict(&record, &run_tip.to_string(), request.force_unverified)
    {
        Ok(verified) => verified,
        Err(refusal) => return Ok(Err(refusal)),
    };

    // One integration at a time: the others wait their turn here.
    observe(Step::WaitingTurn);
    let _turn = store.integrate_lock(Duration::from_secs(1800))?;
    // Whoever held the lock before may have integrated this very run.
    if let Some(done) = store
        .load(run)?
        .and_then(|r| r.integration)
        .filter(|done| standing(repo, done))
    {
        return Ok(Err(already(run, &done)));
    }
    let at = crate::sys::clock::stamp_now();
    let mut note = RunNote::of(&record, &at, &request.by);
    note.forced_unverified = !verified;
    note.gates = request.gates.clone();

    for _ in 0..5 {
        observe(Step::Merging);
        let Some(target_tip) = merge::branch_tip(repo, &into)? else {
            return Ok(Err(Refusal::NoTarget(format!("no branch {into}"))));
        };
        if merge::is_ancestor(repo, run_tip, target_tip) {
            return Ok(Err(Refusal::AlreadyIntegrated(format!(
                "{into} already contains run {run}'s commits (merged by hand?)"
            ))));
        }
        let checkout = merge::checked_out_in(repo, &into)?;
        if let Some(wt) = &checkout
            && merge::has_tracked_changes(wt)?
        {
            return Ok(Err(Refusal::Dirty(wt.clone())));
        }
        let existing = merge::read_path(repo, target_tip, STATE_FILE)?;
        if existing
            .as_deref()
            .is_some_and(|bytes| integrate::lists_run(bytes, run))
        {
            // Landed before (an integrate that died before its bookkeeping, say).
            return Ok(Err(Refusal::AlreadyIntegrated(format!(
                "{into}'s {STATE_FILE} already lists run {run}"
            ))));
        }
        let state =
            match integrate::state_file(existing.as_deref(), &record, &note, request.session_reuse)
            {
                Ok(state) => state,
                Err(e) => return Ok(Err(Refusal::BadState(e.to_string()))),
            };
        // A target that contains the run's base gets the branch merged in. One that does
        // not (reset below the base, another branch) gets exactly the run's own change,
        // base..tip, as one commit: never the history the branch was cut from.
        let contains_base = merge::is_ancestor(repo, base, target_tip);
        let tree = match merge::merge(
            repo,
            target_tip,
            run_tip,
            (!contains_base).then_some(base),
            &[(STATE_FILE, state.into_bytes())],
        )? {
            merge::Merged::Clean(tree) => tree,
            merge::Merged::Conflicts(paths) => {
                return Ok(Err(Refusal::Conflict {
                    into,
                    branch: record.branch.clone(),
                    paths,
                }));
            }
        };
        // The audited diff is the applied diff: every path the target's tip would change
        // is checked against the scope (the state file is git-crew's own).
        let applied: Vec<scope::Change> =
            git::diff::changed_between_trees(repo, merge::tree_of(repo, target_tip)?, tree)?
                .into_iter()
                .filter(|c| c.path != STATE_FILE)
                .collect();
        if let Some(refusal) = refuse(&applied)? {
            return Ok(Err(refusal));
        }
        let shape = integrate::Shape::of(contains_base, request.squash);
        let parents = if shape.squash {
            vec![target_tip]
        } else {
            vec![target_tip, run_tip]
        };
        let (squash, applied_as) = (shape.squash, shape.applied_as);
        let commit = merge::commit(repo, &message(&record, &into, squash), tree, &parents)?;
        if request.dry_run {
            // What would land, decided; the commit is unreachable and nothing moved.
            return Ok(Ok(Done {
                links_outside_scope: scope::Scope::new(&record.scope)
                    .map(|s| scope::links_leaving_scope(&s, &applied))
                    .unwrap_or_default(),
                files: applied.into_iter().map(|c| c.path).collect(),
                record,
                commit,
                into,
                parents,
                merged_verify: None,
                noted: Vec::new(),
                applied_as,
                cleanup: Cleaned::kept(),
                attempts_ref: attempts_ref(run),
                completed: false,
                dry_run: true,
                by_hand: false,
            }));
        }

        // The target moved since the run's base: the merged tree is verified again.
        let mut merged_verify = None;
        if let Some(command) = integrate::reverify(&record, verified, target_tip == base) {
            observe(Step::Reverifying);
            match verify_merged(repo_dir, store, &record, command, commit)? {
                verify::Verified::Done(result) if result.passed => merged_verify = Some(result),
                verify::Verified::Done(result) => {
                    return Ok(Err(Refusal::MergedVerify(format!(
                        "verify failed on the merge of run {run} onto {into} ({}); {into} is untouched",
                        result.grounds()
                    ))));
                }
                verify::Verified::Timeout => {
                    return Ok(Err(Refusal::MergedVerify(format!(
                        "verify timed out on the merge of run {run} onto {into}; {into} is untouched"
                    ))));
                }
                verify::Verified::SetupFailed(problem) => {
                    return Ok(Err(Refusal::MergedVerify(format!(
                        "the merge of run {run} onto {into} was not verified: {problem}; {into} is untouched"
                    ))));
                }
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
            squash,
            forced_unverified: !verified,
            run_tip: run_tip.to_string(),
            target_before: target_tip.to_string(),
            notes_before: notes_before.map(|n| n.to_string()),
            notes_after: notes_after.to_string(),
            merged_reward: merged_verify.as_ref().map(|v| v.reward),
            applied_as: applied_as.to_string(),
        };
        write_journal(store, run, &journal)?;
        let drop_journal = || {
            let _ = std::fs::remove_file(journal_path(store, run));
        };
        crate::sys::failpoint::crash("integrate-before-target");
        // The verify may have taken a while: the checkout and the target must still be
        // what the merge was built on.
        let still = merge::checked_out_in(repo, &into)? == checkout
            && merge::branch_tip(repo, &into)? == Some(target_tip);
        if !still {
            notes::undo(repo, notes::CREW, notes_after, notes_before)?;
            drop_journal();
            continue;
        }
        let advanced = match &checkout {
            Some(wt) => merge::fast_forward(wt, commit, (INTEGRATING_VAR, run)),
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
            drop_journal();
            if merge::branch_tip(repo, &into)? != Some(target_tip) {
                // The target moved under us (someone committed): merge again.
                continue;
            }
            return Ok(Err(match checkout {
                // git refused to fast-forward the checkout (an untracked file in the way,
                // say): nothing moved.
                Some(wt) => Refusal::Checkout(wt, format!("{err:#}")),
                None => return Err(err),
            }));
        }

        if merge::branch_tip(repo, &into)? != Some(commit) {
            // The fast-forward went somewhere else (the checkout switched branches under
            // us): the target did not get the run.
            notes::undo(repo, notes::CREW, notes_after, notes_before)?;
            drop_journal();
            anyhow::bail!(
                "{into} did not end at the integration commit {commit}; check `git reflog` in its checkout"
            );
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
        let cleanup = land(
            repo_dir,
            repo,
            store,
            &mut record,
            &journal,
            request.cleanup,
        )?;
        let links_outside_scope = scope::Scope::new(&record.scope)
            .map(|s| scope::links_leaving_scope(&s, &applied))
            .unwrap_or_default();
        return Ok(Ok(Done {
            record,
            commit,
            into,
            parents,
            merged_verify,
            noted,
            files: applied.iter().map(|c| c.path.clone()).collect(),
            links_outside_scope,
            applied_as,
            cleanup,
            attempts_ref: attempts_ref(run),
            completed: false,
            dry_run: false,
            by_hand: false,
        }));
    }
    Ok(Err(Refusal::KeptMoving(format!(
        "{into} kept moving while run {run} was being integrated; nothing was changed"
    ))))
}

/// An integration that is about to advance its target, written before the target moves
/// and removed once its bookkeeping is done: an integrate killed in between is completed
/// by the next integrate of the run (or `doctor --fix`), never lost and never undone.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Journal {
    commit: String,
    into: String,
    at: String,
    by: String,
    squash: bool,
    forced_unverified: bool,
    run_tip: String,
    target_before: String,
    notes_before: Option<String>,
    notes_after: String,
    merged_reward: Option<f64>,
    applied_as: String,
}

fn journal_path(store: &RunStore, run: &str) -> PathBuf {
    crate::core::layout::integrating(&store.run_dir(run))
}

fn write_journal(store: &RunStore, run: &str, journal: &Journal) -> anyhow::Result<()> {
    let path = journal_path(store, run);
    std::fs::create_dir_all(path.parent().context("a run folder")?)?;
    crate::sys::fs::write_atomic(&path, &serde_json::to_string(journal)?, 0o644)
}

/// A run that landed on a branch: by integrate, or merged by hand (post-merge).
pub struct Landing<'a> {
    pub commit: &'a str,
    pub into: &'a str,
    pub at: &'a str,
    pub by: &'a str,
    pub squash: bool,
    pub forced_unverified: bool,
    /// The run's branch tip that landed: kept under `refs/crew/attempts/<run>`.
    pub run_tip: ObjectId,
    /// The reward of a verify of the merged tree, for the ledger row.
    pub merged_reward: Option<f64>,
}

/// Records a landed run, the same whoever landed it: its commits kept, its record marked
/// integrated, and the ledger's `integrated` row — once, however often this is called.
pub fn record_landed(
    repo_dir: &Path,
    repo: &crate::git::Repository,
    store: &RunStore,
    record: &mut RunRecord,
    landing: &Landing,
) -> anyhow::Result<()> {
    merge::set_ref(
        repo,
        &attempts_ref(&record.run),
        landing.run_tip,
        "crew: keep the run's commits",
    )?;
    if record.integration.is_none() {
        record.integration = Some(Integration {
            commit: landing.commit.to_string(),
            into: landing.into.to_string(),
            at: landing.at.to_string(),
            by: landing.by.to_string(),
            squash: landing.squash,
            forced_unverified: landing.forced_unverified,
        });
        store.update_record(record)?;
    }
    let filed = crate::run::ledger::rows(repo, Some(&record.task))?
        .iter()
        .any(|r| r.run == record.run && r.integrated.as_deref() == Some(landing.commit));
    if !filed {
        let mut row = Row::of(record);
        row.at = landing.at.to_string();
        row.integrated = Some(landing.commit.to_string());
        if let Some(reward) = landing.merged_reward {
            row.reward = Some(reward);
        }
        crate::run::ledger::append_row(repo_dir, &record.task, &row)?;
    }
    Ok(())
}

/// What follows the target's advance: the landing recorded, cleanup; then the journal
/// goes.
fn land(
    repo_dir: &Path,
    repo: &crate::git::Repository,
    store: &RunStore,
    record: &mut RunRecord,
    journal: &Journal,
    cleanup: WorktreeCleanup,
) -> anyhow::Result<Cleaned> {
    let run_tip = crate::git::refs::oid(&journal.run_tip)?;
    record_landed(
        repo_dir,
        repo,
        store,
        record,
        &Landing {
            commit: &journal.commit,
            into: &journal.into,
            at: &journal.at,
            by: &journal.by,
            squash: journal.squash,
            forced_unverified: journal.forced_unverified,
            run_tip,
            merged_reward: journal.merged_reward,
        },
    )?;
    let cleaned = clean_up(repo_dir, repo, record, run_tip, cleanup);
    if cleaned.worktree == "removed" {
        // The landing is complete whether or not the record says what cleanup removed.
        let _ = crate::run::prune::mark(
            store,
            record,
            true,
            cleaned.branch == "deleted",
            &cleaned.ignored,
        );
    }
    let _ = std::fs::remove_file(journal_path(store, &record.run));
    Ok(cleaned)
}

/// Finishes what an integrate of `run` that died left: when its target reached the
/// journaled commit, the bookkeeping is completed and the integration is returned; when
/// it did not, the notes it wrote are taken back and the journal dropped (`None`: nothing
/// landed, integrate may start afresh).
pub fn resume(
    repo_dir: &Path,
    repo: &crate::git::Repository,
    store: &RunStore,
    run: &str,
    cleanup: WorktreeCleanup,
) -> anyhow::Result<Option<Done>> {
    let path = journal_path(store, run);
    let Ok(bytes) = std::fs::read(&path) else {
        return Ok(None);
    };
    let journal: Journal = serde_json::from_slice(&bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let Some(mut record) = store.load(run)? else {
        return Ok(None);
    };
    let commit = crate::git::refs::oid(&journal.commit)?;
    let landed = merge::branch_tip(repo, &journal.into)?
        .is_some_and(|tip| merge::is_ancestor(repo, commit, tip));
    if !landed {
        if let Ok(after) = crate::git::refs::oid(&journal.notes_after)
            && notes::tip(repo, notes::CREW)? == Some(after)
        {
            let before = journal
                .notes_before
                .as_deref()
                .map(crate::git::refs::oid)
                .transpose()?;
            notes::undo(repo, notes::CREW, after, before)?;
        }
        let _ = std::fs::remove_file(&path);
        return Ok(None);
    }
    let cleaned = land(repo_dir, repo, store, &mut record, &journal, cleanup)?;
    let target_before = crate::git::refs::oid(&journal.target_before)?;
    let files = git::diff::changed_between_trees(
        repo,
        merge::tree_of(repo, target_before)?,
        merge::tree_of(repo, commit)?,
    )?
    .into_iter()
    .filter(|c| c.path != STATE_FILE)
    .map(|c| c.path)
    .collect();
    let parents = repo
        .find_commit(commit)?
        .parent_ids()
        .map(|id| id.detach())
        .collect();
    Ok(Some(Done {
        record,
        commit,
        into: journal.into.clone(),
        parents,
        merged_verify: None,
        noted: vec![commit],
        files,
        links_outside_scope: Vec::new(),
        applied_as: match journal.applied_as.as_str() {
            "squash" => "squash",
            "range" => "range",
            _ => "merge",
        },
        cleanup: cleaned,
        attempts_ref: attempts_ref(run),
        completed: true,
        dry_run: false,
        by_hand: false,
    }))
}

/// The runs whose integration a crash left unfinished.
pub fn unfinished(store: &RunStore) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(store.runs_dir()) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| crate::core::layout::integrating(&e.path()).exists())
        .filter_map(|e| e.file_name().into_string().ok())
        .collect()
}

/// Records a run that `into` already contains, merged by hand: the commit on its
/// first-parent line that brought the run in is audited from its first parent (from the
/// run's base for a fast-forward) and recorded as the post-merge and post-commit hooks
/// record a hand merge; paths outside the scope are a scope rejection (exit 1), the run
/// record note naming them. `--dry-run` only audits.
#[allow(clippy::too_many_arguments)]
fn by_hand(
    repo_dir: &Path,
    repo: &crate::git::Repository,
    store: &RunStore,
    request: &Request,
    record: RunRecord,
    (base, run_tip): (ObjectId, ObjectId),
    into: &str,
    target: ObjectId,
) -> anyhow::Result<Result<Done, Refusal>> {
    let run = &request.run;
    let _turn = store.integrate_lock(Duration::from_secs(1800))?;
    if let Some(done) = store
        .load(run)?
        .and_then(|r| r.integration)
        .filter(|done| standing(repo, done))
    {
        return Ok(Err(already(run, &done)));
    }
    let Some(commit) = merge::landing(repo, target, run_tip)? else {
        anyhow::bail!("{into} contains run {run} but no commit of its first-parent line does");
    };
    let fast_forward = merge::is_ancestor(repo, commit, run_tip);
    let old = match merge::parents(repo, commit)?.first() {
        Some(parent) if !fast_forward => *parent,
        _ => base,
    };
    let hand = super::post_merge::Hand {
        branch: &record.branch,
        tip: run_tip,
        old,
        new: commit,
        into,
        by: "integrate (a merge made by hand)",
    };
    let (files, violations, noted) = if request.dry_run {
        let changes = git::diff::changed_paths(repo, old, commit)?;
        let violations = scope::check_commit(&record.identity(), &changes)
            .iter()
            .map(ToString::to_string)
            .collect();
        (
            changes.into_iter().map(|c| c.path).collect(),
            violations,
            Vec::new(),
        )
    } else {
        let merged = super::post_merge::land_by_hand(repo, repo_dir, &hand, &mut |_| {})?;
        let noted = merged
            .noted
            .unwrap_or_default()
            .iter()
            .map(|c| crate::git::refs::oid(c))
            .collect::<anyhow::Result<Vec<_>>>()?;
        (merged.files.unwrap_or_default(), merged.violations, noted)
    };
    if !violations.is_empty() {
        return Ok(Err(Refusal::HandScope {
            run: run.clone(),
            commit: commit.to_string(),
            violations,
        }));
    }
    let mut record = match request.dry_run {
        true => record,
        false => store.load(run)?.unwrap_or(record),
    };
    let cleanup = match request.dry_run {
        true => Cleaned::kept(),
        false => {
            let cleaned = clean_up(repo_dir, repo, &record, run_tip, request.cleanup);
            if cleaned.worktree == "removed" {
                let _ = crate::run::prune::mark(
                    store,
                    &mut record,
                    true,
                    cleaned.branch == "deleted",
                    &cleaned.ignored,
                );
            }
            cleaned
        }
    };
    Ok(Ok(Done {
        parents: merge::parents(repo, commit)?,
        record,
        commit,
        into: into.to_string(),
        merged_verify: None,
        noted,
        files,
        links_outside_scope: Vec::new(),
        applied_as: if fast_forward {
            "fast-forward"
        } else {
            "merge"
        },
        cleanup,
        attempts_ref: attempts_ref(run),
        completed: false,
        dry_run: request.dry_run,
        by_hand: true,
    }))
}

/// Whether a recorded integration still stands: its commit is on some branch. One
/// merged into a branch since deleted landed nowhere, and the run may be integrated.
fn standing(repo: &crate::git::Repository, done: &Integration) -> bool {
    git::refs::oid(&done.commit).map_or(true, |commit| git::refs::on_a_branch(repo, commit))
}

fn already(run: &str, done: &Integration) -> Refusal {
    Refusal::AlreadyIntegrated(format!(
        "run {run} was integrated into {} as {}",
        done.into, done.commit
    ))
}

/// Where a run's own changes start: its base, or — when the worker merged the target
/// into its branch — the last target commit the branch contains (the target's changes
/// it brought along are not its own). The supervisor and integrate both audit from here.
pub fn own_base(
    repo: &crate::git::Repository,
    base: ObjectId,
    run_tip: ObjectId,
    target: Option<ObjectId>,
) -> ObjectId {
    target
        .and_then(|target| crate::git::refs::merge_base(repo, run_tip, target))
        .filter(|b| *b != base && merge::is_ancestor(repo, base, *b))
        .unwrap_or(base)
}

/// The change integrate would apply and audit for a run, as (from, to): from its own base
/// (its base, or where it last merged the target in) to its branch's tip (or, once the
/// branch is gone, the commits `refs/crew/attempts/<run>` keeps). `None` when neither is
/// there.
pub fn audit_range(
    repo: &crate::git::Repository,
    record: &RunRecord,
) -> anyhow::Result<Option<(ObjectId, ObjectId)>> {
    let tip = match merge::branch_tip(repo, &record.branch)? {
        Some(tip) => tip,
        None => match crate::git::refs::tip(repo, &attempts_ref(&record.run))? {
            Some(tip) => tip,
            None => return Ok(None),
        },
    };
    let base = crate::git::refs::oid(&record.base).context("the run's base")?;
    let target = match &record.base_ref {
        Some(target) => merge::branch_tip(repo, target)?,
        None => None,
    };
    Ok(Some((own_base(repo, base, tip, target), tip)))
}

/// `refs/crew/attempts/<run>`: keeps a run's commits reachable once its branch is gone.
pub fn attempts_ref(run: &str) -> String {
    format!("refs/crew/attempts/{run}")
}

/// A scope rejection found at integrate is a failure in the ledger — once per run: the
/// supervisor's own rejection, or an earlier refused integrate, already counted it.
pub fn record_scope_reject(
    repo_dir: &Path,
    repo: &crate::git::Repository,
    record: &RunRecord,
) -> anyhow::Result<()> {
    let counted = record.outcome == Some(Outcome::ScopeReject)
        || crate::run::ledger::rows(repo, Some(&record.task))?
            .iter()
            .any(|r| r.run == record.run && r.outcome == Some(Outcome::ScopeReject));
    if counted {
        return Ok(());
    }
    let mut row = Row::of(record);
    row.at = crate::sys::clock::stamp_now();
    row.outcome = Some(Outcome::ScopeReject);
    crate::run::ledger::append_row(repo_dir, &record.task, &row)
}

fn message(record: &RunRecord, into: &str, squash: bool) -> String {
    let how = if squash { "squash" } else { "merge" };
    let mut text = format!(
        "crew: {how} run {} (task {}) into {into}\n",
        record.run, record.task
    );
    if let Some(footer) = &record.footer {
        let result: Vec<&str> = footer.result.lines().take(12).collect();
        if !result.is_empty() {
            text.push('\n');
            text.push_str(&result.join("\n"));
            text.push('\n');
        }
    }
    text.push_str(&format!(
        "\nCrew-Run: {}\nCrew-Task: {}\n",
        record.run, record.task
    ));
    text
}

/// Runs the run's verify command on `commit` in a throwaway worktree.
fn verify_merged(
    repo_dir: &Path,
    store: &RunStore,
    record: &RunRecord,
    command: &str,
    commit: ObjectId,
) -> anyhow::Result<verify::Verified> {
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

/// Removes what `worktree.cleanup` allows: never a worktree with uncommitted work, never
/// commits that nothing else keeps. What git ignored in a worktree it removes is named.
fn clean_up(
    repo_dir: &Path,
    repo: &crate::git::Repository,
    record: &RunRecord,
    run_tip: ObjectId,
    policy: WorktreeCleanup,
) -> Cleaned {
    let wt = PathBuf::from(&record.worktree);
    if !wt.exists() {
        return Cleaned {
            worktree: "gone",
            ..Cleaned::kept()
        };
    }
    // The administration is put back as dispatch wrote it before git runs there (and
    // before `git worktree remove` runs `git status` in it).
    let tree = git::worktree::RunTree::restore(repo.common_dir(), &wt, &record.identity());
    let clean = tree.as_ref().is_ok_and(|t| {
        t.is_dirty().is_ok_and(|dirty| !dirty)
            && t.holds_nested_repository().is_ok_and(|nested| !nested)
    });
    let head_kept = tree
        .as_ref()
        .ok()
        .and_then(|t| t.head(repo))
        .is_some_and(|head| merge::is_ancestor(repo, head, run_tip));
    let plan = integrate::cleanup(policy, clean, head_kept);
    let reason = if !clean {
        Some("the worktree has uncommitted changes (or a repository checked out in it)".to_string())
    } else if !head_kept {
        Some("the worktree has commits that were not integrated".to_string())
    } else {
        None
    };
    let mut cleaned = Cleaned {
        kept_because: reason,
        ..Cleaned::kept()
    };
    if plan.remove_worktree
        && let Ok(t) = &tree
    {
        // Seen clean above, with git-crew's own hardened status; git's check would run a
        // status of its own in the worker's worktree.
        let ignored = t.ignored().unwrap_or_default();
        if crate::run::prune::remove_tree(repo_dir, t).is_ok() {
            cleaned.worktree = "removed";
            cleaned.ignored = ignored;
        }
    }
    if plan.delete_branch
        && cleaned.worktree == "removed"
        && merge::branch_tip(repo, &record.branch).ok().flatten() == Some(run_tip)
        && merge::delete_branch(repo, &record.branch).is_ok()
    {
        cleaned.branch = "deleted";
    }
    cleaned
}
