//! The roster's sessions (`<git-common-dir>/crew/sessions.json`): the last session of each
//! standing worker, so its next run can resume it. Session ids are local facts (the CLIs
//! keep sessions on this machine): never committed.

use super::error::Result;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::locks::Turn;

/// A standing worker's last session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerSession {
    pub backend: String,
    pub session: String,
    /// The run that used it last.
    pub run: String,
    #[serde(with = "crate::core::stamp::seconds::lenient")]
    pub updated_at: jiff::Timestamp,
    /// The session's cumulative usage as its stream last reported it (codex threads
    /// carry their total over): the next run's spend is measured from it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_usage: Option<crate::core::usage::Usage>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Sessions {
    #[serde(default)]
    pub workers: BTreeMap<String, WorkerSession>,
}

fn path(state_dir: &Path) -> PathBuf {
    state_dir.join("sessions.json")
}

/// The sessions on file (none when there is no file or it cannot be read).
pub fn load(state_dir: &Path) -> Sessions {
    std::fs::read(path(state_dir))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// Records `worker`'s latest session.
pub fn record(state_dir: &Path, worker: &str, session: WorkerSession) -> Result<()> {
    std::fs::create_dir_all(state_dir)?;
    let _lock = super::locks::take(state_dir, Turn::Sessions, Duration::from_secs(30))?;
    let mut all = load(state_dir);
    all.workers.insert(worker.to_string(), session);
    crate::sys::fs::write_atomic(
        &path(state_dir),
        &serde_json::to_string_pretty(&all)?,
        0o600,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_hand_edited_stamp_loses_no_session() {
        let text = r#"{"workers": {"w": {"backend": "b", "session": "s", "run": "r", "updated_at": "yesterday"}}}"#;
        let sessions: super::Sessions = serde_json::from_str(text).unwrap();
        assert_eq!(sessions.workers["w"].session, "s");
    }
}
