//! Local, never-committed state under `<git-common-dir>/crew/`.

pub mod init_record;
pub mod live;
pub mod runs;
pub mod sessions;
