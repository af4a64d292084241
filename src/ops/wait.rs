//! `wait` (and the `--wait` of `dispatch` and `retry`): poll runs until they settle —
//! end, or need the lead — or one does, or the timeout comes first; settling the store
//! about once a second meanwhile, so a run whose supervisor died ends and a freed slot
//! starts a queued run.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::core::record::{Phase, RunRecord};
use crate::error::{CrewError, ErrorCode, Result};
use crate::state::runs::RunStore;
use crate::sys::clock::now_millis;
use crate::view::result::Awaited;

use super::answer::Status;
use super::{Context, runs};

pub struct Request {
    /// The runs: addresses for [`wait`] (see [`runs::resolve`]), whole run ids for
    /// [`wait_for`].
    pub runs: Vec<String>,
    /// Return as soon as one of them settles.
    pub any: bool,
    /// Give up after this long.
    pub timeout: Option<Duration>,
}

/// What the wait tells its front end while it polls.
pub enum Poll<'a> {
    /// The runs still waited for, as of `now` (Unix milliseconds): told each poll.
    Waiting { left: &'a [&'a RunRecord], now: u64 },
    /// Something settling the store met on the side (a ledger row not written).
    Warning(String),
}

/// The runs waited for, as the wait left them.
pub struct Waited {
    /// Every run waited for, in the order asked, settled or not.
    pub runs: Vec<RunRecord>,
    /// The timeout came first.
    pub timed_out: bool,
    /// The wait returned as soon as one run settled.
    pub any: bool,
}

impl Waited {
    /// The runs the wait's answer is judged by: with `any`, the ones that settled (the
    /// others are still going); else every one.
    pub fn judged(&self) -> Vec<&RunRecord> {
        self.runs
            .iter()
            .filter(|r| !self.any || settled(r))
            .collect()
    }

    /// The runs waited for that have not settled (none unless the timeout came first,
    /// or `any` returned with others still going).
    pub fn still_working(&self) -> Vec<&RunRecord> {
        self.runs.iter().filter(|r| !settled(r)).collect()
    }

    /// What `wait` prints as data, measured at `now` (Unix milliseconds).
    pub fn output(&self, now: u64) -> crate::view::output::WaitOutput<'_> {
        crate::view::output::WaitOutput::at(&self.runs, &self.still_working(), self.timed_out, now)
    }

    /// How the wait came out: every run judged passed (exit 0); one needs the lead and
    /// none failed, or the timeout came first (exit 5); else `run-failed` (exit 1).
    pub fn status(&self) -> Status {
        match crate::view::result::awaited(&self.judged(), self.timed_out) {
            Awaited::Passed => Status::Ok,
            Awaited::NeedsLead => Status::Attention,
            Awaited::Failed => {
                Status::Failed(CrewError::new(ErrorCode::RunFailed, "not every run passed"))
            }
        }
    }
}

/// Whether the wait stops waiting for a run: it ended, or it needs the lead.
pub fn settled(record: &RunRecord) -> bool {
    record.phase.is_final() || record.phase == Phase::NeedsHelp
}

/// Settles the store, resolves each run (exit 3 for one that is not on file), then waits
/// as [`wait_for`] does.
pub fn wait(ctx: &Context, req: &Request, on_poll: impl FnMut(Poll<'_>)) -> Result<Waited> {
    let store = runs::settled(ctx)?;
    let mut resolved = Vec::new();
    for run in &req.runs {
        let run = runs::resolve(&store, run)?;
        runs::load(&store, &run)?;
        resolved.push(run);
    }
    poll(&store, ctx.workdir().ok(), &resolved, req, on_poll)
}

/// Polls the runs `req` names by id until they settle (or one does, with `any`), or the
/// timeout comes first; `on_poll` is told the runs left each poll.
pub fn wait_for(ctx: &Context, req: &Request, on_poll: impl FnMut(Poll<'_>)) -> Result<Waited> {
    let store = runs::open(ctx)?;
    poll(&store, ctx.workdir().ok(), &req.runs, req, on_poll)
}

fn poll(
    store: &RunStore,
    repo_dir: Option<&Path>,
    runs: &[String],
    req: &Request,
    mut on_poll: impl FnMut(Poll<'_>),
) -> Result<Waited> {
    let start = Instant::now();
    let mut last_check = Instant::now();
    loop {
        let mut records = Vec::new();
        for run in runs {
            records.push(runs::load(store, run)?);
        }
        let done = records.iter().filter(|r| settled(r)).count();
        let over = (req.any && done > 0) || done == records.len();
        if over || req.timeout.is_some_and(|t| start.elapsed() >= t) {
            return Ok(Waited {
                runs: records,
                timed_out: !over,
                any: req.any,
            });
        }
        let left: Vec<&RunRecord> = records.iter().filter(|r| !settled(r)).collect();
        on_poll(Poll::Waiting {
            left: &left,
            now: now_millis(),
        });
        std::thread::sleep(Duration::from_millis(100));
        // A supervisor may die, or a slot free up, while we wait: look about once a second.
        if last_check.elapsed() >= Duration::from_secs(1) {
            last_check = Instant::now();
            if let Some(repo_dir) = repo_dir {
                let not_filed = crate::run::queue::settle(store, repo_dir).unwrap_or_default();
                for row in not_filed {
                    on_poll(Poll::Warning(row.to_string()));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::record::Outcome;

    fn run(task: &str, phase: Phase) -> RunRecord {
        let mut record = RunRecord::example();
        record.task = task.into();
        record.run = format!("20261202-101500-{task}");
        record.phase = phase;
        if phase.is_final() {
            record.outcome = Some(Outcome::Pass);
        }
        record
    }

    #[test]
    fn a_run_is_settled_when_it_ended_or_needs_the_lead() {
        assert!(settled(&run("a", Phase::NeedsHelp)));
        assert!(!settled(&run("b", Phase::Working)));
        assert!(!settled(&run("c", Phase::Queued)));
        assert!(settled(&run("d", Phase::Done)));
        assert!(settled(&run("e", Phase::Failed)));
    }

    #[test]
    fn with_any_only_the_settled_runs_are_judged_and_the_others_are_still_working() {
        let mut waited = Waited {
            runs: vec![run("a", Phase::NeedsHelp), run("b", Phase::Working)],
            timed_out: false,
            any: true,
        };
        let tasks = |runs: Vec<&RunRecord>| runs.iter().map(|r| r.task.clone()).collect::<Vec<_>>();
        assert_eq!(tasks(waited.judged()), ["a"]);
        assert_eq!(tasks(waited.still_working()), ["b"]);
        waited.any = false;
        assert_eq!(tasks(waited.judged()), ["a", "b"]);
        assert_eq!(tasks(waited.still_working()), ["b"]);
    }
}
