//! `git crew workers`: the roster.

use clap::Args;

use super::context::CommandContext;
use super::error::Result;
use super::ui::Report;
use crate::ops::workers::Worker;

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
    Ok(Report::of(
        &crate::ops::workers::output(&workers),
        human.join("\n"),
    ))
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
