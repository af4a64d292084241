//! `git crew wave dispatch N`: every ready task of a wave, all or nothing.

use serde_json::Value;

use crate::cli::context::CommandContext;
use crate::cli::error::Result;
use crate::cli::flight::RoutingArgs;
use crate::cli::ui::Report;
use crate::core::summary;
use crate::core::wave;
use crate::ops::wave::{Waved, Went};

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
    let Waved {
        plan,
        wave,
        skipped,
        went,
    } = crate::ops::wave::dispatch(ctx, &request)?;
    // Each task's dispatch as `dispatch` prints it (its warnings said on stderr).
    let fields = |dispatched: Vec<crate::ops::dispatch::Dispatched>| -> Result<Vec<Value>> {
        dispatched
            .into_iter()
            .map(|d| {
                crate::cli::dispatch::report_saying(ctx, d, false, false)
                    .map(|r| Value::Object(r.fields))
            })
            .collect()
    };
    match went {
        Went::Nothing => {
            let human = format!(
                "nothing to dispatch in wave {wave}: {}",
                skipped
                    .iter()
                    .map(|s| format!("{} {}", s.task, s.reason))
                    .collect::<Vec<_>>()
                    .join("; ")
            );
            let output = Dispatched {
                plan: &plan,
                wave,
                dispatched: &[],
                skipped: &skipped,
                summary: None,
            };
            Ok(Report::of(&output, human))
        }
        Went::Planned(planned) => {
            let planned = fields(planned)?;
            let human = planned
                .iter()
                .map(|p| {
                    format!(
                        "would dispatch {} on {} ({})",
                        p["task"].as_str().unwrap_or_default(),
                        p["backend"].as_str().unwrap_or_default(),
                        p["phase"].as_str().unwrap_or_default()
                    )
                })
                .collect::<Vec<_>>()
                .join("\n");
            let output = WouldDispatch {
                plan: &plan,
                wave,
                dry_run: true,
                planned: &planned,
                skipped: &skipped,
            };
            Ok(Report::of(&output, human))
        }
        Went::Started {
            dispatched,
            runs,
            summary,
        } => {
            let dispatched = fields(dispatched)?;
            let mut human = match &summary {
                Some(summary) => summary.render(100),
                None => format!(
                    "dispatched wave {wave}: {}",
                    runs.iter()
                        .map(|(run, task)| format!("{task} (run {run})"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            for s in &skipped {
                human.push_str(&format!("\n(not dispatched: {} {})", s.task, s.reason));
            }
            let output = Dispatched {
                plan: &plan,
                wave,
                dispatched: &dispatched,
                skipped: &skipped,
                summary: summary.as_ref(),
            };
            Ok(Report::of(&output, human))
        }
    }
}

/// What `wave dispatch` prints: each started task's dispatch output, the tasks left out
/// and why, and the dispatch summary when `summary.at` asks for it.
#[derive(serde::Serialize)]
struct Dispatched<'a> {
    plan: &'a str,
    wave: u32,
    dispatched: &'a [serde_json::Value],
    skipped: &'a [wave::Skipped],
    summary: Option<&'a summary::Summary>,
}

/// What `wave dispatch --dry-run` prints: each task's dispatch decision, nothing started.
#[derive(serde::Serialize)]
struct WouldDispatch<'a> {
    plan: &'a str,
    wave: u32,
    dry_run: bool,
    planned: &'a [serde_json::Value],
    skipped: &'a [wave::Skipped],
}
