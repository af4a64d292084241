//! dispatch, the supervisor and the run-reading commands, with scripted workers
//! (`git-fixtures/workers/*.sh`) as real background processes.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Out, TestEnv, poll_for, poll_until, read, write};

fn crew_repo(env: &TestEnv) -> PathBuf {
    env.fixture("crew-repo.sh", "repo", &[])
}

fn dispatch(env: &TestEnv, repo: &Path, task: &str, backend: &str, extra: &[&str]) -> Out {
    let mut args = vec![
        "dispatch",
        "--task",
        task,
        "--backend",
        backend,
        "--prompt",
        "Do the task.",
    ];
    if !extra.contains(&"--scope") && !extra.contains(&"--role") {
        args.extend(["--scope", "src/routes/**"]);
    }
    args.extend_from_slice(extra);
    env.crew(repo, &args)
}

pub fn dispatched(env: &TestEnv, repo: &Path, task: &str, backend: &str, extra: &[&str]) -> String {
    let out = dispatch(env, repo, task, backend, extra);
    out.expect_code(0);
    out.json()["run"].as_str().unwrap().to_string()
}

fn wait(env: &TestEnv, repo: &Path, run: &str) -> (Out, Value) {
    let out = env.crew(repo, &["wait", run, "--timeout", "60s"]);
    let json = out.json();
    let result = json["runs"][0].clone();
    (out, result)
}

pub fn pid_gone(pid: &str) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim())).unwrap_or_default();
    // Gone, or a zombie waiting for its parent.
    stat.is_empty() || stat.split_whitespace().nth(2) == Some("Z")
}

#[test]
fn a_run_works_in_the_background_and_only_its_footer_comes_back() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let head = env.git_ok(&repo, &["rev-parse", "HEAD"]);
    let start = Instant::now();
    let out = dispatch(
        &env,
        &repo,
        "routes",
        "ok",
        &["--verify", "test -f src/routes/crew.rs"],
    );
    out.expect_code(0);
    assert!(start.elapsed() < Duration::from_secs(20));
    let json = out.json();
    let run = json["run"].as_str().unwrap().to_string();
    assert_eq!(json["task"], "routes");
    assert_eq!(json["role"], "implement");
    assert_eq!(json["backend"], "ok");
    assert_eq!(json["base"], head.trim());
    assert_eq!(json["branch"], format!("crew/routes/{run}"));
    assert_eq!(json["scope"], serde_json::json!(["src/routes/**"]));
    let worktree = PathBuf::from(json["worktree"].as_str().unwrap());
    assert!(
        worktree.ends_with(format!(".git/crew/worktrees/{run}")),
        "{}",
        worktree.display()
    );

    let (out, result) = wait(&env, &repo, &run);
    out.expect_code(0);
    assert_eq!(result["phase"], "done");
    assert_eq!(result["outcome"], "pass");
    assert_eq!(result["attempts"], 1);
    assert_eq!(result["footer"]["result"], "Added src/routes/crew.rs.");
    assert_eq!(result["verify"]["passed"], true);
    assert_eq!(result["verify"]["reward"], 1.0);
    assert_eq!(
        result["diff"]["files"],
        serde_json::json!(["src/routes/crew.rs"])
    );
    assert_eq!(result["discrepancies"], serde_json::json!([]));
    assert!(
        !out.stdout.contains("Working on routes"),
        "the raw reply never comes back"
    );

    // The worker's leftover work was committed on its branch, through the hooks.
    let log = env.git_ok(
        &repo,
        &["log", "--format=%s", &format!("crew/routes/{run}")],
    );
    assert!(log.starts_with(&format!(
        "crew: work left uncommitted by run {run} (task routes)\n"
    )));
    // The worktree carries its identity and is unlocked once the run ended.
    let wt_config = env.git_ok(
        &worktree,
        &["config", "--worktree", "--get-all", "crew.scope"],
    );
    assert_eq!(wt_config, "src/routes/**\n");
    let list = env.git_ok(&repo, &["worktree", "list", "--porcelain"]);
    assert!(!list.contains("locked"), "{list}");
    // The transcript holds the raw output under an attempt header.
    let out = env.crew(&repo, &["transcript", &run, "--human"]);
    out.expect_code(0);
    assert!(out.stdout.contains(&format!(
        "===== git-crew run {run} task routes attempt 1 backend ok"
    )));
    assert!(out.stdout.contains("Working on routes"));
    // show and status agree.
    let show = env.crew(&repo, &["show", &run]).json();
    assert_eq!(show["run"]["outcome"], "pass");
    let status = env.crew(&repo, &["status"]).json();
    assert_eq!(status["runs"][0]["run"], run.as_str());
    assert_eq!(env.crew(&repo, &["ls"]).json()["runs"][0]["phase"], "done");
}

#[test]
fn the_worker_gets_its_environment_and_a_fenced_prompt() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    write(&repo.join(".env"), "SECRET=1\n");
    write(&repo.join("notes.txt"), "not ignored\n");
    write(&repo.join(".git/info/exclude"), ".env\n");
    write(
        &repo.join(".worktreeinclude"),
        "# local files\n.env\nnotes.txt\n",
    );
    let run = dispatched(&env, &repo, "routes", "ok", &[]);
    let (out, result) = wait(&env, &repo, &run);
    out.expect_code(0);
    let worktree = PathBuf::from(result["worktree"].as_str().unwrap());
    assert_eq!(read(&worktree.join(".env")), "SECRET=1\n");
    // A listed file git does not ignore would be committed with the work: not copied.
    assert!(!worktree.join("notes.txt").exists());
    let files = env.git_ok(
        &repo,
        &[
            "show",
            "--name-only",
            "--format=",
            &format!("crew/routes/{run}"),
        ],
    );
    assert_eq!(files, "src/routes/crew.rs\n");
    let prompt = read(&repo.join(format!(".git/crew/runs/{run}/prompt.md")));
    assert!(prompt.contains("run ") && prompt.contains("task `routes`"));
    assert!(prompt.contains("   - `src/routes/**`"));
    assert!(
        prompt.contains("## Result")
            && prompt.contains("## How to verify")
            && prompt.contains("## Deferred / concerns")
    );
    assert!(prompt.contains("NEEDS-HELP:") && prompt.contains("cost-if-wrong:"));
    assert!(prompt.contains("30s in all"));
    assert_eq!(result["port"], 4100);
}

#[test]
fn leftover_work_outside_the_scope_is_a_scope_reject() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = dispatched(&env, &repo, "routes", "out-of-scope", &[]);
    let (out, result) = wait(&env, &repo, &run);
    out.expect_code(1);
    assert_eq!(result["outcome"], "scope-reject");
    assert_eq!(result["phase"], "rejected");
    assert!(
        result["decision"]
            .as_str()
            .unwrap()
            .contains("README.md (modified) is outside the write scope src/routes/**"),
        "{result}"
    );
}

#[test]
fn a_no_verify_escape_is_caught_by_the_branch_audit() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = dispatched(&env, &repo, "routes", "no-verify", &[]);
    let (out, result) = wait(&env, &repo, &run);
    out.expect_code(1);
    assert_eq!(result["outcome"], "scope-reject");
    assert!(
        result["decision"]
            .as_str()
            .unwrap()
            .contains("the branch breaks its fences: README.md (modified)"),
        "{result}"
    );
    // The commits are kept on the branch.
    let log = env.git_ok(
        &repo,
        &["log", "--format=%s", &format!("crew/routes/{run}")],
    );
    assert!(log.contains("sneak past the hook"));
}

#[test]
fn a_missing_footer_gets_one_corrective_retry() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = dispatched(&env, &repo, "routes", "footer-late", &[]);
    let (out, result) = wait(&env, &repo, &run);
    out.expect_code(0);
    assert_eq!(result["outcome"], "pass");
    assert_eq!(result["attempts"], 2);
    assert_eq!(result["footer"]["result"], "Added late.rs.");
    let transcript = env.crew(&repo, &["transcript", &run, "--human"]).stdout;
    assert!(transcript.contains("attempt 1 backend footer-late"));
    assert!(transcript.contains("attempt 2 backend footer-late"));
}

#[test]
fn a_worker_that_never_writes_a_footer_is_a_footer_reject() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = dispatched(&env, &repo, "routes", "no-footer", &[]);
    let (out, result) = wait(&env, &repo, &run);
    out.expect_code(1);
    assert_eq!(result["outcome"], "footer-reject");
    assert_eq!(result["attempts"], 2);
    assert_eq!(result["footer"], Value::Null);
    assert!(
        result["decision"]
            .as_str()
            .unwrap()
            .contains("missing section `## Result`")
    );
}

#[test]
fn needs_help_stops_the_run_for_the_lead() {
    for worker in ["needs-help", "logs-then-help"] {
        needs_help_from(worker);
    }
}

/// `worker` asks for help (after log lines, for `logs-then-help`): the run parks.
fn needs_help_from(worker: &str) {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = dispatched(&env, &repo, "routes", worker, &[]);
    let (out, result) = wait(&env, &repo, &run);
    out.expect_code(5);
    assert_eq!(result["phase"], "needs-help");
    assert_eq!(result["outcome"], Value::Null);
    assert_eq!(
        result["needs_help"]["leaning"],
        "sqlite, it is already a dependency"
    );
    assert_eq!(result["needs_help"]["cost_if_wrong"], "a migration later");
    // The run stays live (a handoff is not a failure), holding its task.
    let again = dispatch(&env, &repo, "routes", "ok", &[]);
    again.expect_code(4);
}

#[test]
fn the_manifest_is_the_reply_when_written() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = dispatched(&env, &repo, "routes", "manifest", &[]);
    let (out, result) = wait(&env, &repo, &run);
    out.expect_code(0);
    assert_eq!(result["footer"]["result"], "From the manifest.");
}

#[test]
fn a_failing_verify_is_a_fail_and_a_reward_file_decides() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = dispatched(&env, &repo, "routes", "ok", &["--verify", "exit 3"]);
    let (out, result) = wait(&env, &repo, &run);
    out.expect_code(1);
    assert_eq!(result["outcome"], "fail");
    assert_eq!(result["verify"]["reward"], 0.0);

    let run = dispatched(
        &env,
        &repo,
        "routes2",
        "ok",
        &[
            "--scope",
            "src/routes/**",
            "--verify",
            "echo 0.5 > \"$CREW_VERIFIER_DIR/reward.txt\"",
        ],
    );
    let (out, result) = wait(&env, &repo, &run);
    out.expect_code(1);
    assert_eq!(result["verify"]["reward"], 0.5);
    assert_eq!(result["verify"]["passed"], false);
}

#[test]
fn a_verify_is_the_leads_check_a_reward_file_can_only_lower_a_pass() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    // The verify runs the worker's own code, which fails and writes a reward of 1.0.
    let run = dispatched(
        &env,
        &repo,
        "forged",
        "forge-reward",
        &["--verify", "sh src/routes/check.sh 1 1.0"],
    );
    let (out, result) = wait(&env, &repo, &run);
    out.expect_code(1);
    assert_eq!(result["outcome"], "fail", "{result}");
    assert_eq!(result["phase"], "failed");
    let verify = &result["verify"];
    assert_eq!(verify["passed"], false, "{verify}");
    assert_eq!(verify["reward"], 0.0, "{verify}");
    assert_eq!(verify["decided_by"], "exit", "{verify}");
    assert_eq!(verify["exit_code"], 1, "{verify}");
    assert_eq!(result["decision"], "verify failed (exit 1)");
    assert!(
        result["discrepancies"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d.as_str().unwrap().contains("the footer claims success")),
        "{result}"
    );
    // Not integrated, and the ledger says it failed and what decided.
    let out = env.crew(&repo, &["integrate", &run]);
    assert_ne!(out.code, 0, "{}", out.stdout);
    let shown = env.crew(&repo, &["show", &run]).json()["run"].clone();
    assert!(shown["integration"].is_null(), "{shown}");
    let human = env.crew(&repo, &["show", &run, "--human"]).stdout;
    assert!(
        human.contains("fail, decided by the exit code (exit 1)"),
        "{human}"
    );
    let rows = env.crew(&repo, &["ledger", "--task", "forged"]).json()["rows"].clone();
    let row = &rows[0];
    assert_eq!(row["outcome"], "fail", "{rows}");
    assert_eq!(row["claimed"], "done", "{rows}");
    assert_eq!(row["verify_decided_by"], "exit", "{rows}");
    assert_eq!(row["verify_exit_code"], 1, "{rows}");
    let human = env
        .crew(&repo, &["ledger", "--task", "forged", "--human"])
        .stdout;
    assert!(human.contains("→ fail (verify: exit 1)"), "{human}");

    // A verify that exits 0 with a reward below 1.0 fails on the reward, Harbor's way.
    let run = dispatched(
        &env,
        &repo,
        "half",
        "forge-reward",
        &["--verify", "sh src/routes/check.sh 0 0.5"],
    );
    let (out, result) = wait(&env, &repo, &run);
    out.expect_code(1);
    assert_eq!(result["outcome"], "fail", "{result}");
    let verify = &result["verify"];
    assert_eq!(
        (
            &verify["reward"],
            &verify["decided_by"],
            &verify["exit_code"]
        ),
        (&0.5.into(), &"reward".into(), &0.into()),
        "{verify}"
    );
    assert_eq!(result["decision"], "verify failed (exit 0, reward 0.5)");
    let rows = env.crew(&repo, &["ledger", "--task", "half"]).json()["rows"].clone();
    assert_eq!(rows[0]["verify_decided_by"], "reward", "{rows}");

    // One that exits 0 and writes no reward passes on its exit code.
    let run = dispatched(
        &env,
        &repo,
        "plain",
        "forge-reward",
        &["--verify", "sh src/routes/check.sh 0"],
    );
    let (out, result) = wait(&env, &repo, &run);
    out.expect_code(0);
    assert_eq!(result["outcome"], "pass", "{result}");
    let verify = &result["verify"];
    assert_eq!(
        (
            &verify["passed"],
            &verify["decided_by"],
            &verify["exit_code"]
        ),
        (&true.into(), &"exit".into(), &0.into()),
        "{verify}"
    );
    assert_eq!(result["decision"], "verify passed (exit 0)");
}

#[test]
fn files_a_worker_writes_past_their_caps_are_named_and_never_read() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    // A 64 MiB session file, a manifest over the run's 64 KiB `fences.max_output` and a
    // 100 KiB usage file on the first attempt; a plain reply on the corrective one.
    let run = env
        .dispatch(&repo, "routes")
        .backend("oversized")
        .scope("src/routes/**")
        .set("fences.max_output=65536")
        .finished();
    let show = env.crew(&repo, &["show", &run]);
    show.expect_code(0);
    assert!(show.stdout.len() < 100_000, "{} bytes", show.stdout.len());
    let result = &show.json()["run"];
    assert_eq!(result["outcome"], "pass", "{result}");
    assert_eq!(result["attempts"], 2, "{result}");
    assert!(result["session"].is_null(), "{result}");
    assert!(result["usage"].is_null(), "{result}");
    let discrepancies: Vec<&str> = result["discrepancies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap())
        .collect();
    for named in [
        "attempt 1: the session file (CREW_SESSION_FILE) holds more than 4096 bytes: not read",
        "attempt 1: the manifest (CREW_MANIFEST) holds more than 65536 bytes: not read",
        "attempt 1: the usage file (CREW_USAGE_FILE) holds more than 65536 bytes: not read",
    ] {
        assert!(
            discrepancies.iter().any(|d| d.starts_with(named)),
            "{named}: {discrepancies:?}"
        );
    }
    // The corrective prompt told the worker why its reply was not read.
    let corrective = read(&repo.join(format!(".git/crew/runs/{run}/corrective-1.md")));
    assert!(
        corrective.contains("your manifest (CREW_MANIFEST) holds more than 65536 bytes"),
        "{corrective}"
    );
    let status = env.crew(&repo, &["status"]);
    status.expect_code(0);
    assert!(
        status.stdout.len() < 100_000,
        "{} bytes",
        status.stdout.len()
    );
    let record = std::fs::metadata(repo.join(format!(".git/crew/runs/{run}.json"))).unwrap();
    assert!(record.len() < 100_000, "{} bytes", record.len());
}

#[test]
fn a_hang_past_the_time_budget_is_killed_with_its_children() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = dispatched(&env, &repo, "routes", "hang", &["--time-budget", "2s"]);
    let (out, result) = wait(&env, &repo, &run);
    out.expect_code(1);
    assert_eq!(result["outcome"], "timeout");
    assert_eq!(result["phase"], "timed-out");
    let dir = repo.join(format!(".git/crew/runs/{run}/tmp"));
    let worker = read(&dir.join("worker-pid"));
    let child = read(&dir.join("child-pid"));
    assert!(pid_gone(&worker), "worker {worker} still running");
    assert!(pid_gone(&child), "child {child} still running");
}

#[test]
fn a_silent_worker_is_caught_by_the_idle_watchdog() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = dispatched(
        &env,
        &repo,
        "routes",
        "silent",
        &["--set", "backends.silent.idle_timeout=1s"],
    );
    let (out, result) = wait(&env, &repo, &run);
    out.expect_code(1);
    assert_eq!(result["outcome"], "timeout");
    assert!(
        result["decision"]
            .as_str()
            .unwrap()
            .contains("idle watchdog"),
        "{result}"
    );
    assert!(result["elapsed_s"].as_u64().unwrap() < 20);
}

#[test]
fn a_killed_supervisor_is_detected_and_its_run_abandoned() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = dispatched(&env, &repo, "routes", "hang", &[]);
    let dir = repo.join(format!(".git/crew/runs/{run}/tmp"));
    poll_until(Duration::from_secs(20), "the worker's child", || {
        dir.join("child-pid").exists()
    });
    let status = env.crew(&repo, &["status", &run]).json();
    assert_eq!(status["runs"][0]["phase"], "working");
    let supervisor = status["runs"][0]["supervisor_pid"].as_u64().unwrap();
    assert!(status["runs"][0]["pid"].as_u64().is_some());
    std::process::Command::new("kill")
        .args(["-9", &supervisor.to_string()])
        .status()
        .unwrap();
    // `status` reports the dead supervisor and changes nothing: the run stays live.
    let status = poll_for(
        Duration::from_secs(20),
        "status to find the supervisor dead",
        || {
            let status = env.crew(&repo, &["status", &run]).json();
            (status["runs"][0]["supervisor"] == "dead").then_some(status)
        },
    );
    assert_eq!(status["runs"][0]["phase"], "working");
    // The next command that acts (here `wait`) files the run as abandoned.
    let (out, _) = wait(&env, &repo, &run);
    out.expect_code(1);
    let status = env.crew(&repo, &["status", &run]).json();
    assert_eq!(status["runs"][0]["phase"], "abandoned");
    assert_eq!(status["runs"][0]["supervisor"], Value::Null);
    assert_eq!(status["runs"][0]["outcome"], "abandoned");
    gone_soon(&read(&dir.join("worker-pid")), "the worker");
    gone_soon(&read(&dir.join("child-pid")), "the worker's child");
    // The branch is kept.
    env.git_ok(
        &repo,
        &["rev-parse", "--verify", &format!("crew/routes/{run}")],
    );
}

#[test]
fn abandon_stops_a_live_run_and_keeps_its_branch() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = dispatched(&env, &repo, "routes", "hang", &[]);
    let out = env.crew(&repo, &["abandon", &run]);
    out.expect_code(0);
    assert_eq!(out.json()["run"]["outcome"], "abandoned");
    let (out, _) = wait(&env, &repo, &run);
    out.expect_code(1);
    // Abandoning it again gives up what it holds: here nothing (it made no commit).
    let again = env.crew(&repo, &["abandon", &run]);
    again.expect_code(0);
    assert_eq!(again.json()["kept"]["commit"], Value::Null);
    assert_eq!(again.json()["run"]["outcome"], "abandoned");
    env.git_ok(
        &repo,
        &["rev-parse", "--verify", &format!("crew/routes/{run}")],
    );
}

#[test]
fn double_dispatch_overlap_and_concurrency_are_refused() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let first = dispatched(&env, &repo, "routes", "hang", &[]);
    // The same task again.
    let out = dispatch(&env, &repo, "routes", "hang", &["--scope", "docs/**"]);
    out.expect_code(4);
    assert!(
        out.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&format!("already has an in-flight run: {first}"))
    );
    // An overlapping scope.
    let out = dispatch(&env, &repo, "other", "hang", &["--scope", "src/**"]);
    out.expect_code(4);
    assert!(
        out.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("overlaps `src/routes/**`")
    );
    // A disjoint scope is fine; a third run on the backend is over its limit of two.
    dispatched(&env, &repo, "docs", "hang", &["--scope", "docs/**"]);
    let out = dispatch(&env, &repo, "readme", "hang", &["--scope", "README.md"]);
    out.expect_code(4);
    assert!(
        out.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("concurrency limit (2 of 2 runs live)")
    );
    // Read-only roles claim no scope, but still count against the backend.
    let status = env.crew(&repo, &["status"]).json();
    for run in status["runs"].as_array().unwrap() {
        env.crew(&repo, &["abandon", run["run"].as_str().unwrap()])
            .expect_code(0);
    }
}

#[test]
fn bad_dispatches_are_usage_errors_and_leave_nothing_behind() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    for (args, code) in [
        (
            vec![
                "dispatch", "--task", "a b", "--prompt", "x", "--scope", "src/**",
            ],
            "dispatch-invalid",
        ),
        (
            vec!["dispatch", "--task", "t", "--prompt", "x"],
            "dispatch-invalid",
        ),
        (
            vec![
                "dispatch", "--task", "t", "--prompt", "x", "--scope", "src/**", "--role", "boss",
            ],
            "usage",
        ),
        (
            vec![
                "dispatch", "--task", "t", "--prompt", "x", "--scope", "src/**", "--base", "nope",
            ],
            "bad-base",
        ),
        (
            vec![
                "dispatch",
                "--task",
                "t",
                "--prompt",
                "x",
                "--scope",
                "src/**",
                "--backend",
                "codx",
            ],
            "config-invalid",
        ),
    ] {
        let out = env.crew(&repo, &args);
        out.expect_code(2);
        assert_eq!(out.json()["error"]["code"], code, "{args:?}");
    }
    assert_eq!(env.git_ok(&repo, &["branch", "--list", "crew/*"]), "");
    assert!(
        !repo.join(".git/crew/live").exists()
            || std::fs::read_dir(repo.join(".git/crew/live"))
                .unwrap()
                .count()
                == 0
    );
    env.crew(&repo, &["show", "20260101-000000-0000"])
        .expect_code(3);
    env.crew(&repo, &["wait", "20260101-000000-0000"])
        .expect_code(3);
}

#[test]
fn a_run_id_is_never_a_path() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    // A JSON file outside the repository that looks like a run record.
    let outside = env.root().join("x.json");
    std::fs::write(&outside, r#"{"run": "x"}"#).unwrap();
    for bad in ["../../../x", "a/../b", "/tmp/x", ""] {
        for command in [
            &["show", bad][..],
            &["wait", bad],
            &["status", bad],
            &["integrate", bad],
            &["verify", bad],
            &["abandon", bad],
            &["transcript", bad],
        ] {
            let out = env.crew(&repo, command);
            out.expect_code(2);
            assert_eq!(out.json()["ok"], false, "{command:?}");
        }
    }
}

#[test]
fn an_unreadable_finished_record_is_named_not_lost() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = env.finished_run(&repo, "routes", "ok", &["--scope", "src/routes/**"]);
    std::fs::write(repo.join(format!(".git/crew/runs/{run}.json")), "{not json").unwrap();
    let out = env.crew(&repo, &["show", &run]);
    out.expect_code(4);
    assert_eq!(out.json()["error"]["code"], "run-unreadable");
    // The run list passes over it quietly; doctor names it, for a person to mend.
    let out = env.crew(&repo, &["status", "--all"]);
    out.expect_code(0);
    assert!(out.stderr.is_empty(), "{}", out.stderr);
    let out = env.crew(&repo, &["doctor"]);
    out.expect_code(1);
    let problems = out.json()["problems"].to_string();
    assert!(
        problems.contains("unreadable-record") && problems.contains(&run),
        "{problems}"
    );
}

#[test]
fn a_run_is_named_by_its_id_a_part_of_it_its_task_or_last() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let first = env.finished_run(&repo, "routes", "ok", &["--scope", "src/routes/**"]);
    let second = env.finished_run(&repo, "docs", "ok", &["--scope", "docs/**"]);
    let shown = |address: &str| {
        let out = env.crew(&repo, &["show", address]);
        out.expect_code(0);
        out.json()["run"]["run"].as_str().unwrap().to_string()
    };
    assert_eq!(shown(&first), first);
    assert_eq!(shown("@last"), second);
    assert_eq!(shown("routes"), first);
    assert_eq!(shown(&second[second.len() - 4..]), second);
    // Both ids start alike: ambiguous, with both named.
    let out = env.crew(&repo, &["show", &first[..9]]);
    out.expect_code(2);
    let error = &out.json()["error"];
    assert_eq!(error["code"], "run-ambiguous", "{error}");
    let details = error["details"].to_string();
    assert!(
        details.contains(&first) && details.contains(&second),
        "{details}"
    );
    // Nothing by that name: not found.
    let out = env.crew(&repo, &["show", "nope"]);
    out.expect_code(3);
    assert_eq!(out.json()["error"]["code"], "run-not-found");
    // wait takes addresses too (the docs run's worker wrote outside its scope: exit 1).
    let out = env.crew(&repo, &["wait", "docs", "routes"]);
    out.expect_code(1);
    let runs: Vec<String> = out.json()["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(runs, [second.clone(), first.clone()]);
}

#[test]
fn a_review_run_that_edits_files_is_a_scope_reject() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    // Without the kernel fence the edit lands in the worktree and the audit rejects it.
    let run = dispatched(
        &env,
        &repo,
        "audit",
        "review",
        &["--role", "review", "--set", "sandbox.enabled=false"],
    );
    let (out, result) = wait(&env, &repo, &run);
    out.expect_code(1);
    assert_eq!(result["outcome"], "scope-reject");
    assert_eq!(result["fence"], "none");
    assert!(
        result["decision"]
            .as_str()
            .unwrap()
            .contains("a review run left changes")
    );
}

#[test]
fn a_fenced_review_run_cannot_write_its_worktree() {
    require_fence();
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = dispatched(&env, &repo, "audit", "review", &["--role", "review"]);
    let (out, result) = wait(&env, &repo, &run);
    out.expect_code(0);
    assert_eq!(result["fence"], "landlock-v7+ns");
    let wt = std::path::PathBuf::from(result["worktree"].as_str().unwrap());
    assert!(env.git_ok(&wt, &["status", "--porcelain"]).is_empty());
    assert!(!read(&wt.join("src/lib.rs")).contains("nit"));
}

#[test]
fn dispatch_wait_blocks_until_the_end() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let out = env
        .dispatch(&repo, "routes")
        .backend("ok")
        .scope("src/routes/**")
        .wait()
        .run();
    out.expect_code(0);
    assert_eq!(out.json()["runs"][0]["outcome"], "pass");
}

#[test]
fn advise_resumes_the_same_session_with_the_answer() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = dispatched(
        &env,
        &repo,
        "routes",
        "help-then-work",
        &["--verify", "grep -q sqlite src/routes/store.rs"],
    );
    let (out, result) = wait(&env, &repo, &run);
    out.expect_code(5);
    assert_eq!(result["session"], format!("S-{run}"));
    // Advice is only for runs waiting for it.
    let out = env.crew(
        &repo,
        &[
            "advise",
            &run,
            "--text",
            "Use sqlite; it is already a dependency.",
        ],
    );
    out.expect_code(0);
    assert_eq!(out.json()["phase"], "working");
    let (out, result) = wait(&env, &repo, &run);
    out.expect_code(0);
    assert_eq!(result["outcome"], "pass");
    assert_eq!(result["attempts"], 2);
    assert_eq!(
        result["footer"]["result"],
        format!("Resumed session S-{run}; used the advice.")
    );
    assert_eq!(result["needs_help"], Value::Null);
    let transcript = env.crew(&repo, &["transcript", &run, "--human"]).stdout;
    assert!(transcript.contains("attempt 2 backend help-then-work model - at"));
    assert!(transcript.contains(&format!("resuming S-{run}")));
    env.crew(&repo, &["advise", &run, "--text", "again"])
        .expect_code(4);
}

#[test]
fn a_native_run_is_attached_and_delivered_through_the_same_checks() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let out = dispatch(
        &env,
        &repo,
        "routes",
        "native",
        &["--verify", "test -f src/routes/native.rs"],
    );
    out.expect_code(0);
    let json = out.json();
    let run = json["run"].as_str().unwrap().to_string();
    assert_eq!(json["phase"], "awaiting-attach");
    let directive = &json["directive"];
    assert_eq!(
        directive["attach"],
        format!("git crew attach {run} --session <ID>")
    );
    let worktree = PathBuf::from(directive["worktree"].as_str().unwrap());
    assert!(
        read(Path::new(directive["prompt_file"].as_str().unwrap())).contains("## How to verify")
    );

    let out = env.crew(&repo, &["attach", &run, "--session", "lead-task-7"]);
    out.expect_code(0);
    assert_eq!(out.json()["run"]["session"], "lead-task-7");
    env.crew(&repo, &["attach", &run, "--session", "again"])
        .expect_code(4);

    // The lead's sub-task works in the worktree, under the same hooks.
    write(
        &worktree.join("src/routes/native.rs"),
        "pub fn native() {}\n",
    );
    write(&env.root().join("reply1.md"), "done, no footer\n");
    let out = env.crew(
        &repo,
        &[
            "deliver",
            &run,
            "--reply-file",
            env.root().join("reply1.md").to_str().unwrap(),
        ],
    );
    out.expect_code(1);
    assert_eq!(out.json()["error"]["code"], "footer-rejected");
    assert_eq!(out.json()["run"]["phase"], "working");

    write(
        &env.root().join("reply2.md"),
        "## Result\nAdded native.rs.\n## How to verify\ntest -f src/routes/native.rs\n## Deferred / concerns\nNone.\n",
    );
    let out = env.crew(
        &repo,
        &[
            "deliver",
            &run,
            "--reply-file",
            env.root().join("reply2.md").to_str().unwrap(),
        ],
    );
    out.expect_code(0);
    let result = &out.json()["run"];
    assert_eq!(result["outcome"], "pass");
    assert_eq!(result["attempts"], 2);
    assert_eq!(
        result["diff"]["files"],
        serde_json::json!(["src/routes/native.rs"])
    );
    let log = env.git_ok(
        &repo,
        &["log", "--format=%s", &format!("crew/routes/{run}")],
    );
    assert!(log.starts_with("crew: work left uncommitted by run"));
}

#[test]
fn queue_waits_for_a_free_slot_instead_of_refusing() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let one = ["--set", "backends.slow.concurrency=1"];
    let first = dispatched(
        &env,
        &repo,
        "first",
        "slow",
        &["--scope", "src/routes/first.rs", one[0], one[1]],
    );
    let out = dispatch(
        &env,
        &repo,
        "second",
        "slow",
        &["--scope", "src/routes/second.rs", one[0], one[1]],
    );
    out.expect_code(4);
    assert!(
        out.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--queue waits for a slot")
    );
    let out = dispatch(
        &env,
        &repo,
        "second",
        "slow",
        &["--scope", "src/routes/second.rs", "--queue", one[0], one[1]],
    );
    out.expect_code(0);
    assert_eq!(out.json()["phase"], "queued");
    let second = out.json()["run"].as_str().unwrap().to_string();
    assert_eq!(
        env.crew(&repo, &["status", &second]).json()["runs"][0]["phase"],
        "queued"
    );

    let out = env.crew(&repo, &["wait", &first, &second, "--timeout", "60s"]);
    out.expect_code(0);
    let runs = out.json()["runs"].clone();
    assert_eq!(runs[0]["outcome"], "pass");
    assert_eq!(runs[1]["outcome"], "pass");
    // The second started only once the first had ended.
    let first_end = runs[0]["finished_at"].as_str().unwrap().to_string();
    let transcript = env.crew(&repo, &["transcript", &second, "--human"]).stdout;
    let started = transcript
        .split(" at ")
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    assert!(started >= first_end, "{started} < {first_end}");
}

#[test]
fn a_run_that_ends_starts_the_queued_one_with_no_command_reading_the_runs() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let one = ["--set", "backends.slow.concurrency=1"];
    let first = dispatched(
        &env,
        &repo,
        "first",
        "slow",
        &["--scope", "src/routes/first.rs", one[0], one[1]],
    );
    let out = dispatch(
        &env,
        &repo,
        "second",
        "slow",
        &["--scope", "src/routes/second.rs", "--queue", one[0], one[1]],
    );
    out.expect_code(0);
    assert_eq!(out.json()["phase"], "queued");
    let second = out.json()["run"].as_str().unwrap().to_string();
    // Only the files are read from here: no command settles the store, so the second run
    // starts only if the scheduler hears of the first one's freed slot from its supervisor.
    let record = |run: &str| {
        std::fs::read(repo.join(format!(".git/crew/runs/{run}.json")))
            .ok()
            .and_then(|bytes| serde_json::from_slice::<Value>(&bytes).ok())
    };
    let first_record = poll_for(Duration::from_secs(60), "the first run's record", || {
        record(&first)
    });
    assert_eq!(first_record["outcome"], "pass", "{first_record}");
    let second_record = poll_for(Duration::from_secs(60), "the queued run's record", || {
        record(&second)
    });
    assert_eq!(second_record["outcome"], "pass", "{second_record}");
    assert!(
        second_record["started_at"].as_str() >= first_record["finished_at"].as_str(),
        "{second_record}"
    );
}

#[test]
fn watch_once_prints_one_frame_of_the_runs_in_flight() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = dispatched(&env, &repo, "routes", "silent", &[]);
    let frame = poll_for(Duration::from_secs(20), "the worker's first line", || {
        let out = env.crew(&repo, &["watch", "--once"]);
        out.expect_code(0);
        let json = out.json();
        (json["runs"][0]["last_line"] == "thinking...").then_some(json)
    });
    assert_eq!(frame["runs"][0]["run"], run.as_str());
    assert_eq!(frame["runs"][0]["phase"], "working");
    assert_eq!(frame["runs"][0]["last_line"], "thinking...");
    let human = env.crew(&repo, &["watch", "--once", "--human"]).stdout;
    assert!(human.starts_with("git crew watch — 1 in flight"), "{human}");
    let row = human
        .lines()
        .find(|l| l.contains(&run))
        .expect("the run's row");
    assert!(
        row.contains("routes") && row.contains("working") && row.ends_with("thinking..."),
        "{human}"
    );
    env.crew(&repo, &["abandon", &run]).expect_code(0);
    assert_eq!(
        env.crew(&repo, &["watch", "--once"]).json()["runs"],
        serde_json::json!([])
    );
}

#[test]
fn doctor_finds_rot_and_fixes_what_it_can_without_losing_work() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let out = env.crew(&repo, &["doctor"]);
    out.expect_code(0);
    assert_eq!(out.json()["problems"], serde_json::json!([]));

    // A worker process that escaped its run's session dies with the attempt: its
    // supervisor is its subreaper.
    let run = dispatched(&env, &repo, "routes", "escape", &[]);
    let (out, _) = wait(&env, &repo, &run);
    out.expect_code(0);
    let out = env.crew(&repo, &["doctor"]);
    assert_eq!(
        out.json()["problems"],
        serde_json::json!([]),
        "{}",
        out.stdout
    );
    // One that got away all the same (its supervisor was killed, say): doctor finds it
    // by the run it works for.
    let wt = repo.join(format!(".git/crew/worktrees/{run}"));
    let mut orphan = std::process::Command::new("sleep")
        .arg("300")
        .env("CREW_RUN", &run)
        .env("CREW_WORKTREE", &wt)
        .process_group(0)
        .spawn()
        .unwrap();
    std::fs::create_dir_all(repo.join(".git/crew/worktrees/stray")).unwrap();
    let out = env.crew(&repo, &["doctor"]);
    out.expect_code(1);
    let problems = out.json()["problems"].clone();
    let kinds: Vec<&str> = problems
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["kind"].as_str().unwrap())
        .collect();
    assert!(kinds.contains(&"orphan-process"), "{problems}");
    assert!(kinds.contains(&"orphan-worktree"), "{problems}");

    let out = env.crew(&repo, &["doctor", "--fix"]);
    out.expect_code(1);
    let problems = out.json()["problems"].clone();
    let fixed: Vec<&str> = problems
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["fixed"] == true)
        .map(|p| p["kind"].as_str().unwrap())
        .collect();
    assert_eq!(fixed, ["orphan-process"], "{problems}");
    orphan.wait().unwrap();
    // The orphan worktree is listed, never removed.
    assert!(repo.join(".git/crew/worktrees/stray").exists());
    let out = env.crew(&repo, &["doctor"]);
    let kinds: Vec<String> = out.json()["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["kind"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kinds, ["orphan-worktree"]);
}

#[test]
fn transcripts_can_go_elsewhere_or_nowhere() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let dir = env.root().join("transcripts");
    let run = dispatched(
        &env,
        &repo,
        "routes",
        "ok",
        &["--transcripts", dir.to_str().unwrap()],
    );
    wait(&env, &repo, &run).0.expect_code(0);
    let files: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    assert_eq!(files.len(), 1);
    let mode = std::os::unix::fs::PermissionsExt::mode(&files[0].metadata().unwrap().permissions());
    assert_eq!(mode & 0o777, 0o600);
    assert!(
        env.crew(&repo, &["transcript", &run, "--human"])
            .stdout
            .contains("Working on routes")
    );

    // Piped, a transcript is printed as it is; --json wraps it.
    let piped = env.crew(&repo, &["transcript", &run]);
    piped.expect_code(0);
    assert!(!piped.stdout.starts_with('{'), "{}", piped.stdout);
    assert!(
        piped.stdout.contains("===== git-crew run"),
        "{}",
        piped.stdout
    );
    let wrapped = env.crew(&repo, &["transcript", &run, "--json"]).json();
    assert!(
        wrapped["transcript"]
            .as_str()
            .unwrap()
            .contains("===== git-crew run")
    );

    let run = dispatched(&env, &repo, "routes2", "ok", &["--transcripts", ""]);
    wait(&env, &repo, &run).0.expect_code(0);
    let out = env.crew(&repo, &["transcript", &run]);
    out.expect_code(3);
    assert_eq!(out.json()["error"]["code"], "transcript-disabled");
}

#[test]
fn dispatch_needs_init_and_role_routing_yields_to_flags() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    env.git_ok(&repo, &["config", "--unset", "extensions.worktreeConfig"]);
    let out = dispatch(&env, &repo, "routes", "ok", &[]);
    out.expect_code(2);
    assert_eq!(out.json()["error"]["code"], "not-initialised");
    env.git_ok(&repo, &["config", "extensions.worktreeConfig", "true"]);

    let out = env
        .dispatch(&repo, "routes")
        .backend("ok")
        .scope("src/routes/**")
        .set("roles.implement.model=role-model")
        .set("roles.implement.time_budget=5m")
        .args(&["--model", "flag-model"])
        .run();
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["model"], "flag-model");
    let run = json["run"].as_str().unwrap().to_string();
    let (_, result) = env.wait(&repo, &run).result();
    assert_eq!(result["budget_s"], 300);
}

#[test]
fn advise_on_a_native_run_hands_the_answer_to_the_lead() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = dispatched(&env, &repo, "routes", "native", &[]);
    env.crew(&repo, &["attach", &run, "--session", "lead-1"])
        .expect_code(0);
    write(
        &env.root().join("help.md"),
        "NEEDS-HELP: which store?\ntried: x\noptions: a | b\nleaning: a\ncost-if-wrong: small\n",
    );
    let out = env.crew(
        &repo,
        &[
            "deliver",
            &run,
            "--reply-file",
            env.root().join("help.md").to_str().unwrap(),
        ],
    );
    out.expect_code(5);
    let out = env.crew(&repo, &["advise", &run, "--text", "Take a."]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["phase"], "working");
    assert_eq!(json["supervisor_pid"], Value::Null);
    assert!(read(Path::new(json["advice_file"].as_str().unwrap())).contains("Take a."));
    // The run stays the lead's: no supervisor took it over and failed it. Nothing is
    // expected to happen, so there is nothing to poll for: this sleep is the time a
    // wrongly started supervisor would have had to fail the run.
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        env.crew(&repo, &["status", &run]).json()["runs"][0]["phase"],
        "working"
    );
}

#[test]
fn a_project_hook_that_hangs_cannot_hold_the_run() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    // The project's own pre-commit hook (chained after the scope check) never returns.
    let hook = repo.join(".git/hooks/pre-commit");
    let mut text = read(&hook);
    text.push_str("sleep 300\n");
    write(&hook, &text);
    let run = dispatched(&env, &repo, "routes", "ok", &["--time-budget", "2s"]);
    let start = Instant::now();
    let (out, result) = wait(&env, &repo, &run);
    out.expect_code(1);
    assert!(start.elapsed() < Duration::from_secs(40));
    assert_eq!(result["outcome"], "fail", "{result}");
    assert!(
        result["decision"].as_str().unwrap().contains("ran past"),
        "{result}"
    );
}

#[test]
fn an_abandoned_queued_run_never_starts() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let one = ["--set", "backends.slow.concurrency=1"];
    let first = dispatched(
        &env,
        &repo,
        "first",
        "slow",
        &["--scope", "src/routes/first.rs", one[0], one[1]],
    );
    let queued = dispatched(
        &env,
        &repo,
        "second",
        "slow",
        &["--scope", "src/routes/second.rs", "--queue", one[0], one[1]],
    );
    let out = env.crew(&repo, &["abandon", &queued]);
    out.expect_code(0);
    assert_eq!(out.json()["run"]["phase"], "abandoned");
    wait(&env, &repo, &first).0.expect_code(0);
    // The first run's supervisor starts queued runs as it ends: this sleep is the time it
    // would have had to start the abandoned one (an absence, so nothing to poll for).
    std::thread::sleep(Duration::from_millis(500));
    let status = env.crew(&repo, &["status", &queued]).json();
    assert_eq!(status["runs"][0]["phase"], "abandoned");
    assert_eq!(status["runs"][0]["attempts"], 0);
    assert!(
        !repo
            .join(format!(".git/crew/runs/{queued}/attempt-1.out"))
            .exists()
    );
}

/// This project's machines have Landlock (ABI 7): the fence tests require it.
#[track_caller]
pub fn require_fence() {
    assert!(
        git_crew::sys::fence::kernel_abi().is_some(),
        "this kernel has no Landlock: the write fence cannot be tested here"
    );
}

#[test]
fn a_backend_that_cannot_start_is_refused_at_dispatch_and_never_charged_to_a_model() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    for (set, key) in [
        (
            "backends.ok.argv=[\"/nonexistent/worker.sh\"]",
            "backends.ok.argv",
        ),
        (
            "backends.codex.command=no-such-codex",
            "backends.codex.command",
        ),
    ] {
        let backend = if key.contains("codex") { "codex" } else { "ok" };
        let out = env.crew(
            &repo,
            &[
                "dispatch",
                "--task",
                "routes",
                "--backend",
                backend,
                "--prompt",
                "x",
                "--scope",
                "src/routes/**",
                "--set",
                set,
            ],
        );
        out.expect_code(2);
        let error = &out.json()["error"];
        assert_eq!(error["code"], "backend-unavailable", "{error}");
        assert!(error["hint"].as_str().unwrap().contains(key), "{error}");
    }
    // Nothing was created: no worktree, branch, pointer or seal.
    let state = repo.join(".git/crew");
    for dir in ["worktrees", "live"] {
        let n = std::fs::read_dir(state.join(dir)).map_or(0, |d| d.count());
        assert_eq!(n, 0, "{dir}");
    }
    assert_eq!(
        env.git_ok(&repo, &["for-each-ref", "refs/heads/crew", "refs/crew"]),
        ""
    );

    // A program known only in the worktree that fails to start: its own outcome, `error`,
    // never a failure of the backend.
    let run = dispatched(
        &env,
        &repo,
        "routes",
        "ok",
        &["--set", "backends.ok.argv=[\"./missing-worker.sh\"]"],
    );
    let (out, result) = wait(&env, &repo, &run);
    out.expect_code(1);
    assert_eq!(result["outcome"], "error", "{result}");
    assert!(
        result["decision"]
            .as_str()
            .unwrap()
            .contains("cannot start"),
        "{result}"
    );
    let rows = env.crew(&repo, &["ledger", "--task", "routes"]).json()["rows"].clone();
    assert_eq!(rows[0]["outcome"], "error", "{rows}");
    let verdict = env
        .should_stop(&repo, "routes")
        .model("backend:ok")
        .verdict();
    assert_eq!(verdict["failures"], 0, "{verdict}");
    let stats = env.crew(&repo, &["ledger", "stats"]).json();
    let configs = stats["stats"].as_array().expect("stats is a list");
    assert!(
        configs.iter().all(|c| c["backend"] != "ok"),
        "an error measures no configuration: {stats}"
    );
}

/// Waits until `file` holds a pid and returns it.
#[track_caller]
fn pid_in(file: &Path) -> String {
    poll_for(
        Duration::from_secs(20),
        &format!("a pid in {}", file.display()),
        || {
            let text = std::fs::read_to_string(file).ok()?;
            Some(text.trim().to_string()).filter(|pid| !pid.is_empty())
        },
    )
}

/// Fails the test unless process `pid` (`what`) is gone within five seconds.
#[track_caller]
fn gone_soon(pid: &str, what: &str) {
    poll_until(
        Duration::from_secs(5),
        &format!("{what} (pid {pid}) to be gone"),
        || pid_gone(pid),
    );
}

#[test]
fn a_setsid_daemon_without_its_environment_dies_with_its_run() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    // The worker replies and exits; its daemon must not outlive the attempt.
    let run = dispatched(&env, &repo, "routes", "daemon", &[]);
    let (out, result) = wait(&env, &repo, &run);
    out.expect_code(0);
    assert_eq!(result["outcome"], "pass", "{result}");
    let daemon = pid_in(&repo.join(format!(".git/crew/runs/{run}/tmp/daemon-pid")));
    gone_soon(&daemon, "the daemon of the ended run");

    // Abandoned while it works, with its daemon alive: both go.
    let run = dispatched(
        &env,
        &repo,
        "other",
        "daemon",
        &[
            "--scope",
            "docs/**",
            "--set",
            "backends.daemon.env.DAEMON_STAY=yes",
        ],
    );
    let daemon = pid_in(&repo.join(format!(".git/crew/runs/{run}/tmp/daemon-pid")));
    assert!(!pid_gone(&daemon));
    env.crew(&repo, &["abandon", &run]).expect_code(0);
    gone_soon(&daemon, "the daemon of the abandoned run");
}

/// A finished run without its worktree (so verify checks its commit out in a throwaway
/// one), and `git crew verify RUN --command command` started in the background.
fn verify_in_the_background(
    env: &TestEnv,
    repo: &Path,
    command: &str,
) -> (String, std::process::Child) {
    let run = env.finished_run(
        repo,
        "routes",
        "ok",
        &["--scope", "src/routes/**", "--verify", "true"],
    );
    let wt = repo.join(format!(".git/crew/worktrees/{run}"));
    env.git_ok(
        repo,
        &["worktree", "remove", "--force", wt.to_str().unwrap()],
    );
    let child = env
        .command(crate::common::bin())
        .current_dir(repo)
        .args(["verify", &run, "--command", command])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    (run, child)
}

/// Neither the throwaway checkout of `git crew verify RUN` nor its registration is left.
fn assert_throwaway_gone(env: &TestEnv, repo: &Path, run: &str) {
    assert!(
        !repo
            .join(format!(".git/crew/runs/{run}/verify-checkout"))
            .exists()
    );
    let list = env.git_ok(repo, &["worktree", "list", "--porcelain"]);
    assert!(!list.contains("verify-checkout"), "{list}");
}

#[test]
fn ctrl_c_of_verify_stops_its_command_and_daemons_and_removes_its_checkout() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let command = "env -u CREW_RUN setsid sh -c 'echo $$ > \"$CREW_VERIFIER_DIR/daemon-pid\"; exec sleep 1000' & echo $$ > \"$CREW_VERIFIER_DIR/verify-pid\"; sleep 1000";
    let (run, child) = verify_in_the_background(&env, &repo, command);
    let dir = repo.join(format!(".git/crew/runs/{run}/verifier-again"));
    let daemon = pid_in(&dir.join("daemon-pid"));
    let verify = pid_in(&dir.join("verify-pid"));
    assert!(
        repo.join(format!(".git/crew/runs/{run}/verify-checkout"))
            .exists()
    );
    std::process::Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["error"]["code"], "interrupted", "{json}");
    gone_soon(&verify, "the verify command after Ctrl-C");
    gone_soon(&daemon, "its daemon after Ctrl-C");
    assert_throwaway_gone(&env, &repo, &run);
}

#[test]
fn doctor_ends_the_verify_of_a_killed_git_crew_and_removes_its_checkout() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let command = "echo $$ > \"$CREW_VERIFIER_DIR/verify-pid\"; sleep 1000";
    let (run, mut child) = verify_in_the_background(&env, &repo, command);
    let dir = repo.join(format!(".git/crew/runs/{run}/verifier-again"));
    let verify = pid_in(&dir.join("verify-pid"));
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!pid_gone(&verify), "the orphaned verify still runs");
    let out = env.crew(&repo, &["doctor"]);
    out.expect_code(1);
    assert!(out.stdout.contains("orphan-verify"), "{}", out.stdout);
    let out = env.crew(&repo, &["doctor", "--fix"]);
    assert!(out.stdout.contains("stale-checkout"), "{}", out.stdout);
    gone_soon(&verify, "the orphaned verify after doctor --fix");
    assert_throwaway_gone(&env, &repo, &run);
}

#[test]
fn a_reward_that_is_no_number_fails_the_verify_by_name_and_every_record_reads_back() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    for (task, verify) in [
        ("inf", "echo inf > \"$CREW_VERIFIER_DIR/reward.txt\""),
        ("nan", "echo NaN > \"$CREW_VERIFIER_DIR/reward.txt\""),
        (
            "big",
            "echo '{\"reward\": 1e999}' > \"$CREW_VERIFIER_DIR/reward.json\"",
        ),
    ] {
        let run = env.finished_run(
            &repo,
            task,
            "ok",
            &[
                "--scope",
                "src/routes/**",
                "--verify",
                verify,
                "--continue-until-pass",
            ],
        );
        let show = env.crew(&repo, &["show", &run]);
        show.expect_code(0);
        let result = &show.json()["run"];
        assert_eq!(result["outcome"], "fail", "{result}");
        assert_eq!(result["verify"]["passed"], false, "{result}");
        let problem = result["verify"]["problem"].as_str().unwrap_or_default();
        assert!(
            problem.contains("not a finite number") || problem.contains("cannot be read"),
            "{result}"
        );
        let rows = env.crew(&repo, &["ledger", "--task", task]).json()["rows"].clone();
        assert_eq!(rows.as_array().unwrap().len(), 2, "{rows}");
    }
    env.crew(&repo, &["status"]).expect_code(0);
    env.crew(&repo, &["ledger", "stats"]).expect_code(0);
    // Sizes and budgets that no record could hold are refused up front.
    for flags in [
        ["--size", "inf"],
        ["--size", "NaN"],
        ["--time-budget", "10000years"],
    ] {
        let mut args = vec![
            "dispatch",
            "--task",
            "x",
            "--backend",
            "ok",
            "--prompt",
            "x",
            "--scope",
            "x/**",
        ];
        args.extend(flags);
        env.crew(&repo, &args).expect_code(2);
    }
}

#[test]
fn an_unreadable_live_pointer_is_named_and_still_holds_its_task_and_scope() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = dispatched(&env, &repo, "routes", "hang", &["--scope", "src/routes/**"]);
    let child = pid_in(&repo.join(format!(".git/crew/runs/{run}/tmp/child-pid")));
    write(
        &repo.join(format!(".git/crew/live/{run}.json")),
        "{\"run\": \"broken",
    );
    let status = env.crew(&repo, &["status"]);
    status.expect_code(0);
    assert!(status.stdout.contains(&run), "{}", status.stdout);
    assert!(
        status.stdout.contains("cannot be read"),
        "{}",
        status.stdout
    );
    let show = env.crew(&repo, &["show", &run]);
    show.expect_code(4);
    assert_eq!(show.json()["error"]["code"], "run-unreadable");
    // Its task and its scope stay held.
    dispatch(&env, &repo, "routes", "ok", &["--scope", "docs/**"]).expect_code(4);
    dispatch(&env, &repo, "other", "ok", &["--scope", "src/routes/x/**"]).expect_code(4);
    // doctor names it and never kills what works for it.
    let out = env.crew(&repo, &["doctor", "--fix"]);
    assert!(out.stdout.contains("unreadable-pointer"), "{}", out.stdout);
    assert!(!pid_gone(&child), "doctor killed a run it cannot read");
    env.crew(&repo, &["wait", &run, "--timeout", "1s"]);
}

#[test]
fn the_reply_is_kept_as_the_manifest_unless_manifest_required_is_off() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = env.finished_run(&repo, "routes", "ok", &["--scope", "src/routes/**"]);
    let manifest = read(&repo.join(format!(".git/crew/runs/{run}/manifest.md")));
    assert!(manifest.contains("## Result"), "{manifest}");
    let run = env.finished_run(
        &repo,
        "again",
        "ok",
        &[
            "--scope",
            "src/routes/**",
            "--set",
            "fences.manifest_required=false",
        ],
    );
    let manifest = std::fs::read_to_string(repo.join(format!(".git/crew/runs/{run}/manifest.md")))
        .unwrap_or_default();
    assert!(!manifest.contains("## Result"), "{manifest}");
    let show = env.crew(&repo, &["show", &run]).json();
    assert_eq!(show["run"]["outcome"], "pass", "{show}");
}

#[test]
fn two_advises_at_once_drive_one_supervisor_and_one_answer() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = dispatched(&env, &repo, "routes", "help-then-work", &[]);
    let (out, _) = wait(&env, &repo, &run);
    out.expect_code(5);
    let children: Vec<_> = ["first", "second"]
        .iter()
        .map(|text| {
            env.command(crate::common::bin())
                .current_dir(&repo)
                .args(["advise", &run, "--text", text])
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let codes: Vec<i32> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap().status.code().unwrap())
        .collect();
    let mut sorted = codes.clone();
    sorted.sort();
    assert_eq!(sorted, [0, 4], "{codes:?}");
    let (out, result) = wait(&env, &repo, &run);
    out.expect_code(0);
    // One answer was used, in one attempt after the question.
    assert_eq!(result["attempts"], 2, "{result}");
    let store = read(&repo.join(format!(".git/crew/worktrees/{run}/src/routes/store.rs")));
    assert!(store == "first\n" || store == "second\n", "{store}");
}

#[test]
fn a_flood_of_output_is_stored_once_capped_and_the_footer_survives() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = env.finished_run(
        &repo,
        "routes",
        "flood",
        &[
            "--scope",
            "src/routes/**",
            "--set",
            "backends.flood.env.FLOOD_MB=\"30\"",
            "--set",
            "fences.max_output=1048576",
        ],
    );
    let show = env.crew(&repo, &["show", &run]).json();
    assert_eq!(show["run"]["outcome"], "pass", "{show}");
    assert_eq!(show["run"]["footer"]["result"], "Flooded, then replied.");
    let transcript = PathBuf::from(show["run"]["transcript"].as_str().unwrap());
    let size = std::fs::metadata(&transcript).unwrap().len();
    assert!(size < 2 * 1024 * 1024, "the transcript holds {size} bytes");
    let text = read(&transcript);
    assert!(text.contains("bytes of output cut here]"), "no cut marked");
    // Stored once: no per-attempt copy is left beside the transcript.
    let leftovers: Vec<_> = std::fs::read_dir(repo.join(format!(".git/crew/runs/{run}")))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("attempt-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // A worker that never stops printing, until its budget ends: the disk stays bounded.
    let run = env.finished_run(
        &repo,
        "forever",
        "flood",
        &[
            // Its scope covers the file it leaves: a work out of scope would make the
            // run a scope rejection, which outranks the timeout.
            "--scope",
            "src/routes/**",
            "--set",
            "fences.max_output=1048576",
            "--set",
            "backends.flood.time_budget=\"3s\"",
        ],
    );
    let show = env.crew(&repo, &["show", &run]).json();
    assert_eq!(show["run"]["outcome"], "timeout", "{show}");
    let transcript = PathBuf::from(show["run"]["transcript"].as_str().unwrap());
    let size = std::fs::metadata(&transcript).unwrap().len();
    assert!(size < 2 * 1024 * 1024, "the transcript holds {size} bytes");
}

#[test]
fn a_lint_hook_that_speaks_of_scopes_is_a_failure_not_a_scope_rejection() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    // The repository's own hook refuses every commit, in words that sound like git-crew's.
    let hook = repo.join(".git/hooks/pre-commit");
    let text = read(&hook);
    write(
        &hook,
        &format!(
            "{text}\necho 'crew: src/routes/crew.rs (added) is outside the write scope lint/**' >&2\nexit 1\n"
        ),
    );
    let run = dispatched(&env, &repo, "routes", "ok", &[]);
    let (_, result) = wait(&env, &repo, &run);
    assert_eq!(result["outcome"], "fail", "{result}");
    assert!(
        result["decision"]
            .as_str()
            .unwrap()
            .contains("a hook refused the commit"),
        "{result}"
    );
}

/// A lead that is not root gets the same private /tmp: git-crew makes a user namespace
/// for the mount namespace. Run as `nobody` when the tests run as root (as here and in
/// CI), else as the user the tests run as.
#[test]
fn a_lead_that_is_not_root_gives_its_workers_a_private_tmp_too() {
    use std::os::unix::fs::PermissionsExt;
    require_fence();
    let env = TestEnv::new();
    std::fs::set_permissions(env.root(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let shared = env.root().join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
    // What the lead keeps in /tmp, which its workers must not see.
    let marker = tempfile::Builder::new()
        .prefix("crew-lead-socket-")
        .tempfile_in("/tmp")
        .unwrap();
    let marker_name = marker
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let worker = shared.join("worker.sh");
    write(
        &worker,
        "#!/bin/sh\necho \"uid $(id -u)\"\necho \"tmp $(ls -a /tmp | tr '\\n' ' ')\"\n\
         echo \"home $HOME\"\n: > \"$TMPDIR/mine\" && echo 'tmpdir ok'\n\
         printf '## Result\\nok\\n## How to verify\\ntrue\\n## Deferred / concerns\\nNone.\\n'\n",
    );
    std::fs::set_permissions(&worker, std::fs::Permissions::from_mode(0o755)).unwrap();
    let script = format!(
        "set -e; cd {shared}; git init -q -b main r; cd r; git commit -q --allow-empty -m init\n\
         git crew init >/dev/null\n\
         printf 'version = 1\\ndefault_backend = \"w\"\\n[backends.w]\\nadapter = \"command\"\\nargv = [\"{worker}\"]\\n' > .crew/flight.toml\n\
         git add -A; git commit -qm cfg\n\
         git crew dispatch --task t --scope 'src/**' --prompt x --wait\n\
         git crew transcript @last --human\n",
        shared = shared.display(),
        worker = worker.display(),
    );
    // SAFETY: geteuid cannot fail.
    let root = unsafe { libc::geteuid() } == 0;
    let mut cmd = if root {
        let mut c = env.command("setpriv");
        c.args([
            "--reuid",
            "65534",
            "--regid",
            "65534",
            "--clear-groups",
            "sh",
            "-c",
        ]);
        c
    } else {
        let mut c = env.command("sh");
        c.arg("-c");
        c
    };
    let out = cmd
        .arg(&script)
        .env("HOME", &shared)
        // git-crew's temp files go where nobody may write them.
        .env("TMPDIR", &shared)
        .current_dir(&shared)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("\"fence\":\"landlock-v7+ns\""), "{stdout}");
    assert!(stdout.contains("\"outcome\":\"pass\""), "{stdout}");
    if root {
        assert!(stdout.contains("uid 65534"), "{stdout}");
    }
    let seen = stdout
        .lines()
        .find_map(|l| l.strip_prefix("tmp "))
        .expect("the worker listed /tmp");
    assert!(
        !seen.contains(&marker_name),
        "the lead's /tmp shows: {seen}"
    );
    assert!(stdout.contains("tmpdir ok"), "{stdout}");
    assert!(
        stdout.contains("/.git/crew/runs/"),
        "its own home: {stdout}"
    );
}

#[test]
fn a_repository_without_a_committer_identity_is_refused_as_a_configuration_error() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let mut cmd = env.command(crate::common::bin());
    cmd.current_dir(&repo).args([
        "dispatch",
        "--task",
        "routes",
        "--prompt",
        "x",
        "--scope",
        "src/routes/**",
    ]);
    for key in [
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
    ] {
        cmd.env_remove(key);
    }
    let out = crate::common::run(&mut cmd, None);
    out.expect_code(2);
    let error = &out.json()["error"];
    assert_eq!(error["code"], "no-identity", "{}", out.stdout);
    assert!(error["hint"].as_str().unwrap().contains("user.email"));
    // Nothing was made.
    let branches = env.git_ok(&repo, &["branch", "--list", "crew/*"]);
    assert!(branches.trim().is_empty(), "{branches}");
    assert!(
        !repo.join(".git/crew/worktrees").exists()
            || std::fs::read_dir(repo.join(".git/crew/worktrees"))
                .unwrap()
                .next()
                .is_none()
    );
}

#[test]
fn a_silent_run_that_left_work_outside_its_scope_is_a_scope_reject() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    // The idle watchdog ends it, long before its time budget.
    let run = dispatched(
        &env,
        &repo,
        "routes",
        "out-of-scope",
        &[
            "--time-budget",
            "60s",
            "--set",
            "backends.out-of-scope.env.HANG=yes",
            "--set",
            "backends.out-of-scope.idle_timeout=\"1s\"",
        ],
    );
    let (_, result) = wait(&env, &repo, &run);
    assert_eq!(result["outcome"], "scope-reject", "{result}");
    let decision = result["decision"].as_str().unwrap();
    assert!(
        decision.contains("README.md (modified) is outside the write scope")
            && decision.ends_with("(the worker was silent for 1s (idle watchdog))"),
        "{decision}"
    );
    let ledger = env.crew(&repo, &["ledger", "--task", "routes", "--json"]);
    ledger.expect_code(0);
    assert!(ledger.stdout.contains("scope-reject"), "{}", ledger.stdout);
    assert!(!ledger.stdout.contains("\"timeout\""), "{}", ledger.stdout);
}

#[test]
fn a_run_past_its_budget_that_left_work_outside_its_scope_is_a_scope_reject() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = dispatched(
        &env,
        &repo,
        "routes",
        "out-of-scope",
        &[
            "--time-budget",
            "2s",
            "--set",
            "backends.out-of-scope.env.HANG=yes",
        ],
    );
    let (_, result) = wait(&env, &repo, &run);
    assert_eq!(result["outcome"], "scope-reject", "{result}");
    let decision = result["decision"].as_str().unwrap();
    assert!(
        decision.contains("README.md (modified) is outside the write scope")
            && decision.ends_with("(the time budget was spent)"),
        "{decision}"
    );
    // The ledger counts it as the worker's scope rejection, not a timeout.
    let ledger = env.crew(&repo, &["ledger", "--task", "routes", "--json"]);
    ledger.expect_code(0);
    assert!(ledger.stdout.contains("scope-reject"), "{}", ledger.stdout);
    assert!(!ledger.stdout.contains("\"timeout\""), "{}", ledger.stdout);
}

/// Starts `git crew dispatch` once for each of `tasks` (task, scope) all at once, with
/// `extra` arguments, and gives each one's output, in order.
fn dispatched_at_once(
    env: &TestEnv,
    repo: &Path,
    backend: &str,
    tasks: &[(String, String)],
    extra: &[&str],
) -> Vec<Out> {
    let children: Vec<_> = tasks
        .iter()
        .map(|(task, scope)| {
            env.command(crate::common::bin())
                .current_dir(repo)
                .args(["dispatch", "--task", task, "--scope", scope])
                .args(["--backend", backend, "--prompt", "Do the task."])
                .args(extra)
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|child| {
            let output = child.wait_with_output().unwrap();
            Out {
                code: output.status.code().unwrap_or(-1),
                stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            }
        })
        .collect()
}

/// The names of the entries of `dir` (none when it is not there), sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|e| {
            e.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

#[test]
fn thirty_two_dispatches_of_disjoint_scopes_at_once_all_start_each_in_its_own_worktree() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    // One slot: the first to start works, the others wait in the queue, every one of them
    // with its worktree and branch made at dispatch.
    write(
        &repo.join(".crew/flight.toml"),
        &format!(
            "version = 1\ndefault_backend = \"hang\"\n[backends.hang]\nadapter = \"command\"\nargv = [\"{}\", \"{{prompt_file}}\"]\nconcurrency = 1\ntime_budget = \"60s\"\n",
            crate::common::fixtures().join("workers/hang.sh").display()
        ),
    );
    let tasks: Vec<(String, String)> = (0..32)
        .map(|i| (format!("part-{i:02}"), format!("parts/{i:02}/**")))
        .collect();
    let outs = dispatched_at_once(&env, &repo, "hang", &tasks, &["--queue"]);
    let base = env.git_ok(&repo, &["rev-parse", "HEAD"]).trim().to_string();
    let mut runs = Vec::new();
    for ((task, _), out) in tasks.iter().zip(&outs) {
        out.expect_code(0);
        let json = out.json();
        let run = json["run"].as_str().unwrap().to_string();
        let wt = PathBuf::from(json["worktree"].as_str().unwrap());
        // Its own worktree, checked out whole on its own branch, at the base, clean.
        assert!(wt.ends_with(format!(".git/crew/worktrees/{run}")), "{json}");
        assert_eq!(
            env.git_ok(&wt, &["symbolic-ref", "HEAD"]).trim(),
            format!("refs/heads/crew/{task}/{run}")
        );
        assert_eq!(env.git_ok(&wt, &["rev-parse", "HEAD"]).trim(), base);
        assert_eq!(env.git_ok(&wt, &["status", "--porcelain"]), "", "{run}");
        assert_eq!(
            env.git_ok(&wt, &["ls-files"]),
            env.git_ok(&repo, &["ls-files"]),
            "{run}"
        );
        runs.push(run);
    }
    let mut distinct = runs.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), 32);
    // Every one registered with git and locked, and live.
    let listed = env.git_ok(&repo, &["worktree", "list", "--porcelain"]);
    assert_eq!(listed.matches("\nlocked").count(), 32, "{listed}");
    for run in &runs {
        assert!(
            listed.contains(&format!("/.git/crew/worktrees/{run}\n")),
            "{run}"
        );
    }
    assert_eq!(entries(&repo.join(".git/crew/live")).len(), 32);
    let phases: Vec<String> = env.crew(&repo, &["status"]).json()["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["phase"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        phases.iter().filter(|p| *p == "queued").count(),
        31,
        "{phases:?}"
    );
    for run in &runs {
        env.crew(&repo, &["abandon", run]).expect_code(0);
    }
}

#[test]
fn thirty_two_dispatches_of_overlapping_scopes_at_once_have_exactly_one_winner() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let tasks: Vec<(String, String)> = (0..32)
        .map(|i| (format!("racer-{i:02}"), "src/**".to_string()))
        .collect();
    let outs = dispatched_at_once(&env, &repo, "hang", &tasks, &[]);
    let won: Vec<&Out> = outs.iter().filter(|o| o.code == 0).collect();
    assert_eq!(won.len(), 1, "{outs:?}");
    for out in outs.iter().filter(|o| o.code != 0) {
        out.expect_code(4);
        let message = out.json()["error"]["message"].as_str().unwrap().to_string();
        assert!(message.contains("overlaps"), "{message}");
    }
    let winner = won[0].json();
    let run = winner["run"].as_str().unwrap();
    let task = winner["task"].as_str().unwrap();
    // The winner's branch, worktree, pointer and seal, and nothing of the others.
    assert_eq!(
        env.git_ok(
            &repo,
            &["for-each-ref", "--format=%(refname)", "refs/heads/crew/"]
        )
        .trim(),
        format!("refs/heads/crew/{task}/{run}")
    );
    assert_eq!(
        env.git_ok(
            &repo,
            &["for-each-ref", "--format=%(refname)", "refs/crew/sealed/"]
        )
        .trim(),
        format!("refs/crew/sealed/{run}")
    );
    assert_eq!(entries(&repo.join(".git/crew/worktrees")), [run]);
    assert_eq!(entries(&repo.join(".git/worktrees")), [run]);
    assert_eq!(
        entries(&repo.join(".git/crew/live")),
        [format!("{run}.json")]
    );
    env.crew(&repo, &["abandon", run]).expect_code(0);
}

#[test]
fn a_dispatch_whose_checkout_fails_leaves_no_claim_branch_pointer_or_worktree() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let nothing_left = |why: &str| {
        assert_eq!(
            env.git_ok(&repo, &["for-each-ref", "refs/heads/crew/", "refs/crew/"]),
            "",
            "{why}"
        );
        assert_eq!(
            entries(&repo.join(".git/crew/live")),
            Vec::<String>::new(),
            "{why}"
        );
        assert_eq!(
            entries(&repo.join(".git/crew/worktrees")),
            Vec::<String>::new(),
            "{why}"
        );
        assert_eq!(
            entries(&repo.join(".git/worktrees")),
            Vec::<String>::new(),
            "{why}"
        );
        assert_eq!(
            entries(&repo.join(".git/crew/runs")),
            Vec::<String>::new(),
            "{why}"
        );
        assert_eq!(
            env.git_ok(&repo, &["worktree", "list", "--porcelain"])
                .matches("worktree ")
                .count(),
            1,
            "{why}"
        );
    };
    // The checkout itself fails, after the dispatch turn was let go.
    let out = crate::common::run(
        env.command(crate::common::bin())
            .current_dir(&repo)
            .env("GIT_CREW_FAILPOINT", "dispatch-checkout")
            .args(["dispatch", "--task", "routes", "--scope", "src/routes/**"])
            .args(["--backend", "ok", "--prompt", "Do the task."]),
        None,
    );
    assert_ne!(out.code, 0, "{out:?}");
    assert!(
        out.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("the checkout failed"),
        "{out:?}"
    );
    nothing_left("a failed checkout");
    // A base whose tree names a blob the repository does not have: neither gix nor git
    // can check it out.
    let missing = "1111111111111111111111111111111111111111";
    let made = crate::common::run(
        env.command("git")
            .current_dir(&repo)
            .args(["mktree", "--missing"]),
        Some(format!("100644 blob {missing}\tgone.txt\n").as_bytes()),
    );
    made.expect_code(0);
    let tree = made.stdout.trim().to_string();
    let commit = env
        .git_ok(
            &repo,
            &["commit-tree", &tree, "-p", "HEAD", "-m", "a blob short"],
        )
        .trim()
        .to_string();
    let out = dispatch(&env, &repo, "routes", "ok", &["--base", &commit]);
    assert_ne!(out.code, 0, "{out:?}");
    nothing_left("a missing blob");
    // The task and its scope are free: the next dispatch of them starts.
    let run = dispatched(&env, &repo, "routes", "ok", &[]);
    let (out, result) = wait(&env, &repo, &run);
    out.expect_code(0);
    assert_eq!(result["outcome"], "pass", "{result}");
}

#[test]
fn the_nesting_check_reads_loose_and_packed_branches_by_name() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    // Their outcome does not matter (the worker writes outside these scopes): their
    // branches stay.
    let api = dispatched(&env, &repo, "api", "ok", &["--scope", "api/**"]);
    wait(&env, &repo, &api);
    let deep = dispatched(&env, &repo, "ui/forms", "ok", &["--scope", "ui/**"]);
    wait(&env, &repo, &deep);
    assert!(
        env.git(
            &repo,
            &[
                "rev-parse",
                "--verify",
                &format!("refs/heads/crew/ui/forms/{deep}")
            ]
        )
        .code
            == 0
    );
    let refused = |task: &str| {
        let out = dispatch(&env, &repo, task, "ok", &["--scope", "docs/**"]);
        out.expect_code(4);
        assert_eq!(out.json()["error"]["code"], "task-nests", "{task}");
    };
    for packed in [false, true] {
        if packed {
            env.git_ok(&repo, &["pack-refs", "--all"]);
            assert!(
                !repo
                    .join(format!(".git/refs/heads/crew/api/{api}"))
                    .exists()
            );
        }
        // In a task's folder, or holding one; a name that only begins alike is not.
        refused("api/v2");
        refused("ui");
        refused("ui/forms/x");
    }
    for task in ["apis", "ui-kit", "api2/x"] {
        let run = dispatched(&env, &repo, task, "ok", &["--scope", &format!("{task}/**")]);
        wait(&env, &repo, &run);
    }
}
