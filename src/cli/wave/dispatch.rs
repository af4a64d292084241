//! `git crew wave dispatch N`: every ready task of a wave, all or nothing.

use crate::cli::context::CommandContext;
use crate::cli::dispatch::DispatchArgs;
use crate::cli::error::{CrewError, ErrorKind, Result};
use crate::cli::flight::{RoutingArgs, resolve};
use crate::cli::runs;
use crate::cli::ui::Report;
use crate::core::plan::TaskStatus;
use crate::core::summary::{self, At};
use crate::core::wave;
use crate::run::wave::WaveFailure;

use super::{gather, wave_tasks};

pub(super) fn run(
    ctx: &CommandContext,
    wave: u32,
    plan_name: Option<&str>,
    dry_run: bool,
    routing: &RoutingArgs,
) -> Result<Report> {
    let plan = crate::cli::plan::load(ctx, plan_name)?;
    wave_tasks(&plan, wave)?;
    let flight = resolve(ctx, routing)?.flight;
    let (statuses, _) = crate::cli::plan::derive(ctx, &plan, &flight)?;
    let in_wave: Vec<&TaskStatus> = statuses.iter().filter(|s| s.wave == wave).collect();
    // Ready tasks (under `warn`, also those only a gate holds), except a task whose run
    // passed and waits to be integrated.
    let finished = runs::open(ctx)?.finished().map_err(CrewError::internal)?;
    let waiting = |task: &str| wave::awaiting_integration(&finished, task);
    let wave::Selection {
        ready,
        skipped,
        held,
    } = wave::select(&in_wave, flight.gates.enforce, &waiting);
    // A gate holds the whole wave: under `strict` nothing of it goes.
    if !held.is_empty() && flight.gates.enforce == crate::core::flight::Enforcement::Strict {
        return Err(CrewError::new(
            ErrorKind::Refused,
            "blocked-by-gate",
            format!("wave {wave} is held by a gate: nothing was dispatched"),
        )
        .with_details(held)
        .hinted(
            "record the gate's verdict with `git crew gate record G --verdict pass --evidence ...`",
        ));
    }
    if ready.is_empty() {
        let human = format!(
            "nothing to dispatch in wave {wave}: {}",
            skipped
                .iter()
                .map(|s| format!("{} {}", s.task, s.reason))
                .collect::<Vec<_>>()
                .join("; ")
        );
        let output = Dispatched {
            plan: &plan.id,
            wave,
            dispatched: &[],
            skipped: &skipped,
            summary: None,
        };
        return Ok(Report::of(&output, human));
    }
    // Up front, before anything starts: no two write scopes of the wave may overlap, nor
    // overlap a run in flight.
    let live = runs::settled(ctx)?.live().map_err(CrewError::internal)?;
    let tasks: Vec<&crate::core::plan::Task> =
        ready.iter().filter_map(|s| plan.task(&s.task)).collect();
    let clashes = wave::clashes_with(&tasks, &live);
    if !clashes.is_empty() {
        return Err(CrewError::new(
            ErrorKind::Refused,
            "scope-overlap",
            format!("wave {wave} cannot run at once: write scopes overlap; nothing was dispatched"),
        )
        .with_details(clashes)
        .hinted("give the tasks disjoint scopes, or move one to a later wave"));
    }
    let args_for = |task: &str, dry_run: bool| DispatchArgs {
        task: task.to_string(),
        dry_run,
        queue: true,
        plan: Some(plan.id.clone()),
        routing: routing.clone(),
        ..DispatchArgs::default()
    };
    let names: Vec<String> = ready.iter().map(|s| s.task.clone()).collect();
    let fail_second = crate::sys::failpoint::fails_at("wave-start-second");
    let mut start = |i: usize, task: &str, dry_run: bool| {
        if !dry_run && i == 1 && fail_second {
            return Err(CrewError::internal("a failure injected for tests"));
        }
        crate::cli::dispatch::run(ctx, args_for(task, dry_run)).map(|report| {
            let run = report
                .fields
                .get("run")
                .and_then(|r| r.as_str())
                .map(String::from);
            (serde_json::Value::Object(report.fields), run)
        })
    };
    let store = runs::settled(ctx)?;
    let outcome = crate::run::wave::start_all(&store, ctx.workdir()?, &names, dry_run, &mut start);
    let (
        planned,
        crate::run::wave::Started {
            outputs: dispatched,
            runs,
        },
    ) = match outcome {
        Ok(started) if dry_run => (started.outputs, Default::default()),
        Ok(started) => (Vec::new(), started),
        Err(WaveFailure::Planning { task, error }) => {
            return Err(CrewError {
                message: format!(
                    "task {task} of wave {wave} cannot be dispatched: {}; nothing was dispatched",
                    error.message
                ),
                ..error
            });
        }
        Err(WaveFailure::Starting {
            task,
            error,
            rolled_back,
        }) => {
            let mut details = error.details.clone();
            details.push(format!(
                "rolled back (abandoned, branches kept): {rolled_back}"
            ));
            return Err(CrewError {
                message: format!(
                    "dispatching task {task} of wave {wave}: {}; the wave was rolled back",
                    error.message
                ),
                details,
                ..error
            });
        }
    };
    if dry_run {
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
            plan: &plan.id,
            wave,
            dry_run: true,
            planned: &planned,
            skipped: &skipped,
        };
        return Ok(Report::of(&output, human));
    }
    let (mut facts, _, _) = gather(ctx, &plan, wave)?;
    // What was just started, whether or not a fast worker has already finished.
    wave::mark_started(&mut facts, &runs);
    // `summary.at` says whether the dispatch summary is printed.
    let summary = flight
        .summary
        .at
        .contains(&At::Dispatch)
        .then(|| summary::summarize(&facts, At::Dispatch));
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
        plan: &plan.id,
        wave,
        dispatched: &dispatched,
        skipped: &skipped,
        summary: summary.as_ref(),
    };
    Ok(Report::of(&output, human))
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
