//! What every command starts from: the working directory (after `-C`), the output
//! format, and the repository, discovered on first use.

use std::cell::OnceCell;
use std::path::{Path, PathBuf};

use super::error::{CrewError, Result};
use super::ui::Format;
use crate::git::repo;

pub struct CommandContext {
    pub cwd: PathBuf,
    pub format: Format,
    /// The format was asked for (`--json`, `--human`, `GIT_CREW_FORMAT`) rather than
    /// taken from what stdout is.
    pub format_asked: bool,
    repo: OnceCell<crate::git::Repository>,
}

impl CommandContext {
    /// Applies `-C` directories in order, each relative to the previous one, as git does.
    pub fn new(directories: &[PathBuf], format: Format) -> Result<CommandContext> {
        for dir in directories {
            if dir.as_os_str().is_empty() {
                continue;
            }
            std::env::set_current_dir(dir).map_err(|e| {
                CrewError::usage(
                    "bad-directory",
                    format!("cannot change to '{}': {e}", dir.display()),
                )
            })?;
        }
        let cwd = std::env::current_dir().map_err(CrewError::internal)?;
        Ok(CommandContext {
            cwd,
            format,
            format_asked: false,
            repo: OnceCell::new(),
        })
    }

    /// The repository around the working directory; exit 2 when there is none.
    pub fn repo(&self) -> Result<&crate::git::Repository> {
        if let Some(repo) = self.repo.get() {
            return Ok(repo);
        }
        let repo = repo::discover(&self.cwd).map_err(|e| {
            CrewError::usage("not-a-repository", e.to_string())
                .hinted("run git crew inside a git repository, or pass -C <path>")
        })?;
        Ok(self.repo.get_or_init(|| repo))
    }

    /// The repository's work tree; exit 2 for a bare repository.
    pub fn workdir(&self) -> Result<&Path> {
        self.repo()?.workdir().ok_or_else(|| {
            CrewError::usage("bare-repository", "this command needs a work tree")
                .hinted("run it in a clone with a checkout")
        })
    }
}
