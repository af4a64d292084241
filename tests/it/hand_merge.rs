//! A conflict integrate refuses, resolved by hand: `git merge`, an edit, `git commit` (or
//! `git merge --continue`). The post-commit hook audits and records the merge as a clean
//! hand merge is recorded; `git crew integrate` records one no hook saw; a resolution that
//! reaches outside the run's scope is flagged, never landed as clean.

use std::path::Path;

use serde_json::Value;

use crate::common::{TestEnv, read, write};

fn rev(env: &TestEnv, dir: &Path, rev: &str) -> String {
    env.git_ok(dir, &["rev-parse", rev]).trim().to_string()
}

fn note(env: &TestEnv, repo: &Path, commit: &str) -> Value {
    let text = env.git_ok(repo, &["notes", "--ref=crew", "show", commit]);
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// Two runs of two tasks cut from the same base, each writing its own line over the same
/// line of src/routes/crew.rs: the first is integrated, the second conflicts (exit 4,
/// nothing touched). Returns the second run and its branch; the lead's `git merge` of it
/// has stopped on the conflict.
fn conflicted(env: &TestEnv, repo: &Path) -> (String, String) {
    let run_of = |task: &str| {
        env.dispatch(repo, task)
            .backend("heeds")
            .scope("src/routes/**")
            .prompt(&format!("WRITE: pub fn {task}() {{}}"))
            .finished()
    };
    let first = run_of("a");
    let second = run_of("b");
    env.crew(repo, &["integrate", &first]).expect_code(0);
    let main_before = rev(env, repo, "main");
    let out = env.crew(repo, &["integrate", &second]);
    out.expect_code(4);
    let error = &out.json()["error"];
    assert_eq!(error["code"], "merge-conflict");
    let branch = format!("crew/b/{second}");
    assert!(
        error["hint"]
            .as_str()
            .unwrap()
            .contains(&format!("git merge {branch}")),
        "{error}"
    );
    assert_eq!(rev(env, repo, "main"), main_before);
    let merge = env.git(repo, &["merge", "-q", &branch]);
    assert_eq!(merge.code, 1, "the merge stops on the conflict: {merge:?}");
    assert!(read(&repo.join("src/routes/crew.rs")).contains("<<<<<<<"));
    (second, branch)
}

/// The lead's resolution: both lines.
fn resolve(env: &TestEnv, repo: &Path) {
    write(
        &repo.join("src/routes/crew.rs"),
        "pub fn a() {}\npub fn b() {}\n",
    );
    env.git_ok(repo, &["add", "src/routes/crew.rs"]);
}

fn ledger_rows(env: &TestEnv, repo: &Path, task: &str) -> Vec<Value> {
    env.crew(repo, &["ledger", "--task", task]).json()["rows"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn a_hand_resolved_conflict_is_recorded_with_its_run_record_note() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let (run, branch) = conflicted(&env, &repo);
    resolve(&env, &repo);
    // The pre-commit hook lets the resolution through; the post-commit hook records it.
    let out = env.git(&repo, &["commit", "-q", "--no-edit"]);
    out.expect_code(0);
    assert_eq!(
        out.stderr,
        format!("crew: merged run {run} (task b): 1 paths, all inside its scope\n")
    );
    let merge = rev(&env, &repo, "HEAD");
    let tip = rev(&env, &repo, &branch);
    assert_eq!(
        env.git_ok(&repo, &["show", "-s", "--format=%P", "HEAD"])
            .trim(),
        format!("{} {tip}", rev(&env, &repo, "HEAD^1"))
    );

    // The run record, on the merge and on the worker's commit.
    for commit in [&merge, &tip] {
        let note = note(&env, &repo, commit);
        assert_eq!(note["run"], run.as_str());
        assert_eq!(note["task"], "b");
        assert_eq!(note["scope"], serde_json::json!(["src/routes/**"]));
        assert!(note.get("violations").is_none(), "{note}");
        // Accepted on its footer (no verify command), as integrate would have taken it.
        assert!(note.get("forced_unverified").is_none(), "{note}");
        assert!(
            note["integrated_by"]
                .as_str()
                .unwrap()
                .contains("post-commit"),
            "{note}"
        );
    }
    // The ledger's row, the record, the kept commits.
    let rows = ledger_rows(&env, &repo, "b");
    assert!(
        rows.iter()
            .any(|r| r["run"] == run.as_str() && r["integrated"] == merge.as_str()),
        "{rows:?}"
    );
    let shown = env.crew(&repo, &["show", &run]).json();
    assert_eq!(shown["run"]["integration"]["commit"], merge.as_str());
    assert_eq!(shown["run"]["integration"]["into"], "main");
    let human = env.crew(&repo, &["show", &run, "--human"]).stdout;
    assert!(human.contains("integrated into main as"), "{human}");
    assert_eq!(rev(&env, &repo, &format!("refs/crew/attempts/{run}")), tip);
    // And integrate no longer refuses forever: it says where the run went.
    let again = env.crew(&repo, &["integrate", &run]);
    again.expect_code(4);
    assert_eq!(again.json()["error"]["code"], "already-integrated");

    // Merging that target into another branch brings the run in again: its record and
    // notes stand, and the new merge is not taken for its landing.
    env.git_ok(&repo, &["checkout", "-q", "-b", "release", "HEAD^1"]);
    write(&repo.join("src/routes/crew.rs"), "pub fn release() {}\n");
    env.git_ok(&repo, &["commit", "-q", "-am", "release fix"]);
    assert_eq!(env.git(&repo, &["merge", "-q", "main"]).code, 1);
    write(&repo.join("src/routes/crew.rs"), "pub fn release() {}\n");
    env.git_ok(&repo, &["add", "-A"]);
    let out = env.git(&repo, &["commit", "-q", "--no-edit"]);
    out.expect_code(0);
    assert!(
        out.stderr.contains(&format!(
            "run {run} (task b) was integrated into main as {merge} before; its record stands"
        )),
        "{}",
        out.stderr
    );
    assert!(
        env.git(&repo, &["notes", "--ref=crew", "show", "HEAD"])
            .code
            != 0,
        "the release merge got no run record"
    );
    assert_eq!(
        note(&env, &repo, &tip)["integrated_by"],
        note(&env, &repo, &merge)["integrated_by"]
    );
    let shown = env.crew(&repo, &["show", &run]).json();
    assert_eq!(shown["run"]["integration"]["commit"], merge.as_str());
}

#[test]
fn a_resolution_outside_the_runs_scope_is_flagged_like_a_plain_merge_out_of_scope() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let (run, _) = conflicted(&env, &repo);
    resolve(&env, &repo);
    // The resolution also changes a path the run may not write.
    write(
        &repo.join("README.md"),
        "# Project, edited while resolving\n",
    );
    env.git_ok(&repo, &["add", "README.md"]);
    // Concluded with `git merge --continue`, which runs the commit hooks too; never blocked.
    let out = env.git_env(&repo, &["merge", "--continue"], &[("GIT_EDITOR", "true")]);
    out.expect_code(0);
    assert!(
        out.stderr.contains(&format!(
            "crew: warning: merged run {run} (task b) breaks its fences:"
        )),
        "{}",
        out.stderr
    );
    let violation = "README.md (modified) is outside the write scope src/routes/**";
    assert!(
        out.stderr.contains(&format!("crew:   {violation}")),
        "{}",
        out.stderr
    );
    let merge = rev(&env, &repo, "HEAD");
    assert_eq!(
        note(&env, &repo, &merge)["violations"],
        serde_json::json!([violation])
    );
    // Not recorded as a landing: a scope rejection in the ledger, once.
    let shown = env.crew(&repo, &["show", &run]).json();
    assert!(shown["run"]["integration"].is_null(), "{shown}");
    let rejects = |env: &TestEnv| {
        ledger_rows(env, &repo, "b")
            .iter()
            .filter(|r| r["run"] == run.as_str() && r["outcome"] == "scope-reject")
            .count()
    };
    assert_eq!(rejects(&env), 1);
    // integrate finds the same escape in the commit that brought the run in.
    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(1);
    let error = &out.json()["error"];
    assert_eq!(error["code"], "scope-violation");
    assert_eq!(error["details"], serde_json::json!([violation]));
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains(&format!("merged by hand in {merge}")),
        "{error}"
    );
    assert_eq!(rev(&env, &repo, "main"), merge);
    assert_eq!(rejects(&env), 1, "counted once");
}

#[test]
fn integrate_records_a_hand_merge_no_hook_saw() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let (run, branch) = conflicted(&env, &repo);
    resolve(&env, &repo);
    // Committed with no hooks at all (a hooks path with nothing in it).
    let empty = env.root().join("no-hooks");
    std::fs::create_dir_all(&empty).unwrap();
    let hooks_path = format!("core.hooksPath={}", empty.display());
    env.git_ok(&repo, &["-c", &hooks_path, "commit", "-q", "--no-edit"]);
    let merge = rev(&env, &repo, "HEAD");
    assert_ne!(
        env.git(&repo, &["notes", "--ref=crew", "show", "HEAD"])
            .code,
        0
    );

    // A dry run says what would be recorded, and records nothing.
    let out = env.crew(&repo, &["integrate", &run, "--dry-run"]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(
        (json["dry_run"].clone(), json["by_hand"].clone()),
        (true.into(), true.into())
    );
    assert_eq!(json["files"], serde_json::json!(["src/routes/crew.rs"]));
    assert_ne!(
        env.git(&repo, &["notes", "--ref=crew", "show", "HEAD"])
            .code,
        0
    );

    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["by_hand"], true);
    assert_eq!(json["commit"], merge.as_str());
    assert_eq!(json["applied_as"], "merge");
    assert_eq!(json["squash"], false);
    assert_eq!(rev(&env, &repo, "main"), merge, "nothing was merged again");
    let tip = rev(&env, &repo, &branch);
    for commit in [&merge, &tip] {
        assert_eq!(note(&env, &repo, commit)["run"], run.as_str());
    }
    assert!(
        ledger_rows(&env, &repo, "b")
            .iter()
            .any(|r| r["run"] == run.as_str() && r["integrated"] == merge.as_str())
    );
    let shown = env.crew(&repo, &["show", &run]).json();
    assert_eq!(shown["run"]["integration"]["commit"], merge.as_str());
    let again = env.crew(&repo, &["integrate", &run]);
    again.expect_code(4);
    assert_eq!(again.json()["error"]["code"], "already-integrated");
}

#[test]
fn integrate_records_a_fast_forward_no_hook_saw_from_the_runs_base() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let run = env
        .dispatch(&repo, "routes")
        .backend("ok")
        .scope("src/routes/**")
        .finished();
    let branch = format!("crew/routes/{run}");
    let empty = env.root().join("no-hooks");
    std::fs::create_dir_all(&empty).unwrap();
    let hooks_path = format!("core.hooksPath={}", empty.display());
    env.git_ok(
        &repo,
        &["-c", &hooks_path, "merge", "-q", "--ff-only", &branch],
    );
    let tip = rev(&env, &repo, &branch);
    assert_eq!(rev(&env, &repo, "main"), tip);

    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["by_hand"], true);
    assert_eq!(json["applied_as"], "fast-forward");
    assert_eq!(json["squash"], false);
    assert_eq!(json["commit"], tip.as_str());
    assert_eq!(json["files"], serde_json::json!(["src/routes/crew.rs"]));
    assert_eq!(note(&env, &repo, &tip)["run"], run.as_str());
    let shown = env.crew(&repo, &["show", &run]).json();
    assert_eq!(shown["run"]["integration"]["commit"], tip.as_str());
}
