//! `git crew gate record|ls`: gate verdicts in `refs/notes/crew-gates`.

use clap::{Args, Subcommand};
use serde::Serialize;

use super::context::CommandContext;
use super::error::Result;
use super::ui::Report;
use crate::core::plan::Verdict;
use crate::view::output::GateOutput;

/// `gate record`: the verdict as it was recorded (SPEC §2 `gate record`, §4).
#[derive(Debug, Serialize)]
pub struct GateRecordOutput<'a> {
    pub verdict: &'a Verdict,
}

/// `gate ls`: every gate of the plan with its latest verdict (SPEC §2 `gate ls`).
#[derive(Debug, Serialize)]
pub struct GateLsOutput<'a> {
    pub plan: &'a str,
    pub gates: Vec<GateOutput<'a>>,
}

/// Record and list gate verdicts.
#[derive(Debug, Args)]
pub struct GateArgs {
    #[command(subcommand)]
    pub action: GateAction,
}

#[derive(Debug, Subcommand)]
pub enum GateAction {
    /// Record a gate's verdict with its evidence.
    ///
    /// On the gate's history (the note on the blob of crew-gate:<plan>/<gate>) and on the
    /// commit it was measured at. A pass unblocks the waves the gate holds, with no other
    /// edit.
    #[command(
        after_help = "Examples:\n  git crew gate record g-live-run --verdict pass --evidence 'phase=working after 1.2 s'\n  git crew gate record g-live-run --verdict fail --evidence 'took 9 s' --link https://ci/run/42"
    )]
    Record {
        gate: String,
        #[arg(long, value_enum)]
        verdict: crate::core::plan::GateVerdict,
        /// What was measured (required when gates.require_evidence).
        #[arg(long)]
        evidence: Option<String>,
        /// Where the evidence can be seen.
        #[arg(long)]
        link: Option<String>,
        /// The commit the evidence was measured at (default HEAD).
        #[arg(long, value_name = "REV")]
        measured_at: Option<String>,
        /// The plan (default: the only one).
        #[arg(long)]
        plan: Option<String>,
    },
    /// Every gate of the plan with its latest verdict.
    Ls {
        #[arg(long)]
        plan: Option<String>,
    },
}

pub fn run(ctx: &CommandContext, args: GateArgs) -> Result<Report> {
    match args.action {
        GateAction::Record {
            gate,
            verdict,
            evidence,
            link,
            measured_at,
            plan,
        } => {
            let request = crate::ops::gate::Record {
                gate,
                verdict,
                evidence,
                link,
                measured_at,
                plan,
            };
            let row = crate::ops::gate::record(ctx, request)?;
            let human = format!(
                "gate {} of plan {}: {} — {}",
                row.gate, row.plan, row.verdict, row.evidence
            );
            Ok(Report::of(&GateRecordOutput { verdict: &row }, human))
        }
        GateAction::Ls { plan } => {
            let (plan, verdicts) = crate::ops::gate::ls(ctx, plan.as_deref())?;
            let gates = plan
                .gates
                .iter()
                .map(|g| GateOutput::of(g, verdicts.get(&g.id)))
                .collect();
            let human = plan
                .gates
                .iter()
                .map(|g| match verdicts.get(&g.id) {
                    Some(v) => format!("{:<20} {:<4} {} ({})", g.id, v.verdict, v.evidence, v.at),
                    None => format!("{:<20} -    no verdict", g.id),
                })
                .collect::<Vec<_>>()
                .join("\n");
            let output = GateLsOutput {
                plan: &plan.id,
                gates,
            };
            Ok(Report::of(&output, human))
        }
    }
}
