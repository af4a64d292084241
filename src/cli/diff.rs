//! `git crew diff RUN`: the change integrate would apply, as its audit sees it.

use clap::Args;
use serde::Serialize;

use super::context::CommandContext;
use super::error::{CrewError, ErrorCode, Result};
use super::runs;
use super::ui::{Format, Report};
use crate::git::diff::Shown;

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

/// What `diff` prints under `--json`.
#[derive(Serialize)]
struct DiffOutput<'a> {
    run: &'a str,
    from: String,
    to: String,
    text: &'a str,
}

pub fn run(ctx: &CommandContext, args: DiffArgs) -> Result<Report> {
    // A read: the store as it is.
    let store = runs::open(ctx)?;
    let record = runs::load(&store, &runs::resolve(&store, &args.run)?)?;
    let repo = ctx.repo()?;
    let Some((from, to)) =
        crate::run::integrate::audit_range(repo, &record).map_err(CrewError::from)?
    else {
        return Err(CrewError::new(
            ErrorCode::BranchGone,
            format!("run {}'s branch {} is gone", record.run, record.branch),
        )
        .hinted("nothing keeps its commits: there is no change to show"));
    };
    let shown = if args.stat {
        Shown::Stat
    } else if args.name_status {
        Shown::NameStatus
    } else {
        Shown::Patch
    };
    let terminal =
        ctx.format == Format::Human && std::io::IsTerminal::is_terminal(&std::io::stdout());
    let text = crate::git::diff::show(ctx.workdir()?, from, to, shown, terminal)
        .map_err(CrewError::from)?
        .unwrap_or_default();
    let output = DiffOutput {
        run: &record.run,
        from: from.to_string(),
        to: to.to_string(),
        text: &text,
    };
    // The diff is the data: printed as it is unless --json asks for the envelope.
    let mut report = Report::of(&output, text.as_str());
    report.raw = true;
    Ok(report)
}
