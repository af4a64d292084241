//! Telling the lead's `[notify]` command that a run needs help or has ended, so nobody
//! has to poll. The command runs in the repository, in a process group of its own, with
//! the run result (the object `show --json` prints as `"run"`) on stdin and its output
//! going to the run's supervisor log; it is killed, group and all, when its timeout
//! passes. Whatever it does — fail, hang, flood, vanish — the run's outcome is already
//! filed and stays as it is; what happened is one line of the supervisor log.

use std::io::{Seek, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::core::notify::{Notifier, notifies};
use crate::core::record::RunRecord;
use crate::state::runs::RunStore;

/// How the notify command came out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Told {
    /// The change is no news for the lead, or no command is configured.
    Nobody,
    /// It exited with this code (`None`: a signal ended it).
    Exited(Option<i32>),
    /// It took longer than its timeout: its process group was killed.
    Killed,
    /// It could not be started.
    Unstarted(String),
}

/// Runs the notify command of `record`'s run, now that it has moved to its phase; the
/// outcome is logged to the run's supervisor log and returned. Never fails the caller.
pub fn tell(store: &RunStore, repo_dir: &Path, record: &RunRecord) -> Told {
    if !notifies(record.phase) {
        return Told::Nobody;
    }
    let run_dir = store.run_dir(&record.run);
    let log_line = |line: String| {
        if let Ok(mut log) =
            super::output::open_append(&crate::core::layout::supervisor_log(&run_dir))
        {
            let _ = writeln!(log, "notify: {line}");
        }
    };
    // A run dispatched before `[notify]` existed has no file: nothing to tell.
    let notifier = match crate::state::run_files::notifier(&run_dir) {
        Ok(notifier) => notifier,
        Err(e) => {
            log_line(format!("the run's notify.json cannot be read: {e}"));
            None
        }
    };
    let Some(notifier) = notifier else {
        return Told::Nobody;
    };
    let told = run(&notifier, repo_dir, record, &run_dir);
    let shown = notifier.command.join(" ");
    let phase = record.phase.as_str();
    match &told {
        Told::Exited(Some(0)) => log_line(format!("`{shown}` told of {phase}")),
        Told::Exited(Some(code)) => {
            log_line(format!("`{shown}` exited {code} when told of {phase}"))
        }
        Told::Exited(None) => log_line(format!(
            "`{shown}` was ended by a signal when told of {phase}"
        )),
        Told::Killed => log_line(format!(
            "`{shown}` took longer than {}s when told of {phase}: killed",
            notifier.timeout_s
        )),
        Told::Unstarted(why) => log_line(format!("`{shown}` could not be started: {why}")),
        Told::Nobody => {}
    }
    told
}

fn run(notifier: &Notifier, repo_dir: &Path, record: &RunRecord, run_dir: &Path) -> Told {
    let Some((program, args)) = notifier.command.split_first() else {
        return Told::Nobody;
    };
    // The object `show --json` prints as "run": a run that parked or ended has no
    // supervisor to lose, so its `supervisor` is null.
    let result =
        crate::view::result::FoundResult::at(record, None, crate::sys::clock::now_millis());
    // Stdin is a file, not a pipe: a command that never reads it cannot block us on a
    // full pipe, and one that reads it gets all of it.
    let stdin = (|| -> std::io::Result<std::fs::File> {
        let mut file = tempfile::tempfile()?;
        serde_json::to_writer(&mut file, &result)?;
        file.write_all(b"\n")?;
        file.rewind()?;
        Ok(file)
    })();
    let stdin = match stdin {
        Ok(file) => file,
        Err(e) => return Told::Unstarted(format!("cannot write its input: {e}")),
    };
    // Its output goes to the log, a file: nothing it leaves running can hold a pipe of
    // ours open.
    let log = super::output::open_append(&crate::core::layout::supervisor_log(run_dir))
        .and_then(|log| Ok((log.try_clone()?, log)));
    let (out, err) = match log {
        Ok(pair) => (Stdio::from(pair.0), Stdio::from(pair.1)),
        Err(_) => (Stdio::null(), Stdio::null()),
    };
    // `./notify.sh` is the repository's: resolved there, whatever our own directory.
    let program = match Path::new(program) {
        p if p.is_relative() && program.contains('/') => repo_dir.join(p),
        p => p.to_path_buf(),
    };
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(repo_dir)
        .stdin(stdin)
        .stdout(out)
        .stderr(err)
        .env("GIT_CREW_RUN", &record.run)
        .env("GIT_CREW_TASK", &record.task)
        .env("GIT_CREW_PHASE", record.phase.as_str())
        .env(
            "GIT_CREW_OUTCOME",
            record.outcome.map(|o| o.as_str()).unwrap_or_default(),
        )
        .process_group(0);
    // It is the lead's command, not a worker: nothing says it works for a run (doctor
    // and abandon find a run's processes by `CREW_RUN`), and no git variable of ours
    // points it at a repository.
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("CREW_") {
            command.env_remove(key);
        }
    }
    for key in crate::git::run::GIT_REPO_VARS {
        command.env_remove(key);
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return Told::Unstarted(e.to_string()),
    };
    let deadline = Instant::now() + Duration::from_secs(notifier.timeout_s);
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Told::Exited(status.code()),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => break,
        }
    }
    crate::sys::process::kill_group(child.id());
    let _ = child.kill();
    let _ = child.wait();
    Told::Killed
}
