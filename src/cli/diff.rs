//! `git crew diff RUN`: the change integrate would apply, as its audit sees it.

use clap::Args;

use super::context::CommandContext;
use super::error::Result;
use super::ui::{Format, Report};
use crate::ops::diff::Shown;

/// Show a run's change: what integrate would apply.
///
/// Show a run's change: exactly what integrate would apply and audit.
///
/// From the run's own base (its base, or where it last merged the target in) to its
/// branch's tip. On a terminal through git's pager, with colour.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  git crew diff @last\n  git crew diff routes --stat\n  git crew diff 3c4d --name-status"
)]
pub struct DiffArgs {
    /// The run: its id, a unique part of it, its task, or @last.
    #[arg(value_parser = super::runs::run_address, add = super::complete::runs())]
    pub run: String,
    /// A diffstat.
    #[arg(long, conflicts_with_all = ["name_status", "patch"])]
    pub stat: bool,
    /// Each path with its status (A, M, D).
    #[arg(long, conflicts_with = "patch")]
    pub name_status: bool,
    /// The patch (the default).
    #[arg(long)]
    pub patch: bool,
}

pub fn run(ctx: &CommandContext, args: DiffArgs) -> Result<Report> {
    let shown = if args.stat {
        Shown::Stat
    } else if args.name_status {
        Shown::NameStatus
    } else {
        Shown::Patch
    };
    let page = ctx.format == Format::Human && std::io::IsTerminal::is_terminal(&std::io::stdout());
    let request = crate::ops::diff::Request {
        run: args.run,
        shown,
        page,
    };
    let diff = crate::ops::diff::diff(ctx, &request)?;
    // The diff is the data: printed as it is unless --json asks for the envelope.
    let mut report = Report::of(&diff.output(), diff.text.as_str());
    report.raw = true;
    Ok(report)
}
