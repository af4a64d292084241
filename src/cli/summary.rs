//! `git crew summary --wave N --at dispatch|completion|micro-plan`.

use clap::Args;

use super::context::CommandContext;
use super::error::Result;
use super::ui::Report;
use crate::core::flight::Reflex;
use crate::core::summary::At;

/// Print the four-line account of a wave.
///
/// The four-line account of a wave: a title, then WHAT (tasks and runs, commits at
/// completion), WHY (the gate evidence), HOW (runtime and isolation facts only) and WHEN
/// (an estimate from sizes and speed factors, and the gate that closes the wave), each
/// at most two lines.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  git crew summary --wave 1 --at dispatch\n  git crew summary --wave 1 --at completion --human"
)]
pub struct SummaryArgs {
    #[arg(long)]
    pub wave: u32,
    #[arg(long, value_enum)]
    pub at: At,
    #[arg(long)]
    pub plan: Option<String>,
}

/// `summary`'s output is core's [`Summary`](summary::Summary): the title, `what`, `why`,
/// `how`, `when`, and at completion whether the closing gate's evidence could be stated
/// (SPEC §7, the summary reflex).
pub fn run(ctx: &CommandContext, args: SummaryArgs) -> Result<Report> {
    let request = crate::ops::summary::Request {
        wave: args.wave,
        at: args.at,
        plan: args.plan,
    };
    let summarized = crate::ops::summary::summary(ctx, &request)?;
    // `summary.reflex` names the shape; what-why-how-when is the one there is.
    let human = match summarized.reflex {
        Reflex::WhatWhyHowWhen => summarized.summary.render(100),
    };
    Ok(Report::of(&summarized.summary, human))
}
