//! A hermetic environment for driving the real `git-crew` binary against real
//! repositories built by `git-fixtures/*.sh`: a temp HOME, no global or system git
//! config, fixed identity and dates, and the binary's folder first on PATH so `git crew`
//! and the installed hooks resolve to the binary under test.

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

pub struct TestEnv {
    pub tmp: tempfile::TempDir,
}

/// What a process did.
#[derive(Debug)]
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }

    /// Panics with everything the process printed unless it exited with `code`.
    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Out {
        assert_eq!(
            self.code, code,
            "unexpected exit status\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }
}

pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_git-crew"))
}

pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("git-fixtures")
}

impl TestEnv {
    pub fn new() -> TestEnv {
        let tmp = tempfile::Builder::new()
            .prefix("crew-test")
            .tempdir()
            .expect("temp dir");
        std::fs::create_dir_all(tmp.path().join("home")).unwrap();
        TestEnv { tmp }
    }

    pub fn root(&self) -> &Path {
        self.tmp.path()
    }

    pub fn home(&self) -> PathBuf {
        self.root().join("home")
    }

    /// A command with the hermetic environment.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new(program);
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut paths = vec![bin().parent().unwrap().to_path_buf()];
        paths.extend(std::env::split_paths(&path));
        for (key, _) in std::env::vars_os() {
            let key_str = key.to_string_lossy();
            if key_str.starts_with("GIT_")
                || key_str.starts_with("CREW_")
                || key_str == "XDG_CONFIG_HOME"
            {
                cmd.env_remove(&key);
            }
        }
        cmd.env("PATH", std::env::join_paths(paths).unwrap())
            .env("HOME", self.home())
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "Crew Test")
            .env("GIT_AUTHOR_EMAIL", "crew@example.com")
            .env("GIT_COMMITTER_NAME", "Crew Test")
            .env("GIT_COMMITTER_EMAIL", "crew@example.com")
            .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
            .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
            .env("LC_ALL", "C")
            .stdin(Stdio::null());
        cmd
    }

    /// Builds a fixture repository with `git-fixtures/<script>` at `<tmp>/<name>`.
    pub fn fixture(&self, script: &str, name: &str, args: &[&str]) -> PathBuf {
        let dir = self.root().join(name);
        let out = run(
            self.command(fixtures().join(script)).arg(&dir).args(args),
            None,
        );
        out.expect_code(0);
        dir
    }

    pub fn crew(&self, dir: &Path, args: &[&str]) -> Out {
        run(self.command(bin()).current_dir(dir).args(args), None)
    }

    pub fn crew_stdin(&self, dir: &Path, args: &[&str], stdin: &[u8]) -> Out {
        run(self.command(bin()).current_dir(dir).args(args), Some(stdin))
    }

    pub fn git(&self, dir: &Path, args: &[&str]) -> Out {
        run(self.command("git").current_dir(dir).args(args), None)
    }

    /// Dispatches `task` on `backend` (with `extra` flags), waits for the run to end, and
    /// returns its id.
    #[track_caller]
    pub fn finished_run(&self, dir: &Path, task: &str, backend: &str, extra: &[&str]) -> String {
        let mut args = vec![
            "dispatch",
            "--task",
            task,
            "--backend",
            backend,
            "--prompt",
            "x",
        ];
        args.extend_from_slice(extra);
        let out = self.crew(dir, &args);
        out.expect_code(0);
        let run = out.json()["run"].as_str().unwrap().to_string();
        self.crew(dir, &["wait", &run, "--timeout", "60s"]);
        run
    }

    /// Dispatches one run per task `t0`..`t{n-1}` on `backend` (its concurrency raised to
    /// `n`), each with the flags `extra(i)` gives, and waits for all of them; returns the
    /// run ids.
    #[track_caller]
    pub fn runs_at_once(
        &self,
        dir: &Path,
        n: usize,
        backend: &str,
        extra: impl Fn(usize) -> Vec<String>,
    ) -> Vec<String> {
        let concurrency = format!("backends.{backend}.concurrency={n}");
        let mut runs = Vec::new();
        for i in 0..n {
            let task = format!("t{i}");
            let mut args: Vec<String> = [
                "dispatch",
                "--task",
                &task,
                "--backend",
                backend,
                "--prompt",
                "x",
                "--set",
                &concurrency,
            ]
            .iter()
            .map(|s| s.to_string())
            .collect();
            args.extend(extra(i));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let out = self.crew(dir, &args);
            out.expect_code(0);
            runs.push(out.json()["run"].as_str().unwrap().to_string());
        }
        let mut wait = vec!["wait", "--timeout", "120s"];
        wait.extend(runs.iter().map(String::as_str));
        self.crew(dir, &wait);
        runs
    }

    /// Runs git and insists on success; returns stdout.
    #[track_caller]
    pub fn git_ok(&self, dir: &Path, args: &[&str]) -> String {
        let out = self.git(dir, args);
        out.expect_code(0);
        out.stdout
    }

    /// Replaces the temp dir with `[TMP]` for stable comparisons.
    pub fn redact(&self, text: &str) -> String {
        let real = self.root().canonicalize().unwrap();
        text.replace(&real.display().to_string(), "[TMP]")
            .replace(&self.root().display().to_string(), "[TMP]")
    }

    /// `stdout / stderr / [exit status: N]`, redacted.
    pub fn snapshot(&self, out: &Out) -> String {
        self.redact(&format!(
            "{}------\n{}[exit status: {}]",
            out.stdout, out.stderr, out.code
        ))
    }
}

fn run(cmd: &mut Command, stdin: Option<&[u8]>) -> Out {
    if stdin.is_some() {
        cmd.stdin(Stdio::piped());
    }
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn");
    if let Some(bytes) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(bytes).unwrap();
    }
    let output = child.wait_with_output().expect("wait");
    Out {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

pub fn write(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(path, text).unwrap();
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

impl Drop for TestEnv {
    /// No test leaves a supervisor or worker behind, even when it fails half-way: every
    /// live run under the temp dir has its supervisor and worker group killed.
    fn drop(&mut self) {
        let Ok(entries) = std::fs::read_dir(self.root()) else {
            return;
        };
        for entry in entries.flatten() {
            let live = entry.path().join(".git/crew/live");
            let Ok(pointers) = std::fs::read_dir(&live) else {
                continue;
            };
            for pointer in pointers.flatten() {
                let Ok(bytes) = std::fs::read(pointer.path()) else {
                    continue;
                };
                let Ok(record) = serde_json::from_slice::<Value>(&bytes) else {
                    continue;
                };
                for key in ["supervisor_pid", "pid"] {
                    if let Some(pid) = record[key].as_u64() {
                        let _ = Command::new("kill")
                            .args(["-9", "--", &format!("-{pid}")])
                            .status();
                    }
                }
            }
        }
    }
}
