//! `git crew watch [--once]`: a live console of the in-flight runs.

use std::io::{IsTerminal, Read, Seek, SeekFrom, Write};

use clap::Args;
use serde::Serialize;

use super::context::CommandContext;
use super::error::{CrewError, Result};
use super::runs;
use super::ui::{Format, Report};
use crate::core::record::RunRecord;
use crate::sys::clock::now_millis;

/// Watch the in-flight runs: phase, elapsed/budget, session, last activity and the last
/// line of output, refreshed until none is left.
///
/// With --once (or when stdout is not a terminal) it prints one frame and exits.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  git crew watch\n  git crew watch --once --json")]
pub struct WatchArgs {
    /// Print one frame and exit.
    #[arg(long)]
    pub once: bool,
    /// Time between frames.
    #[arg(long, default_value = "1s", value_name = "DURATION")]
    pub interval: String,
}

pub fn run(ctx: &CommandContext, args: WatchArgs) -> Result<Report> {
    let interval = humantime::parse_duration(&args.interval).map_err(|e| {
        CrewError::usage("bad-duration", format!("--interval {}: {e}", args.interval))
    })?;
    let live_console = !args.once && ctx.format == Format::Human && std::io::stdout().is_terminal();
    loop {
        let store = runs::settled(ctx)?;
        let live = store.live().map_err(CrewError::internal)?;
        if !live_console {
            let frame = WatchFrame {
                runs: live.iter().map(WatchRun::of).collect(),
            };
            return Ok(Report::of(&frame, render(&live)));
        }
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "\x1b[2J\x1b[H{}", render(&live));
        let _ = out.flush();
        if live.is_empty() {
            return Ok(Report::of(&WatchFrame { runs: Vec::new() }, ""));
        }
        std::thread::sleep(interval);
    }
}

/// `watch`: one frame, the in-flight runs (SPEC §2 command table, `watch --once`).
#[derive(Debug, Serialize)]
pub struct WatchFrame<'a> {
    pub runs: Vec<WatchRun<'a>>,
}

/// A run of a `watch` frame: its run result (SPEC §2), then the last line of its output.
#[derive(Debug, Serialize)]
pub struct WatchRun<'a> {
    #[serde(flatten)]
    pub result: crate::core::result::RunResult<'a>,
    pub last_line: String,
}

impl<'a> WatchRun<'a> {
    fn of(record: &'a RunRecord) -> WatchRun<'a> {
        WatchRun {
            result: runs::result(record),
            last_line: last_line(record),
        }
    }
}

fn render(live: &[RunRecord]) -> String {
    let mut lines = vec![format!(
        "git crew watch — {} in flight — {}",
        live.len(),
        crate::core::stamp::seconds_of_millis(now_millis())
    )];
    for record in live {
        lines.push(format!(
            "{}  session {}  last activity {}",
            runs::result_line(record),
            record.session.as_deref().unwrap_or("-"),
            record.last_activity_at.map_or_else(
                || "-".to_string(),
                |at| crate::core::result::shown(record, at)
            ),
        ));
        let last = last_line(record);
        if !last.is_empty() {
            lines.push(format!("    > {last}"));
        }
    }
    lines.join("\n")
}

/// The last non-empty line of the attempt's output as it comes (its stdout, else its
/// stderr; the task's transcript between attempts), shortened.
fn last_line(record: &RunRecord) -> String {
    let run_dir = std::path::Path::new(&record.prompt_file)
        .parent()
        .map(std::path::Path::to_path_buf)
        .unwrap_or_default();
    let mut candidates: Vec<std::path::PathBuf> = ["out", "err"]
        .iter()
        .map(|ext| crate::core::layout::attempt_output(&run_dir, record.attempts, ext))
        .collect();
    candidates.extend(record.transcript.as_ref().map(std::path::PathBuf::from));
    candidates
        .iter()
        .map(|path| last_line_of(path))
        .find(|line| !line.is_empty())
        .unwrap_or_default()
}

fn last_line_of(path: &std::path::Path) -> String {
    let Ok(mut file) = std::fs::File::open(path) else {
        return String::new();
    };
    let len = file.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = file.seek(SeekFrom::Start(len.saturating_sub(4096)));
    let mut tail = Vec::new();
    let _ = file.read_to_end(&mut tail);
    let text = String::from_utf8_lossy(&tail);
    let line = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    line.chars().take(100).collect()
}
