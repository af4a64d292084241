//! A crew worktree's run identity, read from that worktree's own config file
//! (`<git-dir>/config.worktree`, written by `git config --worktree`) without spawning git.

use std::path::{Path, PathBuf};

use super::error::{Context, Result};

use crate::core::scope::RunIdentity;

/// The `crew.*` keys of the current worktree, or `None` outside a crew worktree.
pub fn read(repo: &gix::Repository) -> Result<Option<RunIdentity>> {
    read_git_dir(repo.git_dir())
}

/// The identity recorded in the worktree whose private git dir is `git_dir`.
pub fn read_git_dir(git_dir: &Path) -> Result<Option<RunIdentity>> {
    let path = git_dir.join("config.worktree");
    let bytes = match std::fs::read(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let meta = gix::config::file::Metadata::from(gix::config::Source::Worktree).at(&path);
    let file = gix::config::File::from_bytes_no_includes(&bytes, meta, Default::default())
        .with_context(|| format!("cannot parse {}", path.display()))?;
    let Some(run) = file.string("crew.run") else {
        return Ok(None);
    };
    let text = |key: &str| file.string(key).map(|v| v.to_string()).unwrap_or_default();
    let scope = file
        .strings("crew.scope")
        .unwrap_or_default()
        .into_iter()
        .map(|v| v.to_string())
        .filter(|v| !v.trim().is_empty())
        .collect();
    Ok(Some(RunIdentity {
        run: run.to_string(),
        task: text("crew.task"),
        role: text("crew.role"),
        scope,
    }))
}

/// The private git dirs of every worktree: the common dir (the main worktree) and each
/// linked worktree's `worktrees/<id>`.
pub fn worktree_git_dirs(common_dir: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![common_dir.to_path_buf()];
    if let Ok(entries) = std::fs::read_dir(common_dir.join("worktrees")) {
        dirs.extend(entries.flatten().map(|e| e.path()));
    }
    dirs
}
