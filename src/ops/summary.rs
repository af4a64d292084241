//! `summary`: the four-line account of a plan's wave (what, why, how, when), at dispatch,
//! at completion or for a micro-plan, from the runs as they are.

use crate::core::flight::{Invocation, Reflex};
use crate::core::summary::{self, At, Summary};
use crate::error::Result;

use super::Context;
use super::runs::Access;

pub struct Request {
    pub wave: u32,
    pub at: At,
    /// The plan (default: the only one).
    pub plan: Option<String>,
}

/// The wave's summary, and the shape `summary.reflex` gives it.
pub struct Summarized {
    pub summary: Summary,
    pub reflex: Reflex,
}

/// Summarizes the wave; exit 3 when the plan has no task in it. A read: the runs as they
/// are.
pub fn summary(ctx: &Context, req: &Request) -> Result<Summarized> {
    let plan = super::plans::load(ctx, req.plan.as_deref())?;
    super::wave::wave_tasks(&plan, req.wave)?;
    let (facts, _, _) = super::wave::gather(ctx, &plan, req.wave, Access::Read)?;
    let summary = summary::summarize(&facts, req.at);
    let reflex = super::flight::resolve(ctx, &Invocation::default())?
        .flight
        .summary
        .reflex;
    Ok(Summarized { summary, reflex })
}
