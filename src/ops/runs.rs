//! What the operations on runs share: opening the run store (plainly, or settled by
//! `run::queue`), resolving a RUN address to a run, loading a run.

use super::Context;
use crate::core::record::RunRecord;
use crate::error::{CrewError, ErrorCode, Result};
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
    for not_filed in crate::run::queue::settle(&store, ctx.workdir()?).map_err(CrewError::from)? {
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
    let mut records = store.live().map_err(CrewError::from)?;
    records.extend(store.finished().map_err(CrewError::from)?);
    let known: Vec<crate::core::address::Known> = records
        .iter()
        .map(|r| crate::core::address::Known {
            run: &r.run,
            task: &r.task,
            started_at: r.started_at,
        })
        .collect();
    crate::core::address::resolve(address, &known).map_err(|u| match u {
        crate::core::address::Unresolved::NotFound(m) => CrewError::new(ErrorCode::RunNotFound, m),
        crate::core::address::Unresolved::Ambiguous {
            address,
            candidates,
        } => CrewError::new(
            ErrorCode::RunAmbiguous,
            format!("`{address}` names {} runs", candidates.len()),
        )
        .with_details(candidates),
    })
}

/// One run, live or finished; exit 3 when there is none.
pub fn load(store: &RunStore, run: &str) -> Result<RunRecord> {
    store
        .load(run)
        .map_err(|u| CrewError::new(ErrorCode::RunUnreadable, u.to_string()))?
        .ok_or_else(|| CrewError::new(ErrorCode::RunNotFound, format!("no run {run}")))
}
