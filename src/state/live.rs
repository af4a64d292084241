//! Live pointers: `<git-common-dir>/crew/live/<run>.json`, one per in-flight run.
//! Read here for what other commands need to know about in-flight runs (their scopes).

use std::path::Path;

use serde::Deserialize;

/// The part of a live pointer other commands read.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct LiveRun {
    pub run: String,
    #[serde(default)]
    pub task: String,
    #[serde(default)]
    pub role: crate::core::scope::Role,
    #[serde(default)]
    pub scope: Vec<String>,
}

/// Every readable live pointer under `state_dir`; unreadable ones are reported through
/// `on_bad` and skipped, so one broken file never hides the others.
pub fn list(state_dir: &Path, on_bad: &mut dyn FnMut(&Path, String)) -> Vec<LiveRun> {
    let dir = state_dir.join("live");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut runs = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        match std::fs::read(&path) {
            Ok(bytes) => match serde_json::from_slice::<LiveRun>(&bytes) {
                Ok(run) => runs.push(run),
                Err(e) => on_bad(&path, e.to_string()),
            },
            Err(e) => on_bad(&path, e.to_string()),
        }
    }
    runs.sort_by(|a, b| a.run.cmp(&b.run));
    runs
}
