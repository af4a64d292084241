//! Tree-to-tree diffs, in-process: the paths a range of commits changed.

use anyhow::Context;
use gix::ObjectId;

use crate::core::scope::{Change, ChangeKind};

/// Every path that differs between two commits' trees (no rename tracking, so both sides
/// of a rename appear; directories are left out, their files are listed).
pub fn changed_paths(
    repo: &gix::Repository,
    old: ObjectId,
    new: ObjectId,
) -> anyhow::Result<Vec<Change>> {
    let tree_of = |id: ObjectId| -> anyhow::Result<gix::Tree<'_>> {
        repo.find_commit(id)
            .with_context(|| format!("cannot read commit {id}"))?
            .tree()
            .with_context(|| format!("cannot read the tree of {id}"))
    };
    let (old_tree, new_tree) = (tree_of(old)?, tree_of(new)?);
    let changes = repo
        .diff_tree_to_tree(&old_tree, &new_tree, gix::diff::Options::default())
        .context("cannot diff trees")?;
    use gix::object::tree::diff::ChangeDetached as D;
    let mut out = Vec::new();
    for change in changes {
        let (mode, _) = change.entry_mode_and_id();
        if mode.is_tree() {
            continue;
        }
        let path = |p: &gix::bstr::BStr| p.to_string();
        match &change {
            D::Addition { location, .. } => out.push(Change {
                path: path(location.as_ref()),
                kind: ChangeKind::Added,
            }),
            D::Deletion { location, .. } => out.push(Change {
                path: path(location.as_ref()),
                kind: ChangeKind::Deleted,
            }),
            D::Modification {
                location,
                previous_id,
                id,
                ..
            } => out.push(Change {
                path: path(location.as_ref()),
                kind: if previous_id == id {
                    ChangeKind::ModeChanged
                } else {
                    ChangeKind::Modified
                },
            }),
            // Rename tracking is off, so this does not occur; were it on, both sides count.
            D::Rewrite {
                source_location,
                location,
                ..
            } => {
                out.push(Change {
                    path: path(source_location.as_ref()),
                    kind: ChangeKind::Deleted,
                });
                out.push(Change {
                    path: path(location.as_ref()),
                    kind: ChangeKind::Added,
                });
            }
        }
    }
    Ok(out)
}
