//! The real `codex` and `claude` CLIs, headless, dispatched by git-crew against the
//! scripted model server (`git-fixtures/model-server.py`) on 127.0.0.1.
//!
//! They need the CLIs installed, so they are `#[ignore]`d: a plain `cargo test` reports
//! them as ignored, never as passed. `.ci/run` installs the CLIs from npm, sets
//! `CREW_TEST_CLIS` (the folder holding `codex` and `claude`) and runs them with
//! `cargo test --locked -- --ignored`; run that way, a missing CLI fails the test.
//! Without `CREW_TEST_CLIS` they look in `~/.cache/git-crew/clis/node_modules/.bin`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::Value;

use crate::common::{TestEnv, poll_for, read, write};

mod fleet;
mod lead;
mod spend;

/// The folder the npm tools of the ignored tests are installed in: `CREW_TEST_CLIS`, else
/// `~/.cache/git-crew/clis/node_modules/.bin`.
pub(super) fn clis_dir() -> PathBuf {
    std::env::var_os("CREW_TEST_CLIS")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .map(|h| PathBuf::from(h).join(".cache/git-crew/clis/node_modules/.bin"))
        })
        .unwrap_or_default()
}

/// The folder with the real CLIs; a test that needs them fails without them.
pub(super) fn clis() -> PathBuf {
    let dir = clis_dir();
    assert!(
        dir.join("codex").exists() && dir.join("claude").exists(),
        "the real codex and claude CLIs are not installed in {} (run .ci/run, or npm install --prefix ~/.cache/git-crew/clis @openai/codex@0.171.0 @anthropic-ai/claude-code@2.1.197)",
        dir.display()
    );
    dir
}

/// The scripted model server, stopped when dropped.
pub(super) struct ModelServer {
    child: Child,
    port: u16,
    log: PathBuf,
    usage: PathBuf,
}

impl ModelServer {
    pub(super) fn start(env: &TestEnv) -> ModelServer {
        let script = crate::common::fixtures().join("model-server.py");
        let port_file = env.root().join("model-port");
        let log = env.root().join("model-log.jsonl");
        let usage = env.root().join("model-usage.json");
        let child = Command::new("python3")
            .arg(script)
            .args(["--lifetime", "300", "--port-file"])
            .arg(&port_file)
            .arg("--log")
            .arg(&log)
            .arg("--usage")
            .arg(&usage)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 runs the model server");
        let port = poll_for(Duration::from_secs(20), "the model server's port", || {
            std::fs::read_to_string(&port_file)
                .ok()?
                .trim()
                .parse()
                .ok()
        });
        ModelServer {
            child,
            port,
            log,
            usage,
        }
    }

    /// Chooses the usage each answer reports from now on (the server reads the file for
    /// every request): `{"<answer>" | "*": {"input", "cached", "cache_write", "output",
    /// "reasoning", "delay"}}`.
    pub(super) fn report_usage(&self, table: Value) {
        let tmp = self.usage.with_extension("tmp");
        write(&tmp, &table.to_string());
        std::fs::rename(&tmp, &self.usage).unwrap();
    }

    /// The logged model requests (the CLIs' other probes left out).
    pub(super) fn requests(&self) -> Vec<Value> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|r| !r["answer"].is_null())
            .collect()
    }
}

impl Drop for ModelServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A crew repository whose codex and claude backends are the real CLIs, pointed at the
/// model server.
fn repo_with_real_backends(env: &TestEnv, bin: &Path, server: &ModelServer) -> PathBuf {
    repo_with_real_backends_and(env, bin, server, "")
}

/// The same, with more of the flight configuration (`extra`, TOML) after the backends.
pub(super) fn repo_with_real_backends_and(
    env: &TestEnv,
    bin: &Path,
    server: &ModelServer,
    extra: &str,
) -> PathBuf {
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let port = server.port;
    let state = env.root();
    let codex_home = state.join("codex-home");
    let claude_config = state.join("claude-config");
    std::fs::create_dir_all(&codex_home).unwrap();
    std::fs::create_dir_all(&claude_config).unwrap();
    let toml = format!(
        r#"version = 1
default_backend = "codex"

[backends.codex]
command = "{codex}"
model = "gpt-5.5"
effort = "medium"
time_budget = "2m"
extra_args = ["-c", "model_provider=mock", "-c", "model_providers.mock.name=mock", "-c", 'model_providers.mock.base_url="http://127.0.0.1:{port}/v1"', "-c", "model_providers.mock.wire_api=responses", "-c", "model_providers.mock.env_key=MOCK_API_KEY", "--disable", "unbounded_connection_retries", "-c", "model_providers.mock.request_max_retries=0", "-c", "model_providers.mock.stream_max_retries=0"]
env = {{ MOCK_API_KEY = "dummy", CODEX_HOME = "{codex_home}" }}

[backends.claude]
command = "{claude}"
model = "sonnet"
effort = "medium"
time_budget = "2m"
env = {{ ANTHROPIC_BASE_URL = "http://127.0.0.1:{port}", ANTHROPIC_API_KEY = "dummy", DISABLE_AUTOUPDATER = "1", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC = "1", CLAUDE_CODE_MAX_RETRIES = "0", IS_SANDBOX = "1", CLAUDE_CONFIG_DIR = "{claude_config}" }}
"#,
        codex = bin.join("codex").display(),
        claude = bin.join("claude").display(),
        codex_home = codex_home.display(),
        claude_config = claude_config.display(),
    );
    write(&repo.join(".crew/flight.toml"), &format!("{toml}{extra}"));
    env.git_ok(&repo, &["commit", "-q", "-am", "real backends"]);
    repo
}

/// Every file under `dir` (symlinks not followed).
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut next = vec![dir.to_path_buf()];
    while let Some(d) = next.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let t = e.file_type().unwrap();
            if t.is_dir() {
                next.push(e.path());
            } else {
                out.push(e.path());
            }
        }
    }
    out
}

pub(super) fn wait(env: &TestEnv, repo: &Path, run: &str) -> (crate::common::Out, Value) {
    let out = env.crew(repo, &["wait", run, "--timeout", "150s"]);
    let result = out.json()["runs"][0].clone();
    (out, result)
}

fn full_dispatch_edits_the_worktree(backend: &str) {
    let bin = clis();
    let env = TestEnv::new();
    let server = ModelServer::start(&env);
    let repo = repo_with_real_backends(&env, &bin, &server);
    let out = env.crew(
        &repo,
        &[
            "dispatch",
            "--task",
            "hello",
            "--backend",
            backend,
            "--scope",
            "hello.txt",
            "--prompt",
            "Please [[mock:write hello.txt]]",
            "--verify",
            "grep -q 'hello from the mock' hello.txt",
        ],
    );
    out.expect_code(0);
    let run = out.json()["run"].as_str().unwrap().to_string();
    let (out, result) = wait(&env, &repo, &run);
    out.expect_code(0);
    assert_eq!(result["outcome"], "pass", "{result}");
    assert_eq!(result["footer"]["result"], "Wrote hello.txt with the mock.");
    assert_eq!(result["diff"]["files"], serde_json::json!(["hello.txt"]));
    let session = result["session"]
        .as_str()
        .expect("the session id was captured")
        .to_string();
    assert_eq!(session.len(), 36, "{session}");
    // The file the CLI wrote is committed on the run's branch.
    let content = env.git_ok(&repo, &["show", &format!("crew/hello/{run}:hello.txt")]);
    assert_eq!(content, "hello from the mock\n");
    // The model saw the task from the worktree, and only the footer came back.
    assert!(server.requests().iter().any(|r| r["answer"] == "write"));
    assert!(!out.stdout.contains("[[mock:write"));
}

fn needs_help_then_advise_resumes_the_same_session(backend: &str) {
    let bin = clis();
    let env = TestEnv::new();
    let server = ModelServer::start(&env);
    let repo = repo_with_real_backends(&env, &bin, &server);
    // The lead's CLI state (the folder the backend's env names): credentials, and what
    // must never reach a worker (its MCP servers, hooks, instructions).
    let codex_home = env.root().join("codex-home");
    let claude_config = env.root().join("claude-config");
    write(
        &codex_home.join("auth.json"),
        r#"{"OPENAI_API_KEY":"lead-key"}"#,
    );
    write(
        &codex_home.join("config.toml"),
        "notify = [\"touch\", \"/lead-notified\"]\n",
    );
    write(
        &claude_config.join(".credentials.json"),
        r#"{"token":"lead"}"#,
    );
    write(
        &claude_config.join(".claude.json"),
        r#"{"hasCompletedOnboarding":true,"userID":"u1","mcpServers":{"lead":{"command":"sh"}}}"#,
    );
    write(
        &claude_config.join("settings.json"),
        r#"{"hooks":{"SessionStart":[{"hooks":[{"type":"command","command":"touch /lead-hook"}]}]}}"#,
    );
    let lead_state = |dir: &Path| -> Vec<(PathBuf, Vec<u8>)> {
        let mut files: Vec<(PathBuf, Vec<u8>)> = walk(dir)
            .into_iter()
            .map(|p| (p.clone(), std::fs::read(&p).unwrap_or_default()))
            .collect();
        files.sort();
        files
    };
    let before = (lead_state(&codex_home), lead_state(&claude_config));
    let out = env.crew(
        &repo,
        &[
            "dispatch",
            "--task",
            "store",
            "--backend",
            backend,
            "--scope",
            "src/**",
            "--scope",
            "hello.txt",
            "--prompt",
            "Pick a store. [[mock:help]]",
        ],
    );
    out.expect_code(0);
    let run = out.json()["run"].as_str().unwrap().to_string();
    let (out, result) = wait(&env, &repo, &run);
    out.expect_code(5);
    assert_eq!(result["phase"], "needs-help", "{result}");
    assert_eq!(result["needs_help"]["leaning"], "sqlite");
    let session = result["session"].as_str().unwrap().to_string();

    env.crew(
        &repo,
        &[
            "advise",
            &run,
            "--text",
            "Use sqlite. [[mock:write hello.txt]]",
        ],
    )
    .expect_code(0);
    let (out, result) = wait(&env, &repo, &run);
    out.expect_code(0);
    assert_eq!(result["outcome"], "pass", "{result}");
    assert_eq!(
        result["session"],
        session.as_str(),
        "the same session was resumed"
    );
    assert_eq!(result["footer"]["result"], "Wrote hello.txt with the mock.");
    assert_eq!(result["fence"], "landlock-v7+ns", "{result}");
    // The session lives in the worker's own home, seeded with the lead's credentials
    // and nothing else of its CLI state; the lead's CLI state is as it was.
    let home = repo.join(format!(".git/crew/runs/{run}/home"));
    let own: Vec<PathBuf> = walk(&home);
    let has = |needle: &str| own.iter().any(|p| p.to_string_lossy().contains(needle));
    if backend == "codex" {
        assert!(has(".codex/sessions/"), "{own:?}");
        assert_eq!(
            read(&home.join(".codex/auth.json")),
            r#"{"OPENAI_API_KEY":"lead-key"}"#
        );
        assert!(!home.join(".codex/config.toml").exists());
    } else {
        assert!(has(".claude/projects/"), "{own:?}");
        assert_eq!(
            read(&home.join(".claude/.credentials.json")),
            r#"{"token":"lead"}"#
        );
        let account: Value = serde_json::from_str(&read(&home.join(".claude.json"))).unwrap();
        assert_eq!(account["userID"], "u1");
        assert!(account.get("mcpServers").is_none(), "{account}");
        assert!(!home.join(".claude/settings.json").exists());
    }
    assert_eq!(
        (lead_state(&codex_home), lead_state(&claude_config)),
        before
    );
    assert!(!Path::new("/lead-notified").exists() && !Path::new("/lead-hook").exists());
    // And the work lands.
    env.crew(&repo, &["integrate", &run]).expect_code(0);
    assert_eq!(
        env.git_ok(&repo, &["show", "main:hello.txt"]),
        "hello from the mock\n"
    );
    let transcript = env.crew(&repo, &["transcript", &run, "--human"]).stdout;
    assert!(transcript.contains(&format!("resuming {session}")));
    let requests = server.requests();
    assert!(requests.iter().any(|r| r["answer"] == "help"));
    assert!(requests.iter().any(|r| r["answer"] == "write"));
    let prompt = read(&repo.join(format!(".git/crew/runs/{run}/prompt.md")));
    assert!(prompt.contains("[[mock:help]]"));
}

#[test]
#[ignore = "needs the real codex and claude CLIs; .ci/run installs them and runs these with --ignored"]
fn codex_full_dispatch_edits_the_worktree() {
    full_dispatch_edits_the_worktree("codex");
}

#[test]
#[ignore = "needs the real codex and claude CLIs; .ci/run installs them and runs these with --ignored"]
fn claude_full_dispatch_edits_the_worktree() {
    full_dispatch_edits_the_worktree("claude");
}

#[test]
#[ignore = "needs the real codex and claude CLIs; .ci/run installs them and runs these with --ignored"]
fn codex_needs_help_then_advise_resumes_the_same_session() {
    needs_help_then_advise_resumes_the_same_session("codex");
}

#[test]
#[ignore = "needs the real codex and claude CLIs; .ci/run installs them and runs these with --ignored"]
fn claude_needs_help_then_advise_resumes_the_same_session() {
    needs_help_then_advise_resumes_the_same_session("claude");
}
