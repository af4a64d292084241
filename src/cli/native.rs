//! `git crew attach` and `git crew deliver`: the lead's side of a `native` run.

use std::path::PathBuf;

use clap::Args;

use super::context::CommandContext;
use super::error::{CrewError, ErrorCode, Result};
use super::runs;
use super::ui::Report;
use crate::core::record::{Outcome, Phase};
use crate::ops::native::Handed;

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
    let request = crate::ops::native::Attach {
        run: args.run,
        session: args.session,
    };
    let record = crate::ops::native::attach(ctx, &request)?;
    let human = format!(
        "run {} is bound to session {}",
        record.run,
        record.session.as_deref().unwrap_or_default()
    );
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
    let request = crate::ops::native::Deliver {
        run: args.run,
        reply_file: args.reply_file,
    };
    match crate::ops::native::deliver(ctx, &request)? {
        Handed::Incomplete { record, problem } => {
            let mut report = Report::of(&runs::output(&record), runs::result_block(&record));
            report.status = super::ui::Status::Failed(
                CrewError::new(
                    ErrorCode::FooterRejected,
                    format!("the reply's footer is incomplete: {problem}"),
                )
                .hinted(
                    "deliver once more with ## Result, ## How to verify and ## Deferred / concerns",
                ),
            );
            Ok(report)
        }
        Handed::Settled(record) => {
            let mut report = Report::of(&runs::output(&record), runs::result_block(&record));
            if record.phase == Phase::NeedsHelp {
                report.status = super::ui::Status::Attention;
            } else if record.outcome != Some(Outcome::Pass) {
                report.status = super::ui::Status::Failed(CrewError::new(
                    ErrorCode::RunFailed,
                    format!("run {} did not pass", record.run),
                ));
            }
            Ok(report)
        }
    }
}
