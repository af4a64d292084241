//! A worker's private view of the git dir: git used the way tools use it (a stash as
//! lint-staged's backup makes one, a tag, a scratch branch, a scratch repository of its
//! own, a commit inside a submodule) works in a run, and none of it reaches the lead's
//! repository but the run's branch and, checked, its objects.

use std::path::Path;

use crate::common::{TestEnv, read, write};
use crate::dispatch::require_fence;

fn crew_repo(env: &TestEnv) -> std::path::PathBuf {
    env.fixture("crew-repo.sh", "repo", &[])
}

/// The fence of `result` holds a private view (`+ns`): the cases below need one.
#[track_caller]
fn require_view(result: &serde_json::Value) {
    assert!(
        result["fence"].as_str().is_some_and(|f| f.ends_with("+ns")),
        "this machine gives no private mount namespace: {result}"
    );
}

fn file_or_none(path: &Path) -> Option<Vec<u8>> {
    std::fs::read(path).ok()
}

#[test]
fn a_worker_stashes_tags_and_builds_a_scratch_repository_and_the_lead_sees_none_of_it() {
    require_fence();
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    // The lead has a stash entry of its own.
    write(&repo.join("README.md"), "# Project, edited\n");
    env.git(&repo, &["stash", "push", "-q", "-m", "lead's stash"])
        .expect_code(0);
    let git_dir = repo.join(".git");
    let stash_before = file_or_none(&git_dir.join("refs/stash"));
    let stash_log_before = file_or_none(&git_dir.join("logs/refs/stash"));
    let config_before = read(&git_dir.join("config"));
    assert!(stash_before.is_some(), "the lead's stash is a loose ref");
    let run = env
        .dispatch(&repo, "routes")
        .backend("git-scratch")
        .scope("src/routes/**")
        .verify("test -f src/routes/crew.rs")
        .run_id();
    let (_, result) = env.wait(&repo, &run).result();
    require_view(&result);
    let transcript = env.transcript(&repo, &run);
    assert_eq!(result["outcome"], "pass", "{result}\n{transcript}");
    assert!(transcript.contains("worker stash"), "{transcript}");
    for noise in [
        "packed-refs.lock",
        "Permission denied",
        "Read-only file system",
    ] {
        assert!(!transcript.contains(noise), "{noise} in {transcript}");
    }
    // The lead's stash, tags, branches and config are as they were.
    assert_eq!(file_or_none(&git_dir.join("refs/stash")), stash_before);
    assert_eq!(
        file_or_none(&git_dir.join("logs/refs/stash")),
        stash_log_before
    );
    assert_eq!(read(&git_dir.join("config")), config_before);
    assert!(!git_dir.join("packed-refs.lock").exists());
    let tags = env.git_ok(&repo, &["tag", "--list"]);
    assert!(!tags.contains("worker-tag"), "{tags}");
    let branches = env.git_ok(&repo, &["branch", "--list", "worker-scratch"]);
    assert!(branches.trim().is_empty(), "{branches}");
    // The scratch repository kept its own objects: none came into the lead's store.
    let scratch_head = transcript
        .lines()
        .find_map(|l| l.strip_prefix("scratch commit "))
        .unwrap_or_default()
        .trim();
    assert_eq!(scratch_head.len(), 40, "{scratch_head}");
    env.git(&repo, &["cat-file", "-e", scratch_head])
        .expect_code(1);
    // The run's own commit did come in, and lands.
    env.crew(&repo, &["integrate", &run]).expect_code(0);
    assert!(repo.join("src/routes/crew.rs").is_file());
    assert_eq!(env.git_ok(&repo, &["stash", "list"]).lines().count(), 1);
}

#[test]
fn a_worker_commits_inside_a_submodule_and_the_commit_lands_in_the_leads_copy() {
    require_fence();
    let env = TestEnv::new();
    let lib = env.root().join("lib");
    env.git(
        env.root(),
        &["init", "-q", "-b", "main", lib.to_str().unwrap()],
    )
    .expect_code(0);
    write(&lib.join("lib.txt"), "v1\n");
    env.git(&lib, &["add", "lib.txt"]).expect_code(0);
    env.git(&lib, &["commit", "-q", "-m", "lib v1"])
        .expect_code(0);
    let repo = crew_repo(&env);
    env.git(
        &repo,
        &[
            "-c",
            "protocol.file.allow=always",
            "submodule",
            "add",
            "-q",
            lib.to_str().unwrap(),
            "vendor/lib",
        ],
    )
    .expect_code(0);
    env.git(&repo, &["commit", "-q", "-m", "add vendor/lib"])
        .expect_code(0);
    let git_dir = repo.join(".git");
    let config_before = read(&git_dir.join("config"));
    let run = env
        .dispatch(&repo, "lib")
        .backend("submodule")
        .scope("vendor/lib")
        .verify("grep -q v2 vendor/lib/lib.txt")
        .run_id();
    let (_, result) = env.wait(&repo, &run).result();
    require_view(&result);
    assert_eq!(
        result["outcome"],
        "pass",
        "{result}\n{}",
        env.transcript(&repo, &run)
    );
    assert_eq!(result["diff"]["files"], serde_json::json!(["vendor/lib"]));
    // Nothing of the lead's config was written to set the submodule up.
    assert_eq!(read(&git_dir.join("config")), config_before);
    env.crew(&repo, &["integrate", &run]).expect_code(0);
    let gitlink = env.git_ok(&repo, &["rev-parse", "HEAD:vendor/lib"]);
    let gitlink = gitlink.trim();
    // The lead's copy of the submodule has the commit, on the run's branch name.
    let module = git_dir.join("modules/vendor/lib");
    let branch = format!("refs/heads/crew/lib/{run}");
    assert_eq!(env.git_ok(&module, &["rev-parse", &branch]).trim(), gitlink);
    env.git(&module, &["fsck", "--no-progress"]).expect_code(0);
    env.git(&repo, &["submodule", "update"]).expect_code(0);
    assert_eq!(read(&repo.join("vendor/lib/lib.txt")), "v2\n");
}

#[test]
fn no_automatic_gc_runs_in_a_run_and_the_repositorys_objects_stay_out_of_its_quarantine() {
    require_fence();
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    // A repository with loose objects enough for `gc --auto` (in the foreground) after
    // every commit: in the worker's view it would repack the repository's whole store
    // into the run's quarantine (one pack, over fences.max_file_size in a big store,
    // which would take the run's own objects down with it).
    let blobs = env.root().join("blobs");
    std::fs::create_dir_all(&blobs).unwrap();
    let mut list = String::new();
    for i in 0..2000 {
        let path = blobs.join(i.to_string());
        write(&path, &format!("blob {i}\n"));
        list.push_str(&format!("{}\n", path.display()));
    }
    let mut hash = env.command("git");
    hash.current_dir(&repo)
        .args(["hash-object", "-w", "--stdin-paths"]);
    crate::common::run(&mut hash, Some(list.as_bytes())).expect_code(0);
    for (key, value) in [
        ("gc.auto", "1"),
        ("gc.autoDetach", "false"),
        ("maintenance.autoDetach", "false"),
    ] {
        env.git(&repo, &["config", key, value]).expect_code(0);
    }
    let packs = |repo: &Path| {
        std::fs::read_dir(repo.join(".git/objects/pack"))
            .map(|d| {
                d.flatten()
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".pack"))
                    .count()
            })
            .unwrap_or(0)
    };
    assert_eq!(packs(&repo), 0);
    let run = env
        .dispatch(&repo, "routes")
        .backend("git-scratch")
        .scope("src/routes/**")
        .verify("test -f src/routes/crew.rs")
        .run_id();
    let (_, result) = env.wait(&repo, &run).result();
    require_view(&result);
    assert_eq!(
        result["outcome"],
        "pass",
        "{result}\n{}",
        env.transcript(&repo, &run)
    );
    // Only the run's own objects came in, loose: nothing repacked the store.
    assert_eq!(packs(&repo), 0);
    env.git_ok(
        &repo,
        &["rev-parse", &format!("refs/heads/crew/routes/{run}")],
    );
    env.crew(&repo, &["integrate", &run]).expect_code(0);
    assert!(repo.join("src/routes/crew.rs").is_file());
}
