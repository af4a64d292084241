//! The terminal stdout is on: its width, for renderings sized to it.

use std::io::IsTerminal;

/// The columns a rendering on stdout may use: `COLUMNS` when set to a number (as shells
/// and tests set it), else the width of the terminal stdout is on, else none (piped: no
/// limit, nothing is cut).
pub fn stdout_width() -> Option<usize> {
    if let Some(columns) = std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c > 0)
    {
        return Some(columns);
    }
    let stdout = std::io::stdout();
    if !stdout.is_terminal() {
        return None;
    }
    rustix::termios::tcgetwinsize(&stdout)
        .ok()
        .map(|size| usize::from(size.ws_col))
        .filter(|&c| c > 0)
}
