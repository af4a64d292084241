//! What every command starts from: the working directory (after `-C`), the output
//! format, and the repository, discovered on first use.

use std::path::{Path, PathBuf};

use super::error::{CrewError, Result};
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
                CrewError::usage(
                    "bad-directory",
                    format!("cannot change to '{}': {e}", dir.display()),
                )
            })?;
        }
        let cwd = std::env::current_dir().map_err(CrewError::internal)?;
        Ok(CommandContext {
            ops: crate::ops::Context::new(cwd),
            format,
            format_asked: false,
        })
    }
}

/// A file the command was given (`--prompt-file`, `footer FILE`, `--reply-file`; `what`
/// names it), read whole when it is a regular file of at most `cap` bytes — a symlink to
/// one is followed, and no more than `cap + 1` bytes are ever read. Nothing there is
/// exit 3 (`file-not-found`); a directory, FIFO, device or socket is exit 2
/// (`not-a-file`), refused before anything waits on it; a larger file is exit 2
/// (`file-too-large`, naming the cap); one that cannot be read is exit 2
/// (`file-unreadable`).
pub fn read_given(path: &Path, cap: u64, what: &str) -> Result<Vec<u8>> {
    use super::error::ErrorKind;
    use crate::sys::fs::{Links, Unread, read_capped};
    let shown = path.display();
    read_capped(path, cap, Links::Follow).map_err(|why| match why {
        Unread::Missing => CrewError::new(
            ErrorKind::NotFound,
            "file-not-found",
            format!("cannot read {what} {shown}: it does not exist"),
        )
        .hinted("check the path"),
        Unread::NotRegular(kind) => CrewError::usage(
            "not-a-file",
            format!("cannot read {what} {shown}: it is {kind}, not a regular file"),
        )
        .hinted("give the path of a regular file"),
        Unread::TooLarge { cap } => CrewError::usage(
            "file-too-large",
            format!(
                "{what} {shown} holds more than {}, the most it may hold",
                size(cap)
            ),
        )
        .hinted(format!("give a file of at most {cap} bytes")),
        Unread::Failed(e) => CrewError::usage(
            "file-unreadable",
            format!("cannot read {what} {shown}: {e}"),
        )
        .hinted("give the path of a regular file you can read"),
    })
}

/// A cap for people: `1 MiB (1048576 bytes)`.
pub fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB ({b} bytes)", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB ({b} bytes)", b >> 10),
        b => format!("{b} bytes"),
    }
}
