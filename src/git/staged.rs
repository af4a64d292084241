//! Staged paths: the index against HEAD's tree, in-process.
//!
//! This runs in the pre-commit hook on every commit, so it does what git does and gix's
//! `tree_index_status` does not: it trusts the index's cache-tree extension and skips
//! every directory whose cached tree id still equals HEAD's subtree, only descending where
//! something was staged. Without a cache tree it walks everything and is merely correct.

use std::ops::Range;

use super::error::{Context, Result};
use gix::ObjectId;
use gix::bstr::ByteSlice;
use gix::index::entry::{Flags, Stage};
use gix::index::extension::Tree as CacheTree;

use crate::core::scope::{Change, ChangeKind};

/// Every path whose staged state differs from HEAD: additions, modifications, deletions
/// (a rename shows as both), mode changes (executable bit, symlinks, gitlinks) and
/// unmerged entries. Paths are in index order, repository-relative.
pub fn staged_changes(repo: &gix::Repository) -> Result<Vec<Change>> {
    let path = repo.index_path();
    let index = match gix::index::File::at(
        &path,
        repo.object_hash(),
        // The hook reads the index git has just written; re-hashing megabytes on every
        // commit buys nothing here.
        true,
        // One thread: spawning a pool costs more than it saves on an index this size.
        gix::index::decode::Options {
            thread_limit: Some(1),
            ..Default::default()
        },
    ) {
        Ok(index) => index,
        Err(_) if !path.exists() => {
            gix::index::File::from_state(gix::index::State::new(repo.object_hash()), path.clone())
        }
        Err(e) => {
            return Err(e).with_context(|| format!("cannot read the index at {}", path.display()));
        }
    };
    let head = head_tree(repo)?;
    let mut walk = Walk {
        repo,
        state: &index,
        out: Vec::new(),
    };
    let all = 0..index.entries().len();
    walk.dir(b"", head, all, index.tree())?;
    Ok(walk.out)
}

/// HEAD's tree, or `None` on an unborn branch.
fn head_tree(repo: &gix::Repository) -> Result<Option<ObjectId>> {
    let mut head = repo.head().context("cannot read HEAD")?;
    match head.peel_to_commit() {
        Ok(commit) => Ok(Some(
            commit
                .tree_id()
                .context("cannot read HEAD's tree")?
                .detach(),
        )),
        Err(_) if head.is_unborn() => Ok(None),
        Err(e) => Err(e).context("cannot resolve HEAD to a commit"),
    }
}

struct TreeItem {
    name: Vec<u8>,
    mode: u32,
    id: ObjectId,
    is_tree: bool,
}

enum Group {
    /// One path: its entries (several when unmerged).
    File(Range<usize>),
    /// Everything under a directory.
    Dir(Range<usize>),
}

struct Walk<'a> {
    repo: &'a gix::Repository,
    state: &'a gix::index::State,
    out: Vec<Change>,
}

impl Walk<'_> {
    fn path(&self, i: usize) -> &[u8] {
        self.state.entries()[i].path(self.state).as_bytes()
    }

    fn push(&mut self, path: &[u8], kind: ChangeKind) {
        let path = path.strip_suffix(b"/").unwrap_or(path);
        let mut change = Change::new(String::from_utf8_lossy(path), kind);
        change.refused = super::diff::checkout_refusal(path.into(), false);
        self.out.push(change);
    }

    fn tree_items(&self, id: ObjectId) -> Result<Vec<TreeItem>> {
        let tree = self
            .repo
            .find_tree(id)
            .with_context(|| format!("cannot read tree {id}"))?;
        let decoded = tree
            .decode()
            .with_context(|| format!("cannot decode tree {id}"))?;
        let mut items: Vec<TreeItem> = decoded
            .entries
            .iter()
            .map(|e| TreeItem {
                name: e.filename.to_vec(),
                // Old trees may carry non-canonical modes (100664); git compares canonical ones.
                mode: u32::from(e.mode.normalized().value()),
                id: e.oid.to_owned(),
                is_tree: e.mode.is_tree(),
            })
            .collect();
        items.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(items)
    }

    /// Compares one directory: HEAD's subtree `head` with the index entries `range`, all of
    /// which start with `prefix` (empty, or ending in `/`).
    fn dir(
        &mut self,
        prefix: &[u8],
        head: Option<ObjectId>,
        range: Range<usize>,
        cache: Option<&CacheTree>,
    ) -> Result<()> {
        if let (Some(head), Some(cache)) = (head, cache)
            && cache.num_entries == u32::try_from(range.len()).ok()
            && cache.id == head
        {
            return Ok(());
        }
        let groups = self.groups(prefix, range);
        // Cache-tree children by name, for lookups while merging (a directory may have
        // hundreds of subdirectories).
        let mut children: Vec<&CacheTree> =
            cache.map_or_else(Vec::new, |c| c.children.iter().collect());
        children.sort_by(|a, b| a.name.cmp(&b.name));
        let items = match head {
            Some(id) => self.tree_items(id)?,
            None => Vec::new(),
        };
        let mut item_iter = items.into_iter().peekable();
        let mut group_iter = groups.into_iter().peekable();
        loop {
            let order = match (item_iter.peek(), group_iter.peek()) {
                (None, None) => break,
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (Some(item), Some((name, _))) => item.name.as_slice().cmp(name),
            };
            match order {
                std::cmp::Ordering::Less => {
                    let item = item_iter.next().expect("peeked");
                    self.deleted(prefix, &item)?;
                }
                std::cmp::Ordering::Greater => {
                    let (_, group) = group_iter.next().expect("peeked");
                    self.added(group);
                }
                std::cmp::Ordering::Equal => {
                    let item = item_iter.next().expect("peeked");
                    let (name, group) = group_iter.next().expect("peeked");
                    let child = children
                        .binary_search_by(|c| c.name.as_slice().cmp(&name))
                        .ok()
                        .map(|i| children[i]);
                    self.both(prefix, &name, item, group, child)?;
                }
            }
        }
        Ok(())
    }

    /// Splits the entries of a directory by their first path component, sorted by name.
    fn groups(&self, prefix: &[u8], range: Range<usize>) -> Vec<(Vec<u8>, Group)> {
        let mut groups = Vec::new();
        let mut i = range.start;
        while i < range.end {
            let path = self.path(i);
            let rel = &path[prefix.len()..];
            match rel.find_byte(b'/') {
                Some(slash) => {
                    let name = rel[..slash].to_vec();
                    let dir = &path[..prefix.len() + slash + 1];
                    // Entries are sorted, so a directory's entries are contiguous: find
                    // its end by binary search instead of comparing every entry.
                    let j = i
                        + 1
                        + self.state.entries()[i + 1..range.end]
                            .partition_point(|e| e.path(self.state).starts_with(dir));
                    groups.push((name, Group::Dir(i..j)));
                    i = j;
                }
                None => {
                    let mut j = i + 1;
                    while j < range.end && self.path(j) == path {
                        j += 1;
                    }
                    groups.push((rel.to_vec(), Group::File(i..j)));
                    i = j;
                }
            }
        }
        groups.sort_by(|a, b| a.0.cmp(&b.0));
        groups
    }

    fn counts(&self, i: usize) -> bool {
        !self.state.entries()[i].flags.contains(Flags::INTENT_TO_ADD)
    }

    fn added(&mut self, group: Group) {
        let range = match group {
            Group::File(r) => r.start..r.start + 1,
            Group::Dir(r) => r,
        };
        for i in range {
            if self.counts(i) {
                let path = self.path(i).to_vec();
                self.push(&path, ChangeKind::Added);
            }
        }
    }

    fn deleted(&mut self, prefix: &[u8], item: &TreeItem) -> Result<()> {
        let path = [prefix, &item.name].concat();
        if !item.is_tree {
            self.push(&path, ChangeKind::Deleted);
            return Ok(());
        }
        let dir_prefix = [path.as_slice(), b"/"].concat();
        for child in self.tree_items(item.id)? {
            self.deleted(&dir_prefix, &child)?;
        }
        Ok(())
    }

    fn both(
        &mut self,
        prefix: &[u8],
        name: &[u8],
        item: TreeItem,
        group: Group,
        child_cache: Option<&CacheTree>,
    ) -> Result<()> {
        match group {
            Group::File(range) => {
                let entry = &self.state.entries()[range.start];
                let path = [prefix, name].concat();
                if range.len() > 1 || entry.stage() != Stage::Unconflicted {
                    self.push(&path, ChangeKind::Unmerged);
                } else if !self.counts(range.start) {
                    // An intent-to-add entry records no content to commit.
                    self.deleted(prefix, &item)?;
                } else if item.is_tree {
                    self.deleted(prefix, &item)?;
                    self.push(&path, ChangeKind::Added);
                } else if entry.id != item.id {
                    self.push(&path, ChangeKind::Modified);
                } else if entry.mode.bits() != item.mode {
                    self.push(&path, ChangeKind::ModeChanged);
                }
            }
            Group::Dir(range) => {
                let first = &self.state.entries()[range.start];
                if range.len() == 1 && first.mode.is_sparse() {
                    // A sparse-index directory entry stands for the whole subtree.
                    if first.id != item.id {
                        let path = self.path(range.start).to_vec();
                        self.push(&path, ChangeKind::Modified);
                    }
                } else if item.is_tree {
                    let dir_prefix = [prefix, name, b"/"].concat();
                    self.dir(&dir_prefix, Some(item.id), range, child_cache)?;
                } else {
                    self.deleted(prefix, &item)?;
                    self.added(Group::Dir(range));
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::process::Command;

    use super::staged_changes;
    use crate::core::scope::ChangeKind;

    /// `program` with no user or system git config and a fixed identity.
    fn hermetic(program: &str) -> Command {
        let mut cmd = Command::new(program);
        cmd.env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@x")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@x");
        cmd
    }

    fn git(dir: &Path, args: &[&str]) {
        let ok = hermetic("git")
            .args(args)
            .current_dir(dir)
            .status()
            .unwrap()
            .success();
        assert!(ok, "git {args:?}");
    }

    /// The fixture repository (`git-fixtures/plain.sh`) in a temp folder.
    fn fixture() -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("repo");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("git-fixtures/plain.sh");
        let ok = hermetic("bash")
            .arg(script)
            .arg(&dir)
            .status()
            .unwrap()
            .success();
        assert!(ok);
        tmp
    }

    /// git's own answer: `git diff --cached --name-status --no-renames`.
    fn oracle(dir: &Path) -> Vec<(String, String)> {
        let out = Command::new("git")
            .args(["diff", "--cached", "--name-status", "--no-renames", "-z"])
            .current_dir(dir)
            .output()
            .unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let parts: Vec<&str> = text.split('\0').filter(|p| !p.is_empty()).collect();
        parts
            .chunks(2)
            .map(|c| (c[1].to_string(), c[0].to_string()))
            .collect()
    }

    fn ours(dir: &Path) -> Vec<(String, String)> {
        let repo = gix::open(dir).unwrap();
        let mut out: Vec<(String, String)> = staged_changes(&repo)
            .unwrap()
            .into_iter()
            .map(|c| {
                let kind = match c.kind {
                    ChangeKind::Added => "A",
                    ChangeKind::Deleted => "D",
                    ChangeKind::Modified | ChangeKind::ModeChanged => "M",
                    ChangeKind::Unmerged => "U",
                };
                (c.path, kind.to_string())
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn the_walk_finds_what_git_diff_cached_finds() {
        let tmp = fixture();
        let dir = tmp.path().join("repo");
        assert!(ours(&dir).is_empty(), "a clean index stages nothing");
        std::fs::write(dir.join("src/routes/a.rs"), "changed\n").unwrap();
        std::fs::write(dir.join("src/routes/new.rs"), "new\n").unwrap();
        std::fs::create_dir_all(dir.join("deep/er/still")).unwrap();
        std::fs::write(dir.join("deep/er/still/x.txt"), "x\n").unwrap();
        std::fs::remove_file(dir.join("docs/guide.md")).unwrap();
        git(&dir, &["add", "-A"]);
        git(&dir, &["update-index", "--chmod=+x", "README.md"]);
        let mut expected = oracle(&dir);
        expected.sort();
        assert_eq!(ours(&dir), expected);
        assert_eq!(expected.len(), 5, "{expected:?}");
    }

    #[test]
    fn a_cache_tree_that_still_matches_head_is_trusted_and_one_that_does_not_is_walked() {
        let tmp = fixture();
        let dir = tmp.path().join("repo");
        // A fresh cache tree for the whole index, then one staged change deep inside it:
        // git invalidates the cache tree along that path only.
        git(&dir, &["read-tree", "HEAD"]);
        std::fs::write(dir.join("src/lib.rs"), "pub mod other;\n").unwrap();
        git(&dir, &["add", "src/lib.rs"]);
        assert_eq!(
            ours(&dir),
            vec![("src/lib.rs".to_string(), "M".to_string())]
        );
        // A commit makes the cache tree whole again: nothing is staged.
        git(&dir, &["commit", "-q", "-m", "x"]);
        assert!(ours(&dir).is_empty());
    }

    #[test]
    fn an_unborn_branch_stages_every_entry_as_added() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        git(dir, &["init", "-q", "-b", "main"]);
        std::fs::write(dir.join("a"), "a\n").unwrap();
        std::fs::create_dir_all(dir.join("b")).unwrap();
        std::fs::write(dir.join("b/c"), "c\n").unwrap();
        git(dir, &["add", "-A"]);
        assert_eq!(
            ours(dir),
            vec![
                ("a".to_string(), "A".to_string()),
                ("b/c".to_string(), "A".to_string())
            ]
        );
    }
}
