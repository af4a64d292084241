//! The pre-commit and post-merge hooks, driven by real `git commit` and `git merge` in
//! linked worktrees whose `crew.*` identity was set by hand.

use std::path::{Path, PathBuf};

use crate::common::{TestEnv, read, run, write};

/// A repository with git-crew's hooks and a crew worktree: returns (repo, worktree).
fn crew_setup(env: &TestEnv, role: &str, scope: &[&str]) -> (PathBuf, PathBuf) {
    let mut args = vec!["r1", "routes", role];
    args.extend_from_slice(scope);
    let dir = env.fixture("crew-worktree.sh", "case", &args);
    let (repo, wt) = (dir.join("repo"), dir.join("wt"));
    env.crew(&repo, &["init"]).expect_code(0);
    (repo, wt)
}

fn commit(env: &TestEnv, wt: &Path, message: &str) -> crate::common::Out {
    env.git(wt, &["commit", "-q", "-m", message])
}

#[test]
fn an_in_scope_commit_passes() {
    let env = TestEnv::new();
    let (_, wt) = crew_setup(&env, "implement", &["src/routes/**"]);
    write(&wt.join("src/routes/b.rs"), "pub fn b() {}\n");
    write(&wt.join("src/routes/a.rs"), "pub fn routes() { b() }\n");
    env.git_ok(&wt, &["add", "-A"]);
    let out = commit(&env, &wt, "in scope");
    out.expect_code(0);
    assert_eq!(out.stderr, "");
}

#[test]
fn an_out_of_scope_commit_is_refused_naming_each_path_and_the_scope() {
    let env = TestEnv::new();
    let (_, wt) = crew_setup(&env, "implement", &["src/routes/**", "docs/*.md"]);
    write(&wt.join("src/routes/b.rs"), "ok\n");
    write(&wt.join("src/lib.rs"), "changed\n");
    write(&wt.join("Cargo.toml"), "[package]\n");
    env.git_ok(&wt, &["add", "-A"]);
    let head_before = env.git_ok(&wt, &["rev-parse", "HEAD"]);
    let out = commit(&env, &wt, "too wide");
    out.expect_code(1);
    assert_eq!(
        out.stderr,
        "crew: error: commit refused in run r1 (task routes)\n\
         crew:   Cargo.toml (added) is outside the write scope src/routes/**, docs/*.md\n\
         crew:   src/lib.rs (modified) is outside the write scope src/routes/**, docs/*.md\n\
         crew: hint: unstage those paths (git restore --staged <path>); they belong to another run or to the lead\n"
    );
    assert_eq!(env.git_ok(&wt, &["rev-parse", "HEAD"]), head_before);
}

#[test]
fn a_rename_out_of_scope_is_refused_on_its_outside_side() {
    let env = TestEnv::new();
    let (_, wt) = crew_setup(&env, "implement", &["src/routes/**"]);
    env.git_ok(&wt, &["mv", "src/routes/a.rs", "src/a.rs"]);
    let out = commit(&env, &wt, "rename out");
    out.expect_code(1);
    assert!(
        out.stderr
            .contains("src/a.rs (added) is outside the write scope src/routes/**"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("src/routes/a.rs"), "{}", out.stderr);

    // Renaming in from outside touches the outside side too.
    env.git_ok(&wt, &["reset", "-q", "--hard"]);
    env.git_ok(&wt, &["mv", "src/lib.rs", "src/routes/lib.rs"]);
    let out = commit(&env, &wt, "rename in");
    out.expect_code(1);
    assert!(
        out.stderr.contains("src/lib.rs (deleted) is outside"),
        "{}",
        out.stderr
    );
}

#[test]
fn a_deletion_out_of_scope_is_refused() {
    let env = TestEnv::new();
    let (_, wt) = crew_setup(&env, "implement", &["src/routes/**"]);
    env.git_ok(&wt, &["rm", "-q", "README.md"]);
    let out = commit(&env, &wt, "delete");
    out.expect_code(1);
    assert!(
        out.stderr
            .contains("README.md (deleted) is outside the write scope"),
        "{}",
        out.stderr
    );
    // A whole directory deleted outside the scope names every file in it.
    env.git_ok(&wt, &["reset", "-q", "--hard"]);
    env.git_ok(&wt, &["rm", "-q", "-r", "docs"]);
    let out = commit(&env, &wt, "delete dir");
    out.expect_code(1);
    assert!(
        out.stderr.contains("docs/guide.md (deleted)"),
        "{}",
        out.stderr
    );
}

#[test]
fn mode_changes_and_symlinks_out_of_scope_are_refused() {
    let env = TestEnv::new();
    let (_, wt) = crew_setup(&env, "implement", &["src/**"]);
    env.git_ok(&wt, &["update-index", "--chmod=-x", "build.sh"]);
    env.git_ok(&wt, &["update-index", "--chmod=+x", "README.md"]);
    std::os::unix::fs::symlink("/etc/passwd", wt.join("link")).unwrap();
    std::os::unix::fs::symlink("../README.md", wt.join("src/readme-link")).unwrap();
    env.git_ok(&wt, &["add", "link", "src/readme-link"]);
    let out = commit(&env, &wt, "modes");
    out.expect_code(1);
    assert!(
        out.stderr.contains("README.md (mode changed) is outside"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr.contains("link (added) is outside"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("src/readme-link"), "{}", out.stderr);
}

#[test]
fn a_gitlink_out_of_scope_is_refused() {
    let env = TestEnv::new();
    let (_, wt) = crew_setup(&env, "implement", &["src/**"]);
    let head = env.git_ok(&wt, &["rev-parse", "HEAD"]);
    let spec = format!("160000,{},vendor/lib", head.trim());
    env.git_ok(&wt, &["update-index", "--add", "--cacheinfo", &spec]);
    let out = commit(&env, &wt, "submodule");
    out.expect_code(1);
    assert!(
        out.stderr.contains("vendor/lib (added) is outside"),
        "{}",
        out.stderr
    );
}

#[test]
fn commit_all_reads_the_index_git_hands_the_hook() {
    let env = TestEnv::new();
    let (_, wt) = crew_setup(&env, "implement", &["src/routes/**"]);
    write(
        &wt.join("README.md"),
        "changed but only staged by commit -a\n",
    );
    let out = env.git(&wt, &["commit", "-q", "-a", "-m", "all"]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("README.md (modified) is outside"),
        "{}",
        out.stderr
    );
    // And `git commit <path>` uses yet another temporary index.
    let out = env.git(&wt, &["commit", "-q", "-m", "only", "README.md"]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("README.md (modified) is outside"),
        "{}",
        out.stderr
    );
}

#[test]
fn read_only_roles_may_not_commit_at_all() {
    for role in ["review", "investigate"] {
        let env = TestEnv::new();
        let (_, wt) = crew_setup(&env, role, &["**"]);
        write(&wt.join("src/routes/a.rs"), "changed\n");
        env.git_ok(&wt, &["add", "-A"]);
        let out = commit(&env, &wt, "review commits");
        out.expect_code(1);
        assert!(
            out.stderr.contains(&format!(
                "a {role} run may not commit; its only output is its manifest"
            )),
            "{}",
            out.stderr
        );
        assert!(out.stderr.contains("$CREW_MANIFEST"));
    }
}

#[test]
fn protected_paths_are_refused_whatever_the_scope() {
    let env = TestEnv::new();
    let (_, wt) = crew_setup(&env, "implement", &["**"]);
    write(&wt.join(".crew/flight.toml"), "version = 1\n");
    write(&wt.join("docs/state/crew.json"), "{}\n");
    write(&wt.join("src/routes/a.rs"), "fine\n");
    env.git_ok(&wt, &["add", "-A"]);
    let out = commit(&env, &wt, "protected");
    out.expect_code(1);
    assert!(
        out.stderr
            .contains(".crew/flight.toml (added) is protected: no worker may commit .crew/"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("docs/state/crew.json (added) is protected"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains("src/routes/a.rs"));
}

#[test]
fn the_hook_reports_json_when_asked() {
    let env = TestEnv::new();
    let (_, wt) = crew_setup(&env, "implement", &["src/routes/**"]);
    write(&wt.join("src/lib.rs"), "x\n");
    env.git_ok(&wt, &["add", "-A"]);
    let out = env.crew(&wt, &["hook", "pre-commit", "--json"]);
    out.expect_code(1);
    let json = out.json();
    assert_eq!(json["ok"], false);
    assert_eq!(json["error"]["code"], "scope-violation");
    assert_eq!(json["run"], "r1");
    assert_eq!(json["staged"], serde_json::json!(["src/lib.rs"]));
    assert_eq!(
        json["violations"][0],
        "src/lib.rs (modified) is outside the write scope src/routes/**"
    );
}

#[test]
fn a_plain_checkout_commits_freely_and_is_warned_about_paths_a_live_run_holds() {
    let env = TestEnv::new();
    let (repo, _) = crew_setup(&env, "implement", &["src/routes/**"]);
    write(&repo.join("src/lib.rs"), "lead's change\n");
    env.git_ok(&repo, &["add", "-A"]);
    let out = commit(&env, &repo, "lead commit");
    out.expect_code(0);
    assert_eq!(out.stderr, "");

    write(
        &repo.join(".git/crew/live/r1.json"),
        r#"{"run": "r1", "task": "routes", "scope": ["src/routes/**"], "phase": "working"}"#,
    );
    write(
        &repo.join("src/routes/a.rs"),
        "the lead touches the run's files\n",
    );
    env.git_ok(&repo, &["add", "-A"]);
    let out = commit(&env, &repo, "lead commit 2");
    out.expect_code(0);
    assert_eq!(
        out.stderr,
        "crew: warning: src/routes/a.rs is held by in-flight run r1 (task routes, scope src/routes/**)\n"
    );
}

#[test]
fn post_merge_audits_a_crew_branch_merged_by_hand_and_never_blocks() {
    let env = TestEnv::new();
    let (repo, wt) = crew_setup(&env, "implement", &["src/routes/**"]);
    write(&wt.join("src/routes/b.rs"), "in scope\n");
    env.git_ok(&wt, &["add", "-A"]);
    env.git_ok(&wt, &["commit", "-q", "-m", "work"]);
    // Sneak an out-of-scope change past the hook.
    write(&wt.join("README.md"), "sneaky\n");
    env.git_ok(&wt, &["commit", "-q", "--no-verify", "-am", "sneak"]);

    let out = env.git(
        &repo,
        &[
            "merge",
            "-q",
            "--no-ff",
            "-m",
            "merge run",
            "crew/routes/r1",
        ],
    );
    out.expect_code(0);
    assert!(
        out.stderr
            .contains("crew: warning: merged run r1 (task routes) breaks its fences:"),
        "{}",
        out.stderr
    );
    assert!(
        out.stderr
            .contains("crew:   README.md (modified) is outside the write scope src/routes/**"),
        "{}",
        out.stderr
    );
    assert_eq!(read(&repo.join("README.md")), "sneaky\n");
    // The run record is on the merge and on both worker commits, and git log shows it.
    let note = env.git_ok(&repo, &["notes", "--ref=crew", "show", "HEAD"]);
    let note: serde_json::Value = serde_json::from_str(&note).unwrap();
    assert_eq!(note["run"], "r1");
    assert_eq!(
        note["violations"][0],
        "README.md (modified) is outside the write scope src/routes/**"
    );
    let work = env.git_ok(&repo, &["rev-parse", "crew/routes/r1^"]);
    let note = env.git_ok(&repo, &["notes", "--ref=crew", "show", work.trim()]);
    assert!(note.contains("\"task\":\"routes\""), "{note}");
    let log = env.git_ok(&repo, &["log", "-1", "crew/routes/r1"]);
    assert!(log.contains("Notes (crew):"), "{log}");

    // JSON from the entry point itself, after the fact.
    let out = env.crew(&repo, &["hook", "post-merge", "0", "--json"]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["runs"][0]["run"], "r1");
    assert_eq!(
        json["runs"][0]["files"],
        serde_json::json!(["README.md", "src/routes/b.rs"])
    );
}

#[test]
fn post_merge_of_a_clean_run_says_so() {
    let env = TestEnv::new();
    let (repo, wt) = crew_setup(&env, "implement", &["src/routes/**"]);
    write(&wt.join("src/routes/b.rs"), "in scope\n");
    env.git_ok(&wt, &["add", "-A"]);
    env.git_ok(&wt, &["commit", "-q", "-m", "work"]);
    let out = env.git(&repo, &["merge", "-q", "--ff-only", "crew/routes/r1"]);
    out.expect_code(0);
    assert_eq!(
        out.stderr,
        "crew: merged run r1 (task routes): 1 paths, all inside its scope\n"
    );
}

#[test]
fn intent_to_add_paths_are_not_commits() {
    let env = TestEnv::new();
    let (_, wt) = crew_setup(&env, "implement", &["src/routes/**"]);
    write(&wt.join("later.txt"), "not yet\n");
    write(&wt.join("src/routes/b.rs"), "ok\n");
    env.git_ok(&wt, &["add", "-N", "later.txt"]);
    env.git_ok(&wt, &["add", "src/routes/b.rs"]);
    let out = env.crew(&wt, &["hook", "pre-commit", "--json"]);
    out.expect_code(0);
    assert_eq!(out.json()["staged"], serde_json::json!(["src/routes/b.rs"]));
}

#[test]
fn the_first_commit_on_an_unborn_branch_is_checked_too() {
    let env = TestEnv::new();
    let repo = env.root().join("fresh");
    env.git_ok(
        env.root(),
        &["init", "-q", "-b", "main", repo.to_str().unwrap()],
    );
    env.git_ok(&repo, &["config", "extensions.worktreeConfig", "true"]);
    for (key, value) in [
        ("crew.run", "r0"),
        ("crew.task", "boot"),
        ("crew.role", "implement"),
        ("crew.scope", "src/"),
    ] {
        env.git_ok(&repo, &["config", "--worktree", key, value]);
    }
    write(&repo.join("src/main.rs"), "fn main() {}\n");
    write(&repo.join("Makefile"), "all:\n");
    env.git_ok(&repo, &["add", "-A"]);
    let out = env.crew(&repo, &["hook", "pre-commit", "--json"]);
    out.expect_code(1);
    let json = out.json();
    assert_eq!(
        json["staged"],
        serde_json::json!(["Makefile", "src/main.rs"])
    );
    assert_eq!(
        json["violations"],
        serde_json::json!(["Makefile (added) is outside the write scope src/"])
    );
}

#[test]
fn a_plain_checkout_with_many_live_runs_is_warned_by_each_holder_and_never_by_one_that_ended() {
    let env = TestEnv::new();
    let (repo, _) = crew_setup(&env, "implement", &["src/routes/**"]);
    let live = repo.join(".git/crew/live");
    let pointer = |run: &str, task: &str, scope: &[&str]| {
        let scope: Vec<String> = scope.iter().map(|g| format!("{g:?}")).collect();
        write(
            &live.join(format!("{run}.json")),
            &format!(
                r#"{{"run": "{run}", "task": "{task}", "scope": [{}], "phase": "working"}}"#,
                scope.join(", ")
            ),
        );
    };
    // Forty runs holding folders nothing staged is in, and four that hold staged paths
    // each in its own way: a folder, every `.rs` file, a literal path, an escaped glob.
    for i in 0..40 {
        pointer(
            &format!("r{i:02}"),
            &format!("idle{i}"),
            &[&format!("far/d{i}/**")],
        );
    }
    pointer("s1", "routes", &["src/routes/**"]);
    pointer("s2", "rust", &["**/*.rs"]);
    pointer("s3", "readme", &["README.md"]);
    pointer("s4", "docs", &["d\\ocs/*.md"]);
    // A broken glob holds nothing, and says nothing.
    pointer("s5", "broken", &["src/[a"]);
    write(&repo.join("src/routes/a.rs"), "the lead's\n");
    write(&repo.join("README.md"), "the lead's\n");
    write(&repo.join("docs/guide.md"), "the lead's\n");
    write(&repo.join("build.sh"), "the lead's\n");
    env.git_ok(&repo, &["add", "-A"]);
    let out = env.crew(&repo, &["hook", "pre-commit", "--json"]);
    out.expect_code(0);
    let warned = |run: &str, task: &str, path: &str, scope: &str| {
        format!("{path} is held by in-flight run {run} (task {task}, scope {scope})")
    };
    assert_eq!(
        out.json()["warnings"],
        serde_json::json!([
            warned("s1", "routes", "src/routes/a.rs", "src/routes/**"),
            warned("s2", "rust", "src/routes/a.rs", "**/*.rs"),
            warned("s3", "readme", "README.md", "README.md"),
            warned("s4", "docs", "docs/guide.md", "d\\ocs/*.md"),
        ])
    );
    // A run that ended has no live pointer: it holds nothing any more.
    std::fs::remove_file(live.join("s1.json")).unwrap();
    std::fs::remove_file(live.join("s2.json")).unwrap();
    let out = commit(&env, &repo, "the lead's commit");
    out.expect_code(0);
    assert_eq!(
        out.stderr,
        "crew: warning: README.md is held by in-flight run s3 (task readme, scope README.md)\n\
         crew: warning: docs/guide.md is held by in-flight run s4 (task docs, scope d\\ocs/*.md)\n"
    );
    // The hook keeps what it read of the pointers; a run that starts after is read
    // from its own pointer all the same.
    let kept = read(&repo.join(".git/crew/live-scopes.json"));
    assert!(
        kept.contains("r39.json") && !kept.contains("s1.json"),
        "{kept}"
    );
    pointer("s6", "build", &["build.sh"]);
    write(&repo.join("build.sh"), "the lead's, again\n");
    env.git_ok(&repo, &["add", "-A"]);
    let out = commit(&env, &repo, "the lead's second commit");
    out.expect_code(0);
    assert_eq!(
        out.stderr,
        "crew: warning: build.sh is held by in-flight run s6 (task build, scope build.sh)\n"
    );
}

/// What the pre-commit shim runs: `git-crew-hook`, the binary of the hook's code alone.
fn hook_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_git-crew-hook"))
}

/// Where the C toolchain has libgcc's static unwinder (`libgcc_eh.a`, with gcc's libraries
/// on Linux and glibc), both binaries link it and never load `libgcc_s.so.1`, whose
/// constructor queries the CPU at every start of a hook; where it has not, they link
/// `libgcc_s` as before (build.rs).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn the_binaries_link_the_unwinder_in_where_the_toolchain_has_it() {
    let printed = std::process::Command::new("cc")
        .arg("-print-file-name=libgcc_eh.a")
        .output()
        .expect("cc, which links the binaries");
    let archive = PathBuf::from(String::from_utf8_lossy(&printed.stdout).trim());
    let static_unwinder = archive.is_absolute() && archive.is_file();
    for bin in [hook_bin(), PathBuf::from(env!("CARGO_BIN_EXE_git-crew"))] {
        let out = std::process::Command::new("readelf")
            .arg("-d")
            .arg(&bin)
            .output()
            .expect("readelf (binutils)");
        let dynamic = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && dynamic.contains("(NEEDED)"),
            "{dynamic}"
        );
        assert_eq!(
            dynamic.contains("[libgcc_s.so.1]"),
            !static_unwinder,
            "{} with {}: {dynamic}",
            bin.display(),
            archive.display()
        );
    }
}

/// The shims' command lines are read without clap; the same line with `-C .` in front
/// goes through clap; `git-crew-hook` answers the usual cases itself and hands the rest
/// to git-crew. All three say the same and exit alike: a commit within a run's scope, a
/// refusal in a run's worktree, a warning in the lead's checkout, a post-merge, and no
/// repository at all.
#[test]
fn the_shims_lines_answer_as_the_full_parser_does() {
    let env = TestEnv::new();
    let (repo, wt) = crew_setup(&env, "implement", &["src/routes/**"]);
    let both = |dir: &Path, line: &[&str]| {
        let fast = env.crew(dir, line);
        let parsed = env.crew(dir, &[&["-C", "."][..], line].concat());
        let quick = run(
            env.command(hook_bin()).current_dir(dir).args(&line[1..]),
            None,
        );
        for other in [&parsed, &quick] {
            assert_eq!(
                (fast.code, &fast.stdout, &fast.stderr),
                (other.code, &other.stdout, &other.stderr),
                "{line:?} in {}",
                dir.display()
            );
        }
        fast
    };

    write(&wt.join("src/routes/a.rs"), "inside\n");
    env.git_ok(&wt, &["add", "-A"]);
    let passed = both(&wt, &["hook", "pre-commit"]);
    passed.expect_code(0);
    assert_eq!((passed.stdout.as_str(), passed.stderr.as_str()), ("", ""));

    write(&wt.join("src/lib.rs"), "outside\n");
    env.git_ok(&wt, &["add", "-A"]);
    let refused = both(&wt, &["hook", "pre-commit"]);
    refused.expect_code(1);
    assert!(
        refused
            .stderr
            .contains("src/lib.rs (modified) is outside the write scope"),
        "{}",
        refused.stderr
    );

    write(
        &repo.join(".git/crew/live/r1.json"),
        r#"{"run": "r1", "task": "routes", "scope": ["src/routes/**"], "phase": "working"}"#,
    );
    write(&repo.join("src/routes/a.rs"), "the lead's\n");
    env.git_ok(&repo, &["add", "-A"]);
    let warned = both(&repo, &["hook", "pre-commit"]);
    warned.expect_code(0);
    assert_eq!(
        warned.stderr,
        "crew: warning: src/routes/a.rs is held by in-flight run r1 (task routes, scope src/routes/**)\n"
    );

    for line in [
        &["hook", "post-merge"][..],
        &["hook", "post-merge", "0"],
        &["hook", "post-commit"],
    ] {
        both(&repo, line).expect_code(0);
    }

    let elsewhere = env.root().join("not-a-repo");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let outside = both(&elsewhere, &["hook", "pre-commit"]);
    assert_ne!(outside.code, 0, "{}", outside.stderr);
    assert!(
        outside.stderr.contains("not a git repository"),
        "{}",
        outside.stderr
    );

    // A refusal to hand on with no git-crew beside git-crew-hook or on PATH: the commit
    // stops, unchecked, and says so.
    let lonely = env.root().join("lonely");
    std::fs::create_dir_all(&lonely).unwrap();
    std::fs::copy(hook_bin(), lonely.join("git-crew-hook")).unwrap();
    let alone = run(
        env.command(lonely.join("git-crew-hook"))
            .current_dir(&wt)
            .env("PATH", "/usr/bin:/bin")
            .arg("pre-commit"),
        None,
    );
    alone.expect_code(1);
    assert!(
        alone.stderr.contains("cannot run git-crew") && alone.stderr.contains("not checked"),
        "{}",
        alone.stderr
    );
}
