//! What the run-reading commands share: opening the run store (plainly, or settled by
//! `run::queue`), resolving a RUN address to a run, loading a run, and the run result
//! measured now.

use super::context::CommandContext;
use super::error::{CrewError, ErrorKind, Result};
use crate::core::record::RunRecord;
use crate::state::runs::RunStore;
use crate::view::result::{RunOutput, RunResult};

/// The run store of the current repository, as it is.
pub fn open(ctx: &CommandContext) -> Result<RunStore> {
    Ok(RunStore::new(&crate::git::repo::state_dir(ctx.repo()?)))
}

/// The run store, settled first: runs whose supervisor died are filed, and queued runs
/// start where slots are free (`run::queue::settle`). Every command that reports or acts
/// on live runs opens it this way.
pub fn settled(ctx: &CommandContext) -> Result<RunStore> {
    let store = open(ctx)?;
    crate::run::queue::settle(&store, ctx.workdir()?).map_err(CrewError::internal)?;
    Ok(store)
}

/// The parser of every RUN argument: a run address (a run id, `@last`, a task id, a
/// unique part of a run id; see [`resolve`]), or a usage error (exit 2) for what could
/// only be a path — an address is never used as one.
pub fn run_address(text: &str) -> std::result::Result<String, String> {
    let path_like = text.is_empty()
        || text.starts_with('/')
        || text
            .split('/')
            .any(|c| c.is_empty() || c == "." || c == "..");
    if path_like {
        return Err(format!(
            "`{text}` is not a run: give a run id (20261202-101500-1a2b), a task id, @last or a unique part of a run id (`git crew status` lists them)"
        ));
    }
    Ok(text.to_string())
}

/// The run an address names among this repository's runs, live or finished: exit 3 when
/// none, exit 2 listing the candidates when several.
pub fn resolve(store: &RunStore, address: &str) -> Result<String> {
    // A whole run id names itself: `load` reports it missing or unreadable, and no other
    // record is read for it.
    if crate::core::record::is_run_id(address) {
        return Ok(address.to_string());
    }
    let mut records = store.live().map_err(CrewError::internal)?;
    records.extend(store.finished().map_err(CrewError::internal)?);
    let known: Vec<crate::core::address::Known> = records
        .iter()
        .map(|r| crate::core::address::Known {
            run: &r.run,
            task: &r.task,
            started_at: r.started_at,
        })
        .collect();
    crate::core::address::resolve(address, &known).map_err(|u| match u {
        crate::core::address::Unresolved::NotFound(m) => {
            CrewError::new(ErrorKind::NotFound, "run-not-found", m)
                .hinted("`git crew status` lists the runs")
        }
        crate::core::address::Unresolved::Ambiguous {
            address,
            candidates,
        } => CrewError::usage(
            "run-ambiguous",
            format!("`{address}` names {} runs", candidates.len()),
        )
        .with_details(candidates)
        .hinted("give more of the run id, or the whole id"),
    })
}

/// The parser of the hidden entry points' RUN: a whole run id only.
pub fn run_id(text: &str) -> std::result::Result<String, String> {
    if crate::core::record::is_run_id(text) {
        Ok(text.to_string())
    } else {
        Err(format!(
            "`{text}` is not a run id (they look like 20261202-101500-1a2b; `git crew status` lists them)"
        ))
    }
}

/// One run, live or finished; exit 3 when there is none.
pub fn load(store: &RunStore, run: &str) -> Result<RunRecord> {
    store
        .load(run)
        .map_err(
            |err| match err.downcast_ref::<crate::state::runs::Unreadable>() {
                Some(u) => CrewError::new(ErrorKind::Refused, "run-unreadable", u.to_string())
                    .hinted("`git crew doctor` reports it; restore or remove the file by hand"),
                None => CrewError::internal(err),
            },
        )?
        .ok_or_else(|| {
            CrewError::new(
                ErrorKind::NotFound,
                "run-not-found",
                format!("no run {run}"),
            )
            .hinted("`git crew status` lists the runs")
        })
}

/// The run result of `record` now.
pub fn result(record: &RunRecord) -> RunResult<'_> {
    RunResult::at(record, crate::sys::clock::now_millis())
}

/// `{"run": run result}` of `record` now.
pub fn output(record: &RunRecord) -> RunOutput<'_> {
    RunOutput::at(record, crate::sys::clock::now_millis())
}

/// A run in full for people, as of now.
pub fn result_block(record: &RunRecord) -> String {
    crate::view::result::result_block(record, crate::sys::clock::now_millis())
}

/// One line per run for people, measured now.
pub fn result_line(record: &RunRecord) -> String {
    crate::view::result::result_line(record, crate::sys::clock::now_millis())
}
