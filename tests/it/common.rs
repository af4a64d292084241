//! A hermetic environment for driving the real `git-crew` binary against real
//! repositories built by `git-fixtures/*.sh`. Every process it starts begins from an
//! empty environment and gets exactly [`TestEnv::vars`]: a temp HOME and TMPDIR, no
//! global or system git config, a fixed identity and dates, the C locale, the binary's
//! folder first on PATH (so `git crew` and the installed hooks resolve to the binary
//! under test), and git-crew's clock and run ids pinned (`GIT_CREW_TEST_NOW`,
//! `GIT_CREW_TEST_RUN_IDS`; see `src/sys/clock.rs`). Nothing of the developer's
//! environment (`NO_COLOR`, `GIT_DIR`, `EDITOR`, `CREW_*`, ...) reaches git-crew; only
//! the outer PATH is kept, for git, sh, cargo and python3. A test that needs something
//! of the outer environment passes it on by name (the fence test's `RUSTUP_HOME`); the
//! real-CLI tests read `CREW_TEST_CLIS` in the test process itself.

use std::cell::RefCell;
use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::Value;

/// The day every test starts on: the git author and committer date, and what git-crew's
/// clock reads when the test starts.
pub const EPOCH: &str = "2026-01-01T00:00:00Z";

pub struct TestEnv {
    pub tmp: tempfile::TempDir,
    /// `GIT_CREW_TEST_NOW` for the processes started from here on.
    clock: RefCell<String>,
    /// Variables set over [`TestEnv::vars`]'s for the processes started from here on.
    overrides: RefCell<Vec<(&'static str, OsString)>>,
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
        TestEnv::in_dir(&std::env::temp_dir())
    }

    /// A [`TestEnv`] whose temp dir lies outside `/tmp` (in cargo's temp folder for
    /// integration tests, else `/var/tmp` when the checkout itself lies under `/tmp`), as a
    /// lead's home and repositories do on a real machine: a worker's private `/tmp` hides
    /// none of them there.
    pub fn outside_tmp() -> TestEnv {
        let tmp = std::fs::canonicalize("/tmp").unwrap_or_else(|_| "/tmp".into());
        let under_tmp = |d: &Path| {
            d.canonicalize()
                .unwrap_or(d.to_path_buf())
                .starts_with(&tmp)
        };
        let mut dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
        if under_tmp(&dir) {
            dir = PathBuf::from("/var/tmp");
        }
        assert!(
            !under_tmp(&dir),
            "no temp folder outside /tmp: {}",
            dir.display()
        );
        TestEnv::in_dir(&dir)
    }

    fn in_dir(dir: &Path) -> TestEnv {
        std::fs::create_dir_all(dir).expect("temp dir's parent");
        let tmp = tempfile::Builder::new()
            .prefix("crew-test")
            .tempdir_in(dir)
            .expect("temp dir");
        std::fs::create_dir_all(tmp.path().join("home")).unwrap();
        std::fs::create_dir_all(tmp.path().join("tmp")).unwrap();
        let env = TestEnv {
            tmp,
            clock: RefCell::new(String::new()),
            overrides: RefCell::new(Vec::new()),
        };
        env.set_clock(EPOCH);
        env
    }

    /// From now on, git-crew's clock in every process started from here reads `instant`
    /// (RFC 3339) and advances with the real clock. Runs already in flight keep the clock
    /// they started with: move it only when none is.
    pub fn set_clock(&self, instant: &str) {
        let anchor = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis();
        *self.clock.borrow_mut() = format!("{instant}@{anchor}");
    }

    pub fn root(&self) -> &Path {
        self.tmp.path()
    }

    pub fn home(&self) -> PathBuf {
        self.root().join("home")
    }

    /// The whole environment of every process started from here.
    pub fn vars(&self) -> Vec<(&'static str, OsString)> {
        let mut path = vec![bin().parent().unwrap().to_path_buf()];
        path.extend(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ));
        let fixed = [
            ("GIT_CONFIG_GLOBAL", "/dev/null"),
            ("GIT_CONFIG_NOSYSTEM", "1"),
            ("GIT_AUTHOR_NAME", "Crew Test"),
            ("GIT_AUTHOR_EMAIL", "crew@example.com"),
            ("GIT_COMMITTER_NAME", "Crew Test"),
            ("GIT_COMMITTER_EMAIL", "crew@example.com"),
            ("GIT_AUTHOR_DATE", EPOCH),
            ("GIT_COMMITTER_DATE", EPOCH),
            ("LANG", "C"),
            ("LC_ALL", "C"),
        ];
        let mut vars = vec![
            ("PATH", std::env::join_paths(path).unwrap()),
            ("HOME", self.home().into_os_string()),
            ("TMPDIR", self.root().join("tmp").into_os_string()),
            ("GIT_CREW_TEST_NOW", self.clock.borrow().clone().into()),
            (
                "GIT_CREW_TEST_RUN_IDS",
                self.root().join("run-ids").into_os_string(),
            ),
        ];
        vars.extend(fixed.map(|(key, value)| (key, OsString::from(value))));
        for (key, value) in self.overrides.borrow().iter() {
            vars.retain(|(k, _)| k != key);
            vars.push((key, value.clone()));
        }
        vars
    }

    /// From now on, every process started from here gets `key=value` in place of what
    /// [`TestEnv::vars`] gives it (a real global git config, for example).
    pub fn set_var(&self, key: &'static str, value: impl Into<OsString>) {
        let mut overrides = self.overrides.borrow_mut();
        overrides.retain(|(k, _)| *k != key);
        overrides.push((key, value.into()));
    }

    /// A command with the hermetic environment: [`TestEnv::vars`] and nothing else.
    pub fn command(&self, program: impl AsRef<OsStr>) -> Command {
        let mut cmd = Command::new(program);
        cmd.env_clear().envs(self.vars()).stdin(Stdio::null());
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

    /// Runs git. After a merge that a hook recorded as a clean run — a `git merge`
    /// (post-merge), or a `git commit` that concluded a merge (post-commit) — asserts that
    /// what the merge brought (`ORIG_HEAD..HEAD`, or `HEAD^1..HEAD`) lies inside that
    /// run's scope.
    #[track_caller]
    pub fn git(&self, dir: &Path, args: &[&str]) -> Out {
        self.git_env(dir, args, &[])
    }

    /// [`TestEnv::git`] with extra environment variables.
    #[track_caller]
    pub fn git_env(&self, dir: &Path, args: &[&str], vars: &[(&str, &str)]) -> Out {
        let mut cmd = self.command("git");
        cmd.current_dir(dir).args(args);
        for (key, value) in vars {
            cmd.env(key, value);
        }
        let out = run(&mut cmd, None);
        let concluded_merge = || {
            run_ok(self.command("git").current_dir(dir).args([
                "rev-parse",
                "-q",
                "--verify",
                "HEAD^2",
            ]))
        };
        match args.first() {
            _ if out.code != 0 => {}
            Some(&"merge") => self.assert_hand_merge_in_scope(dir, "ORIG_HEAD"),
            Some(&"commit") if concluded_merge() => self.assert_hand_merge_in_scope(dir, "HEAD^1"),
            _ => {}
        }
        out
    }

    /// The write scope's invariant for a merge made by hand: when a hook noted the merge
    /// commit as a run with no violation, the merge changed nothing since `old` outside
    /// that run's sealed scope.
    #[track_caller]
    fn assert_hand_merge_in_scope(&self, dir: &Path, old: &str) {
        let note = run(
            self.command("git")
                .current_dir(dir)
                .args(["notes", "--ref=crew", "show", "HEAD"]),
            None,
        );
        let Ok(note) = serde_json::from_str::<Value>(&note.stdout) else {
            return;
        };
        let clean = note["violations"].as_array().is_none_or(|v| v.is_empty());
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
            self.assert_in_sealed_scope(dir, run, old, "HEAD");
        }
    }

    /// Dispatches `task` on `backend` (with `extra` flags), waits for the run to end, and
    /// returns its id.
    #[track_caller]
    pub fn finished_run(&self, dir: &Path, task: &str, backend: &str, extra: &[&str]) -> String {
        self.dispatch(dir, task)
            .backend(backend)
            .prompt("x")
            .args(extra)
            .finished()
    }

    /// `git crew dispatch --task TASK` in `dir`, built up flag by flag and started with
    /// [`Dispatch::run`], [`Dispatch::run_id`] or [`Dispatch::finished`]. Without
    /// [`Dispatch::prompt`] the prompt is "Do the task.".
    pub fn dispatch(&self, dir: &Path, task: &str) -> Dispatch<'_> {
        Dispatch {
            env: self,
            dir: dir.to_path_buf(),
            args: vec!["dispatch".into(), "--task".into(), task.into()],
            prompt: "Do the task.".into(),
        }
    }

    /// `git crew wait RUN --timeout 60s` in `dir`; [`Wait::and`] adds runs.
    pub fn wait(&self, dir: &Path, run: &str) -> Wait<'_> {
        Wait {
            env: self,
            dir: dir.to_path_buf(),
            runs: vec![run.into()],
            timeout: "60s".into(),
            human: false,
        }
    }

    /// `git crew should-stop --task TASK` in `dir`, with [`ShouldStop::model`] and the
    /// rest added.
    pub fn should_stop(&self, dir: &Path, task: &str) -> ShouldStop<'_> {
        ShouldStop {
            env: self,
            dir: dir.to_path_buf(),
            args: vec!["should-stop".into(), "--task".into(), task.into()],
        }
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
        let runs: Vec<String> = (0..n)
            .map(|i| {
                let extra = extra(i);
                let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
                self.dispatch(dir, &format!("t{i}"))
                    .backend(backend)
                    .prompt("x")
                    .set(&concurrency)
                    .args(&extra)
                    .run_id()
            })
            .collect();
        let (first, rest) = runs.split_first().expect("at least one run");
        rest.iter()
            .fold(self.wait(dir, first), |wait, run| wait.and(run))
            .timeout("120s")
            .run();
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

    /// `text` with everything that changes from one run of the suite to the next
    /// replaced: the temp dir (`[TMP]`), the fixtures folder (`[FIXTURES]`), full object
    /// ids (`[OID]`), short commit hashes after ` @ ` (`[HASH]`), RFC 3339 times
    /// (`[TIME]`), the elapsed seconds of `elapsed/budget` (`[N]s/30s`), the seconds of a
    /// relative time (`[N]s ago`, `just now` included) and the kernel's
    /// fence (`fence: [FENCE]`). Run ids need none: the tests pin them
    /// (`GIT_CREW_TEST_RUN_IDS`).
    pub fn normalize(&self, text: &str) -> String {
        let text = self
            .redact(text)
            .replace(&fixtures().display().to_string(), "[FIXTURES]")
            .replace("(just now)", "([N]s ago)");
        let mut out = String::with_capacity(text.len());
        let mut rest = text.as_str();
        while let Some(c) = rest.chars().next() {
            let word_start = out
                .chars()
                .next_back()
                .is_none_or(|p| !p.is_ascii_alphanumeric());
            let found = if word_start {
                [time_at, oid_at, elapsed_at, ago_at, fence_at, short_hash_at]
                    .iter()
                    .find_map(|m| m(rest))
            } else {
                None
            };
            match found {
                Some((len, with)) => {
                    out.push_str(&with);
                    rest = &rest[len..];
                }
                None => {
                    out.push(c);
                    rest = &rest[c.len_utf8()..];
                }
            }
        }
        out
    }

    /// What a process did, in the form of jj's tests: its stdout, then a
    /// `------- stderr -------` line and its stderr (each only when there is any, each
    /// closed by `[EOF]` so a missing last newline shows), then `[exit status: N]`; all
    /// of it [normalized](TestEnv::normalize).
    pub fn snapshot(&self, out: &Out) -> String {
        let mut text = String::new();
        for (label, stream) in [("", &out.stdout), ("------- stderr -------\n", &out.stderr)] {
            if !stream.is_empty() {
                text.push_str(label);
                text.push_str(&self.normalize(stream));
                text.push_str("[EOF]\n");
            }
        }
        text.push_str(&format!("[exit status: {}]", out.code));
        text
    }
}

/// How many of `text`'s leading bytes `pattern` matches: `9` is a digit, `f` a lowercase
/// hex digit, anything else itself.
fn shape(text: &str, pattern: &str) -> Option<usize> {
    let (t, p) = (text.as_bytes(), pattern.as_bytes());
    let fits = t.len() >= p.len()
        && t.iter().zip(p).all(|(c, want)| match want {
            b'9' => c.is_ascii_digit(),
            b'f' => c.is_ascii_digit() || (b'a'..=b'f').contains(c),
            want => c == want,
        });
    fits.then_some(p.len())
}

fn digits(text: &str) -> usize {
    text.bytes().take_while(u8::is_ascii_digit).count()
}

fn ends_word(text: &str, len: usize) -> bool {
    text.as_bytes()
        .get(len)
        .is_none_or(|c| !c.is_ascii_alphanumeric())
}

/// An RFC 3339 time (`T` or a space between date and time, any fraction, `Z` or an
/// offset).
fn time_at(text: &str) -> Option<(usize, String)> {
    let mut len = shape(text, "9999-99-99T99:99:99").or(shape(text, "9999-99-99 99:99:99"))?;
    if text[len..].starts_with('.') && digits(&text[len + 1..]) > 0 {
        len += 1 + digits(&text[len + 1..]);
    }
    if text[len..].starts_with('Z') {
        len += 1;
    } else if let Some(offset) = shape(&text[len..], "+99:99").or(shape(&text[len..], "-99:99")) {
        len += offset;
    }
    Some((len, "[TIME]".into()))
}

fn oid_at(text: &str) -> Option<(usize, String)> {
    let len = shape(text, &"f".repeat(40))?;
    ends_word(text, len).then(|| (len, "[OID]".into()))
}

/// The seconds in `12s/30s` (a run's elapsed time and budget).
fn elapsed_at(text: &str) -> Option<(usize, String)> {
    let n = digits(text);
    (n > 0 && text[n..].starts_with("s/") && digits(&text[n + 2..]) > 0).then(|| (n, "[N]".into()))
}

/// The seconds of a relative time (`12s ago`), which the speed of the machine decides.
fn ago_at(text: &str) -> Option<(usize, String)> {
    let n = digits(text);
    (n > 0 && text[n..].starts_with("s ago")).then(|| (n, "[N]".into()))
}

/// The fence `fence: ` names, which the kernel decides: `landlock-v7+ns`, `landlock-v7`,
/// `none`.
fn fence_at(text: &str) -> Option<(usize, String)> {
    let value = text.strip_prefix("fence: ")?;
    let len = match value.strip_prefix("landlock-v") {
        Some(version) => {
            let n = digits(version);
            let ns = usize::from(version[n..].starts_with("+ns")) * "+ns".len();
            "landlock-v".len() + n + ns
        }
        None => "none".len() * usize::from(value.starts_with("none")),
    };
    (len > 0 && ends_word(value, len)).then(|| ("fence: ".len() + len, "fence: [FENCE]".into()))
}

/// A short commit hash where git-crew prints one: after ` @ `.
fn short_hash_at(text: &str) -> Option<(usize, String)> {
    let hash = text.strip_prefix("@ ")?;
    let len = hash
        .bytes()
        .take_while(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
        .count();
    ((7..40).contains(&len) && ends_word(hash, len)).then(|| (2 + len, "@ [HASH]".into()))
}

/// Runs `cmd` (feeding it `stdin`, if any) and returns what it did.
pub fn run(cmd: &mut Command, stdin: Option<&[u8]>) -> Out {
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

/// `git crew dispatch`, being built: see [`TestEnv::dispatch`].
#[must_use = "a dispatch does nothing until it is run"]
pub struct Dispatch<'a> {
    env: &'a TestEnv,
    dir: PathBuf,
    args: Vec<String>,
    prompt: String,
}

impl Dispatch<'_> {
    /// `--backend NAME`: in `crew-repo.sh`, each scripted worker `git-fixtures/workers/NAME.sh`
    /// is a backend of that name.
    pub fn backend(self, name: &str) -> Self {
        self.args(&["--backend", name])
    }

    /// `--prompt TEXT` instead of "Do the task.".
    pub fn prompt(mut self, text: &str) -> Self {
        self.prompt = text.into();
        self
    }

    /// `--scope GLOB` (once per call).
    pub fn scope(self, glob: &str) -> Self {
        self.args(&["--scope", glob])
    }

    /// `--verify COMMAND`.
    pub fn verify(self, command: &str) -> Self {
        self.args(&["--verify", command])
    }

    /// `--set KEY=VALUE`.
    pub fn set(self, key_value: &str) -> Self {
        self.args(&["--set", key_value])
    }

    /// `--wait`: the dispatch prints the run's result when it ends.
    pub fn wait(self) -> Self {
        self.args(&["--wait"])
    }

    /// Any other flags, as they are.
    pub fn args(mut self, args: &[&str]) -> Self {
        self.args.extend(args.iter().map(|a| a.to_string()));
        self
    }

    /// Runs it; whatever it exits with.
    #[track_caller]
    pub fn run(mut self) -> Out {
        self.args.extend(["--prompt".into(), self.prompt.clone()]);
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        self.env.crew(&self.dir, &args)
    }

    /// Runs it, insists that the run started, and returns its id.
    #[track_caller]
    pub fn run_id(self) -> String {
        let out = self.run();
        out.expect_code(0);
        out.json()["run"]
            .as_str()
            .expect("dispatch printed the run")
            .to_string()
    }

    /// Runs it, waits (60 s at most) for the run to end however it ends, and returns its
    /// id.
    #[track_caller]
    pub fn finished(self) -> String {
        let (env, dir) = (self.env, self.dir.clone());
        let run = self.run_id();
        env.wait(&dir, &run).run();
        run
    }
}

/// `git crew wait`, being built: see [`TestEnv::wait`].
#[must_use = "a wait does nothing until it is run"]
pub struct Wait<'a> {
    env: &'a TestEnv,
    dir: PathBuf,
    runs: Vec<String>,
    timeout: String,
    human: bool,
}

impl Wait<'_> {
    /// Waits for `run` too.
    pub fn and(mut self, run: &str) -> Self {
        self.runs.push(run.into());
        self
    }

    /// `--timeout DURATION` instead of 60 s.
    pub fn timeout(mut self, duration: &str) -> Self {
        self.timeout = duration.into();
        self
    }

    /// `--human`.
    pub fn human(mut self) -> Self {
        self.human = true;
        self
    }

    /// Runs it; whatever it exits with.
    #[track_caller]
    pub fn run(self) -> Out {
        let mut args = vec!["wait"];
        args.extend(self.runs.iter().map(String::as_str));
        args.extend(["--timeout", &self.timeout]);
        if self.human {
            args.push("--human");
        }
        self.env.crew(&self.dir, &args)
    }

    /// Runs it; what it printed, and the result of the first run.
    #[track_caller]
    pub fn result(self) -> (Out, Value) {
        let out = self.run();
        let result = out.json()["runs"][0].clone();
        (out, result)
    }
}

/// `git crew should-stop`, being built: see [`TestEnv::should_stop`].
#[must_use = "a should-stop does nothing until it is run"]
pub struct ShouldStop<'a> {
    env: &'a TestEnv,
    dir: PathBuf,
    args: Vec<String>,
}

impl ShouldStop<'_> {
    /// `--model MODEL` (`backend:NAME` for a backend without one).
    pub fn model(self, model: &str) -> Self {
        self.args(&["--model", model])
    }

    /// `--tier TIER`.
    pub fn tier(self, tier: &str) -> Self {
        self.args(&["--tier", tier])
    }

    /// `--set KEY=VALUE`.
    pub fn set(self, key_value: &str) -> Self {
        self.args(&["--set", key_value])
    }

    /// Any other flags, as they are.
    pub fn args(mut self, args: &[&str]) -> Self {
        self.args.extend(args.iter().map(|a| a.to_string()));
        self
    }

    /// Runs it; whatever it exits with.
    #[track_caller]
    pub fn run(self) -> Out {
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        self.env.crew(&self.dir, &args)
    }

    /// Runs it and returns its verdict (exit 0, continue, or 5, stop): its JSON.
    #[track_caller]
    pub fn verdict(self) -> Value {
        let out = self.run();
        assert!(
            out.code == 0 || out.code == 5,
            "should-stop exited {}\nstdout:\n{}\nstderr:\n{}",
            out.code,
            out.stdout,
            out.stderr
        );
        out.json()
    }
}

/// Checks `check` every 50 ms until it holds; fails the test, naming `what` it waited for,
/// when it still does not after `timeout`. For a state another process reaches in its
/// own time (a file written, a process gone, a phase recorded): a fixed sleep is either
/// too short on a loaded machine or wasted on an idle one.
#[track_caller]
pub fn poll_until(timeout: Duration, what: &str, mut check: impl FnMut() -> bool) {
    poll_for(timeout, what, || check().then_some(()))
}

/// Like [`poll_until`], for a check that finds something: returns the first thing found.
#[track_caller]
pub fn poll_for<T>(timeout: Duration, what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(found) = check() {
            return found;
        }
        assert!(
            Instant::now() < deadline,
            "still waiting after {timeout:?} for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
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

#[test]
fn every_process_starts_from_the_environment_the_tests_give_it_and_nothing_else() {
    let env = TestEnv::new();
    let out = env.command("env").output().unwrap();
    let mut keys: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k.to_string()))
        .collect();
    keys.sort();
    let mut expected: Vec<String> = env.vars().iter().map(|(k, _)| k.to_string()).collect();
    expected.sort();
    assert_eq!(keys, expected);
    // The clock and the run ids are pinned in the binary under test.
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let run = env
        .dispatch(&repo, "routes")
        .backend("ok")
        .scope("src/routes/**")
        .run_id();
    assert_eq!(run, "20260101-000000-0001");
    let (_, result) = env.wait(&repo, &run).result();
    let started = result["started_at"].as_str().unwrap();
    assert!(started.starts_with("2026-01-01T00:0"), "{result}");
}
