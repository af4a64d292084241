//! The hooks git runs: `pre-commit` (a run's commit held to its scope; a plain
//! checkout's commit warned of paths a live run holds), `post-merge` and `post-commit`
//! (a run brought in by plain git, recorded).

use crate::core::scope::{self, RunIdentity, Violation};
use crate::error::{CrewError, Result};
use crate::git::{self, repo::state_dir};
use crate::run::post_merge::Merged;
use crate::state::live;

use super::Context;

/// What pre-commit found.
pub enum PreCommit {
    /// A commit in a run's worktree: what is staged, and every path outside its scope
    /// (or any path at all, for a role that may not commit).
    InRun {
        identity: RunIdentity,
        staged: Vec<String>,
        violations: Vec<Violation>,
    },
    /// A commit in a checkout of the lead's: what to warn of (staged paths a live run
    /// holds, pointers that cannot be read).
    Plain { warnings: Vec<String> },
}

/// Checks the commit being made in the current worktree.
pub fn pre_commit(ctx: &Context) -> Result<PreCommit> {
    let repo = ctx.repo()?;
    let identity = git::identity::read(repo).map_err(|e| {
        CrewError::from(git::error::Error::within(
            "cannot read this worktree's crew identity",
            e,
        ))
    })?;
    let Some(identity) = identity else {
        let mut warnings = Vec::new();
        plain_checkout(repo, Warnings::Each(&mut warnings));
        return Ok(PreCommit::Plain { warnings });
    };
    let (changes, violations) = commit_in_run(repo, &identity).map_err(CrewError::from)?;
    Ok(PreCommit::InRun {
        staged: changes.into_iter().map(|c| c.path).collect(),
        identity,
        violations,
    })
}

/// The pre-commit hook's usual answers, for `git-crew-hook pre-commit` (a binary holding
/// only this code, which starts in a fraction of the time the whole command line takes):
/// a run's commit within its scope passes in silence; a commit in a checkout of the
/// lead's passes, with its warnings as `git crew hook pre-commit` prints them.
/// Returns the text for stderr (empty when there is nothing to say), or `None` when the
/// whole command must answer — a refusal, or anything that failed — and it then decides
/// everything again, as if this had not run.
pub fn pre_commit_quick() -> Option<String> {
    let cwd = std::env::current_dir().ok()?;
    let repo = git::repo::discover(&cwd).ok()?;
    let Some(identity) = git::identity::read(&repo).ok()? else {
        let mut text = String::new();
        plain_checkout(&repo, Warnings::Lines(&mut text));
        return Some(text);
    };
    let (_, violations) = commit_in_run(&repo, &identity).ok()?;
    violations.is_empty().then(String::new)
}

/// A commit in a run's worktree: what is staged (nothing is read for a role that may not
/// commit) and every path outside the run's scope.
fn commit_in_run(
    repo: &crate::git::Repository,
    identity: &RunIdentity,
) -> git::error::Result<(Vec<scope::Change>, Vec<Violation>)> {
    let role_may_commit = scope::Role::parse(&identity.role).is_some_and(scope::Role::may_commit);
    let changes = if role_may_commit {
        git::staged::staged_changes(repo)?
    } else {
        Vec::new()
    };
    let violations = scope::check_commit(identity, &changes);
    Ok((changes, violations))
}

/// The warnings of a plain checkout's commit as the hook prints them: one line each,
/// `crew: warning: ...`, made safe for a terminal.
pub fn warning_lines(warnings: &[String]) -> String {
    let mut text =
        String::with_capacity(warnings.iter().map(|w| WARNING.len() + w.len() + 1).sum());
    for warning in warnings {
        push_warning(&mut text, warning);
    }
    text
}

/// What begins each line of [`warning_lines`]; plain text, made safe as it is.
const WARNING: &str = "crew: warning: ";

/// One line of [`warning_lines`].
fn push_warning(text: &mut String, warning: &str) {
    text.push_str(WARNING);
    crate::core::text::sanitize_into(warning, text);
    text.push('\n');
}

/// Where the warnings of a commit in a checkout of the lead's go: each into a string of
/// its own (for the whole command, which reports them), or straight into the lines the
/// hook prints ([`warning_lines`]), with no string per warning.
enum Warnings<'a> {
    Each(&'a mut Vec<String>),
    Lines(&'a mut String),
}

impl Warnings<'_> {
    fn push(&mut self, warning: String) {
        match self {
            Warnings::Each(all) => all.push(warning),
            Warnings::Lines(text) => push_warning(text, &warning),
        }
    }
}

/// The warnings of a commit in a checkout of the lead's: the live pointers that cannot be
/// read, then the staged paths a live run holds.
fn plain_checkout(repo: &crate::git::Repository, mut warnings: Warnings<'_>) {
    let runs = live::list_kept(&state_dir(repo), &mut |path, err| {
        warnings.push(format!("unreadable live pointer {}: {err}", path.display()));
    });
    if runs.is_empty() {
        return;
    }
    let holders: Vec<scope::Holder> = runs
        .iter()
        .map(|r| scope::Holder {
            run: &r.run,
            task: &r.task,
            scope: &r.scope,
        })
        .collect();
    let region = scope::held_region(&holders);
    match git::staged::staged_changes_within(repo, region.as_deref()) {
        Ok(changes) => match &mut warnings {
            Warnings::Each(all) => all.extend(scope::held_paths(&holders, &changes)),
            Warnings::Lines(text) => scope::held_path_lines(&holders, &changes, WARNING, text),
        },
        Err(err) => warnings.push(format!(
            "cannot list the staged paths: {}",
            crate::fault::chain(&err)
        )),
    }
}

/// Which audit a hook after a merge or a commit runs.
#[derive(Debug, Clone, Copy)]
pub enum After {
    Merge,
    Commit,
}

/// Records the runs a merge (or a commit) brought in; `say` hears what the person
/// running git should read as it goes.
pub fn after(ctx: &Context, hook: After, say: &mut dyn FnMut(&str)) -> Result<Vec<Merged>> {
    // `git crew integrate` records the run it is fast-forwarding itself: nothing to open.
    if std::env::var_os(crate::run::post_merge::INTEGRATING_VAR).is_some() {
        return Ok(Vec::new());
    }
    let repo = ctx.repo()?;
    let repo_dir = ctx.workdir()?.to_path_buf();
    Ok(match hook {
        After::Merge => crate::run::post_merge::audit(repo, &repo_dir, say)?,
        After::Commit => crate::run::post_merge::audit_commit(repo, &repo_dir, say)?,
    })
}
