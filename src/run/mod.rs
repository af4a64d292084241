//! A run's life: dispatch, the supervisor that drives the worker, and the backends that
//! know each worker CLI.

pub mod backends;
pub mod dispatch;
pub mod fence;
pub mod integrate;
pub mod ledger;
pub mod output;
pub mod plans;
pub mod post_merge;
pub mod process;
pub mod prompt;
pub mod queue;
pub mod supervisor;
pub mod verify;
