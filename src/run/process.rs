//! Processes: a worker in its own process group with every byte of its output archived,
//! watched against a deadline and an idle watchdog, and killed as a whole group.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::run::error::{Context, Result};

use super::output::Capped;
use crate::sys::clock::now_millis;
use crate::sys::process::{
    all_pids, environ, exists, group_and_session, interrupted, kill_group, parent, reap_one,
    sigkill, sigstop, state_and_parent, wait_child,
};

/// Supervisors this process started: its children, but no run's leftovers.
static SPARED: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// Keeps `pid` (a supervisor this process started for another run) out of
/// [`reap_orphans`].
pub fn spare(pid: u32) {
    if let Ok(mut spared) = SPARED.lock() {
        spared.push(pid);
    }
}

/// Every live descendant of `root` (not `root`), leaving out the subtrees of `spared`:
/// one scan of `/proc`, however deep the chain.
fn descendants(root: u32, spared: &[u32]) -> Vec<u32> {
    // Zombies are dead already: their parent reaps them.
    let parents: Vec<(u32, u32)> = all_pids()
        .into_iter()
        .filter_map(|pid| match state_and_parent(pid) {
            Some(('Z', _)) | None => None,
            Some((_, ppid)) => Some((pid, ppid)),
        })
        .collect();
    let mut children: std::collections::HashMap<u32, Vec<u32>> = Default::default();
    for (pid, ppid) in parents {
        children.entry(ppid).or_default().push(pid);
    }
    let mut tree = Vec::new();
    let mut next = vec![root];
    while let Some(parent) = next.pop() {
        for &child in children.get(&parent).map(Vec::as_slice).unwrap_or_default() {
            if !spared.contains(&child) && !tree.contains(&child) {
                tree.push(child);
                next.push(child);
            }
        }
    }
    tree
}

/// Stops, then kills, every process in `pids`: stopped first, none of them can fork a
/// replacement while the others die.
fn stop_and_kill(pids: &[u32]) {
    for pid in pids {
        sigstop(*pid);
    }
    for pid in pids {
        sigkill(*pid);
    }
}

/// Stops and kills every descendant of `root` (not `root` itself), round after round
/// until none is left: a process that forks as it dies cannot outrun it. Another run's
/// supervisor that `root` started (a session leader of its own, with its tree) is spared.
pub fn kill_descendants(root: u32) {
    for _ in 0..50 {
        let supervisors: Vec<u32> = descendants(root, &[])
            .into_iter()
            .filter(|&pid| {
                group_and_session(pid).is_some_and(|(_, sid)| sid == pid)
                    && std::fs::read(format!("/proc/{pid}/cmdline"))
                        .is_ok_and(|c| c.split(|b| *b == 0).any(|w| w == b"supervise"))
            })
            .collect();
        let tree = descendants(root, &supervisors);
        if tree.is_empty() {
            return;
        }
        stop_and_kill(&tree);
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kills every descendant of this process except the supervisors it started (and
/// theirs), and reaps its own children among them; what they leave behind comes back
/// here (a subreaper), so it goes round until none is left. Called when an attempt, a
/// verify or a commit ends: nothing a worker started outlives it, whatever it did to its
/// session, group or environment, however deep it forked. Returns how many it ended.
pub fn reap_orphans() -> usize {
    let me = std::process::id();
    let spared = SPARED.lock().map(|s| s.clone()).unwrap_or_default();
    let mut ended = 0;
    for _ in 0..50 {
        let tree = descendants(me, &spared);
        if tree.is_empty() {
            break;
        }
        stop_and_kill(&tree);
        for pid in &tree {
            if parent(*pid) == Some(me) {
                wait_child(*pid);
            }
        }
        // Those whose parents died with them come back to this process as zombies.
        while reap_one() {}
        ended += tree.len();
    }
    ended
}

/// Sends SIGKILL to every process of a session (the supervisor is a session leader, so
/// this reaches its workers even when the supervisor is gone or never recorded their pid).
pub fn kill_session(sid: u32) {
    if sid <= 1 {
        return;
    }
    for pid in all_pids() {
        if group_and_session(pid).is_some_and(|(_, session)| session == sid) {
            sigkill(pid);
        }
    }
}

/// Kills everything working for run `run`: every process whose environment carries
/// `CREW_RUN=<run>` (the worker, its children, even ones that left its session), and the
/// run's supervisor — but only a process that really is that supervisor, never whatever
/// now holds a recycled pid. A process that names another repository's worktree or run
/// folder (`CREW_WORKTREE`, `CREW_VERIFIER_DIR`) works for another run of the same id and
/// is spared; one that names neither is not.
pub fn kill_run(run: &str, supervisor_pid: Option<u32>, worktree: &str, run_dir: &Path) {
    if let Some(pid) = supervisor_pid
        && pid != std::process::id()
        && is_alive(pid, run)
    {
        // The supervisor is its workers' subreaper: what they left running (daemons that
        // dropped their environment) are its children now, and go first — with the
        // supervisor stopped, so it cannot file the run as its worker dies.
        sigstop(pid);
        kill_descendants(pid);
        kill_session(pid);
        sigkill(pid);
    }
    // Compared as the filesystem resolves them: a repository reached through a symlink
    // names the same folders.
    let canon = |p: &str| {
        std::fs::canonicalize(p)
            .map(|c| c.to_string_lossy().into_owned())
            .unwrap_or_else(|_| p.to_string())
    };
    let worktree = canon(worktree);
    let run_dir = canon(&run_dir.to_string_lossy());
    for pid in all_pids() {
        let env = environ(pid);
        if crate::sys::process::env_var(&env, "CREW_RUN").as_deref() != Some(run) {
            continue;
        }
        let elsewhere = match (
            crate::sys::process::env_var(&env, "CREW_WORKTREE"),
            crate::sys::process::env_var(&env, "CREW_VERIFIER_DIR"),
        ) {
            (None, None) => false,
            (wt, dir) => {
                wt.map(|w| canon(&w)).as_deref() != Some(worktree.as_str())
                    && !dir.is_some_and(|d| canon(&d).starts_with(&run_dir))
            }
        };
        if !elsewhere {
            sigkill(pid);
        }
    }
}

/// Whether process `pid` exists and its command line mentions `needle` (guards against
/// a recycled pid).
pub fn is_alive(pid: u32, needle: &str) -> bool {
    match std::fs::read(format!("/proc/{pid}/cmdline")) {
        Ok(cmdline) => {
            let text = String::from_utf8_lossy(&cmdline);
            // A zombie has an empty command line: it is gone for our purposes.
            !text.is_empty() && text.contains(needle)
        }
        Err(_) => exists(pid),
    }
}

/// What to start.
pub struct Spec {
    pub program: String,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    /// When the process ends, its output is appended here (stdout, then stderr).
    pub transcript: PathBuf,
    /// Stdout and stderr are kept here, each capped at `max_output` bytes (the first
    /// part and the latest part, the cut marked).
    pub stdout_file: PathBuf,
    pub stderr_file: PathBuf,
    pub max_output: u64,
    /// The write fence the process and its children run inside.
    pub fence: Option<crate::sys::fence::Fence>,
}

/// How a watched process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    Exited(Option<i32>),
    /// The deadline passed; the group was killed.
    Deadline,
    /// Silent longer than the idle watchdog allows; the group was killed.
    Idle,
    /// Stopped by what watched it (its output's observer, or its tick); the group was
    /// killed.
    Stopped,
}

/// Sees each piece of a worker's stdout as it arrives; `true` stops the worker.
pub type Observer = Box<dyn FnMut(&[u8]) -> bool + Send>;

/// A started worker.
pub struct Running {
    child: std::process::Child,
    readers: Vec<std::thread::JoinHandle<()>>,
    sinks: [Arc<Mutex<Capped>>; 2],
    transcript: PathBuf,
    stdout_file: PathBuf,
    stderr_file: PathBuf,
    last_activity: Arc<AtomicU64>,
    /// Set by the stdout observer to stop the worker.
    stop: Arc<AtomicBool>,
    pub pid: u32,
}

/// Starts a process in its own process group, stdin closed, output archived; `observe`
/// sees its stdout as it comes.
pub fn start(spec: &Spec, observe: Option<Observer>) -> Result<Running> {
    let sinks = [
        Arc::new(Mutex::new(Capped::create(
            &spec.stdout_file,
            spec.max_output,
        )?)),
        Arc::new(Mutex::new(Capped::create(
            &spec.stderr_file,
            spec.max_output,
        )?)),
    ];
    let mut cmd = Command::new(&spec.program);
    cmd.args(&spec.args)
        .current_dir(&spec.cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    for key in crate::git::run::GIT_REPO_VARS {
        cmd.env_remove(key);
    }
    // Workers and verifies run the worker's code: no variable of theirs points at a
    // service of the lead's (its tmux, ssh-agent, session bus, display).
    for key in crate::core::workenv::SCRUBBED {
        cmd.env_remove(key);
    }
    for (key, value) in &spec.env {
        cmd.env(key, value);
    }
    if let Some(fence) = &spec.fence {
        fence.apply_to(&mut cmd)?;
    }
    let mut child = cmd
        .spawn()
        .with_context(|| format!("cannot start `{}`", spec.program))?;
    let last_activity = Arc::new(AtomicU64::new(now_millis()));
    let mut readers = Vec::new();
    let stdout = child.stdout.take().context("stdout is piped")?;
    let stderr = child.stderr.take().context("stderr is piped")?;
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = observe.map(|observer| (observer, stop.clone()));
    readers.push(pump(
        stdout,
        sinks[0].clone(),
        last_activity.clone(),
        watcher,
    ));
    readers.push(pump(stderr, sinks[1].clone(), last_activity.clone(), None));
    let pid = child.id();
    Ok(Running {
        child,
        readers,
        sinks,
        transcript: spec.transcript.clone(),
        stdout_file: spec.stdout_file.clone(),
        stderr_file: spec.stderr_file.clone(),
        last_activity,
        stop,
        pid,
    })
}

/// Copies a stream into its capped file as it comes, a buffer at a time, showing each
/// buffer to the observer, if any, which may raise the stop flag.
fn pump(
    mut from: impl Read + Send + 'static,
    sink: Arc<Mutex<Capped>>,
    activity: Arc<AtomicU64>,
    mut watcher: Option<(Observer, Arc<AtomicBool>)>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    activity.store(now_millis(), Ordering::Relaxed);
                    if let Ok(mut sink) = sink.lock() {
                        sink.write(&buf[..n]);
                    }
                    if let Some((observe, stop)) = &mut watcher
                        && observe(&buf[..n])
                    {
                        stop.store(true, Ordering::Relaxed);
                    }
                }
            }
        }
    })
}

impl Running {
    /// Milliseconds since the epoch of the last output.
    pub fn last_activity(&self) -> u64 {
        self.last_activity.load(Ordering::Relaxed)
    }

    /// Waits for the process, killing its group at `deadline`, after `idle` of silence,
    /// or when its observer or `tick` says stop. `tick` runs about once a second while
    /// waiting (to refresh the live pointer) and returns whether to stop.
    pub fn watch(
        mut self,
        deadline: Instant,
        idle: Option<Duration>,
        tick: &mut dyn FnMut(u64) -> bool,
    ) -> Result<Ended, RunError> {
        let mut last_tick = Instant::now();
        let ended = loop {
            if let Some(status) = self
                .child
                .try_wait()
                .context("cannot wait for the worker")?
            {
                break Ended::Exited(status.code());
            }
            if Instant::now() >= deadline {
                break Ended::Deadline;
            }
            if self.stop.load(Ordering::Relaxed) {
                break Ended::Stopped;
            }
            if interrupted() {
                kill_group(self.pid);
                let _ = self.child.wait();
                reap_orphans();
                self.close_output();
                return Err(Interrupted.into());
            }
            if let Some(idle) = idle {
                let silent = now_millis().saturating_sub(self.last_activity());
                if silent >= idle.as_millis() as u64 {
                    break Ended::Idle;
                }
            }
            if last_tick.elapsed() >= Duration::from_secs(1) {
                last_tick = Instant::now();
                if tick(self.last_activity()) {
                    break Ended::Stopped;
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        // Whatever the worker left running in its group goes with it: no process is left
        // behind, and the output pipes close.
        kill_group(self.pid);
        let _ = self.child.wait();
        // What left the group (setsid, a double fork) came back to this process if it is
        // a subreaper: it goes too.
        reap_orphans();
        // A process that left the group and was not caught may still hold the output
        // pipes open: give the readers a moment to drain, then go on without them.
        let drained = Instant::now() + Duration::from_secs(2);
        while !self.readers.iter().all(|r| r.is_finished()) && Instant::now() < drained {
            std::thread::sleep(Duration::from_millis(10));
        }
        for reader in std::mem::take(&mut self.readers) {
            if reader.is_finished() {
                let _ = reader.join();
            }
        }
        self.close_output();
        Ok(ended)
    }

    /// Seals both capped files and appends them to the transcript.
    fn close_output(&self) {
        for sink in &self.sinks {
            if let Ok(mut sink) = sink.lock() {
                let _ = sink.finish();
            }
        }
        let _ = super::output::archive(&self.transcript, &self.stdout_file, &self.stderr_file);
    }
}

/// A watched process was stopped because this one was interrupted (SIGINT, SIGTERM).
#[derive(Debug, thiserror::Error)]
#[error("interrupted: the process it ran was stopped")]
pub struct Interrupted;

/// How running a process for the lead (a verify, and what integrate verifies) fails:
/// stopped because this process was interrupted, or failed underneath.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Interrupted(#[from] Interrupted),
    #[error(transparent)]
    Failed(#[from] crate::run::error::Error),
}

crate::run::error::failed_underneath!(RunError);

/// Where a process's error is the layer's: an interrupt keeps its words and its type.
impl From<RunError> for crate::run::error::Error {
    fn from(err: RunError) -> crate::run::error::Error {
        match err {
            RunError::Failed(err) => err,
            RunError::Interrupted(interrupted) => crate::run::error::Error::Within {
                what: interrupted.to_string(),
                source: Box::new(interrupted),
            },
        }
    }
}
