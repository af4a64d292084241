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

    /// Runs `git crew`. After every integrate that lands, asserts the invariant the write
    /// scope promises: the paths that differ between the target's old and new tip lie
    /// inside the run's sealed scope (plus `docs/state/crew.json`).
    #[track_caller]
    pub fn crew(&self, dir: &Path, args: &[&str]) -> Out {
        let out = run(self.command(bin()).current_dir(dir).args(args), None);
        if out.code == 0
            && args.first() == Some(&"integrate")
            && !args.contains(&"--dry-run")
            && let Some(run) = args.get(1).filter(|a| !a.starts_with('-'))
        {
            self.assert_landed_in_scope(dir, run, &out.stdout);
        }
        out
    }

    /// The invariant of the write scope for one integrate of `run` that printed `stdout`
    /// (its JSON result): the target's old tip (the new commit's first parent) and new tip
    /// differ only inside the scope sealed at dispatch.
    #[track_caller]
    pub fn assert_landed_in_scope(&self, dir: &Path, run: &str, stdout: &str) {
        let result: Value = serde_json::from_str(stdout)
            .unwrap_or_else(|e| panic!("integrate printed no JSON result ({e}):\n{stdout}"));
        let new = result["commit"]
            .as_str()
            .expect("integrate result has a commit");
        let old = result["parents"][0].as_str().expect("and a first parent");
        self.assert_in_sealed_scope(dir, run, old, new);
    }

    /// Panics unless every path that differs between `old` and `new` lies inside the
    /// scope sealed for `run` (or is `docs/state/crew.json`).
    #[track_caller]
    pub fn assert_in_sealed_scope(&self, dir: &Path, run: &str, old: &str, new: &str) {
        let sealed = self.git_ok(
            dir,
            &["cat-file", "blob", &format!("refs/crew/sealed/{run}")],
        );
        let sealed: Value = serde_json::from_str(&sealed).expect("the seal is JSON");
        let mut args = vec![
            "diff".to_string(),
            "--no-renames".into(),
            "--name-only".into(),
            old.into(),
            new.into(),
            "--".into(),
            ".".into(),
            ":(exclude)docs/state/crew.json".into(),
        ];
        for glob in sealed["scope"].as_array().expect("a sealed scope") {
            let glob = glob.as_str().unwrap();
            let glob = if glob.ends_with('/') {
                format!("{glob}**")
            } else {
                glob.to_string()
            };
            args.push(format!(":(exclude,glob){glob}"));
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let outside = self.git_ok(dir, &args);
        assert!(
            outside.is_empty(),
            "run {run} changed paths outside its scope {}:\n{outside}",
            sealed["scope"]
        );
    }

    /// Runs `git crew` with extra environment variables.
    pub fn crew_env(&self, dir: &Path, args: &[&str], vars: &[(&str, &OsStr)]) -> Out {
        let mut cmd = self.command(bin());
        cmd.current_dir(dir).args(args);
        for (key, value) in vars {
            cmd.env(key, value);
        }
        run(&mut cmd, None)
    }

    /// What run `run` printed, from its task's transcript (`git crew transcript`).
    pub fn transcript(&self, dir: &Path, run: &str) -> String {
        let out = self.crew(dir, &["transcript", run, "--human"]);
        out.expect_code(0);
        out.stdout
    }

    pub fn crew_stdin(&self, dir: &Path, args: &[&str], stdin: &[u8]) -> Out {
        run(self.command(bin()).current_dir(dir).args(args), Some(stdin))
    }

    /// Runs git. After a merge that the post-merge hook recorded as a clean run, asserts
    /// that what the merge brought (`ORIG_HEAD..HEAD`) lies inside that run's scope.
    #[track_caller]
    pub fn git(&self, dir: &Path, args: &[&str]) -> Out {
        let out = run(self.command("git").current_dir(dir).args(args), None);
        if out.code == 0 && args.first() == Some(&"merge") {
            self.assert_hand_merge_in_scope(dir);
        }
        out
    }

    /// The write scope's invariant for a merge made by hand: when the post-merge hook
    /// noted the merge commit as a run with no violation, the merge changed nothing
    /// outside that run's sealed scope.
    #[track_caller]
    fn assert_hand_merge_in_scope(&self, dir: &Path) {
        let note = run(
            self.command("git")
                .current_dir(dir)
                .args(["notes", "--ref=crew", "show", "HEAD"]),
            None,
        );
        let Ok(note) = serde_json::from_str::<Value>(&note.stdout) else {
            return;
        };
        let clean = note["violations"].as_array().is_some_and(|v| v.is_empty());
        let Some(run) = note["run"].as_str() else {
            return;
        };
        let sealed = format!("refs/crew/sealed/{run}");
        let has_seal = run_ok(self.command("git").current_dir(dir).args([
            "rev-parse",
            "-q",
            "--verify",
            &sealed,
        ]));
        if clean && has_seal {
            self.assert_in_sealed_scope(dir, run, "ORIG_HEAD", "HEAD");
        }
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

fn run_ok(cmd: &mut Command) -> bool {
    run(cmd, None).code == 0
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

/// How many processes have `needle` in their command line.
pub fn processes_with(needle: &str) -> usize {
    std::fs::read_dir("/proc")
        .map(|entries| {
            entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().parse::<u32>().is_ok())
                .filter(|e| {
                    std::fs::read(e.path().join("cmdline"))
                        .is_ok_and(|c| String::from_utf8_lossy(&c).contains(needle))
                })
                .count()
        })
        .unwrap_or(0)
}
