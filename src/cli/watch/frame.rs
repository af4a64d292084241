//! One frame of `watch`: the runs in flight and the finished runs that wait to be
//! integrated, read now, with the last line of each live run's output.

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::super::context::CommandContext;
use super::super::error::Result;
use super::super::runs;
use crate::core::record::RunRecord;
use crate::core::supervisor::Supervisor;
use crate::state::runs::Finished;
use crate::view::console::table::{self, Row};
use crate::view::human::{self, IntegrationState};
use crate::view::result::{DEAD_SUPERVISOR, RunResult};

/// How many of the most recent finished runs are looked at for one that waits to be
/// integrated.
const RECENT: usize = 20;

/// The runs of a frame, read at `now` (Unix milliseconds).
pub struct Frame {
    pub now: u64,
    /// In flight, oldest first.
    pub live: Vec<RunRecord>,
    /// Each live run's supervisor as found (`None`: it has none to lose).
    supervisors: Vec<Option<Supervisor>>,
    /// The last line of each live run's output.
    last_lines: Vec<String>,
    /// Finished, passed and not yet integrated (among the most recent), oldest first.
    pub awaiting: Vec<RunRecord>,
}

/// `watch --once` and `watch --json`: the runs in flight (SPEC §2, each a run result and
/// the last line of its output), then the finished runs that wait to be integrated.
#[derive(Debug, Serialize)]
pub struct WatchFrame<'a> {
    pub runs: Vec<WatchRun<'a>>,
    pub awaiting_integration: Vec<RunResult<'a>>,
}

/// A run of a `watch` frame: its run result (SPEC §2), its supervisor as found
/// (`"alive"`, `"dead"`, or `null` for a run with none to lose), then the last line of
/// its output.
#[derive(Debug, Serialize)]
pub struct WatchRun<'a> {
    #[serde(flatten)]
    pub result: RunResult<'a>,
    pub supervisor: Option<Supervisor>,
    pub last_line: &'a str,
}

/// The frame now, read as the runs are: a frame changes nothing (a run whose supervisor
/// died shows it; the queue moves when a command acts).
pub fn collect(ctx: &CommandContext) -> Result<Frame> {
    let store = runs::open(ctx)?;
    let snapshot = runs::snapshot(&store, Finished::Recent(RECENT))?;
    let (live, supervisors): (Vec<RunRecord>, Vec<Option<Supervisor>>) = snapshot
        .live
        .into_iter()
        .map(|found| (found.record, found.supervisor))
        .unzip();
    let awaiting = snapshot
        .finished
        .into_iter()
        .filter(|r| {
            matches!(
                IntegrationState::of(r),
                Some(IntegrationState::AwaitingIntegration | IntegrationState::Unverified)
            )
        })
        .collect();
    Ok(Frame {
        now: crate::sys::clock::now_millis(),
        last_lines: live.iter().map(last_line).collect(),
        live,
        supervisors,
        awaiting,
    })
}

impl Frame {
    /// Every run listed, in the order shown.
    pub fn records(&self) -> impl Iterator<Item = &RunRecord> {
        self.live.iter().chain(&self.awaiting)
    }

    pub fn rows(&self) -> Vec<Row> {
        // A dead supervisor says so where the run's last line would be.
        let lasts = self
            .last_lines
            .iter()
            .zip(&self.supervisors)
            .map(|(last, supervisor)| match supervisor {
                Some(Supervisor::Dead) => DEAD_SUPERVISOR,
                _ => last.as_str(),
            })
            .chain(std::iter::repeat_n("", self.awaiting.len()));
        self.records()
            .zip(lasts)
            .map(|(r, last)| table::row(r, self.now, last))
            .collect()
    }

    pub fn questions(&self) -> Vec<[String; 2]> {
        self.live.iter().filter_map(table::question).collect()
    }

    /// `git crew watch — 2 in flight, 1 awaiting integration — <time>`.
    pub fn header(&self) -> String {
        let mut counts = format!("{} in flight", self.live.len());
        if !self.awaiting.is_empty() {
            counts.push_str(&format!(", {} awaiting integration", self.awaiting.len()));
        }
        format!(
            "git crew watch — {counts} — {}",
            crate::core::stamp::seconds_of_millis(self.now)
        )
    }

    pub fn json(&self) -> WatchFrame<'_> {
        WatchFrame {
            runs: self
                .live
                .iter()
                .zip(&self.last_lines)
                .zip(&self.supervisors)
                .map(|((record, last), supervisor)| WatchRun {
                    result: RunResult::at(record, self.now),
                    supervisor: *supervisor,
                    last_line: last,
                })
                .collect(),
            awaiting_integration: self
                .awaiting
                .iter()
                .map(|r| RunResult::at(r, self.now))
                .collect(),
        }
    }
}

/// The last non-empty line of the attempt's output as it comes (its stdout, else its
/// stderr; the task's transcript between attempts), shortened.
fn last_line(record: &RunRecord) -> String {
    let run_dir = Path::new(&record.prompt_file)
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let mut candidates: Vec<PathBuf> = ["out", "err"]
        .iter()
        .map(|ext| crate::core::layout::attempt_output(&run_dir, record.attempts, ext))
        .collect();
    candidates.extend(record.transcript.as_ref().map(PathBuf::from));
    candidates
        .iter()
        .map(|path| last_line_of(path))
        .find(|line| !line.is_empty())
        .unwrap_or_default()
}

fn last_line_of(path: &Path) -> String {
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
        .map(human::printable)
        .rfind(|l| !l.is_empty())
        .unwrap_or_default();
    human::truncate(&line, 200)
}
