//! Locks under `<git-common-dir>/crew/`, for the short check-then-act sections that must
//! not interleave across processes (dispatch refusals, queue promotion, live-pointer
//! updates). An `flock(2)` on a file that stays: the kernel releases it when its holder
//! dies, so no lock is ever stale.

use std::os::fd::AsRawFd;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// Held until dropped.
pub struct Lock(std::fs::File);

impl Lock {
    /// Takes `<dir>/<name>.lock`, waiting up to `wait`.
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
            // SAFETY: flock(2) on a descriptor this function owns.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                return Ok(Lock(file));
            }
            if start.elapsed() > wait {
                bail!("{} is held by another git-crew process", path.display());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        // SAFETY: unlocking the descriptor this lock owns (closing it would too).
        unsafe {
            libc::flock(self.0.as_raw_fd(), libc::LOCK_UN);
        }
    }
}
