//! The `git` binary, for what must go through git itself (writes to the user's config).
//! Every call goes through [`GitRunner`] so it can move in-process later without
//! touching callers.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Why a git command did not give what was asked of it.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// git could not be started (not installed, not on PATH), or the files that take its
    /// output could not be made or read.
    #[error("cannot run git {args}")]
    Spawn {
        args: String,
        #[source]
        source: std::io::Error,
    },
    /// git ran and said no: its exit code (none when a signal ended it) and its words.
    #[error("git {args} failed: {stderr}")]
    Failed {
        args: String,
        code: Option<i32>,
        stderr: String,
    },
    /// The write fence could not be put around git.
    #[error("cannot fence git {args}")]
    Fence {
        args: String,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// What a [`GitRunner`] call gives.
pub type Result<T> = std::result::Result<T, GitError>;

/// The [`GitError::Spawn`] of `args`, for an I/O failure around running git.
fn spawn<'a>(args: &'a [&'a str]) -> impl FnOnce(std::io::Error) -> GitError + 'a {
    move |source| GitError::Spawn {
        args: args.join(" "),
        source,
    }
}

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
    pub fn output(&self, args: &[&str]) -> Result<String> {
        stdout_of(args, self.command(args))
    }

    /// Runs git with `stdin` as its input and returns its stdout; a non-zero exit is an
    /// error carrying stderr.
    pub fn output_with_stdin(&self, args: &[&str], stdin: std::fs::File) -> Result<String> {
        let mut cmd = self.command(args);
        cmd.stdin(stdin);
        stdout_of(args, cmd)
    }

    /// Runs git and returns what it did, whatever its exit code.
    pub fn raw(&self, args: &[&str]) -> Result<std::process::Output> {
        self.command(args).output().map_err(spawn(args))
    }

    /// Runs git in its own process group with a time limit: `None` when it ran past
    /// `timeout` (its whole group — hooks included — is killed), else whether it
    /// succeeded and everything it printed. Output goes through a file, so a chatty hook
    /// can never fill a pipe and stall.
    pub fn raw_within(&self, args: &[&str], timeout: Duration) -> Result<Option<(bool, String)>> {
        let mut out = tempfile::tempfile().map_err(spawn(args))?;
        let Some(success) = self.spawn_within(args, None, &out, &out, timeout)? else {
            return Ok(None);
        };
        Ok(Some((
            success,
            String::from_utf8_lossy(&read_back(&mut out).map_err(spawn(args))?).into_owned(),
        )))
    }

    /// [`GitRunner::raw_within`] with git's exit code (`None` when a signal ended it)
    /// rather than whether it succeeded: for `git hook run`, whose code is the hook's.
    pub fn code_within(
        &self,
        args: &[&str],
        timeout: Duration,
    ) -> Result<Option<(Option<i32>, String)>> {
        let mut out = tempfile::tempfile().map_err(spawn(args))?;
        let Some(status) = self.status_within(args, None, &out, &out, timeout)? else {
            return Ok(None);
        };
        Ok(Some((
            status.code(),
            String::from_utf8_lossy(&read_back(&mut out).map_err(spawn(args))?).into_owned(),
        )))
    }

    /// [`GitRunner::raw_within`] with `stdin` as git's input and its stdout kept apart
    /// from its stderr.
    pub fn within(
        &self,
        args: &[&str],
        stdin: Option<std::fs::File>,
        timeout: Duration,
    ) -> Result<Option<Finished>> {
        let mut out = tempfile::tempfile().map_err(spawn(args))?;
        let mut err = tempfile::tempfile().map_err(spawn(args))?;
        let Some(success) = self.spawn_within(args, stdin, &out, &err, timeout)? else {
            return Ok(None);
        };
        Ok(Some(Finished {
            success,
            stdout: read_back(&mut out).map_err(spawn(args))?,
            stderr: String::from_utf8_lossy(&read_back(&mut err).map_err(spawn(args))?)
                .into_owned(),
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
    ) -> Result<Option<bool>> {
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
    ) -> Result<Option<std::process::ExitStatus>> {
        use std::os::unix::process::CommandExt;
        let mut cmd = self.command(args);
        if let Some(fence) = &self.fence {
            fence.apply_to(&mut cmd).map_err(|source| GitError::Fence {
                args: args.join(" "),
                source: source.into(),
            })?;
        }
        cmd.stdin(stdin.map_or_else(Stdio::null, Stdio::from))
            .stdout(out.try_clone().map_err(spawn(args))?)
            .stderr(err.try_clone().map_err(spawn(args))?)
            .process_group(0);
        let mut child = cmd.spawn().map_err(spawn(args))?;
        let start = Instant::now();
        loop {
            if let Some(status) = child.try_wait().map_err(spawn(args))? {
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
    pub fn local_values(&self, key: &str) -> Result<Vec<String>> {
        self.values(&["--local"], key)
    }

    /// The values of a key in one config file, in order (`file` need not exist).
    pub fn file_values(&self, file: &Path, key: &str) -> Result<Vec<String>> {
        self.values(&["--file", &file.to_string_lossy()], key)
    }

    /// The values of a key in every scope git reads, in order, each with its scope
    /// (`global`, `system`, `local`, `worktree`, `command`).
    pub fn scoped_values(&self, key: &str) -> Result<Vec<(String, String)>> {
        Ok(self
            .values(&["--show-scope"], key)?
            .iter()
            .filter_map(|line| line.split_once('\t'))
            .map(|(scope, value)| (scope.to_string(), value.to_string()))
            .collect())
    }

    fn values(&self, scope: &[&str], key: &str) -> Result<Vec<String>> {
        let mut args = vec!["config"];
        args.extend_from_slice(scope);
        args.extend_from_slice(&["--get-all", key]);
        let shown = ["config", "--get-all", key];
        let out = self.command(&args).output().map_err(spawn(&shown))?;
        // Exit 1 means "no such key".
        match out.status.code() {
            Some(0) => Ok(String::from_utf8_lossy(&out.stdout)
                .lines()
                .map(str::to_string)
                .collect()),
            Some(1) => Ok(Vec::new()),
            code => Err(GitError::Failed {
                args: shown.join(" "),
                code,
                stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
            }),
        }
    }

    /// Every `(key, value)` of one config file, keys as git prints them (section and name
    /// in lower case); empty when the file does not exist.
    pub fn file_entries(&self, file: &Path) -> Result<Vec<(String, String)>> {
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
    pub fn set_in_file(&self, file: &Path, key: &str, value: &str) -> Result<()> {
        self.output(&["config", "--file", &file.to_string_lossy(), key, value])
            .map(drop)
    }

    /// Adds a value to a key of one config file (created when missing).
    pub fn add_in_file(&self, file: &Path, key: &str, value: &str) -> Result<()> {
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
    pub fn unset_in_file(&self, file: &Path, key: &str, value: &str) -> Result<()> {
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
    pub fn add_local(&self, key: &str, value: &str) -> Result<()> {
        self.output(&["config", "--local", "--add", key, value])
            .map(drop)
    }

    /// Sets a single-valued key of the repository's own config.
    pub fn set_local(&self, key: &str, value: &str) -> Result<()> {
        self.output(&["config", "--local", key, value]).map(drop)
    }

    /// Removes exactly one value of a key from the repository's own config.
    pub fn unset_local(&self, key: &str, value: &str) -> Result<()> {
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
fn read_back(file: &mut std::fs::File) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek};
    file.rewind()?;
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Runs `cmd` (git `args`) and returns its stdout; a non-zero exit is an error carrying
/// stderr.
fn stdout_of(args: &[&str], mut cmd: Command) -> Result<String> {
    let out = cmd.output().map_err(spawn(args))?;
    if !out.status.success() {
        return Err(GitError::Failed {
            args: args.join(" "),
            code: out.status.code(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_git_that_says_no_and_a_git_that_cannot_start_are_told_apart() {
        let dir = tempfile::tempdir().unwrap();
        // Not a repository: git runs, and refuses with its own code and words.
        let refused = GitRunner::new(dir.path())
            .output(&["rev-parse", "HEAD"])
            .unwrap_err();
        match &refused {
            GitError::Failed { args, code, stderr } => {
                assert_eq!(args, "rev-parse HEAD");
                assert_eq!(*code, Some(128));
                assert!(stderr.contains("not a git repository"), "{stderr}");
            }
            other => panic!("{other:?}"),
        }
        assert!(
            refused
                .to_string()
                .starts_with("git rev-parse HEAD failed: ")
        );
        // No git where the child looks for it: it never ran, and the I/O error says why.
        let absent = GitRunner::new(dir.path())
            .with_env("PATH", "/nonexistent")
            .output(&["version"])
            .unwrap_err();
        match &absent {
            GitError::Spawn { args, source } => {
                assert_eq!(args, "version");
                assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
            }
            other => panic!("{other:?}"),
        }
        // A config key that is not set is no failure; a file git cannot parse is.
        let file = dir.path().join("c");
        std::fs::write(&file, "[a]\n\tb = 1\n").unwrap();
        let git = GitRunner::new(dir.path());
        assert_eq!(git.file_values(&file, "a.b").unwrap(), ["1"]);
        assert!(git.file_values(&file, "a.c").unwrap().is_empty());
        std::fs::write(&file, "garbage[\n").unwrap();
        let bad = git.file_values(&file, "a.b").unwrap_err();
        assert!(
            matches!(&bad, GitError::Failed { args, code: Some(128), .. } if args == "config --get-all a.b"),
            "{bad:?}"
        );
    }
}
