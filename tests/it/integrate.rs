//! integrate: audit, merge away from the checkout, notes, state file, ledger, cleanup —
//! against real repositories, real hooks and real background runs.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::common::{TestEnv, poll_until, read, write};
use crate::dispatch::pid_gone;

fn routes_run(env: &TestEnv, repo: &Path) -> String {
    env.dispatch(repo, "routes")
        .backend("ok")
        .scope("src/routes/**")
        .verify("test -f src/routes/crew.rs")
        .finished()
}

fn rev(env: &TestEnv, dir: &Path, rev: &str) -> String {
    env.git_ok(dir, &["rev-parse", rev]).trim().to_string()
}

fn note(env: &TestEnv, repo: &Path, commit: &str) -> Value {
    let text = env.git_ok(repo, &["notes", "--ref=crew", "show", commit]);
    serde_json::from_str(text.trim()).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn worktree_of(env: &TestEnv, repo: &Path, run: &str) -> PathBuf {
    PathBuf::from(
        env.crew(repo, &["show", run]).json()["run"]["worktree"]
            .as_str()
            .unwrap(),
    )
}

#[test]
fn integrate_merges_notes_records_and_cleans_up() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let run = routes_run(&env, &repo);
    let before = rev(&env, &repo, "main");
    let worker_commit = rev(&env, &repo, &format!("crew/routes/{run}"));
    let wt = worktree_of(&env, &repo, &run);
    assert!(wt.exists());

    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["ok"], true);
    assert_eq!(json["into"], "main");
    let commit = json["commit"].as_str().unwrap().to_string();
    // main is checked out and clean: it was fast-forwarded to the merge commit.
    assert_eq!(rev(&env, &repo, "main"), commit);
    assert_eq!(read(&repo.join("src/routes/crew.rs")), "pub fn crew() {}\n");
    let parents = env.git_ok(&repo, &["show", "-s", "--format=%P", &commit]);
    assert_eq!(parents.trim(), format!("{before} {worker_commit}"));
    assert!(env.git_ok(&repo, &["status", "--porcelain"]).is_empty());

    // The run record, on the merge and on the worker commit, read by git itself.
    for commit in [&commit, &worker_commit] {
        let note = note(&env, &repo, commit);
        assert_eq!(note["run"], run.as_str());
        assert_eq!(note["task"], "routes");
        assert_eq!(note["scope"], serde_json::json!(["src/routes/**"]));
        assert_eq!(note["verify"]["passed"], true);
        assert_eq!(note["footer"]["result"], "Added src/routes/crew.rs.");
        assert_eq!(note["base"], before.as_str());
        assert!(note["integrated_by"].as_str().unwrap().contains('@'));
        assert!(note.get("forced_unverified").is_none());
    }
    let log = env.git_ok(&repo, &["log", "-1", "--notes=crew", "main"]);
    assert!(log.contains("Notes (crew):"), "{log}");

    // docs/state/crew.json is inside the integration commit.
    let state: Value = serde_json::from_str(
        &env.git_ok(&repo, &["show", &format!("{commit}:docs/state/crew.json")]),
    )
    .unwrap();
    assert_eq!(state["runs"][0]["run"], run.as_str());
    assert_eq!(state["roster"]["backends"]["ok"]["integrated_runs"], 1);

    // The ledger has the integration; the commits are kept; the worktree is gone.
    let rows = env.crew(&repo, &["ledger", "--task", "routes"]).json()["rows"].clone();
    let last = rows.as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["integrated"], commit.as_str());
    assert_eq!(
        rev(&env, &repo, &format!("refs/crew/attempts/{run}")),
        worker_commit
    );
    assert!(
        !wt.exists(),
        "conservative cleanup removes a clean worktree"
    );
    assert_eq!(json["cleanup"]["worktree"], "removed");
    assert_eq!(json["cleanup"]["branch"], "kept");
    let shown = env.crew(&repo, &["show", &run]).json();
    assert_eq!(shown["run"]["integration"]["commit"], commit.as_str());

    // Once is enough.
    let again = env.crew(&repo, &["integrate", &run]);
    again.expect_code(4);
    assert_eq!(again.json()["error"]["code"], "already-integrated");
    assert_eq!(rev(&env, &repo, "main"), commit);
}

#[test]
fn an_unverified_run_is_refused_unless_forced_and_then_the_note_says_so() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let run = env.finished_run(
        &repo,
        "routes",
        "ok",
        &["--scope", "src/routes/**", "--verify", "false"],
    );
    let before = rev(&env, &repo, "main");
    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(1);
    let error = &out.json()["error"];
    assert_eq!(error["code"], "unverified");
    assert!(
        error["message"].as_str().unwrap().contains("failed verify"),
        "{error}"
    );
    assert_eq!(rev(&env, &repo, "main"), before);

    let out = env.crew(
        &repo,
        &["integrate", &run, "--force-unverified", "--squash"],
    );
    out.expect_code(0);
    let commit = out.json()["commit"].as_str().unwrap().to_string();
    let parents = env.git_ok(&repo, &["show", "-s", "--format=%P", &commit]);
    assert_eq!(parents.trim(), before, "a squash has one parent");
    assert_eq!(note(&env, &repo, &commit)["forced_unverified"], true);
    // The worker commit is not on main, but it is kept and carries the record too.
    let kept = rev(&env, &repo, &format!("refs/crew/attempts/{run}"));
    assert_eq!(note(&env, &repo, &kept)["run"], run.as_str());
}

#[test]
fn a_no_verify_escape_is_caught_at_integrate_and_counted_as_a_failure() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let run = routes_run(&env, &repo);
    let wt = worktree_of(&env, &repo, &run);
    // After the run passed, something commits outside its scope behind the hook's back.
    write(&wt.join("README.md"), "sneaked\n");
    env.git_ok(&wt, &["commit", "-q", "--no-verify", "-am", "sneak"]);
    let before = rev(&env, &repo, "main");

    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(1);
    let error = &out.json()["error"];
    assert_eq!(error["code"], "scope-violation");
    assert_eq!(
        error["details"],
        serde_json::json!(["README.md (modified) is outside the write scope src/routes/**"])
    );
    assert_eq!(rev(&env, &repo, "main"), before);
    assert_eq!(read(&repo.join("README.md")), "# Project\n");
    let rows = env.crew(&repo, &["ledger", "--task", "routes"]).json()["rows"].clone();
    let outcomes: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["pass", "scope-reject"]);
    // Asking again does not count the same failure twice.
    env.crew(&repo, &["integrate", &run]).expect_code(1);
    assert_eq!(
        env.crew(&repo, &["ledger", "--task", "routes"]).json()["rows"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert!(wt.exists(), "a refused run keeps its worktree");
}

#[test]
fn a_conflict_is_refused_with_the_paths_and_touches_nothing() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let run = routes_run(&env, &repo);
    write(&repo.join("src/routes/crew.rs"), "pub fn mine() {}\n");
    env.git_ok(&repo, &["add", "-A"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "the lead wrote it too"]);
    let main_before = rev(&env, &repo, "main");
    let branch = format!("crew/routes/{run}");
    let branch_before = rev(&env, &repo, &branch);
    let notes_before = env.git(&repo, &["rev-parse", "-q", "--verify", "refs/notes/crew"]);

    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(4);
    let error = &out.json()["error"];
    assert_eq!(error["code"], "merge-conflict");
    assert_eq!(error["details"], serde_json::json!(["src/routes/crew.rs"]));
    assert_eq!(rev(&env, &repo, "main"), main_before);
    assert_eq!(rev(&env, &repo, &branch), branch_before);
    assert_eq!(read(&repo.join("src/routes/crew.rs")), "pub fn mine() {}\n");
    assert!(env.git_ok(&repo, &["status", "--porcelain"]).is_empty());
    let notes_after = env.git(&repo, &["rev-parse", "-q", "--verify", "refs/notes/crew"]);
    assert_eq!(
        notes_before.stdout, notes_after.stdout,
        "no note was written"
    );
}

#[test]
fn a_dirty_checkout_is_refused_and_a_moved_target_is_verified_again() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let run = env.finished_run(&repo,
        "routes",
        "ok",
        &[
            "--scope",
            "src/routes/**",
            "--verify",
            "test -f src/routes/crew.rs && echo checked > \"$CREW_VERIFIER_DIR/seen\" && test ! -f docs/broken",
        ],
    );
    write(&repo.join("README.md"), "edited, not committed\n");
    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(4);
    assert_eq!(out.json()["error"]["code"], "dirty-checkout");
    env.git_ok(&repo, &["checkout", "-q", "README.md"]);

    // The target moves on in a way that breaks the run's verify: refused, untouched.
    write(&repo.join("docs/broken"), "x\n");
    env.git_ok(&repo, &["add", "-A"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "break it"]);
    let moved = rev(&env, &repo, "main");
    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(1);
    assert_eq!(out.json()["error"]["code"], "verify-failed");
    assert_eq!(rev(&env, &repo, "main"), moved);

    // Fixed on the target: the merged tree passes and the run goes in.
    env.git_ok(&repo, &["rm", "-q", "docs/broken"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "fix it"]);
    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["merged_verify"]["passed"], true);
    assert_eq!(rev(&env, &repo, "main"), json["commit"].as_str().unwrap());
}

#[test]
fn a_branch_that_is_not_checked_out_advances_by_compare_and_swap() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    env.git_ok(&repo, &["branch", "release"]);
    let run = routes_run(&env, &repo);
    let head = rev(&env, &repo, "HEAD");
    let bad = env.crew(&repo, &["integrate", &run, "--into", "bad..name"]);
    bad.expect_code(2);
    assert_eq!(bad.json()["error"]["code"], "bad-branch");
    let missing = env.crew(&repo, &["integrate", &run, "--into", "nosuch"]);
    missing.expect_code(3);
    assert_eq!(missing.json()["error"]["code"], "target-not-found");
    let out = env.crew(
        &repo,
        &[
            "integrate",
            &run,
            "--into",
            "release",
            "--set",
            "worktree.cleanup=eager",
        ],
    );
    out.expect_code(0);
    let json = out.json();
    assert_eq!(
        rev(&env, &repo, "release"),
        json["commit"].as_str().unwrap()
    );
    assert_eq!(rev(&env, &repo, "HEAD"), head, "the checkout did not move");
    assert_eq!(json["cleanup"]["branch"], "deleted");
    let gone = env.git(
        &repo,
        &["rev-parse", "-q", "--verify", &format!("crew/routes/{run}")],
    );
    assert_ne!(gone.code, 0);
    let reflog = env.git_ok(&repo, &["reflog", "-1", "release"]);
    assert!(
        reflog.contains(&format!("crew: integrate run {run}")),
        "{reflog}"
    );

    let missing = env.crew(&repo, &["integrate", "20260101-000000-0000"]);
    missing.expect_code(3);
}

#[test]
fn twelve_runs_integrated_in_parallel_all_land() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let runs = env.runs_at_once(&repo, 12, "own-file", |i| {
        let scope = format!("work/t{i}.txt");
        vec![
            "--scope".into(),
            scope.clone(),
            "--verify".into(),
            format!("test -f {scope}"),
        ]
    });
    for run in &runs {
        let shown = env.crew(&repo, &["show", run]).json();
        assert_eq!(shown["run"]["outcome"], "pass", "{shown}");
    }
    let children: Vec<_> = runs
        .iter()
        .map(|run| {
            env.command(crate::common::bin())
                .current_dir(&repo)
                .args(["integrate", run, "--json"])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (run, child) in runs.iter().zip(children) {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        env.assert_landed_in_scope(&repo, run, &stdout);
    }
    let merges = env.git_ok(&repo, &["rev-list", "--merges", "--count", "main"]);
    assert_eq!(merges.trim(), "12");
    for i in 0..12 {
        assert!(repo.join(format!("work/t{i}.txt")).exists());
    }
    let state: Value = serde_json::from_str(&read(&repo.join("docs/state/crew.json"))).unwrap();
    assert_eq!(state["runs"].as_array().unwrap().len(), 12);
    assert!(env.git_ok(&repo, &["status", "--porcelain"]).is_empty());
    let noted = env.git_ok(&repo, &["notes", "--ref=crew", "list"]);
    assert_eq!(noted.lines().count(), 24, "12 merges and 12 worker commits");
}

#[test]
fn a_writer_killed_between_its_objects_and_the_ref_leaves_the_old_notes() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let run = routes_run(&env, &repo);
    let ledger_before = rev(&env, &repo, "refs/notes/crew-ledger");
    let main_before = rev(&env, &repo, "main");
    for point in ["notes-before-ref", "integrate-before-target"] {
        let out = env
            .command(crate::common::bin())
            .current_dir(&repo)
            .env("GIT_CREW_FAILPOINT", point)
            .args(["integrate", &run, "--json"])
            .output()
            .unwrap();
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(out.status.signal(), Some(9), "killed at {point}");
        // Nothing half-written: the refs are where they were, git reads everything.
        assert_eq!(rev(&env, &repo, "main"), main_before);
        assert_eq!(rev(&env, &repo, "refs/notes/crew-ledger"), ledger_before);
        env.git_ok(&repo, &["fsck", "--no-dangling"]);
        env.git_ok(&repo, &["notes", "--ref=crew-ledger", "list"]);
    }
    // The killed integrate left the note of an integration that never landed on the
    // worker commit; trying again simply lands it.
    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(0);
    let commit = out.json()["commit"].as_str().unwrap().to_string();
    assert_eq!(rev(&env, &repo, "main"), commit);
    assert_eq!(note(&env, &repo, &commit)["run"], run.as_str());
}

#[test]
fn verify_runs_again_and_records_the_verdict_integrate_relies_on() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let run = env.finished_run(&repo, "routes", "ok", &["--scope", "src/routes/**"]);
    let out = env.crew(&repo, &["verify", &run]);
    out.expect_code(2);
    assert_eq!(out.json()["error"]["code"], "no-verify-command");

    let out = env.crew(&repo, &["verify", &run, "--command", "test -f nowhere"]);
    out.expect_code(1);
    let json = out.json();
    // A failure says so: ok false, with its error, and the verdict beside it.
    assert_eq!(json["ok"], false);
    assert_eq!(json["error"]["code"], "verify-failed");
    assert_eq!(json["verify"]["passed"], false);
    assert_eq!(json["outcome"], "fail");
    env.crew(&repo, &["integrate", &run]).expect_code(1);

    let out = env.crew(
        &repo,
        &["verify", &run, "--command", "test -f src/routes/crew.rs"],
    );
    out.expect_code(0);
    assert_eq!(out.json()["outcome"], "pass");
    let shown = env.crew(&repo, &["show", &run]).json();
    assert_eq!(
        shown["run"]["verify"]["command"],
        "test -f src/routes/crew.rs"
    );
    assert_eq!(shown["run"]["phase"], "done");
    env.crew(&repo, &["integrate", &run]).expect_code(0);
    env.crew(&repo, &["verify", &run]).expect_code(4);
}

#[test]
fn a_run_dispatched_without_a_verify_command_is_a_pass_integrate_takes() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let run = env.finished_run(&repo, "routes", "ok", &["--scope", "src/routes/**"]);
    let shown = env.crew(&repo, &["show", &run]).json();
    assert_eq!(shown["run"]["outcome"], "pass");
    assert_eq!(shown["run"]["verify"], serde_json::Value::Null);
    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(0);
    let commit = out.json()["commit"].as_str().unwrap().to_string();
    let record = note(&env, &repo, &commit);
    assert_ne!(record["forced_unverified"], true, "{record}");
    assert_eq!(record["verify"], serde_json::Value::Null, "{record}");

    // Accepted for the commit it was accepted at: a branch that moved since is not.
    let run = env.finished_run(&repo, "again", "own-file", &["--scope", "work/**"]);
    let wt = repo.join(format!(".git/crew/worktrees/{run}"));
    write(&wt.join("work/later.txt"), "later\n");
    env.git_ok(&wt, &["add", "-A"]);
    env.git_ok(&wt, &["commit", "-q", "--no-verify", "-m", "later"]);
    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(1);
    assert_eq!(out.json()["error"]["code"], "unverified");
}

#[test]
fn a_run_without_commits_has_nothing_to_integrate() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let run = env.finished_run(&repo, "audit", "review", &["--role", "review"]);
    let out = env.crew(&repo, &["integrate", &run, "--force-unverified"]);
    out.expect_code(4);
    assert_eq!(out.json()["error"]["code"], "nothing-to-integrate");
}

#[test]
fn an_untracked_file_in_the_way_of_the_fast_forward_is_refused_and_undone() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let run = routes_run(&env, &repo);
    write(&repo.join("src/routes/crew.rs"), "mine, untracked\n");
    let main_before = rev(&env, &repo, "main");
    let notes_before = env.git(&repo, &["rev-parse", "-q", "--verify", "refs/notes/crew"]);
    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(4);
    let json = out.json();
    assert_eq!(json["error"]["code"], "checkout-refused");
    assert!(
        json["error"]["details"][0]
            .as_str()
            .unwrap()
            .contains("untracked"),
        "{json}"
    );
    assert_eq!(rev(&env, &repo, "main"), main_before);
    assert_eq!(read(&repo.join("src/routes/crew.rs")), "mine, untracked\n");
    let notes_after = env.git(&repo, &["rev-parse", "-q", "--verify", "refs/notes/crew"]);
    assert_eq!(
        notes_before.stdout, notes_after.stdout,
        "the notes were undone"
    );
    std::fs::remove_file(repo.join("src/routes/crew.rs")).unwrap();
    env.crew(&repo, &["integrate", &run]).expect_code(0);
}

#[test]
fn a_branch_that_moved_after_verify_must_be_verified_again() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let run = routes_run(&env, &repo);
    let wt = worktree_of(&env, &repo, &run);
    write(&wt.join("src/routes/extra.rs"), "// after the verdict\n");
    env.git_ok(&wt, &["add", "-A"]);
    env.git_ok(&wt, &["commit", "-q", "-m", "one more thing"]);
    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(1);
    let error = &out.json()["error"];
    assert_eq!(error["code"], "unverified");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("moved since verify"),
        "{error}"
    );
    env.crew(&repo, &["verify", &run]).expect_code(0);
    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(0);
    assert_eq!(
        read(&repo.join("src/routes/extra.rs")),
        "// after the verdict\n"
    );
}

#[test]
fn a_worker_that_merged_the_target_is_audited_on_its_own_changes() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let run = routes_run(&env, &repo);
    // The lead moves main on outside the run's scope; the branch merges main in.
    write(&repo.join("docs/lead.md"), "the lead's own work\n");
    env.git_ok(&repo, &["add", "-A"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "lead work"]);
    let lead_commit = rev(&env, &repo, "main");
    let wt = worktree_of(&env, &repo, &run);
    env.git_ok(&wt, &["merge", "-q", "--no-edit", "main"]);
    env.crew(&repo, &["verify", &run]).expect_code(0);

    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["files"], serde_json::json!(["src/routes/crew.rs"]));
    // The lead's commit is not a worker commit: it carries no run record.
    let noted: Vec<&str> = json["noted"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert!(!noted.contains(&lead_commit.as_str()), "{noted:?}");
    let none = env.git(&repo, &["notes", "--ref=crew", "show", &lead_commit]);
    assert_ne!(none.code, 0);
}

/// Runs `git crew` with `GIT_CREW_FAILPOINT=point` (a crash there).
fn crew_crashing(env: &TestEnv, repo: &Path, point: &str, args: &[&str]) -> std::process::Output {
    env.command(crate::common::bin())
        .current_dir(repo)
        .args(args)
        .env("GIT_CREW_FAILPOINT", point)
        .output()
        .unwrap()
}

#[test]
fn an_integrate_killed_after_the_target_moved_is_completed_by_the_next_one_or_doctor() {
    for finisher in ["integrate", "doctor"] {
        let env = TestEnv::new();
        let repo = env.fixture("crew-repo.sh", "repo", &[]);
        let run = routes_run(&env, &repo);
        let out = crew_crashing(&env, &repo, "integrate-after-target", &["integrate", &run]);
        assert_eq!(out.status.code(), None, "killed, not exited");
        // main has the run, but nothing else of the landing happened.
        let main = rev(&env, &repo, "main");
        assert!(read(&repo.join("src/routes/crew.rs")).contains("crew"));
        let shown = env.crew(&repo, &["show", &run]).json();
        assert_eq!(shown["run"]["integration"], Value::Null);
        if finisher == "integrate" {
            let out = env.crew(&repo, &["integrate", &run]);
            out.expect_code(0);
            let json = out.json();
            assert_eq!(json["completed"], true, "{json}");
            assert_eq!(json["commit"], main.as_str());
        } else {
            let out = env.crew(&repo, &["doctor", "--fix"]);
            assert!(
                out.stdout.contains("integration-unfinished"),
                "{}",
                out.stdout
            );
        }
        // Everything a landing leaves is there, once.
        assert_eq!(rev(&env, &repo, "main"), main, "main did not move again");
        let shown = env.crew(&repo, &["show", &run]).json();
        assert_eq!(shown["run"]["integration"]["commit"], main.as_str());
        rev(&env, &repo, &format!("refs/crew/attempts/{run}"));
        let rows = env.crew(&repo, &["ledger", "--task", "routes"]).json()["rows"].clone();
        let integrated: Vec<&Value> = rows
            .as_array()
            .unwrap()
            .iter()
            .filter(|r| r["integrated"].is_string())
            .collect();
        assert_eq!(integrated.len(), 1, "{rows}");
        env.crew(&repo, &["integrate", &run]).expect_code(4);
    }
}

#[test]
fn an_integrate_killed_before_the_target_moved_leaves_no_note_and_can_run_again() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let run = routes_run(&env, &repo);
    let before = rev(&env, &repo, "main");
    let out = crew_crashing(&env, &repo, "integrate-before-target", &["integrate", &run]);
    assert_eq!(out.status.code(), None);
    assert_eq!(rev(&env, &repo, "main"), before);
    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(0);
    assert_eq!(out.json()["completed"], false);
}

#[test]
fn a_supervisor_killed_while_filing_a_pass_is_completed_never_abandoned() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let out = crew_crashing(
        &env,
        &repo,
        "finish-after-record",
        &[
            "dispatch",
            "--task",
            "routes",
            "--backend",
            "ok",
            "--prompt",
            "x",
            "--scope",
            "src/routes/**",
            "--verify",
            "true",
        ],
    );
    assert!(out.status.success());
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let run = json["run"].as_str().unwrap().to_string();
    // The supervisor died between its record and its pointer.
    let record = repo.join(format!(".git/crew/runs/{run}.json"));
    poll_until(Duration::from_secs(20), "the record to be filed", || {
        record.exists()
    });
    let pointer = repo.join(format!(".git/crew/live/{run}.json"));
    let supervisor =
        serde_json::from_str::<Value>(&read(&pointer)).unwrap()["supervisor_pid"].to_string();
    poll_until(Duration::from_secs(20), "the supervisor to die", || {
        pid_gone(&supervisor)
    });
    assert!(pointer.exists());
    let (out, result) = env.wait(&repo, &run).timeout("20s").result();
    out.expect_code(0);
    assert_eq!(result["outcome"], "pass", "{result}");
    let rows = env.crew(&repo, &["ledger", "--task", "routes"]).json()["rows"].clone();
    assert_eq!(rows.as_array().unwrap().len(), 1, "{rows}");
    assert_eq!(rows[0]["outcome"], "pass");
    env.crew(&repo, &["integrate", &run]).expect_code(0);
}

#[test]
fn integrate_dry_run_says_what_would_land_and_changes_nothing() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let run = routes_run(&env, &repo);
    let main = rev(&env, &repo, "main");
    let notes = env
        .git(&repo, &["rev-parse", "-q", "--verify", "refs/notes/crew"])
        .stdout;
    let rows = env.crew(&repo, &["ledger", "--task", "routes"]).json()["rows"].clone();
    let out = env.crew(&repo, &["integrate", &run, "--dry-run"]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["dry_run"], true);
    assert_eq!(json["files"], serde_json::json!(["src/routes/crew.rs"]));
    assert_eq!(json["applied_as"], "merge");
    assert_eq!(rev(&env, &repo, "main"), main);
    assert_eq!(
        env.git(&repo, &["rev-parse", "-q", "--verify", "refs/notes/crew"])
            .stdout,
        notes
    );
    assert_eq!(
        env.crew(&repo, &["ledger", "--task", "routes"]).json()["rows"],
        rows
    );
    assert!(repo.join(format!(".git/crew/worktrees/{run}")).exists());
    // main has not moved since the run's base: nothing is verified again.
    assert_eq!(json["reverify"], Value::Null, "{json}");
    assert_eq!(json["forced_unverified"], false, "{json}");
    // Then for real: what lands is the plan the dry run printed.
    let real = env.crew(&repo, &["integrate", &run]);
    real.expect_code(0);
    let real = real.json();
    for key in [
        "into",
        "parents",
        "applied_as",
        "files",
        "links_outside_scope",
    ] {
        assert_eq!(real[key], json[key], "{key}: {real} / {json}");
    }
}

#[test]
fn diff_shows_what_integrate_would_apply() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let run = env.finished_run(&repo, "routes", "ok", &["--scope", "src/routes/**"]);
    // Piped, the diff itself: the paths the dry run of integrate names.
    let out = env.crew(&repo, &["diff", "routes", "--name-status"]);
    out.expect_code(0);
    let would = env.crew(&repo, &["integrate", &run, "--dry-run"]).json();
    let files: Vec<&str> = would["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f.as_str().unwrap())
        .collect();
    let shown: Vec<&str> = out
        .stdout
        .lines()
        .map(|l| l.split('\t').nth(1).unwrap())
        .collect();
    assert_eq!(shown, files, "{}", out.stdout);
    assert!(
        out.stdout.starts_with("A\tsrc/routes/crew.rs"),
        "{}",
        out.stdout
    );
    let patch = env.crew(&repo, &["diff", &run]);
    assert!(
        patch.stdout.contains("+++ b/src/routes/crew.rs"),
        "{}",
        patch.stdout
    );
    let stat = env.crew(&repo, &["diff", &run, "--stat"]);
    assert!(stat.stdout.contains("1 file changed"), "{}", stat.stdout);
    let json = env.crew(&repo, &["diff", &run, "--json"]).json();
    assert_eq!(json["run"], run.as_str());
    assert!(
        json["text"]
            .as_str()
            .unwrap()
            .contains("src/routes/crew.rs")
    );
    env.crew(&repo, &["diff", &run, "--stat", "--patch"])
        .expect_code(2);
}

#[test]
fn a_trial_merge_into_a_branch_since_deleted_does_not_count_as_integrated() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let run = env
        .dispatch(&repo, "routes")
        .backend("ok")
        .scope("src/routes/**")
        .verify("true")
        .finished();
    env.git_ok(&repo, &["checkout", "-q", "-b", "try"]);
    env.git_ok(
        &repo,
        &[
            "merge",
            "-q",
            "--no-ff",
            "--no-edit",
            &format!("crew/routes/{run}"),
        ],
    );
    // The hook recorded the merge as the run's integration, into `try`.
    let shown = env.crew(&repo, &["show", &run]).json();
    assert_eq!(shown["run"]["integration"]["into"], "try", "{shown}");
    env.git_ok(&repo, &["checkout", "-q", "main"]);
    env.git_ok(&repo, &["branch", "-q", "-D", "try"]);
    // That merge landed nowhere: the run integrates into main as if it never happened.
    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(0);
    let shown = env.crew(&repo, &["show", &run]).json();
    assert_eq!(shown["run"]["integration"]["into"], "main", "{shown}");
    env.git_ok(&repo, &["cat-file", "-e", "main:src/routes/crew.rs"]);
    // Once on a branch, it stands.
    env.crew(&repo, &["integrate", &run]).expect_code(4);
}

#[test]
fn a_fast_forward_a_filter_breaks_half_way_leaves_the_leads_checkout_as_it_was() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    // A filter whose smudge fails, as git-lfs's does for an object it cannot find: the
    // worker's file goes in through its clean side.
    for (key, value) in [
        ("filter.boom.clean", "cat"),
        ("filter.boom.smudge", "false"),
        ("filter.boom.required", "true"),
    ] {
        env.git(&repo, &["config", key, value]).expect_code(0);
    }
    write(&repo.join(".gitattributes"), "*.boom filter=boom\n");
    env.git(&repo, &["add", ".gitattributes"]).expect_code(0);
    env.git(&repo, &["commit", "-q", "-m", "boom filter"])
        .expect_code(0);
    crate::tc_toolchains::add_worker(
        &env,
        &repo,
        "boom",
        &format!(
            "#!/bin/sh\nset -eu\nmkdir -p src/routes/new\necho 'pub fn a() {{}}' > src/routes/new/a.rs\n\
             echo 'pub fn a() {{}}' > src/routes/a.rs\necho payload > src/routes/z.boom\n{}",
            crate::tc_toolchains::FOOTER
        ),
    );
    let run = env
        .dispatch(&repo, "routes")
        .backend("boom")
        .scope("src/routes/**")
        .verify("true")
        .finished();
    let main = env.git_ok(&repo, &["rev-parse", "main"]);
    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(4);
    assert_eq!(out.json()["error"]["code"], "checkout-refused");
    // Nothing landed, and nothing the failed checkout wrote is left behind.
    assert_eq!(env.git_ok(&repo, &["rev-parse", "main"]), main);
    let status = env.git_ok(&repo, &["status", "--porcelain", "--untracked-files=all"]);
    assert!(status.trim().is_empty(), "{status}");
    assert!(!repo.join("src/routes/new").exists());
    assert_eq!(read(&repo.join("src/routes/a.rs")), "pub fn routes() {}\n");
}

/// Rewrites `path` with content of the same length that differs, and gives it back the
/// time it had: only its change time (which no one can set) and its content tell.
fn change_behind_its_stat_data(path: &Path) {
    let before = std::fs::metadata(path).unwrap().modified().unwrap();
    let text = read(path);
    let changed: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_lowercase() {
                c.to_ascii_uppercase()
            } else {
                c
            }
        })
        .collect();
    assert_ne!(changed, text);
    assert_eq!(changed.len(), text.len());
    write(path, &changed);
    std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(before)
        .unwrap();
}

#[test]
fn a_change_that_keeps_a_files_size_and_time_is_seen_in_either_checkout() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let run = routes_run(&env, &repo);
    // The lead's checkout: refused as dirty, whatever its index's stat data say.
    change_behind_its_stat_data(&repo.join("README.md"));
    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(4);
    assert_eq!(out.json()["error"]["code"], "dirty-checkout");
    env.git_ok(&repo, &["checkout", "-q", "README.md"]);
    // The run's worktree: the run lands, and its worktree, changed, is kept.
    let wt = worktree_of(&env, &repo, &run);
    change_behind_its_stat_data(&wt.join("src/routes/crew.rs"));
    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["cleanup"]["worktree"], "kept", "{json}");
    assert!(json["cleanup"]["kept_because"].is_string(), "{json}");
    assert_eq!(read(&wt.join("src/routes/crew.rs")), "PUB FN CREW() {}\n");
    assert_eq!(read(&repo.join("src/routes/crew.rs")), "pub fn crew() {}\n");
}

#[test]
fn a_clean_worktree_is_moved_out_of_the_way_at_once_and_its_files_deleted_after() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let run = routes_run(&env, &repo);
    let wt = worktree_of(&env, &repo, &run);
    // Build output git ignores would need git's look (and be named): none here.
    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["cleanup"]["worktree"], "removed", "{json}");
    assert_eq!(json["cleanup"]["ignored"], serde_json::json!([]));
    // Gone from where it was and from git's registrations at once.
    assert!(!wt.exists());
    assert!(!repo.join(".git/worktrees").join(&run).exists());
    let listed = env.git_ok(&repo, &["worktree", "list", "--porcelain"]);
    assert!(!listed.contains(&run), "{listed}");
    // Its files, moved aside, are deleted by a process of their own.
    let trash = repo.join(".git/crew/trash");
    poll_until(Duration::from_secs(20), "the trash emptied", || {
        std::fs::read_dir(&trash).map_or(true, |mut e| e.next().is_none())
    });
    // The run record says what went.
    let shown = env.crew(&repo, &["show", &run]).json();
    assert_eq!(shown["run"]["pruned"]["worktree"], true, "{shown}");
}

/// The fast-forward of the lead's checkout runs the hooks git runs for it: a post-merge
/// of the user's beside git-crew's block, and any other hook of a merge
/// (`reference-transaction` here), each seeing the fast-forward as git shows it. Where
/// the hooks directory holds git-crew's shims alone, git is told to look for none, and
/// the merge lands the same.
#[test]
fn the_users_own_hooks_run_on_the_fast_forward() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let hooks = repo.join(".git/hooks");
    let post_merge = hooks.join("post-merge");
    let shim = read(&post_merge);
    assert!(shim.starts_with("#!/bin/sh\n# >>> git-crew >>>"), "{shim}");

    // git-crew's shims alone: the merge lands, nothing else to see.
    let run = routes_run(&env, &repo);
    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(0);
    assert_eq!(
        rev(&env, &repo, "main"),
        out.json()["commit"].as_str().unwrap()
    );
    assert!(env.git_ok(&repo, &["status", "--porcelain"]).is_empty());

    // The user's own line in post-merge, after git-crew's block.
    write(
        &post_merge,
        &format!(
            "{shim}echo \"post-merge $1 $(git rev-parse HEAD)\" >> \"$(git rev-parse --git-dir)/mine.log\"\n"
        ),
    );
    let run = env
        .dispatch(&repo, "second")
        .backend("own-file")
        .scope("work/second.txt")
        .finished();
    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(0);
    let commit = out.json()["commit"].as_str().unwrap().to_string();
    assert_eq!(
        read(&repo.join(".git/mine.log")),
        format!("post-merge 0 {commit}\n")
    );

    // git-crew's shim alone again, and a reference-transaction hook of the user's.
    write(&post_merge, &shim);
    std::fs::remove_file(repo.join(".git/mine.log")).unwrap();
    let transaction = hooks.join("reference-transaction");
    write(
        &transaction,
        "#!/bin/sh\nif [ \"$1\" = committed ]; then cat >> \"$(git rev-parse --git-dir)/mine.log\"; fi\n",
    );
    let mut perms = std::fs::metadata(&transaction).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&transaction, perms).unwrap();
    let run = env
        .dispatch(&repo, "third")
        .backend("own-file")
        .scope("work/third.txt")
        .finished();
    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(0);
    let commit = out.json()["commit"].as_str().unwrap().to_string();
    let log = read(&repo.join(".git/mine.log"));
    assert!(
        log.lines()
            .any(|l| l.contains(&commit) && l.ends_with("refs/heads/main")),
        "{log}"
    );
}
