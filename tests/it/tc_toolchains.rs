//! Everyday toolchains in a run, each driven for real: the pre-commit framework with a
//! fixer hook, `npm install` on a fresh home, and a verify that runs `cargo test`. Each
//! run passes, integrates, and lands what the tool produced and nothing else.

use std::path::{Path, PathBuf};

use crate::common::{TestEnv, read, write};
use crate::dispatch::require_fence;

/// A worker script of the test's own, as backend `name` of the repository's flight.
pub fn add_worker(env: &TestEnv, repo: &Path, name: &str, script: &str) -> PathBuf {
    let path = env.root().join(format!("{name}.sh"));
    write(&path, script);
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let flight = repo.join(".crew/flight.toml");
    let mut text = read(&flight);
    text.push_str(&format!(
        "\n[backends.{name}]\nadapter = \"command\"\nargv = [\"{}\", \"{{prompt_file}}\"]\ntime_budget = \"5m\"\n",
        path.display()
    ));
    write(&flight, &text);
    env.git(repo, &["add", ".crew/flight.toml"]).expect_code(0);
    env.git(repo, &["commit", "-q", "-m", &format!("backend {name}")])
        .expect_code(0);
    path
}

/// The footer every worker here prints.
pub const FOOTER: &str = "cat <<REPLY\n## Result\nDone.\n\n## How to verify\nSee the verify command.\n\n## Deferred / concerns\nNone.\nREPLY\n";

/// Which tool a test needs, found on PATH or failed on.
#[track_caller]
pub fn need(tool: &str) {
    let found = std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default())
        .any(|dir| dir.join(tool).is_file());
    assert!(found, "{tool} is not on PATH: .ci/run installs it");
}

/// Dispatches `backend` in `repo`, waits, insists it passed, integrates it, and returns
/// the run and the paths the integration changed on main.
#[track_caller]
pub fn pass_and_land(
    env: &TestEnv,
    repo: &Path,
    task: &str,
    backend: &str,
    scopes: &[&str],
    verify: &str,
) -> (String, Vec<String>) {
    let mut dispatch = env.dispatch(repo, task).backend(backend).verify(verify);
    for scope in scopes {
        dispatch = dispatch.scope(scope);
    }
    let run = dispatch.run_id();
    let (_, result) = env.wait(repo, &run).timeout("10m").result();
    assert_eq!(
        result["outcome"],
        "pass",
        "{result}\n{}",
        env.transcript(repo, &run)
    );
    let before = env.git_ok(repo, &["rev-parse", "HEAD"]);
    env.crew(repo, &["integrate", &run]).expect_code(0);
    let changed = env.git_ok(repo, &["diff", "--name-only", before.trim(), "HEAD", "--"]);
    let mut changed: Vec<String> = changed
        .lines()
        .filter(|l| *l != "docs/state/crew.json")
        .map(String::from)
        .collect();
    changed.sort();
    (run, changed)
}

#[test]
#[ignore = "needs pre-commit from PyPI (and PyPI for its hook's environment); .ci/run installs it and runs this"]
fn the_pre_commit_framework_fixes_and_checks_a_workers_commit() {
    require_fence();
    need("pre-commit");
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    write(
        &repo.join(".pre-commit-config.yaml"),
        r#"repos:
- repo: local
  hooks:
  - id: no-todo
    name: no TODO
    entry: sh -c '! grep -n TODO "$@"' --
    language: system
    files: \.py$
  - id: strip-blank-tail
    name: strip blank lines at the end
    entry: python -c "import sys; fs = sys.argv[1:]; ts = [open(f).read() for f in fs]; [open(f, 'w').write(t.rstrip() + '\n') for f, t in zip(fs, ts)]"
    language: python
    files: \.py$
"#,
    );
    env.git(&repo, &["add", ".pre-commit-config.yaml"])
        .expect_code(0);
    env.git(&repo, &["commit", "-q", "-m", "pre-commit"])
        .expect_code(0);
    env.command("pre-commit")
        .current_dir(&repo)
        .arg("install")
        .status()
        .expect("pre-commit install");
    add_worker(
        &env,
        &repo,
        "pyworker",
        &format!(
            "#!/bin/sh\nset -eu\nmkdir -p app\nprintf 'print(\"ok\")\\n\\n\\n' > app/main.py\n\
             git add app/main.py\n\
             # The fixer changes the file and fails the first commit, as it does for a person.\n\
             git commit -q -m 'add app/main.py' >&2 || {{ git add app/main.py && git commit -q -m 'add app/main.py' >&2; }}\n{FOOTER}"
        ),
    );
    let (_, landed) = pass_and_land(
        &env,
        &repo,
        "app",
        "pyworker",
        &["app/**"],
        "python3 app/main.py",
    );
    assert_eq!(landed, ["app/main.py"]);
    // The hook's fix landed.
    assert_eq!(read(&repo.join("app/main.py")), "print(\"ok\")\n");
}

#[test]
#[ignore = "needs the npm registry; .ci/run runs it"]
fn npm_install_on_a_fresh_home_works_in_a_run() {
    require_fence();
    need("npm");
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    write(
        &repo.join("package.json"),
        "{\"name\":\"app\",\"version\":\"1.0.0\",\"private\":true}\n",
    );
    write(&repo.join(".gitignore"), "node_modules/\n");
    env.git(&repo, &["add", "package.json", ".gitignore"])
        .expect_code(0);
    env.git(&repo, &["commit", "-q", "-m", "node"])
        .expect_code(0);
    add_worker(
        &env,
        &repo,
        "npmworker",
        &format!(
            "#!/bin/sh\nset -eu\ntest ! -e \"$HOME/.npm\"\nnpm install --no-audit --no-fund is-number@7.0.0 >&2\n\
             echo 'module.exports = require(\"is-number\")(7);' > index.js\n{FOOTER}"
        ),
    );
    let (run, landed) = pass_and_land(
        &env,
        &repo,
        "dep",
        "npmworker",
        &["package.json", "package-lock.json", "index.js"],
        "node -e 'process.exit(require(\"./index.js\") ? 0 : 1)'",
    );
    assert_eq!(landed, ["index.js", "package-lock.json", "package.json"]);
    assert!(read(&repo.join("package.json")).contains("is-number"));
    // The download went to the workers' shared cache, not the lead's home.
    assert!(!env.home().join(".npm").exists());
    let transcript = env.transcript(&repo, &run);
    assert!(!transcript.contains("EACCES"), "{transcript}");
}

#[test]
fn a_verify_that_runs_cargo_test_builds_links_and_passes() {
    require_fence();
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    // The repository is a tiny crate; its build output is ignored.
    write(
        &repo.join("Cargo.toml"),
        "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[lib]\npath = \"src/lib.rs\"\n",
    );
    write(
        &repo.join("Cargo.lock"),
        "# This file is automatically @generated by Cargo.\n# It is not intended for manual editing.\nversion = 4\n\n[[package]]\nname = \"tiny\"\nversion = \"0.1.0\"\n",
    );
    write(&repo.join(".gitignore"), "/target\n");
    write(&repo.join("src/routes.rs"), "pub mod a;\n");
    write(&repo.join("src/routes/a.rs"), "pub fn routes() {}\n");
    env.git(&repo, &["add", "-A"]).expect_code(0);
    env.git(&repo, &["commit", "-q", "-m", "crate"])
        .expect_code(0);
    add_worker(
        &env,
        &repo,
        "rsworker",
        &format!(
            "#!/bin/sh\nset -eu\ncat > src/routes/a.rs <<'RS'\npub fn routes() -> u32 {{\n    2\n}}\n\n#[test]\nfn two() {{\n    assert_eq!(routes(), 2);\n}}\nRS\n{FOOTER}"
        ),
    );
    // The toolchain's own folder first on PATH, as a person's shell has it (rustup's
    // proxies would look for their home in the test's empty one).
    let sysroot = std::process::Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .expect("rustc");
    let bin = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim()).join("bin");
    let verify = format!(
        "PATH={}:$PATH cargo test --offline --quiet 2>&1 && test -n \"$TMPDIR\"",
        bin.display()
    );
    let (_, landed) = pass_and_land(
        &env,
        &repo,
        "routes",
        "rsworker",
        &["src/routes/**"],
        &verify,
    );
    assert_eq!(landed, ["src/routes/a.rs"]);
    assert!(!repo.join("target").exists());
}
