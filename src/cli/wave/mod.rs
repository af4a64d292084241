//! `git crew wave dispatch N` and `git crew wave status N`: one file per subcommand
//! (`dispatch.rs`, `status.rs`); the command and its subcommands are here.

mod dispatch;
mod status;

use clap::{Args, Subcommand};

use super::context::CommandContext;
use super::error::Result;
use super::flight::RoutingArgs;
use super::ui::Report;

/// Run a plan wave by wave.
#[derive(Debug, Args)]
pub struct WaveArgs {
    #[command(subcommand)]
    pub action: WaveAction,
}

#[derive(Debug, Subcommand)]
pub enum WaveAction {
    /// Dispatch every ready task of wave N at once.
    ///
    /// Refused up front (exit 4) when two of its tasks' write scopes overlap, or one
    /// overlaps a run in flight; runs beyond a backend's concurrency are queued. Prints the
    /// dispatch summary.
    #[command(
        after_help = "Examples:\n  git crew wave dispatch 1\n  git crew wave dispatch 2 --plan crew-v1"
    )]
    Dispatch {
        wave: u32,
        #[arg(long)]
        plan: Option<String>,
        /// Decide every task's run and print them; start nothing.
        #[arg(long)]
        dry_run: bool,
        #[command(flatten)]
        routing: RoutingArgs,
    },
    /// Report wave N.
    ///
    /// Each task's status and run, the closing gate's verdict (a wave whose gate has none
    /// reads as incomplete), and the Deferred / concerns of its footers as candidate
    /// follow-ons.
    #[command(after_help = "Examples:\n  git crew wave status 1 --human")]
    Status {
        wave: u32,
        #[arg(long)]
        plan: Option<String>,
    },
}

pub fn run(ctx: &CommandContext, args: WaveArgs) -> Result<Report> {
    match args.action {
        WaveAction::Dispatch {
            wave,
            plan,
            dry_run,
            routing,
        } => dispatch::run(ctx, wave, plan.as_deref(), dry_run, &routing),
        WaveAction::Status { wave, plan } => status::run(ctx, wave, plan.as_deref()),
    }
}
