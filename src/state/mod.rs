//! Local, never-committed state under `<git-common-dir>/crew/`: live pointers, run
//! records and the files of a run's folder, the claims runs hold on their tasks and
//! scopes, the locks (each named for what it guards), human reports, sessions and the
//! init record. Where a run folder's files are named is `core::layout`; this module
//! reads and writes them.

pub mod claims;
pub mod error;
pub mod init_record;
pub mod live;
pub mod locks;
pub mod reports;
pub mod run_files;
pub mod runs;
pub mod sessions;
