//! A run's life, applying what `core` decides: dispatch (gathering the decision's facts
//! and carrying it out), the scheduler above the supervisor (`queue`: slots, promotion,
//! starting and driving supervisors), the supervisor that drives the worker, reaping runs
//! whose supervisor is gone (`reap`), filing an ended run (`filing`), what a run's
//! checkout gets beside its commit (`worktree_files`), the backends that know each worker
//! CLI, verify, integrate, post-merge recording, the ledger and plans on disk; beside a
//! run's life, `doctor`'s checks and repairs and `init`'s install and uninstall. The
//! modules import each other without a circle: dispatch → queue → supervisor → verify,
//! reap → filing. It renders nothing: what goes wrong on the side comes back as a value,
//! and `cli` renders.

pub mod agents;
pub mod backends;
pub mod dispatch;
pub mod doctor;
pub mod error;
pub mod fence;
pub mod filing;
pub mod fleet;
pub mod install;
pub mod integrate;
pub mod landing;
pub mod ledger;
pub mod notify;
pub mod output;
pub mod plans;
pub mod post_merge;
pub mod process;
pub mod prompt;
pub mod prune;
pub mod queue;
pub mod reap;
pub mod setup;
pub mod strays;
pub mod supervisor;
pub mod verify;
pub mod wave;
pub mod work;
pub mod workenv;
pub mod worktree_files;
