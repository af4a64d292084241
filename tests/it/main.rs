//! Integration tests: the real `git-crew` binary against real repositories.

mod cli;
mod common;
mod complete;
mod dispatch;
mod fence;
mod flight;
mod footer;
mod hand_merge;
mod hook;
mod init;
mod integrate;
mod ledger;
mod notify;
mod plan;
mod progress;
mod prune;
mod real_clis;
mod retry;
mod roster;
mod snapshots;
mod spend;
mod strays;
mod sync;
mod term;
mod watch;
mod worker_env;
