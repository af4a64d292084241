//! `watch` (each frame, and `--once`): the runs in flight, each with its supervisor as
//! found and the last line of its output, and the finished runs that wait to be
//! integrated, read as they are, with the conflict forecast of those that may land (its
//! trial merges cached in the context, so a console's next frame merges only what
//! moved).

use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::core::record::RunRecord;
use crate::core::supervisor::Supervisor;
use crate::core::text::{printable, truncate};
use crate::error::Result;
use crate::state::runs::Finished;
use crate::view::human::IntegrationState;

use super::{Context, runs};

/// How many of the most recent finished runs are looked at for one that waits to be
/// integrated.
const RECENT: usize = 20;

/// At most this many characters of a run's last line are kept.
const LAST_LINE: usize = 200;

/// The runs of a frame, read at `now` (Unix milliseconds).
pub struct Frame {
    pub now: u64,
    /// In flight, oldest first.
    pub live: Vec<Watched>,
    /// Finished, passed and not yet integrated (among the most recent), oldest first.
    pub awaiting: Vec<RunRecord>,
    /// The conflict forecast of the passes awaiting integration and the live runs with
    /// commits.
    pub forecasts: super::forecast::Forecasts,
}

/// A run in flight, as a frame finds it.
pub struct Watched {
    pub record: RunRecord,
    /// Its supervisor as found (`None`: it has none to lose).
    pub supervisor: Option<Supervisor>,
    /// The last non-empty line of its output, printable and shortened (empty when none).
    pub last_line: String,
}

/// The frame now, read as the runs are: a frame changes nothing (a run whose supervisor
/// died shows it; the queue moves when a command acts).
pub fn frame(ctx: &Context) -> Result<Frame> {
    let store = runs::open(ctx)?;
    let snapshot = runs::snapshot(&store, Finished::Recent(RECENT))?;
    let live: Vec<Watched> = snapshot
        .live
        .into_iter()
        .map(|found| Watched {
            last_line: last_line(&found.record),
            record: found.record,
            supervisor: found.supervisor,
        })
        .collect();
    let awaiting = snapshot
        .finished
        .into_iter()
        .filter(|r| {
            matches!(
                IntegrationState::of(r),
                Some(IntegrationState::AwaitingIntegration | IntegrationState::Unverified)
            )
        })
        .collect::<Vec<RunRecord>>();
    // The forecast of every run of the frame (naming any run it conflicts with, shown or
    // not).
    let live_records: Vec<&RunRecord> = live.iter().map(|w: &Watched| &w.record).collect();
    let shown: Vec<&str> = (live_records.iter().copied())
        .chain(&awaiting)
        .map(|r| r.run.as_str())
        .collect();
    let found = super::forecast::forecast(
        ctx,
        &store,
        &live_records,
        super::forecast::Among::Everything,
        super::forecast::Focus::Runs(&shown),
        None,
    );
    let forecasts = super::forecast::or_warn(ctx, found);
    Ok(Frame {
        now: crate::sys::clock::now_millis(),
        live,
        awaiting,
        forecasts,
    })
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

/// The last non-empty line among the last 4 KiB of `path`; empty when it cannot be read.
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
        .map(printable)
        .rfind(|l| !l.is_empty())
        .unwrap_or_default();
    truncate(&line, LAST_LINE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_line_is_the_last_printable_one_of_the_tail_shortened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let long = "y".repeat(300);
        std::fs::write(&path, format!("first\n{long}\n\u{1b}[0m\n  \n")).unwrap();
        let line = last_line_of(&path);
        assert_eq!(line.chars().count(), LAST_LINE);
        assert!(line.starts_with("yyy") && line.ends_with('…'), "{line}");
        std::fs::write(&path, format!("{}\nlast words\n", "x".repeat(8000))).unwrap();
        assert_eq!(last_line_of(&path), "last words");
        assert_eq!(last_line_of(&dir.path().join("missing")), "");
    }
}
