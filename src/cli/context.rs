//! What every command starts from: the working directory (after `-C`), the output
//! format, and the repository, discovered on first use.

use std::path::PathBuf;

use super::error::{CrewError, ErrorCode, Result};
use super::ui::Format;

/// The operations' [`Context`](crate::ops::Context) (which it derefs to), and how to
/// render.
pub struct CommandContext {
    pub ops: crate::ops::Context,
    pub format: Format,
    /// The format was asked for (`--json`, `--human`, `GIT_CREW_FORMAT`) rather than
    /// taken from what stdout is.
    pub format_asked: bool,
}

impl std::ops::Deref for CommandContext {
    type Target = crate::ops::Context;
    fn deref(&self) -> &crate::ops::Context {
        &self.ops
    }
}

impl CommandContext {
    /// Applies `-C` directories in order, each relative to the previous one, as git does.
    pub fn new(directories: &[PathBuf], format: Format) -> Result<CommandContext> {
        for dir in directories {
            if dir.as_os_str().is_empty() {
                continue;
            }
            std::env::set_current_dir(dir).map_err(|e| {
                CrewError::new(
                    ErrorCode::BadDirectory,
                    format!("cannot change to '{}': {e}", dir.display()),
                )
            })?;
        }
        let cwd = std::env::current_dir().map_err(CrewError::from)?;
        Ok(CommandContext {
            ops: crate::ops::Context::new(cwd),
            format,
            format_asked: false,
        })
    }
}

pub use crate::ops::files::{read_given, size};
