//! A landing, once the target has moved (or is about to): the journal written before the
//! target moves, so an integrate killed half-way is completed by the next one (or by
//! `doctor --fix`) — never lost, never undone; the landing recorded the same whoever
//! landed the run (integrate, or a merge by hand seen by the hooks): its commits kept,
//! its record marked, the ledger's row; a scope rejection counted once; and the cleanup
//! `worktree.cleanup` allows, which never loses work.

use std::path::{Path, PathBuf};

use crate::run::error::{Context, Result};

use crate::core::flight::WorktreeCleanup;
use crate::core::integrate::{self, Landing, STATE_FILE};
use crate::core::ledger::Row;
use crate::core::record::{Integration, Outcome, RunRecord};
use crate::git::{self, ObjectId, merge, notes};
use crate::state::runs::RunStore;

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
    /// Nothing removed.
    pub fn kept() -> Cleaned {
        Cleaned {
            worktree: "kept",
            branch: "kept",
            kept_because: None,
            ignored: Vec::new(),
        }
    }
}

/// An integration that is about to advance its target, written before the target moves
/// and removed once its bookkeeping is done: an integrate killed in between is completed
/// by the next integrate of the run (or `doctor --fix`), never lost and never undone.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Journal {
    pub commit: String,
    pub into: String,
    pub at: String,
    pub by: String,
    pub squash: bool,
    pub forced_unverified: bool,
    pub run_tip: String,
    pub target_before: String,
    pub notes_before: Option<String>,
    pub notes_after: String,
    pub merged_reward: Option<f64>,
    pub applied_as: String,
    /// A landing through a fleet's remote: the remote whose target the push moves. Its
    /// notes and ledger row are written here before the push, so an integrate killed
    /// before it must take the row back as well as the notes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ledger_before: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ledger_after: Option<String>,
}

fn journal_path(store: &RunStore, run: &str) -> PathBuf {
    crate::core::layout::integrating(&store.run_dir(run))
}

/// Whether an integrate of `run` died with its journal written.
pub fn pending(store: &RunStore, run: &str) -> bool {
    journal_path(store, run).exists()
}

/// Writes the journal, before the target moves.
pub fn write_journal(store: &RunStore, run: &str, journal: &Journal) -> Result<()> {
    let path = journal_path(store, run);
    std::fs::create_dir_all(path.parent().context("a run folder")?)?;
    crate::sys::fs::write_atomic(&path, &serde_json::to_string(journal)?, 0o644)?;
    Ok(())
}

/// Drops the journal of a landing that did not happen (its notes taken back).
pub fn drop_journal(store: &RunStore, run: &str) {
    let _ = std::fs::remove_file(journal_path(store, run));
}

/// A run that landed on a branch: by integrate, or merged by hand (post-merge).
pub struct Landed<'a> {
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
    landed: &Landed,
) -> Result<()> {
    merge::set_ref(
        repo,
        &git::run_range::attempts_ref(&record.run),
        landed.run_tip,
        "crew: keep the run's commits",
    )?;
    if record.integration.is_none() {
        record.integration = Some(Integration {
            commit: landed.commit.to_string(),
            into: landed.into.to_string(),
            at: landed.at.to_string(),
            by: landed.by.to_string(),
            squash: landed.squash,
            forced_unverified: landed.forced_unverified,
        });
        store.update_record(record)?;
    }
    let filed = crate::run::ledger::rows_since(repo, &record.task, filed_since(record))?
        .iter()
        .any(|r| r.run == record.run && r.integrated.as_deref() == Some(landed.commit));
    if !filed {
        crate::run::ledger::append_row(repo_dir, &record.task, &landed_row(record, landed))?;
    }
    Ok(())
}

/// The ledger's `integrated` row of a landing.
pub fn landed_row(record: &RunRecord, landed: &Landed) -> Row {
    let mut row = Row::of(record);
    row.at = landed.at.to_string();
    row.integrated = Some(landed.commit.to_string());
    if let Some(reward) = landed.merged_reward {
        row.reward = Some(reward);
    }
    row
}

/// The earliest stamp a row of `record`'s run can bear: rows are stamped when an attempt
/// ends, at the second (a minute's slack for a clock set back meanwhile).
pub fn filed_since(record: &RunRecord) -> jiff::Timestamp {
    crate::core::stamp::whole_second(record.started_at)
        .checked_sub(jiff::SignedDuration::from_secs(60))
        .unwrap_or(jiff::Timestamp::MIN)
}

/// A scope rejection found at integrate is a failure in the ledger — once per run: the
/// supervisor's own rejection, or an earlier refused integrate, already counted it.
pub fn record_scope_reject(
    repo_dir: &Path,
    repo: &crate::git::Repository,
    record: &RunRecord,
) -> Result<()> {
    let counted = record.outcome == Some(Outcome::ScopeReject)
        || crate::run::ledger::rows_since(repo, &record.task, filed_since(record))?
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

/// What follows the target's advance: the landing recorded, cleanup; then the journal
/// goes.
pub fn land(
    repo_dir: &Path,
    repo: &crate::git::Repository,
    store: &RunStore,
    record: &mut RunRecord,
    journal: &Journal,
    cleanup: WorktreeCleanup,
) -> Result<Cleaned> {
    let run_tip = crate::git::refs::oid(&journal.run_tip)?;
    record_landed(
        repo_dir,
        repo,
        store,
        record,
        &Landed {
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
    // Landed: a claim the run holds on a fleet's remote is let go.
    let _ = crate::run::fleet::let_go(repo_dir, &store.run_dir(&record.run));
    let cleaned = clean(repo_dir, repo, store, record, run_tip, cleanup);
    drop_journal(store, &record.run);
    Ok(cleaned)
}

/// An integration a dead integrate left, completed.
pub struct Completed {
    pub record: RunRecord,
    pub commit: ObjectId,
    pub landing: Landing,
    pub cleanup: Cleaned,
}

/// What finishing a dead integrate came to.
pub enum Resumed {
    /// No journal, or nothing landed (its notes taken back): integrate may start afresh.
    Nothing,
    /// It had landed: the bookkeeping is done now.
    Completed(Box<Completed>),
    /// It went through a remote that cannot be reached now: whether its push landed is
    /// not known, so nothing is decided and the journal stays. What git said.
    Unreachable(String),
}

/// Finishes what an integrate of `run` that died left: when its target reached the
/// journaled commit, the bookkeeping is completed and the integration is returned; when
/// it did not, the notes it wrote are taken back and the journal dropped.
pub fn resume(
    repo_dir: &Path,
    repo: &crate::git::Repository,
    store: &RunStore,
    run: &str,
    cleanup: WorktreeCleanup,
) -> Result<Resumed> {
    let path = journal_path(store, run);
    let Ok(bytes) = std::fs::read(&path) else {
        return Ok(Resumed::Nothing);
    };
    let journal: Journal = serde_json::from_slice(&bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let Some(mut record) = store.load(run)? else {
        return Ok(Resumed::Nothing);
    };
    let commit = crate::git::refs::oid(&journal.commit)?;
    // Through a remote, the push is what lands: whether it went through, only the
    // remote's target says (fetched now; a remote out of reach leaves the journal).
    let fetched;
    let repo = match &journal.remote {
        Some(remote) => {
            if let Err(e) = crate::git::fleet::fetch_landing(repo_dir, remote, &journal.into) {
                return Ok(Resumed::Unreachable(format!(
                    "cannot tell whether run {run} landed on {remote} before its integrate died: {}",
                    crate::fault::chain(&e)
                )));
            }
            fetched = crate::git::repo::open(repo_dir)?;
            &fetched
        }
        None => repo,
    };
    let reached = |reference: &str| -> Result<bool> {
        Ok(crate::git::refs::tip(repo, reference)?
            .is_some_and(|tip| merge::is_ancestor(repo, commit, tip)))
    };
    let landed = match &journal.remote {
        Some(remote) => reached(&crate::git::fleet::tracking_branch(remote, &journal.into))?,
        None => reached(&format!("refs/heads/{}", journal.into))?,
    };
    if !landed {
        let undo = |reference: &str, before: Option<&str>, after: Option<&str>| -> Result<()> {
            if let Some(after) = after.map(crate::git::refs::oid).transpose()?
                && notes::tip(repo, reference)? == Some(after)
            {
                let before = before.map(crate::git::refs::oid).transpose()?;
                notes::undo(repo, reference, after, before)?;
            }
            Ok(())
        };
        undo(
            notes::LEDGER,
            journal.ledger_before.as_deref(),
            journal.ledger_after.as_deref(),
        )?;
        undo(
            notes::CREW,
            journal.notes_before.as_deref(),
            Some(&journal.notes_after),
        )?;
        let _ = std::fs::remove_file(&path);
        return Ok(Resumed::Nothing);
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
        .map(|id| id.detach().to_string())
        .collect();
    let landing = Landing {
        run: record.run.clone(),
        task: record.task.clone(),
        into: journal.into.clone(),
        parents,
        applied_as: match journal.applied_as.as_str() {
            "squash" => "squash",
            "range" => "range",
            _ => "merge",
        },
        files,
        links_outside_scope: Vec::new(),
        by_hand: false,
        forced_unverified: journal.forced_unverified,
        reverify: None,
        squash: journal.squash,
        message: String::new(),
    };
    Ok(Resumed::Completed(Box::new(Completed {
        record,
        commit,
        landing,
        cleanup: cleaned,
    })))
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

/// Removes what `worktree.cleanup` allows once a run landed — never a worktree with
/// uncommitted work, never commits that nothing else keeps — and notes on the run's
/// record what went (the landing is complete whether or not the record says so). What
/// git ignored in a worktree it removes is named.
pub fn clean(
    repo_dir: &Path,
    repo: &crate::git::Repository,
    store: &RunStore,
    record: &mut RunRecord,
    run_tip: ObjectId,
    policy: WorktreeCleanup,
) -> Cleaned {
    let cleaned = clean_up(repo_dir, repo, record, run_tip, policy);
    if cleaned.worktree == "removed" {
        let _ = crate::run::prune::mark(
            store,
            record,
            true,
            cleaned.branch == "deleted",
            &cleaned.ignored,
        );
    }
    cleaned
}

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
    // Seen certainly clean in-process, nothing ignored in it either, or asked of git.
    let surely_clean = tree.as_ref().is_ok_and(|t| t.surely_clean(repo));
    let clean = surely_clean
        || tree.as_ref().is_ok_and(|t| {
            t.is_dirty().is_ok_and(|dirty| !dirty)
                && t.holds_nested_repository().is_ok_and(|nested| !nested)
        });
    let head_kept = tree
        .as_ref()
        .ok()
        .and_then(|t| t.head(repo))
        .is_some_and(|head| merge::is_ancestor(repo, head, run_tip));
    let plan = integrate::cleanup(policy, clean, head_kept);
    let mut cleaned = Cleaned {
        kept_because: plan.kept_because,
        ..Cleaned::kept()
    };
    if plan.remove_worktree
        && let Ok(t) = &tree
    {
        // Seen clean above, with git-crew's own hardened status; git's check would run a
        // status of its own in the worker's worktree.
        let ignored = match surely_clean {
            true => Vec::new(),
            false => t.ignored().unwrap_or_default(),
        };
        // Unlocked, then moved out of the way and deleted by a detached process: the
        // landing does not wait for its files to go.
        let _ = git::worktree::unlock_in(repo_dir, Some(repo.common_dir()), &t.path);
        let trash = crate::core::layout::trash(&crate::git::repo::state_dir(repo));
        if t.remove_later(repo_dir, &trash).is_ok() {
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
