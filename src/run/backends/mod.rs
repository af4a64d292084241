//! One trait for every worker backend: the only place that knows a CLI's flags, how it
//! resumes a session, and where its reply and session id are found.

pub mod command;

use std::path::Path;

use crate::core::flight::Backend as BackendConfig;
use crate::core::record::RunRecord;

/// One attempt of a run, as an adapter sees it.
pub struct Attempt<'a> {
    pub record: &'a RunRecord,
    pub config: &'a BackendConfig,
    pub prompt_file: &'a Path,
    pub prompt: &'a str,
}

/// A command line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    pub program: String,
    pub args: Vec<String>,
}

/// What an adapter knows about its worker CLI.
pub trait Adapter {
    /// The command line of a fresh session.
    fn launch(&self, attempt: &Attempt) -> anyhow::Result<Launch>;
    /// The command line that resumes `session` with a new prompt, when this backend can.
    fn resume(&self, attempt: &Attempt, session: &str) -> Option<anyhow::Result<Launch>>;
    /// The session id of an attempt: from its stdout or from `CREW_SESSION_FILE`.
    fn session(&self, stdout: &[u8], session_file: &Path) -> Option<String>;
    /// The reply of an attempt that wrote no manifest.
    fn reply(&self, stdout: &[u8]) -> Option<String>;
}

/// The adapter a backend names.
pub fn adapter(name: &str) -> Result<Box<dyn Adapter>, String> {
    match name {
        "command" => Ok(Box::new(command::CommandAdapter)),
        other => Err(format!(
            "the `{other}` adapter is not available in this build of git-crew (available: command)"
        )),
    }
}
