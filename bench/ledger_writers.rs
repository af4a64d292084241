//! Ledger writers, for `bench/ledger.py`, all through git-crew's own ledger code.
//!
//!     ledger_writers REPO WRITERS ROWS_EACH
//!
//! N processes append rows to the same task's ledger at once; then every row is counted.
//! Prints one JSON object: writers, rows each, rows expected and found, lost, seconds,
//! rows per second.
//!
//!     ledger_writers --append REPO TASK
//!
//! Appends one row to TASK, as a finished run does (one process, one row: what the bench
//! times).
//!
//!     ledger_writers --fill REPO TASK ROWS FAIL_EVERY [--until-full]
//!
//! Gives TASK a ledger of ROWS rows (every FAIL_EVERY-th a failure of model m0, the
//! others cycling m0, m1, m2) laid out exactly as ROWS appends lay it out — the head and
//! its carry, the segments — computed in memory with the same functions and written in
//! one notes commit; with --until-full, rows go on until one more would roll the head.
//! Prints the head's size, its rows and the segments.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

use git_crew::git::notes;

/// A bench program's failure: printed by `main` as its error.
type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 5 && args[1] == "--child" {
        return child(Path::new(&args[2]), &args[3], args[4].parse()?);
    }
    if args.len() == 4 && args[1] == "--append" {
        let repo = gix::open(&args[2])?;
        let row = row(&args[3], "append", 0, false);
        return Ok(git_crew::run::ledger::append_line(
            &repo,
            &args[3],
            &row.to_string(),
        )?);
    }
    if (args.len() == 6 || args.len() == 7) && args[1] == "--fill" {
        let until_full = args.get(6).map(String::as_str) == Some("--until-full");
        return fill(
            Path::new(&args[2]),
            &args[3],
            args[4].parse()?,
            args[5].parse()?,
            until_full,
        );
    }
    let [_, repo, writers, rows] = &args[..] else {
        return Err("usage: ledger_writers REPO WRITERS ROWS_EACH".into());
    };
    let (writers, rows): (usize, usize) = (writers.parse()?, rows.parse()?);
    let me = std::env::current_exe()?;
    let start = Instant::now();
    let children: Vec<_> = (0..writers)
        .map(|w| {
            Command::new(&me)
                .args(["--child", repo, &format!("w{w}"), &rows.to_string()])
                .spawn()
        })
        .collect::<std::io::Result<_>>()?;
    for mut child in children {
        if !child.wait()?.success() {
            return Err("a writer failed".into());
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let repo = gix::open(repo)?;
    let found = git_crew::run::ledger::rows(&repo, Some("bench-writers"))?.len();
    let expected = writers * rows;
    println!(
        "{}",
        serde_json::json!({
            "writers": writers,
            "rows_each": rows,
            "expected": expected,
            "found": found,
            "lost": expected.saturating_sub(found),
            "seconds": (seconds * 1000.0).round() / 1000.0,
            "rows_per_s": ((found as f64 / seconds) * 10.0).round() / 10.0,
        })
    );
    Ok(())
}

fn child(repo: &Path, writer: &str, rows: usize) -> Result<()> {
    let repo = gix::open(repo)?;
    for i in 0..rows {
        let mut row = row("bench-writers", &format!("{writer}-{i}"), i, false);
        row["at"] = format!("2026-01-01T00:00:00.{i:06}Z").into();
        git_crew::run::ledger::append_line(&repo, "bench-writers", &row.to_string())?;
    }
    Ok(())
}

/// A finished run's row of `task`, the size real ones have; a failure of m0 or a pass of
/// m0, m1 or m2.
fn row(task: &str, run: &str, i: usize, failed: bool) -> serde_json::Value {
    serde_json::json!({
        "at": "2026-01-01T00:00:00Z", "run": run, "attempt": 1, "task": task,
        "backend": "codex", "model": if failed { "m0".to_string() } else { format!("m{}", i % 3) },
        "effort": "high", "tier": "mid", "role": "implement", "worker": null,
        "claimed": "done", "outcome": if failed { "fail" } else { "pass" },
        "reward": if failed { 0.0 } else { 1.0 }, "size_h": 1.0, "wall_s": 60,
        "files_changed": 3, "scope_changed": false, "key": if failed { "m0".to_string() } else { format!("m{}", i % 3) },
    })
}

fn fill(repo: &Path, task: &str, rows: usize, fail_every: usize, until_full: bool) -> Result<()> {
    use git_crew::core::ledger_notes::{self as layout, LIMITS};
    let repo = gix::open(repo)?;
    let mut head = String::new();
    let mut segments: std::collections::BTreeMap<u32, String> = Default::default();
    let mut i = 0;
    loop {
        let line = row(task, &format!("r-{i}"), i, i % fail_every.max(1) == 0).to_string();
        let line = git_crew::core::stamp::after(&head, &layout::with_writer(&line, "bench"));
        // With --until-full, on while the next row would not roll the head (with room to
        // spare, so the one appended after does).
        if i >= rows && (!until_full || head.len() + line.len() + 1 + 64 >= LIMITS.head_max) {
            break;
        }
        head.push_str(&line);
        head.push('\n');
        if layout::needs_roll(&head, LIMITS) {
            let last = layout::last_segment(&head).and_then(|n| segments.get(&n).cloned());
            let rolled = layout::roll(&head, task, last.as_deref(), LIMITS);
            head = rolled.head;
            segments.extend(rolled.segments);
        }
        i += 1;
    }
    let mut edits = vec![(
        notes::key_blob(&repo, &layout::head_key(task))?,
        head.clone(),
    )];
    for (n, text) in &segments {
        edits.push((
            notes::key_blob(&repo, &layout::segment_key(task, *n))?,
            text.clone(),
        ));
    }
    notes::edit(&repo, notes::LEDGER, "bench: fill a task", |_| {
        Ok(edits.clone())
    })?;
    println!(
        "{}",
        serde_json::json!({
            "task": task,
            "rows": i,
            "head_bytes": head.len(),
            "head_rows": head.lines().count().saturating_sub(usize::from(!segments.is_empty())),
            "segments": segments.len(),
            "segment_bytes": segments.values().map(String::len).sum::<usize>(),
        })
    );
    Ok(())
}
