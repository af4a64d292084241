//! Concurrent ledger writers, for `bench/ledger.py`: N processes append rows to the same
//! task's ledger note at once through git-crew's notes code; then every row is counted.
//!
//!     ledger_writers REPO WRITERS ROWS_EACH
//!
//! Prints one JSON object: writers, rows each, rows expected and found, lost, seconds,
//! rows per second.

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
    let key = notes::key_blob(&repo, "crew-task:bench-writers")?;
    for i in 0..rows {
        let row = serde_json::json!({
            "at": format!("2026-01-01T00:00:00.{i:06}Z"),
            "run": format!("{writer}-{i}"),
            "attempt": 1,
            "task": "bench-writers",
            "backend": "bench",
            "model": null, "effort": null, "tier": null,
            "role": "implement", "worker": null, "claimed": "done",
            "outcome": "pass", "reward": 1.0, "size_h": null, "wall_s": 0,
            "files_changed": 0, "scope_changed": false,
        });
        notes::append_line(&repo, notes::LEDGER, key, &row.to_string())?;
    }
    Ok(())
}
