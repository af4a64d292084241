//! `git crew wave status N`: whether a wave is complete, task by task.

use crate::cli::context::CommandContext;
use crate::cli::error::Result;
use crate::cli::ui::Report;
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
    Report::of(&status.output(), human)
}
