//! `git crew wave status N`: whether a wave is complete, task by task.

use serde_json::json;

use crate::cli::context::CommandContext;
use crate::cli::error::Result;
use crate::cli::flight::{RoutingArgs, resolve};
use crate::cli::ui::Report;
use crate::core::summary::{self, At};
use crate::core::wave;

use super::{gather, wave_tasks};

pub(super) fn run(ctx: &CommandContext, wave: u32, plan_name: Option<&str>) -> Result<Report> {
    let plan = crate::cli::plan::load(ctx, plan_name)?;
    wave_tasks(&plan, wave)?;
    let (facts, statuses, follow_ons) = gather(ctx, &plan, wave)?;
    let summary = summary::summarize(&facts, At::Completion);
    // `summary.at` says whether the completion summary is printed.
    let print_summary = resolve(ctx, &RoutingArgs::default())?
        .flight
        .summary
        .at
        .contains(&At::Completion);
    let gate = facts
        .closing
        .as_ref()
        .map(|(g, v)| json!({"gate": g.id, "verdict": v}));
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
    Ok(Report::new(
        json!({
            "plan": plan.id,
            "wave": wave,
            "complete": incomplete_because.is_none(),
            "incomplete_because": incomplete_because,
            "tasks": statuses
                .iter()
                .zip(&facts.tasks)
                .map(|(s, t)| {
                    let mut v = serde_json::to_value(s).unwrap_or_default();
                    v["run"] = json!(t.run);
                    v["run_status"] = json!(t.status);
                    v
                })
                .collect::<Vec<_>>(),
            "gate": gate,
            "follow_ons": follow_ons,
            "summary": print_summary.then_some(&summary),
        }),
        human,
    ))
}
