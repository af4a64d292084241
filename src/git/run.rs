//! The `git` binary, for what must go through git itself (writes to the user's config).
//! Every call goes through [`GitRunner`] so it can move in-process later without
//! touching callers.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// Variables git sets for hooks that point at a repository or an index: a process
/// git-crew starts for another worktree must not inherit them.
pub const GIT_REPO_VARS: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_PREFIX",
    "GIT_COMMON_DIR",
    "GIT_OBJECT_DIRECTORY",
];

/// Runs `git` in one directory.
pub struct GitRunner {
    dir: PathBuf,
    env: Vec<(String, String)>,
    /// `-c key=value` given before the subcommand.
    config: Vec<String>,
    /// The write fence git (and every hook it runs) goes inside: git run in a worker's
    /// worktree runs what the worker can change there (hooks in the work tree, filters).
    fence: Option<crate::sys::fence::Fence>,
}

impl GitRunner {
    pub fn new(dir: &Path) -> GitRunner {
        GitRunner {
            dir: dir.to_path_buf(),
            env: Vec::new(),
            config: Vec::new(),
            fence: None,
        }
    }

    /// The same runner, with `-c key=value` for every command.
    pub fn with_config(mut self, key_value: &str) -> GitRunner {
        self.config.push(key_value.to_string());
        self
    }

    /// The same runner, with one more variable in git's environment (and its hooks').
    pub fn with_env(mut self, key: &str, value: &str) -> GitRunner {
        self.env.push((key.to_string(), value.to_string()));
        self
    }

    /// The same runner, with git inside a write fence.
    pub fn with_fence(mut self, fence: Option<crate::sys::fence::Fence>) -> GitRunner {
        self.fence = fence;
        self
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("git");
        // Run from inside a hook, git-crew inherits variables that point at another
        // repository or index; `-C` must decide.
        for key in GIT_REPO_VARS {
            cmd.env_remove(key);
        }
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd.arg("-C").arg(&self.dir);
        for kv in &self.config {
            cmd.arg("-c").arg(kv);
        }
        cmd.args(args);
        cmd
    }

    /// Runs git and returns its stdout; a non-zero exit is an error carrying stderr.
    pub fn output(&self, args: &[&str]) -> anyhow::Result<String> {
        stdout_of(args, self.command(args))
    }

    /// Runs git with `stdin` as its input and returns its stdout; a non-zero exit is an
    /// error carrying stderr.
    pub fn output_with_stdin(&self, args: &[&str], stdin: std::fs::File) -> anyhow::Result<String> {
        let mut cmd = self.command(args);
        cmd.stdin(stdin);
        stdout_of(args, cmd)
    }

    /// Runs git and returns what it did, whatever its exit code.
    pub fn raw(&self, args: &[&str]) -> anyhow::Result<std::process::Output> {
        self.command(args)
            .output()
            .with_context(|| format!("cannot run git {}", args.join(" ")))
    }

    /// Runs git in its own process group with a time limit: `None` when it ran past
    /// `timeout` (its whole group — hooks included — is killed), else whether it
    /// succeeded and everything it printed. Output goes through a file, so a chatty hook
    /// can never fill a pipe and stall.
    pub fn raw_within(
        &self,
        args: &[&str],
        timeout: Duration,
    ) -> anyhow::Result<Option<(bool, String)>> {
        let mut out = tempfile::tempfile()?;
        let Some(success) = self.spawn_within(args, None, &out, &out, timeout)? else {
            return Ok(None);
        };
        Ok(Some((
            success,
            String::from_utf8_lossy(&read_back(&mut out)?).into_owned(),
        )))
    }

    /// [`GitRunner::raw_within`] with git's exit code (`None` when a signal ended it)
    /// rather than whether it succeeded: for `git hook run`, whose code is the hook's.
    pub fn code_within(
        &self,
        args: &[&str],
        timeout: Duration,
    ) -> anyhow::Result<Option<(Option<i32>, String)>> {
        let mut out = tempfile::tempfile()?;
        let Some(status) = self.status_within(args, None, &out, &out, timeout)? else {
            return Ok(None);
        };
        Ok(Some((
            status.code(),
            String::from_utf8_lossy(&read_back(&mut out)?).into_owned(),
        )))
    }

    /// [`GitRunner::raw_within`] with `stdin` as git's input and its stdout kept apart
    /// from its stderr.
    pub fn within(
        &self,
        args: &[&str],
        stdin: Option<std::fs::File>,
        timeout: Duration,
    ) -> anyhow::Result<Option<Finished>> {
        let mut out = tempfile::tempfile()?;
        let mut err = tempfile::tempfile()?;
        let Some(success) = self.spawn_within(args, stdin, &out, &err, timeout)? else {
            return Ok(None);
        };
        Ok(Some(Finished {
            success,
            stdout: read_back(&mut out)?,
            stderr: String::from_utf8_lossy(&read_back(&mut err)?).into_owned(),
        }))
    }

    /// Runs git (inside the runner's fence) in its own process group, its output into
    /// `out` and `err`, and waits for it at most `timeout`: whether it succeeded, or
    /// `None` when it ran past and its whole group was killed.
    fn spawn_within(
        &self,
        args: &[&str],
        stdin: Option<std::fs::File>,
        out: &std::fs::File,
        err: &std::fs::File,
        timeout: Duration,
    ) -> anyhow::Result<Option<bool>> {
        Ok(self
            .status_within(args, stdin, out, err, timeout)?
            .map(|status| status.success()))
    }

    /// [`GitRunner::spawn_within`], with git's exit status.
    fn status_within(
        &self,
        args: &[&str],
        stdin: Option<std::fs::File>,
        out: &std::fs::File,
        err: &std::fs::File,
        timeout: Duration,
    ) -> anyhow::Result<Option<std::process::ExitStatus>> {
        use std::os::unix::process::CommandExt;
        let mut cmd = self.command(args);
        if let Some(fence) = &self.fence {
            fence.apply_to(&mut cmd)?;
        }
        cmd.stdin(stdin.map_or_else(Stdio::null, Stdio::from))
            .stdout(out.try_clone()?)
            .stderr(err.try_clone()?)
            .process_group(0);
        let mut child = cmd
            .spawn()
            .with_context(|| format!("cannot run git {}", args.join(" ")))?;
        let start = Instant::now();
        loop {
            if let Some(status) = child.try_wait()? {
                return Ok(Some(status));
            }
            if start.elapsed() > timeout {
                crate::sys::process::kill_group(child.id());
                let _ = child.wait();
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Every value of a key in the repository's own config (`--local`); empty when unset.
    pub fn local_values(&self, key: &str) -> anyhow::Result<Vec<String>> {
        self.values(&["--local"], key)
    }

    /// The values of a key in one config file, in order (`file` need not exist).
    pub fn file_values(&self, file: &Path, key: &str) -> anyhow::Result<Vec<String>> {
        self.values(&["--file", &file.to_string_lossy()], key)
    }

    /// The values of a key in every scope git reads, in order, each with its scope
    /// (`global`, `system`, `local`, `worktree`, `command`).
    pub fn scoped_values(&self, key: &str) -> anyhow::Result<Vec<(String, String)>> {
        Ok(self
            .values(&["--show-scope"], key)?
            .iter()
            .filter_map(|line| line.split_once('\t'))
            .map(|(scope, value)| (scope.to_string(), value.to_string()))
            .collect())
    }

    fn values(&self, scope: &[&str], key: &str) -> anyhow::Result<Vec<String>> {
        let mut args = vec!["config"];
        args.extend_from_slice(scope);
        args.extend_from_slice(&["--get-all", key]);
        let out = self
            .command(&args)
            .output()
            .with_context(|| format!("cannot run git config --get-all {key}"))?;
        // Exit 1 means "no such key".
        match out.status.code() {
            Some(0) => Ok(String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(str::to_string)
                .collect()),
            Some(1) => Ok(Vec::new()),
            _ => bail!(
                "git config --get-all {key} failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        }
    }

    /// Every `(key, value)` of one config file, keys as git prints them (section and name
    /// in lower case); empty when the file does not exist.
    pub fn file_entries(&self, file: &Path) -> anyhow::Result<Vec<(String, String)>> {
        if !file.exists() {
            return Ok(Vec::new());
        }
        let list = self.output(&["config", "--file", &file.to_string_lossy(), "--list"])?;
        Ok(list
            .lines()
            .map(|line| match line.split_once('=') {
                Some((key, value)) => (key.to_string(), value.to_string()),
                None => (line.to_string(), String::new()),
            })
            .collect())
    }

    /// Sets a single-valued key of one config file (created when missing).
    pub fn set_in_file(&self, file: &Path, key: &str, value: &str) -> anyhow::Result<()> {
        self.output(&["config", "--file", &file.to_string_lossy(), key, value])
            .map(drop)
    }

    /// Adds a value to a key of one config file (created when missing).
    pub fn add_in_file(&self, file: &Path, key: &str, value: &str) -> anyhow::Result<()> {
        self.output(&[
            "config",
            "--file",
            &file.to_string_lossy(),
            "--add",
            key,
            value,
        ])
        .map(drop)
    }

    /// Removes exactly one value of a key from one config file.
    pub fn unset_in_file(&self, file: &Path, key: &str, value: &str) -> anyhow::Result<()> {
        self.output(&[
            "config",
            "--file",
            &file.to_string_lossy(),
            "--fixed-value",
            "--unset-all",
            key,
            value,
        ])
        .map(drop)
    }

    /// Adds a value to a (multi-valued) key of the repository's own config.
    pub fn add_local(&self, key: &str, value: &str) -> anyhow::Result<()> {
        self.output(&["config", "--local", "--add", key, value])
            .map(drop)
    }

    /// Sets a single-valued key of the repository's own config.
    pub fn set_local(&self, key: &str, value: &str) -> anyhow::Result<()> {
        self.output(&["config", "--local", key, value]).map(drop)
    }

    /// Removes exactly one value of a key from the repository's own config.
    pub fn unset_local(&self, key: &str, value: &str) -> anyhow::Result<()> {
        self.output(&[
            "config",
            "--local",
            "--fixed-value",
            "--unset-all",
            key,
            value,
        ])
        .map(drop)
    }
}

/// What a git run within a time limit printed, and whether it succeeded.
#[derive(Debug)]
pub struct Finished {
    pub success: bool,
    pub stdout: Vec<u8>,
    pub stderr: String,
}

/// Everything written to a temp file so far.
fn read_back(file: &mut std::fs::File) -> anyhow::Result<Vec<u8>> {
    use std::io::{Read, Seek};
    file.rewind()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Runs `cmd` (git `args`) and returns its stdout; a non-zero exit is an error carrying
/// stderr.
fn stdout_of(args: &[&str], mut cmd: Command) -> anyhow::Result<String> {
    let out = cmd
        .output()
        .with_context(|| format!("cannot run git {}", args.join(" ")))?;
    if !out.status.success() {
        bail!(
            "git {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}
