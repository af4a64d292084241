//! The files of a run's folder (`crew/runs/<run>/`, named by `core::layout`) that dispatch
//! keeps for the run's later life: the backend config it was dispatched with, the task's
//! prompt, the extra paths its fence lets it write and its notifier. The scheduler, the
//! supervisor, the fence, the notifier and `retry` read them back here.

use std::path::{Path, PathBuf};

pub use super::error::Unread;
use super::error::{Context, Result};

use crate::core::flight::Backend;
use crate::core::layout;
use crate::core::notify::Notifier;

/// What dispatch keeps in a run's folder.
pub struct Kept<'a> {
    pub backend: &'a Backend,
    pub task_prompt: &'a str,
    /// Paths outside the worktree the run's fence lets it write.
    pub writable: &'a [PathBuf],
    pub notify: &'a Option<Notifier>,
}

/// Writes what dispatch keeps into the run folder `run_dir`.
pub fn keep(run_dir: &Path, kept: &Kept) -> Result<()> {
    std::fs::write(
        layout::backend_config(run_dir),
        serde_json::to_vec_pretty(kept.backend)?,
    )?;
    std::fs::write(layout::task_prompt(run_dir), kept.task_prompt)?;
    std::fs::write(
        layout::fence_extra(run_dir),
        serde_json::to_vec(kept.writable)?,
    )?;
    std::fs::write(layout::notifier(run_dir), serde_json::to_vec(kept.notify)?)?;
    Ok(())
}

/// The backend config the run was dispatched with.
pub fn backend(run_dir: &Path) -> Result<Backend, Unread> {
    let bytes = std::fs::read(layout::backend_config(run_dir)).map_err(Unread::Missing)?;
    serde_json::from_slice(&bytes).map_err(Unread::Bad)
}

/// The task's prompt, as the lead gave it.
pub fn task_prompt(run_dir: &Path) -> std::io::Result<String> {
    std::fs::read_to_string(layout::task_prompt(run_dir))
}

/// The extra paths the run's fence lets it write: none when the file is not there.
pub fn writable(run_dir: &Path) -> Result<Vec<PathBuf>> {
    match std::fs::read(layout::fence_extra(run_dir)) {
        Ok(bytes) => serde_json::from_slice(&bytes).context("cannot read the run's fence"),
        Err(_) => Ok(Vec::new()),
    }
}

/// The run's notifier: none when the file is not there (a run dispatched before
/// `[notify]` existed) or says none; the error when it cannot be read as one.
pub fn notifier(run_dir: &Path) -> Result<Option<Notifier>, serde_json::Error> {
    match std::fs::read(layout::notifier(run_dir)) {
        Err(_) => Ok(None),
        Ok(bytes) => serde_json::from_slice(&bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_dispatch_keeps_is_read_back_as_it_was() {
        let dir = tempfile::tempdir().unwrap();
        let backend = Backend {
            concurrency: Some(3),
            ..Backend::default()
        };
        let writable = vec![PathBuf::from("/var/cache/x")];
        keep(
            dir.path(),
            &Kept {
                backend: &backend,
                task_prompt: "do it\n",
                writable: &writable,
                notify: &None,
            },
        )
        .unwrap();
        assert_eq!(super::backend(dir.path()).unwrap(), backend);
        assert_eq!(task_prompt(dir.path()).unwrap(), "do it\n");
        assert_eq!(super::writable(dir.path()).unwrap(), writable);
        assert_eq!(notifier(dir.path()).unwrap(), None);
    }

    #[test]
    fn a_missing_file_and_a_broken_one_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        let missing = backend(dir.path()).unwrap_err();
        assert!(matches!(missing, Unread::Missing(_)));
        assert!(
            missing
                .to_string()
                .starts_with("cannot read the run's backend config: ")
        );
        assert!(super::writable(dir.path()).unwrap().is_empty());
        assert_eq!(notifier(dir.path()).unwrap(), None);
        std::fs::write(layout::backend_config(dir.path()), "{").unwrap();
        std::fs::write(layout::fence_extra(dir.path()), "{").unwrap();
        std::fs::write(layout::notifier(dir.path()), "{").unwrap();
        assert!(matches!(backend(dir.path()), Err(Unread::Bad(_))));
        assert!(super::writable(dir.path()).is_err());
        assert!(notifier(dir.path()).is_err());
    }
}
