//! Pure decision logic: no gix, no filesystem, no processes. Facts come in as values,
//! decisions go out as values (a plan, a refusal, a verdict), so each is unit-tested
//! here and `--dry-run` can print one without applying it.

pub mod address;
pub mod agents;
pub mod attempt;
pub mod claim;
pub mod complete;
pub mod dispatch;
pub mod doctor;
pub mod fleet;
pub mod flight;
pub mod footer;
pub mod forecast;
pub mod hookblock;
pub mod install;
pub mod integrate;
pub mod layout;
pub mod ledger;
pub mod ledger_notes;
pub mod notify;
pub mod oversize;
pub mod plan;
pub mod policy;
pub mod prune;
pub mod record;
pub mod retry;
pub mod routing;
pub mod scope;
pub mod seal;
pub mod size;
pub mod stamp;
pub mod strays;
pub mod summary;
pub mod supervisor;
pub mod text;
pub mod toolchain;
pub mod usage;
pub mod verify;
pub mod wave;
pub mod work;
pub mod workenv;
pub mod worktree_files;
