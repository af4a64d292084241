//! The hook managers of JavaScript projects, driven for real from npm: husky with
//! lint-staged and prettier, and lefthook with prettier. A run's worktree gets its
//! dependencies from `[worktree] setup = "npm ci"`, the worker's commit goes through the
//! project's hook (which formats what it stages, and lint-staged backs up with a stash),
//! and what lands is the formatted file, with the lead's stash untouched.

use std::path::{Path, PathBuf};

use crate::common::{TestEnv, read, write};
use crate::dispatch::require_fence;
use crate::tc_toolchains::{FOOTER, add_worker, need, pass_and_land};

/// What prettier makes of the worker's file.
const FORMATTED: &str = "const b = { x: 1, y: 2 };\n";

/// A repository whose `package.json` holds `dev_dependencies` (and `extra` keys), with
/// them installed in the lead's checkout by `npm install`, `node_modules/` ignored, and
/// `[worktree] setup = "npm ci"` in its flight.
fn node_repo(env: &TestEnv, dev_dependencies: &str, extra: &str) -> PathBuf {
    need("npm");
    let repo = env.fixture("plain.sh", "repo", &[]);
    write(
        &repo.join("package.json"),
        &format!(
            "{{\"name\":\"app\",\"version\":\"1.0.0\",\"private\":true,\"devDependencies\":{{{dev_dependencies}}}{extra}}}\n"
        ),
    );
    write(&repo.join(".gitignore"), "node_modules/\n");
    let npm = env
        .command("npm")
        .current_dir(&repo)
        .args(["install", "--no-audit", "--no-fund"])
        .output()
        .expect("npm install");
    assert!(
        npm.status.success(),
        "{}",
        String::from_utf8_lossy(&npm.stderr)
    );
    repo
}

/// `git crew init` after the project's own hook manager, the setup in the flight, and
/// everything committed.
fn crew_init(env: &TestEnv, repo: &Path) {
    env.git(repo, &["add", "-A"]).expect_code(0);
    env.git(repo, &["commit", "-q", "-m", "node project"])
        .expect_code(0);
    env.crew(repo, &["init"]).expect_code(0);
    let flight = repo.join(".crew/flight.toml");
    let mut text = read(&flight);
    text.push_str("\n[worktree]\nsetup = \"npm ci --no-audit --no-fund\"\n");
    write(&flight, &text);
    env.git(repo, &["add", ".crew/flight.toml"]).expect_code(0);
    env.git(repo, &["commit", "-q", "-m", "crew"])
        .expect_code(0);
}

/// The worker: an unformatted file, staged and committed through the project's hook.
fn formatting_worker(env: &TestEnv, repo: &Path) {
    add_worker(
        env,
        repo,
        "jsworker",
        &format!(
            "#!/bin/sh\nset -eu\ntest -d node_modules\nmkdir -p src\nprintf 'const   b   =   {{x:1,\\n y:2}}\\n' > src/b.js\n\
             git add src/b.js\ngit commit -q -m 'add src/b.js' >&2\n{FOOTER}"
        ),
    );
}

#[test]
#[ignore = "needs the npm registry (husky, lint-staged, prettier); .ci/run runs it"]
fn husky_with_lint_staged_formats_a_workers_commit() {
    require_fence();
    let env = TestEnv::new();
    let repo = node_repo(
        &env,
        "\"husky\":\"9.1.7\",\"lint-staged\":\"15.2.10\",\"prettier\":\"3.3.3\"",
        ",\"scripts\":{\"prepare\":\"husky\"},\"lint-staged\":{\"*.js\":\"prettier --write\"}",
    );
    write(&repo.join(".husky/pre-commit"), "npx lint-staged\n");
    crew_init(&env, &repo);
    formatting_worker(&env, &repo);
    // The lead has a stash of its own, which lint-staged's backup never touches.
    write(&repo.join("README.md"), "# Project, edited\n");
    env.git(&repo, &["stash", "push", "-q", "-m", "lead's"])
        .expect_code(0);
    let stash = read(&repo.join(".git/logs/refs/stash"));
    let (run, landed) = pass_and_land(&env, &repo, "js", "jsworker", &["src/**"], "node src/b.js");
    assert_eq!(landed, ["src/b.js"]);
    assert_eq!(read(&repo.join("src/b.js")), FORMATTED);
    assert_eq!(read(&repo.join(".git/logs/refs/stash")), stash);
    let transcript = env.transcript(&repo, &run);
    assert!(transcript.contains("lint-staged"), "{transcript}");
    assert!(!transcript.contains("git error"), "{transcript}");
}

#[test]
#[ignore = "needs the npm registry (lefthook, prettier); .ci/run runs it"]
fn lefthook_formats_a_workers_commit_on_a_terminal_of_its_own() {
    require_fence();
    let env = TestEnv::new();
    // lefthook 1 runs each command on a pseudo-terminal.
    let repo = node_repo(&env, "\"lefthook\":\"1.11.3\",\"prettier\":\"3.3.3\"", "");
    write(
        &repo.join("lefthook.yml"),
        "pre-commit:\n  commands:\n    prettier:\n      glob: \"*.js\"\n      run: npx prettier --write {staged_files}\n      stage_fixed: true\n",
    );
    let install = env
        .command("npx")
        .current_dir(&repo)
        .args(["lefthook", "install"])
        .output()
        .expect("lefthook install");
    assert!(install.status.success(), "{install:?}");
    crew_init(&env, &repo);
    formatting_worker(&env, &repo);
    let (run, landed) = pass_and_land(&env, &repo, "js", "jsworker", &["src/**"], "node src/b.js");
    assert_eq!(landed, ["src/b.js"]);
    assert_eq!(read(&repo.join("src/b.js")), FORMATTED);
    let transcript = env.transcript(&repo, &run);
    assert!(transcript.contains("prettier"), "{transcript}");
    for refused in ["Can't find lefthook", "/dev/ptmx", "permission denied"] {
        assert!(!transcript.contains(refused), "{refused}: {transcript}");
    }
}
