//! `git crew verify RUN`: run a finished run's verify command again in its worktree.

use clap::Args;

use super::context::CommandContext;
use super::error::{CrewError, ErrorCode, Result};
use super::ui::Report;
use crate::core::record::Outcome;
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
    let output = Output {
        run: &record.run,
        verify: record
            .verify
            .as_ref()
            .filter(|_| !timed_out && setup_failed.is_none()),
        timed_out,
        setup_failed: setup_failed.as_deref(),
        phase: record.phase,
        outcome: record.outcome,
    };
    let mut report = Report::of(&output, human);
    if !passed {
        let problem = record.verify.as_ref().and_then(|v| v.problem.clone());
        report.status = super::ui::Status::Failed(
            CrewError::new(
                if timed_out {
                    ErrorCode::VerifyTimedOut
                } else if setup_failed.is_some() {
                    ErrorCode::VerifySetupFailed
                } else {
                    ErrorCode::VerifyFailed
                },
                match (problem, &setup_failed) {
                    (_, Some(setup)) => {
                        format!("verify of run {} did not run: {setup}", record.run)
                    }
                    (Some(problem), _) => format!("verify of run {} failed: {problem}", record.run),
                    (None, _) if timed_out => format!("verify of run {} timed out", record.run),
                    (None, _) => format!("verify of run {} failed", record.run),
                },
            )
            .hinted("`git crew transcript RUN` shows what the verify printed"),
        );
    }
    Ok(report)
}

/// What `verify` prints.
#[derive(serde::Serialize)]
struct Output<'a> {
    run: &'a str,
    verify: Option<&'a crate::core::record::Verify>,
    timed_out: bool,
    /// Why the run's `[worktree] setup` did not ready the throwaway checkout (nothing
    /// was verified); absent when it did, or had none to run.
    #[serde(skip_serializing_if = "Option::is_none")]
    setup_failed: Option<&'a str>,
    phase: crate::core::record::Phase,
    outcome: Option<Outcome>,
}
