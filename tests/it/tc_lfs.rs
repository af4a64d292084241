//! git LFS in a run, with the real git-lfs: a worker's LFS objects go to the run's own
//! LFS store (the upper layer of `.git/lfs` in its view of the git dir, or `lfs.storage`),
//! git-crew hashes each again and brings it into the repository's `.git/lfs/objects` when
//! the attempt ends, and the lead's checkout gets the pointers and the content. A file
//! planted in the store under a false name is kept out, and the run says so.

use std::path::{Path, PathBuf};

use sha2::Digest;

use crate::common::{TestEnv, read};
use crate::dispatch::require_fence;

/// The paths the worker (`git-fixtures/workers/lfs.sh`) changes, and a line each holds.
const ASSETS: [(&str, &str); 3] = [
    ("assets/left.bin", "left asset"),
    ("assets/logo.bin", "logo v2"),
    ("assets/new.bin", "new asset"),
];

/// Insists git-lfs is there: under `.ci/run` a missing one fails the test.
fn require_git_lfs(env: &TestEnv) {
    let out = crate::common::run(env.command("git").args(["lfs", "version"]), None);
    assert_eq!(
        out.code, 0,
        "git-lfs is missing (.ci/run installs it): {}",
        out.stderr
    );
}

/// A repository whose `*.bin` files live in LFS (assets/logo.bin committed), with
/// git-crew initialised after it.
fn lfs_repo(env: &TestEnv) -> PathBuf {
    require_fence();
    require_git_lfs(env);
    env.fixture("crew-repo.sh", "repo", &["lfs-repo.sh"])
}

fn sha256(bytes: &[u8]) -> String {
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Where the repository keeps LFS object `oid`.
fn lfs_object(repo: &Path, oid: &str) -> PathBuf {
    repo.join(".git/lfs/objects")
        .join(&oid[..2])
        .join(&oid[2..4])
        .join(oid)
}

/// The oid of the LFS pointer at `rev:path`, insisting it is one.
fn pointer_oid(env: &TestEnv, repo: &Path, rev: &str, path: &str) -> String {
    let blob = env.git_ok(repo, &["cat-file", "-p", &format!("{rev}:{path}")]);
    assert!(
        blob.starts_with("version https://git-lfs.github.com/spec/v1\n"),
        "{rev}:{path} is no LFS pointer:\n{blob}"
    );
    blob.lines()
        .find_map(|l| l.strip_prefix("oid sha256:"))
        .unwrap_or_else(|| panic!("no oid in {rev}:{path}:\n{blob}"))
        .to_string()
}

#[test]
#[ignore = "needs git-lfs; .ci/run installs it"]
fn lfs_files_a_worker_adds_and_changes_land_as_pointers_with_their_objects() {
    // Where a real machine keeps its repositories: the worker sees the lead's checkout
    // and git dir, and only the fence keeps it out of the repository's LFS store.
    let env = TestEnv::outside_tmp();
    let repo = lfs_repo(&env);
    let base = env.git_ok(&repo, &["rev-parse", "main"]).trim().to_string();
    let old_logo = pointer_oid(&env, &repo, "main", "assets/logo.bin");
    let verify = "grep -q 'new asset' assets/new.bin && grep -q 'logo v2' assets/logo.bin \
                  && grep -q 'left asset' assets/left.bin \
                  && test \"$(git lfs ls-files -n | sort | paste -sd' ' -)\" = \
                  'assets/left.bin assets/logo.bin assets/new.bin' && git lfs fsck";
    let run = env
        .dispatch(&repo, "assets")
        .backend("lfs")
        .scope("assets/**")
        .verify(verify)
        .run_id();
    let (_, result) = env.wait(&repo, &run).result();
    let transcript = env.transcript(&repo, &run);
    assert_eq!(result["outcome"], "pass", "{result}\n{transcript}");
    assert!(
        result["fence"]
            .as_str()
            .is_some_and(|f| f.starts_with("landlock")),
        "{result}"
    );
    env.crew(&repo, &["integrate", &run]).expect_code(0);
    // What landed: the three pointers, and nothing else (but git-crew's own state file).
    let changed = env.git_ok(&repo, &["diff", "--name-only", &base, "main"]);
    let changed: Vec<&str> = changed
        .lines()
        .filter(|p| *p != "docs/state/crew.json")
        .collect();
    assert_eq!(
        changed,
        ASSETS.iter().map(|(p, _)| *p).collect::<Vec<_>>(),
        "{transcript}"
    );
    for (path, line) in ASSETS {
        let oid = pointer_oid(&env, &repo, "main", path);
        // The lead's store has the object, under its name, and the checkout its content.
        let object = std::fs::read(lfs_object(&repo, &oid))
            .unwrap_or_else(|e| panic!("no LFS object for {path} ({oid}): {e}\n{transcript}"));
        assert_eq!(sha256(&object), oid, "{path}");
        assert!(String::from_utf8_lossy(&object).contains(line), "{path}");
        let checked_out = read(&repo.join(path));
        assert!(checked_out.contains(line), "{path}: {checked_out}");
    }
    // The old logo's object is still the repository's, untouched.
    let logo_v1 = std::fs::read(lfs_object(&repo, &old_logo)).unwrap();
    assert_eq!(logo_v1, b"logo v1\n");
    let fsck = env.git_ok(&repo, &["lfs", "fsck"]);
    assert!(fsck.contains("Git LFS fsck OK"), "{fsck}");
    // The run's store was emptied into the repository's.
    let store = repo.join(".git/crew/runs").join(&run).join("lfs/objects");
    let left: Vec<_> = std::fs::read_dir(&store)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
#[ignore = "needs git-lfs; .ci/run installs it"]
fn an_lfs_object_whose_content_is_not_its_name_is_kept_out_and_named() {
    let env = TestEnv::new();
    let repo = lfs_repo(&env);
    let old_logo = pointer_oid(&env, &repo, "main", "assets/logo.bin");
    let fake = sha256(b"fake asset\n");
    let run = env
        .dispatch(&repo, "assets")
        .backend("lfs")
        .scope("assets/**")
        .set("backends.lfs.env.LFS=\"false-name\"")
        .run_id();
    let (_, result) = env.wait(&repo, &run).result();
    let transcript = env.transcript(&repo, &run);
    assert!(
        transcript.contains(&format!("planted {fake}")),
        "{transcript}"
    );
    assert_eq!(result["outcome"], "scope-reject", "{result}\n{transcript}");
    let decision = result["decision"].as_str().unwrap_or_default();
    assert!(
        decision.contains("content does not match their names")
            && decision.contains(&format!("LFS object {fake}")),
        "{decision}"
    );
    // The overwrite of the old logo's object: refused by the fence, or (in the run's
    // private view of the git dir) made in the run's own store, and kept out with the
    // planted one.
    if transcript.contains("existing: WROTE") {
        assert!(
            decision.contains(&format!("LFS object {old_logo}")),
            "{decision}"
        );
    } else {
        assert!(transcript.contains("existing: refused"), "{transcript}");
    }
    assert!(!lfs_object(&repo, &fake).exists());
    assert_eq!(
        std::fs::read(lfs_object(&repo, &old_logo)).unwrap(),
        b"logo v1\n"
    );
    // Nothing of the run reaches main.
    let main = env.git_ok(&repo, &["rev-parse", "main"]);
    let out = env.crew(&repo, &["integrate", &run]);
    assert_ne!(out.code, 0, "{}", out.stdout);
    assert_eq!(env.git_ok(&repo, &["rev-parse", "main"]), main);
}
