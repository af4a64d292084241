//! The only module that touches gix or spawns `git`. In-process with gix where gix has
//! the porcelain; the `git` binary (behind [`run::GitRunner`]) for writes to the user's
//! config and checkout. Other modules hold a [`Repository`] and [`ObjectId`]s as handles
//! and pass them back in; they never call gix themselves. Below it are only `core` and
//! `sys`.

pub mod config;
pub mod diff;
pub mod error;
pub mod forecast;
pub mod hooks_dir;
pub mod identity;
pub mod lfs;
pub mod merge;
pub mod notes;
pub mod objects;
pub mod refs;
pub mod repo;
pub mod run;
pub mod run_range;
pub mod seal;
pub mod staged;
pub mod submodules;
pub mod sync;
pub mod worktree;
pub mod worktree_files;

/// An open repository and an object id: the handles other modules pass back in.
pub use gix::{ObjectId, Repository};
