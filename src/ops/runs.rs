//! What the operations on runs share: opening the run store (as it is for a command that
//! reads, settled by `run::queue` for one that acts), the runs as a reader finds them,
//! resolving a RUN address to a run, loading a run.

use super::Context;
use crate::core::record::RunRecord;
use crate::error::{CrewError, ErrorCode, Result};
use crate::state::runs::{Finished, Found, RunStore, Snapshot, Unreadable};

/// The run store of the current repository, as it is. Commands that only read open it
/// this way and change nothing: no dead run is filed, no queued run started.
pub fn open(ctx: &Context) -> Result<RunStore> {
    Ok(RunStore::new(&crate::git::repo::state_dir(ctx.repo()?)))
}

/// Whether an operation only reads the runs or acts on them. One that reads takes them as
/// they are and writes nothing (not even the ledger's cache); one that acts settles them
/// first and keeps what it works out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    Read,
    Act,
}

impl Access {
    /// The run store for this access: as it is ([`open`]) or [`settled`].
    pub fn store(self, ctx: &Context) -> Result<RunStore> {
        match self {
            Access::Read => open(ctx),
            Access::Act => settled(ctx),
        }
    }

    /// Whether what the ledger teaches may be kept in its cache.
    pub fn cache(self) -> crate::run::ledger::Cache {
        match self {
            Access::Read => crate::run::ledger::Cache::ReadOnly,
            Access::Act => crate::run::ledger::Cache::Write,
        }
    }
}

/// The runs as they are (`RunStore::snapshot`): the live ones with their supervisors
/// judged, and the finished ones `finished` asks for.
pub fn snapshot(store: &RunStore, finished: Finished) -> Result<Snapshot> {
    store.snapshot(finished).map_err(CrewError::from)
}

/// The run store, settled first: runs whose supervisor died are filed, and queued runs
/// start where slots are free (`run::queue::settle`). Every command that acts on runs
/// opens it this way; settling is its explicit first step.
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
    on_file(store.load(run), run)
}

/// One run as a reader finds it, live or finished, with its supervisor judged while it
/// is live; exit 3 when there is none.
pub fn found(store: &RunStore, run: &str) -> Result<Found> {
    on_file(store.found(run), run)
}

/// What was read of run `run`: exit 3 when it is not on file, and a refusal naming the
/// file when it cannot be read.
fn on_file<T>(read: std::result::Result<Option<T>, Unreadable>, run: &str) -> Result<T> {
    read.map_err(|u| CrewError::new(ErrorCode::RunUnreadable, u.to_string()))?
        .ok_or_else(|| CrewError::new(ErrorCode::RunNotFound, format!("no run {run}")))
}

/// A run one command acts on alone: the store settled, the address resolved, the run's
/// lock held while this lives (another command on the same run waits for it, and is
/// refused as `run-busy` when the wait runs out), the run loaded.
pub struct Held {
    pub store: RunStore,
    pub record: RunRecord,
    /// Bind it (`lock: _lock`): the run is held until it drops.
    pub lock: crate::sys::lock::Lock,
}

/// Settles the store, resolves `address` and takes the run's lock, then loads it.
pub fn hold(ctx: &Context, address: &str) -> Result<Held> {
    let store = settled(ctx)?;
    let run = resolve(&store, address)?;
    let lock = store
        .run_lock(&run)
        .map_err(|e| CrewError::new(ErrorCode::RunBusy, e.to_string()))?;
    let record = load(&store, &run)?;
    Ok(Held {
        store,
        record,
        lock,
    })
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
