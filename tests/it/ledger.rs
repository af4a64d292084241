//! The outcome ledger in git notes, and the two-failure rule read from it.

use std::path::Path;

use crate::common::TestEnv;

fn run_task(env: &TestEnv, repo: &Path, task: &str, backend: &str, extra: &[&str]) -> String {
    let mut args = vec![
        "dispatch",
        "--task",
        task,
        "--backend",
        backend,
        "--scope",
        "src/routes/**",
        "--prompt",
        "x",
    ];
    args.extend_from_slice(extra);
    let out = env.crew(repo, &args);
    out.expect_code(0);
    let run = out.json()["run"].as_str().unwrap().to_string();
    env.crew(repo, &["wait", &run, "--timeout", "60s"]);
    run
}

fn task_blob(env: &TestEnv, repo: &Path, task: &str) -> String {
    let out = env
        .command("sh")
        .current_dir(repo)
        .args([
            "-c",
            &format!("printf 'crew-task:{task}' | git hash-object --stdin"),
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn every_finished_run_leaves_a_row_that_git_notes_reads() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let first = run_task(&env, &repo, "routes", "no-footer", &["--model", "m1"]);
    let second = run_task(&env, &repo, "routes", "out-of-scope", &["--model", "m1"]);
    let out = env.crew(&repo, &["ledger", "--task", "routes"]);
    out.expect_code(0);
    let rows = out.json()["rows"].clone();
    assert_eq!(rows.as_array().unwrap().len(), 2, "{rows}");
    assert_eq!(rows[0]["run"], first.as_str());
    assert_eq!(rows[0]["outcome"], "footer-reject");
    assert_eq!(rows[0]["claimed"], "none");
    assert_eq!(rows[1]["run"], second.as_str());
    assert_eq!(rows[1]["outcome"], "scope-reject");
    assert_eq!(rows[1]["claimed"], "done");
    assert_eq!(rows[1]["model"], "m1");

    // Real git reads the same note, on the blob of crew-task:routes.
    let blob = task_blob(&env, &repo, "routes");
    let text = env.git_ok(&repo, &["notes", "--ref=crew-ledger", "show", &blob]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[0].starts_with("{\"at\":"));
    assert!(!text.contains("Do the task"), "metadata only");
}

#[test]
fn two_failures_escalate_and_then_ask_for_a_human() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let out = env.crew(
        &repo,
        &[
            "should-stop",
            "--task",
            "routes",
            "--model",
            "m1",
            "--tier",
            "low",
        ],
    );
    out.expect_code(0);
    assert_eq!(out.json()["decision"], "continue");
    run_task(&env, &repo, "routes", "no-footer", &["--model", "m1"]);
    run_task(&env, &repo, "routes", "out-of-scope", &["--model", "m1"]);

    // The count survives across processes: it lives in the ledger.
    let out = env.crew(
        &repo,
        &[
            "should-stop",
            "--task",
            "routes",
            "--model",
            "m1",
            "--tier",
            "low",
        ],
    );
    out.expect_code(5);
    let json = out.json();
    assert_eq!(json["decision"], "escalate-tier");
    assert_eq!(json["failures"], 2);
    assert_eq!(json["next"]["tier"], "mid");
    assert_eq!(json["next"]["backend"], "claude");

    let out = env.crew(
        &repo,
        &[
            "should-stop",
            "--task",
            "routes",
            "--model",
            "m1",
            "--tier",
            "high",
        ],
    );
    out.expect_code(5);
    let json = out.json();
    assert_eq!(json["decision"], "human-report");
    let report = std::fs::read_to_string(json["report"].as_str().unwrap()).unwrap();
    assert!(report.contains("## What a stronger model or a human should look at"));
    // Another model of the same task has its own count.
    let out = env.crew(
        &repo,
        &[
            "should-stop",
            "--task",
            "routes",
            "--model",
            "m2",
            "--tier",
            "low",
        ],
    );
    out.expect_code(0);
}

#[test]
fn runs_finishing_together_never_lose_a_row() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let mut runs = Vec::new();
    for i in 0..12 {
        let scope = format!("src/t{i}/**");
        let out = env.crew(
            &repo,
            &[
                "dispatch",
                "--task",
                &format!("t{i}"),
                "--backend",
                "ok",
                "--scope",
                &scope,
                "--prompt",
                "x",
                "--set",
                "backends.ok.concurrency=12",
            ],
        );
        out.expect_code(0);
        runs.push(out.json()["run"].as_str().unwrap().to_string());
    }
    let mut args = vec!["wait", "--timeout", "90s"];
    args.extend(runs.iter().map(String::as_str));
    env.crew(&repo, &args);
    let rows = env.crew(&repo, &["ledger"]).json()["rows"].clone();
    assert_eq!(rows.as_array().unwrap().len(), 12, "{rows}");
    let listed = env.git_ok(&repo, &["notes", "--ref=crew-ledger", "list"]);
    assert_eq!(listed.lines().count(), 12);
}
