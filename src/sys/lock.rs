//! File locks for the short check-then-act sections that must not interleave across
//! processes: a lock on a file that stays, which the kernel releases when its holder
//! dies, so no lock is ever stale.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context;

/// Held until dropped.
pub struct Lock(std::fs::File);

/// The wait for a lock ran out: another process holds it.
#[derive(Debug, thiserror::Error)]
#[error("{} is held by another git-crew process", path.display())]
pub struct Held {
    pub path: PathBuf,
}

impl Lock {
    /// Takes `<dir>/<name>.lock`, waiting up to `wait`; [`Held`] when the wait runs out.
    pub fn take(dir: &Path, name: &str, wait: Duration) -> anyhow::Result<Lock> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(format!("{name}.lock"));
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        let start = Instant::now();
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(Lock(file)),
                Err(std::fs::TryLockError::WouldBlock) => {}
                Err(std::fs::TryLockError::Error(e)) => {
                    return Err(e).with_context(|| format!("cannot lock {}", path.display()));
                }
            }
            if start.elapsed() > wait {
                return Err(Held { path }.into());
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
        assert!(super::Lock::take(dir.path(), "x", Duration::from_millis(30)).is_err());
        drop(first);
        assert!(super::Lock::take(dir.path(), "x", Duration::ZERO).is_ok());
    }
}
