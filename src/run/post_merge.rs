//! Run branches merged by hand, seen by the post-merge hook (a plain `git merge`), by the
//! post-commit hook (a merge whose conflicts the lead resolved and concluded with `git
//! commit` or `git merge --continue`, which run no post-merge) and by `git crew
//! integrate` (a run already in its target): every crew run branch (`crew/<task>/<run>`)
//! the merge brought in is audited against its sealed scope — every path that differs
//! between the target's old tip and the merge — and recorded as integrate records a
//! landing (the run record note, the record marked integrated, a ledger row), or, when
//! it breaks its fences, as a scope rejection. A run already recorded as integrated is
//! left as it stands.

use crate::run::error::Result;
use std::path::Path;

use serde::Serialize;

use crate::core::integrate::RunNote;
use crate::core::scope;
use crate::git::{self, repo::state_dir};

pub use crate::git::hooks_dir::INTEGRATING_VAR;

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
    /// The commit the run was already recorded as integrated by: nothing was changed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub integrated_before: Option<String>,
}

/// After a plain `git merge`: every crew run branch the merge brought in (`ORIG_HEAD..HEAD`)
/// is audited and recorded; violations are reported, never fatal.
pub fn audit(
    repo: &crate::git::Repository,
    repo_dir: &Path,
    say: &mut dyn FnMut(&str),
) -> Result<Vec<Merged>> {
    if leave_alone(repo)? {
        return Ok(Vec::new());
    }
    let (Some(head), Some(orig)) = (git::refs::head_id(repo), git::refs::tip(repo, "ORIG_HEAD")?)
    else {
        return Ok(Vec::new());
    };
    brought_in(
        repo,
        repo_dir,
        orig,
        head,
        "post-merge (a plain git merge)",
        say,
    )
}

/// After `git commit`: when the commit is a merge (a conflicted `git merge` concluded by
/// hand), every crew run branch it brought in over its first parent is audited and
/// recorded as a plain merge is. Any other commit is left alone at once.
pub fn audit_commit(
    repo: &crate::git::Repository,
    repo_dir: &Path,
    say: &mut dyn FnMut(&str),
) -> Result<Vec<Merged>> {
    let Some(head) = git::refs::head_id(repo) else {
        return Ok(Vec::new());
    };
    let parents = git::merge::parents(repo, head)?;
    if parents.len() < 2 || leave_alone(repo)? {
        return Ok(Vec::new());
    }
    brought_in(
        repo,
        repo_dir,
        parents[0],
        head,
        "post-commit (a merge concluded by hand)",
        say,
    )
}

/// Whether the hooks leave this merge to someone else: `git crew integrate` records the
/// run it is fast-forwarding, and a merge inside a run's own worktree (a worker bringing
/// the target in) is the run's work, not an integration of it.
fn leave_alone(repo: &crate::git::Repository) -> Result<bool> {
    Ok(std::env::var_os(INTEGRATING_VAR).is_some() || git::identity::read(repo)?.is_some())
}

/// Every crew run branch `new` brought in over `old` (its tip reachable from `new`, not
/// from `old`), audited and recorded.
fn brought_in(
    repo: &crate::git::Repository,
    repo_dir: &Path,
    old: git::ObjectId,
    new: git::ObjectId,
    by: &str,
    say: &mut dyn FnMut(&str),
) -> Result<Vec<Merged>> {
    let current = git::refs::head_ref(repo)?;
    let into = git::refs::head_branch(repo).unwrap_or_else(|| "HEAD".to_string());
    let mut runs = Vec::new();
    for (name, tip) in git::refs::under(repo, "refs/heads/crew/")? {
        if current.as_deref() == Some(name.as_str()) {
            // The branch merged into, not a branch brought in.
            continue;
        }
        let Some(tip) = tip else {
            continue;
        };
        if !git::merge::is_ancestor(repo, tip, new) || git::merge::is_ancestor(repo, tip, old) {
            continue;
        }
        let branch = name
            .strip_prefix("refs/heads/")
            .unwrap_or(&name)
            .to_string();
        let hand = Hand {
            branch: &branch,
            tip,
            old,
            new,
            into: &into,
            by,
        };
        runs.push(land_by_hand(repo, repo_dir, &hand, say)?);
    }
    Ok(runs)
}

/// A run branch merged by hand: its tip, the target's tip before the merge (`old`) and
/// the commit that brought it in (`new`, the merge, or the run's tip itself for a
/// fast-forward).
pub struct Hand<'a> {
    pub branch: &'a str,
    pub tip: git::ObjectId,
    pub old: git::ObjectId,
    pub new: git::ObjectId,
    /// The branch merged into.
    pub into: &'a str,
    /// Who recorded it, for the note and the record.
    pub by: &'a str,
}

/// Audits one run branch merged by hand against its sealed scope and records it: the run
/// record note on the merge and on every worker commit; then, for an ended run, the
/// landing (clean) or a scope rejection (the paths outside its scope named in the note).
pub fn land_by_hand(
    repo: &crate::git::Repository,
    repo_dir: &Path,
    hand: &Hand,
    say: &mut dyn FnMut(&str),
) -> Result<Merged> {
    let (branch, tip, old, new) = (hand.branch.to_string(), hand.tip, hand.old, hand.new);
    let run_id = branch.rsplit('/').next().unwrap_or_default().to_string();
    // The run's scope comes from its seal, never from its worktree's own config (which
    // the worker can rewrite).
    let identity = match git::seal::read(repo, &run_id).ok().flatten() {
        Some(sealed) if branch == sealed.branch => Some(sealed.identity()),
        _ => None,
    };
    let Some(identity) = identity else {
        say(&format!(
            "warning: merged {branch}, but no seal of run {run_id} is here to audit it against"
        ));
        return Ok(Merged {
            run: run_id,
            task: None,
            branch,
            audited: false,
            files: None,
            violations: Vec::new(),
            noted: None,
            integrated_before: None,
        });
    };
    let store = crate::state::runs::RunStore::new(&state_dir(repo));
    let record = store.load(&identity.run).ok().flatten();
    if let Some(done) = record.as_ref().and_then(|r| r.integration.as_ref()) {
        // Its record and notes stand: this merge brings in a run that landed before
        // (merging the target it landed on into another branch, say).
        if crate::git::refs::oid(&done.commit).ok() == Some(new) {
            say(&format!(
                "run {} (task {}) is recorded as integrated by this merge already",
                identity.run, identity.task
            ));
        } else {
            say(&format!(
                "run {} (task {}) was integrated into {} as {} before; its record stands",
                identity.run, identity.task, done.into, done.commit
            ));
        }
        return Ok(Merged {
            run: identity.run,
            task: Some(identity.task),
            branch,
            audited: false,
            files: None,
            violations: Vec::new(),
            noted: None,
            integrated_before: Some(done.commit.clone()),
        });
    }
    let base = git::refs::merge_base(repo, old, tip).unwrap_or(old);
    // What the merge brought is audited as merged: every path that differs between the
    // target's old tip and the merge, conflict resolutions included.
    let changes = git::diff::changed_paths(repo, old, new)?;
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
    // The run is recorded as integrate would record it: the run record on the merge and
    // on every worker commit, the record marked integrated, a ledger row.
    let at = crate::core::stamp::format_seconds(crate::sys::clock::now());
    let by = hand.by;
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
    // Merged without the verdict integrate would have asked for (a pass at this tip, or
    // a verify-less pass on its footer), as `--force-unverified` is recorded.
    note.forced_unverified = record.as_ref().is_some_and(|r| {
        !crate::core::integrate::verdict(r, &tip.to_string(), true).unwrap_or(false)
    });
    note.violations = violations.clone();
    let mut annotated = vec![new];
    annotated.extend(git::notes::commits_between(repo, &[base, old], tip)?);
    annotated.dedup();
    git::notes::set_many(repo, git::notes::CREW, &annotated, &note.to_line())?;
    if let Some(mut record) = record.filter(|r| r.phase.is_final()) {
        if violations.is_empty() {
            // Recorded as integrate records a landing.
            let commit = new.to_string();
            super::landing::record_landed(
                repo_dir,
                repo,
                &store,
                &mut record,
                &super::landing::Landed {
                    commit: &commit,
                    into: hand.into,
                    at: &at,
                    by,
                    squash: false,
                    forced_unverified: note.forced_unverified,
                    run_tip: tip,
                    merged_reward: None,
                },
            )?;
        } else {
            super::landing::record_scope_reject(repo_dir, repo, &record)?;
            git::merge::set_ref(
                repo,
                &git::run_range::attempts_ref(&record.run),
                tip,
                "crew: keep the run's commits",
            )?;
        }
    }
    Ok(Merged {
        run: identity.run,
        task: Some(identity.task),
        branch,
        audited: true,
        files: Some(changes.into_iter().map(|c| c.path).collect()),
        violations,
        noted: Some(annotated.iter().map(ToString::to_string).collect()),
        integrated_before: None,
    })
}
