//! `git crew hook pre-commit|post-merge|post-commit`: the entry points the installed hook
//! shims call.
//! A hook speaks to the person running git, on stderr (prefixed `crew:`), and only when it
//! has something to say: a refusal, a warning, a run a merge brought in. Success says
//! nothing. `GIT_CREW_FORMAT` does not change that; `--json` adds the data on stdout for
//! a caller that runs the entry point itself.

use clap::{Args, Subcommand};

use super::context::CommandContext;
use super::error::{CrewError, ErrorCode, Result};
use super::ui::{Format, Report};
use crate::core::scope;
use crate::ops::hook::{After, PreCommit};

/// Run a git-crew hook (called by the shims `git crew init` installs).
#[derive(Debug, Args)]
pub struct HookArgs {
    #[command(subcommand)]
    pub hook: Hook,
}

#[derive(Debug, Subcommand)]
pub enum Hook {
    /// Refuse staged paths outside the crew run's write scope.
    PreCommit,
    /// Audit crew runs that a plain `git merge` brought in; never blocks.
    PostMerge {
        /// Whether the merge was a squash (git passes 1 or 0).
        #[arg(default_value = "0")]
        squash: String,
    },
    /// Audit crew runs that a merge concluded by hand (`git commit` after resolving a
    /// conflict) brought in; never blocks.
    PostCommit,
}

pub fn run(ctx: &CommandContext, args: HookArgs) -> Result<Report> {
    match args.hook {
        Hook::PreCommit => {
            let report = pre_commit(ctx)?;
            // A refusal reaches the person on stderr whatever the format; under --json,
            // stdout carries it as data too.
            if ctx.format == Format::Json
                && let super::ui::Status::Failed(verdict) = &report.status
            {
                eprint!(
                    "{}",
                    crate::view::human::sanitize(&verdict.render_human(report.prefix))
                );
            }
            Ok(report)
        }
        Hook::PostMerge { .. } => Ok(observe(ctx, "post-merge", After::Merge)),
        Hook::PostCommit => Ok(observe(ctx, "post-commit", After::Commit)),
    }
}

fn observe(ctx: &CommandContext, hook: &str, after: After) -> Report {
    match crate::ops::hook::after(ctx, after, &mut |line| say(line)) {
        Ok(runs) => Report::of(
            &PostMerge {
                runs,
                warnings: Vec::new(),
            },
            "",
        ),
        Err(err) => {
            let message = format!("{hook} audit skipped: {err}");
            say(&format!("warning: {message}"));
            Report::of(
                &PostMerge {
                    runs: Vec::new(),
                    warnings: vec![message],
                },
                "",
            )
        }
    }
}

fn say(line: &str) {
    eprintln!("crew: {}", crate::view::human::sanitize(line));
}

fn pre_commit(ctx: &CommandContext) -> Result<Report> {
    let (identity, staged, violations) = match crate::ops::hook::pre_commit(ctx)? {
        PreCommit::Plain { warnings } => {
            // One write for them all: a thousand staged paths a run holds are a thousand
            // lines.
            eprint!("{}", crate::ops::hook::warning_lines(&warnings));
            return Ok(Report::of(
                &PlainCheckout {
                    run: None,
                    warnings,
                },
                "",
            ));
        }
        PreCommit::InRun {
            identity,
            staged,
            violations,
        } => (identity, staged, violations),
    };
    let output = PreCommitOutput {
        run: &identity.run,
        task: &identity.task,
        role: &identity.role,
        scope: &identity.scope,
        staged: staged.iter().map(String::as_str).collect(),
        violations: violations.iter().map(ToString::to_string).collect(),
    };
    let mut report = Report::of(&output, "");
    report.prefix = "crew: ";
    if violations.is_empty() {
        return Ok(report);
    }
    let read_only = matches!(violations[0], scope::Violation::ReadOnlyRole { .. });
    let mut verdict = CrewError::new(
        ErrorCode::ScopeViolation,
        format!(
            "commit refused in run {} (task {})",
            identity.run, identity.task
        ),
    )
    .with_details(violations.iter().map(ToString::to_string).collect());
    verdict = if read_only {
        verdict.hinted("write the findings to the manifest ($CREW_MANIFEST) instead of committing")
    } else {
        verdict.hinted("unstage those paths (git restore --staged <path>); they belong to another run or to the lead")
    };
    report.status = super::ui::Status::Failed(verdict);
    Ok(report)
}

#[derive(serde::Serialize)]
struct PreCommitOutput<'a> {
    run: &'a str,
    task: &'a str,
    role: &'a str,
    scope: &'a [String],
    staged: Vec<&'a str>,
    violations: Vec<String>,
}

/// Outside crew worktrees the commit always proceeds, with a warning for each staged path
/// an in-flight run holds in its exclusive scope.
#[derive(serde::Serialize)]
struct PostMerge {
    runs: Vec<crate::run::post_merge::Merged>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
}

/// What `hook pre-commit` prints outside crew worktrees: no run, and the staged paths
/// live runs hold.
#[derive(serde::Serialize)]
struct PlainCheckout {
    run: Option<String>,
    warnings: Vec<String>,
}
