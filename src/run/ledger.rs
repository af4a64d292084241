//! Files a finished run's row in the outcome ledger (`refs/notes/crew-ledger`, on the blob
//! of `crew-task:<task>`), and reads the ledger back.

use std::path::Path;

use crate::run::error::{Context, Result};

use crate::core::ledger::{self, Row};
use crate::core::record::RunRecord;
use crate::git::notes;

/// The object a task's ledger note hangs on.
pub fn task_key(repo: &crate::git::Repository, task: &str) -> Result<crate::git::ObjectId> {
    Ok(notes::key_blob(repo, &format!("crew-task:{task}"))?)
}

/// Appends the run's row to its task's ledger note.
pub fn append(repo_dir: &Path, record: &RunRecord) -> Result<()> {
    let repo =
        crate::git::repo::open(repo_dir).context("cannot open the repository for the ledger")?;
    let key = task_key(&repo, &record.task)?;
    let line = serde_json::to_string(&Row::of(record))?;
    Ok(notes::append_line(&repo, notes::LEDGER, key, &line)?)
}

/// Appends a row built by the caller (integrate's) to `task`'s ledger note.
pub fn append_row(repo_dir: &Path, task: &str, row: &Row) -> Result<()> {
    let repo =
        crate::git::repo::open(repo_dir).context("cannot open the repository for the ledger")?;
    let key = task_key(&repo, task)?;
    let row = serde_json::to_string(row)?;
    Ok(notes::append_line(&repo, notes::LEDGER, key, &row)?)
}

/// The rows of one task, or of every task; oldest first.
pub fn rows(repo: &crate::git::Repository, task: Option<&str>) -> Result<Vec<Row>> {
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
    // By time (stamps of either precision); stable, so rows of one instant keep the order
    // they were appended in.
    rows.sort_by(|a, b| crate::core::stamp::cmp(&a.at, &b.at));
    Ok(rows)
}

/// What the whole ledger teaches: every configuration's stats and every task's estimate
/// from its normalised actuals. Derived, so it is cached under the state folder keyed by
/// the ledger's notes commit: any new row moves the ref and the cache is recomputed.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Learnt {
    tip: Option<String>,
    pub stats: Vec<ledger::ConfigStats>,
    /// Tasks with passing runs: their estimate in worker-hours.
    pub actuals: std::collections::HashMap<String, f64>,
}

/// Whether working out what the ledger teaches may keep it in the cache: a command that
/// acts writes it; one that only reads uses a current cache and writes nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cache {
    Write,
    ReadOnly,
}

/// The stats and estimates of the ledger as it is now.
pub fn learnt(repo: &crate::git::Repository, cache: Cache) -> Result<Learnt> {
    let tip = notes::tip(repo, notes::LEDGER)?.map(|id| id.to_string());
    let path = crate::core::layout::ledger_cache(&crate::git::repo::state_dir(repo));
    if let Ok(bytes) = std::fs::read(&path)
        && let Ok(cached) = serde_json::from_slice::<Learnt>(&bytes)
        && cached.tip == tip
    {
        return Ok(cached);
    }
    let rows = rows(repo, None)?;
    let stats = ledger::stats(&rows);
    let mut by_task: std::collections::HashMap<&str, Vec<&Row>> = Default::default();
    for row in &rows {
        by_task.entry(row.task.as_str()).or_default().push(row);
    }
    let actuals = by_task
        .into_iter()
        .filter_map(|(task, mine)| {
            ledger::estimate(None, &mine, &stats).map(|e| (task.to_string(), e))
        })
        .collect();
    let learnt = Learnt {
        tip,
        stats,
        actuals,
    };
    // A cache: failing to write it only costs the next reader the recomputation.
    if cache == Cache::Write
        && let Some(dir) = path.parent()
        && std::fs::create_dir_all(dir).is_ok()
        && let Ok(text) = serde_json::to_string(&learnt)
    {
        let _ = crate::sys::fs::write_atomic(&path, &text, 0o644);
    }
    Ok(learnt)
}

/// Each plan task's estimate: its normalised actuals where it has passing runs, else its
/// planned size.
pub fn estimates(
    repo: &crate::git::Repository,
    plan: &crate::core::plan::Plan,
    cache: Cache,
) -> Result<std::collections::HashMap<String, f64>> {
    let learnt = learnt(repo, cache)?;
    Ok(plan
        .tasks
        .iter()
        .filter_map(|t| {
            learnt
                .actuals
                .get(&t.id)
                .copied()
                .or(t.size)
                .map(|e| (t.id.clone(), e))
        })
        .collect())
}

/// Advice to split a task whose size is beyond the chosen configuration's competence
/// horizon (from `ledger stats`).
pub fn split_advice(
    repo: &crate::git::Repository,
    record: &crate::core::record::RunRecord,
) -> Option<String> {
    let size = record.size_h?;
    // Asked by dispatch, which acts.
    let stats = learnt(repo, Cache::Write).ok()?.stats;
    let mine = stats.iter().find(|s| {
        s.backend == record.backend && s.model == record.model && s.effort == record.effort
    })?;
    let horizon = mine.horizon_h?;
    (size > horizon).then(|| {
        format!(
            "task {} is sized {size}h, beyond the {horizon}h competence horizon of {} {} {}: split it into tasks of at most {horizon}h",
            record.task,
            record.backend,
            record.model.as_deref().unwrap_or("-"),
            record.effort.as_deref().unwrap_or("-"),
        )
    })
}
