//! `git crew hook pre-commit|post-merge`: the entry points the installed hook shims call.
//! Output is for the person running git (prefixed `crew:` on stderr) unless `--json`.

use clap::{Args, Subcommand};
use serde_json::json;

use super::context::CommandContext;
use super::error::{CrewError, Result};
use super::ui::{Format, Report};
use crate::core::integrate::RunNote;
use crate::core::scope::{self, Change, RunIdentity, Scope};
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
}

pub fn run(ctx: &CommandContext, args: HookArgs) -> Result<Report> {
    match args.hook {
        Hook::PreCommit => pre_commit(ctx),
        Hook::PostMerge { .. } => Ok(post_merge(ctx).unwrap_or_else(|err| {
            // An observer never breaks the user's merge.
            let message = format!("post-merge audit skipped: {err}");
            say(ctx, &format!("warning: {message}"));
            Report::new(json!({"runs": [], "warnings": [message]}), "")
        })),
    }
}

/// Human lines from a hook go to stderr, where git shows them.
fn say(ctx: &CommandContext, line: &str) {
    if ctx.format == Format::Human {
        eprintln!("crew: {line}");
    }
}

fn pre_commit(ctx: &CommandContext) -> Result<Report> {
    let repo = ctx.repo()?;
    let identity = git::identity::read(repo).map_err(|e| {
        CrewError::internal(format!("cannot read this worktree's crew identity: {e:#}"))
    })?;
    match identity {
        Some(identity) => crew_worktree(repo, identity),
        None => Ok(plain_checkout(ctx, repo)),
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
    let fields = json!({
        "run": identity.run,
        "task": identity.task,
        "role": identity.role,
        "scope": identity.scope,
        "staged": changes.iter().map(|c| &c.path).collect::<Vec<_>>(),
        "violations": violations.iter().map(ToString::to_string).collect::<Vec<_>>(),
    });
    let mut report = Report::new(fields, "");
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

/// Outside crew worktrees the commit always proceeds, with a warning for each staged path
/// an in-flight run holds in its exclusive scope.
fn plain_checkout(ctx: &CommandContext, repo: &crate::git::Repository) -> Report {
    let mut warnings = Vec::new();
    let runs = live::list(&state_dir(repo), &mut |path, err| {
        warnings.push(format!("unreadable live pointer {}: {err}", path.display()));
    });
    if !runs.is_empty() {
        match git::staged::staged_changes(repo) {
            Ok(changes) => warnings.extend(held_paths(&runs, &changes)),
            Err(err) => warnings.push(format!("cannot list the staged paths: {err:#}")),
        }
    }
    for warning in &warnings {
        say(ctx, &format!("warning: {warning}"));
    }
    Report::new(json!({"run": null, "warnings": warnings}), "")
}

/// One warning per staged path that a live run's scope holds.
fn held_paths(runs: &[live::LiveRun], changes: &[Change]) -> Vec<String> {
    let mut out = Vec::new();
    for run in runs {
        let Ok(scope) = Scope::new(&run.scope) else {
            continue;
        };
        for change in changes {
            if let Ok(path) = scope::normalize_path(&change.path)
                && scope.contains(&path)
            {
                out.push(format!(
                    "{} is held by in-flight run {} (task {}, scope {})",
                    change.path,
                    run.run,
                    run.task,
                    run.scope.join(", ")
                ));
            }
        }
    }
    out
}

/// After a plain `git merge`: every crew run branch (`crew/<task>/<run>`) the merge
/// brought in is audited against its run's scope; violations are reported, never fatal.
fn post_merge(ctx: &CommandContext) -> anyhow::Result<Report> {
    if std::env::var_os(crate::run::integrate::INTEGRATING_VAR).is_some() {
        // `git crew integrate` is fast-forwarding the checkout: it records the run itself.
        return Ok(Report::new(json!({"runs": []}), ""));
    }
    let repo = ctx.repo()?;
    if git::identity::read(repo)?.is_some() {
        // A merge inside a run's own worktree (a worker bringing the target in) is the
        // run's work, not an integration of it.
        return Ok(Report::new(json!({"runs": []}), ""));
    }
    let Some(head) = git::refs::head_id(repo) else {
        return Ok(Report::new(json!({"runs": []}), ""));
    };
    let current = git::refs::head_ref(repo)?;
    let Some(orig) = git::refs::tip(repo, "ORIG_HEAD")? else {
        return Ok(Report::new(json!({"runs": []}), ""));
    };
    let state = state_dir(repo);
    let mut runs = Vec::new();
    for (name, tip) in git::refs::under(repo, "refs/heads/crew/")? {
        if current.as_deref() == Some(name.as_str()) {
            // The branch merged into, not a branch brought in.
            continue;
        }
        let branch = name
            .strip_prefix("refs/heads/")
            .unwrap_or(&name)
            .to_string();
        let Some(tip) = tip else {
            continue;
        };
        let is_ancestor = |of| git::merge::is_ancestor(repo, tip, of);
        if !is_ancestor(head) || is_ancestor(orig) {
            continue;
        }
        let run_id = branch.rsplit('/').next().unwrap_or_default().to_string();
        // The run's scope comes from its seal, never from its worktree's own config
        // (which the worker can rewrite).
        let identity = match git::seal::read(repo, &run_id).ok().flatten() {
            Some(sealed) if branch == sealed.branch => Some(RunIdentity {
                run: sealed.run,
                task: sealed.task,
                role: sealed.role,
                scope: sealed.scope,
            }),
            _ => None,
        };
        let Some(identity) = identity else {
            say(
                ctx,
                &format!(
                    "warning: merged {branch}, but no seal of run {run_id} is here to audit it against"
                ),
            );
            runs.push(json!({"run": run_id, "branch": branch, "audited": false, "violations": []}));
            continue;
        };
        let base = repo
            .merge_base(orig, tip)
            .ok()
            .flatten()
            .map_or(orig, |b| b.detach());
        // What the merge brought is audited as merged: every path that differs between
        // the branch's old tip and its new one.
        let changes = git::diff::changed_paths(repo, orig, head)?;
        let violations: Vec<String> = if changes.is_empty() {
            Vec::new()
        } else {
            scope::check_commit(&identity, &changes)
                .iter()
                .map(ToString::to_string)
                .collect()
        };
        if violations.is_empty() {
            say(
                ctx,
                &format!(
                    "merged run {} (task {}): {} paths, all inside its scope",
                    identity.run,
                    identity.task,
                    changes.len()
                ),
            );
        } else {
            say(
                ctx,
                &format!(
                    "warning: merged run {} (task {}) breaks its fences:",
                    identity.run, identity.task
                ),
            );
            for v in &violations {
                say(ctx, &format!("  {v}"));
            }
        }
        // The run is recorded as integrate would record it: the run record on the merge
        // and on every worker commit, the record marked integrated, a ledger row.
        let store = crate::state::runs::RunStore::new(&state);
        let record = store.load(&identity.run).ok().flatten();
        let at = crate::sys::clock::rfc3339(crate::sys::clock::now_millis());
        let by = "post-merge (a plain git merge)";
        let mut note = match &record {
            Some(record) => RunNote::of(record, &at, by),
            None => RunNote {
                run: identity.run.clone(),
                task: identity.task.clone(),
                role: identity.role.clone(),
                backend: None,
                model: None,
                effort: None,
                tier: None,
                scope: identity.scope.clone(),
                base: base.to_string(),
                attempts: None,
                footer: None,
                verify: None,
                integrated_at: at.clone(),
                integrated_by: by.to_string(),
                gates: Vec::new(),
                fence: None,
                forced_unverified: false,
                violations: Vec::new(),
            },
        };
        note.forced_unverified = record
            .as_ref()
            .is_some_and(|r| !r.verify.as_ref().is_some_and(|v| v.passed));
        note.violations = violations.clone();
        let mut annotated = vec![head];
        annotated.extend(git::notes::commits_between(repo, &[base, orig], tip)?);
        annotated.dedup();
        git::notes::set_many(repo, git::notes::CREW, &annotated, &note.to_line())?;
        if let Some(mut record) = record.filter(|r| r.integration.is_none() && r.phase.is_final()) {
            let repo_dir = ctx.workdir()?.to_path_buf();
            if violations.is_empty() {
                // Recorded as integrate records a landing.
                let into = repo
                    .head_name()?
                    .map_or_else(|| "HEAD".to_string(), |n| n.shorten().to_string());
                let commit = head.to_string();
                crate::run::integrate::record_landed(
                    &repo_dir,
                    repo,
                    &store,
                    &mut record,
                    &crate::run::integrate::Landing {
                        commit: &commit,
                        into: &into,
                        at: &at,
                        by,
                        squash: false,
                        forced_unverified: note.forced_unverified,
                        run_tip: tip,
                        merged_reward: None,
                    },
                )?;
            } else {
                crate::run::integrate::record_scope_reject(&repo_dir, repo, &record)?;
                git::merge::set_ref(
                    repo,
                    &crate::run::integrate::attempts_ref(&record.run),
                    tip,
                    "crew: keep the run's commits",
                )?;
            }
        }
        runs.push(json!({
            "run": identity.run,
            "task": identity.task,
            "branch": branch,
            "audited": true,
            "files": changes.iter().map(|c| &c.path).collect::<Vec<_>>(),
            "violations": violations,
            "noted": annotated.iter().map(ToString::to_string).collect::<Vec<_>>(),
        }));
    }
    Ok(Report::new(json!({"runs": runs}), ""))
}
