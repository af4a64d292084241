//! `git crew workers`: the roster.

use clap::Args;
use serde::Serialize;

use super::context::CommandContext;
use super::error::Result;
use super::ui::Report;
use crate::ops::workers::Worker;

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
    let workers = crate::ops::workers::workers(ctx, &crate::ops::workers::Request {})?;
    let mut human: Vec<String> = workers.iter().map(line).collect();
    if human.is_empty() {
        human.push("no standing workers: name them in .crew/flight.toml as [workers.<name>] with a backend".into());
    }
    let output = WorkersOutput {
        workers: workers.iter().map(WorkerOutput::of).collect(),
    };
    Ok(Report::of(&output, human.join("\n")))
}

impl<'a> WorkerOutput<'a> {
    fn of(worker: &'a Worker) -> WorkerOutput<'a> {
        WorkerOutput {
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
        }
    }
}

/// One worker for people.
fn line(worker: &Worker) -> String {
    format!(
        "{}: backend {}{}; {}; session {}; {} runs, pass rate {}{}",
        worker.name,
        worker.backend,
        worker
            .model
            .as_deref()
            .map(|m| format!(" model {m}"))
            .unwrap_or_default(),
        worker
            .busy_run
            .as_deref()
            .map_or("idle".to_string(), |run| format!("busy with run {run}")),
        worker.session.as_deref().unwrap_or("none yet"),
        worker.runs,
        worker
            .pass_rate
            .map_or("-".to_string(), |p| format!("{:.0}%", p * 100.0)),
        if worker.queued > 0 {
            format!("; {} queued", worker.queued)
        } else {
            String::new()
        },
    )
}
