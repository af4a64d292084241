//! `git crew work`: a runner working a plan, alone and as machines of a fleet sharing one
//! bare remote (over `file://` and `git daemon` on 127.0.0.1), with real git, scripted
//! workers and no mock remote.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{Out, TestEnv, poll_until, write};

/// A plan's task: id, wave, dependencies.
struct Task<'a>(&'a str, u32, &'a [&'a str]);

/// A plan whose tasks each write `src/routes/<task>.rs` (what `slow.sh` writes) and
/// nothing else, with `gates` as TOML.
fn plan(tasks: &[Task<'_>], extra: &str) -> String {
    let mut out = String::from("[plan]\nid = \"p\"\n");
    for Task(id, wave, deps) in tasks {
        let deps: Vec<String> = deps.iter().map(|d| format!("\"{d}\"")).collect();
        out.push_str(&format!(
            "\n[[tasks]]\nid = \"{id}\"\nwave = {wave}\nscope = [\"src/routes/{id}.rs\"]\nprompt = \"Write src/routes/{id}.rs.\"\ndepends_on = [{}]\n",
            deps.join(", ")
        ));
    }
    out.push_str(extra);
    out
}

/// Commits `text` as plan `p` in `dir`.
fn commit_plan(env: &TestEnv, dir: &Path, text: &str) {
    write(&dir.join(".crew/plans/p.toml"), text);
    env.git_ok(dir, &["add", ".crew/plans/p.toml"]);
    env.git_ok(dir, &["commit", "-q", "-m", "plan p"]);
}

/// The runner's flags: the plan, the `slow` worker taking `seconds`, room for many runs.
fn work_args(seconds: u32, extra: &[&str]) -> Vec<String> {
    let mut args: Vec<String> = [
        "work",
        "--plan",
        "p",
        "--backend",
        "slow",
        "--poll",
        "200ms",
    ]
    .iter()
    .map(|a| a.to_string())
    .collect();
    for set in [
        format!("backends.slow.env.SLOW_SECONDS=\"{seconds}\""),
        "backends.slow.concurrency=50".to_string(),
    ] {
        args.push("--set".into());
        args.push(set);
    }
    args.extend(extra.iter().map(|a| a.to_string()));
    args
}

/// A `git crew work` running in the background, in a process group of its own that is
/// killed (with whatever it started there) however the test ends.
struct Runner {
    child: Option<Child>,
}

impl Runner {
    fn start(env: &TestEnv, dir: &Path, args: &[String]) -> Runner {
        let mut cmd = env.command(crate::common::bin());
        cmd.current_dir(dir)
            .args(args)
            .arg("--json")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        Runner {
            child: Some(cmd.spawn().unwrap()),
        }
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    fn interrupt(&self) {
        let status = Command::new("kill")
            .args(["-INT", &self.pid().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Waits for the runner to end (at most `limit`) and returns what it printed.
    fn finish(mut self, limit: Duration) -> Out {
        let mut child = self.child.take().unwrap();
        let start = Instant::now();
        while child.try_wait().unwrap().is_none() {
            if start.elapsed() > limit {
                kill_group(child.id());
                let out = child.wait_with_output().unwrap();
                panic!(
                    "the runner did not stop within {limit:?}\nstderr:\n{}",
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let output = child.wait_with_output().unwrap();
        Out {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

fn kill_group(pid: u32) {
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{pid}")])
        .stderr(Stdio::null())
        .status();
}

impl Drop for Runner {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            kill_group(child.id());
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Runs `git crew work` to its end.
fn work(env: &TestEnv, dir: &Path, args: &[String]) -> Out {
    Runner::start(env, dir, args).finish(Duration::from_secs(120))
}

/// Each task's outcome in the runner's account: (task, outcome), in the order taken.
fn taken(out: &Value) -> Vec<(String, String)> {
    out["taken"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["task"].as_str().unwrap().to_string(),
                t["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Each task's derived status, by `plan status`.
fn statuses(env: &TestEnv, dir: &Path) -> Vec<(String, String)> {
    env.crew(dir, &["plan", "status", "p"]).json()["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["task"].as_str().unwrap().to_string(),
                t["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The runs of this clone, live or finished: (task, run, outcome).
fn runs_of(env: &TestEnv, dir: &Path) -> Vec<(String, String, Value)> {
    env.crew(dir, &["status", "--all"]).json()["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["task"].as_str().unwrap().to_string(),
                r["run"].as_str().unwrap().to_string(),
                r["outcome"].clone(),
            )
        })
        .collect()
}

#[test]
fn alone_a_runner_lands_a_plan_in_dependency_order_and_exits_0() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    commit_plan(
        &env,
        &repo,
        &plan(
            &[
                Task("a", 1, &[]),
                Task("b", 1, &[]),
                Task("c", 1, &["a"]),
                Task("d", 1, &["c", "b"]),
            ],
            "",
        ),
    );
    let out = work(&env, &repo, &work_args(0, &["--max", "2"]));
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["ending"], "all-done", "{json}");
    assert_eq!(json["remote"], Value::Null);
    let mut landed = taken(&json);
    landed.sort();
    assert_eq!(
        landed,
        ["a", "b", "c", "d"].map(|t| (t.to_string(), "landed".to_string()))
    );
    assert!(statuses(&env, &repo).iter().all(|(_, s)| s == "done"));
    // Each task was cut from a base that holds what its dependencies landed.
    let base_of = |task: &str| -> String {
        let run = json["taken"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["task"] == task)
            .unwrap()["run"]
            .as_str()
            .unwrap()
            .to_string();
        env.crew(&repo, &["show", &run]).json()["run"]["base"]
            .as_str()
            .unwrap()
            .to_string()
    };
    env.git_ok(
        &repo,
        &[
            "cat-file",
            "-e",
            &format!("{}:src/routes/a.rs", base_of("c")),
        ],
    );
    for dep in ["b", "c"] {
        env.git_ok(
            &repo,
            &[
                "cat-file",
                "-e",
                &format!("{}:src/routes/{dep}.rs", base_of("d")),
            ],
        );
    }
    // Every change is on the target, each task landed once, and the checkout is clean.
    let log = env.git_ok(&repo, &["log", "--first-parent", "--format=%s", "main"]);
    for task in ["a", "b", "c", "d"] {
        assert_eq!(
            log.matches(&format!("(task {task}) into main")).count(),
            1,
            "{log}"
        );
        env.git_ok(
            &repo,
            &["cat-file", "-e", &format!("main:src/routes/{task}.rs")],
        );
    }
    assert_eq!(env.git_ok(&repo, &["status", "--porcelain"]), "");
    // Working it again finds nothing to do.
    let again = work(&env, &repo, &work_args(0, &[]));
    again.expect_code(0);
    assert_eq!(again.json()["taken"], serde_json::json!([]));
}

#[test]
fn a_task_that_fails_is_not_taken_again_its_dependents_wait_and_the_runner_exits_1() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    // Task `broken`'s verify never passes.
    let mut tasks = plan(&[Task("fine", 1, &[]), Task("after", 1, &["broken"])], "");
    tasks.push_str(
        "\n[[tasks]]\nid = \"broken\"\nwave = 1\nscope = [\"src/routes/broken.rs\"]\nprompt = \"x\"\nverify = \"false\"\n",
    );
    commit_plan(&env, &repo, &tasks);
    let out = work(&env, &repo, &work_args(0, &[]));
    out.expect_code(1);
    let json = out.json();
    assert_eq!(json["error"]["code"], "run-failed", "{json}");
    assert_eq!(json["ending"], "failed");
    assert_eq!(json["left"], serde_json::json!(["broken"]));
    let mut came = taken(&json);
    came.sort();
    assert_eq!(
        came,
        [("broken", "failed"), ("fine", "landed")].map(|(t, o)| (t.to_string(), o.to_string()))
    );
    // Tried once, not again; what depends on it never started.
    let runs = runs_of(&env, &repo);
    assert_eq!(runs.iter().filter(|(t, ..)| t == "broken").count(), 1);
    assert!(!runs.iter().any(|(t, ..)| t == "after"));
    let status = statuses(&env, &repo);
    assert!(
        status.contains(&("after".into(), "blocked".into())),
        "{status:?}"
    );
}

#[test]
fn a_gate_holds_its_waves_the_runner_exits_4_and_its_pass_lets_the_next_runner_on() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    commit_plan(
        &env,
        &repo,
        &plan(
            &[Task("one", 1, &[]), Task("two", 2, &[])],
            "\n[[gates]]\nid = \"g\"\nmeasure = \"m\"\nrequired_evidence = \"e\"\ncloses_wave = 1\ngates_waves = [2]\n",
        ),
    );
    let out = work(&env, &repo, &work_args(0, &[]));
    out.expect_code(4);
    let json = out.json();
    assert_eq!(json["error"]["code"], "plan-unfinished", "{json}");
    assert_eq!(json["left"], serde_json::json!(["two"]));
    let details = json["error"]["details"].to_string();
    assert!(details.contains("gate g has no verdict"), "{details}");
    assert_eq!(taken(&json), [("one".to_string(), "landed".to_string())]);
    env.crew(
        &repo,
        &[
            "gate",
            "record",
            "g",
            "--plan",
            "p",
            "--verdict",
            "pass",
            "--evidence",
            "ok",
        ],
    )
    .expect_code(0);
    let out = work(&env, &repo, &work_args(0, &[]));
    out.expect_code(0);
    assert_eq!(
        taken(&out.json()),
        [("two".to_string(), "landed".to_string())]
    );
}

/// Waits until `dir` has `n` live runs.
fn live_runs(dir: &Path, n: usize) {
    poll_until(Duration::from_secs(30), "live runs", || {
        std::fs::read_dir(dir.join(".git/crew/live"))
            .map(|d| {
                d.flatten()
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                    .count()
            })
            .unwrap_or(0)
            >= n
    });
}

#[test]
fn ctrl_c_once_takes_nothing_new_and_finishes_the_run_held() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    commit_plan(
        &env,
        &repo,
        &plan(
            &[Task("a", 1, &[]), Task("b", 1, &[]), Task("c", 1, &[])],
            "",
        ),
    );
    let runner = Runner::start(&env, &repo, &work_args(3, &["--max", "1"]));
    live_runs(&repo, 1);
    runner.interrupt();
    let out = runner.finish(Duration::from_secs(60));
    out.expect_code(4);
    let json = out.json();
    assert_eq!(json["interrupted"], true, "{json}");
    assert_eq!(json["error"]["code"], "plan-unfinished");
    // The run it held was finished and landed; nothing else was started.
    let came = taken(&json);
    assert_eq!(came.len(), 1, "{json}");
    assert_eq!(came[0].1, "landed");
    assert_eq!(runs_of(&env, &repo).len(), 1);
    let status = statuses(&env, &repo);
    assert_eq!(status.iter().filter(|(_, s)| s == "done").count(), 1);
    assert_eq!(status.iter().filter(|(_, s)| s == "ready").count(), 2);
    assert!(out.stderr.contains("work: stopping"), "{}", out.stderr);
}

/// The claim refs on the bare remote, by task.
fn claims_on(env: &TestEnv, bare: &Path) -> Vec<String> {
    env.git_ok(
        bare,
        &[
            "for-each-ref",
            "--format=%(refname:lstrip=3)",
            "refs/crew/claims/",
        ],
    )
    .lines()
    .map(str::to_string)
    .collect()
}

#[test]
fn ctrl_c_twice_hands_the_runs_back_and_lets_their_claims_go_on_the_remote() {
    let env = TestEnv::new();
    let (bare, clones) = crate::fleet::fleet(&env, &["a"], None);
    let a = &clones[0];
    commit_plan(
        &env,
        a,
        &plan(
            &[Task("x", 1, &[]), Task("y", 1, &[]), Task("z", 1, &["x"])],
            "",
        ),
    );
    env.git_ok(a, &["push", "-q", "origin", "main"]);
    let args = work_args(
        60,
        &[
            "--max",
            "2",
            "--remote",
            "origin",
            "--set",
            "fleet.machine=box-a",
        ],
    );
    let runner = Runner::start(&env, a, &args);
    poll_until(Duration::from_secs(30), "two claims on the remote", || {
        claims_on(&env, &bare).len() == 2
    });
    live_runs(a, 2);
    runner.interrupt();
    std::thread::sleep(Duration::from_millis(500));
    runner.interrupt();
    let out = runner.finish(Duration::from_secs(60));
    out.expect_code(4);
    let json = out.json();
    assert_eq!(json["interrupted"], true);
    assert_eq!(json["machine"], "box-a");
    let mut came = taken(&json);
    came.sort();
    assert_eq!(
        came,
        [("x", "handed-back"), ("y", "handed-back")].map(|(t, o)| (t.to_string(), o.to_string()))
    );
    // Both runs were abandoned, their branches kept; their claims are gone from the
    // remote, so another machine can take the tasks.
    for (task, run, outcome) in runs_of(&env, a) {
        assert_eq!(outcome, "abandoned", "{task}");
        env.git_ok(
            a,
            &[
                "rev-parse",
                "--verify",
                &format!("refs/heads/crew/{task}/{run}"),
            ],
        );
    }
    assert_eq!(claims_on(&env, &bare), Vec::<String>::new());
    assert!(out.stderr.contains("handing back"), "{}", out.stderr);
}

/// The thirty tasks of the fleet's plan: `t01`..`t20` in wave 1 (`t11`..`t20` each after
/// the task ten before it), `t21`..`t30` in wave 2 (each after the task ten before it),
/// which gate `g` holds until wave 1 has its verdict.
fn thirty() -> String {
    let ids: Vec<String> = (1..=30).map(|i| format!("t{i:02}")).collect();
    let deps: Vec<Vec<&str>> = (1..=30usize)
        .map(|i| match i {
            1..=10 => vec![],
            _ => vec![ids[i - 11].as_str()],
        })
        .collect();
    let tasks: Vec<Task<'_>> = (0..30)
        .map(|i| Task(&ids[i], if i < 20 { 1 } else { 2 }, &deps[i]))
        .collect();
    plan(
        &tasks,
        "\n[[gates]]\nid = \"g\"\nmeasure = \"wave 1 works\"\nrequired_evidence = \"its tests\"\ncloses_wave = 1\ngates_waves = [2]\n",
    )
}

/// Three runners at once, one a machine; what each printed, in the machines' order.
fn three_runners(env: &TestEnv, clones: &[PathBuf]) -> Vec<Out> {
    let runners: Vec<Runner> = clones
        .iter()
        .zip(["box-a", "box-b", "box-c"])
        .map(|(dir, machine)| {
            let machine = format!("fleet.machine={machine}");
            let args = work_args(1, &["--max", "3", "--remote", "origin", "--set", &machine]);
            Runner::start(env, dir, &args)
        })
        .collect();
    runners
        .into_iter()
        .map(|r| r.finish(Duration::from_secs(150)))
        .collect()
}

#[test]
fn three_machines_work_one_plan_through_git_daemon_and_every_task_lands_exactly_once() {
    let env = TestEnv::new();
    let daemon = crate::fleet::Daemon::start(env.root());
    let url = format!("git://127.0.0.1:{}/remote.git", daemon.port);
    let (bare, clones) = crate::fleet::fleet(&env, &["a", "b", "c"], Some(&url));
    let a = &clones[0];
    commit_plan(&env, a, &thirty());
    env.git_ok(a, &["push", "-q", "origin", "main"]);
    for clone in &clones[1..] {
        env.git_ok(clone, &["pull", "-q", "--ff-only", "origin", "main"]);
    }
    let planned = env.git_ok(&bare, &["rev-parse", "main"]).trim().to_string();

    // Wave 1, on three machines: then nothing is ready, the gate holds wave 2.
    let first = three_runners(&env, &clones);
    for out in &first {
        out.expect_code(4);
        let json = out.json();
        assert_eq!(json["error"]["code"], "plan-unfinished", "{json}");
        let left: Vec<String> = (21..=30).map(|i| format!("t{i:02}")).collect();
        assert_eq!(json["left"], serde_json::json!(left), "{json}");
    }
    // Its verdict, recorded on one machine, reaches the others through the remote.
    env.crew(
        a,
        &[
            "gate",
            "record",
            "g",
            "--plan",
            "p",
            "--verdict",
            "pass",
            "--evidence",
            "ok",
        ],
    )
    .expect_code(0);
    env.crew(a, &["sync"]).expect_code(0);
    let second = three_runners(&env, &clones);
    for out in &second {
        out.expect_code(0);
        assert_eq!(out.json()["ending"], "all-done");
    }

    // Every task landed exactly once, by the run the machine that claimed it dispatched.
    let mut landed: Vec<(String, String, String)> = Vec::new();
    for (out, machine) in first
        .iter()
        .chain(&second)
        .zip(["box-a", "box-b", "box-c"].iter().cycle())
    {
        let json = out.json();
        assert_eq!(json["machine"], *machine);
        for t in json["taken"].as_array().unwrap() {
            assert_eq!(t["outcome"], "landed", "{t}");
            landed.push((
                t["task"].as_str().unwrap().to_string(),
                t["run"].as_str().unwrap().to_string(),
                machine.to_string(),
            ));
        }
    }
    landed.sort();
    let tasks: Vec<String> = landed.iter().map(|(t, ..)| t.clone()).collect();
    let expected: Vec<String> = (1..=30).map(|i| format!("t{i:02}")).collect();
    assert_eq!(tasks, expected, "each task landed once");
    let log = env.git_ok(&bare, &["log", "--first-parent", "--format=%H %s", "main"]);
    for task in &expected {
        assert_eq!(
            log.matches(&format!("(task {task}) into main")).count(),
            1,
            "{log}"
        );
    }
    // The work was shared: each machine landed some.
    for machine in ["box-a", "box-b", "box-c"] {
        assert!(landed.iter().any(|(_, _, m)| m == machine), "{landed:?}");
    }

    // No task was ever claimed twice: every claim moved the serial ref (whose history
    // the remote keeps), and each task was claimed once, by the run that landed it.
    let reflog = std::fs::read_to_string(bare.join("logs/refs/crew/fleet")).unwrap();
    let mut claimed: Vec<(String, String, String)> = reflog
        .lines()
        .map(|line| {
            let new = line.split(' ').nth(1).unwrap();
            let text = env.git_ok(&bare, &["cat-file", "-p", new]);
            // claim <task> by <machine> (run <run>) at ...
            let words: Vec<&str> = text.split(' ').collect();
            (
                words[1].to_string(),
                words[5].trim_end_matches(')').to_string(),
                words[3].to_string(),
            )
        })
        .collect();
    claimed.sort();
    assert_eq!(
        claimed, landed,
        "one claim a task, by the run that landed it"
    );
    // Every claim was let go as its run landed.
    assert_eq!(claims_on(&env, &bare), Vec::<String>::new());

    // The remote's target has every change, and each landing changed its run's scope only.
    for task in &expected {
        env.git_ok(
            &bare,
            &["cat-file", "-e", &format!("main:src/routes/{task}.rs")],
        );
    }
    for line in log.lines() {
        let (commit, subject) = line.split_once(' ').unwrap();
        if commit == planned {
            break;
        }
        let task = subject
            .split("(task ")
            .nth(1)
            .and_then(|rest| rest.split(')').next())
            .unwrap_or_else(|| panic!("not a landing: {subject}"));
        let changed = env.git_ok(
            &bare,
            &["diff", "--name-only", &format!("{commit}^1"), commit],
        );
        for path in changed.lines() {
            assert!(
                path == format!("src/routes/{task}.rs") || path == "docs/state/crew.json",
                "{subject} changed {path}"
            );
        }
    }

    // After a sync, every clone's ledger holds every run's row.
    for clone in clones.iter().chain(&clones[..2]) {
        env.crew(clone, &["sync"]).expect_code(0);
    }
    let runs: Vec<String> = landed.iter().map(|(_, r, _)| r.clone()).collect();
    for clone in &clones {
        let rows = env.crew(clone, &["ledger"]).json()["rows"].clone();
        let mut seen: Vec<String> = rows
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["run"].as_str().unwrap().to_string())
            .collect();
        seen.sort();
        seen.dedup();
        let mut want = runs.clone();
        want.sort();
        assert_eq!(seen, want, "the ledger of {}", clone.display());
    }
    for dir in clones.iter().chain([&bare]) {
        let fsck = env.git(dir, &["fsck", "--no-progress"]);
        assert_eq!(fsck.code, 0, "{fsck:?}");
    }
}

/// Two machines sharing a bare remote, both with plan `p` of tasks x, y (after x) and z:
/// the remote, machine a's clone, machine b's.
fn two_machines_on_xyz(env: &TestEnv) -> (PathBuf, PathBuf, PathBuf) {
    let (bare, clones) = crate::fleet::fleet(env, &["a", "b"], None);
    let (a, b) = (&clones[0], &clones[1]);
    commit_plan(
        env,
        a,
        &plan(
            &[Task("x", 1, &[]), Task("y", 1, &["x"]), Task("z", 1, &[])],
            "",
        ),
    );
    env.git_ok(a, &["push", "-q", "origin", "main"]);
    env.git_ok(b, &["pull", "-q", "--ff-only", "origin", "main"]);
    (bare, a.clone(), b.clone())
}

/// Task x of plan `p` dispatched by hand on machine a (`box-a`), claimed on the remote,
/// its worker taking `seconds`; its run.
fn x_on_box_a(env: &TestEnv, a: &Path, seconds: u32, extra: &[&str]) -> String {
    let slow = format!("backends.slow.env.SLOW_SECONDS=\"{seconds}\"");
    let mut args = vec![
        "--plan",
        "p",
        "--remote",
        "origin",
        "--backend",
        "slow",
        "--set",
        &slow,
        "--set",
        "fleet.machine=box-a",
    ];
    args.extend(extra);
    env.dispatch(a, "x").args(&args).run_id()
}

#[test]
fn over_file_a_task_another_machine_holds_is_not_taken_and_what_depends_on_it_waits_for_it() {
    let env = TestEnv::new();
    let (bare, a, b) = two_machines_on_xyz(&env);
    let (a, b) = (&a, &b);
    // Machine a holds x, by hand.
    let run = x_on_box_a(&env, a, 3, &[]);
    // Machine b's runner takes z, leaves x to a, and waits for it before y.
    let runner = Runner::start(
        &env,
        b,
        &work_args(0, &["--remote", "origin", "--set", "fleet.machine=box-b"]),
    );
    env.wait(a, &run).run().expect_code(0);
    env.crew(a, &["integrate", &run, "--remote", "origin"])
        .expect_code(0);
    let out = runner.finish(Duration::from_secs(90));
    out.expect_code(0);
    let json = out.json();
    let mut came = taken(&json);
    came.sort();
    assert_eq!(
        came,
        [("y", "landed"), ("z", "landed")].map(|(t, o)| (t.to_string(), o.to_string()))
    );
    assert!(!runs_of(&env, b).iter().any(|(t, ..)| t == "x"));
    // y was cut from a base holding x, which landed from machine a.
    let y = json["taken"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["task"] == "y")
        .unwrap()["run"]
        .as_str()
        .unwrap()
        .to_string();
    let base = env.crew(b, &["show", &y]).json()["run"]["base"]
        .as_str()
        .unwrap()
        .to_string();
    env.git_ok(b, &["cat-file", "-e", &format!("{base}:src/routes/x.rs")]);
    for task in ["x", "y", "z"] {
        env.git_ok(
            &bare,
            &["cat-file", "-e", &format!("main:src/routes/{task}.rs")],
        );
    }
    assert_eq!(claims_on(&env, &bare), Vec::<String>::new());
}

#[test]
fn a_pass_another_machine_never_landed_is_not_taken_nor_waited_for() {
    let env = TestEnv::new();
    let (bare, a, b) = two_machines_on_xyz(&env);
    let (a, b) = (&a, &b);
    // Machine a's run of x passes, and a never lands it.
    let run = x_on_box_a(&env, a, 0, &["--set", "fleet.lease=\"1s\""]);
    env.wait(a, &run).run().expect_code(0);
    crate::common::poll_until(Duration::from_secs(20), "x's claim passed", || {
        env.git(&bare, &["cat-file", "-p", "refs/crew/claims/x"])
            .stdout
            .contains("passed_ms")
    });
    std::thread::sleep(Duration::from_millis(1_500));
    // A lease after it passed, b's runner takes z only, and stops: x awaits a person.
    let out = Runner::start(
        &env,
        b,
        &work_args(0, &["--remote", "origin", "--set", "fleet.machine=box-b"]),
    )
    .finish(Duration::from_secs(90));
    out.expect_code(4);
    let json = out.json();
    assert_eq!(taken(&json), [("z".to_string(), "landed".to_string())]);
    assert_eq!(json["left"], serde_json::json!(["x", "y"]), "{json}");
    assert_eq!(claims_on(&env, &bare), ["x".to_string()]);
    // Its own machine lands it still.
    env.crew(a, &["integrate", &run, "--remote", "origin"])
        .expect_code(0);
    assert_eq!(claims_on(&env, &bare), Vec::<String>::new());
}
