//! Integration tests: the real `git-crew` binary against real repositories.

mod cli;
mod common;
mod dispatch;
mod fence;
mod flight;
mod footer;
mod hook;
mod init;
mod integrate;
mod ledger;
mod plan;
mod real_clis;
mod roster;
mod snapshots;
mod sync;
mod watch;
