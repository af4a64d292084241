//! Git LFS objects a fenced run wrote into its own LFS store (`lfs.storage`, see
//! `run::fence`), brought into the repository's (`<git-common-dir>/lfs/objects`). A
//! lead-side checkout reads an LFS object by its name and never hashes it again, so each
//! is hashed again on the way in, as git objects are (`objects`): a file whose SHA-256 is
//! not its name, one that is not a regular file, one that lies where git-lfs puts no
//! object, or one over the run's `fences.max_file_size` is left out and named. Nothing
//! in the store is followed: the run's processes could have made any entry a symlink. In
//! a git view the store is the upper layer of the repository's LFS store (`sys::ns`), so
//! it may also hold overlayfs's marks of objects the view took away: those are dropped.

use super::error::Result;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use sha2::Digest;

use super::objects::{Imported, Limits};
use crate::core::oversize::Refused;

/// The repository's LFS object store.
pub fn objects_dir(common_dir: &Path) -> PathBuf {
    common_dir.join("lfs").join("objects")
}

/// Whether `name` is `len` lowercase hexadecimal digits, as git-lfs names its folders
/// and objects.
fn is_hex(name: &str, len: usize) -> bool {
    name.len() == len
        && name
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Moves every object of the run's LFS store `store` (`<store>/objects/<aa>/<bb>/<oid>`)
/// into the repository whose common dir is `common_dir`, each hashed again, within
/// `limits` (a file's size is looked at before anything of it is read). The store's
/// objects folder is emptied; git-lfs's temp and log folders beside it are left alone.
pub fn import(store: &Path, common_dir: &Path, limits: Limits) -> Result<Imported> {
    let mut imported = Imported::default();
    let objects = store.join("objects");
    match std::fs::symlink_metadata(&objects) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            imported
                .rejected
                .push(Refused::FalseName("the LFS store's objects folder".into()));
            remove_entry(&objects);
            return Ok(imported);
        }
        Err(_) => return Ok(imported),
    }
    // An overlayfs mark of what the view took away is dropped; anything else that is
    // not where git-lfs puts an object is refused.
    let refuse = |imported: &mut Imported, rel: &str, path: &Path| {
        if !super::objects::is_whiteout(path) {
            imported
                .rejected
                .push(Refused::FalseName(format!("LFS object {rel}")));
        }
        remove_entry(path);
    };
    for first in std::fs::read_dir(&objects)?.flatten() {
        let a = first.file_name().to_string_lossy().into_owned();
        if !is_hex(&a, 2) || !first.file_type().is_ok_and(|t| t.is_dir()) {
            refuse(&mut imported, &a, &first.path());
            continue;
        }
        for second in std::fs::read_dir(first.path())?.flatten() {
            let b = second.file_name().to_string_lossy().into_owned();
            let rel = format!("{a}/{b}");
            if !is_hex(&b, 2) || !second.file_type().is_ok_and(|t| t.is_dir()) {
                refuse(&mut imported, &rel, &second.path());
                continue;
            }
            for entry in std::fs::read_dir(second.path())?.flatten() {
                let oid = entry.file_name().to_string_lossy().into_owned();
                let path = entry.path();
                let regular = entry.file_type().is_ok_and(|t| t.is_file());
                if !is_hex(&oid, 64) || !oid.starts_with(&format!("{a}{b}")) {
                    refuse(&mut imported, &format!("{rel}/{oid}"), &path);
                    continue;
                }
                if !regular {
                    refuse(&mut imported, &oid, &path);
                    continue;
                }
                match import_one(&objects, &format!("{rel}/{oid}"), &oid, common_dir, limits) {
                    Ok(()) => imported.objects += 1,
                    Err(refused) => imported.rejected.push(refused),
                }
                remove_entry(&path);
            }
            let _ = std::fs::remove_dir(second.path());
        }
        let _ = std::fs::remove_dir(first.path());
    }
    Ok(imported)
}

/// Brings the object `rel` of the store's objects folder `objects`, named `oid`, into
/// the repository's store, unless the repository has it already; either way its content
/// is hashed, and one that is not what its name says is refused.
fn import_one(
    objects: &Path,
    rel: &str,
    oid: &str,
    common_dir: &Path,
    limits: Limits,
) -> Result<(), Refused> {
    let name = || format!("LFS object {oid}");
    if Instant::now() > limits.until {
        return Err(Refused::OutOfTime(name()));
    }
    let (file, meta) = crate::sys::fs::open_beneath(objects, Path::new(rel))
        .map_err(|_| Refused::FalseName(name()))?;
    let size = meta.len();
    if size > limits.max_object_size {
        return Err(Refused::OverCap { name: name(), size });
    }
    let target = objects_dir(common_dir)
        .join(&rel[..2])
        .join(&rel[3..5])
        .join(oid);
    let have = std::fs::symlink_metadata(&target).is_ok_and(|m| m.is_file() && m.len() == size);
    // Copied into a temp file of git-lfs's own temp folder as it is hashed, then renamed
    // into place once the hash is its name; only hashed when the repository has it.
    let mut copy = if have {
        None
    } else {
        let tmp = common_dir.join("lfs").join("tmp");
        std::fs::create_dir_all(&tmp)
            .ok()
            .and_then(|()| tempfile::NamedTempFile::new_in(&tmp).ok())
            .map(Some)
            .ok_or_else(|| Refused::FalseName(name()))?
    };
    let mut hash = sha2::Sha256::new();
    let mut read = 0u64;
    let mut buf = vec![0u8; 256 << 10];
    // At most one byte past the size it claimed: a file that grows is cut and refused.
    let mut input = file.take(size.saturating_add(1));
    loop {
        if Instant::now() > limits.until {
            return Err(Refused::OutOfTime(name()));
        }
        let n = input
            .read(&mut buf)
            .map_err(|_| Refused::FalseName(name()))?;
        if n == 0 {
            break;
        }
        read += n as u64;
        if read > limits.max_object_size {
            return Err(Refused::OverCap {
                name: name(),
                size: read,
            });
        }
        hash.update(&buf[..n]);
        if let Some(copy) = &mut copy {
            copy.write_all(&buf[..n])
                .map_err(|_| Refused::FalseName(name()))?;
        }
    }
    let named: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    if named != oid || read != size {
        return Err(Refused::FalseName(name()));
    }
    if let Some(copy) = copy {
        use std::os::unix::fs::PermissionsExt;
        let placed = copy
            .as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))
            .ok()
            .and_then(|()| target.parent().map(std::fs::create_dir_all))
            .and_then(Result::ok)
            .and_then(|()| copy.persist(&target).ok());
        if placed.is_none() {
            return Err(Refused::FalseName(name()));
        }
    }
    Ok(())
}

/// Removes an entry of the store without following it (best effort).
fn remove_entry(path: &Path) {
    let _ = crate::sys::fs::remove_entry(path);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha256(bytes: &[u8]) -> String {
        sha2::Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    fn put(store: &Path, bytes: &[u8], name: Option<&str>) -> String {
        let oid = name.map_or_else(|| sha256(bytes), str::to_string);
        let dir = store.join("objects").join(&oid[..2]).join(&oid[2..4]);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(&oid), bytes).unwrap();
        oid
    }

    fn limits(max_object_size: u64) -> Limits {
        Limits {
            max_object_size,
            until: Instant::now() + std::time::Duration::from_secs(60),
        }
    }

    #[test]
    fn objects_whose_content_is_their_name_come_in_and_the_rest_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let (store, common) = (dir.path().join("store"), dir.path().join("common"));
        let good = put(&store, b"real content", None);
        let false_name = put(&store, b"not what it says", Some(&sha256(b"other")));
        let big = put(&store, &[7u8; 100], None);
        // A symlink to a file of the lead's, named as that file's hash.
        let secret = dir.path().join("secret");
        std::fs::write(&secret, b"secret").unwrap();
        let linked = sha256(b"secret");
        let at = store.join("objects").join(&linked[..2]).join(&linked[2..4]);
        std::fs::create_dir_all(&at).unwrap();
        std::os::unix::fs::symlink(&secret, at.join(&linked)).unwrap();
        // Something where git-lfs puts no object.
        std::fs::write(store.join("objects").join("stray"), b"x").unwrap();
        std::fs::create_dir_all(store.join("tmp")).unwrap();
        std::fs::write(store.join("tmp").join("123"), b"half").unwrap();
        let imported = import(&store, &common, limits(50)).unwrap();
        assert_eq!(imported.objects, 1);
        let mut rejected = imported.rejected.clone();
        rejected.sort_by_key(|r| format!("{r:?}"));
        let mut want = vec![
            Refused::FalseName(format!("LFS object {false_name}")),
            Refused::FalseName(format!("LFS object {linked}")),
            Refused::FalseName("LFS object stray".into()),
            Refused::OverCap {
                name: format!("LFS object {big}"),
                size: 100,
            },
        ];
        want.sort_by_key(|r| format!("{r:?}"));
        assert_eq!(rejected, want);
        let placed = objects_dir(&common)
            .join(&good[..2])
            .join(&good[2..4])
            .join(&good);
        assert_eq!(std::fs::read(placed).unwrap(), b"real content");
        for oid in [&false_name, &big, &linked] {
            assert!(
                !objects_dir(&common)
                    .join(&oid[..2])
                    .join(&oid[2..4])
                    .join(oid)
                    .exists()
            );
        }
        // The store's objects are gone, the lead's file is untouched, git-lfs's temp
        // folder is left alone.
        assert_eq!(std::fs::read_dir(store.join("objects")).unwrap().count(), 0);
        assert_eq!(std::fs::read(&secret).unwrap(), b"secret");
        assert!(store.join("tmp").join("123").exists());
        // An object the repository has already is hashed, not copied again.
        put(&store, b"real content", None);
        let again = import(&store, &common, limits(50)).unwrap();
        assert_eq!((again.objects, again.rejected), (1, vec![]));
    }

    #[test]
    fn a_store_whose_objects_folder_is_a_symlink_is_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let (store, common) = (dir.path().join("store"), dir.path().join("common"));
        let elsewhere = dir.path().join("elsewhere");
        put(&elsewhere, b"content", None);
        std::fs::create_dir_all(&store).unwrap();
        std::os::unix::fs::symlink(elsewhere.join("objects"), store.join("objects")).unwrap();
        let imported = import(&store, &common, limits(50)).unwrap();
        assert_eq!(imported.objects, 0);
        assert_eq!(imported.rejected.len(), 1);
        assert!(!common.exists());
        assert!(elsewhere.join("objects").exists());
    }

    #[test]
    fn nothing_is_taken_in_past_the_time() {
        let dir = tempfile::tempdir().unwrap();
        let (store, common) = (dir.path().join("store"), dir.path().join("common"));
        let oid = put(&store, b"late", None);
        let late = Limits {
            max_object_size: 50,
            until: Instant::now() - std::time::Duration::from_secs(1),
        };
        let imported = import(&store, &common, late).unwrap();
        assert_eq!(
            imported.rejected,
            vec![Refused::OutOfTime(format!("LFS object {oid}"))]
        );
    }
}
