//! Filing an ended run: completing its record (outcome, final phase, times, the branch's
//! diff, discrepancies; its worktree unlocked) and appending its ledger row. A row that
//! cannot be written is handed back as a value ([`NotFiled`]), never printed and never
//! fatal to the run: the caller says it where its output goes.

use crate::run::error::Result;
use std::path::Path;

use crate::core::record::{DiffStat, Outcome, RunRecord};
use crate::core::stamp;
use crate::git::worktree;
use crate::sys::clock::now_millis;

/// A run's ledger row that was not written, and why.
#[derive(Debug, thiserror::Error)]
#[error(
    "the ledger row of run {run} was not written: {}",
    crate::fault::chain(cause)
)]
pub struct NotFiled {
    pub run: String,
    pub cause: crate::run::error::Error,
}

/// Appends an ended attempt's ledger row.
pub fn ledger_row(repo_dir: &Path, record: &RunRecord) -> Result<(), NotFiled> {
    crate::run::ledger::append(repo_dir, record).map_err(|cause| NotFiled {
        run: record.run.clone(),
        cause,
    })
}

/// Completes a record for filing: outcome, final phase, times, the branch's diff,
/// discrepancies; and unlocks the worktree (kept, with its branch).
pub fn seal(record: &mut RunRecord, outcome: Outcome, repo_dir: &Path) {
    record.outcome = Some(outcome);
    record.phase = outcome.final_phase();
    record.pid = None;
    measure(record, repo_dir, now_millis());
    record.discrepancies = record.find_discrepancies();
    let _ = worktree::unlock(repo_dir, Path::new(&record.worktree));
}

/// What an attempt's row reports when it ends at `now`: the time, the wall clock and the
/// branch's diff since its base. The same for every path that files a row.
pub fn measure(record: &mut RunRecord, repo_dir: &Path, now: u64) {
    record.finished_at = Some(stamp::whole_second(stamp::from_millis(now)));
    record.elapsed_s = stamp::elapsed_s(record.started_at, now);
    if let Ok((files, insertions, deletions)) =
        worktree::numstat(repo_dir, &record.base, &record.branch)
    {
        record.diff = DiffStat {
            files,
            insertions,
            deletions,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_that_cannot_be_written_comes_back_naming_its_run() {
        let dir = tempfile::tempdir().unwrap();
        // No repository there: the ledger's notes cannot be written.
        let mut record = RunRecord::blank("20260101-000000-0001");
        record.task = "t".into();
        let err = ledger_row(dir.path(), &record).unwrap_err();
        assert_eq!(err.run, record.run);
        assert!(
            err.to_string()
                .starts_with("the ledger row of run 20260101-000000-0001 was not written: "),
            "{err}"
        );
    }
}
