//! The operating system beneath `git/`, `state/` and `run/`: the clock and id source,
//! atomic writes, file locks, signals and process groups. Nothing here knows about runs,
//! git or the contract; `unsafe` lives here only where no safe call exists.

pub mod clock;
