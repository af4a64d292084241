//! A plain `git merge` of run branches, seen by the post-merge hook: every crew run
//! branch (`crew/<task>/<run>`) the merge brought in is audited against its sealed scope
//! and recorded as integrate records a landing (the run record note, the record marked
//! integrated, a ledger row) — or, when it breaks its fences, as a scope rejection.

use std::path::Path;

use serde::Serialize;

use crate::core::integrate::RunNote;
use crate::core::scope;
use crate::git::{self, repo::state_dir};

/// A run branch the merge brought in (SPEC: `hook post-merge`).
#[derive(Debug, Clone, Serialize)]
pub struct Merged {
    pub run: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    pub branch: String,
    /// Whether a seal of the run was here to audit it against.
    pub audited: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<String>>,
    pub violations: Vec<String>,
    /// The commits the run record note went on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub noted: Option<Vec<String>>,
}

/// After a plain `git merge`: every crew run branch (`crew/<task>/<run>`) the merge
/// brought in is audited against its run's scope; violations are reported, never fatal.
pub fn audit(
    repo: &crate::git::Repository,
    repo_dir: &Path,
    say: &mut dyn FnMut(&str),
) -> anyhow::Result<Vec<Merged>> {
    if std::env::var_os(super::integrate::INTEGRATING_VAR).is_some() {
        // `git crew integrate` is fast-forwarding the checkout: it records the run itself.
        return Ok(Vec::new());
    }
    if git::identity::read(repo)?.is_some() {
        // A merge inside a run's own worktree (a worker bringing the target in) is the
        // run's work, not an integration of it.
        return Ok(Vec::new());
    }
    let Some(head) = git::refs::head_id(repo) else {
        return Ok(Vec::new());
    };
    let current = git::refs::head_ref(repo)?;
    let Some(orig) = git::refs::tip(repo, "ORIG_HEAD")? else {
        return Ok(Vec::new());
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
            Some(sealed) if branch == sealed.branch => Some(sealed.identity()),
            _ => None,
        };
        let Some(identity) = identity else {
            say(&format!(
                "warning: merged {branch}, but no seal of run {run_id} is here to audit it against"
            ));
            runs.push(Merged {
                run: run_id,
                task: None,
                branch,
                audited: false,
                files: None,
                violations: Vec::new(),
                noted: None,
            });
            continue;
        };
        let base = git::refs::merge_base(repo, orig, tip).unwrap_or(orig);
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
            say(&format!(
                "merged run {} (task {}): {} paths, all inside its scope",
                identity.run,
                identity.task,
                changes.len()
            ));
        } else {
            say(&format!(
                "warning: merged run {} (task {}) breaks its fences:",
                identity.run, identity.task
            ));
            for v in &violations {
                say(&format!("  {v}"));
            }
        }
        // The run is recorded as integrate would record it: the run record on the merge
        // and on every worker commit, the record marked integrated, a ledger row.
        let store = crate::state::runs::RunStore::new(&state);
        let record = store.load(&identity.run).ok().flatten();
        let at = crate::core::stamp::format_seconds(crate::sys::clock::now());
        let by = "post-merge (a plain git merge)";
        let mut note = match &record {
            Some(record) => RunNote::of(record, &at, by),
            None => RunNote {
                run: identity.run.clone(),
                task: identity.task.clone(),
                role: crate::core::scope::Role::parse(&identity.role).unwrap_or_default(),
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
                usage: None,
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
            if violations.is_empty() {
                // Recorded as integrate records a landing.
                let into = git::refs::head_branch(repo).unwrap_or_else(|| "HEAD".to_string());
                let commit = head.to_string();
                super::integrate::record_landed(
                    repo_dir,
                    repo,
                    &store,
                    &mut record,
                    &super::integrate::Landing {
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
                super::integrate::record_scope_reject(repo_dir, repo, &record)?;
                git::merge::set_ref(
                    repo,
                    &super::integrate::attempts_ref(&record.run),
                    tip,
                    "crew: keep the run's commits",
                )?;
            }
        }
        runs.push(Merged {
            run: identity.run,
            task: Some(identity.task),
            branch,
            audited: true,
            files: Some(changes.into_iter().map(|c| c.path).collect()),
            violations,
            noted: Some(annotated.iter().map(ToString::to_string).collect()),
        });
    }
    Ok(runs)
}
