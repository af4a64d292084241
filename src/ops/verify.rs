//! `verify`: a finished run's verify command, run again in its worktree, its verdict
//! recorded on the run.

use crate::core::record::RunRecord;
use crate::error::{CrewError, ErrorCode, Result};
use crate::run::verify::{self, Verified};

use super::answer::Status;
use super::{Context, runs};

pub struct Request {
    /// A run address (see [`runs::resolve`]).
    pub run: String,
    /// The verify command to use (and keep) instead of the run's own.
    pub command: Option<String>,
}

/// Verifies the run again and records the verdict; a live or integrated run is refused
/// (exit 4), a run with neither its own command nor `command` is a usage error.
pub fn verify(ctx: &Context, req: &Request) -> Result<(Verified, RunRecord)> {
    let store = runs::settled(ctx)?;
    let record = runs::load(&store, &runs::resolve(&store, &req.run)?)?;
    if !record.phase.is_final() {
        return Err(CrewError::new(
            ErrorCode::RunInFlight,
            format!("run {} is still {}", record.run, record.phase.as_str()),
        )
        .hinted("its supervisor verifies it when the worker is done; `git crew wait RUN`"));
    }
    if record.integration.is_some() {
        return Err(CrewError::new(
            ErrorCode::AlreadyIntegrated,
            format!(
                "run {} is integrated; verify the target instead",
                record.run
            ),
        )
        .hinted("run the verify command in your checkout of the target"));
    }
    let Some(command) = req.command.clone().or(record.verify_command.clone()) else {
        return Err(CrewError::new(
            ErrorCode::NoVerifyCommand,
            format!("run {} has no verify command", record.run),
        ));
    };
    let repo = ctx.repo()?;
    verify::again(repo, ctx.workdir()?, &store, record, &command)
        .map_err(CrewError::from)?
        .map_err(CrewError::from)
}

/// What `verify` prints as data.
pub fn output<'a>(
    verdict: &'a Verified,
    record: &'a RunRecord,
) -> crate::view::output::VerifyOutput<'a> {
    let setup_failed = match verdict {
        Verified::SetupFailed(problem) => Some(problem.as_str()),
        _ => None,
    };
    let timed_out = matches!(verdict, Verified::Timeout);
    crate::view::output::VerifyOutput {
        run: &record.run,
        verify: record
            .verify
            .as_ref()
            .filter(|_| !timed_out && setup_failed.is_none()),
        timed_out,
        setup_failed,
        phase: record.phase,
        outcome: record.outcome,
    }
}

/// How the verify came out: a pass, or `verify-failed`, `verify-timed-out` or
/// `verify-setup-failed` (exit 1) naming its problem.
pub fn status(verdict: &Verified, record: &RunRecord) -> Status {
    if matches!(verdict, Verified::Done(result) if result.passed) {
        return Status::Ok;
    }
    let problem = record.verify.as_ref().and_then(|v| v.problem.clone());
    let code = match verdict {
        Verified::Timeout => ErrorCode::VerifyTimedOut,
        Verified::SetupFailed(_) => ErrorCode::VerifySetupFailed,
        Verified::Done(_) => ErrorCode::VerifyFailed,
    };
    let message = match (verdict, problem) {
        (Verified::SetupFailed(setup), _) => {
            format!("verify of run {} did not run: {setup}", record.run)
        }
        (_, Some(problem)) => format!("verify of run {} failed: {problem}", record.run),
        (Verified::Timeout, None) => format!("verify of run {} timed out", record.run),
        (_, None) => format!("verify of run {} failed", record.run),
    };
    Status::Failed(
        CrewError::new(code, message)
            .hinted("`git crew transcript RUN` shows what the verify printed"),
    )
}

impl From<verify::Refusal> for CrewError {
    fn from(r: verify::Refusal) -> CrewError {
        use verify::Refusal;
        let fresh = "remove the run's worktree; verify then checks the commit out afresh";
        match r {
            Refusal::NoSeal(run) => CrewError::new(
                ErrorCode::RecordTampered,
                format!("run {run} has no seal: nothing vouches for its record"),
            ),
            Refusal::Tampered { run, differs } => CrewError::new(
                ErrorCode::RecordTampered,
                format!(
                    "run {run}'s record disagrees with its seal on {}",
                    differs.join(", ")
                ),
            ),
            Refusal::BranchGone { run, branch } => CrewError::new(
                ErrorCode::BranchGone,
                format!("run {run}'s branch {branch} is gone"),
            ),
            Refusal::Administration { run, why } => CrewError::new(
                ErrorCode::WorktreeTampered,
                format!("run {run}'s worktree administration cannot be restored: {why}"),
            )
            .hinted(fresh),
            Refusal::Unreadable { run, why } => CrewError::new(
                ErrorCode::WorktreeTampered,
                format!("git cannot read run {run}'s worktree: {why}"),
            )
            .hinted(fresh),
            Refusal::Dirty { run, worktree } => CrewError::new(
                ErrorCode::WorktreeDirty,
                format!(
                    "run {run}'s worktree {} has uncommitted changes: what would be verified is not the commit",
                    worktree.display()
                ),
            ),
        }
    }
}
