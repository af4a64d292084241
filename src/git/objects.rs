//! Objects a fenced run wrote into its quarantine (`GIT_OBJECT_DIRECTORY`), brought into
//! the repository's store. Each is hashed again on the way in: an object whose content
//! does not match its name is left out and named, so a worker can neither corrupt an
//! object the repository has nor smuggle one in under a false name. The import is
//! bounded like the run: an object that declares more than the run's
//! `fences.max_file_size` is left out before anything of it is inflated or hashed, and
//! nothing is taken in past the import's time.

use super::error::Result;
use std::path::Path;
use std::time::Instant;

use super::run::GitRunner;
use crate::core::oversize::Refused;

/// What an import did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Imported {
    pub objects: usize,
    /// Objects left out, and why.
    pub rejected: Vec<Refused>,
}

/// How much an import takes in: no object bigger than `max_object_size` bytes, and
/// nothing once `until` has passed.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_object_size: u64,
    pub until: Instant,
}

/// Moves every object of `quarantine` into `repo`'s store: loose objects are read and
/// written again (so their ids are computed here), packs go through `git index-pack`,
/// which computes every id itself. Within `limits`: a loose object's header, a pack
/// file's size and each of its entries' headers are read first, and one over the size
/// limit is left out unhashed; `index-pack` is stopped at `limits.until`. The quarantine
/// is emptied.
pub fn import(repo: &gix::Repository, quarantine: &Path, limits: Limits) -> Result<Imported> {
    let mut imported = Imported::default();
    // Nothing here is followed or opened but real folders and regular files: the worker
    // could have made any entry a symlink (to the lead's refs, say) or a FIFO.
    if !is_real_dir(quarantine) {
        return Ok(imported);
    }
    let Ok(fanout) = std::fs::read_dir(quarantine) else {
        return Ok(imported);
    };
    let store = gix::odb::loose::Store::at(quarantine, repo.object_hash());
    let mut buf = Vec::new();
    for dir in fanout.flatten() {
        let prefix = dir.file_name().to_string_lossy().into_owned();
        if matches!(prefix.as_str(), "pack" | "info") {
            continue;
        }
        if is_whiteout(&dir.path()) {
            // A fanout folder of the store the run's git view took away whole.
            remove_entry(&dir.path());
            continue;
        }
        let is_dir = dir.file_type().is_ok_and(|t| t.is_dir());
        if prefix.len() != 2 || !prefix.bytes().all(|b| b.is_ascii_hexdigit()) || !is_dir {
            imported.rejected.push(Refused::FalseName(prefix));
            remove_entry(&dir.path());
            continue;
        }
        for file in std::fs::read_dir(dir.path())?.flatten() {
            let name = format!("{prefix}{}", file.file_name().to_string_lossy());
            let is_file = file.file_type().is_ok_and(|t| t.is_file());
            if is_whiteout(&file.path()) {
                // An object of the store the run's git view took away (a `git gc` in it):
                // nothing to bring in.
                remove_entry(&file.path());
                continue;
            }
            if is_file && file.file_name().to_string_lossy().starts_with("tmp_") {
                // What a git killed half-way through writing an object leaves: nothing.
                let _ = std::fs::remove_file(file.path());
                continue;
            }
            if !is_file {
                imported.rejected.push(Refused::FalseName(name));
                remove_entry(&file.path());
                continue;
            }
            if Instant::now() > limits.until {
                imported.rejected.push(Refused::OutOfTime(name));
                let _ = std::fs::remove_file(file.path());
                continue;
            }
            let id = gix::ObjectId::from_hex(name.as_bytes()).ok();
            // What the object says it holds, read from the first bytes alone.
            let declared = id.and_then(|id| store.try_header(&id).ok().flatten());
            match declared {
                Some((size, _)) if size > limits.max_object_size => {
                    imported.rejected.push(Refused::OverCap { name, size });
                }
                Some(_) => {
                    // Inflated no further than the size it declares, at most the limit.
                    let written = id.and_then(|id| {
                        let data = store.try_find(&id, &mut buf).ok()??;
                        let named =
                            gix::objs::compute_hash(repo.object_hash(), data.kind, data.data)
                                .ok()?;
                        if named == id && !repo.has_object(id) {
                            use gix::objs::Write as _;
                            repo.objects.write_buf(data.kind, data.data).ok()?;
                        }
                        Some((id, named))
                    });
                    match written {
                        Some((id, new)) if id == new => imported.objects += 1,
                        _ => imported.rejected.push(Refused::FalseName(name)),
                    }
                }
                None => imported.rejected.push(Refused::FalseName(name)),
            }
            let _ = std::fs::remove_file(file.path());
        }
        let _ = std::fs::remove_dir(dir.path());
    }
    let pack_dir = quarantine.join("pack");
    if !is_real_dir(&pack_dir) {
        remove_entry(&pack_dir);
    } else if let Ok(packs) = std::fs::read_dir(&pack_dir) {
        let repo_dir = repo.workdir().unwrap_or(repo.common_dir());
        for entry in packs.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if is_whiteout(&path) {
                remove_entry(&path);
                continue;
            }
            if !entry.file_type().is_ok_and(|t| t.is_file()) {
                imported.rejected.push(Refused::FalseName(name));
                remove_entry(&path);
                continue;
            }
            if path.extension().is_some_and(|e| e == "pack") {
                match import_pack(repo_dir, &path, &name, repo.object_hash(), limits) {
                    Ok(()) => imported.objects += 1,
                    Err(refused) => imported.rejected.push(refused),
                }
            }
            let _ = std::fs::remove_file(&path);
        }
    }
    Ok(imported)
}

/// Copies the loose objects of a live attempt's `quarantine` into `store` (a loose object
/// folder of the lead's, outside the run's fence) without taking anything out of the
/// quarantine, for a push of the attempt's commits while it runs (the repository's own
/// store gets nothing: that is the import's, when the attempt ends). The worker's
/// processes still run, so nothing is trusted as it looks: each file is opened without
/// following a symlink and without blocking (a FIFO, a device, a folder is passed over),
/// read no further than the size limit, inflated no further than it, and kept only when
/// its content hashes to its name. Objects `lead` or `store` already has are passed over;
/// packs are left for the import. Returns how many objects were copied.
pub fn copy_live(
    lead: &gix::Repository,
    quarantine: &Path,
    store: &Path,
    limits: Limits,
) -> Result<usize> {
    use gix::objs::Write as _;
    let hash = lead.object_hash();
    let target = gix::odb::loose::Store::at(store, hash);
    let mut copied = 0;
    if !is_real_dir(quarantine) {
        return Ok(0);
    }
    let Ok(fanout) = std::fs::read_dir(quarantine) else {
        return Ok(0);
    };
    std::fs::create_dir_all(store)?;
    for dir in fanout.flatten() {
        let prefix = dir.file_name().to_string_lossy().into_owned();
        let is_dir = dir.file_type().is_ok_and(|t| t.is_dir());
        if prefix.len() != 2 || !prefix.bytes().all(|b| b.is_ascii_hexdigit()) || !is_dir {
            continue;
        }
        let Ok(files) = std::fs::read_dir(dir.path()) else {
            continue;
        };
        for file in files.flatten() {
            if Instant::now() > limits.until {
                return Ok(copied);
            }
            let name = format!("{prefix}{}", file.file_name().to_string_lossy());
            let Ok(id) = gix::ObjectId::from_hex(name.as_bytes()) else {
                continue;
            };
            if lead.has_object(id) || target.contains(&id) {
                continue;
            }
            let Some((kind, data)) = read_loose(&file.path(), limits.max_object_size) else {
                continue;
            };
            let named = gix::objs::compute_hash(hash, kind, &data).ok();
            if named == Some(id) && target.write_buf(kind, &data).is_ok() {
                copied += 1;
            }
        }
    }
    Ok(copied)
}

/// A loose object file read with care (see [`copy_live`]): its kind and content, when it
/// is a regular file that inflates to a whole object no bigger than `max_size`.
fn read_loose(path: &Path, max_size: u64) -> Option<(gix::objs::Kind, Vec<u8>)> {
    use gix::zlib::{Decompress, FlushDecompress, Status};
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    let meta = file.metadata().ok()?;
    // A deflated object is at most a little bigger than the object itself.
    let cap = max_size.saturating_add(1024);
    if !meta.is_file() || meta.len() > cap {
        return None;
    }
    let mut raw = Vec::new();
    file.take(cap).read_to_end(&mut raw).ok()?;
    // The header (`<kind> <size>\0`) comes first, then the content.
    let most = usize::try_from(max_size.saturating_add(64)).ok()?;
    let mut inflate = Decompress::new();
    let mut out = Vec::new();
    let mut scratch = vec![0u8; 64 << 10];
    let mut input = raw.as_slice();
    loop {
        let (before_in, before_out) = (inflate.total_in(), inflate.total_out());
        let status = inflate
            .decompress(input, &mut scratch, FlushDecompress::None)
            .ok()?;
        let consumed = usize::try_from(inflate.total_in() - before_in).ok()?;
        let produced = usize::try_from(inflate.total_out() - before_out).ok()?;
        input = input.get(consumed..)?;
        out.extend_from_slice(scratch.get(..produced)?);
        if out.len() > most {
            return None;
        }
        match status {
            Status::StreamEnd => break,
            Status::Ok if consumed > 0 || produced > 0 => {}
            _ => return None,
        }
    }
    let (kind, size, header) = gix::objs::decode::loose_header(&out).ok()?;
    if size > max_size || out.len().checked_sub(header)? as u64 != size {
        return None;
    }
    Some((kind, out.split_off(header)))
}

/// Brings the pack at `path` (named `name`) into the store through `git index-pack`,
/// within `limits`: a pack file bigger than the size limit, or one that holds an object
/// bigger than it, is refused before `index-pack` sees it, and `index-pack` is stopped
/// at `limits.until`.
fn import_pack(
    repo_dir: &Path,
    path: &Path,
    name: &str,
    hash: gix::hash::Kind,
    limits: Limits,
) -> Result<(), Refused> {
    let unreadable = || Refused::FalseName(name.to_string());
    let late = || Refused::OutOfTime(name.to_string());
    let size = std::fs::symlink_metadata(path)
        .map_err(|_| unreadable())?
        .len();
    if size > limits.max_object_size {
        return Err(Refused::OverCap {
            name: name.to_string(),
            size,
        });
    }
    // Mapped, not read: the worker's processes are gone, nothing changes it now.
    let mapped = gix::odb::pack::data::File::at(path, hash).map_err(|_| unreadable())?;
    let data = mapped
        .entry_slice(0..mapped.data_len() as u64)
        .ok_or_else(unreadable)?;
    match object_over(data, hash, limits) {
        Ok(None) => {}
        Ok(Some(size)) => {
            return Err(Refused::OverCap {
                name: format!("an object of {name}"),
                size,
            });
        }
        Err(PackScan::Unreadable) => return Err(unreadable()),
        Err(PackScan::Late) => return Err(late()),
    }
    let pack = std::fs::File::open(path).map_err(|_| unreadable())?;
    let left = limits.until.saturating_duration_since(Instant::now());
    match GitRunner::new(repo_dir).within(
        &["index-pack", "--stdin", "--fix-thin"],
        Some(pack),
        left,
    ) {
        Ok(Some(done)) if done.success => Ok(()),
        Ok(None) => Err(late()),
        _ => Err(unreadable()),
    }
}

/// Why a pack could not be scanned.
enum PackScan {
    Unreadable,
    Late,
}

/// The size of the first object in the pack `data` bigger than `limits.max_object_size`
/// (a delta's own data, or the object it makes), if any. Each entry's header is read,
/// and its data inflated only to find where it ends — never beyond the size it declares,
/// which is under the limit.
fn object_over(
    data: &[u8],
    hash: gix::hash::Kind,
    limits: Limits,
) -> Result<Option<u64>, PackScan> {
    use gix::odb::pack::data::{Entry, header};
    use gix::zlib::{Decompress, FlushDecompress, Status};
    let head: &[u8; header::SIZE] = data
        .get(..header::SIZE)
        .and_then(|h| h.try_into().ok())
        .ok_or(PackScan::Unreadable)?;
    let (_, count) = header::decode(head).map_err(|_| PackScan::Unreadable)?;
    let mut offset = header::SIZE;
    let mut scratch = vec![0u8; 64 << 10];
    let mut inflate = Decompress::new();
    for _ in 0..count {
        let entry = Entry::from_bytes(
            data.get(offset..).ok_or(PackScan::Unreadable)?,
            offset as u64,
            hash,
        )
        .map_err(|_| PackScan::Unreadable)?;
        if entry.decompressed_size > limits.max_object_size {
            return Ok(Some(entry.decompressed_size));
        }
        let mut input = usize::try_from(entry.data_offset)
            .ok()
            .and_then(|at| data.get(at..))
            .ok_or(PackScan::Unreadable)?;
        inflate.reset();
        let (mut read, mut made) = (0u64, 0u64);
        // The first bytes of a delta: the sizes of its base and of what it makes.
        let mut delta_head = Vec::new();
        loop {
            if Instant::now() > limits.until {
                return Err(PackScan::Late);
            }
            let (before_in, before_out) = (inflate.total_in(), inflate.total_out());
            let status = inflate
                .decompress(input, &mut scratch, FlushDecompress::None)
                .map_err(|_| PackScan::Unreadable)?;
            let consumed = (inflate.total_in() - before_in) as usize;
            let produced = (inflate.total_out() - before_out) as usize;
            input = &input[consumed..];
            read += consumed as u64;
            made += produced as u64;
            if made > entry.decompressed_size {
                return Err(PackScan::Unreadable);
            }
            if entry.header.is_delta() && delta_head.len() < 20 {
                let take = produced.min(20 - delta_head.len());
                delta_head.extend_from_slice(&scratch[..take]);
            }
            match status {
                Status::StreamEnd => break,
                Status::Ok if consumed > 0 || produced > 0 => {}
                _ => return Err(PackScan::Unreadable),
            }
        }
        if entry.header.is_delta() {
            let mut at = 0;
            let mut varint = || {
                let (mut value, mut shift) = (0u64, 0);
                loop {
                    let byte = *delta_head.get(at)?;
                    at += 1;
                    value |= u64::from(byte & 0x7f).checked_shl(shift)?;
                    shift += 7;
                    if byte & 0x80 == 0 || shift > 63 {
                        return Some(value);
                    }
                }
            };
            let (_base, result) = (varint(), varint());
            match result {
                Some(result) if result > limits.max_object_size => return Ok(Some(result)),
                Some(_) => {}
                None => return Err(PackScan::Unreadable),
            }
        }
        offset = usize::try_from(entry.data_offset.saturating_add(read))
            .map_err(|_| PackScan::Unreadable)?;
    }
    Ok(None)
}

/// Whether `path` is a folder itself (not a symlink to one).
/// Whether `path` is overlayfs's mark of an entry its lower layer has and its view took
/// away (a character device 0:0), as a git view's quarantine holds them.
pub(crate) fn is_whiteout(path: &Path) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_char_device() && m.rdev() == 0)
}

fn is_real_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

/// Removes an entry of the quarantine without following it: a symlink goes, not what it
/// points at. Best effort: what stays is never read again.
fn remove_entry(path: &Path) {
    let _ = crate::sys::fs::remove_entry(path);
}

/// The id git gives a blob holding `bytes` (SHA-1), without writing it.
pub fn blob_id(bytes: &[u8]) -> Result<gix::ObjectId> {
    Ok(gix::objs::compute_hash(
        gix::hash::Kind::Sha1,
        gix::objs::Kind::Blob,
        bytes,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `data` as a zlib stream of one stored block.
    fn zlib(data: &[u8]) -> Vec<u8> {
        let len = u16::try_from(data.len()).unwrap();
        let mut out = vec![0x78, 0x01, 0x01];
        out.extend(len.to_le_bytes());
        out.extend((!len).to_le_bytes());
        out.extend(data);
        let (mut a, mut b) = (1u32, 0u32);
        for &byte in data {
            a = (a + u32::from(byte)) % 65521;
            b = (b + a) % 65521;
        }
        out.extend(((b << 16) | a).to_be_bytes());
        out
    }

    /// A pack entry's header: its type and the size it declares.
    fn entry_header(kind: u8, size: u64) -> Vec<u8> {
        let mut out = Vec::new();
        let mut byte = (kind << 4) | (size & 0x0f) as u8;
        let mut rest = size >> 4;
        while rest > 0 {
            out.push(byte | 0x80);
            byte = (rest & 0x7f) as u8;
            rest >>= 7;
        }
        out.push(byte);
        out
    }

    /// A size as a delta's header writes it.
    fn varint(mut n: u64) -> Vec<u8> {
        let mut out = Vec::new();
        while n >= 0x80 {
            out.push((n & 0x7f) as u8 | 0x80);
            n >>= 7;
        }
        out.push(n as u8);
        out
    }

    /// A pack of `entries` (already encoded), with a trailer the scan does not read.
    fn pack(entries: &[Vec<u8>]) -> Vec<u8> {
        let mut out = b"PACK".to_vec();
        out.extend(2u32.to_be_bytes());
        out.extend(u32::try_from(entries.len()).unwrap().to_be_bytes());
        for e in entries {
            out.extend(e);
        }
        out.extend([0u8; 20]);
        out
    }

    fn blob(data: &[u8]) -> Vec<u8> {
        let mut out = entry_header(3, data.len() as u64);
        out.extend(zlib(data));
        out
    }

    /// A delta on the entry `distance` bytes back that makes an object of `result` bytes.
    fn delta(distance: u8, base: u64, result: u64) -> Vec<u8> {
        let mut data = varint(base);
        data.extend(varint(result));
        // One copy of the whole base (what it copies does not matter to the scan).
        data.extend([0x90, 0x05]);
        let mut out = entry_header(6, data.len() as u64);
        out.push(distance);
        out.extend(zlib(&data));
        out
    }

    fn limits(max_object_size: u64) -> Limits {
        Limits {
            max_object_size,
            until: Instant::now() + std::time::Duration::from_secs(60),
        }
    }

    fn scan(data: &[u8], limits: Limits) -> Result<Option<u64>, PackScan> {
        object_over(data, gix::hash::Kind::Sha1, limits)
    }

    #[test]
    fn a_pack_under_the_limit_passes_and_a_delta_that_makes_more_is_found() {
        let base = blob(b"hello");
        let distance = u8::try_from(base.len()).unwrap();
        let data = pack(&[base, delta(distance, 5, 5 << 20)]);
        assert!(matches!(scan(&data, limits(10 << 20)), Ok(None)));
        // Small on disk, small as a delta: the object it makes is what counts.
        assert!(matches!(scan(&data, limits(1 << 20)), Ok(Some(n)) if n == 5 << 20));
    }

    #[test]
    fn an_entry_that_declares_more_is_refused_before_it_is_inflated() {
        // Its data is no zlib stream at all: the header alone decides.
        let mut huge = entry_header(3, 30 << 30);
        huge.extend([0xde, 0xad]);
        let data = pack(&[blob(b"small"), huge]);
        assert!(matches!(scan(&data, limits(1 << 20)), Ok(Some(n)) if n == 30 << 30));
    }

    #[test]
    fn a_broken_or_late_pack_is_not_scanned_through() {
        let data = pack(&[blob(b"hello")]);
        assert!(matches!(
            scan(&data[..data.len() - 25], limits(1 << 20)),
            Err(PackScan::Unreadable)
        ));
        // An entry that inflates to more than it declares.
        let mut liar = entry_header(3, 2);
        liar.extend(zlib(b"more than two"));
        assert!(matches!(
            scan(&pack(&[liar]), limits(1 << 20)),
            Err(PackScan::Unreadable)
        ));
        let past = Limits {
            max_object_size: 1 << 20,
            until: Instant::now() - std::time::Duration::from_secs(1),
        };
        assert!(matches!(scan(&data, past), Err(PackScan::Late)));
    }
}
