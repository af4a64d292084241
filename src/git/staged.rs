//! Staged paths: the index against HEAD's tree, in-process.
//!
//! This runs in the pre-commit hook on every commit, so it does what git does and gix's
//! `tree_index_status` does not: it trusts the index's cache-tree extension and skips
//! every directory whose cached tree id still equals HEAD's subtree, only descending where
//! something was staged. Without a cache tree it walks everything and is merely correct.
//!
//! The index is read in place (`index_map`): mapped, each entry read only where the walk
//! looks at it, so a commit that stages one file in a large repository reads the entries
//! of that file's directories and HEAD's trees along its path, not every entry's path and
//! stat data. An index of a form only gix reads (version 4, a split index) is decoded
//! whole by gix and walked alike.

use std::ops::Range;

use super::error::{Context, Result};
use super::index_map::{CacheNode, IndexMap, SPARSE_DIR_MODE};
use gix::ObjectId;
use gix::bstr::ByteSlice;
use gix::index::entry::Flags;
use gix::oid;

use crate::core::scope::{Change, ChangeKind};

/// Every path whose staged state differs from HEAD: additions, modifications, deletions
/// (a rename shows as both), mode changes (executable bit, symlinks, gitlinks) and
/// unmerged entries. Paths are in index order, repository-relative.
pub fn staged_changes(repo: &gix::Repository) -> Result<Vec<Change>> {
    if let Some(tree) = committed_tree(repo)
        && let Some(changes) = committed_changes(repo, tree)
    {
        return Ok(changes);
    }
    let path = repo.index_path();
    if let Some(index) = IndexMap::open(&path, repo.object_hash().len_in_bytes()) {
        let cache = index.cache_tree();
        return walk(repo, &index, cache.as_ref());
    }
    let index = read_with_gix(repo, &path)?;
    let cache = index.tree().map(cache_node);
    walk(repo, &*index, cache.as_ref())
}

/// The tree the index names as the one `git commit` is about to make, read from its end.
fn committed_tree(repo: &gix::Repository) -> Option<ObjectId> {
    super::index_map::committed_tree(&repo.index_path(), repo.object_hash().len_in_bytes())
}

/// Whether `path` is `base` or lies beneath it.
fn at_or_beneath(path: &[u8], base: &[u8]) -> bool {
    path.starts_with(base) && matches!(path.get(base.len()), None | Some(b'/'))
}

/// What `git commit` commits against HEAD when the index names the tree it commits: the
/// two trees compared, reading only the subtrees whose ids differ, in path order. `None`
/// when something cannot be read (a cache tree whose trees were never written, a broken
/// HEAD): the entries decide then, and say what is wrong.
fn committed_changes(repo: &gix::Repository, tree: ObjectId) -> Option<Vec<Change>> {
    let mut out = Vec::new();
    diff_trees(
        &Objects::new(repo),
        head_tree(repo).ok()?,
        Some(tree),
        b"",
        &mut out,
        Refusals::Found,
    )?;
    out.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    Some(out)
}

/// Whether a change found in the trees says why git would refuse to check it out: a run's
/// commit is judged by it; a warning in the lead's checkout names the path alone.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Refusals {
    Found,
    Skipped,
}

/// The paths staged in `region`, for the warnings of a commit in the lead's checkout: the
/// paths that are one of its folders or files, or lie beneath one (`None`: everywhere),
/// each with its kind of change (`refused` is left unset where the trees are compared).
/// When the index names the tree being committed, only the trees along the region's paths
/// are read, and beneath each of its folders only the subtrees whose ids differ; a commit
/// that stages a thousand files outside it reads none of theirs.
pub fn staged_changes_within(
    repo: &gix::Repository,
    region: Option<&[String]>,
) -> Result<Vec<Change>> {
    let Some(region) = region else {
        return staged_changes(repo);
    };
    let mut region: Vec<&[u8]> = region.iter().map(|p| p.as_bytes()).collect();
    // By components, so that what lies beneath a path follows it at once (`src`, `src/x`,
    // `src.y`; by bytes `src.y` would come between).
    region.sort_unstable_by(|a, b| a.split(|&c| c == b'/').cmp(b.split(|&c| c == b'/')));
    // A path beneath another of the region is already in it.
    region.dedup_by(|later, earlier| at_or_beneath(later, earlier));
    if let Some(tree) = committed_tree(repo)
        && let Some(head) = head_tree(repo).ok()
    {
        let mut out = Vec::new();
        if head == Some(tree)
            || within(
                &Objects::new(repo),
                b"",
                head,
                Some(tree),
                &region,
                &mut out,
            )
            .is_some()
        {
            out.sort_unstable_by(|a, b| a.path.cmp(&b.path));
            return Ok(out);
        }
    }
    Ok(staged_changes(repo)?
        .into_iter()
        .filter(|c| region.iter().any(|r| at_or_beneath(c.path.as_bytes(), r)))
        .collect())
}

/// The changes between trees `old` and `new` (the subtrees at `prefix`, empty or ending in
/// `/`) on the paths `wanted` names, relative to `prefix`; none empty, none beneath
/// another.
fn within(
    objects: &Objects<'_>,
    prefix: &[u8],
    old: Option<ObjectId>,
    new: Option<ObjectId>,
    wanted: &[&[u8]],
    out: &mut Vec<Change>,
) -> Option<()> {
    if old == new {
        return Some(());
    }
    let (old_data, new_data) = (tree_data(objects, old)?, tree_data(objects, new)?);
    let kind = objects.object_hash();
    let (old_tree, new_tree) = (
        gix::objs::TreeRef::from_bytes(&old_data, kind).ok()?,
        gix::objs::TreeRef::from_bytes(&new_data, kind).ok()?,
    );
    // A name is a folder's or a file's: looked up as each, in git's order of names.
    let entry = |tree: &gix::objs::TreeRef<'_>, name: &[u8]| {
        tree.bisect_entry(name.as_bstr(), true)
            .or_else(|| tree.bisect_entry(name.as_bstr(), false))
            .map(|e| (e.mode, e.oid.to_owned()))
    };
    // `wanted` is sorted by components: the paths under one name are together.
    let mut rest = wanted;
    while let Some(first) = rest.first() {
        let name = first.split(|&b| b == b'/').next().unwrap_or_default();
        let count = rest
            .iter()
            .take_while(|w| w.split(|&b| b == b'/').next() == Some(name))
            .count();
        let (group, after) = rest.split_at(count);
        rest = after;
        let (o, n) = (entry(&old_tree, name), entry(&new_tree, name));
        let path = [prefix, name].concat();
        if group.iter().any(|w| w.len() == name.len()) {
            entries_compared(objects, &path, o, n, out)?;
            continue;
        }
        let deeper: Vec<&[u8]> = group.iter().map(|w| &w[name.len() + 1..]).collect();
        let (old_sub, new_sub) = (subtree(o), subtree(n));
        if old_sub.is_some() || new_sub.is_some() {
            within(
                objects,
                &[&path[..], b"/"].concat(),
                old_sub,
                new_sub,
                &deeper,
                out,
            )?;
        }
    }
    Some(())
}

/// A tree entry's mode and id.
type Entry = (gix::objs::tree::EntryMode, ObjectId);

/// The id of the tree an entry is, if it is one.
fn subtree(entry: Option<Entry>) -> Option<ObjectId> {
    entry.filter(|(mode, _)| mode.is_tree()).map(|(_, id)| id)
}

/// Everything that changed at `path`: the entry itself and, for a tree, all beneath it.
fn entries_compared(
    objects: &Objects<'_>,
    path: &[u8],
    old: Option<Entry>,
    new: Option<Entry>,
    out: &mut Vec<Change>,
) -> Option<()> {
    let file = |e: Option<Entry>| e.filter(|(mode, _)| !mode.is_tree());
    let dir = [path, b"/"].concat();
    if subtree(old).is_some() || subtree(new).is_some() {
        diff_trees(
            objects,
            subtree(old),
            subtree(new),
            &dir,
            out,
            Refusals::Skipped,
        )?;
    }
    let kind = match (file(old), file(new)) {
        (None, None) => return Some(()),
        (Some(_), None) => ChangeKind::Deleted,
        (None, Some(_)) => ChangeKind::Added,
        (Some((old_mode, old_id)), Some((new_mode, new_id))) => {
            if old_id != new_id {
                ChangeKind::Modified
            } else if old_mode.normalized() != new_mode.normalized() {
                ChangeKind::ModeChanged
            } else {
                return Some(());
            }
        }
    };
    push_change(out, path.into(), kind, Refusals::Skipped);
    Some(())
}

/// A tree's data; an empty tree's for `None`.
fn tree_data(objects: &Objects<'_>, id: Option<ObjectId>) -> Option<Vec<u8>> {
    use gix::objs::FindExt;
    let mut buf = Vec::new();
    if let Some(id) = id {
        objects.find_tree_iter(&id, &mut buf).ok()?;
    }
    Some(buf)
}

/// The objects the tree comparisons read: a loose object from the repository's own
/// objects folder is read whole and inflated by one inflater reused from object to
/// object; anything else (a packed object, an alternate's, one that does not read) is
/// gix's to find, and to say what is wrong with it.
///
/// The trees `git commit` has just written are loose. gix maps each loose object it
/// reads and starts a new inflater for it; read this way, a commit whose hook compares
/// twenty trees is checked in about 0.15 ms (7%) less.
struct Objects<'r> {
    repo: &'r gix::Repository,
    /// The objects folder, open: each object is looked up from it, not from the root.
    dir: Option<rustix::fd::OwnedFd>,
    inflate: std::cell::RefCell<gix::zlib::Inflate>,
    compressed: std::cell::RefCell<Vec<u8>>,
}

impl<'r> Objects<'r> {
    fn new(repo: &'r gix::Repository) -> Self {
        Objects {
            repo,
            dir: rustix::fs::open(
                repo.objects.store_ref().path(),
                rustix::fs::OFlags::RDONLY
                    | rustix::fs::OFlags::DIRECTORY
                    | rustix::fs::OFlags::CLOEXEC,
                rustix::fs::Mode::empty(),
            )
            .ok(),
            inflate: Default::default(),
            compressed: Default::default(),
        }
    }

    fn object_hash(&self) -> gix::hash::Kind {
        self.repo.object_hash()
    }

    /// The loose object `id` into `out`, and its kind; `None` when there is none in the
    /// objects folder or it does not read.
    fn loose(&self, id: &oid, out: &mut Vec<u8>) -> Option<gix::objs::Kind> {
        use rustix::fs::{Mode, OFlags};
        use std::io::Read;
        // `ab/cdef...`, relative to the objects folder.
        let mut path = id.to_hex().to_string();
        path.insert(2, '/');
        let mut compressed = self.compressed.borrow_mut();
        compressed.clear();
        // A regular file only, read to the size it had when opened: what is not (a FIFO,
        // a device) is gix's to refuse, and opening one does not wait.
        let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
        let file = std::fs::File::from(
            rustix::fs::openat(self.dir.as_ref()?, path.as_str(), flags, Mode::empty()).ok()?,
        );
        let meta = file.metadata().ok()?;
        if !meta.is_file() {
            return None;
        }
        compressed.reserve(usize::try_from(meta.len()).ok()?);
        file.take(meta.len()).read_to_end(&mut compressed).ok()?;
        let mut inflate = self.inflate.borrow_mut();
        inflate.reset();
        let mut header = [0_u8; 64];
        let (status, used_in, written) = inflate.prefix(&compressed, &mut header).ok()?;
        if status == gix::zlib::Status::BufError {
            return None;
        }
        let (kind, size, header_len) = gix::objs::decode::loose_header(&header[..written]).ok()?;
        let size = usize::try_from(size).ok()?;
        // Deflate inflates at most about 1032 to 1: a header claiming more is not
        // believed (nor is room made for it).
        if size > compressed.len().saturating_mul(1032) {
            return None;
        }
        let body = written.checked_sub(header_len)?;
        let read = if status == gix::zlib::Status::StreamEnd {
            out.clear();
            out.extend_from_slice(&header[header_len..written]);
            body
        } else {
            inflate
                .rest(
                    &compressed[used_in..],
                    &header[..written],
                    header_len,
                    out,
                    size,
                )
                .ok()?
        };
        (read == size).then_some(kind)
    }
}

impl gix::objs::Find for Objects<'_> {
    fn try_find<'a>(
        &self,
        id: &oid,
        buffer: &'a mut Vec<u8>,
    ) -> gix::Result<Option<gix::objs::Data<'a>>> {
        if let Some(kind) = self.loose(id, buffer) {
            return Ok(Some(gix::objs::Data {
                kind,
                object_hash: id.kind(),
                data: buffer,
            }));
        }
        self.repo.objects.try_find(id, buffer)
    }
}

/// Every file that differs between trees `old` and `new` (`None`: empty), its path
/// prefixed with `prefix` (empty, or ending in `/`); the subtrees whose ids are equal are
/// not read.
fn diff_trees(
    objects: &Objects<'_>,
    old: Option<ObjectId>,
    new: Option<ObjectId>,
    prefix: &[u8],
    out: &mut Vec<Change>,
    refusals: Refusals,
) -> Option<()> {
    use gix::diff::tree::recorder::Change as Recorded;
    if old == new {
        return Some(());
    }
    let (old, new) = (tree_data(objects, old)?, tree_data(objects, new)?);
    let kind = objects.object_hash();
    let mut recorder = gix::diff::tree::Recorder::default();
    gix::diff::tree(
        gix::objs::TreeRefIter::from_bytes(&old, kind),
        gix::objs::TreeRefIter::from_bytes(&new, kind),
        gix::diff::tree::State::default(),
        objects,
        &mut recorder,
    )
    .ok()?;
    for record in recorder.records {
        let (path, kind) = match record {
            Recorded::Addition {
                entry_mode, path, ..
            } if !entry_mode.is_tree() => (path, ChangeKind::Added),
            Recorded::Deletion {
                entry_mode, path, ..
            } if !entry_mode.is_tree() => (path, ChangeKind::Deleted),
            Recorded::Modification {
                previous_entry_mode,
                previous_oid,
                entry_mode,
                oid,
                path,
            } if !entry_mode.is_tree() && !previous_entry_mode.is_tree() => {
                if previous_oid != oid {
                    (path, ChangeKind::Modified)
                } else if previous_entry_mode.normalized() != entry_mode.normalized() {
                    // Old trees may carry non-canonical modes (100664); git compares
                    // canonical ones.
                    (path, ChangeKind::ModeChanged)
                } else {
                    continue;
                }
            }
            _ => continue,
        };
        let path: Vec<u8> = if prefix.is_empty() {
            path.into()
        } else {
            [prefix, &path[..]].concat()
        };
        push_change(out, path, kind, refusals);
    }
    Some(())
}

fn push_change(out: &mut Vec<Change>, path: Vec<u8>, kind: ChangeKind, refusals: Refusals) {
    let refused = match refusals {
        Refusals::Found => super::diff::checkout_refusal(path.as_slice().into(), false),
        Refusals::Skipped => None,
    };
    let path = String::from_utf8(path)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    let mut change = Change::new(path, kind);
    change.refused = refused;
    out.push(change);
}

/// The index as gix decodes it: every format, and the reason a broken one is broken.
fn read_with_gix(repo: &gix::Repository, path: &std::path::Path) -> Result<gix::index::File> {
    match gix::index::File::at(
        path,
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
        Ok(index) => Ok(index),
        Err(_) if !path.exists() => Ok(gix::index::File::from_state(
            gix::index::State::new(repo.object_hash()),
            path.to_path_buf(),
        )),
        Err(e) => Err(e).with_context(|| format!("cannot read the index at {}", path.display())),
    }
}

/// gix's cache tree, as the walk reads one.
fn cache_node(tree: &gix::index::extension::Tree) -> CacheNode<'_> {
    CacheNode {
        name: tree.name.as_slice(),
        valid: tree.num_entries.map(|n| (n, tree.id.as_ref())),
        children: tree.children.iter().map(cache_node).collect(),
    }
}

fn walk<E: Entries + ?Sized>(
    repo: &gix::Repository,
    entries: &E,
    cache: Option<&CacheNode<'_>>,
) -> Result<Vec<Change>> {
    let head = head_tree(repo)?;
    let mut walk = Walk {
        repo,
        entries,
        out: Vec::new(),
    };
    walk.dir(b"", head, 0..entries.count(), cache)?;
    Ok(walk.out)
}

/// What the walk reads of the index's entries, by position.
trait Entries {
    fn count(&self) -> usize;
    fn path(&self, i: usize) -> &[u8];
    fn id(&self, i: usize) -> &oid;
    fn mode(&self, i: usize) -> u32;
    /// Whether entry `i` is at a merge stage (1 to 3) rather than stage 0.
    fn unmerged(&self, i: usize) -> bool;
    fn intent_to_add(&self, i: usize) -> bool;
}

impl Entries for IndexMap {
    fn count(&self) -> usize {
        self.len()
    }
    fn path(&self, i: usize) -> &[u8] {
        IndexMap::path(self, i)
    }
    fn id(&self, i: usize) -> &oid {
        IndexMap::id(self, i)
    }
    fn mode(&self, i: usize) -> u32 {
        IndexMap::mode(self, i)
    }
    fn unmerged(&self, i: usize) -> bool {
        IndexMap::stage(self, i) != 0
    }
    fn intent_to_add(&self, i: usize) -> bool {
        IndexMap::intent_to_add(self, i)
    }
}

impl Entries for gix::index::State {
    fn count(&self) -> usize {
        self.entries().len()
    }
    fn path(&self, i: usize) -> &[u8] {
        self.entries()[i].path(self).as_bytes()
    }
    fn id(&self, i: usize) -> &oid {
        &self.entries()[i].id
    }
    fn mode(&self, i: usize) -> u32 {
        self.entries()[i].mode.bits()
    }
    fn unmerged(&self, i: usize) -> bool {
        self.entries()[i].stage() != gix::index::entry::Stage::Unconflicted
    }
    fn intent_to_add(&self, i: usize) -> bool {
        self.entries()[i].flags.contains(Flags::INTENT_TO_ADD)
    }
}

/// HEAD's tree, or `None` on an unborn branch.
fn head_tree(repo: &gix::Repository) -> Result<Option<ObjectId>> {
    let mut head = repo.head().context("cannot read HEAD")?;
    // Most often HEAD names a branch that names a commit: that commit is read once.
    let commit = match head.id().and_then(|id| repo.find_commit(id).ok()) {
        Some(commit) => commit,
        None => match head.peel_to_commit() {
            Ok(commit) => commit,
            Err(_) if head.is_unborn() => return Ok(None),
            Err(e) => return Err(e).context("cannot resolve HEAD to a commit"),
        },
    };
    Ok(Some(
        commit
            .tree_id()
            .context("cannot read HEAD's tree")?
            .detach(),
    ))
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

struct Walk<'a, E: ?Sized> {
    repo: &'a gix::Repository,
    entries: &'a E,
    out: Vec<Change>,
}

impl<E: Entries + ?Sized> Walk<'_, E> {
    fn path(&self, i: usize) -> &[u8] {
        self.entries.path(i)
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
        cache: Option<&CacheNode<'_>>,
    ) -> Result<()> {
        if let (Some(head), Some(cache)) = (head, cache)
            && let Some((entries, id)) = cache.valid
            && u32::try_from(range.len()).ok() == Some(entries)
            && id == head.as_ref()
        {
            return Ok(());
        }
        // Cache-tree children are sorted by name, for lookups (a directory may have
        // hundreds of subdirectories).
        let children: &[CacheNode<'_>] = cache.map_or(&[], |c| c.children.as_slice());
        let groups = self.groups(prefix, range, children);
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
                        .binary_search_by(|c| c.name.cmp(name.as_slice()))
                        .ok()
                        .map(|i| &children[i]);
                    self.both(prefix, &name, item, group, child)?;
                }
            }
        }
        Ok(())
    }

    /// Splits the entries of a directory by their first path component, sorted by name.
    /// A subdirectory's entries are contiguous: where the cache tree still knows how many
    /// there are, they are counted off (and the count checked at its two ends), else the
    /// end is found by a galloping search from the start — either way a few entries are
    /// read per subdirectory, near each other, however many entries the index holds.
    fn groups(
        &self,
        prefix: &[u8],
        range: Range<usize>,
        children: &[CacheNode<'_>],
    ) -> Vec<(Vec<u8>, Group)> {
        let mut groups = Vec::new();
        let mut i = range.start;
        while i < range.end {
            let path = self.path(i);
            let rel = &path[prefix.len()..];
            match rel.find_byte(b'/') {
                Some(slash) => {
                    let name = &rel[..slash];
                    let dir = &path[..prefix.len() + slash + 1];
                    let under = |k: usize| self.path(k).starts_with(dir);
                    let counted = children
                        .binary_search_by(|c| c.name.cmp(name))
                        .ok()
                        .and_then(|c| children[c].valid)
                        .and_then(|(n, _)| i.checked_add(usize::try_from(n).ok()?))
                        .filter(|&j| {
                            j > i && j <= range.end && under(j - 1) && (j == range.end || !under(j))
                        });
                    let j = counted.unwrap_or_else(|| gallop(i + 1..range.end, under));
                    groups.push((name.to_vec(), Group::Dir(i..j)));
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
        !self.entries.intent_to_add(i)
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
        child_cache: Option<&CacheNode<'_>>,
    ) -> Result<()> {
        match group {
            Group::File(range) => {
                let i = range.start;
                let path = [prefix, name].concat();
                if range.len() > 1 || self.entries.unmerged(i) {
                    self.push(&path, ChangeKind::Unmerged);
                } else if !self.counts(i) {
                    // An intent-to-add entry records no content to commit.
                    self.deleted(prefix, &item)?;
                } else if item.is_tree {
                    self.deleted(prefix, &item)?;
                    self.push(&path, ChangeKind::Added);
                } else if self.entries.id(i) != item.id.as_ref() {
                    self.push(&path, ChangeKind::Modified);
                } else if self.entries.mode(i) != item.mode {
                    self.push(&path, ChangeKind::ModeChanged);
                }
            }
            Group::Dir(range) => {
                let first = range.start;
                if range.len() == 1 && self.entries.mode(first) == SPARSE_DIR_MODE {
                    // A sparse-index directory entry stands for the whole subtree.
                    if self.entries.id(first) != item.id.as_ref() {
                        let path = self.path(first).to_vec();
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

/// The first position in `range` where `pred` stops holding (it holds for a prefix of
/// the range, then never again): probing 1, 2, 4, ... past the start, then bisecting the
/// last step, so a short run costs a few probes near its start.
fn gallop(range: Range<usize>, pred: impl Fn(usize) -> bool) -> usize {
    let (mut lo, mut step) = (range.start, 1);
    let mut hi = range.end;
    while lo < range.end {
        let probe = lo.saturating_add(step - 1).min(range.end - 1);
        if pred(probe) {
            lo = probe + 1;
            step = step.saturating_mul(2);
        } else {
            hi = probe;
            break;
        }
    }
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if pred(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::process::Command;

    use super::staged_changes;

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
        super::in_place::kinds(staged_changes(&repo).unwrap())
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

#[cfg(test)]
mod in_place {
    //! The index read in place and the index gix decodes give the same walk, and git's
    //! answer, on every form of entry git writes; forms only gix reads go to gix.

    use std::path::Path;

    use super::{IndexMap, cache_node, read_with_gix, staged_changes, walk};
    use crate::core::scope::{Change, ChangeKind};
    use crate::git::test_git as git;

    pub(super) fn kinds(changes: Vec<Change>) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = changes
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
        out.dedup();
        out
    }

    /// git's own answer, one (path, status) per path.
    fn oracle(dir: &Path) -> Vec<(String, String)> {
        let text = git(
            dir,
            &["diff", "--cached", "--name-status", "--no-renames", "-z"],
        );
        let parts: Vec<&str> = text.split('\0').filter(|p| !p.is_empty()).collect();
        let mut out: Vec<(String, String)> = parts
            .chunks(2)
            .map(|c| (c[1].to_string(), c[0].to_string()))
            .collect();
        out.sort();
        out.dedup();
        out
    }

    /// The walk over the mapped index, which must be readable in place.
    fn mapped(dir: &Path) -> Vec<(String, String)> {
        let repo = gix::open(dir).unwrap();
        let map = IndexMap::open(&repo.index_path(), 20).expect("an index read in place");
        kinds(walk(&repo, &map, map.cache_tree().as_ref()).unwrap())
    }

    /// The walk over gix's decoding of the same index.
    fn decoded(dir: &Path) -> Vec<(String, String)> {
        let repo = gix::open(dir).unwrap();
        let file = read_with_gix(&repo, &repo.index_path()).unwrap();
        let cache = file.tree().map(cache_node);
        kinds(walk(&repo, &*file, cache.as_ref()).unwrap())
    }

    fn repo() -> tempfile::TempDir {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        git(dir, &["init", "-q", "-b", "main"]);
        for (path, text) in [
            ("a.txt", "a\n"),
            ("src/lib.rs", "lib\n"),
            ("src/deep/x.rs", "x\n"),
            ("src/deep/y.rs", "y\n"),
            ("gone/one", "1\n"),
            ("gone/two/three", "3\n"),
            ("becomes_dir", "file\n"),
            ("becomes_file/inner", "inner\n"),
            ("run.sh", "#!/bin/sh\n"),
            ("hidden.txt", "h\n"),
            ("other/z.txt", "z\n"),
        ] {
            let path = dir.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-q", "-m", "base"]);
        tmp
    }

    /// Changes of every kind staged in `dir` over a cache tree valid everywhere.
    fn stage_every_kind(dir: &Path) {
        git(dir, &["read-tree", "HEAD"]);
        std::fs::write(dir.join("src/deep/x.rs"), "changed\n").unwrap();
        std::fs::write(dir.join("new.txt"), "new\n").unwrap();
        std::fs::create_dir_all(dir.join("fresh/er")).unwrap();
        std::fs::write(dir.join("fresh/er/f.txt"), "f\n").unwrap();
        std::fs::remove_dir_all(dir.join("gone")).unwrap();
        std::fs::remove_file(dir.join("becomes_dir")).unwrap();
        std::fs::create_dir_all(dir.join("becomes_dir")).unwrap();
        std::fs::write(dir.join("becomes_dir/now"), "now\n").unwrap();
        std::fs::remove_dir_all(dir.join("becomes_file")).unwrap();
        std::fs::write(dir.join("becomes_file"), "file now\n").unwrap();
        std::os::unix::fs::symlink("a.txt", dir.join("link")).unwrap();
        git(dir, &["add", "-A"]);
        git(dir, &["update-index", "--chmod=+x", "run.sh"]);
        // Version 3 entries: intent-to-add, skip-worktree; and assume-unchanged.
        std::fs::write(dir.join("later.txt"), "later\n").unwrap();
        git(dir, &["add", "-N", "later.txt"]);
        git(dir, &["update-index", "--skip-worktree", "other/z.txt"]);
        git(dir, &["update-index", "--assume-unchanged", "hidden.txt"]);
        // A gitlink.
        let sub = git(dir, &["rev-parse", "HEAD"]);
        git(
            dir,
            &[
                "update-index",
                "--add",
                "--cacheinfo",
                &format!("160000,{sub},vendor/sub"),
            ],
        );
    }

    #[test]
    fn every_kind_of_change_is_found_alike_in_place_and_by_gix() {
        let tmp = repo();
        let dir = tmp.path();
        assert!(mapped(dir).is_empty(), "nothing staged yet");
        stage_every_kind(dir);
        let found = mapped(dir);
        assert_eq!(found, decoded(dir));
        assert_eq!(found, oracle(dir));
        assert_eq!(found.len(), 12, "{found:?}");
        assert!(found.contains(&("run.sh".into(), "M".into())), "{found:?}");
        assert!(!found.iter().any(|(p, _)| p == "later.txt"), "{found:?}");
    }

    /// The index as `git commit` leaves it for its pre-commit hook: the cache tree
    /// brought up to date and its trees written, the index rewritten. Returns the tree.
    fn as_commit_leaves_it(dir: &Path) -> String {
        git(dir, &["write-tree"])
    }

    fn committed_tree(dir: &Path) -> Option<String> {
        super::super::index_map::committed_tree(&dir.join(".git/index"), 20)
            .map(|id| id.to_string())
    }

    /// The repository with `EOIE` on and changes of every kind staged.
    fn every_kind_staged_with_eoie() -> tempfile::TempDir {
        let tmp = repo();
        git(
            tmp.path(),
            &["config", "index.recordEndOfIndexEntries", "true"],
        );
        stage_every_kind(tmp.path());
        tmp
    }

    #[test]
    fn the_tree_a_commit_would_make_is_compared_with_head_and_finds_the_same() {
        let tmp = every_kind_staged_with_eoie();
        let dir = tmp.path();
        // git leaves the root invalid while an intent-to-add entry is there.
        as_commit_leaves_it(dir);
        assert_eq!(committed_tree(dir), None, "an intent-to-add entry");
        git(dir, &["rm", "-q", "--cached", "later.txt"]);
        let expected = oracle(dir);
        assert_eq!(expected.len(), 12, "{expected:?}");
        let tree = as_commit_leaves_it(dir);
        assert_eq!(committed_tree(dir).as_deref(), Some(tree.as_str()));
        let repo = gix::open(dir).unwrap();
        let changes = staged_changes(&repo).unwrap();
        let paths: Vec<&str> = changes.iter().map(|c| c.path.as_str()).collect();
        let mut sorted = paths.clone();
        sorted.sort_unstable();
        assert_eq!(paths, sorted, "in path order");
        assert_eq!(kinds(changes), expected);
        assert_eq!(mapped(dir), expected, "the entries say the same");
        // A commit of exactly that tree: nothing staged, with no tree read.
        git(dir, &["commit", "-q", "-m", "every kind"]);
        assert!(committed_tree(dir).is_some());
        assert!(kinds(staged_changes(&repo).unwrap()).is_empty());
    }

    #[test]
    fn objects_read_loose_alike_and_leave_the_rest_to_gix() {
        use gix::objs::Find;
        let tmp = repo();
        let dir = tmp.path();
        git(dir, &["repack", "-adq"]);
        let packed = git(dir, &["rev-parse", "HEAD^{tree}"]);
        // Loose: a tree, a blob whose data outgrows the first inflate, a tiny blob.
        std::fs::write(dir.join("big.txt"), "0123456789abcdef\n".repeat(400)).unwrap();
        std::fs::write(dir.join("tiny.txt"), "t").unwrap();
        git(dir, &["add", "big.txt", "tiny.txt"]);
        let tree = as_commit_leaves_it(dir);
        let big = git(dir, &["rev-parse", ":big.txt"]);
        let tiny = git(dir, &["rev-parse", ":tiny.txt"]);
        let repo = gix::open(dir).unwrap();
        let objects = super::Objects::new(&repo);
        let read = |id: &str| {
            let id = gix::ObjectId::from_hex(id.as_bytes()).unwrap();
            let (mut ours, mut theirs) = (Vec::new(), Vec::new());
            let found = objects.try_find(&id, &mut ours).unwrap().map(|d| d.kind);
            let expected = repo
                .objects
                .try_find(&id, &mut theirs)
                .unwrap()
                .map(|d| d.kind);
            assert_eq!(found, expected, "{id}");
            assert_eq!(ours, theirs, "{id}");
            (found, objects.loose(&id, &mut Vec::new()).is_some())
        };
        assert_eq!(read(&tree), (Some(gix::objs::Kind::Tree), true));
        assert_eq!(read(&big), (Some(gix::objs::Kind::Blob), true));
        assert_eq!(read(&tiny), (Some(gix::objs::Kind::Blob), true));
        assert_eq!(
            read(&packed),
            (Some(gix::objs::Kind::Tree), false),
            "from the pack"
        );
        assert_eq!(read(&"0".repeat(40)), (None, false), "nowhere");
        // A loose object that does not inflate is gix's to refuse.
        let path = dir.join(".git/objects").join(&big[..2]).join(&big[2..]);
        std::fs::remove_file(&path).unwrap();
        std::fs::write(&path, b"not zlib at all").unwrap();
        let id = gix::ObjectId::from_hex(big.as_bytes()).unwrap();
        assert!(objects.loose(&id, &mut Vec::new()).is_none());
        assert!(objects.try_find(&id, &mut Vec::new()).is_err());
        // Nor is what is not a file read, or waited on: a FIFO, an endless device.
        std::fs::remove_file(&path).unwrap();
        let fifo = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path that lives across the call.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        assert!(objects.loose(&id, &mut Vec::new()).is_none());
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
        assert!(objects.loose(&id, &mut Vec::new()).is_none());
    }

    #[test]
    fn a_region_finds_what_the_whole_finds_there_and_nothing_else() {
        let tmp = every_kind_staged_with_eoie();
        let dir = tmp.path();
        git(dir, &["rm", "-q", "--cached", "later.txt"]);
        let repo = gix::open(dir).unwrap();
        let regions: &[&[&str]] = &[
            &["src"],
            &["src/deep"],
            &["src/deep/x.rs", "src/lib.rs"],
            &["becomes_dir"],
            &["becomes_dir/now"],
            &["becomes_file"],
            &["becomes_file/inner"],
            &["gone/two"],
            &["a.txt", "run.sh", "link"],
            &["vendor/sub"],
            &["vendor"],
            &["fresh/er/f.txt", "fresh"],
            &["nothing/here", "zzz"],
            // By bytes `src.x` sorts between `src` and `src/deep`.
            &["src", "src.x", "src/deep"],
            &["becomes_dir/now", "becomes_dir", "becomes_dir.x"],
            &[
                "a.txt",
                "becomes_dir",
                "fresh",
                "gone",
                "link",
                "new.txt",
                "run.sh",
                "src",
                "vendor",
            ],
        ];
        let check = |label: &str| {
            let whole = kinds(staged_changes(&repo).unwrap());
            assert!(whole.len() >= 11, "{whole:?}");
            for region in regions {
                let owned: Vec<String> = region.iter().map(|r| r.to_string()).collect();
                let raw = super::staged_changes_within(&repo, Some(&owned)).unwrap();
                let mut paths: Vec<&str> = raw.iter().map(|c| c.path.as_str()).collect();
                let listed = paths.len();
                paths.sort_unstable();
                paths.dedup();
                assert_eq!(paths.len(), listed, "{label}: each path once: {region:?}");
                let got = kinds(raw);
                let expected: Vec<_> = whole
                    .iter()
                    .filter(|(path, _)| {
                        region
                            .iter()
                            .any(|r| path == r || path.starts_with(&format!("{r}/")))
                    })
                    .cloned()
                    .collect();
                assert_eq!(got, expected, "{label}: {region:?}");
            }
            let everywhere = kinds(super::staged_changes_within(&repo, None).unwrap());
            assert_eq!(everywhere, whole, "{label}");
        };
        // The entries decide (no tree named at the index's end yet), then the trees.
        assert_eq!(committed_tree(dir), None);
        check("from the entries");
        as_commit_leaves_it(dir);
        assert!(committed_tree(dir).is_some());
        check("from the trees");
    }

    #[test]
    fn the_index_end_is_trusted_only_as_git_writes_it() {
        let tmp = repo();
        let dir = tmp.path();
        std::fs::write(dir.join("src/lib.rs"), "changed\n").unwrap();
        git(dir, &["add", "-A"]);
        // Without EOIE the entries must be read to find the cache tree.
        as_commit_leaves_it(dir);
        assert_eq!(committed_tree(dir), None, "no EOIE");
        git(dir, &["config", "index.recordEndOfIndexEntries", "true"]);
        git(dir, &["update-index", "--really-refresh"]);
        std::fs::write(dir.join("a.txt"), "changed too\n").unwrap();
        git(dir, &["add", "a.txt"]);
        // Staged after the cache tree was written: the root is invalid.
        assert_eq!(committed_tree(dir), None, "an invalidated root");
        let expected = oracle(dir);
        assert_eq!(
            kinds(staged_changes(&gix::open(dir).unwrap()).unwrap()),
            expected
        );
        as_commit_leaves_it(dir);
        assert!(committed_tree(dir).is_some());
        // One byte of the extension headers' checksum changed: refused, and the entries
        // decide.
        let index = dir.join(".git/index");
        let bytes = std::fs::read(&index).unwrap();
        let mut broken = bytes.clone();
        let at = bytes.len() - 20 - 1;
        broken[at] ^= 1;
        std::fs::write(&index, &broken).unwrap();
        assert_eq!(committed_tree(dir), None, "a checksum that does not match");
        assert_eq!(
            kinds(staged_changes(&gix::open(dir).unwrap()).unwrap()),
            expected
        );
        // An offset pointing past the extension itself.
        let mut broken = bytes.clone();
        let offset = bytes.len() - 20 - 24;
        broken[offset..offset + 4].copy_from_slice(&u32::MAX.to_be_bytes());
        std::fs::write(&index, &broken).unwrap();
        assert_eq!(committed_tree(dir), None, "an offset out of place");
        // A tree the index names but the object store lacks: the entries decide.
        std::fs::write(&index, &bytes).unwrap();
        let tree = committed_tree(dir).unwrap();
        let loose = dir.join(".git/objects").join(&tree[..2]).join(&tree[2..]);
        std::fs::remove_file(loose).unwrap();
        assert_eq!(
            kinds(staged_changes(&gix::open(dir).unwrap()).unwrap()),
            expected
        );
        // A split index keeps its entries elsewhere: left to gix.
        git(dir, &["update-index", "--split-index"]);
        as_commit_leaves_it(dir);
        assert_eq!(committed_tree(dir), None, "a split index");
    }

    #[test]
    fn a_path_longer_than_the_length_field_holds_is_read_to_its_end() {
        let tmp = repo();
        let dir = tmp.path();
        let blob = git(dir, &["rev-parse", "HEAD:a.txt"]);
        // 0xfff bytes and more: the entry's length field saturates and the path ends at
        // its NUL. No file need exist for it.
        let long = format!("{}/{}", "d".repeat(200), "n/".repeat(2100) + "leaf");
        assert!(long.len() > 0xfff);
        let short = "z/after";
        for path in [long.as_str(), short] {
            git(
                dir,
                &[
                    "update-index",
                    "--add",
                    "--cacheinfo",
                    &format!("100644,{blob},{path}"),
                ],
            );
        }
        let found = mapped(dir);
        assert_eq!(found, oracle(dir));
        assert_eq!(
            found,
            [
                (long, "A".to_string()),
                (short.to_string(), "A".to_string())
            ]
        );
        // gix's decoder does not pad such an entry as git does, and refuses the index.
        let repo = gix::open(dir).unwrap();
        assert!(read_with_gix(&repo, &repo.index_path()).is_err());
    }

    #[test]
    fn unmerged_entries_are_found_alike() {
        let tmp = repo();
        let dir = tmp.path();
        git(dir, &["checkout", "-q", "-b", "side"]);
        std::fs::write(dir.join("a.txt"), "side\n").unwrap();
        git(dir, &["commit", "-q", "-am", "side"]);
        git(dir, &["checkout", "-q", "main"]);
        std::fs::write(dir.join("a.txt"), "main\n").unwrap();
        git(dir, &["commit", "-q", "-am", "main"]);
        let merge = crate::git::test_git_command(dir)
            .args(["merge", "-q", "side"])
            .output()
            .unwrap();
        assert!(!merge.status.success(), "the merge conflicts");
        assert!(
            String::from_utf8_lossy(&merge.stdout).contains("CONFLICT"),
            "{merge:?}"
        );
        let found = mapped(dir);
        assert_eq!(found, decoded(dir));
        assert_eq!(found, [("a.txt".to_string(), "U".to_string())]);
        assert_eq!(found, oracle(dir));
    }

    #[test]
    fn a_sparse_index_is_read_in_place() {
        let tmp = repo();
        let dir = tmp.path();
        git(
            dir,
            &["sparse-checkout", "init", "--cone", "--sparse-index"],
        );
        git(dir, &["sparse-checkout", "set", "src"]);
        let index = std::fs::read(dir.join(".git/index")).unwrap();
        assert!(
            index.windows(4).any(|w| w == b"sdir"),
            "git wrote a sparse index"
        );
        std::fs::write(dir.join("src/lib.rs"), "sparse change\n").unwrap();
        git(dir, &["add", "src/lib.rs"]);
        let found = mapped(dir);
        assert_eq!(found, decoded(dir));
        assert_eq!(found, [("src/lib.rs".to_string(), "M".to_string())]);
        assert_eq!(found, oracle(dir));
    }

    #[test]
    fn version_4_and_a_split_index_go_to_gix_and_find_the_same() {
        for form in [&["--index-version", "4"][..], &["--split-index"][..]] {
            let tmp = repo();
            let dir = tmp.path();
            std::fs::write(dir.join("src/lib.rs"), "changed\n").unwrap();
            std::fs::remove_file(dir.join("a.txt")).unwrap();
            git(dir, &["add", "-A"]);
            let mut args = vec!["update-index"];
            args.extend_from_slice(form);
            git(dir, &args);
            let repo = gix::open(dir).unwrap();
            assert!(
                IndexMap::open(&repo.index_path(), 20).is_none(),
                "{form:?} is left to gix"
            );
            let found = kinds(staged_changes(&repo).unwrap());
            assert_eq!(found, oracle(dir), "{form:?}");
            assert_eq!(
                found,
                [
                    ("a.txt".to_string(), "D".to_string()),
                    ("src/lib.rs".to_string(), "M".to_string())
                ],
                "{form:?}"
            );
        }
    }

    #[test]
    fn a_broken_index_is_refused_as_before() {
        let tmp = repo();
        let dir = tmp.path();
        let index = dir.join(".git/index");
        let bytes = std::fs::read(&index).unwrap();
        // Cut inside the entries: neither reader accepts it, and gix says why.
        std::fs::write(&index, &bytes[..bytes.len() / 2]).unwrap();
        let repo = gix::open(dir).unwrap();
        assert!(IndexMap::open(&index, 20).is_none());
        let err = staged_changes(&repo).unwrap_err().to_string();
        assert!(err.contains("cannot read the index"), "{err}");
        // A missing index stages every file of HEAD's for deletion, as git sees it.
        std::fs::remove_file(&index).unwrap();
        let found = kinds(staged_changes(&repo).unwrap());
        assert_eq!(found, oracle(dir));
        assert_eq!(found.len(), 11, "{found:?}");
    }
}
