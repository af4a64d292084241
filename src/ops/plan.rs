//! `plan status`: the derived status of every task of a plan, and every gate's latest
//! verdict, from the runs as they are.

use std::collections::HashMap;

use crate::core::flight::Invocation;
use crate::core::plan::{Plan, TaskStatus, Verdict};
use crate::error::{CrewError, Result};

use super::Context;
use super::runs::Access;

pub struct Request {
    /// The plan (default: the only one in `.crew/plans`).
    pub plan: Option<String>,
}

/// A plan and what it comes to now.
pub struct PlanStatus {
    pub plan: Plan,
    /// Every task's derived status, in the plan's order.
    pub statuses: Vec<TaskStatus>,
    /// Each gate's latest verdict, by gate id.
    pub verdicts: HashMap<String, Verdict>,
    /// The ledger's estimate of each task, in worker-hours, by task id.
    pub estimates: HashMap<String, f64>,
}

impl PlanStatus {
    /// What `plan status` prints as data.
    pub fn output(&self) -> crate::view::output::PlanStatusOutput<'_> {
        use crate::view::output::{GateOutput, PlanStatusOutput, PlanTaskOutput};
        let plan = &self.plan;
        PlanStatusOutput {
            plan: &plan.id,
            north_star: plan.north_star.as_deref(),
            tasks: self
                .statuses
                .iter()
                .map(|s| PlanTaskOutput {
                    task: &s.task,
                    wave: s.wave,
                    status: s.status,
                    blockers: &s.blockers,
                    run: s.run.as_deref(),
                    size_h: plan.task(&s.task).and_then(|t| t.size),
                    estimate_h: self.estimates.get(&s.task).copied(),
                })
                .collect(),
            gates: plan
                .gates
                .iter()
                .map(|g| GateOutput::of(g, self.verdicts.get(&g.id)))
                .collect(),
        }
    }
}

/// Derives the plan's status; a read: the runs as they are, and the ledger's cache left
/// as it is.
pub fn status(ctx: &Context, req: &Request) -> Result<PlanStatus> {
    let plan = super::plans::load(ctx, req.plan.as_deref())?;
    let flight = super::flight::resolve(ctx, &Invocation::default())?.flight;
    let repo = ctx.repo()?;
    let (statuses, facts) = super::plans::derive(ctx, &plan, &flight, Access::Read)?;
    let estimates = crate::run::ledger::estimates(repo, &plan, Access::Read.cache())
        .map_err(CrewError::from)?;
    Ok(PlanStatus {
        plan,
        statuses,
        verdicts: facts.verdicts,
        estimates,
    })
}
