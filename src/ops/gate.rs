//! `gate record` and `gate ls`: gate verdicts in `refs/notes/crew-gates`.

use std::collections::HashMap;

use crate::core::flight::Invocation;
use crate::core::plan::{GateVerdict, Plan, Verdict};
use crate::error::{CrewError, ErrorCode, Result};
use crate::run::plans;

use super::Context;

pub struct Record {
    pub gate: String,
    pub verdict: GateVerdict,
    pub evidence: Option<String>,
    pub link: Option<String>,
    /// The revision measured (default HEAD).
    pub measured_at: Option<String>,
    /// The plan (default: the only one).
    pub plan: Option<String>,
}

/// Records a gate's verdict with its evidence; returns the row as recorded.
pub fn record(ctx: &Context, req: Record) -> Result<Verdict> {
    let plan = super::plans::load(ctx, req.plan.as_deref())?;
    if plan.gate(&req.gate).is_none() {
        let names: Vec<&str> = plan.gates.iter().map(|g| g.id.as_str()).collect();
        let mut err = CrewError::new(
            ErrorCode::GateNotFound,
            format!("plan {} has no gate {}", plan.id, req.gate),
        );
        err = match crate::core::flight::did_you_mean(&req.gate, names.iter().copied()) {
            Some(s) => err.hinted(format!("did you mean `{s}`?")),
            None if names.is_empty() => err.hinted("the plan declares no [[gates]]"),
            None => err.hinted(format!("its gates: {}", names.join(", "))),
        };
        return Err(err);
    }
    let flight = super::flight::resolve(ctx, &Invocation::default())?.flight;
    let evidence = req.evidence.unwrap_or_default();
    if flight.gates.require_evidence && evidence.trim().is_empty() {
        return Err(CrewError::new(
            ErrorCode::EvidenceRequired,
            "a verdict needs its evidence (gates.require_evidence)",
        ));
    }
    let repo = ctx.repo()?;
    let rev = req.measured_at.unwrap_or_else(|| "HEAD".into());
    let commit = crate::git::worktree::rev_parse(ctx.workdir()?, &rev)
        .map_err(|e| CrewError::new(ErrorCode::BadRevision, e.to_string()))?;
    let commit_id = crate::git::refs::oid(&commit).map_err(CrewError::from)?;
    let by = crate::git::config::committer(repo);
    let row = Verdict {
        at: crate::sys::clock::stamp_now(),
        plan: plan.id.clone(),
        gate: req.gate,
        verdict: req.verdict,
        evidence,
        link: req.link,
        measured_at: Some(commit),
        by,
    };
    plans::record_verdict(repo, &row, commit_id).map_err(CrewError::from)?;
    Ok(row)
}

/// The plan and the latest verdict of each of its gates.
pub fn ls(ctx: &Context, plan: Option<&str>) -> Result<(Plan, HashMap<String, Verdict>)> {
    let plan = super::plans::load(ctx, plan)?;
    let verdicts = plans::verdicts(ctx.repo()?, &plan).map_err(CrewError::from)?;
    Ok((plan, verdicts))
}
