//! sync: two clones exchanging their notes through a bare remote.

use std::path::{Path, PathBuf};

use crate::common::TestEnv;

/// A bare remote made from crew-repo.sh, and two initialised clones of it.
fn clones(env: &TestEnv) -> (PathBuf, PathBuf, PathBuf) {
    let (bare, mut clones) = crate::fleet::fleet(env, &["a", "b"], None);
    let b = clones.pop().unwrap();
    let a = clones.pop().unwrap();
    (bare, a, b)
}

fn finished(env: &TestEnv, repo: &Path, task: &str, worker: &str) -> String {
    env.finished_run(repo, task, worker, &["--scope", "src/routes/**"])
}

#[test]
fn two_clones_sync_through_a_bare_remote_and_each_keeps_its_rows() {
    let env = TestEnv::new();
    let (bare, a, b) = clones(&env);
    // Both clones record the same task: the same note, written on each side.
    let run_a = finished(&env, &a, "routes", "no-footer");
    let run_b = finished(&env, &b, "routes", "out-of-scope");
    let only_b = finished(&env, &b, "docs", "no-footer");

    let out = env.crew(&a, &["sync"]);
    out.expect_code(0);
    assert_eq!(out.json()["remote"], "origin");
    let out = env.crew(&b, &["sync", "origin"]);
    out.expect_code(0);
    let ledger = out.json()["refs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["ref"] == "refs/notes/crew-ledger")
        .cloned()
        .unwrap();
    assert_eq!(ledger["merge"], "merged");
    assert_eq!(ledger["unioned"], 1, "{ledger}");
    assert_eq!(ledger["pushed"], true);
    env.crew(&a, &["sync"]).expect_code(0);

    for clone in [&a, &b] {
        let mut routes = crate::ledger::listed_runs(&env, clone, "routes");
        routes.sort();
        let mut expected = vec![run_a.clone(), run_b.clone()];
        expected.sort();
        assert_eq!(routes, expected, "{}", clone.display());
        assert_eq!(
            crate::ledger::listed_runs(&env, clone, "docs"),
            vec![only_b.clone()]
        );
    }
    // git reads the merged note: one row per line, in time order.
    let blob = env
        .command("sh")
        .current_dir(&a)
        .args(["-c", "printf 'crew-task:routes' | git hash-object --stdin"])
        .output()
        .unwrap();
    let blob = String::from_utf8_lossy(&blob.stdout).trim().to_string();
    let text = env.git_ok(&a, &["notes", "--ref=crew-ledger", "show", &blob]);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert!(lines[0] <= lines[1]);

    // The remote has everything, and its history was never forced: both clones' notes
    // commits are in it.
    let remote_tip = env.git_ok(&bare, &["rev-parse", "refs/notes/crew-ledger"]);
    let a_tip = env.git_ok(&a, &["rev-parse", "refs/notes/crew-ledger"]);
    assert_eq!(remote_tip, a_tip);
    let b_tip = env.git_ok(&b, &["rev-parse", "refs/notes/crew-ledger"]);
    assert_eq!(remote_tip, b_tip);

    // Nothing new: a sync is a no-op.
    let out = env.crew(&a, &["sync"]);
    out.expect_code(0);
    for r in out.json()["refs"].as_array().unwrap() {
        assert_eq!(r["pushed"], false, "{r}");
    }
}

#[test]
fn a_run_record_integrated_in_one_clone_reaches_the_other() {
    let env = TestEnv::new();
    let (_, a, b) = clones(&env);
    let out = env.crew(
        &a,
        &[
            "dispatch",
            "--task",
            "routes",
            "--backend",
            "ok",
            "--scope",
            "src/routes/**",
            "--prompt",
            "x",
            "--verify",
            "true",
        ],
    );
    let run = out.json()["run"].as_str().unwrap().to_string();
    env.crew(&a, &["wait", &run, "--timeout", "60s"]);
    env.crew(&a, &["integrate", &run]).expect_code(0);
    env.git_ok(&a, &["push", "-q", "origin", "main"]);
    env.crew(&a, &["sync"]).expect_code(0);

    env.git_ok(&b, &["pull", "-q", "--ff-only"]);
    env.crew(&b, &["sync"]).expect_code(0);
    let note = env.git_ok(&b, &["notes", "--ref=crew", "show", "HEAD"]);
    assert!(note.contains(&format!("\"run\":\"{run}\"")), "{note}");
}

#[test]
fn sync_without_a_remote_is_a_clear_error() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let out = env.crew(&repo, &["sync"]);
    out.expect_code(2);
    assert_eq!(out.json()["error"]["code"], "remote-required");
    let out = env.crew(&repo, &["sync", "nowhere"]);
    out.expect_code(3);
    assert_eq!(out.json()["error"]["code"], "remote-not-found");
}

#[test]
fn doctor_finds_notes_that_diverged_from_a_remote_and_merges_them() {
    let env = TestEnv::new();
    let (_, a, b) = clones(&env);
    let run_a = finished(&env, &a, "routes", "no-footer");
    let run_b = finished(&env, &b, "routes", "out-of-scope");
    env.crew(&a, &["sync"]).expect_code(0);
    // b fetches by hand and never merges.
    env.git_ok(
        &b,
        &[
            "fetch",
            "-q",
            "origin",
            "+refs/notes/crew*:refs/notes/remotes/origin/crew*",
        ],
    );
    let out = env.crew(&b, &["doctor"]);
    out.expect_code(1);
    let problems = out.json()["problems"].clone();
    assert!(
        problems
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["kind"] == "notes-diverged"
                && p["detail"]
                    .as_str()
                    .unwrap()
                    .starts_with("refs/notes/crew-ledger")),
        "{problems}"
    );
    env.crew(&b, &["doctor", "--fix"]);
    let mut runs = crate::ledger::listed_runs(&env, &b, "routes");
    runs.sort();
    let mut expected = vec![run_a, run_b];
    expected.sort();
    assert_eq!(runs, expected);
    env.crew(&b, &["doctor"]).expect_code(0);
}

#[test]
fn a_later_verdict_of_the_same_second_stays_the_latest_on_every_clone() {
    let env = TestEnv::new();
    let (_bare, a, b) = clones(&env);
    let plan = "[plan]\nid = \"v1\"\n\n[[tasks]]\nid = \"a\"\nwave = 1\nscope = [\"work/a.txt\"]\nprompt = \"x\"\n\n[[tasks]]\nid = \"b\"\nwave = 2\nscope = [\"work/b.txt\"]\nprompt = \"x\"\n\n[[gates]]\nid = \"g1\"\nmeasure = \"m\"\nrequired_evidence = \"e\"\ncloses_wave = 1\ngates_waves = [2]\n";
    crate::common::write(&a.join(".crew/plans/v1.toml"), plan);
    env.git_ok(&a, &["add", "-A"]);
    env.git_ok(&a, &["commit", "-q", "-m", "plan"]);
    env.git_ok(&a, &["push", "-q", "origin", "main"]);
    // The other clone has a verdict of its own, so the sync is a real line union.
    env.git_ok(&b, &["pull", "-q", "origin", "main"]);
    env.crew(
        &b,
        &[
            "gate",
            "record",
            "g1",
            "--verdict",
            "pass",
            "--evidence",
            "mm from b",
        ],
    )
    .expect_code(0);
    // A pass, then — within the same second — a fail, each with evidence that sorts the
    // pass after the fail as text.
    for (verdict, evidence) in [("pass", "zz looked fine"), ("fail", "aa broke after all")] {
        env.crew(
            &a,
            &[
                "gate",
                "record",
                "g1",
                "--verdict",
                verdict,
                "--evidence",
                evidence,
            ],
        )
        .expect_code(0);
    }
    env.crew(&a, &["sync"]).expect_code(0);
    let out = env.crew(&b, &["sync"]);
    out.expect_code(0);
    assert!(out.stdout.contains("\"merged\""), "{}", out.stdout);
    env.crew(&a, &["sync"]).expect_code(0);
    for clone in [&a, &b] {
        let gates = env.crew(clone, &["gate", "ls"]).json();
        assert_eq!(
            gates["gates"][0]["verdict"]["verdict"],
            "fail",
            "{}: {gates}",
            clone.display()
        );
    }
}

#[test]
fn two_clones_that_each_rolled_a_task_sync_to_every_row_once() {
    use crate::ledger::{append_rows, listed_runs};
    let env = TestEnv::new();
    let (_, a, b) = clones(&env);
    let mut expected = Vec::new();
    let mut failures = 0;
    // Each clone appends past a roll-over on its own, twice over, syncing in between:
    // the second time both roll into the same segment numbers.
    for round in 0..2 {
        expected.extend(append_rows(&a, "busy", &format!("a{round}"), 300, 5));
        expected.extend(append_rows(&b, "busy", &format!("b{round}"), 250, 4));
        failures += 300 / 5 + 250usize.div_ceil(4);
        for clone in [&a, &b, &a] {
            env.crew(clone, &["sync"]).expect_code(0);
        }
        expected.sort();
        for clone in [&a, &b] {
            let mut runs = listed_runs(&env, clone, "busy");
            runs.sort();
            assert_eq!(runs, expected, "round {round}, {}", clone.display());
            let verdict = env
                .should_stop(clone, "busy")
                .model("m1")
                .tier("low")
                .verdict();
            assert_eq!(verdict["failures"], failures, "round {round}: {verdict}");
        }
    }
    // A sync leaves in the head what either side's head held; the next append rolls it
    // back under its limit.
    for (i, clone) in [&a, &b].into_iter().enumerate() {
        append_rows(clone, "busy", &format!("last{i}"), 1, 5);
        let head = env.git_ok(
            clone,
            &[
                "notes",
                "--ref=crew-ledger",
                "show",
                &crate::ledger::task_blob(&env, clone, "busy"),
            ],
        );
        assert!(head.len() < 64 * 1024, "{}", head.len());
        assert!(head.contains("\"carry\":"));
    }
}
