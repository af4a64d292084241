//! A run's worktree and the files that are not its work: what `.worktreeinclude` (read as
//! gitignore patterns, as Claude Code reads it) copies in from the lead's checkout —
//! never through a symlink the worker committed — and the tool state a worker or a
//! verify leaves (Python's caches, aider's files, `[worktree] ignore`), which git ignores
//! there through the run's own excludes file and so is never committed as work.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{TestEnv, read, write};

/// A scripted worker of this test at `<tmp>/<name>.sh` (`body`, then a complete footer),
/// made the default backend of the repository's flight and committed.
fn worker(env: &TestEnv, repo: &Path, name: &str, body: &str) {
    let script = env.root().join(format!("{name}.sh"));
    write(
        &script,
        &format!(
            "#!/bin/sh\nset -eu\n{body}\nprintf '## Result\\nDone.\\n\\n## How to verify\\ntrue\\n\\n## Deferred / concerns\\nNone.\\n'\n"
        ),
    );
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let flight = repo.join(".crew/flight.toml");
    let mut text = read(&flight);
    text = text.replacen(
        "default_backend = \"ok\"",
        &format!("default_backend = \"{name}\""),
        1,
    );
    text.push_str(&format!(
        "[backends.{name}]\nadapter = \"command\"\nargv = [\"{}\", \"{{prompt_file}}\"]\nconcurrency = 2\ntime_budget = \"2m\"\n",
        script.display()
    ));
    write(&flight, &text);
    env.git_ok(repo, &["add", ".crew/flight.toml"]);
    env.git_ok(repo, &["commit", "-q", "-m", "crew: worker"]);
}

/// Dispatches `task` with `args`; the dispatch's JSON.
fn dispatch(env: &TestEnv, repo: &Path, task: &str, args: &[&str]) -> Value {
    let mut all = vec!["dispatch", "--task", task, "--prompt", "Do the task."];
    all.extend_from_slice(args);
    let out = env.crew(repo, &all);
    out.expect_code(0);
    out.json()
}

/// Waits for `run`; its result.
fn finished(env: &TestEnv, repo: &Path, run: &str) -> Value {
    let (_, result) = env.wait(repo, run).timeout("120s").result();
    result
}

/// The files a commit range changed, but the integration record integrate commits
/// (`docs/state/crew.json`).
fn changed(env: &TestEnv, repo: &Path, range: &str) -> Vec<String> {
    env.git_ok(repo, &["diff", "--name-only", range])
        .lines()
        .filter(|path| *path != "docs/state/crew.json")
        .map(str::to_string)
        .collect()
}

fn warnings(json: &Value) -> Vec<String> {
    json["warnings"]
        .as_array()
        .unwrap_or(&Vec::new())
        .iter()
        .map(|w| w.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn worktreeinclude_patterns_copy_the_ignored_files_and_folders_they_match() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    write(
        &repo.join(".gitignore"),
        ".env*\n!.env.example\nconfig/secrets/\nnode_modules/\n",
    );
    write(&repo.join(".env.example"), "TOKEN=\n");
    env.git_ok(&repo, &["add", ".gitignore", ".env.example"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "ignore secrets"]);
    // What the lead has and git ignores.
    write(&repo.join(".env"), "TOKEN=lead\n");
    std::fs::set_permissions(repo.join(".env"), std::fs::Permissions::from_mode(0o600)).unwrap();
    write(&repo.join(".env.local"), "LOCAL=1\n");
    write(&repo.join(".env.nocopy"), "NO=1\n");
    write(&repo.join("config/secrets/key.pem"), "KEY\n");
    write(&repo.join("config/secrets/nested/token"), "T\n");
    write(&repo.join("services/api/.env"), "API=1\n");
    write(
        &repo.join("node_modules/pkg/index.js"),
        "module.exports = 1\n",
    );
    // The tracked example, changed but not committed: the run gets its commit's.
    write(&repo.join(".env.example"), "TOKEN=changed\n");
    // Not ignored: it would be committed as the run's work.
    write(&repo.join("notes.txt"), "mine\n");
    // The lead's symlinks: one inside the checkout, one out of it.
    std::os::unix::fs::symlink(".env", repo.join(".env.shared")).unwrap();
    write(&env.home().join("secret.env"), "HOME=1\n");
    std::os::unix::fs::symlink(env.home().join("secret.env"), repo.join(".env.home")).unwrap();
    write(
        &repo.join(".worktreeinclude"),
        "# what a worktree needs\n.env*\nconfig/secrets/\n**/.env*\nnotes.txt\nmissing/\n!.env.nocopy\n",
    );
    let json = dispatch(&env, &repo, "routes", &["--scope", "src/routes/**"]);
    let run = json["run"].as_str().unwrap().to_string();
    let wt = PathBuf::from(json["worktree"].as_str().unwrap());
    let result = finished(&env, &repo, &run);
    assert_eq!(result["outcome"], "pass", "{result}");

    assert_eq!(read(&wt.join(".env")), "TOKEN=lead\n");
    let mode = std::fs::metadata(wt.join(".env"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "the copy keeps the file's mode");
    assert_eq!(read(&wt.join(".env.local")), "LOCAL=1\n");
    assert_eq!(read(&wt.join("config/secrets/key.pem")), "KEY\n");
    assert_eq!(read(&wt.join("config/secrets/nested/token")), "T\n");
    assert_eq!(read(&wt.join("services/api/.env")), "API=1\n");
    assert_eq!(read(&wt.join(".env.example")), "TOKEN=\n");
    // A link inside the checkout is copied as the link; one out of it is not.
    assert_eq!(
        std::fs::read_link(wt.join(".env.shared")).unwrap(),
        PathBuf::from(".env")
    );
    assert!(std::fs::symlink_metadata(wt.join(".env.home")).is_err());
    for absent in [".env.nocopy", "notes.txt", "node_modules"] {
        assert!(
            std::fs::symlink_metadata(wt.join(absent)).is_err(),
            "{absent} was copied"
        );
    }
    // What was passed over, and the patterns that copy nothing, are said.
    let said = warnings(&json);
    let has = |needle: &str| said.iter().any(|w| w.contains(needle));
    assert!(
        has(".worktreeinclude:5: `notes.txt` matches only files git tracks or does not ignore"),
        "{said:?}"
    );
    assert!(
        has(".worktreeinclude:6: `missing/` matches nothing"),
        "{said:?}"
    );
    assert!(
        has(".env.home is a symbolic link to") && has("outside the checkout: not copied"),
        "{said:?}"
    );
    assert_eq!(said.len(), 3, "{said:?}");
    // None of it is the run's work.
    assert_eq!(
        changed(&env, &repo, &format!("main..crew/routes/{run}")),
        ["src/routes/crew.rs"]
    );
}

#[test]
fn a_symlink_a_worker_commits_never_carries_the_leads_files_out_of_a_checkout() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    write(&repo.join(".gitignore"), ".env\nconfig/secrets/\n");
    env.git_ok(&repo, &["add", ".gitignore"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "ignore secrets"]);
    write(&repo.join(".env"), "TOKEN=lead\n");
    write(&repo.join("config/secrets/key"), "KEY\n");
    write(&repo.join(".worktreeinclude"), ".env\nconfig/secrets/\n");
    // Where the worker points: a file that is not there yet, and a folder, both in the
    // lead's home.
    let plant = env.home().join("plant");
    std::fs::create_dir_all(plant.join("dir")).unwrap();
    worker(
        &env,
        &repo,
        "linker",
        "rm -rf .env config\n\
         ln -s \"$PLANT/planted-env\" .env\n\
         ln -s \"$PLANT/dir\" config\n\
         git add -f .env config\n\
         git commit -q -m 'links'",
    );
    let plant_var = format!("backends.linker.env.PLANT=\"{}\"", plant.display());
    let json = dispatch(
        &env,
        &repo,
        "links",
        &["--scope", "**", "--set", &plant_var],
    );
    let run = json["run"].as_str().unwrap().to_string();
    // The branch audit refuses links out of the repository; the commit is there all the
    // same, and `git crew verify` checks out what a run's branch holds.
    let result = finished(&env, &repo, &run);
    assert_eq!(result["outcome"], "scope-reject", "{result}");
    let branch = format!("crew/links/{run}");
    assert_eq!(
        env.git_ok(
            &repo,
            &[
                "ls-tree",
                "--format=%(objectmode) %(path)",
                &branch,
                ".env",
                "config"
            ]
        ),
        "120000 .env\n120000 config\n"
    );

    // `git crew verify` with the worktree gone checks the commit out afresh and copies
    // the lead's included files in: never through the committed links.
    let wt = PathBuf::from(json["worktree"].as_str().unwrap());
    env.git(&repo, &["worktree", "unlock", &wt.to_string_lossy()]);
    env.git_ok(
        &repo,
        &["worktree", "remove", "--force", &wt.to_string_lossy()],
    );
    let out = env.crew(
        &repo,
        &[
            "verify",
            &run,
            "--command",
            "test -L .env && test -L config",
        ],
    );
    out.expect_code(0);
    assert_eq!(out.json()["verify"]["passed"], true, "{}", out.stdout);
    assert!(
        std::fs::symlink_metadata(plant.join("planted-env")).is_err(),
        "the lead's .env was written through the committed link"
    );
    assert!(
        std::fs::read_dir(plant.join("dir"))
            .unwrap()
            .next()
            .is_none(),
        "the lead's secrets were written through the committed folder link"
    );

    // A run cut from that branch starts with the links as committed, and nothing goes
    // through them either.
    let json = dispatch(
        &env,
        &repo,
        "again",
        &[
            "--backend",
            "ok",
            "--scope",
            "src/routes/**",
            "--base",
            &branch,
        ],
    );
    let said = warnings(&json);
    assert!(
        said.iter()
            .any(|w| w.contains(".env is in the checked-out commit already")),
        "{said:?}"
    );
    assert!(
        said.iter()
            .any(|w| w.contains("config/secrets/key not copied")),
        "{said:?}"
    );
    let wt = PathBuf::from(json["worktree"].as_str().unwrap());
    assert!(
        std::fs::symlink_metadata(wt.join(".env"))
            .unwrap()
            .is_symlink()
    );
    assert!(std::fs::symlink_metadata(plant.join("planted-env")).is_err());
    assert!(
        std::fs::read_dir(plant.join("dir"))
            .unwrap()
            .next()
            .is_none()
    );
    let run = json["run"].as_str().unwrap().to_string();
    finished(&env, &repo, &run);
    assert_eq!(read(&repo.join(".env")), "TOKEN=lead\n");
}

#[test]
fn tool_state_a_worker_leaves_at_the_root_is_never_its_work() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    // The project adds its own; the lead's own excludes file still counts in a run.
    let flight = repo.join(".crew/flight.toml");
    let text = read(&flight).replacen(
        "default_backend = \"ok\"",
        "default_backend = \"ok\"\n[worktree]\nignore = [\"*.log\", \".cache/\"]",
        1,
    );
    write(&flight, &text);
    env.git_ok(&repo, &["commit", "-q", "-am", "crew: ignore logs"]);
    write(&env.home().join(".config/git/ignore"), "*.swp\n");
    worker(
        &env,
        &repo,
        "aiderish",
        "mkdir -p src/routes .aider.tags.cache.v4 .cache/tool\n\
         echo 'pub fn crew() {}' > src/routes/crew.rs\n\
         echo '# aider chat' > .aider.chat.history.md\n\
         echo 'add crew' > .aider.input.history\n\
         echo x > .aider.tags.cache.v4/cache.db\n\
         echo built > build.log\n\
         echo x > .cache/tool/state\n\
         echo x > .crew.rs.swp",
    );
    let json = dispatch(
        &env,
        &repo,
        "routes",
        &[
            "--scope",
            "src/routes/**",
            "--verify",
            "test -f src/routes/crew.rs",
        ],
    );
    let run = json["run"].as_str().unwrap().to_string();
    let wt = PathBuf::from(json["worktree"].as_str().unwrap());
    let result = finished(&env, &repo, &run);
    assert_eq!(result["outcome"], "pass", "{result}");
    assert!(wt.join(".aider.chat.history.md").exists() && wt.join("build.log").exists());
    assert_eq!(
        changed(&env, &repo, &format!("main..crew/routes/{run}")),
        ["src/routes/crew.rs"]
    );
    // The run's worktree is clean to git: verify runs there again, and it integrates.
    let out = env.crew(&repo, &["verify", &run]);
    out.expect_code(0);
    assert_eq!(out.json()["verify"]["passed"], true);
    let before = env.git_ok(&repo, &["rev-parse", "main"]);
    env.crew(&repo, &["integrate", &run]).expect_code(0);
    assert_eq!(
        changed(&env, &repo, &format!("{}..main", before.trim())),
        ["src/routes/crew.rs"]
    );
    // The project's .gitignore was never touched.
    assert!(!repo.join(".gitignore").exists());
}

#[test]
fn what_a_verify_leaves_never_makes_the_worktree_dirty() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    // A report and a folder of them that no default names, left by every verify.
    let verify = "mkdir -p htmlcov && echo x > htmlcov/index.html && echo r > 'report [1].xml' \
                  && test -f src/routes/crew.rs";
    let json = dispatch(
        &env,
        &repo,
        "routes",
        &[
            "--backend",
            "ok",
            "--scope",
            "src/routes/**",
            "--verify",
            verify,
        ],
    );
    let run = json["run"].as_str().unwrap().to_string();
    let wt = PathBuf::from(json["worktree"].as_str().unwrap());
    let result = finished(&env, &repo, &run);
    assert_eq!(result["outcome"], "pass", "{result}");
    assert!(wt.join("htmlcov/index.html").exists() && wt.join("report [1].xml").exists());
    // Verified again, twice, in the worktree: it is clean to git each time.
    for _ in 0..2 {
        let out = env.crew(&repo, &["verify", &run]);
        out.expect_code(0);
        assert_eq!(out.json()["verify"]["passed"], true, "{}", out.stdout);
    }
    let before = env.git_ok(&repo, &["rev-parse", "main"]);
    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(0);
    let cleanup = &out.json()["cleanup"];
    assert_eq!(cleanup["worktree"], "removed", "{cleanup}");
    assert_eq!(
        changed(&env, &repo, &format!("{}..main", before.trim())),
        ["src/routes/crew.rs"]
    );
}

#[test]
fn an_ignore_entry_that_is_no_pattern_is_refused_with_its_place() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let flight = repo.join(".crew/flight.toml");
    let text = read(&flight).replacen(
        "default_backend = \"ok\"",
        "default_backend = \"ok\"\n[worktree]\nignore = [\"*.log\", \"# cache\"]",
        1,
    );
    write(&flight, &text);
    let out = env.crew(&repo, &["flight"]);
    out.expect_code(2);
    assert!(
        out.stdout.contains("flight.toml:4:")
            && out
                .stdout
                .contains("`worktree.ignore[1]`: \\\"# cache\\\" is not a gitignore pattern"),
        "{}",
        out.stdout
    );
}

#[test]
#[ignore = "needs pytest; .ci/run installs it"]
fn a_real_pytest_run_leaves_no_bytecode_in_the_work() {
    let env = TestEnv::new();
    let version = env
        .command("python3")
        .args(["-m", "pytest", "--version"])
        .output()
        .expect("python3 runs");
    assert!(
        version.status.success(),
        "pytest is missing: {}",
        String::from_utf8_lossy(&version.stderr)
    );
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    write(
        &repo.join("pkg/__init__.py"),
        "def add(a, b):\n    return a + b\n",
    );
    write(
        &repo.join("tests/test_add.py"),
        "from pkg import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    );
    env.git_ok(&repo, &["add", "pkg", "tests"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "a package"]);
    worker(
        &env,
        &repo,
        "pytester",
        "printf 'from pkg import sub\\n\\n\\ndef test_sub():\\n    assert sub(3, 2) == 1\\n' > tests/test_sub.py\n\
         printf '\\n\\ndef sub(a, b):\\n    return a - b\\n' >> pkg/__init__.py\n\
         python3 -m pytest -q >&2",
    );
    let json = dispatch(
        &env,
        &repo,
        "sub",
        &[
            "--scope",
            "pkg/**",
            "--scope",
            "tests/**",
            "--verify",
            "python3 -m pytest -q",
        ],
    );
    let run = json["run"].as_str().unwrap().to_string();
    let wt = PathBuf::from(json["worktree"].as_str().unwrap());
    let result = finished(&env, &repo, &run);
    assert_eq!(result["outcome"], "pass", "{result}");
    // pytest and Python did leave their state in the worktree.
    assert!(wt.join("tests/__pycache__").is_dir() && wt.join("pkg/__pycache__").is_dir());
    assert!(wt.join(".pytest_cache").is_dir());
    assert_eq!(
        changed(&env, &repo, &format!("main..crew/sub/{run}")),
        ["pkg/__init__.py", "tests/test_sub.py"]
    );
    // The verify's own leftovers leave the worktree clean: it verifies again there.
    let out = env.crew(&repo, &["verify", &run]);
    out.expect_code(0);
    assert_eq!(out.json()["verify"]["passed"], true, "{}", out.stdout);
    let before = env.git_ok(&repo, &["rev-parse", "main"]);
    env.crew(&repo, &["integrate", &run]).expect_code(0);
    assert_eq!(
        changed(&env, &repo, &format!("{}..main", before.trim())),
        ["pkg/__init__.py", "tests/test_sub.py"]
    );
    let tree = env.git_ok(&repo, &["ls-tree", "-r", "--name-only", "main"]);
    assert!(
        !tree.contains("__pycache__") && !tree.contains(".pyc") && !tree.contains(".pytest_cache"),
        "{tree}"
    );
}

/// A Node project's hook manager runs from `node_modules`, which a fresh worktree lacks:
/// dispatch says so, and says how to ready it, unless a setup or `.worktreeinclude` does.
#[test]
fn a_node_hook_manager_a_run_cannot_reach_is_named_at_dispatch() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    write(
        &repo.join("package.json"),
        "{\"name\": \"p\", \"private\": true}\n",
    );
    write(
        &repo.join("lefthook.yml"),
        "pre-commit:\n  commands:\n    fmt:\n      run: prettier --check {staged_files}\n",
    );
    write(&repo.join(".gitignore"), "node_modules/\n");
    env.git_ok(
        &repo,
        &["add", "package.json", "lefthook.yml", ".gitignore"],
    );
    env.git_ok(&repo, &["commit", "-q", "-m", "lefthook"]);
    let unchecked = |json: &Value| {
        warnings(json)
            .iter()
            .any(|w| w.contains("run lefthook from node_modules") && w.contains("npm ci"))
    };

    let json = dispatch(&env, &repo, "bare", &["--scope", "src/a/**"]);
    assert!(unchecked(&json), "{:?}", warnings(&json));
    finished(&env, &repo, json["run"].as_str().unwrap());

    // A setup readies the worktree: nothing to say.
    let json = dispatch(
        &env,
        &repo,
        "setup",
        &["--scope", "src/b/**", "--set", "worktree.setup=\"true\""],
    );
    assert!(!unchecked(&json), "{:?}", warnings(&json));
    finished(&env, &repo, json["run"].as_str().unwrap());

    // node_modules brought by .worktreeinclude: nothing to say either.
    write(&repo.join("node_modules/lefthook/package.json"), "{}\n");
    write(&repo.join(".worktreeinclude"), "node_modules/\n");
    let json = dispatch(&env, &repo, "included", &["--scope", "src/c/**"]);
    assert!(!unchecked(&json), "{:?}", warnings(&json));
    finished(&env, &repo, json["run"].as_str().unwrap());
}
