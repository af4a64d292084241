//! The index file read in place: mapped, its entries found by their offsets and read only
//! where the caller looks, the cache-tree extension parsed, nothing copied.
//!
//! Index versions 2 and 3, git's default, are read this way. Anything else — version 4's
//! compressed paths, a split index (`link`), an extension git requires and this reader
//! does not know, an entry that does not parse — is left to gix ([`IndexMap::open`]
//! gives `None`), which reads every format and says what is wrong with a broken one.

use std::ops::Range;
use std::path::Path;

use gix::oid;

/// Flags of an entry (the 16 bits after its object id).
const EXTENDED: u16 = 0x4000;
const NAME_MASK: u16 = 0x0fff;
/// Extended flags (version 3): intent-to-add and skip-worktree; any other bit is unknown.
const INTENT_TO_ADD: u16 = 0x2000;
const SKIP_WORKTREE: u16 = 0x4000;
/// The mode bits gix keeps of an entry (`Mode::from_bits_truncate`), kept alike here.
const MODE_BITS: u32 = 0o160755;
/// A sparse index's directory entry.
pub const SPARSE_DIR_MODE: u32 = 0o040000;

/// One index file, mapped.
pub struct IndexMap {
    bytes: memmap2::Mmap,
    hash_len: usize,
    /// Where each entry starts, in index order.
    offsets: Vec<u32>,
    /// The cache-tree extension's data, when there is one.
    tree: Option<Range<usize>>,
}

/// One directory of the cache-tree extension: the tree id git would write for the index
/// entries beneath it, when it is still valid.
#[derive(Debug)]
pub struct CacheNode<'a> {
    pub name: &'a [u8],
    /// The number of index entries it covers and its tree id; `None` when git
    /// invalidated it (something beneath was staged since it was written).
    pub valid: Option<(u32, &'a oid)>,
    /// Its subdirectories, sorted by name.
    pub children: Vec<CacheNode<'a>>,
}

impl IndexMap {
    /// The index at `path`, mapped and its entries located; `None` when it is missing,
    /// cannot be read, or is of a form only gix reads.
    pub fn open(path: &Path, hash_len: usize) -> Option<IndexMap> {
        let file = std::fs::File::open(path).ok()?;
        let bytes = crate::sys::fs::map_read_only(&file).ok()?;
        let (offsets, tree) = locate(&bytes, hash_len)?;
        let map = IndexMap {
            bytes,
            hash_len,
            offsets,
            tree,
        };
        // A cache tree that does not parse is a broken index: gix says so.
        if let Some(range) = &map.tree {
            parse_tree(&map.bytes[range.clone()], hash_len)?;
        }
        Some(map)
    }

    /// How many entries the index holds.
    pub fn len(&self) -> usize {
        self.offsets.len()
    }

    /// Whether the index holds no entry.
    pub fn is_empty(&self) -> bool {
        self.offsets.is_empty()
    }

    /// The cache tree, when the index has one.
    pub fn cache_tree(&self) -> Option<CacheNode<'_>> {
        let range = self.tree.clone()?;
        parse_tree(&self.bytes[range], self.hash_len)
    }

    fn at(&self, i: usize) -> usize {
        self.offsets[i] as usize
    }

    fn flags_at(&self, i: usize) -> usize {
        self.at(i) + 40 + self.hash_len
    }

    fn flags(&self, i: usize) -> u16 {
        be16(&self.bytes, self.flags_at(i))
    }

    fn extended(&self, i: usize) -> u16 {
        if self.flags(i) & EXTENDED == 0 {
            0
        } else {
            be16(&self.bytes, self.flags_at(i) + 2)
        }
    }

    /// Entry `i`'s path, repository-relative.
    pub fn path(&self, i: usize) -> &[u8] {
        let start = self.flags_at(i) + if self.flags(i) & EXTENDED == 0 { 2 } else { 4 };
        let len = usize::from(self.flags(i) & NAME_MASK);
        let len = if len < usize::from(NAME_MASK) {
            len
        } else {
            self.bytes[start..]
                .iter()
                .position(|&b| b == 0)
                .unwrap_or_default()
        };
        &self.bytes[start..start + len]
    }

    /// Entry `i`'s object id.
    pub fn id(&self, i: usize) -> &oid {
        let start = self.at(i) + 40;
        oid::from_bytes_unchecked(&self.bytes[start..start + self.hash_len])
    }

    /// Entry `i`'s mode, as gix reads it.
    pub fn mode(&self, i: usize) -> u32 {
        be32(&self.bytes, self.at(i) + 24) & MODE_BITS
    }

    /// Entry `i`'s merge stage (0 when not conflicted).
    pub fn stage(&self, i: usize) -> u16 {
        (self.flags(i) >> 12) & 3
    }

    /// Whether entry `i` was added with `git add -N`.
    pub fn intent_to_add(&self, i: usize) -> bool {
        self.extended(i) & INTENT_TO_ADD != 0
    }
}

fn be16(bytes: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([bytes[at], bytes[at + 1]])
}

fn be32(bytes: &[u8], at: usize) -> u32 {
    u32::from_be_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// Checks the header, finds every entry and the cache-tree extension: the entries'
/// offsets and the extension's range, or `None` for a form left to gix.
fn locate(bytes: &[u8], hash_len: usize) -> Option<(Vec<u32>, Option<Range<usize>>)> {
    if bytes.len() < 12 + hash_len || &bytes[..4] != b"DIRC" {
        return None;
    }
    // Offsets are kept in 32 bits.
    u32::try_from(bytes.len()).ok()?;
    let version = be32(bytes, 4);
    if !matches!(version, 2 | 3) {
        return None;
    }
    let count = usize::try_from(be32(bytes, 8)).ok()?;
    let end = bytes.len() - hash_len;
    // The smallest entry is 40 bytes of stat data, the id, the flags and one NUL.
    let fixed = 40 + hash_len + 2;
    if count > end / (fixed + 1) {
        return None;
    }
    let mut offsets = Vec::with_capacity(count);
    let mut at = 12;
    for _ in 0..count {
        if at + fixed > end {
            return None;
        }
        let flags = be16(bytes, at + fixed - 2);
        let mut header = fixed;
        if flags & EXTENDED != 0 {
            if version < 3 || at + fixed + 2 > end {
                return None;
            }
            let extended = be16(bytes, at + fixed);
            if extended & !(INTENT_TO_ADD | SKIP_WORKTREE) != 0 {
                return None;
            }
            header += 2;
        }
        let path = at + header;
        let len = match usize::from(flags & NAME_MASK) {
            long if long == usize::from(NAME_MASK) => {
                bytes.get(path..end)?.iter().position(|&b| b == 0)?
            }
            len => len,
        };
        // As git pads: to a multiple of 8, with at least one NUL after the path.
        let size = (header + len + 8) & !7;
        if at + size > end || bytes[path + len] != 0 {
            return None;
        }
        offsets.push(u32::try_from(at).ok()?);
        at += size;
    }
    let mut tree = None;
    while at + 8 <= end {
        let signature = &bytes[at..at + 4];
        let size = usize::try_from(be32(bytes, at + 4)).ok()?;
        let data = at + 8..(at + 8).checked_add(size)?;
        if data.end > end {
            return None;
        }
        match signature {
            b"TREE" => tree = Some(data.clone()),
            // An extension git requires (lower-case) that this reader does not know, such
            // as a split index's `link`: gix reads it. A sparse index's `sdir` only says
            // that directory entries may be there; they are read as they come.
            b"sdir" => {}
            _ if signature[0].is_ascii_lowercase() => return None,
            _ => {}
        }
        at = data.end;
    }
    (at == end).then_some((offsets, tree))
}

/// The size of the `EOIE` extension with its header: the signature, the size, the offset
/// where the entries end and a SHA-1 of the other extensions' headers.
const EOIE_LEN: usize = 8 + 4 + 20;

/// The tree `git commit` is about to commit: the id of the cache tree's root, found from
/// the end of the index alone, without reading an entry.
///
/// `git commit` brings the cache tree up to date and writes its trees before it runs the
/// pre-commit hook, so the root names exactly what is being committed. Reaching it
/// without a pass over every entry needs to know where the entries end: git records that
/// in the `EOIE` extension, always the last one, when `index.recordEndOfIndexEntries` is
/// on (`git crew init` turns it on). The extension is taken only as git's own reader
/// takes it: at its place, of its size, pointing between the header and itself, and with
/// the SHA-1 of every extension header between matching.
///
/// `None` whenever that does not hold — no `EOIE`, a cache tree invalidated since it was
/// written (paths staged with `git add`, no commit under way), a root that does not cover
/// every entry, a split index (`link`) or another extension git requires that this
/// reader does not know, a SHA-256 repository — and the caller reads the entries.
pub fn committed_tree(path: &Path, hash_len: usize) -> Option<gix::ObjectId> {
    use std::os::unix::fs::FileExt;
    if hash_len != 20 {
        return None;
    }
    let file = std::fs::File::open(path).ok()?;
    let len = usize::try_from(file.metadata().ok()?.len()).ok()?;
    let read = |at: usize, n: usize| -> Option<Vec<u8>> {
        let mut buf = vec![0; n];
        file.read_exact_at(&mut buf, u64::try_from(at).ok()?).ok()?;
        Some(buf)
    };
    let eoie = len.checked_sub(hash_len + EOIE_LEN)?;
    if eoie < 12 {
        return None;
    }
    let header = read(0, 12)?;
    if &header[..4] != b"DIRC" || !matches!(be32(&header, 4), 2..=4) {
        return None;
    }
    let tail = read(eoie, EOIE_LEN)?;
    if &tail[..4] != b"EOIE" || be32(&tail, 4) != 24 {
        return None;
    }
    let start = usize::try_from(be32(&tail, 8)).ok()?;
    if start < 12 || start >= eoie {
        return None;
    }
    let mut headers = gix::hash::hasher(gix::hash::Kind::Sha1);
    let mut tree = None;
    let mut at = start;
    while at < eoie {
        if at + 8 > eoie {
            return None;
        }
        let head = read(at, 8)?;
        headers.update(&head);
        let data = at + 8..(at + 8).checked_add(usize::try_from(be32(&head, 4)).ok()?)?;
        match &head[..4] {
            b"TREE" => tree = Some(data.clone()),
            b"sdir" => {}
            signature if signature[0].is_ascii_lowercase() => return None,
            _ => {}
        }
        at = data.end;
    }
    if at != eoie || headers.try_finalize().ok()?.as_bytes() != &tail[12..] {
        return None;
    }
    let tree = tree?;
    // The root's header: an empty name, its entry and subtree counts, its id.
    let root = read(tree.start, tree.len().min(64))?;
    let (name, valid, _, _) = parse_header(&root, hash_len)?;
    let (entries, id) = valid?;
    (name.is_empty() && entries == be32(&header, 8)).then(|| id.to_owned())
}

/// The cache tree of the extension's data; `None` when it does not parse.
fn parse_tree(data: &[u8], hash_len: usize) -> Option<CacheNode<'_>> {
    let (node, rest) = parse_node(data, hash_len, 0)?;
    rest.is_empty().then_some(node)
}

/// A cache-tree node without its subtrees: its name, its entry count and id when valid,
/// how many subtrees follow, and the data after it.
type NodeHeader<'a> = (&'a [u8], Option<(u32, &'a oid)>, usize, &'a [u8]);

fn parse_header(data: &[u8], hash_len: usize) -> Option<NodeHeader<'_>> {
    let nul = data.iter().position(|&b| b == 0)?;
    let name = &data[..nul];
    let data = &data[nul + 1..];
    let space = data.iter().position(|&b| b == b' ')?;
    let entries: i64 = std::str::from_utf8(&data[..space]).ok()?.parse().ok()?;
    let data = &data[space + 1..];
    let newline = data.iter().position(|&b| b == b'\n')?;
    let subtrees: usize = std::str::from_utf8(&data[..newline]).ok()?.parse().ok()?;
    let mut data = &data[newline + 1..];
    let valid = if entries >= 0 {
        let id = oid::try_from_bytes(data.get(..hash_len)?).ok()?;
        data = &data[hash_len..];
        Some((u32::try_from(entries).ok()?, id))
    } else {
        None
    };
    Some((name, valid, subtrees, data))
}

fn parse_node(data: &[u8], hash_len: usize, depth: usize) -> Option<(CacheNode<'_>, &[u8])> {
    // Deeper than any path git can hold: a broken extension.
    if depth > 4096 {
        return None;
    }
    let (name, valid, subtrees, mut data) = parse_header(data, hash_len)?;
    let mut children = Vec::with_capacity(subtrees.min(data.len()));
    for _ in 0..subtrees {
        let (child, rest) = parse_node(data, hash_len, depth + 1)?;
        children.push(child);
        data = rest;
    }
    children.sort_by(|a, b| a.name.cmp(b.name));
    if children.windows(2).any(|w| w[0].name == w[1].name) {
        return None;
    }
    Some((
        CacheNode {
            name,
            valid,
            children,
        },
        data,
    ))
}
