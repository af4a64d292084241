//! A lock file under `<git-common-dir>/crew/`, for the short check-then-act sections that
//! must not interleave across processes (dispatch refusals, queue promotion).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::bail;

/// Held until dropped.
pub struct Lock(PathBuf);

impl Lock {
    /// Takes `<dir>/<name>.lock`, waiting up to `wait`; a lock older than a minute is
    /// taken to be left by a dead process and broken.
    pub fn take(dir: &Path, name: &str, wait: Duration) -> anyhow::Result<Lock> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(format!("{name}.lock"));
        let start = Instant::now();
        loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
            {
                Ok(_) => return Ok(Lock(path)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let stale = std::fs::metadata(&path)
                        .and_then(|m| m.modified())
                        .is_ok_and(|t| t.elapsed().unwrap_or_default() > Duration::from_secs(60));
                    if stale {
                        let _ = std::fs::remove_file(&path);
                    } else if start.elapsed() > wait {
                        bail!("{} is held by another git-crew process", path.display());
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(e.into()),
            }
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
