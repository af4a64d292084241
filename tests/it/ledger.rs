//! The outcome ledger in git notes, and the two-failure rule read from it.

use std::path::Path;

use crate::common::TestEnv;

fn run_task(env: &TestEnv, repo: &Path, task: &str, backend: &str, extra: &[&str]) -> String {
    env.finished_run(
        repo,
        task,
        backend,
        &[&["--scope", "src/routes/**"], extra].concat(),
    )
}

pub fn task_blob(env: &TestEnv, repo: &Path, task: &str) -> String {
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
    let out = env
        .should_stop(&repo, "routes")
        .model("m1")
        .tier("low")
        .run();
    out.expect_code(0);
    assert_eq!(out.json()["decision"], "continue");
    run_task(&env, &repo, "routes", "no-footer", &["--model", "m1"]);
    run_task(&env, &repo, "routes", "out-of-scope", &["--model", "m1"]);

    // The count survives across processes: it lives in the ledger.
    let out = env
        .should_stop(&repo, "routes")
        .model("m1")
        .tier("low")
        .run();
    out.expect_code(5);
    let json = out.json();
    assert_eq!(json["decision"], "escalate-tier");
    assert_eq!(json["failures"], 2);
    assert_eq!(json["next"]["tier"], "mid");
    assert_eq!(json["next"]["backend"], "claude");

    let out = env
        .should_stop(&repo, "routes")
        .model("m1")
        .tier("high")
        .run();
    out.expect_code(5);
    let json = out.json();
    assert_eq!(json["decision"], "human-report");
    let report = std::fs::read_to_string(json["report"].as_str().unwrap()).unwrap();
    assert!(report.contains("## What a stronger model or a human should look at"));
    // Another model of the same task has its own count.
    env.should_stop(&repo, "routes")
        .model("m2")
        .tier("low")
        .run()
        .expect_code(0);
}

#[test]
fn runs_finishing_together_never_lose_a_row() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    env.runs_at_once(&repo, 12, "ok", |i| {
        vec!["--scope".into(), format!("src/t{i}/**")]
    });
    let rows = env.crew(&repo, &["ledger"]).json()["rows"].clone();
    assert_eq!(rows.as_array().unwrap().len(), 12, "{rows}");
    let listed = env.git_ok(&repo, &["notes", "--ref=crew-ledger", "list"]);
    assert_eq!(listed.lines().count(), 12);
}

/// A repository whose `no-footer` worker (model m1) sits at tier low and whose `ok`
/// worker (model m2) at tier mid.
fn tiered_repo(env: &TestEnv) -> std::path::PathBuf {
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let workers = crate::common::fixtures().join("workers");
    let toml = format!(
        "version = 1\ndefault_backend = \"no-footer\"\n\
         [backends.no-footer]\nadapter = \"command\"\nargv = [\"{nf}\", \"{{prompt_file}}\"]\nmodel = \"m1\"\ntier = \"low\"\nconcurrency = 2\n\
         [backends.ok]\nadapter = \"command\"\nargv = [\"{ok}\", \"{{prompt_file}}\"]\nmodel = \"m2\"\ntier = \"mid\"\nconcurrency = 2\n\
         [backends.codex]\ntier = \"high\"\n[backends.claude]\ntier = \"high\"\n",
        nf = workers.join("no-footer.sh").display(),
        ok = workers.join("ok.sh").display(),
    );
    crate::common::write(&repo.join(".crew/flight.toml"), &toml);
    repo
}

#[test]
fn dispatch_escalates_after_two_failures_with_the_evidence() {
    let env = TestEnv::new();
    let repo = tiered_repo(&env);
    let first = run_task(&env, &repo, "routes", "no-footer", &[]);
    let second = run_task(&env, &repo, "routes", "no-footer", &[]);
    let out = env.crew(
        &repo,
        &[
            "dispatch",
            "--task",
            "routes",
            "--scope",
            "src/routes/**",
            "--prompt",
            "x",
        ],
    );
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["backend"], "ok");
    assert_eq!(json["model"], "m2");
    assert_eq!(json["tier"], "mid");
    assert_eq!(
        json["escalated_from"],
        serde_json::json!({"backend": "no-footer", "model": "m1", "tier": "low", "failures": 2})
    );
    let run = json["run"].as_str().unwrap();
    let prompt =
        std::fs::read_to_string(repo.join(format!(".git/crew/runs/{run}/prompt.md"))).unwrap();
    assert!(prompt.contains("# Earlier attempts"));
    assert!(
        prompt.contains(&format!("run {first}: rejected"))
            && prompt.contains(&format!("run {second}: rejected")),
        "{prompt}"
    );
    let out = env.crew(&repo, &["wait", run, "--timeout", "60s"]);
    out.expect_code(0);
}

#[test]
fn two_failures_at_the_top_tier_get_a_human_report_not_a_third_try() {
    let env = TestEnv::new();
    let repo = tiered_repo(&env);
    let top = ["--set", "backends.no-footer.tier=high"];
    run_task(&env, &repo, "routes", "no-footer", &top);
    run_task(&env, &repo, "routes", "no-footer", &top);
    let out = env.crew(
        &repo,
        &[
            "dispatch",
            "--task",
            "routes",
            "--scope",
            "src/routes/**",
            "--prompt",
            "x",
            top[0],
            top[1],
        ],
    );
    out.expect_code(5);
    let json = out.json();
    assert_eq!(json["error"]["code"], "human-report");
    assert!(repo.join(".git/crew/reports/routes.md").exists());
    assert_eq!(
        env.crew(&repo, &["ledger", "--task", "routes"]).json()["rows"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn continuation_resumes_with_a_plain_rejection_until_verify_passes() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let verify = "grep -q right src/routes/f.rs || { echo 'f.rs says wrong' > \"$CREW_VERIFIER_DIR/failure.txt\"; exit 1; }";
    let run = run_task(
        &env,
        &repo,
        "flaky",
        "flaky",
        &["--model", "m1", "--verify", verify, "--continue-until-pass"],
    );
    let result = env.crew(&repo, &["show", &run]).json()["run"].clone();
    assert_eq!(result["outcome"], "pass", "{result}");
    assert_eq!(result["attempts"], 2);
    let seen =
        std::fs::read_to_string(repo.join(format!(".git/crew/runs/{run}/tmp/seen-2.md"))).unwrap();
    assert!(seen.contains("did not pass verification"), "{seen}");
    assert!(
        !seen.contains("f.rs says wrong"),
        "same-conversation carries no verifier details"
    );
    let rows = env.crew(&repo, &["ledger", "--task", "flaky"]).json()["rows"].clone();
    let outcomes: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["fail", "pass"]);
}

#[test]
fn continuation_restarts_with_the_feedback_and_stops_at_two_failures() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let verify = "grep -q right src/routes/f.rs || { echo 'f.rs says wrong' > \"$CREW_VERIFIER_DIR/failure.txt\"; exit 1; }";
    let run = run_task(
        &env,
        &repo,
        "flaky",
        "flaky-fresh",
        &["--model", "m1", "--verify", verify, "--continue-until-pass"],
    );
    let result = env.crew(&repo, &["show", &run]).json()["run"].clone();
    assert_eq!(result["outcome"], "pass", "{result}");
    let seen =
        std::fs::read_to_string(repo.join(format!(".git/crew/runs/{run}/tmp/seen-2.md"))).unwrap();
    assert!(seen.contains("f.rs says wrong"), "{seen}");
    assert!(
        seen.contains("Do the task") || seen.contains("# Task"),
        "a fresh session gets the task again"
    );

    // A verify that never passes stops at the second failure of the model.
    let run = run_task(
        &env,
        &repo,
        "never",
        "ok",
        &[
            "--model",
            "m1",
            "--verify",
            "false",
            "--continue-until-pass",
        ],
    );
    let result = env.crew(&repo, &["show", &run]).json()["run"].clone();
    assert_eq!(result["outcome"], "fail");
    assert_eq!(result["attempts"], 2);
    assert!(
        result["decision"]
            .as_str()
            .unwrap()
            .contains("next dispatch moves up a tier"),
        "{result}"
    );
}

#[test]
fn continuation_is_bounded_without_a_model_and_files_one_row_per_attempt() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    // A command backend names no model: failures count under `backend:ok`.
    let run = run_task(
        &env,
        &repo,
        "never",
        "ok",
        &["--verify", "false", "--continue-until-pass"],
    );
    let result = env.crew(&repo, &["show", &run]).json()["run"].clone();
    assert_eq!(result["outcome"], "fail", "{result}");
    assert_eq!(result["attempts"], 2, "{result}");
    let rows = env.crew(&repo, &["ledger", "--task", "never"]).json()["rows"].clone();
    let rows = rows.as_array().unwrap();
    assert_eq!(rows.len(), 2, "one row per attempt: {rows:?}");
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row["attempt"], i + 1, "{row}");
        assert_eq!(row["key"], "backend:ok", "{row}");
        assert_eq!(row["files_changed"], 1, "{row}");
        assert_eq!(row["outcome"], "fail", "{row}");
    }
    // should-stop says what continuation decided, under the same key.
    let verdict = env
        .should_stop(&repo, "never")
        .model("backend:ok")
        .verdict();
    assert_eq!(verdict["failures"], 2, "{verdict}");
    assert_ne!(verdict["decision"], "continue");
    // At the top tier, the next dispatch of the task on that backend gets a human
    // report instead of a third try.
    let again = env
        .dispatch(&repo, "never")
        .backend("ok")
        .scope("src/routes/**")
        .set("backends.ok.tier=high")
        .run();
    again.expect_code(5);
    assert_eq!(again.json()["error"]["code"], "human-report");
}

#[test]
fn fences_max_attempts_bounds_a_run_whatever_the_ledger_says() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let run = run_task(
        &env,
        &repo,
        "never",
        "ok",
        &[
            "--model",
            "m1",
            "--verify",
            "false",
            "--continue-until-pass",
            "--set",
            "fences.needs_help_after_failures=50",
            "--set",
            "fences.max_attempts=3",
        ],
    );
    let result = env.crew(&repo, &["show", &run]).json()["run"].clone();
    assert_eq!(result["attempts"], 3, "{result}");
    assert!(
        result["decision"]
            .as_str()
            .unwrap()
            .contains("fences.max_attempts"),
        "{result}"
    );
    let rows = env.crew(&repo, &["ledger", "--task", "never"]).json()["rows"].clone();
    assert_eq!(rows.as_array().unwrap().len(), 3, "{rows}");
    // The threshold is read: at 50, should-stop continues after 3 failures.
    let verdict = env
        .should_stop(&repo, "never")
        .model("m1")
        .set("fences.needs_help_after_failures=50")
        .verdict();
    assert_eq!(verdict["decision"], "continue", "{verdict}");
    assert_eq!(verdict["failures"], 3);
}

/// Appends `n` rows of `task` (runs `<prefix>-0` …) through git-crew's own ledger code, as
/// finished runs append them; every `fail_every`-th is a failure of model m1 at tier low,
/// the others passes of m2. Returns the run ids in the order appended.
pub fn append_rows(
    repo: &Path,
    task: &str,
    prefix: &str,
    n: usize,
    fail_every: usize,
) -> Vec<String> {
    let gix = git_crew::git::repo::open(repo).unwrap();
    (0..n)
        .map(|i| {
            let run = format!("{prefix}-{i}");
            let failed = i % fail_every == 0;
            let row = serde_json::json!({
                "at": "2026-01-01T00:00:00Z", "run": run, "attempt": 1, "task": task,
                "backend": "bench", "model": if failed { "m1" } else { "m2" },
                "effort": "high", "tier": "low", "role": "implement", "worker": null,
                "claimed": "done", "outcome": if failed { "fail" } else { "pass" },
                "reward": 0.0, "size_h": 1.0, "wall_s": 60, "files_changed": 3,
                "scope_changed": false,
            });
            git_crew::run::ledger::append_line(&gix, task, &row.to_string()).unwrap();
            run
        })
        .collect()
}

/// The runs of `task`'s rows as `git crew ledger --task` lists them.
pub fn listed_runs(env: &TestEnv, repo: &Path, task: &str) -> Vec<String> {
    env.crew(repo, &["ledger", "--task", task]).json()["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_task_rolled_into_segments_reads_back_every_row_in_order_and_git_reads_each_note() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let runs = append_rows(&repo, "busy", "r", 400, 7);
    assert_eq!(listed_runs(&env, &repo, "busy"), runs);
    let all = env.crew(&repo, &["ledger"]).json()["rows"].clone();
    assert_eq!(all.as_array().unwrap().len(), 400);

    // The head note holds the carry and the newest rows only; git reads it as it is.
    let head = env.git_ok(
        &repo,
        &[
            "notes",
            "--ref=crew-ledger",
            "show",
            &task_blob(&env, &repo, "busy"),
        ],
    );
    assert!(head.len() < 64 * 1024, "{}", head.len());
    let lines: Vec<&str> = head.lines().collect();
    assert!(lines[0].contains("\"carry\":"), "{}", lines[0]);
    assert!(lines.len() > 2, "{}", lines.len());
    assert!(
        lines.last().unwrap().contains("\"run\":\"r-399\""),
        "{}",
        lines.last().unwrap()
    );
    // The older rows are in segment 1, a note of its own that git reads too.
    let segment = env.git_ok(
        &repo,
        &[
            "notes",
            "--ref=crew-ledger",
            "show",
            &task_blob(&env, &repo, "busy#1"),
        ],
    );
    assert!(segment.lines().next().unwrap().contains("\"run\":\"r-0\""));
    assert_eq!(segment.lines().count() + lines.len() - 1, 400);

    // should-stop counts every failure, the rolled ones included: 0, 7, …, 399 → 58.
    let verdict = env
        .should_stop(&repo, "busy")
        .model("m1")
        .tier("low")
        .verdict();
    assert_eq!(verdict["failures"], 58, "{verdict}");
    assert_eq!(verdict["decision"], "escalate-tier");
    // And the tier it settles on from the rows alone is the rolled rows' too.
    let verdict = env.should_stop(&repo, "busy").model("m2").verdict();
    assert_eq!(
        (verdict["decision"].as_str(), verdict["tier"].as_str()),
        (Some("continue"), Some("low")),
        "{verdict}"
    );
}
