//! A file an operation was given (a prompt file, a reply, a footer), read within bounds.

use std::path::Path;

use crate::error::{CrewError, ErrorCode, Result};

/// A file the command was given (`--prompt-file`, `footer FILE`, `--reply-file`; `what`
/// names it), read whole when it is a regular file of at most `cap` bytes — a symlink to
/// one is followed, and no more than `cap + 1` bytes are ever read. Nothing there is
/// exit 3 (`file-not-found`); a directory, FIFO, device or socket is exit 2
/// (`not-a-file`), refused before anything waits on it; a larger file is exit 2
/// (`file-too-large`, naming the cap); one that cannot be read is exit 2
/// (`file-unreadable`).
pub fn read_given(path: &Path, cap: u64, what: &str) -> Result<Vec<u8>> {
    use crate::sys::fs::{Links, Unread, read_capped};
    let shown = path.display();
    read_capped(path, cap, Links::Follow).map_err(|why| match why {
        Unread::Missing => CrewError::new(
            ErrorCode::FileNotFound,
            format!("cannot read {what} {shown}: it does not exist"),
        ),
        Unread::NotRegular(kind) => CrewError::new(
            ErrorCode::NotAFile,
            format!("cannot read {what} {shown}: it is {kind}, not a regular file"),
        ),
        Unread::TooLarge { cap } => CrewError::new(
            ErrorCode::FileTooLarge,
            format!(
                "{what} {shown} holds more than {}, the most it may hold",
                size(cap)
            ),
        )
        .hinted(format!("give a file of at most {cap} bytes")),
        Unread::Failed(e) => CrewError::new(
            ErrorCode::FileUnreadable,
            format!("cannot read {what} {shown}: {e}"),
        ),
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
