//! `git crew wave status N`: whether a wave is complete, task by task.

use crate::cli::context::CommandContext;
use crate::cli::error::Result;
use crate::cli::flight::{RoutingArgs, resolve};
use crate::cli::ui::Report;
use crate::core::summary::{self, At};
use crate::core::wave;
use crate::ops::runs::Access;

use super::{gather, wave_tasks};

pub(super) fn run(ctx: &CommandContext, wave: u32, plan_name: Option<&str>) -> Result<Report> {
    let plan = crate::ops::plans::load(ctx, plan_name)?;
    wave_tasks(&plan, wave)?;
    // A read: the runs as they are.
    let (facts, statuses, follow_ons) = gather(ctx, &plan, wave, Access::Read)?;
    let summary = summary::summarize(&facts, At::Completion);
    // `summary.at` says whether the completion summary is printed.
    let print_summary = resolve(ctx, &RoutingArgs::default())?
        .flight
        .summary
        .at
        .contains(&At::Completion);
    let gate = facts.closing.as_ref().map(|(g, v)| GateLine {
        gate: &g.id,
        verdict: v.as_ref(),
    });
    let incomplete_because = wave::incomplete_because(&statuses, summary.complete, &summary.why);
    let mut human = if print_summary {
        summary.render(100)
    } else {
        format!(
            "wave {wave}: {}",
            if incomplete_because.is_none() {
                "complete"
            } else {
                "incomplete"
            }
        )
    };
    for (s, t) in statuses.iter().zip(&facts.tasks) {
        let run = t
            .run
            .as_ref()
            .map(|r| format!(" (run {r}: {})", t.status))
            .unwrap_or_default();
        human.push_str(&format!("\n  {:<16} {}{run}", s.task, s.status));
    }
    for f in &follow_ons {
        human.push_str(&format!("\nfollow-on ({}): {}", f.task, f.deferred));
    }
    let output = StatusOutput {
        plan: &plan.id,
        wave,
        complete: incomplete_because.is_none(),
        incomplete_because: incomplete_because.as_deref(),
        tasks: statuses
            .iter()
            .zip(&facts.tasks)
            .map(|(s, t)| TaskLine {
                task: &s.task,
                wave: s.wave,
                status: s.status,
                blockers: &s.blockers,
                run: t.run.as_deref(),
                run_status: &t.status,
            })
            .collect(),
        gate: gate.as_ref(),
        follow_ons: &follow_ons,
        summary: print_summary.then_some(&summary),
    };
    Ok(Report::of(&output, human))
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
