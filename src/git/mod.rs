//! The only module that touches gix or spawns `git`. In-process with gix where gix has
//! the porcelain; the `git` binary (behind [`run::GitRunner`]) for writes to the user's
//! config and checkout. Other modules hold a [`Repository`] and [`ObjectId`]s as handles
//! and pass them back in; they never call gix themselves. Below it are only `core` and
//! `sys`.

pub mod config;
pub mod diff;
pub mod error;
pub mod fleet;
pub mod forecast;
pub mod hooks_dir;
pub mod identity;
pub mod index_map;
pub mod lfs;
pub mod merge;
pub mod notes;
pub mod objects;
pub mod reach;
pub mod refs;
pub mod repo;
pub mod run;
pub mod run_range;
pub mod seal;
pub mod staged;
pub mod submodules;
pub mod sync;
pub mod untracked;
pub mod worktree;
pub mod worktree_files;

/// For the tests of this layer: git in `dir` with no user or system config and a fixed
/// identity, to be given its arguments (for a git whose failure a test expects).
#[cfg(test)]
pub(crate) fn test_git_command(dir: &std::path::Path) -> std::process::Command {
    let mut git = std::process::Command::new("git");
    git.current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@x")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@x");
    git
}

/// For the tests of this layer: runs git in `dir` with no user or system config and a
/// fixed identity, and gives its output, trimmed; a git that fails fails the test.
#[cfg(test)]
pub(crate) fn test_git(dir: &std::path::Path, args: &[&str]) -> String {
    let out = test_git_command(dir).args(args).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// An open repository and an object id: the handles other modules pass back in.
pub use gix::{ObjectId, Repository};
