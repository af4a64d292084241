//! The roster: standing workers, their sessions across worktrees, one run per session.

use std::path::PathBuf;

use crate::common::{TestEnv, read, write};

fn roster_repo(env: &TestEnv) -> PathBuf {
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let flight = read(&repo.join(".crew/flight.toml"));
    write(
        &repo.join(".crew/flight.toml"),
        &format!(
            "{flight}[workers.mem]\nbackend = \"memory\"\nnote = \"keeps its session\"\n\
             [workers.sloth]\nbackend = \"hang\"\n"
        ),
    );
    env.git_ok(&repo, &["commit", "-q", "-am", "roster"]);
    repo
}

#[test]
fn a_standing_worker_resumes_its_session_in_each_new_worktree() {
    let env = TestEnv::new();
    let repo = roster_repo(&env);
    let dispatch = |task: &str| {
        let scope = format!("work/{task}.txt");
        let out = env.crew(
            &repo,
            &[
                "dispatch", "--task", task, "--worker", "mem", "--scope", &scope, "--prompt", "x",
            ],
        );
        out.expect_code(0);
        let json = out.json();
        env.crew(
            &repo,
            &["wait", json["run"].as_str().unwrap(), "--timeout", "60s"],
        )
        .expect_code(0);
        json
    };
    let first = dispatch("t1");
    assert_eq!(first["backend"], "memory");
    assert_eq!(
        first["session_plan"],
        "a fresh session: worker mem has none yet"
    );
    let run1 = first["run"].as_str().unwrap();
    let second = dispatch("t2");
    assert_eq!(
        second["session_plan"],
        format!("resumes worker mem's session mem-{run1}")
    );
    // The second task ran in the first task's session, in its own worktree.
    let wt = PathBuf::from(second["worktree"].as_str().unwrap());
    assert_eq!(
        read(&wt.join("work/t2.txt")),
        format!("session mem-{run1}\n")
    );

    let workers = env.crew(&repo, &["workers"]).json();
    let mem = workers["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["worker"] == "mem")
        .unwrap()
        .clone();
    assert_eq!(mem["session"], format!("mem-{run1}"));
    assert_eq!(mem["runs"], 2);
    assert_eq!(mem["pass_rate"], 1.0);
    assert_eq!(mem["busy_run"], serde_json::Value::Null);
    assert_eq!(mem["note"], "keeps its session");
}

#[test]
fn a_session_serves_one_run_at_a_time() {
    let env = TestEnv::new();
    let repo = roster_repo(&env);
    let out = env.crew(
        &repo,
        &[
            "dispatch", "--task", "long", "--worker", "sloth", "--scope", "a/", "--prompt", "x",
        ],
    );
    out.expect_code(0);
    let busy_run = out.json()["run"].as_str().unwrap().to_string();
    let args = [
        "dispatch", "--task", "next", "--worker", "sloth", "--scope", "b/", "--prompt", "x",
    ];
    let out = env.crew(&repo, &args);
    out.expect_code(4);
    assert!(
        out.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&format!("worker sloth is busy with run {busy_run}")),
        "{}",
        out.stdout
    );
    let mut queued = args.to_vec();
    queued.push("--queue");
    let out = env.crew(&repo, &queued);
    out.expect_code(0);
    assert_eq!(out.json()["phase"], "queued");
    let waiting = out.json()["run"].as_str().unwrap().to_string();
    let roster = env.crew(&repo, &["workers"]).json();
    let sloth = roster["workers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["worker"] == "sloth")
        .unwrap()
        .clone();
    assert_eq!(sloth["busy_run"], busy_run.as_str());
    assert_eq!(sloth["queued"], 1);
    // When the busy run ends, the queued one takes the worker.
    env.crew(&repo, &["abandon", &busy_run]).expect_code(0);
    let shown = env.crew(&repo, &["show", &waiting]).json();
    assert_ne!(shown["run"]["phase"], "queued", "{shown}");
    env.crew(&repo, &["abandon", &waiting]);
}

#[test]
fn with_no_standing_worker_workers_reads_no_run_and_answers_empty() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let finished = env.finished_run(&repo, "done", "ok", &["--scope", "src/routes/**"]);
    // Runs on record, and a ledger and a live pointer that cannot be read: a roster with
    // no standing worker reads none of them, so none of them fails it.
    let ledger = env.git_ok(&repo, &["rev-parse", "refs/notes/crew-ledger"]);
    let ledger = ledger.trim();
    let blob = env.git_ok(&repo, &["rev-parse", "HEAD:README.md"]);
    let blob = blob.trim();
    env.git_ok(&repo, &["update-ref", "refs/notes/crew-ledger", blob]);
    write(
        &repo.join(".git/crew/live/20250101-000000-dead.json"),
        "{ not json",
    );
    let out = env.crew(&repo, &["workers"]);
    out.expect_code(0);
    assert_eq!(out.json(), serde_json::json!({ "ok": true, "workers": [] }));
    let human = env.crew(&repo, &["workers", "--human"]);
    human.expect_code(0);
    assert!(
        human.stdout.starts_with("no standing workers"),
        "{}",
        human.stdout
    );

    // Name one standing worker: the ledger is read again, for its runs and pass rate.
    env.git_ok(&repo, &["update-ref", "refs/notes/crew-ledger", ledger]);
    std::fs::remove_file(repo.join(".git/crew/live/20250101-000000-dead.json")).unwrap();
    let flight = read(&repo.join(".crew/flight.toml"));
    write(
        &repo.join(".crew/flight.toml"),
        &format!("{flight}[workers.steady]\nbackend = \"ok\"\n"),
    );
    env.git_ok(&repo, &["commit", "-q", "-am", "one standing worker"]);
    let run = env
        .dispatch(&repo, "steady-task")
        .args(&["--worker", "steady", "--scope", "src/routes/**"])
        .prompt("x")
        .finished();
    assert_ne!(run, finished);
    let roster = env.crew(&repo, &["workers"]).json();
    let steady = &roster["workers"][0];
    assert_eq!(steady["worker"], "steady", "{roster}");
    assert_eq!(steady["runs"], 1, "{roster}");
    assert_eq!(steady["passes"], 1, "{roster}");
    assert_eq!(steady["pass_rate"], 1.0, "{roster}");
    assert_eq!(roster["workers"].as_array().unwrap().len(), 1);
}
