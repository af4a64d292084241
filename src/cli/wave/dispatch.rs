//! `git crew wave dispatch N`: every ready task of a wave, all or nothing.

use crate::cli::context::CommandContext;
use crate::cli::error::Result;
use crate::cli::flight::RoutingArgs;
use crate::cli::ui::Report;
use crate::ops::wave::Went;
use crate::view::dispatch::DispatchOutput;

pub(super) fn run(
    ctx: &CommandContext,
    wave: u32,
    plan_name: Option<&str>,
    dry_run: bool,
    routing: &RoutingArgs,
) -> Result<Report> {
    let request = crate::ops::wave::Request {
        wave,
        plan: plan_name.map(String::from),
        dry_run,
        invocation: routing.invocation(),
    };
    let waved = crate::ops::wave::dispatch(ctx, &request)?;
    // Each task's dispatch as `dispatch` prints it; its warnings were said as it started.
    let said = waved.said();
    let output = waved.output(&said);
    let skipped = &waved.skipped;
    let human = match &waved.went {
        Went::Nothing => format!(
            "nothing to dispatch in wave {wave}: {}",
            skipped
                .iter()
                .map(|s| format!("{} {}", s.task, s.reason))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        Went::Planned(planned) => planned
            .iter()
            .zip(&said)
            .map(|(p, warnings)| match p.output(warnings) {
                DispatchOutput::DryRun(p) => format!(
                    "would dispatch {} on {} ({})",
                    p.task,
                    p.backend,
                    p.phase.as_str()
                ),
                DispatchOutput::Started(p) => format!(
                    "would dispatch {} on {} ({})",
                    p.task,
                    p.backend,
                    p.phase.as_str()
                ),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Went::Started { runs, summary, .. } => {
            let mut human = match summary {
                Some(summary) => summary.render(100),
                None => format!(
                    "dispatched wave {wave}: {}",
                    runs.iter()
                        .map(|(run, task)| format!("{task} (run {run})"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            for s in skipped {
                human.push_str(&format!("\n(not dispatched: {} {})", s.task, s.reason));
            }
            human
        }
    };
    Ok(Report::of(&output, human))
}
