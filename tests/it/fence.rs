//! The fence against workers that misbehave: the kernel write fence, decisions that take
//! only sealed facts, and the invariant that an integrate changes only paths inside the
//! run's scope.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::common::{TestEnv, poll_until, read, write};
use crate::dispatch::require_fence;

/// A finished run of task `routes` by the `ok` worker, scoped to `src/routes/**`, with
/// `verify` and the `extra` flags.
fn routes_run(env: &TestEnv, repo: &Path, verify: &str, extra: &[&str]) -> String {
    env.dispatch(repo, "routes")
        .backend("ok")
        .scope("src/routes/**")
        .verify(verify)
        .args(extra)
        .finished()
}

fn crew_repo(env: &TestEnv) -> std::path::PathBuf {
    env.fixture("crew-repo.sh", "repo", &[])
}

/// The bytes of everything a worker must not write.
fn guarded(repo: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    for rel in [
        "README.md",
        ".git/config",
        ".git/refs/heads/main",
        ".git/refs/notes/crew-ledger",
        ".git/packed-refs",
    ] {
        out.push((
            rel.to_string(),
            std::fs::read(repo.join(rel)).unwrap_or_default(),
        ));
    }
    for dir in [".git/hooks", ".git/crew/runs", ".git/crew/live"] {
        if let Ok(entries) = std::fs::read_dir(repo.join(dir)) {
            for e in entries.flatten().filter(|e| e.path().is_file()) {
                out.push((
                    e.path().display().to_string(),
                    std::fs::read(e.path()).unwrap_or_default(),
                ));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_fenced_worker_cannot_write_the_lead_the_refs_the_ledger_or_its_records() {
    require_fence();
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    // Another run's worktree to attack.
    let other = env.crew(
        &repo,
        &[
            "dispatch",
            "--task",
            "other",
            "--backend",
            "hang",
            "--prompt",
            "x",
            "--scope",
            "docs/**",
        ],
    );
    other.expect_code(0);
    let other_wt = other.json()["worktree"].as_str().unwrap().to_string();
    let other_readme = read(&Path::new(&other_wt).join("README.md"));
    let before = guarded(&repo);
    let out = env.crew(
        &repo,
        &[
            "dispatch",
            "--task",
            "routes",
            "--backend",
            "hostile-writes",
            "--prompt",
            "x",
            "--scope",
            "src/routes/**",
            "--wait",
        ],
    );
    let json = out.json();
    let run = &json["runs"][0];
    assert_eq!(run["fence"], "landlock-v7+ns", "{json}");
    assert_eq!(run["outcome"], "pass", "{json}");
    let id = run["run"].as_str().unwrap();
    let stdout = env.transcript(&repo, id);
    for target in ["lead-checkout", "signal-supervisor"] {
        assert!(
            stdout.contains(&format!("{target}: refused")),
            "{target}:\n{stdout}"
        );
    }
    // What lies in the git dir is the worker's private view of it (`+ns`): a write there
    // may get through to the view, never to the repository, as the real state below
    // shows.
    for target in [
        "other-worktree",
        "hooks",
        "main-ref-file",
        "main-ref-git",
        "ledger-ref",
        "live-pointer",
        "run-record",
        "seal",
        "shared-config",
    ] {
        assert!(
            stdout.contains(&format!("{target}: refused"))
                || stdout.contains(&format!("{target}: WROTE")),
            "{target}:\n{stdout}"
        );
    }
    let base = run["base"].as_str().unwrap();
    let record: Value =
        serde_json::from_str(&read(&repo.join(format!(".git/crew/runs/{id}.json")))).unwrap();
    assert_eq!(record["run"], id, "{record}");
    if let Ok(live) = std::fs::read_to_string(repo.join(format!(".git/crew/live/{id}.json"))) {
        assert_ne!(live.trim(), "{}");
    }
    assert_ne!(
        env.git_ok(&repo, &["rev-parse", &format!("refs/crew/sealed/{id}")])
            .trim(),
        base
    );
    let ledger = env.git_ok(&repo, &["rev-list", "refs/notes/crew-ledger"]);
    assert!(!ledger.lines().any(|c| c == base), "{ledger}");
    assert!(stdout.contains("tmpdir: WROTE"), "{stdout}");
    assert!(stdout.contains("commit: ok"), "{stdout}");
    assert_eq!(read(&Path::new(&other_wt).join("README.md")), other_readme);
    // Every guarded file is byte-identical, but for what git-crew itself wrote (the
    // ledger row, the records): compare the lead's checkout, config, hooks and main.
    let after = guarded(&repo);
    for (path, bytes) in &before {
        if path.contains("crew-ledger") || path.contains("/crew/") || path.ends_with("packed-refs")
        {
            continue;
        }
        let now = after.iter().find(|(p, _)| p == path).map(|(_, b)| b);
        assert_eq!(now, Some(bytes), "{path} changed");
    }
    let integrated = env.crew(
        &repo,
        &[
            "integrate",
            run["run"].as_str().unwrap(),
            "--force-unverified",
        ],
    );
    integrated.expect_code(0);
}

#[test]
fn a_tampered_record_is_refused_at_integrate_with_the_fence_off() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = routes_run(&env, &repo, "true", &["--set", "sandbox.enabled=false"]);
    let path = repo.join(format!(".git/crew/runs/{run}.json"));
    let mut record: Value = serde_json::from_str(&read(&path)).unwrap();
    assert_eq!(record["fence"], "none");
    record["scope"] = serde_json::json!(["**"]);
    write(&path, &record.to_string());
    let main = env.git_ok(&repo, &["rev-parse", "main"]);
    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(1);
    let error = &out.json()["error"];
    assert_eq!(error["code"], "record-tampered");
    assert!(
        error["message"].as_str().unwrap().contains("scope"),
        "{error}"
    );
    assert_eq!(env.git_ok(&repo, &["rev-parse", "main"]), main);
    // verify refuses it too.
    env.crew(&repo, &["verify", &run]).expect_code(1);
}

#[test]
fn a_rewritten_branch_is_refused_and_nothing_the_lead_deleted_comes_back() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = routes_run(&env, &repo, "true", &[]);
    // The lead deletes a file after dispatch.
    env.git_ok(&repo, &["rm", "-q", "README.md"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "drop readme"]);
    // The worker's branch becomes a parentless commit holding the old tree and its work.
    let branch = format!("crew/routes/{run}");
    let tree = env.git_ok(&repo, &["rev-parse", &format!("{branch}^{{tree}}")]);
    let orphan = env.git_ok(&repo, &["commit-tree", tree.trim(), "-m", "rewritten"]);
    env.git_ok(
        &repo,
        &["update-ref", &format!("refs/heads/{branch}"), orphan.trim()],
    );
    let out = env.crew(&repo, &["integrate", &run, "--force-unverified"]);
    out.expect_code(4);
    assert_eq!(out.json()["error"]["code"], "run-rewritten");
    assert!(!repo.join("README.md").exists());
}

#[test]
fn a_target_without_the_base_gets_only_the_runs_own_change() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    // A commit outside the scope that the run's base has and `release` does not.
    env.git_ok(&repo, &["branch", "release"]);
    write(&repo.join("docs/lead.md"), "lead's work\n");
    env.git_ok(&repo, &["add", "-A"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "lead work"]);
    let run = routes_run(&env, &repo, "true", &[]);
    let out = env.crew(&repo, &["integrate", &run, "--into", "release"]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["applied_as"], "range");
    assert_eq!(json["parents"].as_array().unwrap().len(), 1);
    assert_eq!(json["files"], serde_json::json!(["src/routes/crew.rs"]));
    let files = env.git_ok(&repo, &["ls-tree", "-r", "--name-only", "release"]);
    assert!(!files.contains("docs/lead.md"), "{files}");
}

#[test]
fn a_writable_path_that_holds_the_repository_is_refused() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let parent = env.root().display().to_string();
    let set = format!("sandbox.writable=[\"{parent}\"]");
    let out = env.crew(
        &repo,
        &[
            "dispatch",
            "--task",
            "t",
            "--backend",
            "ok",
            "--prompt",
            "x",
            "--scope",
            "src/**",
            "--set",
            &set,
        ],
    );
    out.expect_code(2);
    assert_eq!(out.json()["error"]["code"], "sandbox-invalid");
    assert!(
        !repo.join(".git/crew/live").exists()
            || std::fs::read_dir(repo.join(".git/crew/live"))
                .unwrap()
                .count()
                == 0
    );
}

#[test]
fn post_merge_takes_the_scope_from_the_seal_not_the_worktree_config() {
    let env = TestEnv::new();
    let dir = env.root().join("c");
    let out = env
        .command(crate::common::fixtures().join("crew-worktree.sh"))
        .args([
            dir.to_str().unwrap(),
            "r1",
            "routes",
            "implement",
            "src/routes/**",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let (repo, wt) = (dir.join("repo"), dir.join("wt"));
    env.git_ok(&repo, &["config", "core.hooksPath", "/dev/null"]);
    // The worker "fixes" its refusal by widening its own scope.
    env.git_ok(
        &wt,
        &["config", "--worktree", "--replace-all", "crew.scope", "**"],
    );
    write(&wt.join("README.md"), "widened\n");
    env.git_ok(&wt, &["commit", "-q", "-am", "out of scope"]);
    let out = env.crew(&repo, &["hook", "post-merge", "0", "--json"]);
    out.expect_code(0);
    env.git_ok(
        &repo,
        &["merge", "-q", "--no-ff", "-m", "by hand", "crew/routes/r1"],
    );
    let out = env.crew(&repo, &["hook", "post-merge", "0", "--json"]);
    let json = out.json();
    assert_eq!(json["runs"][0]["run"], "r1", "{json}");
    assert_eq!(
        json["runs"][0]["violations"][0],
        "README.md (modified) is outside the write scope src/routes/**"
    );
}

#[test]
fn a_tree_entry_git_cannot_check_out_is_refused_at_integrate() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = routes_run(&env, &repo, "true", &[]);
    let branch = format!("crew/routes/{run}");
    // Graft `src/routes/x/.git/config` into the branch's tree, as `--no-verify` plumbing
    // would: git refuses to check that out.
    let script = format!(
        r#"set -e
b=$(printf '[core]\n\tfsmonitor = evil\n' | git hash-object -w --stdin)
g=$(printf '100644 blob %s\tconfig\n' "$b" | git mktree)
x=$(printf '040000 tree %s\t.git\n' "$g" | git mktree)
r=$( (git ls-tree {branch}:src/routes; printf '040000 tree %s\tx\n' "$x") | git mktree)
s=$( (git ls-tree {branch}:src | grep -v '	routes$'; printf '040000 tree %s\troutes\n' "$r") | git mktree)
t=$( (git ls-tree {branch} | grep -v '	src$'; printf '040000 tree %s\tsrc\n' "$s") | git mktree)
c=$(git commit-tree "$t" -p {branch} -m graft)
git update-ref refs/heads/{branch} "$c"
"#
    );
    let out = env
        .command("sh")
        .arg("-c")
        .arg(&script)
        .current_dir(&repo)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let main = env.git_ok(&repo, &["rev-parse", "main"]);
    let out = env.crew(&repo, &["integrate", &run, "--force-unverified"]);
    out.expect_code(1);
    let json = out.json();
    let text = json["error"].to_string();
    assert!(text.contains("src/routes/x/.git/config"), "{text}");
    assert_eq!(env.git_ok(&repo, &["rev-parse", "main"]), main);
}

#[test]
fn an_escaped_glob_overlaps_the_scope_it_spells() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let first = env.crew(
        &repo,
        &[
            "dispatch",
            "--task",
            "a",
            "--backend",
            "hang",
            "--prompt",
            "x",
            "--scope",
            "src/routes/**",
        ],
    );
    first.expect_code(0);
    let out = env.crew(
        &repo,
        &[
            "dispatch",
            "--task",
            "b",
            "--backend",
            "ok",
            "--prompt",
            "x",
            "--scope",
            "src/rout\\es/**",
        ],
    );
    out.expect_code(4);
    assert!(
        out.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("overlaps")
    );
}

#[test]
fn verify_tests_the_commit_it_records_and_refuses_a_dirty_worktree() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = routes_run(&env, &repo, "test -f src/routes/crew.rs", &[]);
    let shown = env.crew(&repo, &["show", &run]).json();
    let wt = std::path::PathBuf::from(shown["run"]["worktree"].as_str().unwrap());
    write(&wt.join("src/routes/extra.rs"), "not committed\n");
    let out = env.crew(&repo, &["verify", &run]);
    out.expect_code(4);
    assert_eq!(out.json()["error"]["code"], "worktree-dirty");
    std::fs::remove_file(wt.join("src/routes/extra.rs")).unwrap();
    // The worktree moved off the branch (to the base, where the file does not exist): the
    // branch's tip is verified in a throwaway checkout all the same.
    let base = shown["run"]["base"].as_str().unwrap();
    env.git_ok(&wt, &["checkout", "-q", "--detach", base]);
    let out = env.crew(&repo, &["verify", &run]);
    out.expect_code(0);
    let tip = env.git_ok(&repo, &["rev-parse", &format!("crew/routes/{run}")]);
    let shown = env.crew(&repo, &["show", &run]).json();
    assert_eq!(shown["run"]["verified_tip"], tip.trim());
}

#[test]
fn a_worker_that_merges_the_moved_target_is_judged_alike_by_supervisor_and_integrate() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let out = env.crew(
        &repo,
        &[
            "dispatch",
            "--task",
            "routes",
            "--backend",
            "merge-target",
            "--prompt",
            "x",
            "--scope",
            "src/routes/**",
            "--verify",
            "test -f src/routes/crew.rs",
        ],
    );
    out.expect_code(0);
    let run = out.json()["run"].as_str().unwrap().to_string();
    // The lead moves main (outside the run's scope) while the worker waits.
    write(&repo.join("docs/lead.md"), "lead\n");
    env.git_ok(&repo, &["add", "docs/lead.md"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "lead work"]);
    write(&repo.join(".go"), "");
    let waited = env.crew(&repo, &["wait", &run, "--timeout", "60s"]);
    let result = &waited.json()["runs"][0];
    assert_eq!(result["outcome"], "pass", "{result}");
    std::fs::remove_file(repo.join(".go")).unwrap();
    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["files"], serde_json::json!(["src/routes/crew.rs"]));
}

#[test]
fn a_real_build_and_test_run_work_inside_the_fence() {
    require_fence();
    let real_home = std::path::PathBuf::from(std::env::var_os("HOME").expect("HOME"));
    let rustup_home = std::env::var_os("RUSTUP_HOME")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| real_home.join(".rustup"));
    let toolchain = std::env::var_os("RUSTUP_TOOLCHAIN");
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    // The toolchain is read from the lead's rustup (the one the suite runs under, when
    // rustup named one); cargo's own home is the test's.
    let cargo_home = env.home().join(".cargo");
    let mut vars = vec![
        ("RUSTUP_HOME", rustup_home.as_os_str()),
        ("CARGO_HOME", cargo_home.as_os_str()),
    ];
    if let Some(toolchain) = &toolchain {
        vars.push(("RUSTUP_TOOLCHAIN", toolchain.as_os_str()));
    }
    let out = env.crew_env(
        &repo,
        &[
            "dispatch",
            "--task",
            "routes",
            "--backend",
            "build",
            "--prompt",
            "x",
            "--scope",
            "src/routes/**",
            "--verify",
            "cargo build --offline --quiet --manifest-path src/routes/app/Cargo.toml",
            "--set",
            "backends.build.time_budget=5m",
            "--wait",
        ],
        &vars,
    );
    let json = out.json();
    let run = &json["runs"][0];
    let id = run["run"].as_str().unwrap();
    let stdout = env.transcript(&repo, id);
    assert_eq!(run["fence"], "landlock-v7+ns", "{json}\n{stdout}");
    assert_eq!(run["outcome"], "pass", "{json}\n{stdout}");
    assert_eq!(run["verify"]["passed"], true, "{json}");
    assert!(stdout.contains("built\n"), "{stdout}");
    assert!(stdout.contains("pycache: written"), "{stdout}");
    let out = env.crew(&repo, &["integrate", id]);
    out.expect_code(0);
    let mut files: Vec<String> = serde_json::from_value(out.json()["files"].clone()).unwrap();
    files.sort();
    assert_eq!(
        files,
        [
            "src/routes/app/.gitignore",
            "src/routes/app/Cargo.toml",
            "src/routes/app/src/main.rs",
            "src/routes/py/.gitignore",
            "src/routes/py/test_crew.py"
        ]
    );
}

/// Adds a commit holding the symlink `src/routes/<name> -> <target>` to `run`'s branch, as
/// a worker that slipped past its hook (`--no-verify`) would.
fn commit_link(env: &TestEnv, repo: &Path, run: &str, name: &str, target: &str) {
    let wt = repo.join(format!(".git/crew/worktrees/{run}"));
    std::os::unix::fs::symlink(target, wt.join("src/routes").join(name)).unwrap();
    env.git_ok(&wt, &["add", "-A"]);
    env.git_ok(&wt, &["commit", "-q", "--no-verify", "-m", "a link"]);
}

#[test]
fn a_symlink_that_leaves_the_repository_is_refused_and_one_that_leaves_the_scope_is_named() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = routes_run(&env, &repo, "true", &[]);
    commit_link(&env, &repo, &run, "escape", "../../../outside/secret");
    let main = env.git_ok(&repo, &["rev-parse", "main"]);
    let out = env.crew(&repo, &["integrate", &run, "--force-unverified"]);
    out.expect_code(1);
    let error = &out.json()["error"];
    let message = error["message"].as_str().unwrap();
    assert!(message.contains("src/routes/escape"), "{error}");
    assert!(message.contains("outside the repository"), "{error}");
    assert_eq!(env.git_ok(&repo, &["rev-parse", "main"]), main);

    // Through another link: `d -> ../..` makes `d/../../../etc/passwd` leave it too, and a
    // link into the git dir is refused as well.
    for (name, target, why) in [
        ("lnk", "d/../../../etc/passwd", "outside the repository"),
        ("hook", "d/.git/hooks/pre-commit", "git dir"),
    ] {
        let run = env.finished_run(
            &repo,
            &format!("chain-{name}"),
            "ok",
            &["--scope", "src/routes/**", "--verify", "true"],
        );
        commit_link(&env, &repo, &run, "d", "../..");
        commit_link(&env, &repo, &run, name, target);
        let out = env.crew(&repo, &["integrate", &run, "--force-unverified"]);
        out.expect_code(1);
        let message = out.json()["error"]["message"].as_str().unwrap().to_string();
        assert!(message.contains(&format!("src/routes/{name}")), "{message}");
        assert!(message.contains(why), "{message}");
        assert_eq!(env.git_ok(&repo, &["rev-parse", "main"]), main);
    }

    // A link inside the repository but outside the scope lands, and the result names it.
    let run = env.finished_run(
        &repo,
        "links",
        "ok",
        &["--scope", "src/routes/**", "--verify", "true"],
    );
    commit_link(&env, &repo, &run, "readme", "../../README.md");
    let out = env.crew(&repo, &["integrate", &run, "--force-unverified"]);
    out.expect_code(0);
    let json = out.json();
    let links = json["links_outside_scope"].as_array().unwrap();
    assert_eq!(links.len(), 1, "{json}");
    assert!(
        links[0].as_str().unwrap().contains("src/routes/readme"),
        "{json}"
    );
    assert!(
        out.stderr.contains("symlink outside the run's scope"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_target_reset_below_the_base_does_not_get_the_dropped_commit_back() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    write(&repo.join("docs/dropped.md"), "the lead drops this\n");
    env.git_ok(&repo, &["add", "-A"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "to be dropped"]);
    let run = routes_run(&env, &repo, "true", &[]);
    // The lead resets main below the run's base after dispatch.
    env.git_ok(&repo, &["reset", "-q", "--hard", "HEAD~1"]);
    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["applied_as"], "range", "{json}");
    assert_eq!(json["files"], serde_json::json!(["src/routes/crew.rs"]));
    assert!(!repo.join("docs/dropped.md").exists());
    let files = env.git_ok(&repo, &["ls-tree", "-r", "--name-only", "main"]);
    assert!(!files.contains("docs/dropped.md"), "{files}");
    assert!(files.contains("src/routes/crew.rs"), "{files}");
}

#[test]
fn the_reaper_files_a_dead_run_under_its_sealed_facts_not_its_tampered_pointer() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = crate::dispatch::dispatched(
        &env,
        &repo,
        "routes",
        "hang",
        &["--scope", "src/routes/**", "--set", "sandbox.enabled=false"],
    );
    let child = repo.join(format!(".git/crew/runs/{run}/tmp/child-pid"));
    poll_until(Duration::from_secs(20), "the worker's child", || {
        child.exists()
    });
    // Unfenced, the worker rewrites its live pointer: another task, a wider scope.
    let pointer = repo.join(format!(".git/crew/live/{run}.json"));
    let mut record: Value = serde_json::from_str(&read(&pointer)).unwrap();
    let supervisor = record["supervisor_pid"].as_u64().unwrap();
    record["task"] = "victim".into();
    record["scope"] = serde_json::json!(["**"]);
    write(&pointer, &record.to_string());
    std::process::Command::new("kill")
        .args(["-9", &supervisor.to_string()])
        .status()
        .unwrap();
    let out = env.crew(&repo, &["doctor", "--fix"]);
    let report = out.stdout.clone();
    assert!(report.contains("dead-supervisor"), "{report}");
    let record: Value =
        serde_json::from_str(&read(&repo.join(format!(".git/crew/runs/{run}.json")))).unwrap();
    assert_eq!(record["outcome"], "abandoned");
    assert_eq!(record["task"], "routes");
    assert_eq!(record["scope"], serde_json::json!(["src/routes/**"]));
    assert!(
        record["decision"].as_str().unwrap().contains("task, scope"),
        "{record}"
    );
    let victim = env.crew(&repo, &["ledger", "--task", "victim"]).json();
    assert_eq!(victim["rows"], serde_json::json!([]));
    let routes = env.crew(&repo, &["ledger", "--task", "routes"]).json();
    assert_eq!(routes["rows"][0]["run"], run.as_str());
    assert!(crate::dispatch::pid_gone(&read(&child)));
}

#[test]
fn code_a_worker_plants_in_its_worktree_administration_never_runs_outside_the_fence() {
    require_fence();
    for route in ["config", "filter", "gitfile", "commondir"] {
        let env = TestEnv::new();
        let repo = crew_repo(&env);
        let set = format!("backends.plant.env.PLANT={route}");
        let run = env.finished_run(
            &repo,
            "routes",
            "plant",
            &[
                "--scope",
                "src/routes/**",
                "--verify",
                "true",
                "--set",
                &set,
            ],
        );
        let mark = repo.join(format!("PLANTED-{route}"));
        let show = env.crew(&repo, &["show", &run]).json();
        // The worker got through its planting to its reply.
        assert_eq!(show["run"]["footer"]["result"], "Done.", "{route}: {show}");
        assert!(
            !mark.exists(),
            "{route}: planted code ran in the supervisor: {show}"
        );
        env.crew(&repo, &["verify", &run]);
        assert!(!mark.exists(), "{route}: planted code ran in verify");
        env.crew(&repo, &["integrate", &run, "--force-unverified"]);
        assert!(!mark.exists(), "{route}: planted code ran in integrate");
    }
}

#[test]
fn a_worktree_that_points_its_head_at_the_target_is_not_the_leads_checkout() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = routes_run(&env, &repo, "true", &[]);
    // The lead works on another branch; a live run's worker points its HEAD at main.
    env.git_ok(&repo, &["checkout", "-q", "-b", "lead-work"]);
    let other = crate::dispatch::dispatched(&env, &repo, "other", "hang", &["--scope", "docs/**"]);
    let other_wt = repo
        .join(format!(".git/crew/worktrees/{other}"))
        .to_string_lossy()
        .into_owned();
    let admin = env.git_ok(Path::new(&other_wt), &["rev-parse", "--absolute-git-dir"]);
    let admin = Path::new(admin.trim());
    write(&admin.join("HEAD"), "ref: refs/heads/main\n");
    // ...and its gitdir at a checkout of its own making, whose fsmonitor would run as the
    // lead (anywhere the worker can write outside the repository).
    let fake = env.root().join("fake");
    env.git_ok(env.root(), &["init", "-q", fake.to_str().unwrap()]);
    let mark = env.root().join("FAKE-RAN");
    env.git_ok(
        &fake,
        &[
            "config",
            "core.fsmonitor",
            &format!("touch {}; false", mark.display()),
        ],
    );
    write(
        &admin.join("gitdir"),
        &format!("{}\n", fake.join(".git").display()),
    );
    let readme = read(&Path::new(&other_wt).join("README.md"));
    let out = env.crew(&repo, &["integrate", &run, "--into", "main"]);
    out.expect_code(0);
    // main moved by a ref update, not by a merge run in the other worker's worktree.
    let main = env.git_ok(&repo, &["rev-parse", "main"]);
    assert_eq!(main.trim(), out.json()["commit"].as_str().unwrap());
    assert_eq!(read(&Path::new(&other_wt).join("README.md")), readme);
    assert!(!Path::new(&other_wt).join("src/routes/crew.rs").exists());
    assert!(!mark.exists(), "git ran in the worker's fake checkout");
}

#[test]
fn an_unfinished_operation_left_in_the_administration_hangs_nothing() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = routes_run(&env, &repo, "true", &[]);
    // A rebase's state whose head-name is a link to a FIFO: git status would block on it.
    let fifo = env.root().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let state = repo.join(format!(".git/worktrees/{run}/rebase-merge"));
    std::fs::create_dir_all(&state).unwrap();
    std::os::unix::fs::symlink(&fifo, state.join("head-name")).unwrap();
    let out = env
        .command("timeout")
        .current_dir(&repo)
        .args(["30", crate::common::bin().to_str().unwrap(), "verify", &run])
        .output()
        .unwrap();
    assert_ne!(out.status.code(), Some(124), "verify hung");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(!state.exists());
}

#[test]
fn a_worker_that_breaks_its_worktree_config_blocks_no_other_dispatch() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let bad =
        crate::dispatch::dispatched(&env, &repo, "bad", "bad-config", &["--scope", "docs/**"]);
    let admin = repo.join(format!(".git/worktrees/{bad}/config.worktree"));
    poll_until(
        Duration::from_secs(20),
        "the worker to break its config",
        || read(&admin).contains("[x]"),
    );
    let run = routes_run(&env, &repo, "true", &[]);
    let show = env.crew(&repo, &["show", &run]).json();
    assert_eq!(show["run"]["outcome"], "pass", "{show}");
    // Ended, its administration is the lead's again.
    let bad_show = env.crew(&repo, &["show", &bad]).json();
    assert_eq!(bad_show["run"]["phase"], "working", "{bad_show}");
    env.crew(&repo, &["abandon", &bad]).expect_code(0);
    assert!(!read(&admin).contains("[x]"), "{}", read(&admin));
    env.git_ok(&repo, &["worktree", "list"]);
}

#[test]
fn a_fenced_worker_cannot_touch_the_object_store_and_false_objects_stay_out() {
    require_fence();
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let readme = env.git_ok(&repo, &["rev-parse", "main:README.md"]);
    let blob = readme.trim();
    let object = repo.join(format!(".git/objects/{}/{}", &blob[..2], &blob[2..]));
    let before = std::fs::read(&object).unwrap();
    let run = env.finished_run(
        &repo,
        "routes",
        "objects",
        &[
            "--scope",
            "src/routes/**",
            "--verify",
            "true",
            "--set",
            "backends.objects.env.OBJECTS=existing",
        ],
    );
    let out = env.transcript(&repo, &run);
    assert!(out.contains("second commit: ok"), "{out}");
    assert_eq!(std::fs::read(&object).unwrap(), before);
    let show = env.crew(&repo, &["show", &run]).json();
    if show["run"]["fence"]
        .as_str()
        .is_some_and(|f| f.ends_with("+ns"))
    {
        // In its private view of the git dir the overwrite went to its quarantine: an
        // object under a false name, which never enters the store and refuses the run.
        assert!(out.contains("existing: WROTE"), "{out}");
        assert_eq!(show["run"]["outcome"], "scope-reject", "{show}");
        assert!(
            show["run"]["decision"]
                .as_str()
                .unwrap()
                .contains("does not match their names"),
            "{show}"
        );
        env.git_ok(&repo, &["fsck", "--no-dangling"]);
        assert_eq!(
            env.git_ok(&repo, &["cat-file", "blob", blob]),
            "# Project\n"
        );
        // Its own commits, made through the view, come into the store: a run that
        // tries nothing else passes and integrates.
        let run = env.finished_run(
            &repo,
            "routes-own",
            "objects",
            &["--scope", "src/routes/**", "--verify", "true"],
        );
        let show = env.crew(&repo, &["show", &run]).json();
        assert_eq!(show["run"]["outcome"], "pass", "{show}");
        env.crew(&repo, &["integrate", &run]).expect_code(0);
        env.git_ok(&repo, &["fsck", "--no-dangling"]);
    } else {
        assert!(out.contains("existing: refused"), "{out}");
        // Its own commits came into the store: the run passes and integrates.
        assert_eq!(show["run"]["outcome"], "pass", "{show}");
        env.crew(&repo, &["integrate", &run]).expect_code(0);
        env.git_ok(&repo, &["fsck", "--no-dangling"]);
    }

    // An object under a false name never enters the store: the run is refused.
    let run = env.finished_run(
        &repo,
        "fake",
        "objects",
        &[
            "--scope",
            "src/routes/**",
            "--verify",
            "true",
            "--set",
            "backends.objects.env.OBJECTS=false-name",
        ],
    );
    let out = env.transcript(&repo, &run);
    assert!(out.contains("false-name: committed"), "{out}");
    let show = env.crew(&repo, &["show", &run]).json();
    assert_eq!(show["run"]["outcome"], "scope-reject", "{show}");
    assert!(
        show["run"]["decision"]
            .as_str()
            .unwrap()
            .contains("does not match their names"),
        "{show}"
    );
    env.git_ok(
        &repo,
        &["fsck", "--no-dangling", "--connectivity-only", "main"],
    );
}

/// A finished run of the `tamper` worker with `TAMPER=mode`; its `show` JSON.
fn tampered(env: &TestEnv, repo: &Path, mode: &str) -> Value {
    let set = format!("backends.tamper.env.TAMPER={mode}");
    let run = env.finished_run(
        repo,
        &format!("t-{mode}"),
        "tamper",
        &[
            "--scope",
            "src/routes/**",
            "--verify",
            "true",
            "--set",
            &set,
        ],
    );
    env.crew(repo, &["show", &run]).json()["run"].clone()
}

#[test]
fn what_a_worker_leaves_in_its_quarantine_and_administration_harms_nothing() {
    require_fence();
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let main = env.git_ok(&repo, &["rev-parse", "main"]);

    // Symlinks to the refs in the quarantine: the import follows none of them.
    let run = tampered(&env, &repo, "quarantine");
    let id = run["run"].as_str().unwrap();
    assert!(env.transcript(&repo, id).contains("fifo: refused"));
    assert_eq!(env.git_ok(&repo, &["rev-parse", "main"]), main);
    assert!(
        repo.join(".git/refs/heads/main").exists()
            || read(&repo.join(".git/packed-refs")).contains("refs/heads/main")
    );
    assert_eq!(run["outcome"], "scope-reject", "{run}");

    // No FIFO where git reads: the fence refuses to make one.
    let run = tampered(&env, &repo, "fifo-head");
    assert!(
        env.transcript(&repo, run["run"].as_str().unwrap())
            .contains("fifo: refused")
    );
    env.git_ok(&repo, &["worktree", "list"]);

    // A folder where config.worktree goes: the worker's doing, a scope rejection.
    let run = tampered(&env, &repo, "config-dir");
    assert_eq!(run["outcome"], "scope-reject", "{run}");
    let out = env.crew(&repo, &["verify", run["run"].as_str().unwrap()]);
    assert_ne!(out.code, 70, "{}", out.stdout);

    // HEAD deleted and the index garbage: the worker's doing, a scope rejection; verify
    // says so without calling it a bug.
    let run = tampered(&env, &repo, "no-head");
    assert_eq!(run["outcome"], "scope-reject", "{run}");
    let out = env.crew(&repo, &["verify", run["run"].as_str().unwrap()]);
    assert_ne!(out.code, 70, "{}", out.stdout);

    // The .git link pointing elsewhere: git-crew clears no index.lock there.
    let run = tampered(&env, &repo, "index-lock");
    let victim = repo.join(format!(
        ".git/crew/runs/{}/tmp/victim/index.lock",
        run["run"].as_str().unwrap()
    ));
    assert_eq!(read(&victim), "keep\n");
}

#[test]
fn a_nested_repository_and_a_deep_process_chain_stay_inside_the_run() {
    require_fence();
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = tampered(&env, &repo, "nested");
    let id = run["run"].as_str().unwrap().to_string();
    assert!(!repo.join("PLANTED-nested").exists(), "{run}");
    let out = env.crew(&repo, &["integrate", &id]);
    out.expect_code(0);
    assert!(!repo.join("PLANTED-nested").exists());
    // It came in by its pointer, as git adds a repository nested in a work tree (and as
    // the worker's own `git add` inside the fence would have), through no filter of its own.
    let entry = env.git_ok(&repo, &["ls-tree", "HEAD", "src/routes/sub"]);
    assert!(entry.starts_with("160000 commit "), "{entry}");

    let run = tampered(&env, &repo, "chain");
    let id = run["run"].as_str().unwrap().to_string();
    let needle = format!("crew/runs/{id}/tmp/link.sh");
    let left = crate::common::processes_with(&needle);
    assert_eq!(left, 0, "{left} processes of the chain outlived the run");
}

#[test]
fn a_task_whose_branch_folder_nests_in_another_is_refused() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    routes_run(&env, &repo, "true", &[]);
    let out = env.crew(
        &repo,
        &[
            "dispatch",
            "--task",
            "routes/v2",
            "--backend",
            "ok",
            "--prompt",
            "x",
            "--scope",
            "docs/**",
        ],
    );
    out.expect_code(4);
    assert_eq!(out.json()["error"]["code"], "task-nests");
}

#[test]
fn gits_own_per_worktree_folders_survive_the_restore() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = routes_run(&env, &repo, "true", &[]);
    let admin = repo.join(format!(".git/worktrees/{run}"));
    write(&admin.join("modules/sub/HEAD"), "ref: refs/heads/main\n");
    write(&admin.join("info/sparse-checkout"), "/*\n");
    write(
        &admin.join("MERGE_HEAD"),
        "0000000000000000000000000000000000000000\n",
    );
    env.crew(&repo, &["verify", &run]).expect_code(0);
    assert!(
        admin.join("modules/sub/HEAD").exists(),
        "a submodule's repository went"
    );
    assert!(admin.join("info/sparse-checkout").exists());
    assert!(
        !admin.join("MERGE_HEAD").exists(),
        "an unfinished merge stayed"
    );
}

/// The bytes of every file under `dir` (their apparent sizes), `0` when it is gone.
fn bytes_under(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => bytes_under(&e.path()),
            Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
            _ => 0,
        })
        .sum()
}

/// A finished run of the `bulky` worker with `BULKY=mode` and the `extra` flags; its
/// `show` JSON.
fn bulky(env: &TestEnv, repo: &Path, task: &str, mode: &str, extra: &[&str]) -> Value {
    let set = format!("backends.bulky.env.BULKY={mode}");
    let run = env
        .dispatch(repo, task)
        .backend("bulky")
        .scope("src/routes/**")
        .set(&set)
        .args(extra)
        .finished();
    env.crew(repo, &["show", &run]).json()["run"].clone()
}

#[test]
fn a_sparse_file_over_the_cap_ends_the_run_unhashed_within_its_budget() {
    require_fence();
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let before = bytes_under(&repo.join(".git/objects"));
    // 30 GiB the worker made with one `truncate`: hashing it would take minutes.
    let run = bulky(&env, &repo, "sparse", "sparse", &["--time-budget", "5s"]);
    assert_eq!(run["outcome"], "scope-reject", "{run}");
    let decision = run["decision"].as_str().unwrap();
    assert_eq!(
        decision,
        "the run left a file over fences.max_file_size (100 MiB), so nothing was committed: src/routes/big.bin (30 GiB)"
    );
    assert_eq!(run["max_file_size"], 100 << 20, "{run}");
    // Ended within the budget and the supervisor's own bound (10 s), with room to spare
    // for a slow machine; the recorded times, not the test's clock.
    let elapsed = run["elapsed_s"].as_u64().unwrap();
    assert!(elapsed < 5 + 10 + 20, "{elapsed}s: {run}");
    // Nothing of it was hashed into the store or the run's quarantine.
    let id = run["run"].as_str().unwrap();
    let grown = bytes_under(&repo.join(".git/objects")) - before;
    let quarantined = bytes_under(&repo.join(format!(".git/crew/runs/{id}/objects")));
    assert!(grown < 1 << 20, "the object store grew by {grown} bytes");
    assert!(
        quarantined < 1 << 20,
        "{quarantined} bytes in the quarantine"
    );
}

#[test]
fn an_object_over_the_cap_that_the_worker_committed_itself_stays_out() {
    require_fence();
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    // What the worker commits: 5 MiB of zeros (a few kilobytes on disk, compressed).
    let zeros = env.root().join("zeros");
    std::fs::write(&zeros, vec![0u8; 5 << 20]).unwrap();
    let blob = env.git_ok(&repo, &["hash-object", &zeros.to_string_lossy()]);
    let blob = blob.trim();
    let cap = ["--set", "fences.max_file_size=1MiB"];

    // A loose object: its header is read, its body is not inflated.
    let run = bulky(&env, &repo, "loose", "commit", &cap);
    let id = run["run"].as_str().unwrap();
    assert!(env.transcript(&repo, id).contains("commit: ok"));
    assert_eq!(run["outcome"], "scope-reject", "{run}");
    assert_eq!(
        run["decision"],
        format!(
            "the run wrote objects over fences.max_file_size (1 MiB), kept out of the repository: {blob} (5 MiB)"
        )
    );
    assert_ne!(env.git(&repo, &["cat-file", "-e", blob]).code, 0);

    // A pack (what git writes for a file over core.bigFileThreshold): refused before
    // index-pack sees it, for the object it holds.
    let run = bulky(&env, &repo, "packed", "pack", &cap);
    let id = run["run"].as_str().unwrap();
    assert!(env.transcript(&repo, id).contains("pack: written"));
    assert_eq!(run["outcome"], "scope-reject", "{run}");
    let decision = run["decision"].as_str().unwrap();
    assert!(
        decision.starts_with(
            "the run wrote objects over fences.max_file_size (1 MiB), kept out of the repository: an object of pack-"
        ) && decision.ends_with(".pack (5 MiB)"),
        "{decision}"
    );
    assert_ne!(env.git(&repo, &["cat-file", "-e", blob]).code, 0);

    // Under the cap (the default 100 MiB) the same work passes and comes into the store.
    let run = bulky(&env, &repo, "under", "commit", &["--verify", "true"]);
    assert_eq!(run["outcome"], "pass", "{run}");
    env.git_ok(&repo, &["cat-file", "-e", blob]);
}

#[test]
fn a_git_add_with_too_much_to_hash_is_stopped_at_the_budget_and_its_bound() {
    require_fence();
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    // With the cap out of the way, git has 200 GiB to hash: minutes of work on any
    // machine, far more than the budget and the bound.
    let run = bulky(
        &env,
        &repo,
        "hashing",
        "sparse",
        &[
            "--time-budget",
            "3s",
            "--set",
            "backends.bulky.env.SIZE=200G",
            "--set",
            "fences.max_file_size=1TiB",
        ],
    );
    assert_eq!(run["outcome"], "timeout", "{run}");
    assert_eq!(
        run["decision"],
        "`git add` of the work left behind ran past the time budget and its 10s grace, and was stopped"
    );
    let elapsed = run["elapsed_s"].as_u64().unwrap();
    assert!(elapsed < 3 + 10 + 20, "{elapsed}s: {run}");
    // The stopped git left its worktree usable: no index lock.
    let id = run["run"].as_str().unwrap();
    assert!(
        !repo
            .join(format!(".git/worktrees/{id}/index.lock"))
            .exists()
    );
}
