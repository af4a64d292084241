//! `git crew gate record|ls`: gate verdicts in `refs/notes/crew-gates`.

use clap::{Args, Subcommand};
use serde::Serialize;

use super::context::CommandContext;
use super::error::{CrewError, ErrorKind, Result};
use super::flight::{RoutingArgs, resolve};
use super::plan::GateOutput;
use super::ui::Report;
use crate::core::plan::Verdict;
use crate::run::plans;

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
            let plan = super::plan::load(ctx, plan.as_deref())?;
            if plan.gate(&gate).is_none() {
                let names: Vec<&str> = plan.gates.iter().map(|g| g.id.as_str()).collect();
                let mut err = CrewError::new(
                    ErrorKind::NotFound,
                    "gate-not-found",
                    format!("plan {} has no gate {gate}", plan.id),
                );
                err = match crate::core::flight::did_you_mean(&gate, names.iter().copied()) {
                    Some(s) => err.hinted(format!("did you mean `{s}`?")),
                    None if names.is_empty() => err.hinted("the plan declares no [[gates]]"),
                    None => err.hinted(format!("its gates: {}", names.join(", "))),
                };
                return Err(err);
            }
            let flight = resolve(ctx, &RoutingArgs::default())?.flight;
            let evidence = evidence.unwrap_or_default();
            if flight.gates.require_evidence && evidence.trim().is_empty() {
                return Err(CrewError::usage(
                    "evidence-required",
                    "a verdict needs its evidence (gates.require_evidence)",
                )
                .hinted("pass --evidence 'what was measured, and the number'"));
            }
            let repo = ctx.repo()?;
            let rev = measured_at.unwrap_or_else(|| "HEAD".into());
            let commit = crate::git::worktree::rev_parse(ctx.workdir()?, &rev).map_err(|e| {
                CrewError::usage("bad-revision", e.to_string())
                    .hinted("--measured-at takes a commit, branch or tag")
            })?;
            let commit_id = crate::git::refs::oid(&commit).map_err(CrewError::internal)?;
            let by = crate::git::config::committer(repo);
            let row = Verdict {
                at: crate::sys::clock::stamp_now(),
                plan: plan.id.clone(),
                gate: gate.clone(),
                verdict,
                evidence,
                link,
                measured_at: Some(commit),
                by,
            };
            plans::record_verdict(repo, &row, commit_id).map_err(CrewError::internal)?;
            let human = format!(
                "gate {} of plan {}: {} — {}",
                row.gate, row.plan, row.verdict, row.evidence
            );
            Ok(Report::of(&GateRecordOutput { verdict: &row }, human))
        }
        GateAction::Ls { plan } => {
            let plan = super::plan::load(ctx, plan.as_deref())?;
            let verdicts = plans::verdicts(ctx.repo()?, &plan).map_err(CrewError::internal)?;
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
