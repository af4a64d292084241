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
