//! What people read: the human renderings of the CLI, snapshotted with insta in the form
//! of jj's tests ([`TestEnv::snapshot`]: stdout, stderr, exit status), with what changes
//! from one run of the suite to the next normalized ([`TestEnv::normalize`]). Run ids and
//! the date are pinned by the test environment, so they show as they are.
//!
//! A rendering that changes on purpose: run the tests, review the new snapshots with
//! `cargo insta review` (or read the `.snap.new` files beside the old ones) and commit
//! the `.snap` files. Under CI (`CI=true`) a changed rendering fails and nothing is
//! written.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};

use crate::common::{TestEnv, write};

fn crew_repo(env: &TestEnv) -> PathBuf {
    env.fixture("crew-repo.sh", "repo", &[])
}

/// A crew repository with one finished run of task `routes` by the `ok` worker, verified
/// by `true`: run `20260101-000000-0001`.
fn with_a_finished_run(env: &TestEnv) -> (PathBuf, String) {
    let repo = crew_repo(env);
    let run = env
        .dispatch(&repo, "routes")
        .backend("ok")
        .scope("src/routes/**")
        .verify("true")
        .finished();
    assert_eq!(run, "20260101-000000-0001");
    (repo, run)
}

#[test]
fn status_with_no_runs() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let out = env.crew(&repo, &["status", "--human"]);
    insta::assert_snapshot!(env.snapshot(&out), @r"
    no runs
    [EOF]
    [exit status: 0]
    ");
}

/// `args` rendered for people at 80 and 160 columns, plain (`NO_COLOR`) and coloured
/// (`CLICOLOR_FORCE`), each [snapshotted](TestEnv::snapshot) with escape codes shown as
/// `␛`; variants that print the same are shown once, under all their names.
fn renderings(env: &TestEnv, dir: &Path, args: &[&str]) -> String {
    let mut sections: Vec<(Vec<String>, String)> = Vec::new();
    for (columns, colour) in [("80", false), ("160", false), ("80", true), ("160", true)] {
        let switch = if colour { "CLICOLOR_FORCE" } else { "NO_COLOR" };
        let vars = [("COLUMNS", OsStr::new(columns)), (switch, OsStr::new("1"))];
        let text = env
            .snapshot(&env.crew_env(dir, args, &vars))
            .replace('\u{1b}', "␛");
        let name = format!(
            "{columns} columns, {}",
            if colour { "colour" } else { "plain" }
        );
        match sections.iter_mut().find(|(_, seen)| *seen == text) {
            Some((names, _)) => names.push(name),
            None => sections.push((vec![name], text)),
        }
    }
    sections
        .iter()
        .map(|(names, text)| format!("===== {} =====\n{text}\n", names.join("; ")))
        .collect()
}

/// The runs of [`with_a_finished_run`], then: the same task integrated, a task with a long
/// name that passed, one rejected for its scope and one that asks for help. The clock is
/// then an hour and a half on, so that every time shown is whole.
fn with_runs_in_many_states(env: &TestEnv) -> PathBuf {
    let (repo, run) = with_a_finished_run(env);
    env.crew(&repo, &["integrate", &run]).expect_code(0);
    env.dispatch(&repo, "add-the-login-form-with-remember-me")
        .backend("ok")
        .scope("src/routes/**")
        .verify("true")
        .finished();
    env.dispatch(&repo, "docs")
        .backend("out-of-scope")
        .scope("docs/**")
        .finished();
    env.dispatch(&repo, "db")
        .backend("needs-help")
        .scope("src/db/**")
        .finished();
    env.set_clock("2026-01-01T01:30:00Z");
    repo
}

#[test]
fn status_with_a_finished_run() {
    let env = TestEnv::new();
    let (repo, _) = with_a_finished_run(&env);
    env.set_clock("2026-01-01T01:30:00Z");
    let out = env.crew(&repo, &["status", "--human"]);
    insta::assert_snapshot!(env.snapshot(&out));
}

#[test]
fn status_of_runs_in_many_states_at_80_and_160_columns() {
    let env = TestEnv::new();
    let repo = with_runs_in_many_states(&env);
    insta::assert_snapshot!(renderings(&env, &repo, &["status", "--human"]));
}

#[test]
fn status_says_how_many_older_runs_it_hides() {
    let env = TestEnv::new();
    let repo = with_runs_in_many_states(&env);
    let out = env.crew_env(
        &repo,
        &["status", "--human", "--recent", "1"],
        &[("COLUMNS", OsStr::new("160"))],
    );
    insta::assert_snapshot!(env.snapshot(&out));
    let json = env.crew(&repo, &["status", "--recent", "1"]).json();
    assert_eq!(json["hidden"], 2);
}

#[test]
fn show_of_a_finished_run() {
    let env = TestEnv::new();
    let (repo, run) = with_a_finished_run(&env);
    insta::assert_snapshot!(renderings(&env, &repo, &["show", &run, "--human"]));
}

#[test]
fn wait_for_a_finished_run() {
    let env = TestEnv::new();
    let (repo, run) = with_a_finished_run(&env);
    insta::assert_snapshot!(renderings(&env, &repo, &["wait", &run, "--human"]));
}

#[test]
fn dispatch_wait_of_a_run_rejected_for_its_scope() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let out = env
        .dispatch(&repo, "routes")
        .backend("out-of-scope")
        .scope("src/routes/**")
        .wait()
        .args(&["--human"])
        .run();
    insta::assert_snapshot!(env.snapshot(&out));
}

#[test]
fn flight_explain() {
    let env = TestEnv::new();
    let repo = env.fixture("plain.sh", "repo", &[]);
    write(
        &repo.join(".crew/flight.toml"),
        "version = 1\ndefault_backend = \"claude\"\n\n[backends.claude]\neffort = \"high\"\n",
    );
    let out = env.crew(
        &repo,
        &[
            "flight",
            "--explain",
            "--human",
            "--set",
            "fences.time_budget=40m",
        ],
    );
    insta::assert_snapshot!(env.snapshot(&out));
}

#[test]
fn an_unknown_run_is_an_error_with_a_hint() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let out = env.crew(&repo, &["show", "20260101-000000-0000", "--human"]);
    insta::assert_snapshot!(env.snapshot(&out));
}

#[test]
fn a_dispatch_outside_a_repository_is_a_usage_error() {
    let env = TestEnv::new();
    let out = env
        .dispatch(env.root(), "routes")
        .scope("src/**")
        .args(&["--human"])
        .run();
    insta::assert_snapshot!(env.snapshot(&out));
}

#[test]
fn ledger_and_its_stats() {
    let env = TestEnv::new();
    let (repo, _) = with_a_finished_run(&env);
    // Later on the pinned clock, so the rows' order never rests on a tie.
    env.set_clock("2026-01-01T00:10:00Z");
    env.dispatch(&repo, "docs")
        .backend("out-of-scope")
        .scope("docs/**")
        .finished();
    insta::assert_snapshot!("ledger", renderings(&env, &repo, &["ledger", "--human"]));
    insta::assert_snapshot!(
        "ledger_stats",
        renderings(&env, &repo, &["ledger", "stats", "--human"])
    );
}

#[test]
fn the_completion_summary_of_a_wave() {
    let env = TestEnv::new();
    let repo = crate::plan::planned_repo(&env);
    let out = env.crew(&repo, &["wave", "dispatch", "1"]);
    out.expect_code(0);
    let runs: Vec<String> = out.json()["dispatched"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["run"].as_str().unwrap().to_string())
        .collect();
    let (first, rest) = runs.split_first().unwrap();
    rest.iter()
        .fold(env.wait(&repo, first), |wait, run| wait.and(run))
        .run()
        .expect_code(0);
    for run in &runs {
        env.crew(&repo, &["integrate", run]).expect_code(0);
    }
    env.crew(
        &repo,
        &[
            "gate",
            "record",
            "g1",
            "--verdict",
            "pass",
            "--evidence",
            "a.txt b.txt",
        ],
    )
    .expect_code(0);
    insta::assert_snapshot!(renderings(
        &env,
        &repo,
        &["summary", "--wave", "1", "--at", "completion", "--human"],
    ));
}
