//! `init` in the layouts real users have, and hooks that stay quiet: a bare repository
//! with linked worktrees, a `core.hooksPath` in the user's global config, `git log` right
//! after init, a shell that exports `GIT_CREW_FORMAT=json`, and husky writing its hooks
//! again on `npm install` — each with real git, and husky from npm in the ignored test.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{TestEnv, fixtures, read, write};

/// Writes `.crew/flight.toml` with one command backend per (name, worker script), the
/// first the default, and commits it.
fn flight(env: &TestEnv, dir: &Path, backends: &[(&str, PathBuf)]) {
    let mut text = format!("version = 1\ndefault_backend = \"{}\"\n", backends[0].0);
    for (name, worker) in backends {
        text.push_str(&format!(
            "[backends.{name}]\nadapter = \"command\"\nargv = [\"{}\", \"{{prompt_file}}\"]\ntime_budget = \"60s\"\n",
            worker.display()
        ));
    }
    write(&dir.join(".crew/flight.toml"), &text);
    env.git_ok(dir, &["add", ".crew/flight.toml"]);
    env.git_ok(dir, &["commit", "-q", "-m", "crew flight"]);
}

fn worker(name: &str) -> PathBuf {
    fixtures().join("workers").join(format!("{name}.sh"))
}

/// A worker that tries to commit a change outside its scope itself, says how that went,
/// puts the file back and does its task inside its scope.
fn self_committing_worker(env: &TestEnv) -> PathBuf {
    let path = env.root().join("commits-out-of-scope.sh");
    write(
        &path,
        "#!/bin/sh\nset -u\n\
         echo 'changed by a worker' >> README.md\n\
         git add README.md\n\
         if git commit -q -m 'touch the README'; then echo 'WORKER: commit went through'; else echo 'WORKER: commit refused'; fi\n\
         git reset -q --hard HEAD\n\
         mkdir -p src/routes && echo 'pub fn crew() {}' > src/routes/crew.rs\n\
         printf '## Result\\nAdded src/routes/crew.rs.\\n## How to verify\\ntest -f src/routes/crew.rs\\n## Deferred / concerns\\nNone.\\n'\n",
    );
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// Every file under `root` with its bytes and mode.
fn files(root: &Path) -> BTreeMap<PathBuf, (Vec<u8>, u32)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let meta = std::fs::symlink_metadata(entry.path()).unwrap();
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                let bytes = std::fs::read(entry.path()).unwrap();
                out.insert(entry.path(), (bytes, meta.permissions().mode()));
            }
        }
    }
    out
}

/// The keys (`key=value` lines) of a config file, with what git leaves behind when the
/// last key of a section goes (an empty header) left out.
fn keys(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.contains('='))
        .map(|l| l.trim().to_string())
        .collect()
}

fn config_step<'a>(json: &'a Value, key: &str) -> &'a Value {
    json["config"]
        .as_array()
        .unwrap()
        .iter()
        .find(|step| step["key"] == key)
        .unwrap_or_else(|| panic!("no config step for {key}: {json}"))
}

#[test]
fn a_bare_repository_with_linked_worktrees_keeps_working_after_init() {
    let env = TestEnv::new();
    let root = env.fixture("bare-worktrees.sh", "layout", &[]);
    let (bare, main) = (root.join("repo.git"), root.join("main"));
    let shared_before = read(&bare.join("config"));
    assert!(shared_before.contains("bare = true"), "{shared_before}");

    let out = env.crew(&main, &["init"]);
    out.expect_code(0);
    let json = out.json();
    let moved = config_step(&json, "core.bare");
    assert_eq!(moved["action"], "moved");
    assert_eq!(moved["value"], "true");
    assert_eq!(
        PathBuf::from(moved["file"].as_str().unwrap()),
        bare.canonicalize().unwrap().join("config.worktree")
    );
    // The shared config no longer makes every worktree bare; the bare repository's own
    // config does.
    let shared = read(&bare.join("config"));
    assert!(!shared.contains("bare"), "{shared}");
    assert!(shared.contains("worktreeConfig = true"), "{shared}");
    assert_eq!(keys(&read(&bare.join("config.worktree"))), ["bare = true"]);
    assert_eq!(
        env.git_ok(&main, &["rev-parse", "--is-bare-repository"]),
        "false\n"
    );
    assert_eq!(
        env.git_ok(&bare, &["rev-parse", "--is-bare-repository"]),
        "true\n"
    );
    env.git_ok(&main, &["status", "--short"]);
    // A worktree added after init is no bare one either.
    env.git_ok(
        &bare,
        &["worktree", "add", "-q", "-b", "second", "../second"],
    );
    env.git_ok(&root.join("second"), &["status", "--short"]);
    env.git_ok(&bare, &["worktree", "remove", "../second"]);
    // A second init moves nothing; the human rendering of a first one says what moved
    // where.
    let again = env.crew(&main, &["init"]);
    again.expect_code(0);
    assert!(!again.stdout.contains("core.bare"), "{}", again.stdout);
    let other = env.fixture("bare-worktrees.sh", "layout2", &[]);
    let human = env.crew(&other.join("main"), &["init", "--human"]);
    human.expect_code(0);
    assert!(
        human.stdout.contains(&format!(
            "config core.bare = true: moved to {}",
            other
                .join("repo.git/config.worktree")
                .canonicalize()
                .unwrap()
                .display()
        )),
        "{}",
        human.stdout
    );

    // A whole run from the lead's checkout: dispatch, wait, status, integrate.
    flight(&env, &main, &[("ok", worker("ok"))]);
    let run = env
        .dispatch(&main, "routes")
        .scope("src/routes/**")
        .verify("test -f src/routes/crew.rs")
        .run_id();
    let (out, result) = env.wait(&main, &run).result();
    out.expect_code(0);
    assert_eq!(result["outcome"], "pass", "{result}");
    let status = env.crew(&main, &["status"]);
    status.expect_code(0);
    assert_eq!(status.json()["runs"][0]["run"], run.as_str());
    env.crew(&main, &["integrate", &run]).expect_code(0);
    assert_eq!(read(&main.join("src/routes/crew.rs")), "pub fn crew() {}\n");
    assert_eq!(env.git_ok(&main, &["status", "--porcelain"]), "");
    let landed = env.git_ok(&main, &["diff", "--name-only", "HEAD^1", "HEAD"]);
    assert_eq!(landed, "docs/state/crew.json\nsrc/routes/crew.rs\n");
    let log = env.git(&main, &["log", "-1"]);
    assert_eq!(log.stderr, "");
    assert!(log.stdout.contains("Notes (crew):"), "{}", log.stdout);

    // Uninstall moves it back exactly.
    let out = env.crew(&main, &["init", "--uninstall"]);
    out.expect_code(0);
    let back = config_step(&out.json(), "core.bare").clone();
    assert_eq!(back["action"], "moved-back");
    assert_eq!(keys(&read(&bare.join("config"))), keys(&shared_before));
    assert!(!bare.join("config.worktree").exists());
    assert_eq!(
        env.git_ok(&main, &["rev-parse", "--is-bare-repository"]),
        "false\n"
    );
    env.git_ok(&main, &["status", "--short"]);
}

#[test]
fn a_git_dir_apart_from_its_work_tree_keeps_core_worktree_for_the_main_worktree_alone() {
    let env = TestEnv::new();
    let (meta, main) = (env.root().join("meta.git"), env.root().join("main"));
    std::fs::create_dir_all(&main).unwrap();
    let git_dir = format!("--git-dir={}", meta.display());
    let work_tree = format!("--work-tree={}", main.display());
    env.git_ok(
        env.root(),
        &[&git_dir, &work_tree, "init", "-q", "-b", "main"],
    );
    write(&main.join(".git"), "gitdir: ../meta.git\n");
    write(&main.join("README.md"), "# Project\n");
    env.git_ok(&main, &["add", "README.md"]);
    env.git_ok(&main, &["commit", "-q", "-m", "initial"]);
    let shared_before = read(&meta.join("config"));

    let out = env.crew(&main, &["init"]);
    out.expect_code(0);
    let moved = config_step(&out.json(), "core.worktree").clone();
    assert_eq!(moved["action"], "moved");
    assert!(!read(&meta.join("config")).contains("worktree ="));
    // A linked worktree is its own work tree, not the main one's.
    env.git_ok(
        &main,
        &["worktree", "add", "-q", "-b", "second", "../second"],
    );
    let second = env.root().join("second");
    assert_eq!(
        PathBuf::from(
            env.git_ok(&second, &["rev-parse", "--show-toplevel"])
                .trim()
        ),
        second.canonicalize().unwrap()
    );
    assert_eq!(
        PathBuf::from(env.git_ok(&main, &["rev-parse", "--show-toplevel"]).trim()),
        main.canonicalize().unwrap()
    );
    env.git_ok(&main, &["worktree", "remove", "../second"]);

    let out = env.crew(&main, &["init", "--uninstall"]);
    out.expect_code(0);
    assert_eq!(
        config_step(&out.json(), "core.worktree")["action"],
        "moved-back"
    );
    assert_eq!(keys(&read(&meta.join("config"))), keys(&shared_before));
    assert!(!meta.join("config.worktree").exists());
}

#[test]
fn a_global_hooks_path_is_left_alone_and_its_hooks_keep_running_here() {
    // Outside /tmp, where the lead's home lies on a real machine: a run sees the shared
    // hooks folder there.
    let env = TestEnv::outside_tmp();
    let shared = env.home().join("git-hooks");
    write(
        &shared.join("commit-msg"),
        "#!/bin/sh\nprintf '\\nGlobal-Hook: ran\\n' >> \"$1\"\n",
    );
    std::fs::set_permissions(
        shared.join("commit-msg"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    write(&shared.join("README"), "hooks for all my repositories\n");
    let global = env.home().join(".gitconfig");
    write(&global, "[core]\n\thooksPath = ~/git-hooks\n");
    env.set_var("GIT_CONFIG_GLOBAL", &global);
    let shared_before = files(&shared);

    let repo = env.fixture("plain.sh", "repo", &[]);
    let out = env.crew(&repo, &["init"]);
    out.expect_code(0);
    let json = out.json();
    let own = repo.join(".git/crew/repo-hooks").canonicalize().unwrap();
    assert_eq!(json["shared_hooks_dir"], shared.to_str().unwrap());
    assert_eq!(json["hooks_dir"], own.to_str().unwrap());
    assert_eq!(
        env.git_ok(&repo, &["config", "--local", "core.hooksPath"]),
        format!("{}\n", own.display())
    );
    assert_eq!(config_step(&json, "core.hooksPath")["action"], "set");
    assert!(read(&own.join("pre-commit")).contains("# >>> git-crew >>>"));
    assert_eq!(files(&shared), shared_before);
    let human = env.crew(&repo, &["init", "--human"]);
    human.expect_code(0);
    assert!(
        human.stdout.contains(&format!(
            "hooks: {} (core.hooksPath, set outside this repository) serves other repositories too and is left as it is",
            shared.display()
        )),
        "{}",
        human.stdout
    );

    // The global hook still runs here, for the lead's commits and a run's.
    flight(&env, &repo, &[("ok", worker("ok"))]);
    let message = env.git_ok(&repo, &["log", "-1", "--format=%B"]);
    assert!(message.contains("Global-Hook: ran"), "{message}");
    let run = env
        .dispatch(&repo, "routes")
        .scope("src/routes/**")
        .verify("test -f src/routes/crew.rs")
        .run_id();
    let (out, result) = env.wait(&repo, &run).result();
    out.expect_code(0);
    assert_eq!(result["outcome"], "pass", "{result}");
    let branch = result["branch"].as_str().unwrap();
    let message = env.git_ok(&repo, &["log", "-1", "--format=%B", branch]);
    assert!(message.contains("Global-Hook: ran"), "{message}");
    env.crew(&repo, &["integrate", &run]).expect_code(0);
    assert_eq!(files(&shared), shared_before);

    // Another repository of the user's runs the shared folder alone: nothing of
    // git-crew's.
    let other = env.fixture("plain.sh", "other", &[]);
    write(&other.join("x.txt"), "x\n");
    env.git_ok(&other, &["add", "x.txt"]);
    let out = env.git(&other, &["commit", "-q", "-m", "other"]);
    out.expect_code(0);
    assert_eq!(out.stderr, "");

    let out = env.crew(&repo, &["init", "--uninstall"]);
    out.expect_code(0);
    assert_eq!(out.json()["hooks"][0]["action"], "deleted");
    assert!(!own.exists());
    assert_eq!(
        env.git(&repo, &["config", "--local", "core.hooksPath"])
            .code,
        1
    );
    assert_eq!(files(&shared), shared_before);
    write(&repo.join("y.txt"), "y\n");
    env.git_ok(&repo, &["add", "y.txt"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "after uninstall"]);
    let message = env.git_ok(&repo, &["log", "-1", "--format=%B"]);
    assert!(message.contains("Global-Hook: ran"), "{message}");
}

#[test]
fn git_log_says_nothing_after_init_and_shows_the_notes_once_there_are_some() {
    let env = TestEnv::new();
    let repo = env.fixture("plain.sh", "repo", &[]);
    env.crew(&repo, &["init"]).expect_code(0);
    for args in [
        &["log"][..],
        &["log", "--oneline", "-1"],
        &["show", "-s", "HEAD"],
        &["commit", "-q", "--amend", "--allow-empty", "-m", "amended"],
        &["rebase", "-q", "--force-rebase", "--root"],
    ] {
        let out = env.git(&repo, args);
        out.expect_code(0);
        assert_eq!(out.stderr, "", "git {args:?}");
    }
    env.git_ok(
        &repo,
        &["notes", "--ref=crew", "add", "-m", "a run", "HEAD"],
    );
    let log = env.git(&repo, &["log", "-1"]);
    assert_eq!(log.stderr, "");
    assert!(
        log.stdout.contains("Notes (crew):\n    a run"),
        "{}",
        log.stdout
    );
    // A rebase keeps the note.
    env.git_ok(&repo, &["rebase", "-q", "--force-rebase", "--root"]);
    let log = env.git_ok(&repo, &["log", "-1"]);
    assert!(log.contains("Notes (crew):\n    a run"), "{log}");

    // What an earlier init set (the plain ref) is replaced by the next init.
    let fresh = env.fixture("plain.sh", "fresh", &[]);
    env.crew(&fresh, &["init"]).expect_code(0);
    for key in ["notes.displayRef", "notes.rewriteRef"] {
        env.git_ok(&fresh, &["config", "--unset-all", key]);
        env.git_ok(&fresh, &["config", "--add", key, "refs/notes/crew"]);
    }
    let record = fresh.join(".git/crew/init.json");
    write(
        &record,
        &read(&record).replace("refs/notes/cre[w]", "refs/notes/crew"),
    );
    assert!(env.git(&fresh, &["log"]).stderr.contains("is invalid"));
    env.crew(&fresh, &["init"]).expect_code(0);
    assert_eq!(env.git(&fresh, &["log"]).stderr, "");
    assert_eq!(
        env.git_ok(&fresh, &["config", "--get-all", "notes.displayRef"]),
        "refs/notes/cre[w]\n"
    );
    env.crew(&fresh, &["init", "--uninstall"]).expect_code(0);
    assert_eq!(env.git(&fresh, &["config", "notes.displayRef"]).code, 1);
}

#[test]
fn hooks_say_nothing_on_success_and_speak_on_stderr_whatever_the_format() {
    let env = TestEnv::new();
    let dir = env.fixture(
        "crew-worktree.sh",
        "case",
        &["r1", "routes", "implement", "src/routes/**"],
    );
    let (repo, wt) = (dir.join("repo"), dir.join("wt"));
    env.crew(&repo, &["init"]).expect_code(0);
    let json = [("GIT_CREW_FORMAT", "json")];

    // The lead's plain commit, and a worker's commit inside its scope: silence.
    write(&repo.join("notes.txt"), "x\n");
    env.git_ok(&repo, &["add", "notes.txt"]);
    let out = env.git_env(&repo, &["commit", "-q", "-m", "lead"], &json);
    out.expect_code(0);
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("", ""));
    write(&wt.join("src/routes/b.rs"), "pub fn b() {}\n");
    env.git_ok(&wt, &["add", "-A"]);
    let out = env.git_env(&wt, &["commit", "-q", "-m", "in scope"], &json);
    out.expect_code(0);
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("", ""));
    let mut cmd = env.command(crate::common::bin());
    cmd.current_dir(&wt)
        .args(["hook", "pre-commit"])
        .env("GIT_CREW_FORMAT", "json");
    let out = crate::common::run(&mut cmd, None);
    out.expect_code(0);
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("", ""));

    // A refusal speaks on stderr, in words.
    write(&wt.join("README.md"), "out of scope\n");
    env.git_ok(&wt, &["add", "-A"]);
    let out = env.git_env(&wt, &["commit", "-q", "-m", "too wide"], &json);
    out.expect_code(1);
    assert_eq!(out.stdout, "");
    assert!(
        out.stderr
            .starts_with("crew: error: commit refused in run r1 (task routes)\n"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains('{'), "{}", out.stderr);
    // Asked with --json, the entry point gives the data on stdout and still the words on
    // stderr.
    let out = env.crew(&wt, &["hook", "pre-commit", "--json"]);
    out.expect_code(1);
    assert_eq!(out.json()["error"]["code"], "scope-violation");
    assert!(
        out.stderr.contains("crew: error: commit refused"),
        "{}",
        out.stderr
    );
    env.git_ok(&wt, &["reset", "-q", "--hard"]);

    // A warning, too.
    write(
        &repo.join(".git/crew/live/r1.json"),
        r#"{"run": "r1", "task": "routes", "scope": ["src/routes/**"], "phase": "working"}"#,
    );
    write(&repo.join("src/routes/a.rs"), "the lead's change\n");
    env.git_ok(&repo, &["add", "-A"]);
    let out = env.git_env(&repo, &["commit", "-q", "-m", "lead 2"], &json);
    out.expect_code(0);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr,
        "crew: warning: src/routes/a.rs is held by in-flight run r1 (task routes, scope src/routes/**)\n"
    );
}

/// Whether the hooks init put in `dir` all carry git-crew's block.
fn blocks_in(dir: &Path) -> Vec<bool> {
    ["pre-commit", "post-merge", "post-commit"]
        .iter()
        .map(|hook| {
            std::fs::read_to_string(dir.join(hook))
                .unwrap_or_default()
                .contains("# >>> git-crew >>>")
        })
        .collect()
}

/// `doctor` finds the blocks a hook manager wrote over, `--fix` puts them back, and a
/// second `doctor` finds nothing.
fn doctor_restores_the_blocks(env: &TestEnv, repo: &Path, hooks: &Path) {
    assert_eq!(blocks_in(hooks), [false, false, false]);
    let out = env.crew(repo, &["doctor"]);
    assert_ne!(out.code, 0);
    let problems = out.json()["problems"].clone();
    let missing: Vec<&Value> = problems
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "hook-missing")
        .collect();
    assert_eq!(missing.len(), 3, "{problems}");
    assert!(
        missing[0]["detail"]
            .as_str()
            .unwrap()
            .contains("`git crew doctor --fix`"),
        "{problems}"
    );
    let out = env.crew(repo, &["doctor", "--fix"]);
    out.expect_code(0);
    let fixed = out.json()["problems"].clone();
    assert!(
        fixed
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["kind"] == "hook-missing" && p["fixed"] == true),
        "{fixed}"
    );
    assert_eq!(blocks_in(hooks), [true, true, true]);
    env.crew(repo, &["doctor"]).expect_code(0);
}

/// After husky writes `.husky/_` again: a run's commit outside its scope is still
/// refused, the project's husky hook still runs, and `doctor --fix` puts the lead's block
/// back.
fn husky_regenerated(env: &TestEnv, repo: &Path, regenerate: &dyn Fn()) {
    let hooks = repo.join(".husky/_");
    assert_eq!(blocks_in(&hooks), [true, true, true]);
    regenerate();
    assert_eq!(blocks_in(&hooks), [false, false, false]);

    let run = env
        .dispatch(repo, "routes")
        .backend("self-commit")
        .scope("src/routes/**")
        .verify("test -f src/routes/crew.rs")
        .run_id();
    let (out, result) = env.wait(repo, &run).result();
    out.expect_code(0);
    assert_eq!(result["outcome"], "pass", "{result}");
    let transcript = env.transcript(repo, &run);
    assert!(
        transcript.contains("WORKER: commit refused"),
        "{transcript}"
    );
    assert!(
        transcript.contains("crew: error: commit refused in run"),
        "{transcript}"
    );
    // The run worktree's check is git-crew-hook, which handed the refusal to git-crew.
    let run_hook = read(&repo.join(".git/crew/hooks/pre-commit"));
    assert!(run_hook.contains("git-crew-hook' pre-commit"), "{run_hook}");
    env.crew(repo, &["integrate", &run]).expect_code(0);
    let landed = env.git_ok(repo, &["diff", "--name-only", "HEAD^1", "HEAD"]);
    assert_eq!(landed, "docs/state/crew.json\nsrc/routes/crew.rs\n");

    doctor_restores_the_blocks(env, repo, &hooks);
    // The lead's hook runs git-crew's block and then husky's.
    let text = read(&hooks.join("pre-commit"));
    assert!(
        text.starts_with("#!/usr/bin/env sh\n# >>> git-crew >>>"),
        "{text}"
    );
    assert!(text.ends_with(". \"$(dirname \"$0\")/h\""), "{text}");
    write(&repo.join("notes.txt"), "x\n");
    env.git_ok(repo, &["add", "notes.txt"]);
    let out = env.git(repo, &["commit", "-q", "-m", "after the fix"]);
    out.expect_code(0);
    assert!(
        out.stderr.contains("husky: pre-commit ran"),
        "{}",
        out.stderr
    );
}

#[test]
fn after_husky_writes_its_hooks_again_runs_keep_their_scope_check_and_doctor_restores_the_lead() {
    let env = TestEnv::new();
    let repo = env.fixture("husky9.sh", "repo", &[]);
    let out = env.crew(&repo, &["init"]);
    out.expect_code(0);
    assert_eq!(
        PathBuf::from(out.json()["hooks_dir"].as_str().unwrap()),
        repo.join(".husky/_").canonicalize().unwrap()
    );
    flight(
        &env,
        &repo,
        &[("self-commit", self_committing_worker(&env))],
    );
    let husky = fixtures().join("husky9.sh");
    husky_regenerated(&env, &repo, &|| {
        let out = crate::common::run(env.command(&husky).arg("--regenerate").arg(&repo), None);
        out.expect_code(0);
    });
}

#[test]
#[ignore = "drives husky 9 from the npm registry; .ci/run installs node and runs it"]
fn real_husky_from_npm_keeps_the_scope_check_and_doctor_restores_the_lead() {
    let env = TestEnv::new();
    let repo = env.fixture("plain.sh", "repo", &[]);
    let npm = |args: &[&str]| {
        let out = crate::common::run(env.command("npm").current_dir(&repo).args(args), None);
        out.expect_code(0);
    };
    let npx = |args: &[&str]| {
        let out = crate::common::run(env.command("npx").current_dir(&repo).args(args), None);
        out.expect_code(0);
    };
    // As husky's documentation has it: install it, then `husky init` (which adds the
    // `prepare` script and a first .husky/pre-commit).
    write(
        &repo.join("package.json"),
        "{\n  \"name\": \"crew-husky\",\n  \"private\": true\n}\n",
    );
    write(&repo.join(".gitignore"), "node_modules/\n");
    npm(&[
        "install",
        "--save-dev",
        "--no-audit",
        "--no-fund",
        "husky@9",
    ]);
    npx(&["husky", "init"]);
    assert!(read(&repo.join("package.json")).contains("\"prepare\": \"husky\""));
    assert_eq!(
        env.git_ok(&repo, &["config", "core.hooksPath"]),
        ".husky/_\n"
    );
    write(
        &repo.join(".husky/pre-commit"),
        "echo \"husky: pre-commit ran\"\n",
    );
    env.git_ok(&repo, &["add", "-A"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "husky"]);
    env.crew(&repo, &["init"]).expect_code(0);
    flight(
        &env,
        &repo,
        &[("self-commit", self_committing_worker(&env))],
    );
    // `npx husky`, as a developer runs it by hand.
    husky_regenerated(&env, &repo, &|| npx(&["husky"]));
    // And `npm install`, whose `prepare` runs husky again.
    npm(&["install", "--no-audit", "--no-fund"]);
    doctor_restores_the_blocks(&env, &repo, &repo.join(".husky/_"));
}
