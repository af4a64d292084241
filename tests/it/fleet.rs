//! A fleet: clones standing for machines, claiming tasks on one bare remote (over
//! `file://` and over `git daemon` on 127.0.0.1), with real git and no mock remote.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::Duration;

use crate::common::{Out, TestEnv, poll_until, write};

/// A bare remote made from crew-repo.sh (every ref update logged, so its claims' history
/// can be read), and `names.len()` initialised clones of it, cloned from `url` (the
/// bare repository's path when none).
pub fn fleet(env: &TestEnv, names: &[&str], url: Option<&str>) -> (PathBuf, Vec<PathBuf>) {
    let origin = env.fixture("crew-repo.sh", "origin", &[]);
    let bare = env.root().join("remote.git");
    env.git_ok(
        env.root(),
        &[
            "clone",
            "-q",
            "--bare",
            origin.to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
    );
    env.git_ok(&bare, &["config", "core.logAllRefUpdates", "always"]);
    let url = url.map_or_else(|| format!("file://{}", bare.display()), str::to_string);
    let clones = names
        .iter()
        .map(|name| {
            let dir = env.root().join(name);
            env.git_ok(env.root(), &["clone", "-q", &url, dir.to_str().unwrap()]);
            env.crew(&dir, &["init"]).expect_code(0);
            dir
        })
        .collect();
    (bare, clones)
}

/// `dispatch --remote origin` as machine `machine`, with `extra` flags.
fn claim(env: &TestEnv, dir: &Path, machine: &str, task: &str, extra: &[&str]) -> Out {
    let args = fleet_args(machine, task, extra);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    env.dispatch(dir, task).prompt("x").args(&args).run()
}

/// A fleet dispatch's flags as machine `machine`: the scope `work/<task>/**` unless
/// `extra` names one, and room for many runs of the scripted backends at once.
fn fleet_args(machine: &str, task: &str, extra: &[&str]) -> Vec<String> {
    let mut args = strings(&["--remote", "origin", "--set"]);
    args.push(format!("fleet.machine={machine}"));
    for backend in ["ok", "slow", "no-footer"] {
        args.push("--set".into());
        args.push(format!("backends.{backend}.concurrency=50"));
    }
    if !extra.contains(&"--scope") {
        args.push("--scope".into());
        args.push(format!("work/{task}/**"));
    }
    args.extend(strings(extra));
    args
}

/// The claim refs on the bare remote: task → the claim's JSON.
fn claims_on(env: &TestEnv, bare: &Path) -> Vec<(String, serde_json::Value)> {
    env.git_ok(
        bare,
        &["for-each-ref", "--format=%(refname)", "refs/crew/claims/"],
    )
    .lines()
    .map(|name| {
        let text = env.git_ok(bare, &["cat-file", "-p", name]);
        (
            name.trim_start_matches("refs/crew/claims/").to_string(),
            serde_json::from_str(&text).unwrap(),
        )
    })
    .collect()
}

/// The same claims started at once (each a process of its own), their ends in order.
fn at_once(env: &TestEnv, claims: &[(&Path, &str, &str, Vec<String>)]) -> Vec<Out> {
    let children: Vec<_> = claims
        .iter()
        .map(|(dir, machine, task, extra)| {
            let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
            let mut cmd = env.command(crate::common::bin());
            cmd.current_dir(dir)
                .args(["dispatch", "--task", task, "--prompt", "x"])
                .args(fleet_args(machine, task, &extra))
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            cmd.spawn().unwrap()
        })
        .collect();
    children
        .into_iter()
        .map(|child| {
            let output = child.wait_with_output().unwrap();
            Out {
                code: output.status.code().unwrap_or(-1),
                stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
            }
        })
        .collect()
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

fn slow(seconds: u32) -> String {
    format!("backends.slow.env.SLOW_SECONDS=\"{seconds}\"")
}

#[test]
fn of_two_machines_claiming_one_task_exactly_one_wins_and_the_other_is_told_which() {
    let env = TestEnv::new();
    let (bare, clones) = fleet(&env, &["a", "b"], None);
    for round in 0..3 {
        let task = format!("race-{round}");
        let set = slow(3);
        let extra = strings(&["--backend", "slow", "--set", &set]);
        let outs = at_once(
            &env,
            &[
                (&clones[0], "box-a", &task, extra.clone()),
                (&clones[1], "box-b", &task, extra),
            ],
        );
        let won: Vec<usize> = (0..2).filter(|&i| outs[i].code == 0).collect();
        assert_eq!(won.len(), 1, "round {round}: {outs:?}");
        let (winner, loser) = (won[0], 1 - won[0]);
        let refused = &outs[loser];
        refused.expect_code(4);
        let error = &refused.json()["error"];
        assert_eq!(error["code"], "dispatch-refused", "{error}");
        let machine = ["box-a", "box-b"][winner];
        assert!(
            error["message"]
                .as_str()
                .unwrap()
                .contains(&format!("on machine {machine}")),
            "{error}"
        );
        // The loser made nothing: no run, no branch of the task.
        let branches = env.git_ok(&clones[loser], &["branch", "--list", "crew/*"]);
        assert!(!branches.contains(&task), "{branches}");
        // The remote holds the winner's claim.
        let claims = claims_on(&env, &bare);
        let (_, held) = claims.iter().find(|(t, _)| *t == task).unwrap();
        assert_eq!(held["machine"], machine);
        assert_eq!(held["run"], outs[winner].json()["run"]);
    }
}

#[test]
fn a_scope_held_on_another_machine_is_refused_and_racing_overlaps_never_both_win() {
    let env = TestEnv::new();
    let (bare, clones) = fleet(&env, &["a", "b"], None);
    let (a, b) = (&clones[0], &clones[1]);
    let set = slow(4);
    claim(
        &env,
        a,
        "box-a",
        "users",
        &[
            "--backend",
            "slow",
            "--set",
            &set,
            "--scope",
            "src/users/**",
        ],
    )
    .expect_code(0);
    let out = claim(
        &env,
        b,
        "box-b",
        "accounts",
        &["--backend", "slow", "--set", &set, "--scope", "src/**"],
    );
    out.expect_code(4);
    let message = out.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("overlaps"), "{message}");
    assert!(message.contains("on machine box-a"), "{message}");
    // A scope that does not overlap is claimed at once.
    claim(
        &env,
        b,
        "box-b",
        "docs",
        &["--backend", "slow", "--set", &set, "--scope", "docs/**"],
    )
    .expect_code(0);

    // Two different tasks with overlapping scopes, claimed at the same instant from two
    // machines, again and again: never both (the serial ref makes one read again).
    for round in 0..4 {
        let scope = format!("lib{round}/**");
        let extra = strings(&["--backend", "slow", "--set", &set, "--scope", &scope]);
        let (x, y) = (format!("x-{round}"), format!("y-{round}"));
        let outs = at_once(
            &env,
            &[(a, "box-a", &x, extra.clone()), (b, "box-b", &y, extra)],
        );
        let won = outs.iter().filter(|o| o.code == 0).count();
        assert_eq!(won, 1, "round {round}: {outs:?}");
        assert!(outs.iter().any(|o| o.code == 4), "{outs:?}");
    }
    let claims = claims_on(&env, &bare);
    let tasks: Vec<&str> = claims.iter().map(|(t, _)| t.as_str()).collect();
    assert!(
        tasks.contains(&"users") && tasks.contains(&"docs"),
        "{tasks:?}"
    );
    assert!(!tasks.contains(&"accounts"), "{tasks:?}");
}

#[test]
fn a_run_that_ends_lets_its_claim_go_and_a_pass_lets_it_go_when_integrated() {
    let env = TestEnv::new();
    let (bare, clones) = fleet(&env, &["a"], None);
    let a = &clones[0];
    // A failure lets go when it ends.
    let out = claim(&env, a, "box-a", "broken", &["--backend", "no-footer"]);
    out.expect_code(0);
    let run = out.json()["run"].as_str().unwrap().to_string();
    env.wait(a, &run).run();
    poll_until(
        Duration::from_secs(20),
        "the failure's claim let go",
        || !claims_on(&env, &bare).iter().any(|(t, _)| t == "broken"),
    );
    // A pass holds its task until it is integrated.
    let out = claim(
        &env,
        a,
        "box-a",
        "routes",
        &["--backend", "ok", "--scope", "src/routes/**"],
    );
    out.expect_code(0);
    let run = out.json()["run"].as_str().unwrap().to_string();
    env.wait(a, &run).run().expect_code(0);
    assert!(
        claims_on(&env, &bare).iter().any(|(t, _)| t == "routes"),
        "a pass awaiting integration keeps its claim"
    );
    // Its commits are on the remote, under the ref its claim names (pushed right after
    // the run is filed, which is when `wait` returns).
    let attempt = format!("refs/crew/attempts/{run}");
    poll_until(
        Duration::from_secs(20),
        "the run's commits on the remote",
        || {
            env.git(&bare, &["rev-parse", "-q", "--verify", &attempt])
                .code
                == 0
        },
    );
    let held = claims_on(&env, &bare);
    assert_eq!(held[0].1["attempt_ref"], attempt.as_str());
    let kept = env.git_ok(&bare, &["show", &format!("{attempt}:src/routes/crew.rs")]);
    assert!(kept.contains("pub fn crew"), "{kept}");
    env.crew(a, &["integrate", &run]).expect_code(0);
    assert!(
        !claims_on(&env, &bare).iter().any(|(t, _)| t == "routes"),
        "integrated, the claim is let go"
    );
    // The task can be claimed again.
    claim(&env, a, "box-a", "routes", &["--backend", "no-footer"]).expect_code(0);
}

#[test]
fn a_live_run_renews_its_lease_and_a_dead_machines_claim_is_taken_over() {
    let env = TestEnv::new();
    let (bare, clones) = fleet(&env, &["a", "b"], None);
    let (a, b) = (&clones[0], &clones[1]);
    let lease = "fleet.lease=\"2s\"";
    // A worker that commits, then works on for a long time.
    let out = claim(
        &env,
        a,
        "box-a",
        "long",
        &["--backend", "commits-then-hangs", "--set", lease],
    );
    out.expect_code(0);
    let run = out.json()["run"].as_str().unwrap().to_string();
    let first = claims_on(&env, &bare)[0].1.clone();
    // Renewed while it lives: the lease moves on, and b is refused well past one lease.
    poll_until(Duration::from_secs(10), "a renewal", || {
        claims_on(&env, &bare)[0].1["renewed_ms"] != first["renewed_ms"]
    });
    std::thread::sleep(Duration::from_secs(3));
    claim(
        &env,
        b,
        "box-b",
        "long",
        &["--backend", "no-footer", "--set", lease],
    )
    .expect_code(4);

    // Machine a dies: its supervisor and worker are killed outright.
    let pointer = a.join(".git/crew/live").join(format!("{run}.json"));
    let live: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&pointer).unwrap()).unwrap();
    // The worker's process group, then its supervisor.
    let worker = live["pid"].as_i64().unwrap();
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{worker}")])
        .status();
    let supervisor = live["supervisor_pid"].as_i64().unwrap();
    let _ = Command::new("kill")
        .args(["-KILL", &supervisor.to_string()])
        .status();
    // Once its lease runs out, b takes the task over.
    poll_until(Duration::from_secs(15), "a takeover", || {
        claim(
            &env,
            b,
            "box-b",
            "long",
            &["--backend", "no-footer", "--set", lease],
        )
        .code
            == 0
    });
    let claims = claims_on(&env, &bare);
    assert_eq!(claims.len(), 1);
    assert_eq!(claims[0].1["machine"], "box-b");
    // The claim's history on the remote: a's create and renewals, then b's takeover,
    // each a swap on the value before (the reflog's old value is the previous new one).
    let log = std::fs::read_to_string(bare.join("logs/refs/crew/claims/long")).unwrap();
    let entries: Vec<(&str, &str)> = log
        .lines()
        .map(|l| {
            let mut parts = l.split(' ');
            (parts.next().unwrap(), parts.next().unwrap())
        })
        .collect();
    assert!(entries.len() >= 3, "{log}");
    assert!(entries[0].0.chars().all(|c| c == '0'), "{log}");
    for pair in entries.windows(2) {
        assert_eq!(
            pair[1].0, pair[0].1,
            "every update swaps the value before: {log}"
        );
    }
}

#[test]
fn a_remote_that_refuses_the_claim_is_named_and_nothing_is_half_pushed_or_made() {
    let env = TestEnv::new();
    let (bare, clones) = fleet(&env, &["a"], None);
    let a = &clones[0];
    let hook = bare.join("hooks/pre-receive");
    write(
        &hook,
        "#!/bin/sh\nwhile read old new ref; do case $ref in refs/crew/claims/*) echo \"claims are not allowed here\"; exit 1;; esac; done\n",
    );
    let mut perms = std::fs::metadata(&hook).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&hook, perms).unwrap();
    let out = claim(&env, a, "box-a", "routes", &["--backend", "ok"]);
    out.expect_code(4);
    let error = &out.json()["error"];
    assert_eq!(error["code"], "remote-refused", "{error}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("claims are not allowed here"),
        "{error}"
    );
    // Nothing moved on the remote (the serial ref neither), nothing was made here.
    let refs = env.git_ok(&bare, &["for-each-ref", "refs/crew/"]);
    assert_eq!(refs, "", "{refs}");
    let branches = env.git_ok(a, &["branch", "--list", "crew/*"]);
    assert_eq!(branches.trim(), "");
    assert_eq!(
        env.crew(a, &["status", "--all"]).json()["runs"]
            .as_array()
            .map_or(0, Vec::len),
        0
    );
}

#[test]
fn a_remote_that_is_not_there_is_a_clear_error_and_nothing_is_made() {
    let env = TestEnv::new();
    let (_, clones) = fleet(&env, &["a"], None);
    let a = &clones[0];
    let out = env
        .dispatch(a, "routes")
        .args(&[
            "--remote",
            "nowhere",
            "--backend",
            "ok",
            "--scope",
            "src/**",
        ])
        .run();
    out.expect_code(3);
    assert_eq!(out.json()["error"]["code"], "remote-not-found");
    env.git_ok(a, &["remote", "add", "gone", "/nonexistent/remote.git"]);
    let out = env
        .dispatch(a, "routes")
        .args(&["--remote", "gone", "--backend", "ok", "--scope", "src/**"])
        .run();
    out.expect_code(4);
    assert_eq!(out.json()["error"]["code"], "fetch-failed");
    let branches = env.git_ok(a, &["branch", "--list", "crew/*"]);
    assert_eq!(branches.trim(), "");
}

/// `git daemon` serving `base` on a free port of 127.0.0.1, pushes allowed.
pub struct Daemon {
    child: Child,
    pub port: u16,
}

impl Daemon {
    pub fn start(base: &Path) -> Daemon {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("git")
            .args([
                "daemon",
                "--reuseaddr",
                "--export-all",
                "--enable=receive-pack",
                "--listen=127.0.0.1",
                &format!("--port={port}"),
                &format!("--base-path={}", base.display()),
                &base.display().to_string(),
            ])
            // Its own process group: `git daemon` runs `git-daemon`, which forks a
            // process per connection; all of them go when the test ends.
            .process_group(0)
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        poll_until(Duration::from_secs(10), "git daemon listening", || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        Daemon { child, port }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stderr(std::process::Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn claims_race_the_same_over_git_daemon_on_loopback() {
    let env = TestEnv::new();
    let daemon = Daemon::start(env.root());
    let url = format!("git://127.0.0.1:{}/remote.git", daemon.port);
    // The bare repository is made before the daemon is asked for it.
    let (bare, clones) = fleet(&env, &["a", "b", "c"], Some(&url));
    let set = slow(3);
    let extra = strings(&["--backend", "slow", "--set", &set]);
    let outs = at_once(
        &env,
        &[
            (&clones[0], "box-a", "one", extra.clone()),
            (&clones[1], "box-b", "one", extra.clone()),
            (&clones[2], "box-c", "one", extra),
        ],
    );
    assert_eq!(outs.iter().filter(|o| o.code == 0).count(), 1, "{outs:?}");
    assert_eq!(outs.iter().filter(|o| o.code == 4).count(), 2, "{outs:?}");
    assert_eq!(claims_on(&env, &bare).len(), 1);
    let fsck = env.git(&bare, &["fsck", "--no-progress"]);
    assert_eq!(fsck.code, 0, "{fsck:?}");
}
