//! `git crew wave status N`: whether a wave is complete, task by task.

use crate::cli::context::CommandContext;
use crate::cli::error::Result;
use crate::cli::ui::Report;
use crate::core::summary;
use crate::ops::wave::{StatusRequest, WaveStatus};

pub(super) fn run(ctx: &CommandContext, wave: u32, plan_name: Option<&str>) -> Result<Report> {
    let request = StatusRequest {
        wave,
        plan: plan_name.map(String::from),
    };
    Ok(report(&crate::ops::wave::status(ctx, &request)?))
}

/// The wave's status, for JSON and for people: the completion summary when `summary.at`
/// asks for it (else whether the wave is complete), each task, then the follow-ons.
fn report(status: &WaveStatus) -> Report {
    let wave = status.wave;
    let complete = status.incomplete_because.is_none();
    let mut human = if status.show_summary {
        status.summary.render(100)
    } else {
        format!(
            "wave {wave}: {}",
            if complete { "complete" } else { "incomplete" }
        )
    };
    for t in &status.tasks {
        let run = t
            .run
            .as_ref()
            .map(|r| format!(" (run {r}: {})", t.run_status))
            .unwrap_or_default();
        human.push_str(&format!(
            "\n  {:<16} {}{run}",
            t.status.task, t.status.status
        ));
    }
    for f in &status.follow_ons {
        human.push_str(&format!("\nfollow-on ({}): {}", f.task, f.deferred));
    }
    let gate = status.closing.as_ref().map(|(g, v)| GateLine {
        gate: &g.id,
        verdict: v.as_ref(),
    });
    let output = StatusOutput {
        plan: &status.plan,
        wave,
        complete,
        incomplete_because: status.incomplete_because.as_deref(),
        tasks: status
            .tasks
            .iter()
            .map(|t| TaskLine {
                task: &t.status.task,
                wave: t.status.wave,
                status: t.status.status,
                blockers: &t.status.blockers,
                run: t.run.as_deref(),
                run_status: &t.run_status,
            })
            .collect(),
        gate: gate.as_ref(),
        follow_ons: &status.follow_ons,
        summary: status.show_summary.then_some(&status.summary),
    };
    Report::of(&output, human)
}

/// What `wave status` prints.
#[derive(serde::Serialize)]
struct StatusOutput<'a> {
    plan: &'a str,
    wave: u32,
    complete: bool,
    incomplete_because: Option<&'a str>,
    tasks: Vec<TaskLine<'a>>,
    gate: Option<&'a GateLine<'a>>,
    follow_ons: &'a [crate::core::wave::FollowOn],
    summary: Option<&'a summary::Summary>,
}

/// A task of the wave: its derived status, and its run's.
#[derive(serde::Serialize)]
struct TaskLine<'a> {
    task: &'a str,
    wave: u32,
    status: crate::core::plan::TaskState,
    blockers: &'a [crate::core::plan::Blocker],
    run: Option<&'a str>,
    run_status: &'a str,
}

/// The gate that closes the wave, with its latest verdict.
#[derive(serde::Serialize)]
struct GateLine<'a> {
    gate: &'a str,
    verdict: Option<&'a crate::core::plan::Verdict>,
}
