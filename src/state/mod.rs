//! Local, never-committed state under `<git-common-dir>/crew/`: live pointers, run
//! records, sessions and the init record. Where a run folder's files are named is
//! `core::layout`; this module reads and writes them.

pub mod init_record;
pub mod live;
pub mod runs;
pub mod sessions;
