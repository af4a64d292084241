//! A run worktree's `[worktree] setup`, and toolchain failures that are not the worker's:
//! a setup runs once, inside the run's fence with the worker's environment, before the
//! worker starts, its output in the transcript and its time reported on its own; a setup,
//! a filter or a hook that fails for want of a tool is an `error` the two-failure rule
//! never counts, while a hook that refuses the worker's content stays the worker's.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{TestEnv, read, write};

/// `crew-repo.sh` at `<tmp>/repo`, with `deps/` ignored (committed).
fn repo(env: &TestEnv) -> PathBuf {
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    write(&repo.join(".gitignore"), "deps/\n");
    env.git_ok(&repo, &["add", ".gitignore"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "ignore deps"]);
    repo
}

/// `--set worktree.setup=<command>`.
fn setup(command: &str) -> String {
    format!("worktree.setup={}", toml_string(command))
}

fn toml_string(text: &str) -> String {
    toml::Value::String(text.to_string()).to_string()
}

/// Dispatches `backend` for `task` with the `--set`s, waits, and returns the result.
fn run(env: &TestEnv, repo: &Path, task: &str, backend: &str, args: &[&str]) -> (String, Value) {
    let run = env
        .dispatch(repo, task)
        .backend(backend)
        .scope("src/routes/**")
        .args(args)
        .run_id();
    let (_, result) = env.wait(repo, &run).timeout("120s").result();
    (run, result)
}

/// should-stop's count of the task's failures under the `ok`-like backend's key.
fn failures(env: &TestEnv, repo: &Path, task: &str, backend: &str) -> u64 {
    let verdict = env
        .should_stop(repo, task)
        .model(&format!("backend:{backend}"))
        .verdict();
    verdict["failures"].as_u64().expect("failures")
}

#[test]
fn a_setup_readies_the_worktree_before_the_worker_with_its_environment() {
    let env = TestEnv::new();
    let repo = repo(&env);
    let command = "mkdir -p deps && printf 'ready home=%s tmp=%s main=%s\\n' \"$HOME\" \"$TMPDIR\" \"$CREW_MAIN_WORKTREE\" > deps/ready && echo setup-says-hello && echo setup-warns >&2";
    let set = setup(command);
    let (id, result) = run(
        &env,
        &repo,
        "setup",
        "uses-setup",
        &[
            "--set",
            &set,
            "--verify",
            "grep -q ready src/routes/from-setup.txt",
        ],
    );
    let transcript = env.transcript(&repo, &id);
    assert_eq!(result["outcome"], "pass", "{result}\n{transcript}");
    // Its output is in the transcript, under a header of its own, before the worker's.
    let header = transcript
        .find(&format!("setup `{command}`"))
        .unwrap_or_else(|| panic!("no setup header:\n{transcript}"));
    let said = transcript.find("setup-says-hello").expect("setup stdout");
    assert!(transcript.contains("setup-warns"), "{transcript}");
    let attempt = transcript
        .find("attempt 1 backend")
        .expect("attempt header");
    assert!(header < said && said < attempt, "{transcript}");
    // The worker's environment: its own home and temp folder; the lead's checkout named.
    let made = read(
        &repo
            .join(".git/crew/worktrees")
            .join(&id)
            .join("deps/ready"),
    );
    let git_dir = repo.join(".git").canonicalize().unwrap();
    let field = |name: &str| {
        made.split_whitespace()
            .find_map(|w| w.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| panic!("no {name} in {made}"))
            .to_string()
    };
    assert!(
        Path::new(&field("home")).starts_with(repo.join(".git/crew"))
            || Path::new(&field("home")).starts_with(&git_dir),
        "{made}"
    );
    assert!(field("tmp").contains("/crew/runs/"), "{made}");
    assert_eq!(
        Path::new(&field("main")),
        repo.canonicalize().unwrap(),
        "{made}"
    );
    // Its time is reported on its own, in the JSON and for people.
    let show = env.crew(&repo, &["show", &id]).json();
    let s = &show["run"]["setup"];
    assert_eq!(s["command"], command, "{show}");
    assert_eq!(s["passed"], true, "{show}");
    assert_eq!(s["exit_code"], 0, "{show}");
    assert!(s["elapsed_ms"].as_u64().is_some(), "{show}");
    assert!(s["started_at"].as_str().is_some(), "{show}");
    let status = env.crew(&repo, &["status", "--json"]).json();
    let listed = status["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["run"] == id.as_str())
        .unwrap_or_else(|| panic!("{status}"));
    assert_eq!(listed["setup"]["passed"], true, "{status}");
    let human = env.crew(&repo, &["show", &id, "--human"]);
    assert!(
        human
            .stdout
            .contains(&format!("setup `{command}`: passed in ")),
        "{}",
        human.stdout
    );
    // What the setup made is not work: it does not land.
    env.crew(&repo, &["integrate", &id]).expect_code(0);
    let landed = env.git_ok(&repo, &["show", "--stat", "--format=", "HEAD^2"]);
    assert!(landed.contains("src/routes/from-setup.txt"), "{landed}");
    let tree = env.git_ok(&repo, &["ls-tree", "-r", "--name-only", "HEAD"]);
    assert!(!tree.contains("deps/"), "{tree}");
}

#[test]
fn a_failed_setup_is_an_error_the_worker_never_starts_and_should_stop_never_counts() {
    let env = TestEnv::new();
    let repo = repo(&env);
    let command = "echo about-to-fail; exit 7";
    let set = setup(command);
    for _ in 0..2 {
        let (id, result) = run(&env, &repo, "broken", "ok", &["--set", &set]);
        assert_eq!(result["outcome"], "error", "{result}");
        assert_eq!(result["attempts"], 0, "{result}");
        let decision = result["decision"].as_str().unwrap();
        assert!(
            decision.contains(&format!("the worktree setup `{command}` exited 7")),
            "{decision}"
        );
        assert!(
            decision.contains("the worker was not started"),
            "{decision}"
        );
        assert_eq!(result["setup"]["passed"], false, "{result}");
        assert_eq!(result["setup"]["exit_code"], 7, "{result}");
        let transcript = env.transcript(&repo, &id);
        assert!(transcript.contains("about-to-fail"), "{transcript}");
        assert!(!transcript.contains("attempt 1 backend"), "{transcript}");
        assert!(result["diff"]["files"].as_array().unwrap().is_empty());
    }
    assert_eq!(failures(&env, &repo, "broken", "ok"), 0);
    let verdict = env
        .should_stop(&repo, "broken")
        .model("backend:ok")
        .verdict();
    assert_eq!(verdict["decision"], "continue", "{verdict}");
}

#[test]
fn a_setup_past_its_bound_or_that_changes_tracked_files_is_an_error() {
    let env = TestEnv::new();
    let repo = repo(&env);
    let set = setup("sleep 30");
    let started = std::time::Instant::now();
    let (_, result) = run(
        &env,
        &repo,
        "slow-setup",
        "ok",
        &["--set", &set, "--set", "worktree.setup_timeout=\"1s\""],
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(25));
    assert_eq!(result["outcome"], "error", "{result}");
    let decision = result["decision"].as_str().unwrap();
    assert!(decision.contains("setup_timeout, 1s"), "{decision}");

    let set = setup("echo more >> README.md");
    let (_, result) = run(&env, &repo, "dirty-setup", "ok", &["--set", &set]);
    assert_eq!(result["outcome"], "error", "{result}");
    let decision = result["decision"].as_str().unwrap();
    assert!(
        decision.contains("changed what git tracks (README.md)"),
        "{decision}"
    );
    assert_eq!(failures(&env, &repo, "slow-setup", "ok"), 0);
    assert_eq!(failures(&env, &repo, "dirty-setup", "ok"), 0);
}

#[test]
fn a_setup_runs_once_per_run_not_per_attempt() {
    let env = TestEnv::new();
    let repo = repo(&env);
    let set = setup("mkdir -p deps && echo ran >> deps/count");
    // A run that asks for help, then is advised: one run, two supervisors.
    let id = env
        .dispatch(&repo, "helped")
        .backend("help-then-work")
        .scope("src/routes/**")
        .args(&["--set", &set])
        .run_id();
    let (_, parked) = env.wait(&repo, &id).result();
    assert_eq!(parked["phase"], "needs-help", "{parked}");
    env.crew(&repo, &["advise", &id, "--text", "sqlite"])
        .expect_code(0);
    let (_, result) = env.wait(&repo, &id).result();
    assert_eq!(result["outcome"], "pass", "{result}");
    // A failed verify tried again in the same run.
    let flaky = env
        .dispatch(&repo, "flaky")
        .backend("flaky")
        .scope("src/routes/**")
        .verify("grep right src/routes/f.rs")
        .args(&["--set", &set, "--continue-until-pass"])
        .run_id();
    let (_, again) = env.wait(&repo, &flaky).result();
    assert_eq!(again["outcome"], "pass", "{again}");
    assert_eq!(again["attempts"], 2, "{again}");
    for run in [&id, &flaky] {
        let count = read(
            &repo
                .join(".git/crew/worktrees")
                .join(run)
                .join("deps/count"),
        );
        assert_eq!(count, "ran\n", "run {run}");
    }
}

/// Appends `lines` to the repository's own pre-commit hook (the one `init` chained), which
/// every commit in a run worktree runs after git-crew's scope check.
fn add_to_hook(repo: &Path, lines: &str) {
    let hook = repo.join(".git/hooks/pre-commit");
    let text = read(&hook);
    write(&hook, &format!("{text}\n{lines}\n"));
}

#[test]
fn a_hook_that_runs_a_missing_tool_is_an_error_not_the_workers() {
    let env = TestEnv::new();
    let repo = repo(&env);
    add_to_hook(&repo, "no-such-linter --check \"$@\"");
    for _ in 0..2 {
        let (id, result) = run(&env, &repo, "lint", "ok", &[]);
        let transcript = env.transcript(&repo, &id);
        assert_eq!(result["outcome"], "error", "{result}\n{transcript}");
        let decision = result["decision"].as_str().unwrap();
        let hook = repo.join(".git/hooks/pre-commit");
        assert!(
            decision.contains(&format!(
                "the pre-commit hook {} exited 127",
                hook.display()
            )),
            "{decision}"
        );
        assert!(decision.contains("not the worker's"), "{decision}");
    }
    assert_eq!(failures(&env, &repo, "lint", "ok"), 0);
}

#[test]
fn a_hook_that_refuses_the_workers_content_is_the_workers_failure() {
    let env = TestEnv::new();
    let repo = repo(&env);
    // A lint that reads what is staged and refuses it.
    add_to_hook(
        &repo,
        "if git diff --cached --name-only | grep -q 'crew.rs$'; then echo 'crew.rs: a function without a test' >&2; exit 1; fi",
    );
    let (_, result) = run(&env, &repo, "lint", "ok", &[]);
    assert_eq!(result["outcome"], "fail", "{result}");
    let decision = result["decision"].as_str().unwrap();
    assert!(
        decision.starts_with("a hook refused the commit of the work left behind"),
        "{decision}"
    );
    assert!(decision.contains("exited 1"), "{decision}");
    assert_eq!(failures(&env, &repo, "lint", "ok"), 1);
}

#[test]
fn a_filter_that_fails_in_git_add_is_an_error_naming_the_filter() {
    let env = TestEnv::new();
    let repo = repo(&env);
    // A clean filter for *.txt that always fails (required, as git-lfs sets its own).
    env.git_ok(
        &repo,
        &[
            "config",
            "filter.stamp.clean",
            "stamp-tool --clean %f; exit 3",
        ],
    );
    env.git_ok(&repo, &["config", "filter.stamp.required", "true"]);
    write(&repo.join(".gitattributes"), "*.txt filter=stamp\n");
    env.git_ok(&repo, &["add", ".gitattributes"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "stamp txt files"]);
    for _ in 0..2 {
        let run = env
            .dispatch(&repo, "stamped")
            .backend("own-file")
            .scope("work/**")
            .run_id();
        let (_, result) = env.wait(&repo, &run).result();
        assert_eq!(result["outcome"], "error", "{result}");
        let decision = result["decision"].as_str().unwrap();
        assert!(
            decision.contains(
                "the `stamp` filter (`stamp-tool --clean %f; exit 3`) on work/stamped.txt"
            ),
            "{decision}"
        );
        assert!(decision.contains("not the worker's"), "{decision}");
    }
    assert_eq!(failures(&env, &repo, "stamped", "own-file"), 0);
}

/// `npm ci` as the setup of a Node project, against the npm registry: the worker requires
/// the devDependency it installed, the verify runs node on the worker's module, and what
/// lands is the module alone — no `node_modules`. npm says nothing of an unknown env
/// config (a `npm_config_*` variable npm does not know, as pnpm's store folder once was).
#[test]
#[ignore = "needs the npm registry; .ci/run runs it"]
fn npm_ci_as_the_setup_readies_a_node_project() {
    let env = TestEnv::new();
    let repo = env.fixture("npm-project.sh", "repo", &[]);
    let set = setup("npm ci --no-audit --no-fund");
    let run = env
        .dispatch(&repo, "even")
        .backend("npm-user")
        .scope("src/**")
        .verify("node -e 'process.exit(require(\"./src/even.js\")(4) && !require(\"./src/even.js\")(3) ? 0 : 1)'")
        .args(&["--set", &set])
        .run_id();
    let (_, result) = env.wait(&repo, &run).timeout("300s").result();
    let transcript = env.transcript(&repo, &run);
    assert_eq!(result["outcome"], "pass", "{result}\n{transcript}");
    assert_eq!(result["setup"]["passed"], true, "{result}");
    assert!(result["setup"]["elapsed_ms"].as_u64().is_some(), "{result}");
    assert!(transcript.contains("added 1 package"), "{transcript}");
    assert!(!transcript.contains("Unknown env config"), "{transcript}");
    assert!(!transcript.contains("npm warn"), "{transcript}");
    // npm's cache is the workers' shared one, never the lead's.
    assert!(
        repo.join(".git/crew/worker-cache/npm")
            .read_dir()
            .unwrap()
            .next()
            .is_some()
    );
    assert!(!env.home().join(".npm").exists());
    env.crew(&repo, &["integrate", &run]).expect_code(0);
    let landed = env.git_ok(&repo, &["diff", "--name-only", "HEAD^1", "HEAD"]);
    let landed: Vec<&str> = landed.lines().collect();
    assert!(landed.contains(&"src/even.js"), "{landed:?}");
    assert!(
        landed
            .iter()
            .all(|p| *p == "src/even.js" || *p == "docs/state/crew.json"),
        "{landed:?}"
    );
    let tree = env.git_ok(&repo, &["ls-tree", "-r", "--name-only", "HEAD"]);
    assert!(!tree.contains("node_modules"), "{tree}");
}

/// pnpm 11 reads its store folder from `pnpm_config_store_dir`, pnpm 10 and older from
/// their global rc: both name the workers' shared store, and npm is given no variable
/// it would warn of.
#[test]
fn pnpm_of_any_version_finds_the_shared_store_and_npm_no_unknown_config() {
    let env = TestEnv::new();
    let repo = repo(&env);
    let set = setup(
        "mkdir -p deps && { echo \"env=$pnpm_config_store_dir\"; cat \"$XDG_CONFIG_HOME/pnpm/rc\"; env | grep -i '^npm_config_' | cut -d= -f1; } > deps/pnpm",
    );
    let (id, result) = run(&env, &repo, "pnpm", "ok", &["--set", &set]);
    assert_eq!(result["outcome"], "pass", "{result}");
    let seen = read(&repo.join(".git/crew/worktrees").join(&id).join("deps/pnpm"));
    let store = repo.join(".git/crew/worker-cache/pnpm");
    assert_eq!(
        seen,
        format!(
            "env={}\nstore-dir={}\nnpm_config_cache\n",
            store.display(),
            store.display()
        )
    );
}

/// Integrate verifies the merge again in a throwaway checkout when the target moved: the
/// setup readies that checkout too, or a verify that needs what it made could never pass
/// there.
#[test]
fn a_throwaway_checkout_is_set_up_before_the_merge_is_verified_again() {
    let env = TestEnv::new();
    let repo = repo(&env);
    let set = setup("mkdir -p deps && echo ready > deps/ready");
    let (id, result) = run(
        &env,
        &repo,
        "moved",
        "uses-setup",
        &[
            "--set",
            &set,
            "--verify",
            "test -f deps/ready && grep -q ready src/routes/from-setup.txt",
        ],
    );
    assert_eq!(result["outcome"], "pass", "{result}");
    // The target moves on, outside the run's scope.
    write(&repo.join("docs/guide.md"), "# Docs, moved on\n");
    env.git_ok(&repo, &["commit", "-q", "-am", "main moves"]);
    let out = env.crew(&repo, &["integrate", &id]);
    out.expect_code(0);
    assert!(
        out.json()["merged_verify"]["passed"] == true,
        "{}",
        out.stdout
    );
    let transcript = env.transcript(&repo, &id);
    assert_eq!(
        transcript.matches("setup `mkdir -p deps").count(),
        2,
        "the run's worktree and the throwaway checkout:\n{transcript}"
    );
}

/// A setup may link a heavy folder the project ignores from the main worktree rather than
/// build or copy it: the run's processes read through the link (under a private /tmp too,
/// where the test's folders lie), and the fence lets nothing write the lead's folder.
#[test]
fn a_setup_links_an_ignored_folder_of_the_main_worktree() {
    crate::dispatch::require_fence();
    let env = TestEnv::new();
    let repo = repo(&env);
    // `deps/` would ignore a folder only: git sees the link as a file.
    write(&repo.join(".gitignore"), "deps\n");
    env.git_ok(
        &repo,
        &["commit", "-q", "-am", "ignore deps, folder or link"],
    );
    write(&repo.join("deps/ready"), "ready in the lead's checkout\n");
    let set = setup(
        "ln -s \"$CREW_MAIN_WORKTREE/deps\" deps && if echo x > deps/planted; then echo wrote; else echo refused; fi",
    );
    let (id, result) = run(
        &env,
        &repo,
        "linked",
        "uses-setup",
        &[
            "--set",
            &set,
            "--verify",
            "grep -q 'lead' src/routes/from-setup.txt",
        ],
    );
    let transcript = env.transcript(&repo, &id);
    assert_eq!(result["outcome"], "pass", "{result}\n{transcript}");
    assert!(transcript.contains("refused"), "{transcript}");
    assert!(!repo.join("deps/planted").exists());
    assert_eq!(
        read(&repo.join("deps/ready")),
        "ready in the lead's checkout\n"
    );
}

/// A commit-msg hook that refuses git-crew's own message judges no content of the
/// worker's: its pre-commit hook passes when run again on its own, so the refusal is an
/// `error`, not counted.
#[test]
fn a_commit_refused_though_its_pre_commit_hook_passes_is_not_the_workers() {
    use std::os::unix::fs::PermissionsExt;
    let env = TestEnv::new();
    let repo = repo(&env);
    let hook = repo.join(".git/hooks/commit-msg");
    write(
        &hook,
        "#!/bin/sh\ngrep -q '^feat' \"$1\" || { echo 'commit-msg: conventional commits only' >&2; exit 1; }\n",
    );
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let (_, result) = run(&env, &repo, "message", "ok", &[]);
    assert_eq!(result["outcome"], "error", "{result}");
    let decision = result["decision"].as_str().unwrap();
    assert!(
        decision.contains("though its pre-commit hook passes"),
        "{decision}"
    );
    assert!(decision.contains("conventional commits only"), "{decision}");
    assert_eq!(failures(&env, &repo, "message", "ok"), 0);
}
