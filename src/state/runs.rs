//! Where runs live on disk, never committed: live pointers
//! (`<git-common-dir>/crew/live/<run>.json`), finished run records
//! (`crew/runs/<run>.json`, with the run's prompt and manifest in `crew/runs/<run>/`),
//! transcripts (`crew/transcripts/<task-hash>.log`) and worktrees
//! (`crew/worktrees/<run>`). Every write is atomic.

use std::path::{Path, PathBuf};

pub use super::error::Unreadable;
use super::error::{Context, Result};

use std::time::Duration;

use super::locks::Turn;
use crate::core::record::RunRecord;
use crate::core::supervisor::{self, Supervisor};
use crate::sys::fs::write_atomic;
use crate::sys::lock::Lock;

/// Which finished runs a [`Snapshot`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Finished {
    /// The `n` most recent.
    Recent(usize),
    /// Every one.
    All,
}

/// A run as a reader finds it: its record and, while it is live, whether its supervisor
/// is alive (`None` for a finished run, and for a live one with no supervisor to lose:
/// `core::supervisor::expected`).
#[derive(Debug, Clone)]
pub struct Found {
    pub record: RunRecord,
    pub supervisor: Option<Supervisor>,
}

/// The runs as a command that only reads finds them. Taking it writes nothing and takes
/// no lock: a run whose supervisor died is reported dead, not filed, and a queued run
/// stays queued. Settling is a step of the commands that act (`run::queue::settle`).
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Every live run, oldest first.
    pub live: Vec<Found>,
    /// The finished runs asked for, oldest first.
    pub finished: Vec<RunRecord>,
    /// How many older finished runs were left out.
    pub hidden: usize,
}

impl Snapshot {
    /// The live runs' records, oldest first.
    pub fn live_records(&self) -> impl Iterator<Item = &RunRecord> {
        self.live.iter().map(|found| &found.record)
    }

    /// Every run of the snapshot, live and finished together, oldest first.
    pub fn into_runs(self) -> Vec<Found> {
        let mut runs = self.live;
        runs.extend(self.finished.into_iter().map(|record| Found {
            record,
            supervisor: None,
        }));
        runs.sort_by(|a, b| {
            (a.record.started_at.cmp(&b.record.started_at)).then(a.record.run.cmp(&b.record.run))
        });
        runs
    }
}

/// The local state folder of one repository.
#[derive(Debug, Clone)]
pub struct RunStore {
    root: PathBuf,
}

impl RunStore {
    /// `state_dir` is `<git-common-dir>/crew`.
    pub fn new(state_dir: &Path) -> RunStore {
        RunStore {
            root: state_dir.to_path_buf(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Every live pointer lives here.
    pub fn live_dir(&self) -> PathBuf {
        self.root.join("live")
    }

    pub fn live_path(&self, run: &str) -> PathBuf {
        self.root.join("live").join(format!("{run}.json"))
    }

    pub fn record_path(&self, run: &str) -> PathBuf {
        self.root.join("runs").join(format!("{run}.json"))
    }

    /// Every run's folder lives here.
    pub fn runs_dir(&self) -> PathBuf {
        self.root.join("runs")
    }

    /// The folder holding a run's prompt, manifest and supervisor log.
    pub fn run_dir(&self, run: &str) -> PathBuf {
        crate::core::layout::run_dir(&self.root, run)
    }

    /// Every run's worktree lives here.
    pub fn worktrees_dir(&self) -> PathBuf {
        self.root.join("worktrees")
    }

    pub fn worktree_path(&self, run: &str) -> PathBuf {
        self.root.join("worktrees").join(run)
    }

    /// A task's transcript, named by the blob id of `crew-task:<task>` (the same key the
    /// ledger uses), so any task id gives a safe file name.
    pub fn transcript_path(&self, task: &str) -> PathBuf {
        let key = format!("crew-task:{task}");
        let id = crate::git::objects::blob_id(key.as_bytes())
            .map(|id| id.to_string())
            .unwrap_or_else(|_| task.replace('/', "_"));
        self.root.join("transcripts").join(format!("{id}.log"))
    }

    /// The run's own lock, for a change of hands (advise, attach, deliver): one at a time,
    /// each re-reading the pointer under it, so no two of them move a run together.
    pub fn run_lock(&self, run: &str) -> Result<Lock> {
        super::locks::take(&self.root, Turn::Run(run), Duration::from_secs(30))
    }

    /// Held by the one supervisor driving `run` for its whole life: a second supervisor
    /// waits until the first is gone (it parked the run and is exiting), then drives it.
    pub fn supervisor_lock(&self, run: &str) -> Result<Lock> {
        super::locks::take(&self.root, Turn::Supervisor(run), Duration::from_secs(30))
    }

    /// The turn of a dispatch or a queue promotion: their check-then-act on slots and
    /// scopes never interleaves.
    pub fn dispatch_lock(&self, wait: Duration) -> Result<Lock> {
        super::locks::take(&self.root, Turn::Dispatch, wait)
    }

    /// The turn of an integration: one at a time, across processes.
    pub fn integrate_lock(&self, wait: Duration) -> Result<Lock> {
        super::locks::take(&self.root, Turn::Integrate, wait)
    }

    /// [`RunStore::integrate_lock`] for a look that must change nothing: taken when its
    /// file is there, else `None` and nothing is made (no process ever took it).
    pub fn integrate_lock_if_there(&self, wait: Duration) -> Result<Option<Lock>> {
        super::locks::take_if_there(&self.root, Turn::Integrate, wait)
    }

    /// [`RunStore::dispatch_lock`] for a look that must change nothing, as
    /// [`RunStore::integrate_lock_if_there`].
    pub fn dispatch_lock_if_there(&self, wait: Duration) -> Result<Option<Lock>> {
        super::locks::take_if_there(&self.root, Turn::Dispatch, wait)
    }

    /// Serialises every change to live pointers across processes.
    fn pointer_lock(&self) -> Result<Lock> {
        super::locks::take(&self.root, Turn::Pointers, Duration::from_secs(30))
    }

    /// Writes a new live pointer (dispatch).
    pub fn write_live(&self, record: &RunRecord) -> Result<()> {
        let _lock = self.pointer_lock()?;
        write_json(&self.live_path(&record.run), record)
    }

    /// Rewrites a live pointer only while the run is still live; `false` when someone
    /// else has ended it (the pointer is gone), so an ended run is never brought back.
    pub fn update_live(&self, record: &RunRecord) -> Result<bool> {
        let _lock = self.pointer_lock()?;
        if !self.live_path(&record.run).exists() {
            return Ok(false);
        }
        write_json(&self.live_path(&record.run), record)?;
        Ok(true)
    }

    /// Marks run `run`'s live pointer as written now, its content unchanged (a dispatch
    /// still preparing the run says it is alive: see `core::supervisor::START_GRACE`);
    /// `false` when there is no pointer, and none is made.
    pub fn touch_live(&self, run: &str) -> bool {
        std::fs::File::options()
            .write(true)
            .open(self.live_path(run))
            .and_then(|f| f.set_modified(std::time::SystemTime::now()))
            .is_ok()
    }

    /// Ends a run: files its record and removes its live pointer, only if the run is
    /// still live — exactly one of the processes that may end a run (its supervisor,
    /// abandon, the reaper) wins; the others get `false`. The record is written before the
    /// pointer goes, so a crash in between leaves both rather than neither.
    ///
    /// `also` runs inside the same critical section, before the run shows as finished
    /// (the ledger row: whoever sees the run finished also sees its row).
    pub fn finish(&self, record: &RunRecord, also: impl FnOnce()) -> Result<bool> {
        let _lock = self.pointer_lock()?;
        let live = self.live_path(&record.run);
        if !live.exists() {
            return Ok(false);
        }
        write_json(&self.record_path(&record.run), record)?;
        crate::sys::failpoint::crash("finish-after-record");
        also();
        std::fs::remove_file(&live).context("cannot remove the live pointer")?;
        Ok(true)
    }

    /// Completes an ending that a crash cut short: the run's record was filed (with the
    /// verdict its seal holds) but its pointer is still there. `also` files what the
    /// ending files beside the record when it is missing; the filed record is kept, never
    /// overwritten. `None` when there is no such half-finished ending.
    pub fn complete_finish(
        &self,
        run: &str,
        also: impl FnOnce(&RunRecord),
    ) -> Result<Option<RunRecord>> {
        let _lock = self.pointer_lock()?;
        let live = self.live_path(run);
        if !live.exists() {
            return Ok(None);
        }
        let Some(record) = read_json(&self.record_path(run)).ok().flatten() else {
            return Ok(None);
        };
        if !record.phase.is_final() {
            return Ok(None);
        }
        also(&record);
        std::fs::remove_file(&live).context("cannot remove the live pointer")?;
        Ok(Some(record))
    }

    /// Rewrites a finished run's record (integrate marks it integrated); `false` when the
    /// run is not finished.
    pub fn update_record(&self, record: &RunRecord) -> Result<bool> {
        let _lock = self.pointer_lock()?;
        let path = self.record_path(&record.run);
        if !path.exists() || self.live_path(&record.run).exists() {
            return Ok(false);
        }
        write_json(&path, record)?;
        Ok(true)
    }

    /// A run's current live pointer, read under the pointer lock.
    pub fn load_live(&self, run: &str) -> Result<Option<RunRecord>> {
        let _lock = self.pointer_lock()?;
        Ok(read_json(&self.live_path(run))?)
    }

    /// A run's finished record, if it has one (whether or not its pointer is still there).
    pub fn load_record(&self, run: &str) -> Result<Option<RunRecord>, Unreadable> {
        read_json(&self.record_path(run))
    }

    /// A run, live or finished (the live pointer wins while both exist).
    pub fn load(&self, run: &str) -> Result<Option<RunRecord>, Unreadable> {
        for path in [self.live_path(run), self.record_path(run)] {
            if let Some(record) = read_json(&path)? {
                return Ok(Some(record));
            }
        }
        Ok(None)
    }

    /// Every live run, oldest first. A pointer that cannot be read is there as a
    /// stand-in (its `unreadable` says why) holding the task and scope sealed at dispatch:
    /// a broken pointer never frees its task or scope.
    pub fn live(&self) -> Result<Vec<RunRecord>> {
        let mut records = Vec::new();
        let Ok(entries) = std::fs::read_dir(self.root.join("live")) else {
            return Ok(records);
        };
        // Opened only for a pointer that cannot be read (status reads this in loops).
        let mut repo: Option<Option<crate::git::Repository>> = None;
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            match read_json(&path) {
                Ok(Some(record)) => records.push(record),
                Ok(None) => {}
                Err(err) => {
                    let Some(run) = path
                        .file_stem()
                        .and_then(|s| s.to_str())
                        .filter(|s| crate::core::record::is_run_id(s))
                    else {
                        continue;
                    };
                    let repo = repo.get_or_insert_with(|| {
                        self.root
                            .parent()
                            .and_then(|common| crate::git::repo::open(common).ok())
                    });
                    let sealed = repo
                        .as_ref()
                        .and_then(|repo| crate::git::seal::read(repo, run).ok().flatten());
                    records.push(crate::core::seal::stand_in(run, sealed.as_ref(), err.why));
                }
            }
        }
        records.sort_by(|a, b| a.started_at.cmp(&b.started_at).then(a.run.cmp(&b.run)));
        Ok(records)
    }

    /// What the process table and the pointer's file say of live run `record`'s
    /// supervisor, read without a lock.
    pub fn supervisor_facts(&self, record: &RunRecord) -> supervisor::Facts {
        let process = record
            .supervisor_pid
            .map(|pid| match crate::sys::process::cmdline(pid) {
                Some(cmdline) => supervisor::Process::Listed { cmdline },
                None => supervisor::Process::Unlisted {
                    exists: crate::sys::process::exists(pid),
                },
            });
        // The pointer's age matters only while it names no supervisor.
        let pointer_age = match process {
            Some(_) => None,
            None => std::fs::metadata(self.live_path(&record.run))
                .and_then(|m| m.modified())
                .ok()
                .map(|t| t.elapsed().unwrap_or_default()),
        };
        supervisor::Facts {
            process,
            pointer_age,
        }
    }

    /// Live run `record`'s supervisor as found (`core::supervisor::judge`); `None` when
    /// it has none to lose.
    pub fn supervisor(&self, record: &RunRecord) -> Option<Supervisor> {
        supervisor::judge(record, &self.supervisor_facts(record))
    }

    /// The runs as they are: every live run with its supervisor judged, and the finished
    /// runs `finished` asks for. Nothing is written, no lock taken.
    pub fn snapshot(&self, finished: Finished) -> Result<Snapshot> {
        let live = self
            .live()?
            .into_iter()
            .map(|record| Found {
                supervisor: self.supervisor(&record),
                record,
            })
            .collect();
        let (finished, hidden) = match finished {
            Finished::Recent(n) => self.finished_recent(n)?,
            Finished::All => (self.finished()?, 0),
        };
        Ok(Snapshot {
            live,
            finished,
            hidden,
        })
    }

    /// One run as it is, live or finished (the live pointer wins while both exist), with
    /// its supervisor judged while it is live. Nothing is written, no lock taken.
    pub fn found(&self, run: &str) -> Result<Option<Found>, Unreadable> {
        if let Some(record) = read_json(&self.live_path(run))? {
            return Ok(Some(Found {
                supervisor: self.supervisor(&record),
                record,
            }));
        }
        Ok(read_json(&self.record_path(run))?.map(|record| Found {
            record,
            supervisor: None,
        }))
    }

    /// Every finished run, oldest first.
    pub fn finished(&self) -> Result<Vec<RunRecord>> {
        Ok(list(&self.root.join("runs"))?.0)
    }

    /// The finished runs that passed and are not integrated, however old, oldest first.
    /// Every record is glanced at for those two fields alone; only these are read whole.
    /// A record that cannot be read is passed over (`doctor` names it).
    pub fn passed_not_integrated(&self) -> Vec<RunRecord> {
        #[derive(serde::Deserialize)]
        struct Glance {
            outcome: Option<crate::core::record::Outcome>,
            integration: Option<serde::de::IgnoredAny>,
        }
        let Ok(entries) = std::fs::read_dir(self.runs_dir()) else {
            return Vec::new();
        };
        let mut records: Vec<RunRecord> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .filter_map(|path| std::fs::read(path).ok())
            .filter(|bytes| {
                serde_json::from_slice::<Glance>(bytes).is_ok_and(|g| {
                    g.outcome == Some(crate::core::record::Outcome::Pass) && g.integration.is_none()
                })
            })
            .filter_map(|bytes| serde_json::from_slice(&bytes).ok())
            .collect();
        records.sort_by(|a, b| a.started_at.cmp(&b.started_at).then(a.run.cmp(&b.run)));
        records
    }

    /// Every finished run, oldest first, and each record on file that cannot be read
    /// (`doctor` names them; the other commands pass over them).
    pub fn finished_and_unreadable(&self) -> Result<(Vec<RunRecord>, Vec<Unreadable>)> {
        list(&self.root.join("runs"))
    }

    /// Every run id on file, live or finished, from the file names alone: no record is
    /// read and no lock taken (a TAB lists them).
    pub fn ids(&self) -> Vec<String> {
        let mut ids = Vec::new();
        for dir in ["live", "runs"] {
            let Ok(entries) = std::fs::read_dir(self.root.join(dir)) else {
                continue;
            };
            ids.extend(entries.flatten().filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let run = name.strip_suffix(".json")?;
                crate::core::record::is_run_id(run).then(|| run.to_string())
            }));
        }
        ids
    }

    /// `(run, task)` for each of `runs` whose pointer or record can be read, without a
    /// lock; the others are left out.
    pub fn tasks_of(&self, runs: &[&str]) -> Vec<(String, String)> {
        #[derive(serde::Deserialize)]
        struct TaskOnly {
            task: String,
        }
        runs.iter()
            .filter_map(|run| {
                let found = [self.live_path(run), self.record_path(run)]
                    .iter()
                    .find_map(|path| {
                        let bytes = std::fs::read(path).ok()?;
                        serde_json::from_slice::<TaskOnly>(&bytes).ok()
                    })?;
                Some((run.to_string(), found.task))
            })
            .collect()
    }

    /// The `n` most recent finished runs, oldest first, and how many older ones were
    /// left out. Run ids sort by time, so only those `n` records are read, however many
    /// are on file.
    pub fn finished_recent(&self, n: usize) -> Result<(Vec<RunRecord>, usize)> {
        let dir = self.root.join("runs");
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return Ok((Vec::new(), 0));
        };
        let mut names: Vec<String> = entries
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| n.ends_with(".json"))
            .collect();
        names.sort_unstable();
        let skip = names.len().saturating_sub(n);
        let mut records = Vec::with_capacity(n);
        for name in &names[skip..] {
            if let Some(record) = read_json(&dir.join(name))? {
                records.push(record);
            }
        }
        Ok((records, skip))
    }
}

fn write_json(path: &Path, record: &RunRecord) -> Result<()> {
    let dir = path.parent().context("a record path has a parent")?;
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let text = serde_json::to_string_pretty(record)?;
    Ok(write_atomic(path, &text, 0o644)?)
}

fn read_json(path: &Path) -> Result<Option<RunRecord>, Unreadable> {
    let unreadable = |why: String| Unreadable {
        run: path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        path: path.to_path_buf(),
        why,
    };
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| unreadable(e.to_string())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(unreadable(e.to_string())),
    }
}

fn list(dir: &Path) -> Result<(Vec<RunRecord>, Vec<Unreadable>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok((Vec::new(), Vec::new()));
    };
    let mut records = Vec::new();
    let mut unreadable = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "json") {
            // One broken file must not hide every other run (doctor reports it).
            match read_json(&path) {
                Ok(Some(record)) => records.push(record),
                Ok(None) => {}
                Err(e) => unreadable.push(e),
            }
        }
    }
    records.sort_by(|a, b| a.started_at.cmp(&b.started_at).then(a.run.cmp(&b.run)));
    unreadable.sort_by(|a, b| a.run.cmp(&b.run));
    Ok((records, unreadable))
}
