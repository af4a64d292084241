//! Integration commits, built away from anyone's checkout: a tree merge in-process (gix,
//! merge-ORT level), files written into the merged tree, the commit, and moving the
//! target branch — a compare-and-swap of the ref, or `git merge --ff-only` in the work
//! tree that has the branch checked out.

use std::path::{Path, PathBuf};

use super::error::{Context, Result, bail};
use gix::ObjectId;

use super::run::GitRunner;

/// What merging a run onto the target came to.
pub enum Merged {
    /// The merged tree, with the extra files written into it.
    Clean(ObjectId),
    /// Paths both sides changed in ways that do not merge.
    Conflicts(Vec<String>),
}

/// Merges `theirs` (the run's tip) onto `ours` (the target's tip) and writes `files`
/// (path, content) into the result. With `ancestor`, exactly the change from `ancestor` to
/// `theirs` is applied (a three-way tree merge on that base, as a cherry-pick of the
/// range); without, the commits' own merge base is used. Nothing outside the object
/// database is touched.
pub fn merge(
    repo: &gix::Repository,
    ours: ObjectId,
    theirs: ObjectId,
    ancestor: Option<ObjectId>,
    files: &[(&str, Vec<u8>)],
) -> Result<Merged> {
    let labels = gix::merge::blob::builtin_driver::text::Labels {
        ancestor: Some("base".into()),
        current: Some("target".into()),
        other: Some("run".into()),
    };
    let tree_options = repo
        .tree_merge_options()
        .context("cannot read the merge options")?;
    let mut outcome = match ancestor {
        Some(ancestor) => {
            let tree = |id: ObjectId| -> Result<ObjectId> {
                Ok(repo.find_commit(id)?.tree_id()?.detach())
            };
            repo.merge_trees(
                tree(ancestor)?,
                tree(ours)?,
                tree(theirs)?,
                labels,
                tree_options,
            )
            .context("cannot apply the run onto the target")?
        }
        None => {
            let options: gix::merge::commit::Options = tree_options.into();
            repo.merge_commits(
                ours,
                theirs,
                labels,
                options.with_allow_missing_merge_base(true),
            )
            .context("cannot merge the run onto the target")?
            .tree_merge
        }
    };
    if let Some(paths) = unresolved_paths(&outcome) {
        return Ok(Merged::Conflicts(paths));
    }
    for (path, content) in files {
        let blob = repo.write_blob(content)?.detach();
        outcome
            .tree
            .upsert(*path, gix::object::tree::EntryKind::Blob, blob)
            .with_context(|| format!("cannot write {path} into the merged tree"))?;
    }
    Ok(Merged::Clean(outcome.tree.write()?.detach()))
}

/// The paths of a merge's conflicts that git would leave unresolved (both sides of each,
/// sorted, once), or `None` when it has none.
pub(super) fn unresolved_paths(outcome: &gix::merge::tree::Outcome<'_>) -> Option<Vec<String>> {
    let how = gix::merge::tree::TreatAsUnresolved::git();
    if !outcome.has_unresolved_conflicts(how) {
        return None;
    }
    let mut paths: Vec<String> = outcome
        .conflicts
        .iter()
        .filter(|c| c.is_unresolved(how))
        .flat_map(|c| {
            [
                c.ours.location().to_string(),
                c.theirs.location().to_string(),
            ]
        })
        .collect();
    paths.sort();
    paths.dedup();
    Some(paths)
}

/// The tree of a commit.
pub fn tree_of(repo: &gix::Repository, commit: ObjectId) -> Result<ObjectId> {
    Ok(repo
        .find_commit(commit)
        .with_context(|| format!("cannot read commit {commit}"))?
        .tree_id()?
        .detach())
}

/// The content of `path` in `commit`'s tree, if it is a file there.
pub fn read_path(repo: &gix::Repository, commit: ObjectId, path: &str) -> Result<Option<Vec<u8>>> {
    let tree = repo.find_commit(commit)?.tree()?;
    let Some(entry) = tree.lookup_entry_by_path(path)? else {
        return Ok(None);
    };
    if !entry.mode().is_blob() {
        return Ok(None);
    }
    Ok(Some(entry.object()?.detach().data))
}

/// Writes a commit with the configured identity; returns its id.
pub fn commit(
    repo: &gix::Repository,
    message: &str,
    tree: ObjectId,
    parents: &[ObjectId],
) -> Result<ObjectId> {
    Ok(repo
        .new_commit(message, tree, parents.iter().copied())
        .context("cannot write the integration commit (is user.name/user.email set?)")?
        .id)
}

/// The commit a local branch points at.
pub fn branch_tip(repo: &gix::Repository, branch: &str) -> Result<Option<ObjectId>> {
    match repo.try_find_reference(format!("refs/heads/{branch}").as_str())? {
        Some(mut reference) => Ok(Some(reference.peel_to_commit()?.id)),
        None => Ok(None),
    }
}

/// Moves `refs/heads/<branch>` from `old` to `new`, only if it still points at `old`.
pub fn advance(
    repo: &gix::Repository,
    branch: &str,
    old: ObjectId,
    new: ObjectId,
    message: &str,
) -> Result<()> {
    use gix::refs::transaction::PreviousValue;
    repo.reference(
        format!("refs/heads/{branch}").as_str(),
        new,
        PreviousValue::MustExistAndMatch(gix::refs::Target::Object(old)),
        message,
    )
    .with_context(|| format!("{branch} moved while it was being integrated into"))?;
    Ok(())
}

/// Sets a ref (such as `refs/crew/attempts/<run>`) to `id`, whatever it held.
pub fn set_ref(repo: &gix::Repository, name: &str, id: ObjectId, message: &str) -> Result<()> {
    use gix::refs::transaction::PreviousValue;
    repo.reference(name, id, PreviousValue::Any, message)
        .with_context(|| format!("cannot set {name}"))?;
    Ok(())
}

/// Deletes a local branch (its commits stay reachable from elsewhere).
pub fn delete_branch(repo: &gix::Repository, branch: &str) -> Result<()> {
    if let Some(reference) = repo.try_find_reference(format!("refs/heads/{branch}").as_str())? {
        reference
            .delete()
            .with_context(|| format!("cannot delete branch {branch}"))?;
    }
    Ok(())
}

/// The work tree that has `branch` checked out, if any: the main one, or a linked one the
/// lead made. Read from the administration in-process, never through `git worktree
/// list`, which believes each entry's `gitdir` — and git-crew's own entries (a run's
/// worktree, named by its run id; a throwaway checkout) are a worker's to write: they
/// never count, so integrate never takes one for the lead's checkout and runs git there.
pub fn checked_out_in(repo: &gix::Repository, branch: &str) -> Result<Option<PathBuf>> {
    Ok(Checkouts::read(repo).of(branch))
}

/// The lead's checkouts — the main work tree and the linked ones the lead made — each
/// with what its HEAD says, read once for every branch a caller asks about (see
/// [`checked_out_in`]).
pub struct Checkouts {
    /// (HEAD's content, trimmed; the work tree).
    trees: Vec<(String, PathBuf)>,
}

impl Checkouts {
    pub fn read(repo: &gix::Repository) -> Checkouts {
        let common = repo.common_dir();
        let head = |file: &Path| {
            std::fs::symlink_metadata(file)
                .is_ok_and(|m| m.is_file())
                .then(|| std::fs::read_to_string(file).ok())
                .flatten()
                .map(|h| h.trim().to_string())
        };
        let mut trees = Vec::new();
        // The main work tree: `repo`'s own when `repo` is the main worktree's repository,
        // else found by opening the common dir.
        let main_workdir = || match repo.git_dir() == common {
            true => repo.workdir().map(Path::to_path_buf),
            false => gix::open(common)
                .ok()
                .and_then(|r| r.workdir().map(Path::to_path_buf)),
        };
        if let Some(main) = head(&common.join("HEAD")).filter(|h| h.starts_with("ref: "))
            && let Some(path) = main_workdir()
        {
            trees.push((main, path));
        }
        let Ok(entries) = std::fs::read_dir(common.join("worktrees")) else {
            return Checkouts { trees };
        };
        let crew = common.join("crew");
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if crate::core::record::is_run_id(&name) {
                continue;
            }
            let admin = entry.path();
            let gitdir = std::fs::read_to_string(admin.join("gitdir")).unwrap_or_default();
            let path = Path::new(gitdir.trim()).parent().map(Path::to_path_buf);
            // A throwaway's name, for a checkout under git-crew's folder (a lead's own
            // worktree may well be called `merged`).
            let throwaway = crate::core::layout::is_throwaway_name(&name)
                && path.as_ref().is_none_or(|p| p.starts_with(&crew));
            if throwaway {
                continue;
            }
            if let (Some(head), Some(path)) = (head(&admin.join("HEAD")), path) {
                trees.push((head, path));
            }
        }
        Checkouts { trees }
    }

    /// The work tree that has `branch` checked out, if any.
    pub fn of(&self, branch: &str) -> Option<PathBuf> {
        let wanted = format!("ref: refs/heads/{branch}");
        self.trees
            .iter()
            .find(|(head, _)| *head == wanted)
            .map(|(_, path)| path.clone())
    }
}

/// Whether a work tree whose HEAD is at `head` has changes to tracked files, staged or
/// not (untracked files do not stop a fast-forward that does not touch them): seen
/// in-process where that is certain (`worktree::tracked_at_rest`), else asked of git.
pub fn has_tracked_changes(
    repo: &gix::Repository,
    worktree: &Path,
    head: ObjectId,
) -> Result<bool> {
    if super::worktree::tracked_at_rest(repo, worktree, head) {
        return Ok(false);
    }
    let status =
        GitRunner::new(worktree).output(&["status", "--porcelain", "--untracked-files=no"])?;
    Ok(!status.trim().is_empty())
}

/// Fast-forwards the checked-out branch of `worktree` from `from` (its HEAD) to `commit`
/// (its hooks run, with `env` set).
///
/// git checks every path before it writes one, but a filter (git-lfs's smudge of an
/// object it cannot find) can fail half-way through the checkout: the branch stays where
/// it was, and the files it wrote are taken back — those of the paths the fast-forward
/// changes that were clean (or absent) before and are not now. A path that was not clean
/// before is never touched: git refused for it, before writing anything.
///
/// `seen_clean`: the caller saw the work tree without changes to tracked files just
/// before (nothing ran since). Then what was not clean before can only be an untracked
/// file where the fast-forward adds one: where the paths it adds are all absent, that is
/// nothing, and git is not asked; the paths are listed (by git) only if it fails.
pub fn fast_forward(
    repo: &gix::Repository,
    worktree: &Path,
    (from, commit): (ObjectId, ObjectId),
    seen_clean: bool,
    env: (&str, &str),
) -> Result<()> {
    let git = GitRunner::new(worktree).with_env("GIT_LITERAL_PATHSPECS", "1");
    let dirty_before = match seen_clean && adds_only_absent_paths(repo, worktree, from, commit) {
        true => Vec::new(),
        false => dirty(&git, &changed_paths(&git, commit)?)?,
    };
    let mut runner = GitRunner::new(worktree).with_env(env.0, env.1);
    // The only hook git would run is git-crew's post-merge shim, which leaves this
    // fast-forward alone: no process for it.
    if env.0 == super::hooks_dir::INTEGRATING_VAR
        && super::hooks_dir::only_crew_post_merge(repo, worktree)
    {
        runner = runner.with_config("core.hooksPath=/dev/null");
    }
    let out = runner.raw(&["merge", "--ff-only", "--quiet", &commit.to_string()])?;
    if !out.status.success() {
        let mut undone = String::new();
        // HEAD stayed where it was: the paths are those it was to change.
        let taken_back = changed_paths(&git, commit)
            .and_then(|changed| take_back(worktree, &changed, &dirty_before));
        if let Err(e) = taken_back {
            undone = format!(
                " (and what it wrote could not all be taken back: {})",
                crate::fault::chain(&e)
            );
        }
        bail!(
            "git merge --ff-only refused: {}{undone}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Whether every path the change from `from` to `commit` adds is absent from `worktree`
/// (nothing there, not even a link): read in-process; `false` when unsure.
fn adds_only_absent_paths(
    repo: &gix::Repository,
    worktree: &Path,
    from: ObjectId,
    commit: ObjectId,
) -> bool {
    let (Ok(old), Ok(new)) = (tree_of(repo, from), tree_of(repo, commit)) else {
        return false;
    };
    let Ok(changes) = super::diff::changed_between_trees(repo, old, new) else {
        return false;
    };
    changes
        .iter()
        .filter(|c| c.kind == crate::core::scope::ChangeKind::Added)
        .all(|c| {
            matches!(std::fs::symlink_metadata(worktree.join(&c.path)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound)
        })
}

/// The paths between HEAD and `commit`, each with whether HEAD has it.
fn changed_paths(git: &GitRunner, commit: ObjectId) -> Result<Vec<(String, bool)>> {
    let out = git.output(&[
        "diff",
        "--name-status",
        "-z",
        "--no-renames",
        "HEAD",
        &commit.to_string(),
    ])?;
    let mut parts = out.split('\0').filter(|p| !p.is_empty());
    let mut paths = Vec::new();
    while let (Some(status), Some(path)) = (parts.next(), parts.next()) {
        paths.push((path.to_string(), status != "A"));
    }
    Ok(paths)
}

/// Which of `paths` differ from HEAD in the work tree (or exist untracked).
fn dirty(git: &GitRunner, paths: &[(String, bool)]) -> Result<Vec<String>> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let mut args = vec!["status", "--porcelain", "-z", "--untracked-files=all", "--"];
    args.extend(paths.iter().map(|(p, _)| p.as_str()));
    Ok(super::worktree::porcelain_paths(&git.output(&args)?))
}

/// Takes back what a failed fast-forward wrote (see [`fast_forward`]).
fn take_back(worktree: &Path, paths: &[(String, bool)], dirty_before: &[String]) -> Result<()> {
    let git = GitRunner::new(worktree).with_env("GIT_LITERAL_PATHSPECS", "1");
    let now = dirty(&git, paths)?;
    let mut restore = Vec::new();
    for (path, in_head) in paths {
        if !now.contains(path) || dirty_before.contains(path) {
            continue;
        }
        if *in_head {
            restore.push(path.as_str());
        } else {
            let full = worktree.join(path);
            crate::sys::fs::remove_entry(&full)?;
            // Folders the checkout made for it, now empty.
            let mut dir = full.parent();
            while let Some(d) = dir.filter(|d| *d != worktree) {
                if std::fs::remove_dir(d).is_err() {
                    break;
                }
                dir = d.parent();
            }
        }
    }
    if !restore.is_empty() {
        let mut args = vec!["checkout", "HEAD", "--"];
        args.extend(restore);
        git.output(&args)?;
    }
    Ok(())
}

/// Whether `ancestor` is reachable from `tip` (or is it).
pub fn is_ancestor(repo: &gix::Repository, ancestor: ObjectId, tip: ObjectId) -> bool {
    ancestor == tip
        || repo
            .merge_base(ancestor, tip)
            .ok()
            .flatten()
            .is_some_and(|b| b.detach() == ancestor)
}

/// The parents of a commit, first parent first.
pub fn parents(repo: &gix::Repository, commit: ObjectId) -> Result<Vec<ObjectId>> {
    Ok(repo
        .find_commit(commit)
        .with_context(|| format!("cannot read commit {commit}"))?
        .parent_ids()
        .map(|id| id.detach())
        .collect())
}

/// The commit on `target`'s first-parent line that brought `tip` in: the oldest one
/// that contains it (a merge, or `tip` itself when it was fast-forwarded onto the line).
/// `None` when `target` does not contain `tip`. Containment only grows along the line,
/// so the boundary is found by bisection, not by asking every commit.
pub fn landing(
    repo: &gix::Repository,
    target: ObjectId,
    tip: ObjectId,
) -> Result<Option<ObjectId>> {
    if !is_ancestor(repo, tip, target) {
        return Ok(None);
    }
    let mut line = vec![target];
    let mut at = target;
    while at != tip {
        match parents(repo, at)?.first() {
            Some(parent) => {
                at = *parent;
                line.push(at);
            }
            None => break,
        }
    }
    // line[0] contains `tip`; find the last index that does.
    let (mut lo, mut hi) = (0, line.len());
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if is_ancestor(repo, tip, line[mid]) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(Some(line[lo]))
}
