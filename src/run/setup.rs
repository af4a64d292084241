//! A run worktree's `[worktree] setup` (`npm ci`, `uv sync`, `git submodule update
//! --init`): `sh -c` in the new worktree, before the worker starts, inside the run's fence
//! and with the worker's environment, its output archived to the run's transcript under a
//! header of its own, within its own bound. Whose failure a failed setup is, and what it
//! says, is `core::toolchain`'s.

use crate::run::error::Result;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::process::{self, Ended, Spec};
use crate::core::toolchain::SetupEnd;

/// What a setup is run with.
pub struct Setup<'a> {
    pub run: &'a str,
    pub task: &'a str,
    pub command: &'a str,
    pub worktree: &'a Path,
    /// Its stdout and stderr while it runs (`setup.out`, `setup.err` in the run's folder).
    pub output: (PathBuf, PathBuf),
    pub transcript: &'a Path,
    pub env: Vec<(String, String)>,
    pub fence: Option<crate::sys::fence::Fence>,
    pub timeout: Duration,
    pub max_output: u64,
}

/// Runs a setup to its end; `tick` is called about once a second while it runs and
/// returns whether to stop it (its run was ended from outside). An interrupt of this
/// process stops it, and says so in its error.
pub fn run(setup: &Setup, tick: &mut dyn FnMut() -> bool) -> Result<SetupEnd, process::RunError> {
    let mut header = super::output::open_append(setup.transcript)?;
    std::io::Write::write_all(
        &mut header,
        format!(
            "\n===== git-crew run {} task {} setup `{}` at {} =====\n",
            setup.run,
            setup.task,
            setup.command,
            crate::core::stamp::seconds_of_millis(crate::sys::clock::now_millis()),
        )
        .as_bytes(),
    )?;
    let spec = Spec {
        program: "sh".into(),
        args: vec!["-c".into(), setup.command.into()],
        cwd: setup.worktree.to_path_buf(),
        env: setup.env.clone(),
        transcript: setup.transcript.to_path_buf(),
        stdout_file: setup.output.0.clone(),
        stderr_file: setup.output.1.clone(),
        max_output: setup.max_output,
        fence: setup.fence.clone(),
    };
    let running = match process::start(&spec, None) {
        Ok(running) => running,
        Err(e) => return Ok(SetupEnd::NotStarted(crate::fault::chain(&e))),
    };
    let deadline = Instant::now() + setup.timeout;
    let ended = running.watch(deadline, None, &mut |_| tick())?;
    Ok(match ended {
        Ended::Exited(code) => SetupEnd::Exited(code),
        Ended::Deadline | Ended::Idle => SetupEnd::TimedOut {
            after_s: setup.timeout.as_secs(),
        },
        Ended::Stopped => SetupEnd::Exited(None),
    })
}
