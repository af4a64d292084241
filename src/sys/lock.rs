//! File locks for the short check-then-act sections that must not interleave across
//! processes: a lock on a file that stays, which the kernel releases when its holder
//! dies, so no lock is ever stale.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Held until dropped.
pub struct Lock(std::fs::File);

/// Why a lock was not taken.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Another process held it for the whole wait.
    #[error("{} is held by another git-crew process", .path.display())]
    Held { path: PathBuf },
    /// The folder of the lock cannot be made.
    #[error(transparent)]
    Folder(std::io::Error),
    /// The lock file cannot be opened or locked (`what` says which, and names it).
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
}

impl Lock {
    /// Takes `<dir>/<name>.lock`, waiting up to `wait`.
    pub fn take(dir: &Path, name: &str, wait: Duration) -> Result<Lock, LockError> {
        std::fs::create_dir_all(dir).map_err(LockError::Folder)?;
        let path = dir.join(format!("{name}.lock"));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|source| LockError::Io {
                what: format!("cannot open {}", path.display()),
                source,
            })?;
        let start = Instant::now();
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(Lock(file)),
                Err(std::fs::TryLockError::WouldBlock) => {}
                Err(std::fs::TryLockError::Error(source)) => {
                    return Err(LockError::Io {
                        what: format!("cannot lock {}", path.display()),
                        source,
                    });
                }
            }
            if start.elapsed() > wait {
                return Err(LockError::Held { path });
            }
            std::thread::sleep(Duration::from_millis(10));
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
            Err(super::LockError::Held { .. })
        ));
        drop(first);
        assert!(super::Lock::take(dir.path(), "x", Duration::ZERO).is_ok());
    }
}
