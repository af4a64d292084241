//! Which runs changed: one thread per server watches the folders a run's state lives in
//! (`<git-common-dir>/crew/live/` for live pointers, `crew/runs/` for finished records;
//! every write there is an atomic rename) through the kernel (`sys::watch`, inotify), so
//! nothing polls the disk. On each event it reads only the runs the changed files name and
//! compares what a lead cares about — the phase, and whether the run is integrated — with
//! what it saw last; the runs that moved are broadcast to every session. Where inotify
//! cannot be had (no watch left), it falls back to one `stat` of the two folders every two
//! seconds, re-reading the runs only when a folder's modification time moved.
//!
//! It only reads: no lock is taken, nothing is written.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::broadcast;

use crate::core::record::{Phase, RunRecord, is_run_id};
use crate::state::runs::{Finished, RunStore};
use crate::sys::watch::Watcher;

/// The runs that changed phase (or were integrated) since the last broadcast.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Moved {
    /// The runs, by id.
    pub runs: BTreeSet<String>,
    /// A run appeared or went away: the list of runs changed.
    pub listed: bool,
}

/// What a lead watches of a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seen {
    phase: Phase,
    integrated: bool,
}

impl Seen {
    fn of(record: &RunRecord) -> Seen {
        Seen {
            phase: record.phase,
            integrated: record.integration.is_some(),
        }
    }
}

/// The runs as last seen, and what moved when they are seen again.
struct Runs {
    store: RunStore,
    seen: HashMap<String, Seen>,
}

impl Runs {
    fn new(store: RunStore) -> Runs {
        let mut runs = Runs {
            store,
            seen: HashMap::new(),
        };
        runs.seen = runs.everything();
        runs
    }

    /// Every run as it is now (nothing when the store cannot be read).
    fn everything(&self) -> HashMap<String, Seen> {
        self.store
            .snapshot(Finished::All)
            .map(|s| {
                s.into_runs()
                    .iter()
                    .map(|f| (f.record.run.clone(), Seen::of(&f.record)))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Reads `runs` again; what moved.
    fn look_at(&mut self, runs: impl IntoIterator<Item = String>) -> Moved {
        let mut moved = Moved::default();
        for run in runs {
            let now = self.store.load(&run).ok().flatten().map(|r| Seen::of(&r));
            let before = match now {
                Some(seen) => self.seen.insert(run.clone(), seen),
                None => self.seen.remove(&run),
            };
            if before != now {
                moved.listed |= before.is_none() || now.is_none();
                moved.runs.insert(run);
            }
        }
        moved
    }

    /// Reads every run again; what moved.
    fn look_at_everything(&mut self) -> Moved {
        let mut names: BTreeSet<String> = self.seen.keys().cloned().collect();
        names.extend(self.everything().into_keys());
        self.look_at(names)
    }
}

/// The run a file of the live or runs folder belongs to: `<run>.json`.
fn run_of(name: &str) -> Option<String> {
    let stem = name.strip_suffix(".json")?;
    is_run_id(stem).then(|| stem.to_string())
}

/// Starts watching `store`'s runs; every session subscribes to the sender.
pub fn start(store: RunStore) -> broadcast::Sender<Arc<Moved>> {
    let (sender, _) = broadcast::channel(64);
    let tell = sender.clone();
    let spawned = std::thread::Builder::new()
        .name("crew-mcp-watch".into())
        .spawn(move || {
            let runs = Runs::new(store);
            let runs = match watch(runs, &tell) {
                Ok(never) => match never {},
                Err(runs) => runs,
            };
            poll(runs, &tell);
        });
    // Without the thread, nothing is told; the tools still work.
    drop(spawned);
    sender
}

/// The folders a run's state lives in: the live pointers and the finished records.
fn folders(store: &RunStore) -> [PathBuf; 2] {
    [store.live_dir(), store.runs_dir()]
}

/// Watches through the kernel until it fails; gives the runs back for the fallback.
fn watch(
    mut runs: Runs,
    tell: &broadcast::Sender<Arc<Moved>>,
) -> Result<std::convert::Infallible, Runs> {
    let Ok(mut watcher) = Watcher::new() else {
        return Err(runs);
    };
    let root = runs.store.root().to_path_buf();
    let [live, finished] = folders(&runs.store);
    // The state folder and its two folders may not exist yet: watch the nearest parent
    // that does, and add each as it appears.
    let add = |watcher: &mut Watcher| -> std::io::Result<()> {
        for folder in [&live, &finished] {
            if folder.is_dir() && !watcher.watches(folder) {
                watcher.add(folder)?;
            }
        }
        if root.is_dir() {
            watcher.add(&root)
        } else {
            match root.parent() {
                Some(parent) => watcher.add(parent),
                None => Ok(()),
            }
        }
    };
    if add(&mut watcher).is_err() {
        return Err(runs);
    }
    // What happened before the watches were up.
    send(tell, runs.look_at_everything());
    loop {
        let Ok(events) = watcher.read() else {
            return Err(runs);
        };
        // One of the folders (or the state folder holding them) came into being.
        let appeared = events.changed.iter().any(|c| {
            let path = c.folder.join(&c.name);
            path == root || path == live || path == finished
        });
        if appeared && add(&mut watcher).is_err() {
            return Err(runs);
        }
        let moved = if events.overflowed || appeared {
            runs.look_at_everything()
        } else {
            let names: BTreeSet<String> = events
                .changed
                .iter()
                .filter(|c| c.folder == live || c.folder == finished)
                .filter_map(|c| run_of(&c.name))
                .collect();
            runs.look_at(names)
        };
        send(tell, moved);
    }
}

/// The fallback: a `stat` of each folder every two seconds; the runs are read again only
/// when one's modification time moved (a rename into or out of it moves it).
fn poll(mut runs: Runs, tell: &broadcast::Sender<Arc<Moved>>) {
    let stamp = |folder: &Path| -> Option<SystemTime> {
        std::fs::metadata(folder).and_then(|m| m.modified()).ok()
    };
    let mut last: Vec<Option<SystemTime>> = Vec::new();
    loop {
        let now: Vec<Option<SystemTime>> = folders(&runs.store).iter().map(|f| stamp(f)).collect();
        if now != last {
            last = now;
            send(tell, runs.look_at_everything());
        }
        std::thread::sleep(Duration::from_secs(2));
    }
}

fn send(tell: &broadcast::Sender<Arc<Moved>>, moved: Moved) {
    if !moved.runs.is_empty() {
        // No session listening is not a failure.
        let _ = tell.send(Arc::new(moved));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_run_record_names_a_run() {
        assert_eq!(
            run_of("20261202-101500-1a2b.json").as_deref(),
            Some("20261202-101500-1a2b")
        );
        assert_eq!(run_of("20261202-101500-1a2b.json.tmp"), None);
        assert_eq!(run_of(".20261202-101500-1a2b.json"), None);
        assert_eq!(run_of("20261202-101500-1a2b"), None);
    }

    fn record(run: &str, phase: Phase) -> RunRecord {
        let mut r = RunRecord::example();
        r.run = run.into();
        r.phase = phase;
        r
    }

    #[test]
    fn a_run_moves_when_its_phase_changes_or_it_is_integrated_and_not_otherwise() {
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::new(dir.path());
        let run = "20261202-101500-1a2b";
        let mut r = record(run, Phase::Working);
        r.integration = None;
        store.write_live(&r).unwrap();
        let mut runs = Runs::new(store.clone());
        assert_eq!(runs.look_at([run.to_string()]), Moved::default());
        r.last_activity_at = Some(r.started_at);
        store.write_live(&r).unwrap();
        assert_eq!(runs.look_at([run.to_string()]), Moved::default());
        r.phase = Phase::NeedsHelp;
        store.write_live(&r).unwrap();
        let moved = runs.look_at([run.to_string()]);
        assert_eq!(moved.runs.iter().collect::<Vec<_>>(), [run]);
        assert!(!moved.listed);
        let other = "20261202-101600-3c4d";
        store.write_live(&record(other, Phase::Queued)).unwrap();
        let moved = runs.look_at_everything();
        assert_eq!(moved.runs.iter().collect::<Vec<_>>(), [other]);
        assert!(moved.listed);
    }
}
