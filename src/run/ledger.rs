//! Files a finished run's row in the outcome ledger (`refs/notes/crew-ledger`, on the blob
//! of `crew-task:<task>`, its older rows in segments: `core::ledger_notes`), and reads the
//! ledger back.

use std::path::Path;

use crate::run::error::{Context, Result};

use crate::core::ledger::{self, Row, Tally};
use crate::core::ledger_notes::{self, LIMITS};
use crate::core::record::RunRecord;
use crate::git::notes;

/// The object a task's ledger note hangs on.
pub fn task_key(repo: &crate::git::Repository, task: &str) -> Result<crate::git::ObjectId> {
    Ok(notes::key_blob(repo, &ledger_notes::head_key(task))?)
}

/// Appends the run's row to its task's ledger note.
pub fn append(repo_dir: &Path, record: &RunRecord) -> Result<()> {
    append_row(repo_dir, &record.task, &Row::of(record))
}

/// Appends a row built by the caller (integrate's) to `task`'s ledger note.
pub fn append_row(repo_dir: &Path, task: &str, row: &Row) -> Result<()> {
    let repo =
        crate::git::repo::open(repo_dir).context("cannot open the repository for the ledger")?;
    append_line(&repo, task, &serde_json::to_string(row)?)
}

/// Appends one row (a JSON object whose first field is `at`) to `task`'s head note,
/// stamped after every row the head holds and naming this clone as its writer; a head
/// that passes its limit rolls its older rows into segments in the same notes commit.
/// The head is all that is read and rewritten, and at most one segment besides on a
/// roll: the cost does not grow with the task's history.
pub fn append_line(repo: &crate::git::Repository, task: &str, line: &str) -> Result<()> {
    let key = task_key(repo, task)?;
    let line = ledger_notes::with_writer(line.trim_end(), &writer(repo)?);
    notes::edit(repo, notes::LEDGER, "crew: append a row", |notes| {
        let mut head = notes.get(key)?.unwrap_or_default();
        if !head.is_empty() && !head.ends_with('\n') {
            head.push('\n');
        }
        // After every row the head holds (its carry bears the latest rolled stamp), so a
        // union keeps this writer's order.
        head.push_str(&crate::core::stamp::after(&head, &line));
        head.push('\n');
        if !ledger_notes::needs_roll(&head, LIMITS) {
            return Ok(vec![(key, head)]);
        }
        let last = match ledger_notes::last_segment(&head) {
            Some(n) => notes.get(notes::key_id(repo, &ledger_notes::segment_key(task, n))?)?,
            None => None,
        };
        let rolled = ledger_notes::roll(&head, task, last.as_deref(), LIMITS);
        let mut edits = vec![(key, rolled.head)];
        for (n, text) in rolled.segments {
            edits.push((
                notes::key_blob(repo, &ledger_notes::segment_key(task, n))?,
                text,
            ));
        }
        Ok(edits)
    })?;
    Ok(())
}

/// This clone's id as a ledger writer: read from the state folder, made on first use. Two
/// ids in one clone do no harm; one id in two clones would (a copy of a `.git` folder
/// made with `cp -r` must drop `crew/ledger-writer`).
fn writer(repo: &crate::git::Repository) -> Result<String> {
    let path = crate::core::layout::ledger_writer(&crate::git::repo::state_dir(repo));
    if let Ok(text) = std::fs::read_to_string(&path) {
        let id = text.trim();
        if !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_alphanumeric()) {
            return Ok(id.to_string());
        }
    }
    let id = uuid::Uuid::new_v4().simple().to_string()[..16].to_string();
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    crate::sys::fs::write_atomic(&path, &format!("{id}\n"), 0o644)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(id)
}

/// The head note of `task`, as text ("" when it has none).
fn head(repo: &crate::git::Repository, task: &str) -> Result<String> {
    let key = notes::key_id(repo, &ledger_notes::head_key(task))?;
    Ok(notes::read(repo, notes::LEDGER, key)?.unwrap_or_default())
}

/// The texts of segments `numbers` of `task` (those that exist).
fn segments(repo: &crate::git::Repository, task: &str, numbers: &[u32]) -> Result<Vec<String>> {
    let keys = numbers
        .iter()
        .map(|n| notes::key_id(repo, &ledger_notes::segment_key(task, *n)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(notes::read_many(repo, notes::LEDGER, &keys)?
        .into_iter()
        .flatten()
        .collect())
}

/// The rows of one task (its head and every segment), or of every task; oldest first,
/// each once.
pub fn rows(repo: &crate::git::Repository, task: Option<&str>) -> Result<Vec<Row>> {
    match task {
        Some(task) => {
            let head = head(repo, task)?;
            let numbers: Vec<u32> = ledger_notes::Head::parse(&head)
                .carry
                .segments
                .keys()
                .copied()
                .collect();
            let segments = segments(repo, task, &numbers)?;
            Ok(ledger_notes::rows_of(
                segments.iter().map(String::as_str).chain([head.as_str()]),
            ))
        }
        None => {
            let all = notes::all(repo, notes::LEDGER)?;
            Ok(ledger_notes::rows_of(
                all.iter().map(|(_, text)| text.as_str()),
            ))
        }
    }
}

/// The rows of `task` stamped at or after `since`: its head, and only the segments that
/// hold rows that late.
pub fn rows_since(
    repo: &crate::git::Repository,
    task: &str,
    since: jiff::Timestamp,
) -> Result<Vec<Row>> {
    let head = head(repo, task)?;
    let numbers = ledger_notes::Head::parse(&head).carry.segments_since(since);
    let segments = segments(repo, task, &numbers)?;
    let mut rows =
        ledger_notes::rows_of(segments.iter().map(String::as_str).chain([head.as_str()]));
    rows.retain(|r| crate::core::stamp::parse(&r.at).is_none_or(|at| at >= since));
    Ok(rows)
}

/// What the two-failure rule needs of `task`'s rows, read from its head note alone.
pub fn tally(repo: &crate::git::Repository, task: &str) -> Result<Tally> {
    Ok(ledger_notes::tally(&head(repo, task)?, task))
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
