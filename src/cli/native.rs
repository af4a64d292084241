//! `git crew attach` and `git crew deliver`: the lead's side of a `native` run.

use std::path::PathBuf;

use clap::Args;

use super::context::CommandContext;
use super::error::{CrewError, ErrorKind, Result};
use super::runs;
use super::ui::Report;
use crate::core::flight::AdapterKind;
use crate::core::record::{Outcome, Phase};
use crate::run::supervisor::{self, Delivered};

/// Bind a native run to the lead's own sub-task.
///
/// It is bound by the sub-task's session id.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  git crew attach 20261202-101500-1a2b --session task-7")]
pub struct AttachArgs {
    #[arg(value_parser = super::runs::run_address, add = super::complete::runs())]
    pub run: String,
    /// The id of the lead's sub-task that works the run.
    #[arg(long)]
    pub session: String,
}

pub fn attach(ctx: &CommandContext, args: AttachArgs) -> Result<Report> {
    let store = runs::settled(ctx)?;
    let run = runs::resolve(&store, &args.run)?;
    let _lock = store
        .run_lock(&run)
        .map_err(|e| CrewError::new(ErrorKind::Refused, "run-busy", e.to_string()))?;
    let mut record = runs::load(&store, &run)?;
    if record.phase != Phase::AwaitingAttach {
        return Err(CrewError::new(
            ErrorKind::Refused,
            "not-awaiting-attach",
            format!(
                "run {} is {}, not awaiting attach",
                record.run,
                record.phase.as_str()
            ),
        ));
    }
    record.session = Some(args.session.clone());
    record.phase = Phase::Working;
    if !store.update_live(&record).map_err(CrewError::internal)? {
        return Err(CrewError::new(
            ErrorKind::Refused,
            "run-ended",
            format!("run {} has ended", record.run),
        ));
    }
    let human = format!("run {} is bound to session {}", record.run, args.session);
    Ok(Report::of(&runs::output(&record), human))
}

/// Hand in the reply of a native run.
///
/// Hand in the reply (or manifest) of a run; it goes through the footer and verify path.
///
/// Exit 0 when the run passed, 1 when it failed or the footer is incomplete (one more
/// delivery is allowed), 5 when the reply asks for help.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  git crew deliver 20261202-101500-1a2b --reply-file reply.md")]
pub struct DeliverArgs {
    #[arg(value_parser = super::runs::run_address, add = super::complete::runs())]
    pub run: String,
    /// The reply, ending with the footer.
    #[arg(long, value_name = "FILE")]
    pub reply_file: PathBuf,
}

pub fn deliver(ctx: &CommandContext, args: DeliverArgs) -> Result<Report> {
    let store = runs::settled(ctx)?;
    let run = runs::resolve(&store, &args.run)?;
    let _lock = store
        .run_lock(&run)
        .map_err(|e| CrewError::new(ErrorKind::Refused, "run-busy", e.to_string()))?;
    let record = runs::load(&store, &run)?;
    if !matches!(record.phase, Phase::Working | Phase::AwaitingAttach)
        || record.adapter != AdapterKind::Native
    {
        return Err(CrewError::new(
            ErrorKind::Refused,
            "not-deliverable",
            format!(
                "run {} ({}, {}) takes no delivery",
                record.run,
                record.adapter,
                record.phase.as_str()
            ),
        )
        .hinted("deliver is for native runs that are working or awaiting attach"));
    }
    let path = ctx.cwd.join(&args.reply_file);
    // A reply is held to the cap of a worker's manifest.
    let reply =
        super::context::read_given(&path, crate::run::output::DEFAULT_CAP, "the reply file")?;
    let reply = String::from_utf8_lossy(&reply).into_owned();
    let repo = ctx.repo()?;
    match supervisor::deliver(repo, &store, &record.run, &reply).map_err(CrewError::internal)? {
        Delivered::Incomplete(problem) => {
            let record = runs::load(&store, &run)?;
            let mut report = Report::of(&runs::output(&record), runs::result_block(&record));
            report.status = super::ui::Status::Failed(
                CrewError::check(
                    "footer-rejected",
                    format!("the reply's footer is incomplete: {problem}"),
                )
                .hinted(
                    "deliver once more with ## Result, ## How to verify and ## Deferred / concerns",
                ),
            );
            Ok(report)
        }
        Delivered::Settled(record) => {
            let mut report = Report::of(&runs::output(&record), runs::result_block(&record));
            if record.phase == Phase::NeedsHelp {
                report.status = super::ui::Status::Attention;
            } else if record.outcome != Some(Outcome::Pass) {
                report.status = super::ui::Status::Failed(CrewError::check(
                    "run-failed",
                    format!("run {} did not pass", record.run),
                ));
            }
            Ok(report)
        }
    }
}
