//! Exchanging the notes refs with a remote (SPEC §4): fetch the remote's
//! `refs/notes/crew*` into `refs/notes/remotes/<remote>/...` (never onto the local notes),
//! merge them into the local notes by line union in-process (a compare-and-swap, so a run
//! finishing meanwhile keeps its row), and push without force, again when rejected.

use std::path::Path;

use super::error::{Context, Result};

use super::merge::is_ancestor;
use super::notes;
use super::run::GitRunner;

/// What happened to one notes ref.
#[derive(Debug, Clone, serde::Serialize)]
pub struct RefSync {
    #[serde(rename = "ref")]
    pub name: String,
    pub before: Option<String>,
    pub after: Option<String>,
    pub remote: Option<String>,
    /// `up-to-date`, `created`, `fast-forward`, `merged`, or `local-only`.
    pub merge: &'static str,
    /// Notes both sides had, in different versions, joined line by line.
    pub unioned: usize,
    /// The local notes have commits the remote's do not: they need pushing.
    #[serde(skip)]
    pub ahead: bool,
}

/// The remote-tracking notes ref for `local` (`refs/notes/crew` →
/// `refs/notes/remotes/<remote>/crew`).
pub fn tracking_ref(remote: &str, local: &str) -> String {
    let leaf = local.strip_prefix("refs/notes/").unwrap_or(local);
    format!("refs/notes/remotes/{remote}/{leaf}")
}

/// Fetches the remote's notes refs into the remote-tracking namespace.
pub fn fetch(repo_dir: &Path, remote: &str) -> Result<()> {
    let spec = format!("+refs/notes/crew*:refs/notes/remotes/{remote}/crew*");
    GitRunner::new(repo_dir)
        .output(&[
            "fetch",
            "--quiet",
            "--no-tags",
            "--no-write-fetch-head",
            remote,
            &spec,
        ])
        .with_context(|| format!("cannot fetch the notes of {remote}"))?;
    Ok(())
}

/// A notes ref fetched from a remote that names something other than a commit: the
/// remote's notes are broken, not git-crew.
#[derive(Debug, thiserror::Error)]
#[error("{reference} (fetched from the remote) names {kind}, not a notes commit")]
pub struct NotNotes {
    pub reference: String,
    pub kind: String,
}

/// Why the fetched notes could not be merged: the remote's are broken, or something
/// failed underneath.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error(transparent)]
    NotNotes(#[from] NotNotes),
    #[error(transparent)]
    Failed(#[from] super::error::Error),
}

/// Merges the fetched `tracking` notes into the local `local` notes ref.
pub fn merge_into(
    repo: &gix::Repository,
    local: &str,
    tracking: &str,
) -> Result<RefSync, MergeError> {
    let before = notes::tip(repo, local)?;
    let remote = notes::tip(repo, tracking).map_err(|e| NotNotes {
        reference: tracking.to_string(),
        kind: format!("something else ({})", crate::fault::chain(&e)),
    })?;
    if let Some(id) = remote {
        let kind = repo.find_header(id).map(|h| h.kind());
        if !matches!(kind, Ok(gix::object::Kind::Commit)) {
            return Err(NotNotes {
                reference: tracking.to_string(),
                kind: kind.map_or("a missing object".to_string(), |k| format!("a {k}")),
            }
            .into());
        }
    }
    let mut out = RefSync {
        name: local.to_string(),
        before: before.map(|id| id.to_string()),
        after: before.map(|id| id.to_string()),
        remote: remote.map(|id| id.to_string()),
        merge: "up-to-date",
        unioned: 0,
        ahead: false,
    };
    let Some(remote) = remote else {
        out.ahead = before.is_some();
        out.merge = if out.ahead {
            "local-only"
        } else {
            "up-to-date"
        };
        return Ok(out);
    };
    if let Some(local_tip) = before
        && is_ancestor(repo, remote, local_tip)
    {
        out.ahead = local_tip != remote;
        return Ok(out);
    }
    if before.is_none() && notes::create(repo, local, remote)? {
        out.after = out.remote.clone();
        out.merge = "created";
        return Ok(out);
    }
    if let Some(local_tip) = before
        && is_ancestor(repo, local_tip, remote)
        && notes::fast_forward(repo, local, local_tip, remote)?
    {
        out.after = out.remote.clone();
        out.merge = "fast-forward";
        return Ok(out);
    }
    let theirs = notes::all_at(repo, remote)?;
    let mut unioned = 0;
    let (_, after) = notes::edit_merging(
        repo,
        local,
        &format!("notes: merge {tracking} by line union"),
        Some(remote),
        |current| {
            unioned = 0;
            let mut edits = Vec::new();
            for (object, text) in &theirs {
                match current.get(*object)? {
                    None => edits.push((*object, text.clone())),
                    Some(mine) if mine == *text => {}
                    Some(mine) => {
                        unioned += 1;
                        edits.push((*object, notes::union_lines(&mine, text)));
                    }
                }
            }
            Ok(edits)
        },
    )?;
    out.after = Some(after.to_string());
    out.unioned = unioned;
    out.merge = "merged";
    out.ahead = true;
    Ok(out)
}

/// Pushes the local notes refs without force; `false` when the remote refused (it moved
/// on: fetch and merge again).
pub fn push(repo_dir: &Path, remote: &str, refs: &[String]) -> Result<bool> {
    if refs.is_empty() {
        return Ok(true);
    }
    let specs: Vec<String> = refs.iter().map(|r| format!("{r}:{r}")).collect();
    let mut args = vec!["push", "--quiet", "--porcelain", remote];
    args.extend(specs.iter().map(String::as_str));
    let out = GitRunner::new(repo_dir).raw(&args)?;
    if out.status.success() {
        return Ok(true);
    }
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Refused because the remote moved on — or lost a race for the ref's lock with
    // another push: fetch, merge and push again.
    if text.contains("[rejected]")
        || text.contains("non-fast-forward")
        || text.contains("fetch first")
        || text.contains("cannot lock ref")
        || text.contains("failed to update ref")
        || text.contains("failed to lock")
    {
        return Ok(false);
    }
    super::error::bail!("git push to {remote} failed: {}", text.trim())
}

/// The remotes this repository has.
pub fn remotes(repo: &gix::Repository) -> Vec<String> {
    repo.remote_names()
        .iter()
        .map(|name| name.to_string())
        .collect()
}
