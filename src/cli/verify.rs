//! `git crew verify RUN`: run a finished run's verify command again in its worktree.

use clap::Args;

use super::context::CommandContext;
use super::error::Result;
use super::ui::Report;
use crate::run::verify::Verified;

/// Run a finished run's verify command again.
///
/// Run a finished run's verify command again in its worktree (with a fresh
/// $CREW_VERIFIER_DIR) and record its verdict on the run: exit 0 passes, unless the
/// verifier writes a reward below 1.0; any other exit fails. A run that was accepted or failed
/// on its verify takes the new verdict (pass or fail); any other outcome stays as it was.
/// Exit 0 when it passes, 1 when it does not.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  git crew verify 20261202-101500-1a2b\n  git crew verify 20261202-101500-1a2b --command 'cargo test routes'"
)]
pub struct VerifyArgs {
    #[arg(value_parser = super::runs::run_address, add = super::complete::runs())]
    pub run: String,
    /// The verify command to use (and keep) instead of the run's own.
    #[arg(long, value_name = "CMD")]
    pub command: Option<String>,
}

pub fn run(ctx: &CommandContext, args: VerifyArgs) -> Result<Report> {
    let request = crate::ops::verify::Request {
        run: args.run,
        command: args.command,
    };
    let (verdict, record) = crate::ops::verify::verify(ctx, &request)?;
    let passed = matches!(&verdict, Verified::Done(result) if result.passed);
    let timed_out = matches!(verdict, Verified::Timeout);
    let setup_failed = match &verdict {
        Verified::SetupFailed(problem) => Some(problem.clone()),
        _ => None,
    };
    let human = if timed_out {
        format!("verify of run {} timed out", record.run)
    } else if let Some(problem) = &setup_failed {
        format!("verify of run {} did not run: {problem}", record.run)
    } else {
        format!(
            "verify of run {} {} ({}); the run is {} (outcome {})",
            record.run,
            if passed { "passed" } else { "failed" },
            record
                .verify
                .as_ref()
                .map_or_else(String::new, crate::core::record::Verify::grounds),
            record.phase.as_str(),
            record
                .outcome
                .and_then(|o| serde_json::to_value(o).ok())
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_else(|| "none".into())
        )
    };
    Ok(Report::with_status(
        &crate::ops::verify::output(&verdict, &record),
        human,
        crate::ops::verify::status(&verdict, &record),
    ))
}
