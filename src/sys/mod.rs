//! The operating system beneath `git/`, `state/` and `run/`: the clock and id source,
//! atomic writes, file locks, signals, process groups and the kernel write fence. Nothing
//! here knows about git or the contract (the clock only knows a run id's shape);
//! `unsafe` lives here only where no safe call exists.

pub mod clock;
pub mod error;
pub mod failpoint;
pub mod fence;
pub mod fs;
pub mod host;
pub mod lock;
pub mod ns;
pub mod process;
pub mod stdio;
pub mod term;
pub mod watch;
