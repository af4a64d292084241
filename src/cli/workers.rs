//! `git crew workers`: the roster.

use clap::Args;
use serde::Serialize;

use super::context::CommandContext;
use super::error::{CrewError, Result};
use super::flight::{RoutingArgs, resolve};
use super::runs;
use super::ui::Report;

/// `workers`: the roster, in the flight config's order (SPEC §2 `workers`, §3 "The
/// roster").
#[derive(Debug, Serialize)]
pub struct WorkersOutput<'a> {
    pub workers: Vec<WorkerOutput<'a>>,
}

/// One standing worker of `workers`: its routing, its session (a local fact), the run it
/// is busy with, its queued runs, and its runs and pass rate from the ledger (SPEC §3).
#[derive(Debug, Serialize)]
pub struct WorkerOutput<'a> {
    pub worker: &'a str,
    pub backend: &'a str,
    pub model: Option<String>,
    pub effort: Option<String>,
    pub note: Option<&'a str>,
    pub session: Option<&'a str>,
    pub busy_run: Option<&'a str>,
    pub queued: usize,
    pub runs: usize,
    pub passes: usize,
    pub pass_rate: Option<f64>,
}

/// List the roster of standing workers.
///
/// The roster ([workers.<name>] in the flight config): each standing worker's backend,
/// model, session (a local fact, from .git/crew/sessions.json), the run it is busy with,
/// and its runs and pass rate from the ledger.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  git crew workers --human")]
pub struct WorkersArgs {}

pub fn run(ctx: &CommandContext, _args: WorkersArgs) -> Result<Report> {
    let flight = resolve(ctx, &RoutingArgs::default())?.flight;
    // A read: the store as it is.
    let store = runs::open(ctx)?;
    let live = store.live().map_err(CrewError::from)?;
    let sessions = crate::state::sessions::load(store.root());
    let rows = crate::run::ledger::rows(ctx.repo()?, None).map_err(CrewError::from)?;
    let mut workers = Vec::new();
    let mut human = Vec::new();
    for (name, worker) in &flight.workers {
        let backend = flight.backends.get(&worker.backend);
        let model = worker
            .model
            .clone()
            .or(backend.and_then(|b| b.model.clone()));
        let session = sessions
            .workers
            .get(name)
            .filter(|s| s.backend == worker.backend);
        let busy = live.iter().find(|r| {
            r.worker.as_deref() == Some(name) && r.phase != crate::core::record::Phase::Queued
        });
        let queued = live
            .iter()
            .filter(|r| {
                r.worker.as_deref() == Some(name) && r.phase == crate::core::record::Phase::Queued
            })
            .count();
        let (measured, passes, pass_rate) = crate::core::ledger::worker_pass_rate(&rows, name);
        human.push(format!(
            "{name}: backend {}{}; {}; session {}; {} runs, pass rate {}{}",
            worker.backend,
            model
                .as_deref()
                .map(|m| format!(" model {m}"))
                .unwrap_or_default(),
            busy.map_or("idle".to_string(), |r| format!("busy with run {}", r.run)),
            session.map_or("none yet", |s| s.session.as_str()),
            measured,
            pass_rate.map_or("-".to_string(), |p| format!("{:.0}%", p * 100.0)),
            if queued > 0 {
                format!("; {queued} queued")
            } else {
                String::new()
            },
        ));
        workers.push(WorkerOutput {
            worker: name,
            backend: &worker.backend,
            model,
            effort: worker
                .effort
                .clone()
                .or(backend.and_then(|b| b.effort.clone())),
            note: worker.note.as_deref(),
            session: session.map(|s| s.session.as_str()),
            busy_run: busy.map(|r| r.run.as_str()),
            queued,
            runs: measured,
            passes,
            pass_rate,
        });
    }
    if human.is_empty() {
        human.push("no standing workers: name them in .crew/flight.toml as [workers.<name>] with a backend".into());
    }
    Ok(Report::of(&WorkersOutput { workers }, human.join("\n")))
}
