//! What the operations on runs share: opening the run store (plainly, or settled by
//! `run::queue`), resolving a RUN address to a run, loading a run.

use super::Context;
use crate::core::record::RunRecord;
use crate::error::{CrewError, ErrorKind, Result};
use crate::state::runs::RunStore;

/// The run store of the current repository, as it is.
pub fn open(ctx: &Context) -> Result<RunStore> {
    Ok(RunStore::new(&crate::git::repo::state_dir(ctx.repo()?)))
}

/// The run store, settled first: runs whose supervisor died are filed, and queued runs
/// start where slots are free (`run::queue::settle`). Every command that reports or acts
/// on live runs opens it this way.
pub fn settled(ctx: &Context) -> Result<RunStore> {
    let store = open(ctx)?;
    for not_filed in
        crate::run::queue::settle(&store, ctx.workdir()?).map_err(CrewError::internal)?
    {
        ctx.warn(not_filed);
    }
    Ok(store)
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
