//! What every operation starts from: the working directory and the repository around
//! it, discovered on first use; the warnings an operation met on the side (a ledger
//! row that could not be written), for the front end to say; and what the conflict
//! forecast's trial merges found, for as long as the front end keeps the context.

use std::cell::{OnceCell, RefCell};
use std::path::{Path, PathBuf};

use crate::error::{CrewError, ErrorCode, Result};
use crate::git::repo;

pub struct Context {
    pub cwd: PathBuf,
    repo: OnceCell<crate::git::Repository>,
    warnings: RefCell<Vec<String>>,
    /// What the conflict forecast's trial merges found, by the commits merged: kept for
    /// as long as the context lives (across a console's frames, an MCP server's calls).
    trials: RefCell<crate::git::forecast::Cache>,
}

impl Context {
    /// The operations of the repository around `cwd`.
    pub fn new(cwd: PathBuf) -> Context {
        Context {
            cwd,
            repo: OnceCell::new(),
            warnings: RefCell::new(Vec::new()),
            trials: RefCell::new(crate::git::forecast::Cache::default()),
        }
    }

    /// The cache of the conflict forecast's trial merges, in memory only: a read writes
    /// nothing, so it lives as long as this context.
    pub fn trial_cache(&self) -> std::cell::RefMut<'_, crate::git::forecast::Cache> {
        self.trials.borrow_mut()
    }

    /// Notes a warning for the front end, which says it where its warnings go.
    pub fn warn(&self, warning: impl std::fmt::Display) {
        self.warnings.borrow_mut().push(warning.to_string());
    }

    /// The warnings noted so far, taken: each is said once.
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut *self.warnings.borrow_mut())
    }

    /// The repository around the working directory; exit 2 when there is none.
    pub fn repo(&self) -> Result<&crate::git::Repository> {
        if let Some(repo) = self.repo.get() {
            return Ok(repo);
        }
        let repo = repo::discover(&self.cwd)
            .map_err(|e| CrewError::new(ErrorCode::NotARepository, e.to_string()))?;
        Ok(self.repo.get_or_init(|| repo))
    }

    /// The repository's work tree; exit 2 for a bare repository.
    pub fn workdir(&self) -> Result<&Path> {
        self.repo()?.workdir().ok_or_else(|| {
            CrewError::new(ErrorCode::BareRepository, "this command needs a work tree")
        })
    }
}
