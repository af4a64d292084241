//! Files written so a reader never sees half of one, and read in place (mapped).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::error::{Context, Result};

/// Writes a file through a temporary sibling and a rename, so a reader never sees half.
pub fn write_atomic(path: &Path, text: &str, mode: u32) -> Result<()> {
    let dir = path.parent().context("a file path has a parent")?;
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot create a temporary file in {}", dir.display()))?;
    std::io::Write::write_all(&mut tmp, text.as_bytes())
        .with_context(|| format!("cannot write {}", path.display()))?;
    tmp.as_file()
        .set_permissions(std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("cannot set the mode of {}", path.display()))?;
    tmp.persist(path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Why a file was not read.
#[derive(Debug)]
pub enum Unread {
    /// Nothing is there.
    Missing,
    /// Something other than a regular file is there (the words say what): a directory,
    /// a FIFO, a device, a socket, or a symlink where links are not followed.
    NotRegular(&'static str),
    /// It holds more than the cap: none of it was kept.
    TooLarge { cap: u64 },
    /// It could not be opened or read.
    Failed(std::io::Error),
}

impl std::fmt::Display for Unread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unread::Missing => f.write_str("does not exist"),
            Unread::NotRegular(kind) => write!(f, "is {kind}, not a regular file"),
            Unread::TooLarge { cap } => write!(f, "holds more than {cap} bytes"),
            Unread::Failed(e) => write!(f, "cannot be read: {e}"),
        }
    }
}

/// Whether a read goes through a symlink at the path itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// A path the lead gave: its symlink is followed.
    Follow,
    /// A file another process wrote, which may be anything: a symlink is refused.
    Refuse,
}

/// The bytes of `path`, all of them, when it is a regular file of at most `cap` bytes:
/// read through [`Read::take`](std::io::Read::take) of `cap + 1` bytes, so a file that
/// grows while it is read, or a `/proc` file that claims no size, never costs more. A
/// directory, FIFO, device or socket is refused before anything waits on it; with
/// [`Links::Refuse`], a symlink too (`O_NOFOLLOW`). For the files a worker writes and the
/// supervisor reads (its manifest, session and usage files, a verifier's reward), and
/// for the files a command is given (a prompt, a reply).
pub fn read_capped(path: &Path, cap: u64, links: Links) -> Result<Vec<u8>, Unread> {
    use std::io::Read;
    let (file, len) = open_regular(path, links)?;
    if len > cap {
        return Err(Unread::TooLarge { cap });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(Unread::Failed)?;
    if bytes.len() as u64 > cap {
        return Err(Unread::TooLarge { cap });
    }
    Ok(bytes)
}

/// The first `max` bytes of `path` (what lies past them is left out), opened as
/// [`read_capped`] opens it: for a report that is cut anyway, such as a verifier's.
pub fn read_head(path: &Path, max: u64, links: Links) -> Result<Vec<u8>, Unread> {
    use std::io::Read;
    let (file, _) = open_regular(path, links)?;
    let mut bytes = Vec::new();
    file.take(max)
        .read_to_end(&mut bytes)
        .map_err(Unread::Failed)?;
    Ok(bytes)
}

/// `path` opened for reading when it is a regular file, and the size it claims.
fn open_regular(path: &Path, links: Links) -> Result<(std::fs::File, u64), Unread> {
    use std::os::unix::fs::OpenOptionsExt;
    let missing = |e: &std::io::Error| {
        e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(libc::ENOTDIR)
    };
    let fail = |e: std::io::Error| {
        if missing(&e) {
            Unread::Missing
        } else if links == Links::Refuse && e.raw_os_error() == Some(libc::ELOOP) {
            Unread::NotRegular("a symbolic link")
        } else {
            Unread::Failed(e)
        }
    };
    // What is there is looked at before it is opened: opening a FIFO waits for a writer,
    // and opening a device may do anything.
    let seen = match links {
        Links::Follow => std::fs::metadata(path),
        Links::Refuse => std::fs::symlink_metadata(path),
    }
    .map_err(fail)?;
    regular(&seen)?;
    let mut flags = libc::O_NONBLOCK;
    if links == Links::Refuse {
        flags |= libc::O_NOFOLLOW;
    }
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .map_err(fail)?;
    // What was opened is what is read: it may have been swapped since it was looked at.
    let opened = file.metadata().map_err(Unread::Failed)?;
    regular(&opened)?;
    Ok((file, opened.len()))
}

/// Refuses what is not a regular file, saying what it is.
fn regular(meta: &std::fs::Metadata) -> Result<(), Unread> {
    use std::os::unix::fs::FileTypeExt;
    let kind = meta.file_type();
    let what = if kind.is_file() {
        return Ok(());
    } else if kind.is_dir() {
        "a directory"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "something else"
    };
    Err(Unread::NotRegular(what))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capped_read_takes_regular_files_within_the_cap_and_names_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "12345").unwrap();
        assert_eq!(read_capped(&file, 5, Links::Refuse).unwrap(), b"12345");
        assert_eq!(read_head(&file, 2, Links::Refuse).unwrap(), b"12");
        assert!(matches!(
            read_capped(&file, 4, Links::Refuse),
            Err(Unread::TooLarge { cap: 4 })
        ));
        assert!(matches!(
            read_capped(&dir.path().join("none"), 4, Links::Refuse),
            Err(Unread::Missing)
        ));
        assert!(matches!(
            read_capped(&file.join("below"), 4, Links::Refuse),
            Err(Unread::Missing)
        ));
        assert!(matches!(
            read_capped(dir.path(), 4, Links::Follow),
            Err(Unread::NotRegular("a directory"))
        ));
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(matches!(
            read_capped(&link, 5, Links::Refuse),
            Err(Unread::NotRegular("a symbolic link"))
        ));
        assert_eq!(read_capped(&link, 5, Links::Follow).unwrap(), b"12345");
        // A FIFO nobody writes to is refused at once, never waited on.
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success());
        assert!(matches!(
            read_capped(&fifo, 5, Links::Follow),
            Err(Unread::NotRegular("a FIFO"))
        ));
        assert!(matches!(
            read_capped(Path::new("/dev/zero"), 5, Links::Follow),
            Err(Unread::NotRegular("a character device"))
        ));
        // A /proc file claims no size: the cap still holds.
        assert!(matches!(
            read_capped(Path::new("/proc/self/maps"), 8, Links::Follow),
            Err(Unread::TooLarge { cap: 8 })
        ));
        assert!(matches!(
            read_capped(Path::new("/proc/self/mem"), 8, Links::Follow),
            Err(Unread::Failed(_))
        ));
    }
}

/// Symlinks are never followed, nor is `..`: a path resolves beneath its root or not at all.
fn strict() -> rustix::fs::ResolveFlags {
    use rustix::fs::ResolveFlags;
    ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS
}

/// Opens folder `rel` beneath `root`, making it and the folders on the way (private to
/// the user), never following a symlink.
fn dir_beneath(root: &Path, rel: &Path) -> Result<std::os::fd::OwnedFd> {
    dir_beneath_with(root, rel, 0o700)
}

/// [`dir_beneath`], making the missing folders with `mode` (less the umask).
fn dir_beneath_with(root: &Path, rel: &Path, mode: u32) -> Result<std::os::fd::OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    let mut dir = rustix::fs::open(
        root,
        OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::RDONLY,
        Mode::empty(),
    )
    .with_context(|| format!("cannot open {}", root.display()))?;
    for part in rel.components() {
        let std::path::Component::Normal(part) = part else {
            crate::fault::bail!(
                super::error::Error,
                "{} is not a plain relative path",
                rel.display()
            );
        };
        match rustix::fs::mkdirat(&dir, part, Mode::from_raw_mode(mode)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => crate::fault::bail!(
                super::error::Error,
                "cannot create {}: {e}",
                root.join(rel).display()
            ),
        }
        dir = rustix::fs::openat2(
            &dir,
            part,
            OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::RDONLY,
            Mode::empty(),
            strict(),
        )
        .with_context(|| format!("{} is not a plain folder", root.join(rel).display()))?;
    }
    Ok(dir)
}

/// Deletes everything in the folder `trash` from a detached process (`rm -rf`, a
/// session of its own, no terminal), so the caller does not wait for a tree of files to
/// go; what an earlier one left there (a process killed half-way) goes with it. Waited
/// for from a thread, so a long-lived caller keeps no zombie. Where it cannot start, the
/// entries are deleted here.
pub fn delete_in_background(trash: &Path) {
    let entries: Vec<PathBuf> = std::fs::read_dir(trash)
        .map(|entries| entries.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    if entries.is_empty() {
        return;
    }
    let mut command = std::process::Command::new("rm");
    command
        .args(["-rf", "--"])
        .args(&entries)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    super::process::new_session(&mut command);
    match command.spawn() {
        Ok(mut child) => {
            std::thread::spawn(move || {
                let _ = child.wait();
            });
        }
        Err(_) => {
            for entry in entries {
                let _ = remove_entry(&entry);
            }
        }
    }
}

/// Removes `path` without following it: a symlink goes, not what it points at; a folder
/// goes with what it holds. A missing path is no error.
pub fn remove_entry(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Makes folder `rel` beneath `root` and the folders on the way, never following a
/// symlink out of `root`.
pub fn mkdirs_beneath(root: &Path, rel: &Path) -> Result<()> {
    dir_beneath(root, rel).map(drop)
}

/// Writes `bytes` to `rel` beneath `root`, making the folders on the way, without ever
/// following a symlink or leaving `root`, and replacing (never writing through) whatever
/// is there: for files git-crew writes into a folder a worker can change (its home),
/// where any entry may be a symlink to, or a hard link of, a file of the lead's.
pub fn write_beneath(root: &Path, rel: &Path, bytes: &[u8]) -> Result<()> {
    use rustix::fs::{Mode, OFlags};
    let name = rel.file_name().context("a file path has a name")?;
    let dir = dir_beneath(root, rel.parent().unwrap_or(Path::new("")))?;
    let strict = strict();
    let tmp_name = format!(".crew-seed-{}", std::process::id());
    let _ = rustix::fs::unlinkat(&dir, tmp_name.as_str(), rustix::fs::AtFlags::empty());
    let fd = rustix::fs::openat2(
        &dir,
        tmp_name.as_str(),
        OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::from_raw_mode(0o600),
        strict,
    )
    .with_context(|| format!("cannot write {}", root.join(rel).display()))?;
    let mut file = std::fs::File::from(fd);
    std::io::Write::write_all(&mut file, bytes)
        .with_context(|| format!("cannot write {}", root.join(rel).display()))?;
    drop(file);
    rustix::fs::renameat(&dir, tmp_name.as_str(), &dir, name)
        .with_context(|| format!("cannot write {}", root.join(rel).display()))?;
    Ok(())
}

/// What putting an entry beneath a root came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Put {
    Made,
    /// Something (of any kind, a symlink included) is there already: it was left as it
    /// is and nothing was written.
    Taken,
}

/// Makes a new file `rel` beneath `root` with `mode` and what `from` holds, making the
/// folders on the way (mode 0755 less the umask), without ever following a symlink or
/// leaving `root`, and never over anything already there ([`Put::Taken`]): for files
/// git-crew copies into a checkout whose content a worker may have chosen.
pub fn create_beneath(
    root: &Path,
    rel: &Path,
    from: &mut dyn std::io::Read,
    mode: u32,
) -> Result<Put> {
    use rustix::fs::{Mode, OFlags};
    let name = rel.file_name().context("a file path has a name")?;
    let dir = dir_beneath_with(root, rel.parent().unwrap_or(Path::new("")), 0o755)?;
    let fd = match rustix::fs::openat2(
        &dir,
        name,
        OFlags::CREATE | OFlags::EXCL | OFlags::WRONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW,
        Mode::from_raw_mode(mode & 0o777),
        strict(),
    ) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::EXIST) => return Ok(Put::Taken),
        Err(e) => crate::fault::bail!(
            super::error::Error,
            "cannot create {}: {e}",
            root.join(rel).display()
        ),
    };
    let mut file = std::fs::File::from(fd);
    if let Err(e) = std::io::copy(from, &mut file) {
        drop(file);
        let _ = rustix::fs::unlinkat(&dir, name, rustix::fs::AtFlags::empty());
        crate::fault::bail!(
            super::error::Error,
            "cannot write {}: {e}",
            root.join(rel).display()
        );
    }
    Ok(Put::Made)
}

/// Makes a symlink `rel` to `target` beneath `root`, as [`create_beneath`] makes a file:
/// the folders on the way are never symlinks, and nothing already there is replaced.
pub fn symlink_beneath(root: &Path, rel: &Path, target: &Path) -> Result<Put> {
    let name = rel.file_name().context("a link path has a name")?;
    let dir = dir_beneath_with(root, rel.parent().unwrap_or(Path::new("")), 0o755)?;
    match rustix::fs::symlinkat(target, &dir, name) {
        Ok(()) => Ok(Put::Made),
        Err(rustix::io::Errno::EXIST) => Ok(Put::Taken),
        Err(e) => crate::fault::bail!(
            super::error::Error,
            "cannot create {}: {e}",
            root.join(rel).display()
        ),
    }
}

/// Opens the existing folder `rel` beneath `root`, never through a symlink.
fn existing_dir_beneath(root: &Path, rel: &Path) -> Result<std::os::fd::OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::DIRECTORY | OFlags::CLOEXEC | OFlags::RDONLY;
    let dir = rustix::fs::open(root, flags | OFlags::NOFOLLOW, Mode::empty())
        .with_context(|| format!("cannot open {}", root.display()))?;
    if rel.as_os_str().is_empty() {
        return Ok(dir);
    }
    rustix::fs::openat2(&dir, rel, flags, Mode::empty(), strict())
        .with_context(|| format!("{} is not a plain folder", root.join(rel).display()))
}

/// Opens the regular file `rel` beneath `root` for reading, never through a symlink (the
/// file's own or a folder's on the way) and never outside `root`; with its metadata.
pub fn open_beneath(root: &Path, rel: &Path) -> Result<(std::fs::File, std::fs::Metadata)> {
    use rustix::fs::{Mode, OFlags};
    let name = rel.file_name().context("a file path has a name")?;
    let dir = existing_dir_beneath(root, rel.parent().unwrap_or(Path::new("")))?;
    // Non-blocking: a FIFO put there since it was seen is not waited on.
    let fd = rustix::fs::openat2(
        &dir,
        name,
        OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NONBLOCK,
        Mode::empty(),
        strict(),
    )
    .with_context(|| format!("cannot open {}", root.join(rel).display()))?;
    let file = std::fs::File::from(fd);
    let meta = file.metadata()?;
    if let Err(why) = regular(&meta) {
        crate::fault::bail!(super::error::Error, "{} {why}", root.join(rel).display());
    }
    Ok((file, meta))
}

/// The target of the symlink `rel` beneath `root`, read without following anything.
pub fn read_link_beneath(root: &Path, rel: &Path) -> Result<std::path::PathBuf> {
    use std::os::unix::ffi::OsStringExt;
    let name = rel.file_name().context("a link path has a name")?;
    let dir = existing_dir_beneath(root, rel.parent().unwrap_or(Path::new("")))?;
    let target = rustix::fs::readlinkat(&dir, name, Vec::new())
        .with_context(|| format!("cannot read the link {}", root.join(rel).display()))?;
    Ok(std::ffi::OsString::from_vec(target.into_bytes()).into())
}

#[cfg(test)]
mod beneath_tests {
    use super::*;

    #[test]
    fn a_write_beneath_never_follows_a_symlink_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("home");
        let outside = dir.path().join("lead");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("config"), "lead's").unwrap();
        write_beneath(&root, Path::new(".codex/auth.json"), b"token").unwrap();
        assert_eq!(
            std::fs::read_to_string(root.join(".codex/auth.json")).unwrap(),
            "token"
        );
        // A symlinked file is replaced, not written through.
        std::os::unix::fs::symlink(outside.join("config"), root.join("f")).unwrap();
        write_beneath(&root, Path::new("f"), b"new").unwrap();
        assert_eq!(
            std::fs::read_to_string(outside.join("config")).unwrap(),
            "lead's"
        );
        assert!(
            !std::fs::symlink_metadata(root.join("f"))
                .unwrap()
                .is_symlink()
        );
        // A hard link is replaced too.
        std::fs::hard_link(outside.join("config"), root.join("h")).unwrap();
        write_beneath(&root, Path::new("h"), b"new").unwrap();
        assert_eq!(
            std::fs::read_to_string(outside.join("config")).unwrap(),
            "lead's"
        );
        // A symlinked folder on the way is refused.
        std::os::unix::fs::symlink(&outside, root.join(".claude")).unwrap();
        assert!(write_beneath(&root, Path::new(".claude/x.json"), b"x").is_err());
        assert!(!outside.join("x.json").exists());
    }

    #[test]
    fn a_copy_beneath_never_goes_through_a_symlink_nor_over_anything() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("checkout");
        let outside = dir.path().join("lead");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        let put = |rel: &str, text: &str| {
            create_beneath(&root, Path::new(rel), &mut text.as_bytes(), 0o600)
        };
        assert_eq!(put("config/secrets/key", "KEY").unwrap(), Put::Made);
        assert_eq!(
            read_capped(&root.join("config/secrets/key"), 9, Links::Refuse).unwrap(),
            b"KEY"
        );
        let mode = std::fs::metadata(root.join("config/secrets/key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        // What is there stays: a file, and a dangling link (never written through).
        assert_eq!(put("config/secrets/key", "NEW").unwrap(), Put::Taken);
        assert_eq!(
            read_capped(&root.join("config/secrets/key"), 9, Links::Refuse).unwrap(),
            b"KEY"
        );
        std::os::unix::fs::symlink(outside.join("planted"), root.join(".env")).unwrap();
        assert_eq!(put(".env", "SECRET").unwrap(), Put::Taken);
        assert!(!outside.join("planted").exists());
        // A folder on the way that is a link is refused, absolute or relative.
        std::os::unix::fs::symlink(&outside, root.join("abs")).unwrap();
        std::os::unix::fs::symlink("../lead", root.join("rel")).unwrap();
        assert!(put("abs/x", "x").is_err());
        assert!(put("rel/x", "x").is_err());
        assert!(symlink_beneath(&root, Path::new("abs/l"), Path::new("x")).is_err());
        assert!(std::fs::read_dir(&outside).unwrap().next().is_none());
        // A link is made as it reads, never over anything.
        assert_eq!(
            symlink_beneath(&root, Path::new("a/link"), Path::new("../.env")).unwrap(),
            Put::Made
        );
        assert_eq!(
            std::fs::read_link(root.join("a/link")).unwrap(),
            Path::new("../.env")
        );
        assert_eq!(
            symlink_beneath(&root, Path::new(".env"), Path::new("elsewhere")).unwrap(),
            Put::Taken
        );
        // Reading beneath: a regular file only, never through a link.
        assert!(open_beneath(&root, Path::new("config/secrets/key")).is_ok());
        assert!(open_beneath(&root, Path::new(".env")).is_err());
        assert!(open_beneath(&root, Path::new("rel/anything")).is_err());
        assert!(open_beneath(&root, Path::new("config")).is_err());
        assert_eq!(
            read_link_beneath(&root, Path::new("a/link")).unwrap(),
            Path::new("../.env")
        );
    }
}

/// A file's bytes mapped read-only, for a file that is replaced, never written in place
/// (git's index: git writes `index.lock` and renames it over). Its pages are mapped at
/// once, for a caller that reads it all (one call instead of a fault every few pages).
pub fn map_read_only(file: &std::fs::File) -> std::io::Result<memmap2::Mmap> {
    // SAFETY: the mapping is private and read-only; a file that git replaces by a rename
    // leaves this one's inode as it was. One truncated in place by another program would
    // fault, as with git's own mapping of it.
    unsafe { memmap2::MmapOptions::new().populate().map(file) }
}
