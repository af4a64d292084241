//! `git crew verify RUN`: run a finished run's verify command again in its worktree.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::Args;
use serde_json::json;

use super::context::CommandContext;
use super::error::{CrewError, ErrorKind, Result};
use super::runs;
use super::ui::Report;
use crate::core::record::Outcome;
use crate::run::verify::{self, Verified};

/// Run a finished run's verify command again in its worktree (with a fresh
/// $CREW_VERIFIER_DIR) and record the reward on the run. A run that was accepted or failed
/// on its verify takes the new verdict (pass or fail); any other outcome stays as it was.
/// Exit 0 when it passes, 1 when it does not.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  git crew verify 20261202-101500-1a2b\n  git crew verify 20261202-101500-1a2b --command 'cargo test routes'"
)]
pub struct VerifyArgs {
    #[arg(value_parser = super::runs::run_id)]
    pub run: String,
    /// The verify command to use (and keep) instead of the run's own.
    #[arg(long, value_name = "CMD")]
    pub command: Option<String>,
}

pub fn run(ctx: &CommandContext, args: VerifyArgs) -> Result<Report> {
    let store = runs::settled(ctx)?;
    let mut record = runs::load(&store, &args.run)?;
    if !record.phase.is_final() {
        return Err(CrewError::new(
            ErrorKind::Refused,
            "run-in-flight",
            format!("run {} is still {}", record.run, record.phase.as_str()),
        )
        .hinted("its supervisor verifies it when the worker is done; `git crew wait RUN`"));
    }
    if record.integration.is_some() {
        return Err(CrewError::new(
            ErrorKind::Refused,
            "already-integrated",
            format!(
                "run {} is integrated; verify the target instead",
                record.run
            ),
        )
        .hinted("run the verify command in your checkout of the target"));
    }
    let Some(command) = args.command.clone().or(record.verify_command.clone()) else {
        return Err(CrewError::usage(
            "no-verify-command",
            format!("run {} has no verify command", record.run),
        )
        .hinted("pass one with --command CMD"));
    };
    let repo = ctx.repo()?;
    // The facts come from the seal: a record changed after dispatch is not verified.
    let sealed = crate::git::seal::read(repo, &record.run)
        .map_err(CrewError::internal)?
        .ok_or_else(|| {
            CrewError::check(
                "record-tampered",
                format!(
                    "run {} has no seal: nothing vouches for its record",
                    record.run
                ),
            )
        })?;
    let differs = sealed.differences(&record);
    if !differs.is_empty() {
        return Err(CrewError::check(
            "record-tampered",
            format!(
                "run {}'s record disagrees with its seal on {}",
                record.run,
                differs.join(", ")
            ),
        ));
    }
    // What is verified is the commit that is recorded: the branch's tip, checked out
    // clean — in the worktree when it is there at that commit, else in a throwaway one.
    let tip = crate::git::merge::branch_tip(repo, &sealed.branch)
        .map_err(CrewError::internal)?
        .ok_or_else(|| {
            CrewError::new(
                ErrorKind::NotFound,
                "branch-gone",
                format!("run {}'s branch {} is gone", record.run, sealed.branch),
            )
        })?;
    let worktree = PathBuf::from(&sealed.worktree);
    let in_worktree = if worktree.exists() {
        // The administration is put back as dispatch wrote it before git runs there.
        let identity = crate::core::scope::RunIdentity {
            run: sealed.run.clone(),
            task: sealed.task.clone(),
            role: sealed.role.clone(),
            scope: sealed.scope.clone(),
        };
        let tree = crate::git::worktree::RunTree::restore(repo.common_dir(), &worktree, &identity)
            .map_err(|e| {
                CrewError::check(
                    "worktree-tampered",
                    format!(
                        "run {}'s worktree administration cannot be restored: {e:#}",
                        record.run
                    ),
                )
                .hinted("remove the run's worktree; verify then checks the commit out afresh")
            })?;
        let dirty = tree.is_dirty().map_err(|e| {
            CrewError::check(
                "worktree-tampered",
                format!("git cannot read run {}'s worktree: {e:#}", record.run),
            )
            .hinted("remove the run's worktree; verify then checks the commit out afresh")
        })?;
        if dirty {
            return Err(CrewError::new(
                ErrorKind::Refused,
                "worktree-dirty",
                format!(
                    "run {}'s worktree {} has uncommitted changes: what would be verified is not the commit",
                    record.run,
                    worktree.display()
                ),
            )
            .hinted("commit them to the run's branch or discard them, then verify again"));
        }
        tree.head(repo) == Some(tip)
    } else {
        false
    };
    let dir = store.run_dir(&record.run);
    let transcript = record
        .transcript
        .clone()
        .map_or_else(|| dir.join("verify.log"), PathBuf::from);
    let deadline = Instant::now() + Duration::from_secs(record.budget_s.max(60));
    let verifier_dir = crate::core::layout::verifier_again(&dir);
    let fence = crate::run::fence::base_for(&record, &dir).map_err(CrewError::internal)?;
    // What the verify command starts comes back to this process and goes when it ends;
    // Ctrl-C stops it (and removes a throwaway checkout) before this exits.
    crate::sys::process::become_subreaper();
    let verdict = if in_worktree {
        let common = repo.common_dir().to_path_buf();
        let fence = fence
            .map(|base| crate::run::fence::for_checkout(&common, &worktree, &verifier_dir, base))
            .transpose()
            .map_err(CrewError::internal)?;
        verify::run(
            &record.run,
            &command,
            &worktree,
            &verifier_dir,
            &transcript,
            deadline,
            fence.as_ref(),
        )
    } else {
        verify::in_throwaway(
            &record.run,
            ctx.workdir()?,
            &dir.join(crate::core::layout::VERIFY_CHECKOUT),
            tip,
            &command,
            &verifier_dir,
            &transcript,
            deadline,
            fence,
        )
    }
    .map_err(CrewError::from_run)?;
    let passed = match &verdict {
        Verified::Done(result) => {
            record.verify_command = Some(command.clone());
            record.verify = Some(result.clone());
            record.verified_tip = Some(tip.to_string());
            let was = record.outcome;
            if matches!(was, Some(Outcome::Pass) | Some(Outcome::Fail)) {
                let outcome = if result.passed {
                    Outcome::Pass
                } else {
                    Outcome::Fail
                };
                record.outcome = Some(outcome);
                record.phase = outcome.final_phase();
            }
            record.decision = Some(format!(
                "verify run again by git crew verify: {} (reward {})",
                if result.passed { "passed" } else { "failed" },
                result.reward
            ));
            record.discrepancies = record.find_discrepancies();
            // The new verdict (and a verify command the lead gave) is sealed first.
            let mut resealed = sealed.clone();
            resealed.verify_command = record.verify_command.clone();
            crate::git::seal::write(repo, &resealed.with_verdict(&record))
                .map_err(CrewError::internal)?;
            store.update_record(&record).map_err(CrewError::internal)?;
            result.passed
        }
        Verified::Timeout => false,
    };
    let timed_out = matches!(verdict, Verified::Timeout);
    let human = if timed_out {
        format!("verify of run {} timed out", record.run)
    } else {
        format!(
            "verify of run {} {} (reward {}); the run is {} (outcome {})",
            record.run,
            if passed { "passed" } else { "failed" },
            record.verify.as_ref().map_or(0.0, |v| v.reward),
            record.phase.as_str(),
            record
                .outcome
                .and_then(|o| serde_json::to_value(o).ok())
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_else(|| "none".into())
        )
    };
    let mut report = Report::new(
        json!({
            "run": record.run,
            "verify": if timed_out { serde_json::Value::Null } else { json!(record.verify) },
            "timed_out": timed_out,
            "phase": record.phase,
            "outcome": record.outcome,
        }),
        human,
    );
    if !passed {
        let problem = record.verify.as_ref().and_then(|v| v.problem.clone());
        report.status = super::ui::Status::Failed(
            CrewError::check(
                if timed_out {
                    "verify-timed-out"
                } else {
                    "verify-failed"
                },
                match problem {
                    Some(problem) => format!("verify of run {} failed: {problem}", record.run),
                    None if timed_out => format!("verify of run {} timed out", record.run),
                    None => format!("verify of run {} failed", record.run),
                },
            )
            .hinted("`git crew transcript RUN` shows what the verify printed"),
        );
    }
    Ok(report)
}
