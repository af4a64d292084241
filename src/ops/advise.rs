//! `advise`: answer a worker's NEEDS-HELP, resuming its session under the same fences.

use std::path::PathBuf;

use crate::core::record::{Phase, RunRecord};
use crate::error::{CrewError, ErrorCode, Result};

use super::{Context, runs};

pub struct Request {
    /// A run address (see [`runs::resolve`]).
    pub run: String,
    /// The answer.
    pub text: String,
}

/// The run as it resumes.
pub struct Advised {
    /// The run, `working` again (or `queued` when its backend is full).
    pub record: RunRecord,
    /// The new supervisor (none when none was started).
    pub supervisor_pid: Option<u32>,
    /// The file the advice was written to.
    pub advice_file: PathBuf,
}

impl Advised {
    /// What `advise` prints as data.
    pub fn output(&self) -> crate::view::output::AdviseOutput<'_> {
        crate::view::output::AdviseOutput::of(&self.record, self.supervisor_pid, &self.advice_file)
    }
}

/// Answers the run's question; refused (exit 4) unless it waits for help.
pub fn advise(ctx: &Context, request: &Request) -> Result<Advised> {
    // One answer at a time: a second advise waits here, then finds the run working.
    let runs::Held {
        store,
        mut record,
        lock: _lock,
    } = runs::hold(ctx, &request.run)?;
    if record.phase != Phase::NeedsHelp {
        return Err(CrewError::new(
            ErrorCode::NotWaitingForHelp,
            format!(
                "run {} is {}, not waiting for help",
                record.run,
                record.phase.as_str()
            ),
        ));
    }
    let repo_dir = ctx.workdir()?.to_path_buf();
    let advised = crate::run::queue::advise(&store, &repo_dir, &mut record, &request.text)
        .map_err(CrewError::from)?
        .ok_or_else(|| {
            CrewError::new(ErrorCode::RunEnded, format!("run {} has ended", record.run))
        })?;
    Ok(Advised {
        record,
        supervisor_pid: advised.supervisor_pid,
        advice_file: advised.advice_file,
    })
}
