//! `[notify] command`: told once per change to needs-help, done, failed, rejected or
//! timed-out, with the run result on stdin; never when a run is abandoned; and whatever
//! the command does — fail, hang, leave something running — the run's outcome stands.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::common::{TestEnv, poll_until, processes_with, read, write};

fn crew_repo(env: &TestEnv) -> PathBuf {
    env.fixture("crew-repo.sh", "repo", &[])
}

/// A notify command that files each notification it gets in `dir`: `<n>.json` (its
/// stdin), `<n>.env` (its working directory and the `GIT_CREW_*` variables), in order.
fn recorder(env: &TestEnv) -> (PathBuf, String) {
    let dir = env.root().join("notes");
    std::fs::create_dir_all(&dir).unwrap();
    let script = env.root().join("record.sh");
    write(
        &script,
        "#!/bin/sh\nset -eu\nn=$(ls \"$1\" | grep -c '\\.json$' || true)\ncat > \"$1/$n.json.tmp\"\n\
         printf '%s\\n' \"$(pwd)\" \"$GIT_CREW_RUN\" \"$GIT_CREW_TASK\" \"$GIT_CREW_PHASE\" \"$GIT_CREW_OUTCOME\" \"${CREW_RUN:-none}\" > \"$1/$n.env\"\n\
         mv \"$1/$n.json.tmp\" \"$1/$n.json\"\n",
    );
    make_executable(&script);
    let set = format!(
        "notify.command=[\"{}\", \"{}\"]",
        script.display(),
        dir.display()
    );
    (dir, set)
}

fn make_executable(path: &Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The notifications filed in `dir`, in order.
fn notes(dir: &Path) -> Vec<Value> {
    let mut out = Vec::new();
    while let Ok(text) = std::fs::read_to_string(dir.join(format!("{}.json", out.len()))) {
        out.push(serde_json::from_str(&text).expect("one JSON document"));
    }
    out
}

/// Waits for the `n`th notification, then a moment more to see that no other comes.
#[track_caller]
fn expect_notes(dir: &Path, n: usize) -> Vec<Value> {
    poll_until(
        Duration::from_secs(30),
        &format!("{n} notifications"),
        || notes(dir).len() >= n,
    );
    std::thread::sleep(Duration::from_millis(500));
    let got = notes(dir);
    assert_eq!(got.len(), n, "{got:#?}");
    got
}

/// Whether process `pid` is gone (or a zombie, dead but not yet reaped).
fn gone(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

fn supervisor_log(repo: &Path, run: &str) -> String {
    read(&repo.join(format!(".git/crew/runs/{run}/supervisor.log")))
}

#[test]
fn a_passing_run_notifies_once_with_its_run_result_on_stdin() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let (dir, set) = recorder(&env);
    let run = env
        .dispatch(&repo, "routes")
        .backend("ok")
        .scope("src/routes/**")
        .set(&set)
        .finished();
    let got = expect_notes(&dir, 1);
    let note = &got[0];
    assert_eq!(note["run"], run.as_str());
    assert_eq!(note["phase"], "done");
    assert_eq!(note["outcome"], "pass");
    assert_eq!(note["footer"]["result"], "Added src/routes/crew.rs.");
    // The same object as `show --json`'s "run", key for key.
    let shown = env.crew(&repo, &["show", &run, "--json"]).json()["run"].clone();
    let keys = |v: &Value| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
    assert_eq!(keys(note), keys(&shown));
    assert_eq!(note["finished_at"], shown["finished_at"]);
    // In the repository, with the run named, and nothing that says it works for the run.
    let vars = read(&dir.join("0.env"));
    let vars: Vec<&str> = vars.lines().collect();
    assert_eq!(
        std::fs::canonicalize(vars[0]).unwrap(),
        std::fs::canonicalize(&repo).unwrap()
    );
    assert_eq!(vars[1..], [run.as_str(), "routes", "done", "pass", "none"]);
    assert!(supervisor_log(&repo, &run).contains("told of done"));
}

#[test]
fn a_run_that_asks_for_help_notifies_then_again_when_it_ends() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let (dir, set) = recorder(&env);
    let run = env
        .dispatch(&repo, "routes")
        .backend("help-then-work")
        .scope("src/routes/**")
        .set(&set)
        .finished();
    let got = expect_notes(&dir, 1);
    assert_eq!(got[0]["phase"], "needs-help");
    assert_eq!(got[0]["outcome"], Value::Null);
    assert_eq!(got[0]["needs_help"]["options"], "sqlite | postgres");
    // Answered, it works again (no notification) and ends: one more.
    env.crew(&repo, &["advise", &run, "--text", "sqlite"])
        .expect_code(0);
    env.wait(&repo, &run).run().expect_code(0);
    let got = expect_notes(&dir, 2);
    assert_eq!(got[1]["phase"], "done");
    assert_eq!(got[1]["outcome"], "pass");
}

#[test]
fn failed_rejected_and_timed_out_runs_notify_and_an_abandoned_one_does_not() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let (dir, set) = recorder(&env);
    let failed = env
        .dispatch(&repo, "failing")
        .backend("ok")
        .scope("src/routes/**")
        .verify("false")
        .set(&set)
        .finished();
    let got = expect_notes(&dir, 1);
    assert_eq!(
        (&got[0]["run"], &got[0]["phase"], &got[0]["outcome"]),
        (
            &Value::from(failed),
            &Value::from("failed"),
            &Value::from("fail")
        )
    );
    let rejected = env
        .dispatch(&repo, "wide")
        .backend("out-of-scope")
        .scope("src/routes/**")
        .set(&set)
        .finished();
    let got = expect_notes(&dir, 2);
    assert_eq!(got[1]["run"], rejected.as_str());
    assert_eq!(got[1]["phase"], "rejected");
    assert_eq!(got[1]["outcome"], "scope-reject");
    let timed_out = env
        .dispatch(&repo, "forever")
        .backend("hang")
        .scope("src/forever/**")
        .args(&["--time-budget", "2s"])
        .set(&set)
        .finished();
    let got = expect_notes(&dir, 3);
    assert_eq!(got[2]["run"], timed_out.as_str());
    assert_eq!(got[2]["phase"], "timed-out");
    assert_eq!(got[2]["outcome"], "timeout");
    // The lead ended it: nothing to tell.
    let abandoned = env
        .dispatch(&repo, "dropped")
        .backend("hang")
        .scope("src/dropped/**")
        .set(&set)
        .run_id();
    env.crew(&repo, &["abandon", &abandoned]).expect_code(0);
    expect_notes(&dir, 3);
}

#[test]
fn a_notifier_that_hangs_is_killed_with_its_group_and_the_run_still_ends() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    // It reads nothing, leaves a child in its group, and never exits by itself.
    let script = env.root().join("hang-notify.sh");
    let pids = env.root().join("notifier-pids");
    write(
        &script,
        &format!(
            "#!/bin/sh\nsleep 317 &\necho \"$$ $!\" > '{}'\nexec sleep 318\n",
            pids.display()
        ),
    );
    make_executable(&script);
    let run = env
        .dispatch(&repo, "routes")
        .backend("ok")
        .scope("src/routes/**")
        .set(&format!("notify.command=[\"{}\"]", script.display()))
        .set("notify.timeout=\"1s\"")
        .run_id();
    let (out, result) = env.wait(&repo, &run).result();
    out.expect_code(0);
    assert_eq!(result["outcome"], "pass");
    poll_until(Duration::from_secs(10), "the notifier to start", || {
        pids.exists()
    });
    let pids = read(&pids);
    poll_until(Duration::from_secs(10), "the notifier to be killed", || {
        pids.split_whitespace().all(gone)
    });
    poll_until(Duration::from_secs(10), "the supervisor to exit", || {
        processes_with(&format!("supervise\0{run}")) == 0
    });
    assert!(
        supervisor_log(&repo, &run).contains("took longer than 1s when told of done: killed"),
        "{}",
        supervisor_log(&repo, &run)
    );
    let (_, again) = env.wait(&repo, &run).result();
    assert_eq!(again["outcome"], "pass");
}

#[test]
fn a_notifier_that_fails_or_is_missing_changes_nothing() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    // Fails loudly, and leaves a daemon holding its output open: the supervisor must not
    // wait for that.
    let script = env.root().join("bad-notify.sh");
    let daemon = env.root().join("daemon-pid");
    write(
        &script,
        &format!(
            "#!/bin/sh\nsetsid sleep 300 &\necho $! > '{}'\necho 'cannot reach the chat server' >&2\nexit 3\n",
            daemon.display()
        ),
    );
    make_executable(&script);
    let run = env
        .dispatch(&repo, "routes")
        .backend("ok")
        .scope("src/routes/**")
        .set(&format!("notify.command=[\"{}\"]", script.display()))
        .run_id();
    let (out, result) = env.wait(&repo, &run).result();
    out.expect_code(0);
    assert_eq!(result["outcome"], "pass");
    poll_until(Duration::from_secs(10), "the supervisor to exit", || {
        processes_with(&format!("supervise\0{run}")) == 0
    });
    let log = supervisor_log(&repo, &run);
    assert!(log.contains("cannot reach the chat server"), "{log}");
    assert!(log.contains("exited 3 when told of done"), "{log}");
    // The daemon it left came back to the supervisor, which ended it before it went.
    let daemon = read(&daemon);
    let alive = || std::path::Path::new(&format!("/proc/{}", daemon.trim())).exists();
    poll_until(
        Duration::from_secs(10),
        "the notifier's daemon to be gone",
        || {
            !alive()
                || std::fs::read_to_string(format!("/proc/{}/stat", daemon.trim()))
                    .is_ok_and(|s| s.contains(") Z "))
        },
    );

    // A program that is not there: said in the log, nothing else.
    let run = env
        .dispatch(&repo, "auth")
        .backend("ok")
        .scope("src/routes/**")
        .set("notify.command=[\"./no-such-notifier\"]")
        .run_id();
    let (out, result) = env.wait(&repo, &run).result();
    out.expect_code(0);
    assert_eq!(result["outcome"], "pass");
    poll_until(Duration::from_secs(10), "the log line", || {
        supervisor_log(&repo, &run).contains("`./no-such-notifier` could not be started")
    });
}

#[test]
fn a_native_run_delivered_by_the_lead_notifies_too() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let (dir, set) = recorder(&env);
    let out = env
        .dispatch(&repo, "routes")
        .backend("native")
        .scope("src/routes/**")
        .set(&set)
        .run();
    out.expect_code(0);
    let run = out.json()["run"].as_str().unwrap().to_string();
    env.crew(&repo, &["attach", &run, "--session", "lead-1"])
        .expect_code(0);
    let reply = env.root().join("reply.md");
    write(
        &reply,
        "## Result\nNothing to change.\n## How to verify\ntrue\n## Deferred / concerns\nNone.\n",
    );
    env.crew(
        &repo,
        &["deliver", &run, "--reply-file", reply.to_str().unwrap()],
    )
    .expect_code(0);
    let got = expect_notes(&dir, 1);
    assert_eq!(got[0]["run"], run.as_str());
    assert_eq!(got[0]["phase"], "done");
}
