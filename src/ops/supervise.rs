//! `supervise` (hidden): drive one run as its detached supervisor, started by dispatch
//! and by the scheduler (`run::queue::supervise`); a ledger row it could not write is a
//! warning.

use crate::error::{CrewError, Result};

use super::{Context, runs};

pub struct Request {
    /// A whole run id.
    pub run: String,
}

/// The run driven.
pub struct Supervised {
    pub run: String,
}

/// Drives the run until it ends or parks, then starts the queued runs its slot lets start
/// and tells the lead's notify command.
pub fn supervise(ctx: &Context, req: &Request) -> Result<Supervised> {
    let repo = ctx.repo()?;
    let store = runs::open(ctx)?;
    crate::run::queue::supervise(repo, &store, &req.run, &mut |not_filed| ctx.warn(not_filed))
        .map_err(CrewError::from)?;
    Ok(Supervised {
        run: req.run.clone(),
    })
}
