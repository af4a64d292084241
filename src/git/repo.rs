//! Discovery: the repository around a directory, honouring the variables git sets for
//! hooks (`GIT_DIR`, `GIT_INDEX_FILE`, ...).

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
    gix::discover_with_environment_overrides(dir).map_err(|source| NotARepository {
        dir: dir.to_path_buf(),
        source: Box::new(source),
    })
}

/// Where git-crew keeps local, never-committed state: `<git-common-dir>/crew`.
pub fn state_dir(repo: &gix::Repository) -> PathBuf {
    repo.common_dir().join("crew")
}
