//! A run leaves nothing in its task's ref folder but its branch: refs a worker makes in
//! `refs/heads/crew/<task>/` are named in the run's discrepancies, taken out when the
//! attempt ends and kept under `refs/crew/strays/<run>/`; those left behind are found by
//! `doctor` and `prune`, which take them out the same way.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use crate::common::{TestEnv, poll_until};

fn crew_repo(env: &TestEnv) -> std::path::PathBuf {
    env.fixture("crew-repo.sh", "repo", &[])
}

/// The refs under `prefix`, by full name.
fn refs(env: &TestEnv, repo: &Path, prefix: &str) -> Vec<String> {
    env.git_ok(repo, &["for-each-ref", "--format=%(refname)", prefix])
        .lines()
        .map(String::from)
        .collect()
}

fn rev(env: &TestEnv, repo: &Path, name: &str) -> String {
    env.git_ok(repo, &["rev-parse", "--verify", name])
        .trim()
        .to_string()
}

/// A run of task `routes` by `backend`, scoped to `src/routes/**`, ended; its result.
fn routes_run(env: &TestEnv, repo: &Path, backend: &str, extra: &[&str]) -> (String, Value) {
    let run = env
        .dispatch(repo, "routes")
        .backend(backend)
        .scope("src/routes/**")
        .args(extra)
        .finished();
    let (_, result) = env.wait(repo, &run).result();
    (run, result)
}

fn discrepancies(result: &Value) -> Vec<String> {
    result["discrepancies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_run_leaves_nothing_in_its_ref_folder_but_its_branch() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    // An earlier run of the task kept its branch: it is no stray of the next run.
    let (earlier, _) = routes_run(&env, &repo, "ok", &[]);
    let earlier_tip = rev(&env, &repo, &format!("crew/routes/{earlier}"));
    let (run, result) = routes_run(&env, &repo, "stray-refs", &[]);
    assert_eq!(result["outcome"], "pass", "{result}");
    let tmp = repo.join(format!(".git/crew/runs/{run}/tmp/strays-made"));
    let made = std::fs::read_to_string(&tmp).unwrap();
    let (hotfix, nested) = made.trim().split_once(' ').unwrap();

    // Named in the run's discrepancies, both of them.
    let lines = discrepancies(&result);
    let kept = |name: &str| format!("refs/crew/strays/{run}/{name}");
    for (name, commit) in [("hotfix", hotfix), ("a/b", nested)] {
        let line = lines
            .iter()
            .find(|l| l.contains(&format!("made crew/routes/{name} ")))
            .unwrap_or_else(|| panic!("{name} is not named: {lines:?}"));
        assert!(line.contains(&kept(name)), "{line}");
        assert!(line.contains(&commit[..12]), "{line}");
    }
    // Gone from the task's folder: only the two runs' branches are left, the earlier
    // one where it was.
    assert_eq!(
        refs(&env, &repo, "refs/heads/crew/routes/"),
        [
            format!("refs/heads/crew/routes/{earlier}"),
            format!("refs/heads/crew/routes/{run}"),
        ]
    );
    assert_eq!(
        rev(&env, &repo, &format!("crew/routes/{earlier}")),
        earlier_tip
    );
    assert!(!repo.join(".git/refs/heads/crew/routes/a").exists());
    // Kept, commits and all.
    assert_eq!(
        refs(&env, &repo, "refs/crew/strays/"),
        [kept("a/b"), kept("hotfix")]
    );
    assert_eq!(rev(&env, &repo, &kept("hotfix")), hotfix);
    assert_eq!(rev(&env, &repo, &kept("a/b")), nested);
    let readme = env.git_ok(&repo, &["show", &format!("{}:README.md", kept("hotfix"))]);
    assert!(readme.contains("hotfix by a worker"), "{readme}");
    // `show` reads the same, and a verify run again keeps them.
    let shown = env.crew(&repo, &["show", &run]).json();
    assert_eq!(shown["run"]["discrepancies"], result["discrepancies"]);
    env.crew(&repo, &["verify", &run, "--command", "true"])
        .expect_code(0);
    let shown = env.crew(&repo, &["show", &run]).json();
    assert_eq!(shown["run"]["discrepancies"], result["discrepancies"]);
    assert_eq!(shown["run"]["verify"]["passed"], true);

    // Integrate brings the run's branch only: not the change outside its scope.
    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(0);
    let main = env.git_ok(&repo, &["show", "main:README.md"]);
    assert!(!main.contains("hotfix"), "{main}");
    for commit in [hotfix, nested] {
        let reached = env.git(&repo, &["merge-base", "--is-ancestor", commit, "main"]);
        assert_eq!(reached.code, 1, "{commit} landed on main");
    }
    env.git_ok(&repo, &["cat-file", "-e", "main:src/routes/crew.rs"]);
    // Nothing is left for doctor, and the next run of the task is not refused for a
    // task folder (`routes/a`) nesting in its own.
    let doctor = env.crew(&repo, &["doctor"]).json();
    assert!(!doctor.to_string().contains("stray-task-ref"), "{doctor}");
    let (_, next) = routes_run(&env, &repo, "ok", &[]);
    assert_eq!(next["outcome"], "pass", "{next}");
}

#[test]
fn a_run_whose_supervisor_was_killed_has_its_strays_taken_when_it_is_reaped() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = env
        .dispatch(&repo, "routes")
        .backend("stray-refs")
        .scope("src/routes/**")
        .set("backends.stray-refs.env.STRAY_HANG=yes")
        .run_id();
    let made = repo.join(format!(".git/crew/runs/{run}/tmp/strays-made"));
    poll_until(Duration::from_secs(20), "the worker's refs", || {
        made.exists()
    });
    let status = env.crew(&repo, &["status", &run]).json();
    let supervisor = status["runs"][0]["supervisor_pid"].as_u64().unwrap();
    std::process::Command::new("kill")
        .args(["-9", &supervisor.to_string()])
        .status()
        .unwrap();
    // `status` only reports the dead supervisor; the next command that acts (here
    // `wait`) reaps the run.
    poll_until(
        Duration::from_secs(20),
        "status to find the supervisor dead",
        || env.crew(&repo, &["status", &run]).json()["runs"][0]["supervisor"] == "dead",
    );
    env.wait(&repo, &run).run().expect_code(1);
    let result = env.crew(&repo, &["status", &run]).json()["runs"][0].clone();
    assert_eq!(result["phase"], "abandoned", "{result}");
    let lines = discrepancies(&env.crew(&repo, &["show", &run]).json()["run"]);
    for name in ["hotfix", "a/b"] {
        assert!(
            lines
                .iter()
                .any(|l| l.contains(&format!("crew/routes/{name} "))
                    && l.contains(&format!("refs/crew/strays/{run}/{name}"))),
            "{name}: {lines:?} {result}"
        );
    }
    assert_eq!(
        refs(&env, &repo, "refs/heads/crew/routes/"),
        [format!("refs/heads/crew/routes/{run}")]
    );
}

/// A commit on top of main that no branch holds.
fn side_commit(env: &TestEnv, repo: &Path, text: &str) -> String {
    let tree = env.git_ok(repo, &["rev-parse", "main^{tree}"]);
    env.git_ok(
        repo,
        &["commit-tree", tree.trim(), "-p", "main", "-m", text],
    )
    .trim()
    .to_string()
}

#[test]
fn a_stray_left_behind_is_found_by_doctor_and_prune_and_kept_when_taken_out() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let (run, _) = routes_run(&env, &repo, "ok", &[]);
    // Left behind, as by a supervisor killed before it could take them (or a git-crew
    // from before it did): one packed, one loose in nested folders; and a ref in a
    // folder no run's task names, which is not git-crew's.
    let left = side_commit(&env, &repo, "left");
    let nested = side_commit(&env, &repo, "nested");
    env.git_ok(&repo, &["update-ref", "refs/heads/crew/routes/left", &left]);
    env.git_ok(&repo, &["pack-refs", "--all"]);
    env.git_ok(
        &repo,
        &["update-ref", "refs/heads/crew/routes/x/y", &nested],
    );
    env.git_ok(&repo, &["update-ref", "refs/heads/crew/mine/z", &left]);
    let kept = |name: &str| format!("refs/crew/strays/{run}/{name}");

    // doctor names each as a finding of its own kind, and changes nothing.
    let out = env.crew(&repo, &["doctor"]);
    out.expect_code(1);
    let doctor = out.json();
    let findings: Vec<&Value> = doctor["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "stray-task-ref")
        .collect();
    assert_eq!(findings.len(), 2, "{doctor}");
    for (name, finding) in ["left", "x/y"].iter().zip(&findings) {
        let detail = finding["detail"].as_str().unwrap();
        assert!(
            detail.contains(&format!("crew/routes/{name} (")),
            "{detail}"
        );
        assert!(detail.contains(&kept(name)), "{detail}");
        assert_eq!(finding["fixed"], false);
    }
    assert!(!doctor.to_string().contains("crew/mine"), "{doctor}");

    // prune --dry-run lists them, and changes nothing.
    let dry = env.crew(&repo, &["prune", "--dry-run", "--all"]).json();
    let strays = dry["strays"].as_array().unwrap();
    assert_eq!(strays.len(), 2, "{dry}");
    assert_eq!(strays[0]["ref"], "refs/heads/crew/routes/left");
    assert_eq!(strays[0]["kept_as"], kept("left"));
    assert_eq!(strays[0]["target"], left.as_str());
    assert_eq!(strays[0]["removed"], false);
    assert_eq!(strays[1]["ref"], "refs/heads/crew/routes/x/y");
    assert_eq!(
        refs(&env, &repo, "refs/heads/crew/routes/"),
        [
            format!("refs/heads/crew/routes/{run}"),
            "refs/heads/crew/routes/left".to_string(),
            "refs/heads/crew/routes/x/y".to_string(),
        ]
    );
    assert!(refs(&env, &repo, "refs/crew/strays/").is_empty());
    let human = env.crew(&repo, &["prune", "--dry-run", "--human"]);
    assert!(
        human.stdout.contains("stray refs in task ref folders (2):"),
        "{human:?}"
    );

    // doctor --fix takes them out, what they point at kept.
    let fixed = env.crew(&repo, &["doctor", "--fix"]).json();
    let findings: Vec<&Value> = fixed["problems"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["kind"] == "stray-task-ref")
        .collect();
    assert_eq!(findings.len(), 2, "{fixed}");
    assert!(findings.iter().all(|f| f["fixed"] == true), "{fixed}");
    assert_eq!(
        refs(&env, &repo, "refs/heads/crew/routes/"),
        [format!("refs/heads/crew/routes/{run}")]
    );
    assert_eq!(rev(&env, &repo, &kept("left")), left);
    assert_eq!(rev(&env, &repo, &kept("x/y")), nested);
    let packed = std::fs::read_to_string(repo.join(".git/packed-refs")).unwrap();
    assert!(!packed.contains("crew/routes/left"), "{packed}");
    assert_eq!(refs(&env, &repo, "refs/heads/crew/mine/").len(), 1);

    // Another left behind, by the same name: prune --all takes it, kept beside the first.
    env.git_ok(
        &repo,
        &["update-ref", "refs/heads/crew/routes/left", &nested],
    );
    let pruned = env.crew(&repo, &["prune", "--all"]).json();
    let strays = pruned["strays"].as_array().unwrap();
    assert_eq!(strays.len(), 1, "{pruned}");
    assert_eq!(strays[0]["removed"], true);
    assert_eq!(strays[0]["kept_as"], kept("left-2"));
    assert_eq!(rev(&env, &repo, &kept("left-2")), nested);
    assert_eq!(rev(&env, &repo, &kept("left")), left);
    assert!(
        !refs(&env, &repo, "refs/heads/crew/routes/")
            .iter()
            .any(|r| r.ends_with("/left"))
    );
    // Nothing is left for doctor.
    let out = env.crew(&repo, &["doctor"]);
    assert!(!out.stdout.contains("stray-task-ref"), "{}", out.stdout);
}
