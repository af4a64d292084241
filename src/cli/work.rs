//! `git crew work --plan P [--remote NAME] [--max N]`: a runner on this machine.

use std::cell::Cell;
use std::time::Duration;

use clap::Args;

use super::context::CommandContext;
use super::error::Result;
use super::flight::RoutingArgs;
use super::ui::Report;
use crate::ops::work::{self, Came, Event, Stop};

const EXAMPLES: &str = "Examples:
  git crew work --plan v1
  git crew work --plan v1 --remote origin --max 3
  ssh box 'cd repo && git crew work --plan v1 --remote origin --set fleet.machine=box'";

/// Work a plan's ready tasks until none is left.
///
/// Round after round: looks at the plan (with a remote: its claims, notes and target,
/// fetched), claims and dispatches the ready tasks no one holds, at most --max runs at
/// once, integrates each pass (with a remote: after the target caught up with the
/// remote's), and stops once nothing is ready or in flight anywhere. A task whose run
/// failed here is not taken again by this runner.
///
/// Exits 0 when every task is done, 1 when a task failed (and is not done), 5 when a run
/// asks for help, 4 (`plan-unfinished`) when tasks are left blocked or by Ctrl-C.
/// Ctrl-C once: take nothing new, finish the runs held (integrating the passes), stop.
/// Twice: hand them back now (abandon the working ones, keeping their branches; let go
/// of their claims) and stop.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct WorkArgs {
    /// The plan (default: the only one in .crew/plans).
    #[arg(long, value_name = "PLAN")]
    pub plan: Option<String>,
    /// Work through this git remote, as one machine of a fleet (default fleet.remote;
    /// with neither, this machine works the plan alone).
    #[arg(long, value_name = "NAME")]
    pub remote: Option<String>,
    /// How many runs at once, at most.
    #[arg(long, value_name = "N", default_value_t = 2, value_parser = clap::value_parser!(u16).range(1..))]
    pub max: u16,
    /// How long to wait between rounds when nothing moved (e.g. 1s, 500ms).
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    pub poll: String,
    #[command(flatten)]
    pub routing: RoutingArgs,
}

pub fn run(ctx: &CommandContext, args: WorkArgs) -> Result<Report> {
    let poll = humantime::parse_duration(&args.poll).map_err(|e| {
        super::error::CrewError::new(
            super::error::ErrorCode::BadDuration,
            format!("--poll {}: {e}", args.poll),
        )
    })?;
    let request = work::Request {
        plan: args.plan,
        remote: args.remote,
        max: usize::from(args.max),
        invocation: args.routing.invocation(),
        poll: poll.max(Duration::from_millis(50)),
    };
    // Ctrl-C is counted, not fatal: the first finishes, the second hands back.
    let heard = Cell::new(0u32);
    let stop = || {
        if crate::sys::process::take_interrupt() {
            heard.set(heard.get() + 1);
        }
        match heard.get() {
            0 => Stop::Go,
            1 => Stop::Finish,
            _ => Stop::HandBack,
        }
    };
    crate::sys::process::catch_interrupts();
    let worked = work::work(ctx, &request, &stop, &|event| say(&event));
    crate::sys::process::default_interrupts();
    let worked = worked?;
    let human = human(&worked);
    let status = worked.status();
    Ok(Report::with_status(&worked, human, status))
}

/// What the runner does, for people, on stderr as it happens.
fn say(event: &Event<'_>) {
    let line = match event {
        Event::Took { task, run } => format!("work: took {task} (run {run})"),
        Event::Landed { task, run, commit } => {
            format!(
                "work: landed {task} (run {run}) as {}",
                &commit[..commit.len().min(12)]
            )
        }
        Event::Failed {
            task,
            run: Some(run),
            why,
        } => format!("work: {task} (run {run}) did not land: {why}"),
        Event::Failed {
            task,
            run: None,
            why,
        } => format!("work: {task} was not dispatched: {why}"),
        Event::NeedsHelp { task, run } => {
            format!("work: {task} (run {run}) asks for help: `git crew show {run}`")
        }
        Event::HandedBack { task, run } => format!("work: handed back {task} (run {run})"),
        Event::Stopping(Stop::Finish) => {
            "work: stopping — finishing the runs held (Ctrl-C again hands them back)".into()
        }
        Event::Stopping(_) => "work: handing back the runs held".into(),
        Event::Warning(warning) => {
            super::ui::warn(warning);
            return;
        }
    };
    eprintln!("{}", crate::view::human::sanitize(&line));
}

/// The runner's account, for people.
fn human(worked: &work::Worked) -> String {
    let count = |came: Came| worked.taken.iter().filter(|t| t.outcome == came).count();
    let mut out = format!(
        "plan {}: {} tasks taken{} in {:.1}s — {} landed, {} failed",
        worked.plan,
        worked.taken.len(),
        worked
            .machine
            .as_ref()
            .zip(worked.remote.as_ref())
            .map_or(String::new(), |(machine, remote)| format!(
                " on {machine} (through {remote})"
            )),
        worked.wall_s,
        count(Came::Landed),
        count(Came::Failed),
    );
    for (came, what) in [
        (Came::NeedsHelp, "ask for help"),
        (Came::HandedBack, "handed back"),
    ] {
        if count(came) > 0 {
            out.push_str(&format!(", {} {what}", count(came)));
        }
    }
    out.push_str(&match worked.ending {
        "all-done" => "\nevery task of the plan is done".to_string(),
        "failed" => format!("\ndid not pass: {}", worked.left.join(", ")),
        "needs-help" => format!("\nasking for help: {}", worked.left.join(", ")),
        _ => format!("\nnot done: {}", worked.left.join(", ")),
    });
    out
}
