//! Tree-to-tree diffs, in-process: the paths a range of commits changed, each marked when
//! git would refuse to check it out, and with where a symlink points.

use super::error::{Context, Result};
use gix::ObjectId;
use gix::bstr::{BStr, ByteSlice};

use crate::core::scope::{Change, ChangeKind};

/// Every path that differs between two commits' trees (no rename tracking, so both sides
/// of a rename appear; directories are left out, their files are listed).
pub fn changed_paths(repo: &gix::Repository, old: ObjectId, new: ObjectId) -> Result<Vec<Change>> {
    let tree_of = |id: ObjectId| -> Result<ObjectId> {
        Ok(repo
            .find_commit(id)
            .with_context(|| format!("cannot read commit {id}"))?
            .tree_id()
            .with_context(|| format!("cannot read the tree of {id}"))?
            .detach())
    };
    changed_between_trees(repo, tree_of(old)?, tree_of(new)?)
}

/// Every path that differs between two trees.
pub fn changed_between_trees(
    repo: &gix::Repository,
    old_tree: ObjectId,
    new_tree: ObjectId,
) -> Result<Vec<Change>> {
    let find = |id: ObjectId| -> Result<gix::Tree<'_>> {
        repo.find_tree(id)
            .with_context(|| format!("cannot read tree {id}"))
    };
    let (old_tree, new_tree) = (find(old_tree)?, find(new_tree)?);
    let changes = repo
        .diff_tree_to_tree(&old_tree, &new_tree, gix::diff::Options::default())
        .context("cannot diff trees")?;
    use gix::object::tree::diff::ChangeDetached as D;
    let mut out = Vec::new();
    for change in changes {
        let (mode, id) = change.entry_mode_and_id();
        if mode.is_tree() {
            continue;
        }
        let (path, kind) = match &change {
            D::Addition { location, .. } => (location.as_bstr(), ChangeKind::Added),
            D::Deletion { location, .. } => (location.as_bstr(), ChangeKind::Deleted),
            D::Modification {
                location,
                previous_id,
                id,
                ..
            } => (
                location.as_bstr(),
                if previous_id == id {
                    ChangeKind::ModeChanged
                } else {
                    ChangeKind::Modified
                },
            ),
            // Rename tracking is off, so this does not occur; were it on, both sides count.
            D::Rewrite {
                source_location, ..
            } => {
                out.push(Change::new(
                    source_location.to_string(),
                    ChangeKind::Deleted,
                ));
                (change.location(), ChangeKind::Added)
            }
        };
        let is_link = mode.is_link();
        let mut entry = Change::new(path.to_string(), kind);
        entry.refused = checkout_refusal(path, is_link);
        if is_link && kind != ChangeKind::Deleted && entry.refused.is_none() {
            let target = repo
                .find_object(id)
                .with_context(|| format!("cannot read the symlink {path}"))?
                .detach()
                .data;
            let dir: Vec<String> = path.to_str_lossy().split('/').map(String::from).collect();
            let dir = dir[..dir.len().saturating_sub(1)].to_vec();
            match resolve_link(&|p| link_at(&new_tree, p), dir, &target.to_str_lossy(), 0) {
                Some(resolved) => {
                    let resolved = resolved.join("/");
                    if !resolved.is_empty()
                        && checkout_refusal(resolved.as_bytes().as_bstr(), false).is_some()
                    {
                        entry.refused = Some(format!(
                            "a symlink to `{}`, into the repository's git dir",
                            target.as_bstr()
                        ));
                    } else {
                        entry.link_target = Some(if resolved.is_empty() {
                            ".".to_string()
                        } else {
                            resolved
                        });
                    }
                }
                None => {
                    entry.refused = Some(format!(
                        "a symlink to `{}`, outside the repository",
                        target.as_bstr()
                    ))
                }
            }
        }
        out.push(entry);
    }
    Ok(out)
}

/// Why git would refuse to check out a tree entry at `path` (a `.git` component in any
/// spelling git protects on NTFS or HFS+, `.`, `..`, an empty component), if it would.
/// Uses gix's validation, the rules `core.protectNTFS` and `core.protectHFS` enforce.
pub fn checkout_refusal(path: &BStr, is_link: bool) -> Option<String> {
    use gix::validate::path::component;
    let options = component::Options {
        protect_windows: false,
        protect_hfs: true,
        protect_ntfs: true,
    };
    let mut parts = path.split_str("/").peekable();
    while let Some(part) = parts.next() {
        let mode = (is_link && parts.peek().is_none()).then_some(component::Mode::Symlink);
        if let Err(err) = component(part.as_bstr(), mode, options) {
            return Some(format!(
                "git would refuse to check it out ({})",
                err.to_string().to_lowercase()
            ));
        }
    }
    None
}

/// The target of the symlink at `path` in `tree`, when there is one.
fn link_at(tree: &gix::Tree<'_>, path: &str) -> Option<String> {
    let entry = tree.lookup_entry_by_path(path).ok()??;
    if !entry.mode().is_link() {
        return None;
    }
    let blob = entry.object().ok()?;
    Some(blob.data.to_str_lossy().into_owned())
}

/// Where a symlink whose folder is `dir` (components from the repository root) and whose
/// target is `target` ends up once checked out: the components of the path it reaches,
/// following every symlink met on the way as the filesystem would (`link` gives a path's
/// symlink target in the tree). `None` when it leaves the repository (an absolute target,
/// `..` above the root, through another link too) or loops.
fn resolve_link(
    link: &dyn Fn(&str) -> Option<String>,
    dir: Vec<String>,
    target: &str,
    depth: u32,
) -> Option<Vec<String>> {
    if depth > 40 || target.starts_with('/') {
        return None;
    }
    let mut at = dir;
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                at.pop()?;
            }
            name => {
                at.push(name.to_string());
                if let Some(next) = link(&at.join("/")) {
                    at.pop();
                    at = resolve_link(link, at, &next, depth + 1)?;
                }
            }
        }
    }
    Some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_git_refuses_are_named() {
        for bad in [
            "src/x/.git/config",
            ".GIT/hooks/pre-commit",
            "a/.git./x",
            "a/git~1/x",
            "a/.g\u{200c}it/x",
            "a/../b",
            "./a",
        ] {
            assert!(checkout_refusal(bad.into(), false).is_some(), "{bad}");
        }
        for good in ["src/a.rs", ".github/x", "a/.gitignore", "a/git/x", "a:b"] {
            assert_eq!(checkout_refusal(good.into(), false), None, "{good}");
        }
        assert!(checkout_refusal(".gitmodules".into(), true).is_some());
    }

    #[test]
    fn symlink_targets_resolve_against_the_root_through_other_links() {
        let none = |_: &str| None;
        let resolve = |link: &dyn Fn(&str) -> Option<String>, path: &str, target: &str| {
            let mut dir: Vec<String> = path.split('/').map(String::from).collect();
            dir.pop();
            resolve_link(link, dir, target, 0).map(|p| p.join("/"))
        };
        assert_eq!(
            resolve(&none, "src/l", "../docs/x").as_deref(),
            Some("docs/x")
        );
        assert_eq!(resolve(&none, "l", "../x"), None);
        assert_eq!(resolve(&none, "src/l", "/etc/passwd"), None);
        assert_eq!(resolve(&none, "src/a/l", "b").as_deref(), Some("src/a/b"));
        assert_eq!(resolve(&none, "src/a/l", "../..").as_deref(), Some(""));
        // `src/routes/d -> ../..` makes `d/../../../etc/passwd` leave the repository.
        let tree = |p: &str| (p == "src/routes/d").then(|| "../..".to_string());
        assert_eq!(
            resolve(&tree, "src/routes/lnk", "d/../../../etc/passwd"),
            None
        );
        assert_eq!(
            resolve(&tree, "src/routes/lnk", "d/README.md").as_deref(),
            Some("README.md")
        );
        // A loop leaves nowhere.
        let looped = |p: &str| (p == "a").then(|| "a".to_string());
        assert_eq!(resolve(&looped, "l", "a"), None);
    }
}

/// How `git crew diff` shows a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    Patch,
    Stat,
    NameStatus,
}

/// `git diff from to` as git renders it (no renames: the audit sees paths, not moves).
/// On a terminal (`page`), git prints it through the user's pager with colour and
/// `None` is returned; else the text.
pub fn show(
    repo_dir: &std::path::Path,
    from: ObjectId,
    to: ObjectId,
    shown: Shown,
    page: bool,
) -> Result<Option<String>> {
    let mode = match shown {
        Shown::Patch => "--patch",
        Shown::Stat => "--stat",
        Shown::NameStatus => "--name-status",
    };
    let (from, to) = (from.to_string(), to.to_string());
    let args = ["diff", "--no-renames", mode, &from, &to];
    if page {
        let status = std::process::Command::new("git")
            .arg("-C")
            .arg(repo_dir)
            .args(args)
            .status()
            .context("cannot run git diff")?;
        if !status.success() {
            super::error::bail!("git diff failed");
        }
        return Ok(None);
    }
    Ok(Some(super::run::GitRunner::new(repo_dir).output(&args)?))
}
