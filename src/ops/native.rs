//! `attach` and `deliver`: the lead's side of a `native` run, worked by the lead's own
//! sub-task.

use std::path::PathBuf;

use crate::core::flight::AdapterKind;
use crate::core::record::{Phase, RunRecord};
use crate::error::{CrewError, ErrorCode, Result};
use crate::run::supervisor::Delivered;

use super::{Context, runs};

pub struct Attach {
    /// A run address (see [`runs::resolve`]).
    pub run: String,
    /// The id of the lead's sub-task that works the run.
    pub session: String,
}

/// Binds a run awaiting attach to the lead's session; it is working from then on.
pub fn attach(ctx: &Context, req: &Attach) -> Result<RunRecord> {
    let runs::Held {
        store,
        mut record,
        lock: _lock,
    } = runs::hold(ctx, &req.run)?;
    if record.phase != Phase::AwaitingAttach {
        return Err(CrewError::new(
            ErrorCode::NotAwaitingAttach,
            format!(
                "run {} is {}, not awaiting attach",
                record.run,
                record.phase.as_str()
            ),
        ));
    }
    record.session = Some(req.session.clone());
    record.phase = Phase::Working;
    if !store.update_live(&record).map_err(CrewError::from)? {
        return Err(CrewError::new(
            ErrorCode::RunEnded,
            format!("run {} has ended", record.run),
        ));
    }
    Ok(record)
}

pub struct Deliver {
    /// A run address (see [`runs::resolve`]).
    pub run: String,
    /// The file holding the reply, ending with the footer (relative to the working
    /// directory).
    pub reply_file: PathBuf,
}

/// What came of a delivery.
pub enum Handed {
    /// The footer is incomplete (one more delivery is allowed): the run as it stands,
    /// and what is missing.
    Incomplete {
        record: Box<RunRecord>,
        problem: String,
    },
    /// The reply went through the footer and verify: the run as it ended (or asks).
    Settled(Box<RunRecord>),
}

/// Hands in the reply of a native run that is working or awaiting attach.
pub fn deliver(ctx: &Context, req: &Deliver) -> Result<Handed> {
    let runs::Held {
        store,
        record,
        lock: _lock,
    } = runs::hold(ctx, &req.run)?;
    let run = record.run.clone();
    if !matches!(record.phase, Phase::Working | Phase::AwaitingAttach)
        || record.adapter != AdapterKind::Native
    {
        return Err(CrewError::new(
            ErrorCode::NotDeliverable,
            format!(
                "run {} ({}, {}) takes no delivery",
                record.run,
                record.adapter,
                record.phase.as_str()
            ),
        ));
    }
    let path = ctx.cwd.join(&req.reply_file);
    // A reply is held to the cap of a worker's manifest.
    let reply = super::files::read_given(&path, crate::run::output::DEFAULT_CAP, "the reply file")?;
    let reply = String::from_utf8_lossy(&reply).into_owned();
    let repo = ctx.repo()?;
    let delivered =
        crate::run::queue::deliver(repo, &store, &record.run, &reply, &mut |row| ctx.warn(row))
            .map_err(CrewError::from)?;
    match delivered {
        Delivered::Incomplete(problem) => Ok(Handed::Incomplete {
            record: Box::new(runs::load(&store, &run)?),
            problem,
        }),
        Delivered::Settled(record) => Ok(Handed::Settled(record)),
    }
}
