//! Watching folders for entries that change, through the kernel (inotify): a reader
//! blocks until an entry of a watched folder is created, written, renamed or removed, and
//! is told which — no polling of the disk. Not recursive: each folder is added by name.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::mem::MaybeUninit;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fd::OwnedFd;
use rustix::fs::inotify::{self, CreateFlags, ReadFlags, WatchFlags};

/// An entry of a watched folder that changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    /// The folder watched.
    pub folder: PathBuf,
    /// The entry's name in it.
    pub name: String,
}

/// What a read of the watcher found.
#[derive(Debug, Default)]
pub struct Events {
    pub changed: Vec<Changed>,
    /// The kernel's queue overflowed: events were lost, look at everything again.
    pub overflowed: bool,
}

/// The folders watched and the kernel object telling of their changes.
pub struct Watcher {
    fd: OwnedFd,
    folders: HashMap<i32, PathBuf>,
}

impl Watcher {
    /// A watcher of no folder yet.
    pub fn new() -> std::io::Result<Watcher> {
        let fd = inotify::init(CreateFlags::CLOEXEC)?;
        Ok(Watcher {
            fd,
            folders: HashMap::new(),
        })
    }

    /// Watches `folder`'s entries: created, written and closed, moved in or out, removed.
    pub fn add(&mut self, folder: &Path) -> std::io::Result<()> {
        if self.folders.values().any(|f| f == folder) {
            return Ok(());
        }
        let flags = WatchFlags::CREATE
            | WatchFlags::CLOSE_WRITE
            | WatchFlags::MOVED_TO
            | WatchFlags::MOVED_FROM
            | WatchFlags::DELETE
            | WatchFlags::ONLYDIR;
        let wd = inotify::add_watch(&self.fd, folder, flags)?;
        self.folders.insert(wd, folder.to_path_buf());
        Ok(())
    }

    /// Whether `folder` is watched.
    pub fn watches(&self, folder: &Path) -> bool {
        self.folders.values().any(|f| f == folder)
    }

    /// Blocks until something changes, then returns every event the kernel has queued.
    pub fn read(&mut self) -> std::io::Result<Events> {
        let mut buf = [MaybeUninit::<u8>::uninit(); 8192];
        let mut reader = inotify::Reader::new(&self.fd, &mut buf);
        let mut events = Events::default();
        loop {
            let event = reader.next()?;
            let flags = event.events();
            if flags.contains(ReadFlags::QUEUE_OVERFLOW) {
                events.overflowed = true;
            } else if flags.contains(ReadFlags::IGNORED) {
                // The folder itself went away.
                self.folders.remove(&event.wd());
            } else if let (Some(folder), Some(name)) =
                (self.folders.get(&event.wd()), event.file_name())
            {
                let name = OsStr::from_bytes(name.to_bytes()).to_string_lossy();
                events.changed.push(Changed {
                    folder: folder.clone(),
                    name: name.into_owned(),
                });
            }
            if reader.is_buffer_empty() {
                return Ok(events);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_renamed_into_a_watched_folder_is_told_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let mut watcher = Watcher::new().unwrap();
        watcher.add(dir.path()).unwrap();
        assert!(watcher.watches(dir.path()));
        std::fs::write(dir.path().join(".tmp"), "x").unwrap();
        std::fs::rename(dir.path().join(".tmp"), dir.path().join("a.json")).unwrap();
        let mut seen = Vec::new();
        while !seen.iter().any(|c: &Changed| c.name == "a.json") {
            seen.extend(watcher.read().unwrap().changed);
        }
        assert!(seen.iter().all(|c| c.folder == dir.path()));
        std::fs::remove_file(dir.path().join("a.json")).unwrap();
        let events = watcher.read().unwrap();
        assert_eq!(events.changed.last().unwrap().name, "a.json");
    }
}
