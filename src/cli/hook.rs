//! `git crew hook pre-commit|post-merge|post-commit`: the entry points the installed hook
//! shims call.
//! A hook speaks to the person running git, on stderr (prefixed `crew:`), and only when it
//! has something to say: a refusal, a warning, a run a merge brought in. Success says
//! nothing. `GIT_CREW_FORMAT` does not change that; `--json` adds the data on stdout for
//! a caller that runs the entry point itself.

use clap::{Args, Subcommand};

use super::context::CommandContext;
use super::error::{CrewError, Result};
use super::ui::{Format, Report};
use crate::core::scope::{self, RunIdentity};
use crate::git::{self, repo::state_dir};
use crate::state::live;

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
        Hook::PostMerge { .. } => Ok(observe(ctx, "post-merge", crate::run::post_merge::audit)),
        Hook::PostCommit => Ok(observe(
            ctx,
            "post-commit",
            crate::run::post_merge::audit_commit,
        )),
    }
}

/// The signature of the audits the observing hooks run.
type Audit = fn(
    &crate::git::Repository,
    &std::path::Path,
    &mut dyn FnMut(&str),
) -> anyhow::Result<Vec<crate::run::post_merge::Merged>>;

/// Runs an observing hook's audit: what it finds is reported, and its own failure is a
/// warning, never an error (an observer never breaks the user's merge or commit).
fn observe(ctx: &CommandContext, hook: &str, audit: Audit) -> Report {
    let found = (|| -> anyhow::Result<Vec<crate::run::post_merge::Merged>> {
        let repo = ctx.repo()?;
        let repo_dir = ctx.workdir()?.to_path_buf();
        audit(repo, &repo_dir, &mut |line| say(line))
    })();
    match found {
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

/// Lines from a hook go to stderr, where git shows them, in any format.
fn say(line: &str) {
    eprintln!("crew: {}", crate::view::human::sanitize(line));
}

fn pre_commit(ctx: &CommandContext) -> Result<Report> {
    let repo = ctx.repo()?;
    let identity = git::identity::read(repo).map_err(|e| {
        CrewError::internal(format!("cannot read this worktree's crew identity: {e:#}"))
    })?;
    match identity {
        Some(identity) => crew_worktree(repo, identity),
        None => Ok(plain_checkout(repo)),
    }
}

/// Inside a crew worktree: every staged path must be inside the run's scope.
fn crew_worktree(repo: &crate::git::Repository, identity: RunIdentity) -> Result<Report> {
    let role_may_commit = scope::Role::parse(&identity.role).is_some_and(scope::Role::may_commit);
    let changes = if role_may_commit {
        git::staged::staged_changes(repo).map_err(CrewError::internal)?
    } else {
        Vec::new()
    };
    let violations = scope::check_commit(&identity, &changes);
    let output = PreCommit {
        run: &identity.run,
        task: &identity.task,
        role: &identity.role,
        scope: &identity.scope,
        staged: changes.iter().map(|c| c.path.as_str()).collect(),
        violations: violations.iter().map(ToString::to_string).collect(),
    };
    let mut report = Report::of(&output, "");
    report.prefix = "crew: ";
    if violations.is_empty() {
        return Ok(report);
    }
    let read_only = matches!(violations[0], scope::Violation::ReadOnlyRole { .. });
    let mut verdict = CrewError::check(
        "scope-violation",
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

/// What `hook pre-commit` prints inside a crew worktree.
#[derive(serde::Serialize)]
struct PreCommit<'a> {
    run: &'a str,
    task: &'a str,
    role: &'a str,
    scope: &'a [String],
    staged: Vec<&'a str>,
    violations: Vec<String>,
}

/// Outside crew worktrees the commit always proceeds, with a warning for each staged path
/// an in-flight run holds in its exclusive scope.
fn plain_checkout(repo: &crate::git::Repository) -> Report {
    let mut warnings = Vec::new();
    let runs = live::list(&state_dir(repo), &mut |path, err| {
        warnings.push(format!("unreadable live pointer {}: {err}", path.display()));
    });
    if !runs.is_empty() {
        match git::staged::staged_changes(repo) {
            Ok(changes) => {
                let holders: Vec<scope::Holder> = runs
                    .iter()
                    .map(|r| scope::Holder {
                        run: &r.run,
                        task: &r.task,
                        scope: &r.scope,
                    })
                    .collect();
                warnings.extend(scope::held_paths(&holders, &changes));
            }
            Err(err) => warnings.push(format!("cannot list the staged paths: {err:#}")),
        }
    }
    for warning in &warnings {
        say(&format!("warning: {warning}"));
    }
    Report::of(
        &PlainCheckout {
            run: None,
            warnings,
        },
        "",
    )
}

/// What `hook post-merge` and `hook post-commit` print: the run branches the merge
/// brought in.
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
