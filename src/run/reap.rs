//! Runs whose supervisor is gone: abandoned by the lead, or reaped after their supervisor
//! died, and filed from their seal. Beside the supervisor, not inside it: the scheduler,
//! doctor and a wave's roll-back end runs this way too, and the supervisor ends a run it
//! cannot drive through [`end_outside`].

use crate::run::error::Result;
use std::path::Path;

use super::filing::{self, NotFiled, seal};
use super::process;
use crate::core::record::{Outcome, RunRecord};
use crate::git::{self, worktree};
use crate::state::runs::RunStore;

/// A run ended from outside its supervisor, as filed; with its ledger row when that
/// could not be written.
#[derive(Debug)]
pub struct Ended {
    pub record: RunRecord,
    pub not_filed: Option<NotFiled>,
}

/// Ends a live run as `abandoned`: its supervisor and every process working for it are
/// killed; its branch, commits and worktree are kept. `None` when the run had already
/// ended (its supervisor or another process got there first).
pub fn abandon(
    store: &RunStore,
    repo_dir: &Path,
    record: RunRecord,
    why: &str,
) -> Result<Option<Ended>> {
    end_outside(store, repo_dir, record, Outcome::Abandoned, why)
}

/// Ends a live run from outside its attempt loop with `outcome`: kills whatever still
/// works for it, files it under its sealed facts, keeps its branch and worktree. `None`
/// when the run had already ended.
pub fn end_outside(
    store: &RunStore,
    repo_dir: &Path,
    mut record: RunRecord,
    outcome: Outcome,
    why: &str,
) -> Result<Option<Ended>> {
    // Where the run's processes work comes from its id, never from the pointer.
    process::kill_run(
        &record.run,
        record.supervisor_pid,
        &store.worktree_path(&record.run).to_string_lossy(),
        &store.run_dir(&record.run),
    );
    // Its supervisor died while it filed the run: that filing is completed, never
    // overwritten — when the seal holds the same verdict.
    if let Some(done) = complete_filed(store, repo_dir, &record.run)? {
        return Ok(Some(done));
    }
    // What is filed (task, scope, branch) comes from the seal, not from the pointer.
    let repo = crate::git::repo::open(repo_dir).ok();
    let differed = match &repo {
        Some(repo) => git::seal::restore(repo, &mut record).unwrap_or_default(),
        None => Vec::new(),
    };
    record.decision = Some(if differed.is_empty() {
        why.to_string()
    } else {
        format!(
            "{why}; its live pointer disagreed with its seal ({}), the seal was kept",
            differed.join(", ")
        )
    });
    if let Some(repo) = &repo {
        // What its processes wrote (its commits) comes into the store, each object
        // hashed again.
        // Bounded as the supervisor's import is: no object over the run's
        // `fences.max_file_size`, and no longer than the grace.
        let limits = git::objects::Limits {
            max_object_size: record.file_size_cap(),
            until: std::time::Instant::now() + crate::core::oversize::GRACE,
        };
        let _ = git::objects::import(
            repo,
            &crate::core::layout::quarantine(&store.run_dir(&record.run)),
            limits,
        );
        if record.role.may_commit() {
            let _ = git::lfs::import(
                &crate::core::layout::lfs_store(&store.run_dir(&record.run)),
                repo.common_dir(),
                limits,
            );
        }
        // Its processes are gone: what it wrote into its worktree's administration goes
        // too, so no later git command there runs it or chokes on it.
        let _ = worktree::RunTree::restore(
            repo.common_dir(),
            Path::new(&record.worktree),
            &record.identity(),
        );
    }
    // What its processes left in its task's ref folder is taken out (and kept).
    let swept = repo.as_ref().and_then(|repo| {
        crate::run::strays::sweep(repo, &record.task, &record.run, &store.run_dir(&record.run))
            .ok()
            .flatten()
    });
    seal(&mut record, outcome, repo_dir);
    if let Some(repo) = &repo {
        record
            .discrepancies
            .extend(crate::run::strays::discrepancies(
                repo,
                &record.task,
                &record.run,
                &swept.unwrap_or_default(),
            ));
        let _ = git::seal::seal_verdict(repo, &record);
    }
    let mut not_filed = None;
    if store.finish(&record, || {
        not_filed = filing::ledger_row(repo_dir, &record).err()
    })? {
        crate::run::fleet::at_end(repo_dir, &store.run_dir(&record.run), &record, outcome);
        Ok(Some(Ended { record, not_filed }))
    } else {
        Ok(None)
    }
}

/// Completes the ending of run `run` whose record was filed before its supervisor died
/// (the ledger row when it is missing, the pointer removed), when the seal holds the
/// verdict the record claims.
fn complete_filed(store: &RunStore, repo_dir: &Path, run: &str) -> Result<Option<Ended>> {
    let Some(filed) = store.load_record(run)? else {
        return Ok(None);
    };
    let repo = crate::git::repo::open(repo_dir)?;
    let sealed = git::seal::read(&repo, run)?;
    if !filed.phase.is_final()
        || !sealed.is_some_and(|s| s.verdict.is_some() && s.differences(&filed).is_empty())
    {
        return Ok(None);
    }
    let mut not_filed = None;
    let completed = store.complete_finish(run, |record| {
        let since = crate::run::landing::filed_since(record);
        let filed_row = crate::run::ledger::rows_since(&repo, &record.task, since)
            .map(|rows| {
                rows.iter().any(|r| {
                    r.run == record.run && r.attempt == record.attempts && r.integrated.is_none()
                })
            })
            .unwrap_or(false);
        if !filed_row {
            not_filed = filing::ledger_row(repo_dir, record).err();
        }
    })?;
    Ok(completed.map(|record| Ended { record, not_filed }))
}

/// Marks every live run whose supervisor died (kill -9, a reboot) as `abandoned`, ending
/// its worker's process group and keeping its commits. Runs waiting on the lead
/// (`needs-help`) have no supervisor and are left alone; a run whose supervisor has not
/// reported yet gets a grace period.
pub fn reap_dead(store: &RunStore, repo_dir: &Path, live: &[RunRecord]) -> Result<Vec<Ended>> {
    let mut reaped = Vec::new();
    for record in live.iter().cloned() {
        // The rule a snapshot reports a dead supervisor by: runs waiting on the lead,
        // queued and native runs have none to lose, and a run whose pointer cannot be
        // read is never judged, nor its processes killed.
        let dead = store.supervisor(&record) == Some(crate::core::supervisor::Supervisor::Dead);
        if dead
            && let Some(ended) =
                abandon(store, repo_dir, record, "the supervisor died; commits kept")?
        {
            reaped.push(ended);
        }
    }
    Ok(reaped)
}
