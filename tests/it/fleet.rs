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
    let bare = bare_remote(env, &origin);
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

/// A bare clone of `origin` at `remote.git` in the test's folder (where `Daemon` serves
/// it), every ref update logged so its claims' history can be read.
pub fn bare_remote(env: &TestEnv, origin: &Path) -> PathBuf {
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
    bare
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
    // Each claim's blob by its id, which stays readable when its ref is let go meanwhile.
    env.git_ok(
        bare,
        &[
            "for-each-ref",
            "--format=%(refname) %(objectname)",
            "refs/crew/claims/",
        ],
    )
    .lines()
    .map(|line| {
        let (name, id) = line.split_once(' ').unwrap();
        let text = env.git_ok(bare, &["cat-file", "-p", id]);
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

/// Puts a claim blob of `text` on the bare remote for `task`, as another machine would.
fn plant_claim(env: &TestEnv, bare: &Path, task: &str, text: &str) {
    let blob = env
        .command("git")
        .current_dir(bare)
        .args(["hash-object", "-w", "--stdin"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(text.as_bytes())?;
            child.wait_with_output()
        })
        .unwrap();
    let id = String::from_utf8(blob.stdout).unwrap();
    env.git_ok(
        bare,
        &["update-ref", &format!("refs/crew/claims/{task}"), id.trim()],
    );
}

/// What a read must leave as it found it: every ref but the remote's claims as fetched,
/// and every file of git-crew's folder.
fn local_state(env: &TestEnv, dir: &Path) -> (String, Vec<String>) {
    let refs = env
        .git_ok(dir, &["for-each-ref", "--format=%(refname) %(objectname)"])
        .lines()
        .filter(|l| !l.starts_with("refs/crew/remotes/"))
        .collect::<Vec<_>>()
        .join("\n");
    fn walk(dir: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else {
                let len = entry.metadata().map(|m| m.len()).unwrap_or(0);
                out.push(format!("{} {len}", path.display()));
            }
        }
    }
    let mut files = Vec::new();
    walk(&dir.join(".git/crew"), &mut files);
    files.sort();
    (refs, files)
}

fn fleet_status(env: &TestEnv, dir: &Path, extra: &[&str]) -> Out {
    let mut args = vec!["status", "--fleet"];
    args.extend(extra);
    env.crew(dir, &args)
}

#[test]
fn status_fleet_lists_every_machines_runs_from_the_claims_and_changes_nothing_else() {
    let env = TestEnv::new();
    let (bare, clones) = fleet(&env, &["a", "b", "c"], None);
    let (a, b, c) = (&clones[0], &clones[1], &clones[2]);
    // A run working on machine a, and one that passed on machine b.
    let set = slow(30);
    let out = claim(
        &env,
        a,
        "box-a",
        "long",
        &["--backend", "slow", "--set", &set],
    );
    out.expect_code(0);
    let working = out.json()["run"].as_str().unwrap().to_string();
    let out = claim(
        &env,
        b,
        "box-b",
        "routes",
        &["--backend", "ok", "--scope", "src/routes/**"],
    );
    out.expect_code(0);
    let passed = out.json()["run"].as_str().unwrap().to_string();
    env.wait(b, &passed).run().expect_code(0);
    poll_until(
        Duration::from_secs(20),
        "the pass marked on the remote",
        || {
            claims_on(&env, &bare)
                .iter()
                .any(|(t, c)| t == "routes" && c["passed_ms"].is_u64())
        },
    );
    // A claim whose lease ran out long ago, and one that is no claim at all.
    plant_claim(
        &env,
        &bare,
        "stale",
        "{\"machine\":\"box-gone\",\"run\":\"r-gone\",\"task\":\"stale\",\"writes\":true,\"scope\":[\"stale/**\"],\"since_ms\":1000,\"renewed_ms\":2000,\"lease_ms\":1000,\"attempt_ref\":\"refs/crew/attempts/r-gone\"}\n",
    );
    plant_claim(&env, &bare, "junk", "not a claim\n");

    let before = local_state(&env, c);
    let out = fleet_status(&env, c, &["--remote", "origin", "--json"]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["remote"], "origin", "{json}");
    let now = json["now_ms"].as_u64().unwrap();
    let claims = json["claims"].as_array().unwrap();
    let by_task = |task: &str| {
        claims
            .iter()
            .find(|c| c["task"] == task)
            .unwrap_or_else(|| panic!("no claim of {task}: {json}"))
    };
    assert_eq!(claims.len(), 4, "{json}");
    let long = by_task("long");
    assert_eq!(long["machine"], "box-a");
    assert_eq!(long["run"], working.as_str());
    assert_eq!(long["phase"], "running");
    assert_eq!(long["scope"], serde_json::json!(["work/long/**"]));
    assert!(long["left_ms"].as_i64().unwrap() > 0, "{long}");
    assert_eq!(
        long["expires_ms"].as_u64().unwrap(),
        long["renewed_ms"].as_u64().unwrap() + long["lease_ms"].as_u64().unwrap()
    );
    assert_eq!(
        long["age_ms"].as_u64().unwrap(),
        now - long["renewed_ms"].as_u64().unwrap()
    );
    let routes = by_task("routes");
    assert_eq!(routes["machine"], "box-b");
    assert_eq!(routes["phase"], "passed");
    assert!(routes["passed_ms"].is_u64(), "{routes}");
    // The commit the pass keeps on the remote, as the bare repository has it.
    let kept = env.git_ok(
        &bare,
        &["rev-parse", &format!("refs/crew/attempts/{passed}")],
    );
    assert_eq!(routes["attempt"], kept.trim(), "{routes}");
    let stale = by_task("stale");
    assert_eq!(stale["phase"], "expired");
    assert_eq!(stale["machine"], "box-gone");
    assert!(stale["left_ms"].as_i64().unwrap() < 0, "{stale}");
    assert!(stale["attempt"].is_null(), "{stale}");
    let junk = by_task("junk");
    assert_eq!(junk["phase"], "unreadable");
    assert!(junk["machine"].is_null() && junk["run"].is_null(), "{junk}");
    // A read: on c nothing moved but the remote's claims as fetched.
    assert_eq!(local_state(&env, c), before);
    let fetched = env.git_ok(
        c,
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/crew/remotes/origin/claims/",
        ],
    );
    assert!(
        fetched.contains("refs/crew/remotes/origin/claims/long"),
        "{fetched}"
    );

    // For people: a row per claim with its machine, phase and lease.
    let human = fleet_status(&env, c, &["--remote", "origin", "--human"]);
    human.expect_code(0);
    let text = &human.stdout;
    for word in [
        "MACHINE",
        "box-a",
        "box-b",
        "box-gone",
        "running",
        "passed",
        "expired",
        "unreadable",
        "left",
        "ran out",
    ] {
        assert!(text.contains(word), "{word} missing:\n{text}");
    }

    // The remote from the flight config; none named is a usage error, an unknown one
    // exit 3, as for dispatch.
    let out = fleet_status(&env, c, &["--json"]);
    out.expect_code(2);
    assert_eq!(out.json()["error"]["code"], "remote-required");
    let out = fleet_status(&env, c, &["--remote", "nowhere", "--json"]);
    out.expect_code(3);
    assert_eq!(out.json()["error"]["code"], "remote-not-found");
    write(
        &c.join(".crew/flight.toml"),
        &format!(
            "{}\n[fleet]\nremote = \"origin\"\n",
            std::fs::read_to_string(c.join(".crew/flight.toml")).unwrap_or_default()
        ),
    );
    let out = fleet_status(&env, c, &["--json"]);
    out.expect_code(0);
    assert_eq!(out.json()["claims"].as_array().unwrap().len(), 4);

    // The MCP status tool, with fleet: true, says the same.
    let mut client = crate::mcp::Client::start(&env, c);
    let answer = client.call(
        "status",
        serde_json::json!({"fleet": true, "remote": "origin"}),
    );
    let tasks: Vec<&str> = answer["structuredContent"]["claims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["task"].as_str().unwrap())
        .collect();
    assert_eq!(tasks.len(), 4, "{answer}");
    assert!(
        tasks.contains(&"long") && tasks.contains(&"routes"),
        "{answer}"
    );
    let _ = env.crew(a, &["abandon", &working]);
}

#[test]
fn status_fleet_reads_the_claims_over_git_daemon() {
    let env = TestEnv::new();
    let daemon = Daemon::start(env.root());
    let url = format!("git://127.0.0.1:{}/remote.git", daemon.port);
    let (_bare, clones) = fleet(&env, &["a", "b"], Some(&url));
    let set = slow(30);
    let out = claim(
        &env,
        &clones[0],
        "box-a",
        "far",
        &["--backend", "slow", "--set", &set],
    );
    out.expect_code(0);
    let run = out.json()["run"].as_str().unwrap().to_string();
    let out = fleet_status(&env, &clones[1], &["--remote", "origin", "--json"]);
    out.expect_code(0);
    let claims = out.json()["claims"].as_array().unwrap().clone();
    assert_eq!(claims.len(), 1, "{claims:?}");
    assert_eq!(claims[0]["machine"], "box-a");
    assert_eq!(claims[0]["run"], run.as_str());
    assert_eq!(claims[0]["phase"], "running");
    let _ = env.crew(&clones[0], &["abandon", &run]);
}

/// The commit `run`'s attempt ref names on the bare remote, if any.
fn attempt_on(env: &TestEnv, bare: &Path, run: &str) -> Option<String> {
    let out = env.git(
        bare,
        &[
            "rev-parse",
            "-q",
            "--verify",
            &format!("refs/crew/attempts/{run}"),
        ],
    );
    (out.code == 0).then(|| out.stdout.trim().to_string())
}

/// The `renewed_ms` of `task`'s claim on the bare remote.
fn renewed(env: &TestEnv, bare: &Path, task: &str) -> u64 {
    claims_on(env, bare)
        .iter()
        .find(|(t, _)| t == task)
        .and_then(|(_, c)| c["renewed_ms"].as_u64())
        .unwrap_or(0)
}

fn run_of(out: &Out) -> String {
    out.expect_code(0);
    out.json()["run"].as_str().unwrap().to_string()
}

#[test]
fn a_workers_commits_reach_the_remote_while_its_attempt_runs_and_nothing_reaches_the_lead_early() {
    crate::dispatch::require_fence();
    let env = TestEnv::new();
    let (bare, clones) = fleet(&env, &["a"], None);
    let a = &clones[0];
    let lease = "fleet.lease=\"2s\"";
    let run = run_of(&claim(
        &env,
        a,
        "box-a",
        "live",
        &["--backend", "commits-then-hangs", "--set", lease],
    ));
    poll_until(
        Duration::from_secs(20),
        "the live attempt's commit on the remote",
        || attempt_on(&env, &bare, &run).is_some(),
    );
    let commit = attempt_on(&env, &bare, &run).unwrap();
    // The worker's commit, on top of the run's base.
    let shown = env.git_ok(&bare, &["show", &format!("{commit}:work/live/first.txt")]);
    assert_eq!(shown.trim(), run);
    let record = env.crew(a, &["show", &run]).json()["run"].clone();
    let base = record["base"].as_str().unwrap();
    env.git(&bare, &["merge-base", "--is-ancestor", base, &commit])
        .expect_code(0);
    // Its attempt still runs: the commit is in the attempt's quarantine, not in the
    // lead's store, and no ref of the lead's but the run's branch names it.
    assert_eq!(record["phase"], "working", "{record}");
    assert!(
        record["fence"]
            .as_str()
            .is_some_and(|f| f.starts_with("landlock")),
        "{record}"
    );
    assert_ne!(env.git(a, &["cat-file", "-e", &commit]).code, 0);
    let naming = env.git_ok(
        a,
        &[
            "for-each-ref",
            "--points-at",
            &commit,
            "--format=%(refname)",
        ],
    );
    assert_eq!(naming.trim(), format!("refs/heads/crew/live/{run}"));
    // The branch names a commit the store lacks until the attempt ends: a fetch here
    // checks every ref, so the fleet's fetches go around it, and this machine still
    // claims another task and reads the fleet.
    let other = run_of(&claim(
        &env,
        a,
        "box-a",
        "other",
        &["--backend", "no-footer"],
    ));
    let out = fleet_status(&env, a, &["--remote", "origin", "--json"]);
    out.expect_code(0);
    assert!(
        out.json()["claims"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["task"] == "live" && c["attempt"] == commit.as_str()),
        "{}",
        out.stdout
    );
    env.crew(a, &["sync", "origin"]).expect_code(0);
    env.wait(a, &other).run();
    env.crew(a, &["abandon", &run]).expect_code(0);
    let fsck = env.git(&bare, &["fsck", "--no-progress"]);
    assert_eq!(fsck.code, 0, "{fsck:?}");
}

#[test]
fn a_hostile_worker_can_at_worst_keep_its_own_attempt_off_the_remote() {
    crate::dispatch::require_fence();
    let env = TestEnv::new();
    let (bare, clones) = fleet(&env, &["a"], None);
    let a = &clones[0];
    let lease = "fleet.lease=\"2s\"";
    let modes = ["huge-ref", "blob", "unrelated", "symlinks", "none"];
    let runs: Vec<String> = modes
        .iter()
        .map(|mode| {
            let hostile = format!("backends.hostile-attempt.env.HOSTILE=\"{mode}\"");
            run_of(&claim(
                &env,
                a,
                "box-a",
                &format!("h-{mode}"),
                &[
                    "--backend",
                    "hostile-attempt",
                    "--set",
                    lease,
                    "--set",
                    &hostile,
                    "--set",
                    "backends.hostile-attempt.concurrency=10",
                ],
            ))
        })
        .collect();
    // The worker that tampers with nothing gets its commit onto the remote...
    poll_until(
        Duration::from_secs(20),
        "the untampered attempt on the remote",
        || attempt_on(&env, &bare, &runs[4]).is_some(),
    );
    // ...and every hostile one keeps its heartbeat: its lease is renewed twice more.
    for mode in &modes[..4] {
        let task = format!("h-{mode}");
        let first = renewed(&env, &bare, &task);
        poll_until(Duration::from_secs(10), "two more renewals", || {
            renewed(&env, &bare, &task) >= first + 1_000
        });
    }
    // What each hostile worker named never reached the remote.
    for (mode, run) in modes.iter().zip(&runs).take(4) {
        assert_eq!(attempt_on(&env, &bare, run), None, "{mode}");
    }
    // Each did what it came to do (it says so in its manifest, once it is done).
    for (mode, run) in modes.iter().zip(&runs) {
        let manifest = a.join(format!(".git/crew/runs/{run}/manifest.md"));
        let said = std::fs::read_to_string(&manifest).unwrap_or_default();
        assert_eq!(said.trim(), format!("tampered: {mode}"));
    }
    // Nor at the run's end: the same check holds then.
    for run in &runs {
        env.crew(a, &["abandon", run]).expect_code(0);
    }
    for (mode, run) in modes.iter().zip(&runs).take(4) {
        assert_eq!(attempt_on(&env, &bare, run), None, "{mode}");
    }
    assert!(attempt_on(&env, &bare, &runs[4]).is_some());
    let fsck = env.git(&bare, &["fsck", "--no-progress"]);
    assert_eq!(fsck.code, 0, "{fsck:?}");
}

#[test]
fn a_machine_killed_mid_task_leaves_its_commits_on_the_remote_for_the_machine_that_takes_over() {
    crate::dispatch::require_fence();
    let env = TestEnv::new();
    let daemon = Daemon::start(env.root());
    let url = format!("git://127.0.0.1:{}/remote.git", daemon.port);
    let (bare, clones) = fleet(&env, &["a", "b"], Some(&url));
    let (a, b) = (&clones[0], &clones[1]);
    let lease = "fleet.lease=\"2s\"";
    let run = run_of(&claim(
        &env,
        a,
        "box-a",
        "long",
        &["--backend", "commits-then-hangs", "--set", lease],
    ));
    let base = env.crew(a, &["show", &run]).json()["run"]["base"]
        .as_str()
        .unwrap()
        .to_string();
    // The worker has committed, and the heartbeat has pushed the commit mid-attempt.
    poll_until(
        Duration::from_secs(20),
        "the worker's commit on the remote",
        || attempt_on(&env, &bare, &run).is_some(),
    );
    let commit = attempt_on(&env, &bare, &run).unwrap();

    // Machine a dies mid-task: its supervisor and its worker are killed outright.
    let pointer = a.join(".git/crew/live").join(format!("{run}.json"));
    let live: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&pointer).unwrap()).unwrap();
    let supervisor = live["supervisor_pid"].as_i64().unwrap().to_string();
    let worker = format!("-{}", live["pid"].as_i64().unwrap());
    Command::new("kill")
        .args(["-KILL", &supervisor])
        .status()
        .unwrap();
    let _ = Command::new("kill").args(["-KILL", "--", &worker]).status();
    // Nothing of a's renews the claim now: once its lease runs out, b takes the task over.
    let set = slow(30);
    let mut takeover = None;
    poll_until(Duration::from_secs(20), "a takeover", || {
        let out = claim(
            &env,
            b,
            "box-b",
            "long",
            &["--backend", "slow", "--set", lease, "--set", &set],
        );
        takeover = (out.code == 0).then(|| run_of(&out));
        takeover.is_some()
    });
    let claims = claims_on(&env, &bare);
    let (_, taken) = claims.iter().find(|(t, _)| t == "long").unwrap();
    assert_eq!(taken["machine"], "box-b", "{taken}");
    assert_eq!(taken["took_over"]["run"], run.as_str(), "{taken}");
    assert_eq!(taken["took_over"]["machine"], "box-a", "{taken}");
    let attempt = format!("refs/crew/attempts/{run}");
    assert_eq!(taken["took_over"]["attempt_ref"], attempt.as_str());

    // The killed machine's commit is on the remote, reachable from its attempt ref and
    // on top of the run's base, with what the worker wrote.
    env.git(&bare, &["cat-file", "-e", &format!("{commit}^{{commit}}")])
        .expect_code(0);
    env.git(&bare, &["merge-base", "--is-ancestor", &base, &commit])
        .expect_code(0);
    env.git(&bare, &["merge-base", "--is-ancestor", &commit, &attempt])
        .expect_code(0);
    let kept = env.git_ok(&bare, &["show", &format!("{attempt}:work/long/first.txt")]);
    assert_eq!(kept.trim(), run);
    // Every machine sees where it went.
    let out = fleet_status(&env, b, &["--remote", "origin", "--json"]);
    out.expect_code(0);
    let listed = out.json()["claims"][0].clone();
    assert_eq!(listed["took_over"]["run"], run.as_str(), "{listed}");
    let fsck = env.git(&bare, &["fsck", "--no-progress"]);
    assert_eq!(fsck.code, 0, "{fsck:?}");
    env.crew(b, &["abandon", &takeover.unwrap()]).expect_code(0);
}

#[test]
fn claiming_merges_the_remotes_ledger_first_so_the_decision_counts_every_machine() {
    let env = TestEnv::new();
    let (_bare, clones) = fleet(&env, &["a", "b"], None);
    let (a, b) = (&clones[0], &clones[1]);
    // Machine a's run fails; its ledger row reaches the remote with a sync.
    let out = claim(&env, a, "box-a", "broken", &["--backend", "no-footer"]);
    out.expect_code(0);
    let failed = out.json()["run"].as_str().unwrap().to_string();
    env.wait(a, &failed).run();
    env.crew(a, &["sync"]).expect_code(0);
    let runs_of = |dir: &Path| -> Vec<String> {
        let rows = env.crew(dir, &["ledger", "--task", "broken"]).json()["rows"].clone();
        rows.as_array()
            .map(|rows| {
                rows.iter()
                    .filter_map(|r| r["run"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    assert!(runs_of(b).is_empty(), "b has not heard of a's run yet");
    // b claims another task: the remote's notes are merged in before its decision.
    claim(&env, b, "box-b", "other", &["--backend", "no-footer"]).expect_code(0);
    assert_eq!(runs_of(b), vec![failed.clone()]);
}

/// A run of task `task` on machine a that passes (scope `src/routes/**`, lease `lease`),
/// once its claim on the remote says so: its run id.
fn a_pass(env: &TestEnv, a: &Path, bare: &Path, task: &str, lease: &str) -> String {
    let out = claim(
        env,
        a,
        "box-a",
        task,
        &[
            "--backend",
            "ok",
            "--scope",
            "src/routes/**",
            "--set",
            lease,
        ],
    );
    out.expect_code(0);
    let run = run_of(&out);
    env.wait(a, &run).run().expect_code(0);
    poll_until(Duration::from_secs(20), "the claim marked passed", || {
        claims_on(env, bare)
            .iter()
            .any(|(t, c)| t == task && c["passed_ms"].is_u64())
    });
    run
}

#[test]
fn a_pass_holds_its_task_past_its_lease_until_it_is_integrated() {
    let env = TestEnv::new();
    let (bare, clones) = fleet(&env, &["a", "b"], None);
    let (a, b) = (&clones[0], &clones[1]);
    let lease = "fleet.lease=\"1s\"";
    let run = a_pass(&env, a, &bare, "routes", lease);
    // Well past its lease, nobody renews it: it still holds the task and its scope.
    std::thread::sleep(Duration::from_millis(2_500));
    let refused = claim(&env, b, "box-b", "routes", &["--backend", "no-footer"]);
    refused.expect_code(4);
    let said = format!("{}{}", refused.stdout, refused.stderr);
    assert!(
        said.contains("on machine box-a") && said.contains("passed"),
        "{said}"
    );
    claim(
        &env,
        b,
        "box-b",
        "wide",
        &["--backend", "no-footer", "--scope", "src/**"],
    )
    .expect_code(4);
    // Every machine sees it passed, with no lease to run out.
    let status = fleet_status(&env, b, &["--remote", "origin", "--json"]);
    status.expect_code(0);
    let listed = &status.json()["claims"][0];
    assert_eq!(listed["phase"], "passed", "{listed}");
    assert_eq!(listed["expires_ms"], serde_json::Value::Null, "{listed}");
    assert_eq!(listed["left_ms"], serde_json::Value::Null, "{listed}");
    let table = fleet_status(&env, b, &["--remote", "origin", "--human"]);
    assert!(
        table.stdout.contains("held until integrated"),
        "{}",
        table.stdout
    );
    // Its own machine lands it, long after its lease: the claim is still its own.
    let landed = env.crew(a, &["integrate", &run, "--remote", "origin"]);
    landed.expect_code(0);
    assert_eq!(landed.json()["remote"]["released_claim"], true);
    assert!(claims_on(&env, &bare).is_empty());
    claim(&env, b, "box-b", "routes", &["--backend", "no-footer"]).expect_code(0);
}

#[test]
fn a_dead_machines_pass_is_dropped_by_abandon_remote_and_cannot_land_after() {
    let env = TestEnv::new();
    let (bare, clones) = fleet(&env, &["a", "b"], None);
    let (a, b) = (&clones[0], &clones[1]);
    let lease = "fleet.lease=\"1s\"";
    let run = a_pass(&env, a, &bare, "routes", lease);
    let target = env.git_ok(&bare, &["rev-parse", "main"]);
    // A live working run's claim is its machine's: nobody else drops it.
    let out = claim(
        &env,
        a,
        "box-a",
        "live",
        &[
            "--backend",
            "slow",
            "--set",
            &slow(60),
            "--set",
            "fleet.lease=\"30s\"",
        ],
    );
    out.expect_code(0);
    let live = run_of(&out);
    let refused = env.crew(b, &["abandon", &live, "--remote", "origin", "--json"]);
    refused.expect_code(4);
    let said = format!("{}{}", refused.stdout, refused.stderr);
    assert!(said.contains("claim-live"), "{said}");
    assert!(said.contains("machine box-a"), "{said}");
    assert!(claims_on(&env, &bare).iter().any(|(t, _)| t == "live"));
    env.crew(a, &["abandon", &live]).expect_code(0);

    // Machine a is gone with its pass: b drops the claim, and the task is free again.
    let out = env.crew(b, &["abandon", &run, "--remote", "origin", "--json"]);
    out.expect_code(0);
    let dropped = &out.json()["dropped"];
    assert_eq!(dropped["run"], run.as_str(), "{dropped}");
    assert_eq!(dropped["task"], "routes");
    assert_eq!(dropped["machine"], "box-a");
    assert_eq!(dropped["phase"], "passed");
    assert!(!claims_on(&env, &bare).iter().any(|(t, _)| t == "routes"));
    // Its commits are still on the remote.
    let attempt = format!("refs/crew/attempts/{run}");
    env.git_ok(&bare, &["rev-parse", "--verify", &attempt]);
    // A run neither here nor on the remote is not found.
    let again = env.crew(b, &["abandon", &run, "--remote", "origin"]);
    again.expect_code(3);
    let said = format!("{}{}", again.stdout, again.stderr);
    assert!(said.contains("status --fleet"), "{said}");
    claim(&env, b, "box-b", "routes", &["--backend", "no-footer"]).expect_code(0);

    // Machine a comes back and tries to land its pass: the claim is not its own.
    let late = env.crew(a, &["integrate", &run, "--remote", "origin"]);
    late.expect_code(4);
    let said = format!("{}{}", late.stdout, late.stderr);
    assert!(said.contains("claim-taken-over"), "{said}");
    assert_eq!(env.git_ok(&bare, &["rev-parse", "main"]), target);
}

#[test]
fn abandoning_a_pass_here_lets_its_claim_go() {
    let env = TestEnv::new();
    let (bare, clones) = fleet(&env, &["a"], None);
    let a = &clones[0];
    let run = a_pass(&env, a, &bare, "routes", "fleet.lease=\"1s\"");
    let out = env.crew(a, &["abandon", &run, "--json"]);
    out.expect_code(0);
    assert_eq!(out.json()["released_claim"], true, "{}", out.stdout);
    assert!(claims_on(&env, &bare).is_empty());
}
