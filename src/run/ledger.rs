//! Files a finished run's row in the outcome ledger (`refs/notes/crew-ledger`, on the blob
//! of `crew-task:<task>`), and reads the ledger back.

use std::path::Path;

use anyhow::Context;

use crate::core::ledger::{self, Row};
use crate::core::record::RunRecord;
use crate::git::notes;

/// The object a task's ledger note hangs on.
pub fn task_key(repo: &gix::Repository, task: &str) -> anyhow::Result<gix::ObjectId> {
    notes::key_blob(repo, &format!("crew-task:{task}"))
}

/// Appends the run's row to its task's ledger note.
pub fn append(repo_dir: &Path, record: &RunRecord) -> anyhow::Result<()> {
    let repo = gix::open(repo_dir).context("cannot open the repository for the ledger")?;
    let key = task_key(&repo, &record.task)?;
    let line = serde_json::to_string(&Row::of(record))?;
    notes::append_line(&repo, notes::LEDGER, key, &line)
}

/// Appends a row built by the caller (integrate's) to `task`'s ledger note.
pub fn append_row(repo_dir: &Path, task: &str, row: &Row) -> anyhow::Result<()> {
    let repo = gix::open(repo_dir).context("cannot open the repository for the ledger")?;
    let key = task_key(&repo, task)?;
    notes::append_line(&repo, notes::LEDGER, key, &serde_json::to_string(row)?)
}

/// The rows of one task, or of every task; oldest first.
pub fn rows(repo: &gix::Repository, task: Option<&str>) -> anyhow::Result<Vec<Row>> {
    let mut rows = match task {
        Some(task) => {
            let key = notes::key_id(repo, &format!("crew-task:{task}"))?;
            ledger::parse(&notes::read(repo, notes::LEDGER, key)?.unwrap_or_default())
        }
        None => notes::all(repo, notes::LEDGER)?
            .iter()
            .flat_map(|(_, text)| ledger::parse(text))
            .collect(),
    };
    // Stable: rows of the same second keep their order of appending.
    rows.sort_by(|a, b| a.at.cmp(&b.at));
    Ok(rows)
}

/// Each plan task's estimate, updated from the normalised actuals in the ledger.
pub fn estimates(
    repo: &gix::Repository,
    plan: &crate::core::plan::Plan,
) -> anyhow::Result<std::collections::HashMap<String, f64>> {
    let rows = rows(repo, None)?;
    let stats = ledger::stats(&rows);
    let mut out = std::collections::HashMap::new();
    for task in &plan.tasks {
        let mine: Vec<&Row> = rows.iter().filter(|r| r.task == task.id).collect();
        if let Some(estimate) = ledger::estimate(task.size, &mine, &stats) {
            out.insert(task.id.clone(), estimate);
        }
    }
    Ok(out)
}
