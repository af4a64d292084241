//! `git crew wave dispatch N` and `git crew wave status N`.

use clap::{Args, Subcommand};
use serde_json::json;

use super::context::CommandContext;
use super::dispatch::DispatchArgs;
use super::error::{CrewError, ErrorKind, Result};
use super::flight::{RoutingArgs, resolve};
use super::runs;
use super::ui::Report;
use crate::core::plan::{Plan, TaskStatus};
use crate::core::record::Outcome;
use crate::core::summary::{self, At, WaveFacts};
use crate::core::wave::{self, FollowOn};
use crate::run::wave::WaveFailure;

/// Run a plan wave by wave.
#[derive(Debug, Args)]
pub struct WaveArgs {
    #[command(subcommand)]
    pub action: WaveAction,
}

#[derive(Debug, Subcommand)]
pub enum WaveAction {
    /// Dispatch every ready task of wave N at once: refused up front (exit 4) when two of
    /// its tasks' write scopes overlap, or one overlaps a run in flight; runs beyond a
    /// backend's concurrency are queued. Prints the dispatch summary.
    #[command(
        after_help = "Examples:\n  git crew wave dispatch 1\n  git crew wave dispatch 2 --plan crew-v1"
    )]
    Dispatch {
        wave: u32,
        #[arg(long)]
        plan: Option<String>,
        /// Decide every task's run and print them; start nothing.
        #[arg(long)]
        dry_run: bool,
        #[command(flatten)]
        routing: RoutingArgs,
    },
    /// Report wave N: each task's status and run, the closing gate's verdict (a wave
    /// whose gate has none reads as incomplete), and the Deferred / concerns of its
    /// footers as candidate follow-ons.
    #[command(after_help = "Examples:\n  git crew wave status 1 --human")]
    Status {
        wave: u32,
        #[arg(long)]
        plan: Option<String>,
    },
}

pub fn run(ctx: &CommandContext, args: WaveArgs) -> Result<Report> {
    match args.action {
        WaveAction::Dispatch {
            wave,
            plan,
            dry_run,
            routing,
        } => dispatch(ctx, wave, plan.as_deref(), dry_run, &routing),
        WaveAction::Status { wave, plan } => status(ctx, wave, plan.as_deref()),
    }
}

/// Exit 3 when the plan has no task in `wave`, naming the waves it has.
pub fn wave_tasks(plan: &Plan, wave: u32) -> Result<()> {
    if plan.tasks.iter().any(|t| t.wave == wave) {
        Ok(())
    } else {
        Err(CrewError::new(
            ErrorKind::NotFound,
            "wave-not-found",
            format!("plan {} has no task in wave {wave}", plan.id),
        )
        .hinted(format!(
            "its waves: {}",
            plan.waves()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )))
    }
}

/// What the summary and `wave status` say of wave `wave`, gathered
/// (`run::wave::facts`).
pub fn gather(
    ctx: &CommandContext,
    plan: &Plan,
    wave: u32,
) -> Result<(WaveFacts, Vec<TaskStatus>, Vec<FollowOn>)> {
    let flight = resolve(ctx, &RoutingArgs::default())?.flight;
    let store = runs::settled(ctx)?;
    crate::run::wave::facts(ctx.repo()?, &store, plan, &flight, wave).map_err(CrewError::internal)
}

fn dispatch(
    ctx: &CommandContext,
    wave: u32,
    plan_name: Option<&str>,
    dry_run: bool,
    routing: &RoutingArgs,
) -> Result<Report> {
    let plan = super::plan::load(ctx, plan_name)?;
    wave_tasks(&plan, wave)?;
    let flight = resolve(ctx, routing)?.flight;
    let (statuses, _) = super::plan::derive(ctx, &plan, &flight)?;
    let in_wave: Vec<&TaskStatus> = statuses.iter().filter(|s| s.wave == wave).collect();
    // Ready tasks (under `warn`, also those only a gate holds), except a task whose run
    // passed and waits to be integrated.
    let finished = runs::open(ctx)?.finished().map_err(CrewError::internal)?;
    let waiting = |task: &str| {
        finished
            .iter()
            .rev()
            .find(|r| r.task == task)
            .filter(|r| r.outcome == Some(Outcome::Pass) && r.integration.is_none())
            .map(|r| r.run.clone())
    };
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
        return Ok(Report::new(
            json!({"plan": plan.id, "wave": wave, "dispatched": [], "skipped": skipped, "summary": null}),
            human,
        ));
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
        prompt: None,
        prompt_file: None,
        scope: Vec::new(),
        role: None,
        verify: None,
        base: None,
        wait: false,
        dry_run,
        queue: true,
        continue_until_pass: false,
        plan: Some(plan.id.clone()),
        size: None,
        worker: None,
        transcripts: None,
        routing: routing.clone(),
    };
    let names: Vec<String> = ready.iter().map(|s| s.task.clone()).collect();
    let fail_second = crate::sys::failpoint::fails_at("wave-start-second");
    let mut start = |i: usize, task: &str, dry_run: bool| {
        if !dry_run && i == 1 && fail_second {
            return Err(CrewError::internal("a failure injected for tests"));
        }
        super::dispatch::run(ctx, args_for(task, dry_run))
            .map(|report| serde_json::Value::Object(report.fields))
    };
    let store = runs::settled(ctx)?;
    let outcome = crate::run::wave::start_all(&store, ctx.workdir()?, &names, dry_run, &mut start);
    let (planned, dispatched) = match outcome {
        Ok(started) if dry_run => (started, Vec::new()),
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
        return Ok(Report::new(
            json!({"plan": plan.id, "wave": wave, "dry_run": true, "planned": planned, "skipped": skipped}),
            human,
        ));
    }
    let (mut facts, _, _) = gather(ctx, &plan, wave)?;
    // What was just started, whether or not a fast worker has already finished.
    let started: Vec<(String, String)> = dispatched
        .iter()
        .filter_map(|d| Some((d["task"].as_str()?.into(), d["run"].as_str()?.into())))
        .collect();
    wave::mark_started(&mut facts, &started);
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
            dispatched
                .iter()
                .map(|d| format!(
                    "{} (run {})",
                    d["task"].as_str().unwrap_or_default(),
                    d["run"].as_str().unwrap_or_default()
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    for s in &skipped {
        human.push_str(&format!("\n(not dispatched: {} {})", s.task, s.reason));
    }
    Ok(Report::new(
        json!({
            "plan": plan.id,
            "wave": wave,
            "dispatched": dispatched,
            "skipped": skipped,
            "summary": summary,
        }),
        human,
    ))
}

fn status(ctx: &CommandContext, wave: u32, plan_name: Option<&str>) -> Result<Report> {
    let plan = super::plan::load(ctx, plan_name)?;
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
