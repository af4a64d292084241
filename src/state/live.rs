//! Live pointers: `<git-common-dir>/crew/live/<run>.json`, one per in-flight run.
//! Read here for what other commands need to know about in-flight runs (their scopes).
//!
//! The pre-commit hook reads them on every commit in the lead's checkout. So that a
//! hundred live runs do not cost a hundred files read and parsed per commit, it keeps
//! what it read in `<git-common-dir>/crew/live-scopes.json` ([`list_kept`]): each
//! pointer's run, task, role and scope, under the pointer's file name and inode. Those
//! four never change while a run is live, and a pointer is only ever replaced whole (a
//! new file renamed over it, a new inode), so a pointer whose name and inode the summary
//! holds is read from the summary, any other from its file; the directory listing alone
//! says which runs are live.

use std::collections::BTreeMap;
use std::os::unix::fs::DirEntryExt;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The part of a live pointer other commands read.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
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
/// `on_bad` and skipped, so one broken file never hides the others. Reads every pointer
/// and writes nothing.
pub fn list(state_dir: &Path, on_bad: &mut dyn FnMut(&Path, String)) -> Vec<LiveRun> {
    let (seen, others, _) = read(state_dir, BTreeMap::new(), on_bad);
    runs_of(seen, others)
}

/// [`list`], reading only the pointers the summary does not hold, and bringing the
/// summary up to date when it held other than what the listing shows. A summary that
/// cannot be read or written costs the reads, nothing else.
pub fn list_kept(state_dir: &Path, on_bad: &mut dyn FnMut(&Path, String)) -> Vec<LiveRun> {
    let path = state_dir.join(SUMMARY);
    let kept = std::fs::read(&path)
        .ok()
        .and_then(|bytes| serde_json::from_slice::<Summary>(&bytes).ok())
        .filter(|summary| summary.version == VERSION)
        .map(|summary| summary.pointers)
        .unwrap_or_default();
    let (seen, others, changed) = read(state_dir, kept, on_bad);
    if changed
        && let Ok(text) = serde_json::to_string(&Summary {
            version: VERSION,
            pointers: seen.clone(),
        })
    {
        // Another process writing it at the same time writes what it saw: either is
        // true of the pointers it names.
        let _ = crate::sys::fs::write_atomic(&path, &text, 0o644);
    }
    runs_of(seen, others)
}

/// The summary's file, beside the `live` folder (a watch on that folder does not see it).
const SUMMARY: &str = "live-scopes.json";
const VERSION: u32 = 1;

#[derive(Deserialize, Serialize)]
struct Summary {
    version: u32,
    /// By pointer file name.
    pointers: BTreeMap<String, Kept>,
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq, Eq)]
struct Kept {
    inode: u64,
    run: LiveRun,
}

fn runs_of(seen: BTreeMap<String, Kept>, others: Vec<LiveRun>) -> Vec<LiveRun> {
    let mut runs: Vec<LiveRun> = seen.into_values().map(|kept| kept.run).collect();
    runs.extend(others);
    runs.sort_by(|a, b| a.run.cmp(&b.run));
    runs
}

/// The live runs by pointer name, each taken from `kept` when it holds the pointer's
/// name and inode, else read; those whose file name is not UTF-8 (never a name git-crew
/// writes; read, never kept); and whether the first differ from `kept` (a pointer read,
/// or one `kept` names gone).
fn read(
    state_dir: &Path,
    mut kept: BTreeMap<String, Kept>,
    on_bad: &mut dyn FnMut(&Path, String),
) -> (BTreeMap<String, Kept>, Vec<LiveRun>, bool) {
    let mut seen = BTreeMap::new();
    let mut others = Vec::new();
    let Ok(entries) = std::fs::read_dir(state_dir.join("live")) else {
        return (seen, others, !kept.is_empty());
    };
    let mut changed = false;
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(name) = file_name.to_str() else {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "json") {
                others.extend(read_one(&path, on_bad));
            }
            continue;
        };
        if !name.ends_with(".json") {
            continue;
        }
        let inode = entry.ino();
        match kept.remove(name) {
            Some(held) if held.inode == inode => {
                seen.insert(name.to_string(), held);
            }
            _ => {
                if let Some(run) = read_one(&entry.path(), on_bad) {
                    seen.insert(name.to_string(), Kept { inode, run });
                    changed = true;
                }
            }
        }
    }
    // A name the summary held that the listing does not show: an ended run.
    (seen, others, changed || !kept.is_empty())
}

/// One pointer read; `None` (and `on_bad` told why) when it cannot be.
fn read_one(path: &Path, on_bad: &mut dyn FnMut(&Path, String)) -> Option<LiveRun> {
    match std::fs::read(path) {
        Ok(bytes) => match serde_json::from_slice::<LiveRun>(&bytes) {
            Ok(run) => Some(run),
            Err(e) => {
                on_bad(path, e.to_string());
                None
            }
        },
        Err(e) => {
            on_bad(path, e.to_string());
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pointer(dir: &Path, run: &str, scope: &str) {
        let text = serde_json::json!({
            "run": run,
            "task": format!("task-{run}"),
            "role": "implement",
            "scope": [scope],
            "phase": "working",
        });
        // As pointers are written: a new file renamed over the old one.
        crate::sys::fs::write_atomic(&dir.join(format!("{run}.json")), &text.to_string(), 0o644)
            .unwrap();
    }

    /// A state folder with an empty `live` folder in it, and that folder.
    fn state_with_live_folder() -> (tempfile::TempDir, std::path::PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let live = tmp.path().join("live");
        std::fs::create_dir_all(&live).unwrap();
        (tmp, live)
    }

    fn scopes(runs: &[LiveRun]) -> Vec<(String, Vec<String>)> {
        runs.iter()
            .map(|r| (r.run.clone(), r.scope.clone()))
            .collect()
    }

    #[test]
    fn the_summary_answers_as_the_pointers_do_and_follows_every_change() {
        let (tmp, live) = state_with_live_folder();
        let state = tmp.path();
        let none = &mut |p: &Path, e: String| panic!("{}: {e}", p.display());
        assert!(list_kept(state, none).is_empty());
        pointer(&live, "r1", "a/**");
        pointer(&live, "r2", "b/**");
        let first = list_kept(state, none);
        assert_eq!(first, list(state, none));
        assert_eq!(scopes(&first).len(), 2);
        let summary = std::fs::read_to_string(state.join(SUMMARY)).unwrap();
        assert!(summary.contains("\"b/**\""), "{summary}");

        // Read from the summary, not the file: the file changed in place (same inode,
        // which git-crew never does) shows it.
        let r1 = live.join("r1.json");
        let saved = std::fs::read_to_string(&r1).unwrap();
        std::fs::write(&r1, saved.replace("a/**", "elsewhere/**")).unwrap();
        assert_eq!(list_kept(state, none), first);
        assert_ne!(list(state, none), first);
        std::fs::write(&r1, &saved).unwrap();

        // A pointer replaced (a new inode) is read again, even when the summary holds
        // its name; an ended run leaves; a new one comes in.
        pointer(&live, "r1", "changed/**");
        std::fs::remove_file(live.join("r2.json")).unwrap();
        pointer(&live, "r3", "c/**");
        let now = list_kept(state, none);
        assert_eq!(now, list(state, none));
        assert_eq!(
            scopes(&now),
            [
                ("r1".to_string(), vec!["changed/**".to_string()]),
                ("r3".to_string(), vec!["c/**".to_string()])
            ]
        );
        let summary = std::fs::read_to_string(state.join(SUMMARY)).unwrap();
        assert!(!summary.contains("r2"), "{summary}");

        // A summary that lies about a name the listing does not show, or that does not
        // parse, changes nothing.
        std::fs::write(
            state.join(SUMMARY),
            r#"{"version":1,"pointers":{"r9.json":{"inode":1,"run":{"run":"r9","scope":["**"]}}}}"#,
        )
        .unwrap();
        assert_eq!(list_kept(state, none), now);
        std::fs::write(state.join(SUMMARY), "{").unwrap();
        assert_eq!(list_kept(state, none), now);
    }

    #[test]
    fn a_broken_pointer_is_reported_on_every_call_and_never_kept() {
        let (tmp, live) = state_with_live_folder();
        let state = tmp.path();
        pointer(&live, "r1", "a/**");
        std::fs::write(live.join("r2.json"), "{ not json").unwrap();
        for _ in 0..2 {
            let mut bad = Vec::new();
            let runs = list_kept(state, &mut |p, _| bad.push(p.to_path_buf()));
            assert_eq!(runs.len(), 1);
            assert_eq!(bad, [live.join("r2.json")]);
        }
        let summary = std::fs::read_to_string(state.join(SUMMARY)).unwrap();
        assert!(!summary.contains("r2"), "{summary}");
    }
}
