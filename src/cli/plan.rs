//! `git crew plan status [PLAN]`: the derived status of every task of a plan.

use clap::{Args, Subcommand};

use super::context::CommandContext;
use super::error::Result;
use super::ui::Report;
use crate::core::plan::TaskStatus;
use crate::ops::plan::PlanStatus;

/// Read a plan (.crew/plans/<plan>.toml).
#[derive(Debug, Args)]
pub struct PlanArgs {
    #[command(subcommand)]
    pub action: PlanAction,
}

#[derive(Debug, Subcommand)]
pub enum PlanAction {
    /// Every task's derived status.
    ///
    /// Done, in-flight, ready, or blocked with its blockers (an unfinished dependency, a
    /// gate without a passing verdict). Never stored: computed from the plan, the live
    /// runs, docs/state/crew.json in HEAD and the gate notes.
    #[command(
        after_help = "Examples:\n  git crew plan status\n  git crew plan status crew-v1 --human"
    )]
    Status {
        /// The plan (default: the only one in .crew/plans).
        plan: Option<String>,
        /// The plan, as the other plan commands take it.
        #[arg(long = "plan", value_name = "P", conflicts_with = "plan")]
        plan_flag: Option<String>,
    },
}

pub fn run(ctx: &CommandContext, args: PlanArgs) -> Result<Report> {
    match args.action {
        PlanAction::Status { plan, plan_flag } => status(ctx, plan.or(plan_flag).as_deref()),
    }
}

fn status(ctx: &CommandContext, name: Option<&str>) -> Result<Report> {
    let request = crate::ops::plan::Request {
        plan: name.map(String::from),
    };
    Ok(report(&crate::ops::plan::status(ctx, &request)?))
}

/// The plan's status, for JSON and for people: a tree of waves, each closed by its gate.
fn report(status: &PlanStatus) -> Report {
    let PlanStatus {
        plan,
        statuses,
        verdicts,
        ..
    } = status;
    let mut human = format!("plan {}", plan.id);
    if let Some(star) = &plan.north_star {
        human.push_str(&format!(" — {star}"));
    }
    for wave in plan.waves() {
        human.push_str(&format!("\nwave {wave}"));
        let in_wave: Vec<&TaskStatus> = statuses.iter().filter(|s| s.wave == wave).collect();
        let gate = plan.closing_gate(wave);
        for (i, s) in in_wave.iter().enumerate() {
            let last = i + 1 == in_wave.len() && gate.is_none();
            let branch = if last { "└─" } else { "├─" };
            let detail = match (s.status, &s.run) {
                (crate::core::plan::TaskState::Blocked, _) => format!(": {}", s.blockers_text()),
                (_, Some(run)) => format!(" (run {run})"),
                _ => String::new(),
            };
            human.push_str(&format!("\n  {branch} {:<16} {}{detail}", s.task, s.status));
        }
        if let Some(g) = gate {
            let verdict = verdicts.get(&g.id).map_or_else(
                || "no verdict yet".to_string(),
                |v| format!("{} — {}", v.verdict, v.evidence),
            );
            human.push_str(&format!(
                "\n  └─ gate {} (closes wave {wave}): {verdict}",
                g.id
            ));
        }
    }
    Report::of(&status.output(), human)
}
