//! Integration tests: the real `git-crew` binary against real repositories.
#![allow(clippy::unwrap_used)] // a test that cannot go on fails where it stands

mod cli;
mod common;
mod complete;
mod dispatch;
mod fence;
mod flight;
mod footer;
mod hand_merge;
mod hook;
mod imports;
mod init;
mod integrate;
mod ledger;
mod notify;
mod plan;
mod progress;
mod prune;
mod read_only;
mod real_clis;
mod retry;
mod roster;
mod snapshots;
mod spend;
mod strays;
mod sync;
mod tc_git_view;
mod tc_hook_managers;
mod tc_layouts;
mod tc_lfs;
mod tc_setup;
mod tc_toolchains;
mod tc_worktree_files;
mod term;
mod watch;
mod worker_env;
