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
    fetch_refs(repo_dir, remote, &[&spec], false)
        .with_context(|| format!("cannot fetch the notes of {remote}"))
}

/// Fetches `specs` (forced globs, `+<src>*:<dst>*`) from `remote` quietly, with no tags
/// and no `FETCH_HEAD`; `prune`: what the remote no longer has under a spec's
/// destination goes here too.
///
/// The fetch runs in a scratch repository that shares this one's object store and
/// config, holding only the refs under the specs' destinations, and what it fetched is
/// then set here: git checks a fetch's connectivity against every ref it has, and a live
/// fenced run's branch names commits that are still in the run's quarantine, not in
/// the store, so a fetch here would fail on them ("bad object") while any run has
/// committed.
pub fn fetch_refs(repo_dir: &Path, remote: &str, specs: &[&str], prune: bool) -> Result<()> {
    let repo = super::repo::open(repo_dir)?;
    let common = repo.common_dir().to_path_buf();
    let objects = common.join("objects");
    let prefixes: Vec<&str> = specs
        .iter()
        .filter_map(|s| s.split_once(':'))
        .map(|(_, dst)| dst.trim_end_matches('*'))
        .collect();
    let within = |name: &str| prefixes.iter().any(|p| name.starts_with(p));
    let scratch = tempfile::Builder::new()
        .prefix("crew-fetch-")
        .tempdir()
        .context("cannot make a scratch repository to fetch into")?;
    let scratch_dir = scratch.path().to_string_lossy().into_owned();
    GitRunner::new(repo_dir).output(&["init", "--quiet", "--bare", &scratch_dir])?;
    let in_scratch = || {
        GitRunner::new(scratch.path())
            .with_env("GIT_DIR", &scratch_dir)
            .with_env("GIT_OBJECT_DIRECTORY", &objects.to_string_lossy())
    };
    // What is here already: the fetch negotiates from it, and prunes it.
    let mut here = std::collections::BTreeMap::new();
    for prefix in &prefixes {
        for (name, id) in super::refs::under(&repo, prefix)? {
            if let Some(id) = id {
                here.insert(name, id.to_string());
            }
        }
    }
    let seed: String = here
        .iter()
        .map(|(name, id)| format!("create {name} {id}\n"))
        .collect();
    update_refs(&in_scratch(), &seed)?;
    let include = format!("include.path={}", common.join("config").display());
    let mut args = vec!["fetch", "--quiet", "--no-tags", "--no-write-fetch-head"];
    if prune {
        args.push("--prune");
    }
    args.push(remote);
    args.extend(specs);
    in_scratch().with_config(&include).output(&args)?;
    let fetched: std::collections::BTreeMap<String, String> = in_scratch()
        .output(&["for-each-ref", "--format=%(objectname) %(refname)"])?
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(_, name)| within(name))
        .map(|(id, name)| (name.to_string(), id.to_string()))
        .collect();
    let mut moves = String::new();
    for (name, id) in &fetched {
        if here.get(name) != Some(id) {
            moves.push_str(&format!("update {name} {id}\n"));
        }
    }
    for name in here.keys().filter(|n| prune && !fetched.contains_key(*n)) {
        moves.push_str(&format!("delete {name}\n"));
    }
    update_refs(&GitRunner::new(repo_dir), &moves)
}

/// Runs `git update-ref --stdin` with `commands`, when there are any.
fn update_refs(runner: &GitRunner, commands: &str) -> Result<()> {
    if commands.is_empty() {
        return Ok(());
    }
    let mut file = tempfile::tempfile().context("cannot write the ref updates")?;
    std::io::Write::write_all(&mut file, commands.as_bytes())
        .context("cannot write the ref updates")?;
    std::io::Seek::rewind(&mut file).context("cannot write the ref updates")?;
    runner.output_with_stdin(&["update-ref", "--stdin"], file)?;
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
    // Only what the remote changed since the histories parted is looked at: a note it
    // left as it was is ours already. With no common history, every note of theirs.
    let base = before.and_then(|local_tip| {
        repo.merge_base(local_tip, remote)
            .ok()
            .flatten()
            .map(|id| id.detach())
    });
    let theirs = notes::changed(repo, base, remote)?;
    let mut unioned = 0;
    let (_, after) = notes::edit_merging(
        repo,
        local,
        &format!("notes: merge {tracking} by line union"),
        Some(remote),
        |current| {
            let (edits, joined) = merge_edits(current, &theirs)?;
            unioned = joined;
            Ok(edits)
        },
    )?;
    out.after = Some(after.to_string());
    out.unioned = unioned;
    out.merge = "merged";
    out.ahead = true;
    Ok(out)
}

/// What merging the remote's changed notes into `current` sets, and how many notes were
/// joined line by line: a note we do not have, or have as the base had it, becomes
/// theirs (its blob, unread); one both sides changed becomes the line union of both, as
/// git's `cat_sort_uniq` strategy makes it.
fn merge_edits(
    current: &mut notes::Notes<'_>,
    theirs: &[notes::Changed],
) -> Result<(Vec<(gix::ObjectId, notes::Note)>, usize)> {
    let mut unioned = 0;
    let mut edits = Vec::new();
    for change in theirs {
        match current.blob(change.object)? {
            Some(mine) if mine == change.blob => {}
            Some(mine) if Some(mine) != change.base => {
                unioned += 1;
                let text = notes::union_lines(&current.text(mine)?, &current.text(change.blob)?);
                edits.push((change.object, notes::Note::Text(text)));
            }
            _ => edits.push((change.object, notes::Note::Blob(change.blob))),
        }
    }
    Ok((edits, unioned))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::test_git as git;

    fn key(repo: &gix::Repository, i: usize) -> gix::ObjectId {
        notes::key_blob(repo, &format!("crew-task:t{i}")).unwrap()
    }

    fn set(repo: &gix::Repository, reference: &str, notes: &[(usize, &str)]) {
        notes::edit(repo, reference, "test", |current| {
            let mut edits = Vec::new();
            for (i, line) in notes {
                let object = key(repo, *i);
                let mut text = current.get(object)?.unwrap_or_default();
                text.push_str(line);
                text.push('\n');
                edits.push((object, text));
            }
            Ok(edits)
        })
        .unwrap();
    }

    /// Every note of a notes ref, each as its sorted set of lines.
    fn lines(repo: &gix::Repository, reference: &str) -> Vec<(gix::ObjectId, Vec<String>)> {
        let mut all: Vec<(gix::ObjectId, Vec<String>)> = notes::all(repo, reference)
            .unwrap()
            .into_iter()
            .map(|(object, text)| {
                let mut lines: Vec<String> = text.lines().map(String::from).collect();
                lines.sort();
                lines.dedup();
                (object, lines)
            })
            .collect();
        all.sort();
        all
    }

    /// A merge that looks only at the notes the remote changed since the common base gives
    /// the same notes as the union of every note of theirs, also when the remote's notes
    /// tree fanned out meanwhile; and it looks at no other note.
    #[test]
    fn a_run_branch_naming_an_object_still_in_quarantine_does_not_stop_a_fetch() {
        let tmp = tempfile::tempdir().unwrap();
        let (remote, here) = (tmp.path().join("remote"), tmp.path().join("here"));
        git(
            tmp.path(),
            &["init", "-q", "-b", "main", remote.to_str().unwrap()],
        );
        git(&remote, &["commit", "-q", "--allow-empty", "-m", "one"]);
        git(
            tmp.path(),
            &[
                "clone",
                "-q",
                remote.to_str().unwrap(),
                here.to_str().unwrap(),
            ],
        );
        git(&remote, &["commit", "-q", "--allow-empty", "-m", "two"]);
        // A run's branch names a commit the store does not hold (yet).
        let missing = "1234567890123456789012345678901234567890";
        std::fs::create_dir_all(here.join(".git/refs/heads/crew/t")).unwrap();
        std::fs::write(
            here.join(".git/refs/heads/crew/t/run"),
            format!("{missing}\n"),
        )
        .unwrap();
        let spec = "+refs/heads/main:refs/remotes/origin/main";
        fetch_refs(&here, "origin", &[spec], false).unwrap();
        assert_eq!(
            git(&here, &["rev-parse", "origin/main"]),
            git(&remote, &["rev-parse", "main"])
        );
    }

    #[test]
    fn merging_only_the_notes_changed_since_the_base_gives_the_full_union() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        git(dir, &["init", "-q", "-b", "main"]);
        let repo = gix::open(dir).unwrap();
        let base: Vec<(usize, String)> = (0..250).map(|i| (i, format!("base {i}"))).collect();
        let base: Vec<(usize, &str)> = base.iter().map(|(i, l)| (*i, l.as_str())).collect();
        set(&repo, "refs/notes/ours", &base);
        let base_tip = notes::tip(&repo, "refs/notes/ours").unwrap().unwrap();
        git(
            dir,
            &["update-ref", "refs/notes/theirs", &base_tip.to_string()],
        );
        // Ours: three notes grow. Theirs: two of the same and one other grow, and 300 new
        // notes arrive (the tree fans out).
        set(
            &repo,
            "refs/notes/ours",
            &[(1, "ours 1"), (2, "ours 2"), (3, "ours 3")],
        );
        let mut theirs: Vec<(usize, String)> = vec![
            (2, "theirs 2".into()),
            (3, "theirs 3".into()),
            (4, "theirs 4".into()),
        ];
        theirs.extend((1000..1300).map(|i| (i, format!("new {i}"))));
        let theirs: Vec<(usize, &str)> = theirs.iter().map(|(i, l)| (*i, l.as_str())).collect();
        set(&repo, "refs/notes/theirs", &theirs);
        let remote = notes::tip(&repo, "refs/notes/theirs").unwrap().unwrap();
        let ours_tip = notes::tip(&repo, "refs/notes/ours").unwrap().unwrap();

        let changed = notes::changed(&repo, Some(base_tip), remote).unwrap();
        assert_eq!(changed.len(), 303, "only what the remote changed");
        assert_eq!(
            changed.iter().filter(|c| c.base.is_some()).count(),
            3,
            "{changed:?}"
        );
        assert_eq!(notes::changed(&repo, None, remote).unwrap().len(), 550);

        // The full union, on a copy of ours.
        git(
            dir,
            &["update-ref", "refs/notes/full", &ours_tip.to_string()],
        );
        let all = notes::changed(&repo, None, remote).unwrap();
        notes::edit_merging(&repo, "refs/notes/full", "full", Some(remote), |current| {
            Ok(merge_edits(current, &all)?.0)
        })
        .unwrap();

        let merged = merge_into(&repo, "refs/notes/ours", "refs/notes/theirs").unwrap();
        assert_eq!(merged.merge, "merged");
        assert_eq!(merged.unioned, 2, "notes 2 and 3 changed on both sides");
        let ours = lines(&repo, "refs/notes/ours");
        assert_eq!(ours.len(), 550);
        assert_eq!(ours, lines(&repo, "refs/notes/full"));
        let two = &ours.iter().find(|(o, _)| *o == key(&repo, 2)).unwrap().1;
        assert_eq!(two, &["base 2", "ours 2", "theirs 2"]);
        // The merged history holds theirs: the next merge is a no-op.
        let again = merge_into(&repo, "refs/notes/ours", "refs/notes/theirs").unwrap();
        assert_eq!(again.merge, "up-to-date");
    }
}
