//! `native`: the lead's own in-harness delegation. git-crew prepares the worktree, the
//! prompt and the fences; no process is started. The lead binds its sub-task with
//! `attach` and hands the reply in with `deliver`, which takes the same footer and
//! verify path as every other backend.

use crate::run::error::{Result, bail};

use super::{Adapter, Attempt, Launch};

pub struct NativeAdapter;

impl Adapter for NativeAdapter {
    fn launch(&self, attempt: &Attempt) -> Result<Launch> {
        bail!(
            "run {} is native: the lead works it and hands the reply in with `git crew deliver`",
            attempt.record.run
        )
    }

    fn resume(&self, _attempt: &Attempt, _session: &str) -> Option<Result<Launch>> {
        None
    }

    fn session(&self, _stdout: &[u8], _session_file: Option<&str>) -> Option<String> {
        None
    }

    fn reply(&self, _stdout: &[u8]) -> Option<String> {
        None
    }
}
