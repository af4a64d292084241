//! Tree-to-tree diffs, in-process: the paths a range of commits changed, each marked when
//! git would refuse to check it out, and with where a symlink points.

use anyhow::Context;
use gix::ObjectId;
use gix::bstr::{BStr, ByteSlice};

use crate::core::scope::{Change, ChangeKind, normalize_path};

/// Every path that differs between two commits' trees (no rename tracking, so both sides
/// of a rename appear; directories are left out, their files are listed).
pub fn changed_paths(
    repo: &gix::Repository,
    old: ObjectId,
    new: ObjectId,
) -> anyhow::Result<Vec<Change>> {
    let tree_of = |id: ObjectId| -> anyhow::Result<ObjectId> {
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
) -> anyhow::Result<Vec<Change>> {
    let find = |id: ObjectId| -> anyhow::Result<gix::Tree<'_>> {
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
            match link_target(path, target.as_bstr()) {
                Some(resolved) => entry.link_target = Some(resolved),
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
    let parts: Vec<&[u8]> = path.split_str("/").collect();
    let last = parts.len().saturating_sub(1);
    for (i, part) in parts.iter().enumerate() {
        let mode = (i == last && is_link).then_some(component::Mode::Symlink);
        if let Err(err) = component(part.as_bstr(), mode, options) {
            return Some(format!(
                "git would refuse to check it out ({})",
                err.to_string().to_lowercase()
            ));
        }
    }
    None
}

/// A symlink's target resolved against the repository root, or `None` when it is
/// absolute or climbs out of the repository.
fn link_target(path: &BStr, target: &BStr) -> Option<String> {
    let target = target.to_str().ok()?;
    if target.starts_with('/') {
        return None;
    }
    let dir = path.rsplit_once_str("/").map_or(&b""[..], |(dir, _)| dir);
    let joined = format!("{}/{target}", dir.to_str_lossy());
    normalize_path(&joined).ok()
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
    fn symlink_targets_resolve_against_the_root() {
        assert_eq!(
            link_target("src/l".into(), "../docs/x".into()).as_deref(),
            Some("docs/x")
        );
        assert_eq!(link_target("l".into(), "../x".into()), None);
        assert_eq!(link_target("src/l".into(), "/etc/passwd".into()), None);
        assert_eq!(
            link_target("src/a/l".into(), "b".into()).as_deref(),
            Some("src/a/b")
        );
    }
}
