//! File locks for the short check-then-act sections that must not interleave across
//! processes: a lock on a file that stays, which the kernel releases when its holder
//! dies, so no lock is ever stale.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Held until dropped.
pub struct Lock(std::fs::File);

/// The wait for a lock ran out: another process holds it.
#[derive(Debug, thiserror::Error)]
#[error("{} is held by another git-crew process", path.display())]
pub struct Held {
    pub path: PathBuf,
}

/// Why a lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum NotTaken {
    /// Its folder cannot be made.
    #[error(transparent)]
    Folder(std::io::Error),
    /// Its file cannot be opened.
    #[error("cannot open {}", path.display())]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The system refused to lock it.
    #[error("cannot lock {}", path.display())]
    Lock {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Another process held it for the whole wait.
    #[error(transparent)]
    Held(Held),
}

impl Lock {
    /// Takes `<dir>/<name>.lock`, waiting up to `wait`.
    pub fn take(dir: &Path, name: &str, wait: Duration) -> Result<Lock, NotTaken> {
        std::fs::create_dir_all(dir).map_err(NotTaken::Folder)?;
        let path = dir.join(format!("{name}.lock"));
        let file = match std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
        {
            Ok(file) => file,
            Err(source) => return Err(NotTaken::Open { path, source }),
        };
        Lock::hold(file, path, wait)
    }

    /// Takes `<dir>/<name>.lock` as [`Lock::take`] does when its file is there; `None`
    /// when it is not (no process ever took it), and then nothing is made: a look that
    /// must change nothing takes its locks this way.
    pub fn take_if_there(dir: &Path, name: &str, wait: Duration) -> Result<Option<Lock>, NotTaken> {
        let path = dir.join(format!("{name}.lock"));
        let file = match std::fs::OpenOptions::new().read(true).open(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => return Err(NotTaken::Open { path, source }),
        };
        Lock::hold(file, path, wait).map(Some)
    }

    /// Locks the open lock file `file` at `path`, waiting up to `wait`.
    fn hold(file: std::fs::File, path: PathBuf, wait: Duration) -> Result<Lock, NotTaken> {
        let start = Instant::now();
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(Lock(file)),
                Err(std::fs::TryLockError::WouldBlock) => {}
                Err(std::fs::TryLockError::Error(source)) => {
                    return Err(NotTaken::Lock { path, source });
                }
            }
            if start.elapsed() > wait {
                return Err(NotTaken::Held(Held { path }));
            }
            // Short: a turn taken many times in a row (dispatches started together)
            // passes from one holder to the next with little idle time between.
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        // Closing the file would release it too; unlocking says so.
        let _ = self.0.unlock();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    #[test]
    fn a_held_lock_refuses_a_second_taker_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let first = super::Lock::take(dir.path(), "x", Duration::ZERO).unwrap();
        assert!(matches!(
            super::Lock::take(dir.path(), "x", Duration::from_millis(30)),
            Err(super::NotTaken::Held(_))
        ));
        drop(first);
        assert!(super::Lock::take(dir.path(), "x", Duration::ZERO).is_ok());
    }
}
