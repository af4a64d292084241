//! Discovery: the repository around a directory, honouring the variables git sets for
//! hooks (`GIT_DIR`, `GIT_INDEX_FILE`, ...).

use super::error::{Context, Result};
use std::path::{Path, PathBuf};

/// No repository around the directory.
#[derive(Debug, thiserror::Error)]
#[error("not a git repository (or any parent up to the root): {dir}")]
pub struct NotARepository {
    pub dir: PathBuf,
    #[source]
    pub source: Box<gix::Error>,
}

/// Opens the repository containing `dir`.
pub fn discover(dir: &Path) -> Result<gix::Repository, NotARepository> {
    let mut repo =
        gix::discover_with_environment_overrides(dir).map_err(|source| NotARepository {
            dir: dir.to_path_buf(),
            source: Box::new(source),
        })?;
    // git-crew run by a hook inside a run's fence sees the objects git sees: the run's
    // quarantine (`GIT_OBJECT_DIRECTORY`, whose alternates name the repository's store).
    if let Some(objects) = std::env::var_os("GIT_OBJECT_DIRECTORY")
        && let Ok(handle) = gix::odb::at(PathBuf::from(objects), repo.object_hash())
    {
        repo.objects = gix::odb::memory::Proxy::new(handle, repo.object_hash());
    }
    Ok(repo)
}

/// Where git-crew keeps local, never-committed state: `<git-common-dir>/crew`.
pub fn state_dir(repo: &gix::Repository) -> PathBuf {
    repo.common_dir().join("crew")
}

/// Opens the repository at `dir` (a work tree or a git dir), without discovery.
pub fn open(dir: &Path) -> Result<gix::Repository> {
    gix::open(dir).with_context(|| format!("cannot open the repository at {}", dir.display()))
}
