//! `abandon`: stop a live run, keeping its branch; or give up an ended run's work
//! without losing it (kept under `refs/crew/attempts/<run>`).

use crate::core::record::RunRecord;
use crate::error::{CrewError, ErrorCode, Result};
use crate::run::prune::{Kept, NotKept};

use super::{Context, runs};

pub struct Request {
    /// A run address (see [`runs::resolve`]).
    pub run: String,
}

pub enum Abandoned {
    /// A live run, stopped: its outcome is `abandoned`.
    Stopped(RunRecord),
    /// An ended run: what now keeps its work.
    Kept { record: RunRecord, kept: Kept },
}

/// What `abandon` prints as data: the run stopped (`{"run": run result}`), or an ended
/// run and what now keeps its work.
#[derive(serde::Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Output<'a> {
    Stopped(crate::view::result::RunOutput<'a>),
    Kept {
        run: crate::view::result::RunResult<'a>,
        kept: &'a Kept,
    },
}

impl Abandoned {
    /// What `abandon` prints as data, measured at `now` (Unix milliseconds).
    pub fn output(&self, now: u64) -> Output<'_> {
        match self {
            Abandoned::Stopped(record) => {
                Output::Stopped(crate::view::result::RunOutput::at(record, now))
            }
            Abandoned::Kept { record, kept } => Output::Kept {
                run: crate::view::result::RunResult::at(record, now),
                kept,
            },
        }
    }
}

/// Stops the run, or keeps what an ended run holds; refused (exit 4) when the run ends
/// on its own meanwhile, or when what it holds cannot be read.
pub fn abandon(ctx: &Context, request: &Request) -> Result<Abandoned> {
    let store = runs::settled(ctx)?;
    let record = runs::load(&store, &runs::resolve(&store, &request.run)?)?;
    if record.phase.is_final() {
        return keep(ctx, &store, record);
    }
    let repo_dir = ctx.workdir()?.to_path_buf();
    let run = record.run.clone();
    let stopped = crate::run::reap::abandon(&store, &repo_dir, record, "abandoned by the lead")
        .map_err(CrewError::from)?;
    match stopped {
        Some(ended) => {
            if let Some(not_filed) = ended.not_filed {
                ctx.warn(not_filed);
            }
            // Its slot is free: a queued run of its backend (or of its worker) may start.
            // The run is abandoned whatever the queue does; a queue left waiting starts at
            // the next command that acts.
            let _ = crate::run::queue::promote(&store, &repo_dir);
            Ok(Abandoned::Stopped(ended.record))
        }
        None => {
            let ended = runs::load(&store, &run)?;
            Err(CrewError::new(
                ErrorCode::RunEnded,
                format!(
                    "run {run} ended ({}) before it could be abandoned",
                    ended.phase.as_str()
                ),
            ))
        }
    }
}

/// An ended run's work, given up and kept under `refs/crew/attempts/<run>`.
fn keep(
    ctx: &Context,
    store: &crate::state::runs::RunStore,
    record: RunRecord,
) -> Result<Abandoned> {
    let repo = ctx.repo()?;
    let _turn = store
        .integrate_lock(std::time::Duration::from_secs(600))
        .map_err(CrewError::from)?;
    match crate::run::prune::keep(repo, store, &record).map_err(CrewError::from)? {
        Ok(kept) => Ok(Abandoned::Kept { record, kept }),
        Err(NotKept::Unreadable(why)) => Err(CrewError::new(
            ErrorCode::WorktreeUnreadable,
            format!(
                "run {} has ended; what it holds cannot be kept: {why}",
                record.run
            ),
        )),
    }
}
