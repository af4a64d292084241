//! One trait for every worker backend: the only place that knows a CLI's flags, how it
//! resumes a session, and where its reply and session id are found.

pub mod claude;
pub mod codex;
pub mod command;
pub mod native;

use crate::run::error::Result;
use std::path::Path;

use crate::core::flight::{AdapterKind, Backend as BackendConfig};
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
    fn launch(&self, attempt: &Attempt) -> Result<Launch>;
    /// The command line that resumes `session` with a new prompt, when this backend can.
    fn resume(&self, attempt: &Attempt, session: &str) -> Option<Result<Launch>>;
    /// The session id of an attempt: from its stdout, or from what it wrote to
    /// `CREW_SESSION_FILE` (`session_file`, as the supervisor read it within its cap).
    fn session(&self, stdout: &[u8], session_file: Option<&str>) -> Option<String>;
    /// The reply of an attempt that wrote no manifest.
    fn reply(&self, stdout: &[u8]) -> Option<String>;
    /// The program a fresh session starts, and the config key that names it, when it is
    /// known before the worktree exists (no placeholder, not a path relative to the
    /// worktree): dispatch refuses a backend whose program cannot be found.
    fn program(&self, _config: &BackendConfig) -> Option<(String, &'static str)> {
        None
    }
    /// Facts from the stream that contradict a clean run (denied tool calls, ...).
    fn warnings(&self, _stdout: &[u8]) -> Vec<String> {
        Vec::new()
    }
}

/// The adapter of this kind.
pub fn driver(kind: AdapterKind) -> Box<dyn Adapter> {
    match kind {
        AdapterKind::Codex => Box::new(codex::CodexAdapter),
        AdapterKind::Claude => Box::new(claude::ClaudeAdapter),
        AdapterKind::Command => Box::new(command::CommandAdapter),
        AdapterKind::Native => Box::new(native::NativeAdapter),
    }
}

/// The JSON lines of a stream; lines that are not JSON are skipped.
pub fn jsonl(stdout: &[u8]) -> impl Iterator<Item = serde_json::Value> + '_ {
    stdout
        .split(|b| *b == b'\n')
        .filter_map(|line| serde_json::from_slice::<serde_json::Value>(line).ok())
}

/// Whether `program` can be started: an absolute path to an executable file, or a bare
/// name found as one on `path` (the worker's `PATH`).
pub fn program_exists(program: &str, path: Option<&std::ffi::OsStr>) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        return executable(Path::new(program));
    }
    path.is_some_and(|path| std::env::split_paths(path).any(|dir| executable(&dir.join(program))))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::core::record::RunRecord;

    /// A captured stream of the real CLIs (`git-fixtures/streams/`).
    pub fn stream(name: &str) -> Vec<u8> {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("git-fixtures/streams")
            .join(name);
        std::fs::read(path).unwrap()
    }

    /// Runs `f` with an attempt of a read-only run on `adapter`.
    pub fn attempt_for(adapter: &str, f: impl FnOnce(&Attempt)) {
        let record = RunRecord {
            role: crate::core::scope::Role::Review,
            backend: adapter.into(),
            adapter: adapter.parse().unwrap(),
            model: Some("m1".into()),
            effort: Some("high".into()),
            worktree: "/w".into(),
            scope: vec![],
            ..RunRecord::example()
        };
        let config = BackendConfig {
            sandbox: Some(crate::core::flight::SandboxMode::ReadOnly),
            extra_args: Some(vec!["-c".into(), "x=1".into()]),
            ..BackendConfig::default()
        };
        let attempt = Attempt {
            record: &record,
            config: &config,
            prompt_file: std::path::Path::new("/p"),
            prompt: "the prompt",
        };
        f(&attempt);
    }
}
