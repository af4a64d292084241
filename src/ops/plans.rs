//! A plan of `.crew/plans/`, loaded for an operation.

use super::Context;
use crate::core::plan::Plan;
use crate::error::{CrewError, ErrorCode, Result};
use crate::run::plans::{self, PlanError};

/// Loads a plan, with the errors of SPEC §2 (exit 2 invalid or ambiguous, 3 not found).
pub fn load(ctx: &Context, name: Option<&str>) -> Result<Plan> {
    plans::load(ctx.workdir()?, name).map_err(|e| match e {
        PlanError::NotFound(m) => CrewError::new(ErrorCode::PlanNotFound, m),
        PlanError::Ambiguous(all) if all.is_empty() => CrewError::new(
            ErrorCode::PlanRequired,
            "this repository has no plan (.crew/plans/<plan>.toml)",
        )
        .hinted("write one: [plan] id, then [[tasks]] and [[gates]] tables (see README, Plans)"),
        PlanError::Ambiguous(all) => CrewError::new(
            ErrorCode::PlanRequired,
            format!("name the plan: there are {}", all.join(", ")),
        )
        .hinted("pass --plan P (`plan status` also takes it as its argument)"),
        PlanError::Invalid(diagnostics) => CrewError::new(
            ErrorCode::PlanInvalid,
            format!(
                "the plan is invalid ({} {})",
                diagnostics.len(),
                if diagnostics.len() == 1 {
                    "problem"
                } else {
                    "problems"
                }
            ),
        )
        .with_details(diagnostics.iter().map(ToString::to_string).collect()),
    })
}

/// The plan's derived status, and the facts it was derived from: from the runs as they
/// are for a command that reads, settled first for one that acts.
pub fn derive(
    ctx: &Context,
    plan: &Plan,
    flight: &crate::core::flight::Flight,
    access: super::runs::Access,
) -> Result<(Vec<crate::core::plan::TaskStatus>, crate::core::plan::Facts)> {
    let store = access.store(ctx)?;
    let facts = plans::facts(ctx.repo()?, &store, plan, flight).map_err(CrewError::from)?;
    Ok((crate::core::plan::status(plan, &facts), facts))
}
