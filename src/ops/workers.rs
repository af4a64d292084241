//! `workers`: the roster of standing workers, in the flight config's order, each with its
//! routing, its session, the run it is busy with, its queued runs and its record in the
//! ledger; a read, so nothing is settled or written.

use crate::core::flight::Invocation;
use crate::core::record::Phase;
use crate::error::{CrewError, Result};

use super::{Context, runs};

pub struct Request {}

/// One standing worker.
#[derive(Debug, Clone, PartialEq)]
pub struct Worker {
    pub name: String,
    pub backend: String,
    /// Its model, else its backend's.
    pub model: Option<String>,
    /// Its reasoning effort, else its backend's.
    pub effort: Option<String>,
    pub note: Option<String>,
    /// Its session on its backend (a local fact, from `.git/crew/sessions.json`).
    pub session: Option<String>,
    /// The run it is busy with.
    pub busy_run: Option<String>,
    /// How many of its runs are queued.
    pub queued: usize,
    /// Its runs the ledger measured, how many passed, and the rate.
    pub runs: usize,
    pub passes: usize,
    pub pass_rate: Option<f64>,
}

/// What `workers` prints as data.
pub fn output(workers: &[Worker]) -> crate::view::output::WorkersOutput<'_> {
    crate::view::output::WorkersOutput {
        workers: workers
            .iter()
            .map(|worker| crate::view::output::WorkerOutput {
                worker: &worker.name,
                backend: &worker.backend,
                model: worker.model.clone(),
                effort: worker.effort.clone(),
                note: worker.note.as_deref(),
                session: worker.session.as_deref(),
                busy_run: worker.busy_run.as_deref(),
                queued: worker.queued,
                runs: worker.runs,
                passes: worker.passes,
                pass_rate: worker.pass_rate,
            })
            .collect(),
    }
}

/// The roster, in the flight config's order (empty when it names no standing worker).
/// Only what it shows is read: with no standing worker, neither the live runs, the
/// sessions nor the ledger.
pub fn workers(ctx: &Context, _req: &Request) -> Result<Vec<Worker>> {
    let flight = super::flight::resolve(ctx, &Invocation::default())?.flight;
    if flight.workers.is_empty() {
        return Ok(Vec::new());
    }
    let store = runs::open(ctx)?;
    let live = store.live().map_err(CrewError::from)?;
    let sessions = crate::state::sessions::load(store.root());
    let rows = crate::run::ledger::rows(ctx.repo()?, None).map_err(CrewError::from)?;
    let mut workers = Vec::new();
    for (name, worker) in &flight.workers {
        let backend = flight.backends.get(&worker.backend);
        let session = sessions
            .workers
            .get(name)
            .filter(|s| s.backend == worker.backend);
        let busy = live
            .iter()
            .find(|r| r.worker.as_deref() == Some(name) && r.phase != Phase::Queued);
        let queued = live
            .iter()
            .filter(|r| r.worker.as_deref() == Some(name) && r.phase == Phase::Queued)
            .count();
        let (measured, passes, pass_rate) = crate::core::ledger::worker_pass_rate(&rows, name);
        workers.push(Worker {
            name: name.clone(),
            backend: worker.backend.clone(),
            model: worker
                .model
                .clone()
                .or(backend.and_then(|b| b.model.clone())),
            effort: worker
                .effort
                .clone()
                .or(backend.and_then(|b| b.effort.clone())),
            note: worker.note.clone(),
            session: session.map(|s| s.session.clone()),
            busy_run: busy.map(|r| r.run.clone()),
            queued,
            runs: measured,
            passes,
            pass_rate,
        });
    }
    Ok(workers)
}
