//! Integration through a fleet's remote: clones standing for machines land their passes
//! on one bare remote (over `file://` and `git daemon` on 127.0.0.1), with real git.

use std::path::Path;

use serde_json::Value;

use crate::common::{TestEnv, write};
use crate::fleet::{Daemon, fleet};

/// A pass of task `task` dispatched on `dir` as machine `machine`, claimed on the remote:
/// the `own-file` worker writes `work/<task>.txt`, its scope.
fn own_file_pass(env: &TestEnv, dir: &Path, machine: &str, task: &str) -> String {
    let machine = format!("fleet.machine={machine}");
    env.dispatch(dir, task)
        .backend("own-file")
        .scope(&format!("work/{task}.txt"))
        .verify(&format!("test -f work/{task}.txt"))
        .set("backends.own-file.concurrency=50")
        .args(&["--remote", "origin", "--set", &machine])
        .run_id()
}

/// The `routes` pass (backend `ok`, scope `src/routes/**`), claimed on the remote, ended.
fn routes_pass(env: &TestEnv, dir: &Path) -> String {
    let run = env
        .dispatch(dir, "routes")
        .backend("ok")
        .scope("src/routes/**")
        .verify("test -f src/routes/crew.rs")
        .args(&["--remote", "origin", "--set", "fleet.machine=box-a"])
        .finished();
    assert_eq!(
        env.crew(dir, &["show", &run]).json()["run"]["outcome"],
        "pass"
    );
    // The supervisor marks the claim passed on the remote right after the run is filed,
    // which is when `wait` returns: a test that compares the remote's refs waits for it.
    crate::common::poll_until(
        std::time::Duration::from_secs(20),
        "the claim marked passed on the remote",
        || {
            let fleet = env.crew(dir, &["status", "--fleet", "--remote", "origin", "--json"]);
            fleet.code == 0 && fleet.stdout.contains("\"passed\"")
        },
    );
    run
}

fn rev(env: &TestEnv, dir: &Path, rev: &str) -> String {
    env.git_ok(dir, &["rev-parse", rev]).trim().to_string()
}

/// Every ref of `dir` with its value.
fn all_refs(env: &TestEnv, dir: &Path) -> String {
    env.git_ok(dir, &["for-each-ref", "--format=%(objectname) %(refname)"])
}

/// Commits `path` with `text` on machine `dir`'s main and pushes it to the remote: the
/// remote's target moves under the other machines.
fn push_change(env: &TestEnv, dir: &Path, path: &str, text: &str) -> String {
    env.git_ok(dir, &["pull", "-q", "--no-rebase", "origin", "main"]);
    write(&dir.join(path), text);
    env.git_ok(dir, &["add", path]);
    env.git_ok(dir, &["commit", "-q", "-m", &format!("change {path}")]);
    env.git_ok(dir, &["push", "-q", "origin", "main"]);
    rev(env, dir, "HEAD")
}

fn claim_exists(env: &TestEnv, bare: &Path, task: &str) -> bool {
    env.git(
        bare,
        &[
            "rev-parse",
            "-q",
            "--verify",
            &format!("refs/crew/claims/{task}"),
        ],
    )
    .code
        == 0
}

#[test]
fn a_pass_lands_on_the_remotes_moved_tip_in_scope_and_lets_its_claim_go_in_the_same_push() {
    let env = TestEnv::new();
    let (bare, clones) = fleet(&env, &["a", "b"], None);
    let (a, b) = (&clones[0], &clones[1]);
    let run = routes_pass(&env, a);
    assert!(
        claim_exists(&env, &bare, "routes"),
        "a pass keeps its claim"
    );
    // Another machine moves the remote's main meanwhile; a's main does not know.
    let moved = push_change(&env, b, "docs/b.md", "from b\n");
    let local_before = rev(&env, a, "main");
    assert_ne!(local_before, moved);

    let out = env.crew(a, &["integrate", &run, "--remote", "origin"]);
    out.expect_code(0);
    let json = out.json();
    let commit = json["commit"].as_str().unwrap().to_string();
    // Landed on the remote's tip, not on a's.
    assert_eq!(rev(&env, &bare, "main"), commit);
    assert_eq!(json["parents"][0], moved.as_str());
    // The audit invariant on the remote: old and new tips differ inside the scope only.
    env.assert_in_sealed_scope(a, &run, &moved, &commit);
    let changed = env.git_ok(a, &["diff", "--name-only", &moved, &commit]);
    assert!(changed.contains("src/routes/crew.rs"), "{changed}");
    // The remote moved since the run's base: verified again on the merged tree.
    assert_eq!(json["merged_verify"]["passed"], true, "{json}");
    // One push: the target, the notes and the claim's release.
    let remote = &json["remote"];
    assert_eq!(remote["name"], "origin");
    assert_eq!(remote["tries"], 1);
    assert_eq!(remote["released_claim"], true);
    let pushed: Vec<&str> = remote["pushed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    for reference in [
        "refs/heads/main",
        "refs/notes/crew",
        "refs/notes/crew-ledger",
        "refs/crew/claims/routes",
    ] {
        assert!(pushed.contains(&reference), "{pushed:?}");
    }
    assert!(!claim_exists(&env, &bare, "routes"), "the claim is let go");
    // The run record note and the ledger's row are on the remote.
    let note: Value = serde_json::from_str(
        env.git_ok(&bare, &["notes", "--ref=crew", "show", &commit])
            .trim(),
    )
    .unwrap();
    assert_eq!(note["run"], run.as_str());
    let ledger = env.git_ok(&bare, &["log", "-p", "refs/notes/crew-ledger"]);
    assert!(
        ledger.contains(&format!("\"integrated\":\"{commit}\"")),
        "{ledger}"
    );
    // The main here was checked out, clean and behind: fast-forwarded to the landing.
    assert_eq!(remote["local_target"], "fast-forwarded");
    assert_eq!(rev(&env, a, "main"), commit);
    assert!(env.git_ok(a, &["status", "--porcelain"]).is_empty());
    // The run is integrated: once.
    let again = env.crew(a, &["integrate", &run, "--remote", "origin"]);
    again.expect_code(4);
    assert_eq!(again.json()["error"]["code"], "already-integrated");
    let fsck = env.git(&bare, &["fsck", "--no-progress"]);
    assert_eq!(fsck.code, 0, "{fsck:?}");
}

#[test]
fn a_remote_whose_hook_refuses_the_landing_is_named_and_nothing_moves_anywhere() {
    let env = TestEnv::new();
    let (bare, clones) = fleet(&env, &["a"], None);
    let a = &clones[0];
    let run = routes_pass(&env, a);
    let hook = bare.join("hooks/pre-receive");
    write(
        &hook,
        "#!/bin/sh\nwhile read old new ref; do case $ref in refs/heads/main) echo \"main is protected here\"; exit 1;; esac; done\n",
    );
    let mut perms = std::fs::metadata(&hook).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&hook, perms).unwrap();
    let remote_before = all_refs(&env, &bare);
    let main_before = rev(&env, a, "main");

    let out = env.crew(a, &["integrate", &run, "--remote", "origin"]);
    out.expect_code(4);
    let error = &out.json()["error"];
    assert_eq!(error["code"], "remote-refused", "{error}");
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("main is protected here"), "{error}");
    // Nothing half-pushed: every ref of the remote as it was (the claim too).
    assert_eq!(all_refs(&env, &bare), remote_before);
    // Nothing landed here either: main, the run's record, its notes.
    assert_eq!(rev(&env, a, "main"), main_before);
    let show = env.crew(a, &["show", &run]).json();
    assert!(show["run"]["integration"].is_null(), "{show}");
    let notes = env.git(a, &["notes", "--ref=crew", "list"]);
    assert!(notes.stdout.trim().is_empty(), "{notes:?}");

    // Once the remote allows it, the same run lands.
    std::fs::remove_file(&hook).unwrap();
    env.crew(a, &["integrate", &run, "--remote", "origin"])
        .expect_code(0);
    assert_ne!(all_refs(&env, &bare), remote_before);
    assert!(!claim_exists(&env, &bare, "routes"));
}

#[test]
fn a_remote_target_that_moved_with_a_conflicting_change_is_not_landed_and_says_why() {
    let env = TestEnv::new();
    let (bare, clones) = fleet(&env, &["a", "b"], None);
    let (a, b) = (&clones[0], &clones[1]);
    let run = routes_pass(&env, a);
    push_change(&env, b, "src/routes/crew.rs", "pub fn other() {}\n");
    let remote_before = all_refs(&env, &bare);

    let out = env.crew(a, &["integrate", &run, "--remote", "origin"]);
    out.expect_code(4);
    let error = &out.json()["error"];
    assert_eq!(error["code"], "merge-conflict", "{error}");
    assert!(
        error["details"]
            .as_array()
            .unwrap()
            .iter()
            .any(|d| d.as_str().unwrap().contains("src/routes/crew.rs")),
        "{error}"
    );
    assert_eq!(all_refs(&env, &bare), remote_before);
    assert!(
        claim_exists(&env, &bare, "routes"),
        "still held, not landed"
    );
}

#[test]
fn two_machines_racing_fifty_integrations_into_one_target_over_git_daemon_land_each_once() {
    let env = TestEnv::new();
    let daemon = Daemon::start(env.root());
    let url = format!("git://127.0.0.1:{}/remote.git", daemon.port);
    let (bare, clones) = fleet(&env, &["a", "b"], Some(&url));
    let start = rev(&env, &bare, "main");
    // 25 passes on each machine, each claimed on the remote (while the earlier ones run).
    let mut runs: Vec<Vec<String>> = Vec::new();
    for (i, (dir, machine)) in clones.iter().zip(["box-a", "box-b"]).enumerate() {
        let mine: Vec<String> = (0..25)
            .map(|n| own_file_pass(&env, dir, machine, &format!("m{i}-t{n}")))
            .collect();
        let (first, rest) = mine.split_first().unwrap();
        rest.iter()
            .fold(env.wait(dir, first), |wait, run| wait.and(run))
            .timeout("180s")
            .run()
            .expect_code(0);
        runs.push(mine);
    }
    assert_eq!(
        env.git_ok(&bare, &["for-each-ref", "refs/crew/claims/"])
            .lines()
            .count(),
        50,
        "every pass holds its claim"
    );
    // Both machines integrate their 25 through the remote at the same time, one after
    // the other on each machine.
    let queues: Vec<Vec<std::process::Command>> = clones
        .iter()
        .zip(&runs)
        .map(|(dir, mine)| {
            mine.iter()
                .map(|run| {
                    let mut cmd = env.command(crate::common::bin());
                    cmd.current_dir(dir)
                        .args(["integrate", run, "--remote", "origin"]);
                    cmd
                })
                .collect()
        })
        .collect();
    let outs: Vec<Vec<crate::common::Out>> = std::thread::scope(|scope| {
        let handles: Vec<_> = queues
            .into_iter()
            .map(|queue| {
                scope.spawn(move || {
                    queue
                        .into_iter()
                        .map(|mut cmd| crate::common::run(&mut cmd, None))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mut tries = 0;
    for out in outs.iter().flatten() {
        out.expect_code(0);
        tries += out.json()["remote"]["tries"].as_u64().unwrap();
    }
    eprintln!("50 landings took {tries} merges");
    // Every object here, for the audits below.
    for dir in &clones {
        env.git_ok(dir, &["fetch", "-q", "origin"]);
    }
    // The remote's main: exactly 50 merges on its first-parent line, one a run.
    let line = env.git_ok(
        &bare,
        &["rev-list", "--first-parent", &format!("{start}..main")],
    );
    let landed: Vec<&str> = line.lines().collect();
    assert_eq!(landed.len(), 50, "{line}");
    let mut seen = std::collections::BTreeSet::new();
    for commit in &landed {
        let parents = env.git_ok(&bare, &["show", "-s", "--format=%P", commit]);
        let parents: Vec<&str> = parents.split_whitespace().collect();
        assert_eq!(parents.len(), 2, "{commit} is a merge");
        let note: Value = serde_json::from_str(
            env.git_ok(&bare, &["notes", "--ref=crew", "show", commit])
                .trim(),
        )
        .unwrap();
        let run = note["run"].as_str().unwrap().to_string();
        let machine = runs.iter().position(|m| m.contains(&run)).unwrap();
        // Nothing out of the run's scope between the old and the new tip.
        env.assert_in_sealed_scope(&clones[machine], &run, parents[0], commit);
        assert!(seen.insert(run), "a run landed twice");
    }
    assert_eq!(seen.len(), 50);
    for n in 0..25 {
        for i in 0..2 {
            let file = env.git_ok(&bare, &["show", &format!("main:work/m{i}-t{n}.txt")]);
            assert!(file.starts_with("done by "), "{file}");
        }
    }
    assert_eq!(
        env.git_ok(&bare, &["for-each-ref", "refs/crew/claims/"]),
        "",
        "every claim let go"
    );
    assert_eq!(
        env.git_ok(&bare, &["for-each-ref", "refs/crew/landing/"]),
        "",
        "every landing turn let go"
    );
    let fsck = env.git(&bare, &["fsck", "--no-progress"]);
    assert_eq!(fsck.code, 0, "{fsck:?}");
}

/// `git crew` with `GIT_CREW_FAILPOINT=point` (killed there).
fn crew_killed_at(env: &TestEnv, dir: &Path, point: &str, args: &[&str]) {
    let out = env
        .command(crate::common::bin())
        .current_dir(dir)
        .args(args)
        .env("GIT_CREW_FAILPOINT", point)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), None, "killed, not exited: {out:?}");
}

/// The ledger's `integrated` rows of `task` on `dir`.
fn integrated_rows(env: &TestEnv, dir: &Path, task: &str) -> Vec<String> {
    let rows = env.crew(dir, &["ledger", "--task", task]).json()["rows"].clone();
    rows.as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["integrated"].as_str().map(str::to_string))
        .collect()
}

/// Machine a's `routes` pass, its `integrate --remote` killed right after its push: the
/// remote, a's clone, the run and the commit the push landed.
fn killed_after_its_push(
    env: &TestEnv,
) -> (std::path::PathBuf, std::path::PathBuf, String, String) {
    let (bare, mut clones) = fleet(env, &["a"], None);
    let a = clones.remove(0);
    let run = routes_pass(env, &a);
    crew_killed_at(
        env,
        &a,
        "integrate-after-target",
        &["integrate", &run, "--remote", "origin"],
    );
    let landed = rev(env, &bare, "main");
    (bare, a, run, landed)
}

#[test]
fn a_landing_killed_after_its_push_is_finished_by_the_next_integrate_or_doctor() {
    for finisher in ["integrate", "doctor"] {
        let env = TestEnv::new();
        let (bare, a, run, landed) = killed_after_its_push(&env);
        let a = &a;
        // The remote has the landing; nothing of it was booked here.
        assert!(!claim_exists(&env, &bare, "routes"));
        let shown = env.crew(a, &["show", &run]).json();
        assert_eq!(shown["run"]["integration"], Value::Null);
        if finisher == "integrate" {
            let out = env.crew(a, &["integrate", &run, "--remote", "origin"]);
            out.expect_code(0);
            let json = out.json();
            assert_eq!(json["completed"], true, "{json}");
            assert_eq!(json["commit"], landed.as_str());
        } else {
            let out = env.crew(a, &["doctor", "--fix"]);
            assert!(
                out.stdout.contains("integration-unfinished"),
                "{}",
                out.stdout
            );
        }
        assert_eq!(rev(&env, &bare, "main"), landed, "landed once");
        let shown = env.crew(a, &["show", &run]).json();
        assert_eq!(shown["run"]["integration"]["commit"], landed.as_str());
        assert_eq!(
            integrated_rows(&env, a, "routes"),
            std::slice::from_ref(&landed)
        );
        env.crew(a, &["integrate", &run, "--remote", "origin"])
            .expect_code(4);
    }
}

#[test]
fn a_landing_killed_before_its_push_takes_its_notes_and_row_back_and_lands_once_after() {
    let env = TestEnv::new();
    let (bare, clones) = fleet(&env, &["a"], None);
    let a = &clones[0];
    let run = routes_pass(&env, a);
    let before = rev(&env, &bare, "main");
    crew_killed_at(
        &env,
        a,
        "integrate-before-target",
        &["integrate", &run, "--remote", "origin"],
    );
    assert_eq!(rev(&env, &bare, "main"), before, "nothing was pushed");
    assert!(claim_exists(&env, &bare, "routes"));
    let out = env.crew(a, &["integrate", &run, "--remote", "origin"]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["completed"], false, "{json}");
    let landed = rev(&env, &bare, "main");
    assert_eq!(json["commit"], landed.as_str());
    // The row written before the killed push was taken back: one landing, one row.
    assert_eq!(integrated_rows(&env, a, "routes"), [landed]);
    assert!(!claim_exists(&env, &bare, "routes"));
}

#[test]
fn a_dead_landing_is_left_undecided_while_its_remote_is_out_of_reach() {
    let env = TestEnv::new();
    let (bare, a, run, landed) = killed_after_its_push(&env);
    let a = &a;
    // The remote is gone for now: whether the push landed cannot be told, so nothing is
    // taken back or booked.
    let away = env.root().join("remote-away.git");
    std::fs::rename(&bare, &away).unwrap();
    let out = env.crew(a, &["integrate", &run, "--remote", "origin"]);
    out.expect_code(4);
    let said = format!("{}{}", out.stdout, out.stderr);
    assert!(said.contains("fetch-failed"), "{said}");
    let doctor = env.crew(a, &["doctor", "--fix", "--json"]);
    assert!(
        doctor.stdout.contains("integration-unfinished"),
        "{}",
        doctor.stdout
    );
    assert_eq!(
        env.crew(a, &["show", &run]).json()["run"]["integration"],
        Value::Null
    );
    // Back again: the landing is booked, once.
    std::fs::rename(&away, &bare).unwrap();
    let out = env.crew(a, &["integrate", &run, "--remote", "origin"]);
    out.expect_code(0);
    assert_eq!(out.json()["completed"], true);
    assert_eq!(integrated_rows(&env, a, "routes"), [landed]);
}
