//! `git crew plan status [PLAN]`: the derived status of every task of a plan.

use clap::{Args, Subcommand};
use serde::Serialize;

use super::context::CommandContext;
use super::error::Result;
use super::ui::Report;
use crate::core::plan::{Blocker, Gate, TaskStatus, Verdict};
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

/// `plan status`: the plan, every task's derived status and every gate with its latest
/// verdict (SPEC §2 `plan status`, §7).
#[derive(Debug, Serialize)]
pub struct PlanStatusOutput<'a> {
    pub plan: &'a str,
    pub north_star: Option<&'a str>,
    pub tasks: Vec<TaskOutput<'a>>,
    pub gates: Vec<GateOutput<'a>>,
}

/// A task of `plan status`: its derived status (`done`, `in-flight`, `ready`, `blocked`
/// with its blockers), its size and the ledger's estimate, in worker-hours (SPEC §7, §8).
#[derive(Debug, Serialize)]
pub struct TaskOutput<'a> {
    pub task: &'a str,
    pub wave: u32,
    pub status: crate::core::plan::TaskState,
    pub blockers: &'a [Blocker],
    /// The live or the integrated run.
    pub run: Option<&'a str>,
    pub size_h: Option<f64>,
    pub estimate_h: Option<f64>,
}

/// A gate and its latest verdict (null when none), as `plan status` and `gate ls` print
/// it (SPEC §2 `gate`, §7).
#[derive(Debug, Serialize)]
pub struct GateOutput<'a> {
    pub gate: &'a str,
    pub measure: Option<&'a str>,
    pub required_evidence: Option<&'a str>,
    pub closes_wave: Option<u32>,
    pub gates_waves: &'a [u32],
    pub verdict: Option<&'a Verdict>,
}

impl<'a> GateOutput<'a> {
    pub fn of(gate: &'a Gate, verdict: Option<&'a Verdict>) -> GateOutput<'a> {
        GateOutput {
            gate: &gate.id,
            measure: gate.measure.as_deref(),
            required_evidence: gate.required_evidence.as_deref(),
            closes_wave: gate.closes_wave,
            gates_waves: &gate.gates_waves,
            verdict,
        }
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
        estimates,
    } = status;
    let tasks = statuses
        .iter()
        .map(|s| TaskOutput {
            task: &s.task,
            wave: s.wave,
            status: s.status,
            blockers: &s.blockers,
            run: s.run.as_deref(),
            size_h: plan.task(&s.task).and_then(|t| t.size),
            estimate_h: estimates.get(&s.task).copied(),
        })
        .collect();
    let gates = plan
        .gates
        .iter()
        .map(|g| GateOutput::of(g, verdicts.get(&g.id)))
        .collect();
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
    let output = PlanStatusOutput {
        plan: &plan.id,
        north_star: plan.north_star.as_deref(),
        tasks,
        gates,
    };
    Report::of(&output, human)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gate_without_a_verdict_prints_null_for_it() {
        let gate = Gate {
            id: "g1".into(),
            measure: None,
            required_evidence: Some("under 3 s".into()),
            closes_wave: Some(1),
            gates_waves: vec![2],
        };
        assert_eq!(
            serde_json::to_string(&GateOutput::of(&gate, None)).unwrap(),
            r#"{"gate":"g1","measure":null,"required_evidence":"under 3 s","closes_wave":1,"gates_waves":[2],"verdict":null}"#
        );
    }
}
