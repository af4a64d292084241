//! Objects a fenced run wrote into its quarantine (`GIT_OBJECT_DIRECTORY`), brought into
//! the repository's store. Each is hashed again on the way in: an object whose content
//! does not match its name is left out and named, so a worker can neither corrupt an
//! object the repository has nor smuggle one in under a false name.

use std::path::Path;

use anyhow::Context;

use super::run::GitRunner;

/// What an import did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Imported {
    pub objects: usize,
    /// Objects whose content does not hash to their name (or that could not be read).
    pub rejected: Vec<String>,
}

/// Moves every object of `quarantine` into `repo`'s store: loose objects are read and
/// written again (so their ids are computed here), packs go through `git index-pack`,
/// which computes every id itself. The quarantine is emptied.
pub fn import(repo: &gix::Repository, quarantine: &Path) -> anyhow::Result<Imported> {
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
        let is_dir = dir.file_type().is_ok_and(|t| t.is_dir());
        if prefix.len() != 2 || !prefix.bytes().all(|b| b.is_ascii_hexdigit()) || !is_dir {
            imported.rejected.push(prefix);
            remove_entry(&dir.path());
            continue;
        }
        for file in std::fs::read_dir(dir.path())?.flatten() {
            let name = format!("{prefix}{}", file.file_name().to_string_lossy());
            let is_file = file.file_type().is_ok_and(|t| t.is_file());
            if is_file && file.file_name().to_string_lossy().starts_with("tmp_") {
                // What a git killed half-way through writing an object leaves: nothing.
                let _ = std::fs::remove_file(file.path());
                continue;
            }
            if !is_file {
                imported.rejected.push(name);
                remove_entry(&file.path());
                continue;
            }
            let written = gix::ObjectId::from_hex(name.as_bytes())
                .ok()
                .and_then(|id| {
                    let data = store.try_find(&id, &mut buf).ok()??;
                    let named =
                        gix::objs::compute_hash(repo.object_hash(), data.kind, data.data).ok()?;
                    if named == id && !repo.has_object(id) {
                        use gix::objs::Write as _;
                        repo.objects.write_buf(data.kind, data.data).ok()?;
                    }
                    Some((id, named))
                });
            match written {
                Some((id, new)) if id == new => imported.objects += 1,
                _ => imported.rejected.push(name),
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
            if !entry.file_type().is_ok_and(|t| t.is_file()) {
                imported
                    .rejected
                    .push(entry.file_name().to_string_lossy().into_owned());
                remove_entry(&path);
                continue;
            }
            if path.extension().is_some_and(|e| e == "pack") {
                let pack = std::fs::File::open(&path)
                    .with_context(|| format!("cannot read {}", path.display()))?;
                let indexed = GitRunner::new(repo_dir)
                    .output_with_stdin(&["index-pack", "--stdin", "--fix-thin"], pack);
                match indexed {
                    Ok(_) => imported.objects += 1,
                    Err(_) => imported.rejected.push(
                        path.file_name()
                            .unwrap_or_default()
                            .to_string_lossy()
                            .into_owned(),
                    ),
                }
            }
            let _ = std::fs::remove_file(&path);
        }
    }
    Ok(imported)
}

/// Whether `path` is a folder itself (not a symlink to one).
fn is_real_dir(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir())
}

/// Removes an entry of the quarantine without following it: a symlink goes, not what it
/// points at.
fn remove_entry(path: &Path) {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => {
            let _ = std::fs::remove_dir_all(path);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(path);
        }
        Err(_) => {}
    }
}

/// The id git gives a blob holding `bytes` (SHA-1), without writing it.
pub fn blob_id(bytes: &[u8]) -> anyhow::Result<gix::ObjectId> {
    Ok(gix::objs::compute_hash(
        gix::hash::Kind::Sha1,
        gix::objs::Kind::Blob,
        bytes,
    )?)
}
