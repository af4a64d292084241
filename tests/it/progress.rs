//! The live status line of `wait`, `dispatch --wait` and `integrate` — on a real
//! terminal (a tmux pane), and its absence when stderr is not one — and what
//! `wait --timeout` says about the runs still working.

use std::time::Duration;

use crate::common::{TestEnv, bin, read, write};
use crate::term::{Tmux, stderr_to};

/// The spinner's colour, as tmux reports it.
const CYAN: &str = "\x1b[36m";

fn crew_repo(env: &TestEnv) -> std::path::PathBuf {
    env.fixture("crew-repo.sh", "repo", &[])
}

/// A run of the `slow` worker that works `seconds` and then verifies for `verify_s`.
fn slow_run(
    env: &TestEnv,
    repo: &std::path::Path,
    task: &str,
    seconds: u32,
    verify_s: u32,
) -> String {
    env.dispatch(repo, task)
        .backend("slow")
        .scope("src/routes/**")
        .set(&format!("backends.slow.env.SLOW_SECONDS=\"{seconds}\""))
        .verify(&format!("sleep {verify_s}"))
        .run_id()
}

#[test]
fn wait_on_a_terminal_shows_the_run_and_its_phase_then_clears_the_line() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = slow_run(&env, &repo, "routes", 6, 4);
    let bin = bin();
    let tmux = Tmux::start(
        &env,
        &repo,
        &[bin.to_str().unwrap(), "wait", &run, "--human"],
        160,
        40,
    );
    let screen = tmux.wait_for("1 run left: routes working", Duration::from_secs(30));
    assert!(!screen.contains("verifying"), "{screen}");
    // Coloured, as NO_COLOR is not set.
    assert!(
        tmux.capture_escapes().contains(CYAN),
        "{:?}",
        tmux.capture_escapes()
    );
    tmux.wait_for("1 run left: routes verifying", Duration::from_secs(30));
    assert_eq!(tmux.wait_exit(Duration::from_secs(60)), 0);
    let screen = tmux.capture();
    // The line is gone before the result: nothing of it is left on the screen, and the
    // result starts where it was.
    assert!(
        screen.starts_with(&format!(
            "run {run} (task routes, role implement)\nphase done (pass)"
        )),
        "{screen}"
    );
    assert!(!screen.contains("run left"), "{screen}");
}

#[test]
fn wait_draws_nothing_when_stderr_is_not_a_terminal() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let first = slow_run(&env, &repo, "routes", 3, 1);
    // Stdout on the terminal, stderr to a file.
    let err = env.root().join("wait.err");
    let bin = bin();
    let cmd = stderr_to(&err, &[bin.to_str().unwrap(), "wait", &first, "--human"]);
    let cmd: Vec<&str> = cmd.iter().map(String::as_str).collect();
    let tmux = Tmux::start(&env, &repo, &cmd, 160, 40);
    assert_eq!(tmux.wait_exit(Duration::from_secs(60)), 0);
    assert!(tmux.capture().contains("phase done (pass)"));
    assert_eq!(read(&err), "");
    // Both piped, as a lead agent runs it.
    let second = slow_run(&env, &repo, "auth", 3, 1);
    let out = env.wait(&repo, &second).human().run();
    out.expect_code(0);
    assert_eq!(out.stderr, "");
    assert!(out.stdout.contains("phase done (pass)"));
}

#[test]
fn dispatch_wait_shows_the_line_without_colour_under_no_color() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let bin = bin();
    let tmux = Tmux::start_with(
        &env,
        &repo,
        &[
            bin.to_str().unwrap(),
            "dispatch",
            "--task",
            "routes",
            "--backend",
            "slow",
            "--scope",
            "src/routes/**",
            "--set",
            "backends.slow.env.SLOW_SECONDS=\"5\"",
            "--prompt",
            "x",
            "--wait",
            "--human",
        ],
        &[("NO_COLOR", "1")],
        160,
        40,
    );
    tmux.wait_for("1 run left: routes working", Duration::from_secs(30));
    let escapes = tmux.capture_escapes();
    assert!(!escapes.contains(CYAN), "{escapes:?}");
    assert_eq!(tmux.wait_exit(Duration::from_secs(60)), 0);
    let screen = tmux.capture();
    assert!(screen.contains("phase done (pass)"), "{screen}");
    assert!(!screen.contains("run left"), "{screen}");
}

#[test]
fn integrate_on_a_terminal_says_when_it_verifies_the_merged_tree() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = env
        .dispatch(&repo, "routes")
        .backend("ok")
        .scope("src/routes/**")
        .verify("sleep 3")
        .finished();
    // The target moves on: the merge is verified again.
    write(&repo.join("NOTES.txt"), "elsewhere\n");
    env.git_ok(&repo, &["add", "NOTES.txt"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "meanwhile"]);
    let bin = bin();
    let tmux = Tmux::start(
        &env,
        &repo,
        &[bin.to_str().unwrap(), "integrate", &run, "--human"],
        160,
        40,
    );
    let screen = tmux.wait_for(
        &format!("integrate {run}: re-verifying on the merged tree"),
        Duration::from_secs(30),
    );
    assert!(!screen.contains("integrated run"), "{screen}");
    assert_eq!(tmux.wait_exit(Duration::from_secs(60)), 0);
    let screen = tmux.capture();
    assert!(
        screen.starts_with(&format!("integrated run {run} (task routes) into main as ")),
        "{screen}"
    );
    assert!(screen.contains("verified again on the merge"), "{screen}");
    assert!(!screen.contains("re-verifying"), "{screen}");
}

#[test]
fn wait_timeout_names_the_runs_still_working() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let done = env
        .dispatch(&repo, "done")
        .backend("ok")
        .scope("src/routes/**")
        .finished();
    let hung = env
        .dispatch(&repo, "hung")
        .backend("hang")
        .scope("src/hung/**")
        .run_id();

    let out = env.wait(&repo, &done).and(&hung).timeout("1s").run();
    out.expect_code(5);
    let json = out.json();
    assert_eq!(json["ok"], true);
    assert_eq!(json["timed_out"], true);
    let still = json["still_working"].as_array().unwrap();
    assert_eq!(still.len(), 1, "{json}");
    assert_eq!(still[0]["run"], hung.as_str());
    assert_eq!(still[0]["task"], "hung");
    assert_eq!(still[0]["phase"], "working");
    assert!(still[0]["elapsed_s"].as_u64().unwrap() >= 1, "{json}");

    let out = env.wait(&repo, &hung).timeout("1s").human().run();
    out.expect_code(5);
    assert!(
        out.stderr.starts_with(&format!(
            "wait: timed out after 1s; still working: hung ({hung} working "
        )),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains(&format!("hint: git crew wait {hung} waits again")),
        "{}",
        out.stderr
    );

    // With --any, the answer is the run that ended; the other is still going.
    let out = env.crew(&repo, &["wait", &done, &hung, "--any", "--timeout", "30s"]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["timed_out"], false);
    assert_eq!(json["still_working"][0]["run"], hung.as_str());
    // Nothing is still working when every run ended.
    let out = env.wait(&repo, &done).run();
    assert_eq!(out.json()["still_working"], serde_json::json!([]));

    env.crew(&repo, &["abandon", &hung]).expect_code(0);
}

#[test]
fn ctrl_c_ends_the_wait_and_not_the_run() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = env
        .dispatch(&repo, "routes")
        .backend("hang")
        .scope("src/routes/**")
        .run_id();
    let bin = bin();
    let tmux = Tmux::start(
        &env,
        &repo,
        &[bin.to_str().unwrap(), "wait", &run, "--human"],
        120,
        20,
    );
    tmux.wait_for("1 run left: routes working", Duration::from_secs(30));
    tmux.send_keys(&["C-c"]);
    assert_ne!(tmux.wait_exit(Duration::from_secs(10)), 0);
    let out = env.crew(&repo, &["show", &run, "--json"]);
    assert_eq!(out.json()["run"]["phase"], "working");
    env.crew(&repo, &["abandon", &run]).expect_code(0);
}
