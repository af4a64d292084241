//! Files written so a reader never sees half of one.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use anyhow::Context;

/// Writes a file through a temporary sibling and a rename, so a reader never sees half.
pub fn write_atomic(path: &Path, text: &str, mode: u32) -> anyhow::Result<()> {
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

/// The text of `path` when it is a regular file, read without following a symlink or
/// waiting on a FIFO, and at most `max` bytes of it (what lies past them is left out):
/// for files another process writes, which may be anything.
pub fn read_regular_capped(path: &Path, max: u64) -> Option<String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    file.take(max).read_to_string(&mut text).ok()?;
    Some(text)
}

/// Symlinks are never followed, nor is `..`: a path resolves beneath its root or not at all.
fn strict() -> rustix::fs::ResolveFlags {
    use rustix::fs::ResolveFlags;
    ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS
}

/// Opens folder `rel` beneath `root`, making it and the folders on the way, never
/// following a symlink.
fn dir_beneath(root: &Path, rel: &Path) -> anyhow::Result<std::os::fd::OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    let mut dir = rustix::fs::open(
        root,
        OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::RDONLY,
        Mode::empty(),
    )
    .with_context(|| format!("cannot open {}", root.display()))?;
    for part in rel.components() {
        let std::path::Component::Normal(part) = part else {
            anyhow::bail!("{} is not a plain relative path", rel.display());
        };
        match rustix::fs::mkdirat(&dir, part, Mode::from_raw_mode(0o700)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => anyhow::bail!("cannot create {}: {e}", root.join(rel).display()),
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

/// Makes folder `rel` beneath `root` and the folders on the way, never following a
/// symlink out of `root`.
pub fn mkdirs_beneath(root: &Path, rel: &Path) -> anyhow::Result<()> {
    dir_beneath(root, rel).map(drop)
}

/// Writes `bytes` to `rel` beneath `root`, making the folders on the way, without ever
/// following a symlink or leaving `root`, and replacing (never writing through) whatever
/// is there: for files git-crew writes into a folder a worker can change (its home),
/// where any entry may be a symlink to, or a hard link of, a file of the lead's.
pub fn write_beneath(root: &Path, rel: &Path, bytes: &[u8]) -> anyhow::Result<()> {
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

#[cfg(test)]
mod tests {
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
}
