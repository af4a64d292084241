//! prune, stranded work, `abandon` of an ended run, doctor's list of stranded work,
//! `init --uninstall --purge`, and the ignored files integrate's cleanup names — against
//! a repository holding a run in every state, with real scripted workers.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{TestEnv, read, write};

/// crew-repo.sh with a committed `.gitignore` (build output, `.env`).
fn ignoring_repo(env: &TestEnv) -> PathBuf {
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    write(&repo.join(".gitignore"), "target/\n.env\n");
    env.git_ok(&repo, &["add", ".gitignore"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "ignore build output"]);
    repo
}

/// A finished run of `task` on `backend` within `scope`.
fn finished(
    env: &TestEnv,
    repo: &Path,
    task: &str,
    backend: &str,
    scope: &str,
    extra: &[&str],
) -> String {
    env.dispatch(repo, task)
        .backend(backend)
        .scope(scope)
        .args(extra)
        .finished()
}

/// A run of `task` left live (its budget far away).
fn live(env: &TestEnv, repo: &Path, task: &str, backend: &str, scope: &str) -> String {
    env.dispatch(repo, task)
        .backend(backend)
        .scope(scope)
        .args(&["--time-budget", "10m"])
        .run_id()
}

fn integrate_keeping_all(env: &TestEnv, repo: &Path, run: &str) {
    env.crew(repo, &["integrate", run, "--set", "worktree.cleanup=never"])
        .expect_code(0);
}

fn worktree(repo: &Path, run: &str) -> PathBuf {
    repo.join(".git/crew/worktrees").join(run)
}

fn branch_exists(env: &TestEnv, repo: &Path, task: &str, run: &str) -> bool {
    env.git(
        repo,
        &[
            "rev-parse",
            "-q",
            "--verify",
            &format!("refs/heads/crew/{task}/{run}"),
        ],
    )
    .code
        == 0
}

fn runs_of(json: &Value, key: &str) -> Vec<String> {
    let mut runs: Vec<String> = json[key]
        .as_array()
        .unwrap_or_else(|| panic!("no {key} in {json}"))
        .iter()
        .map(|r| r["run"].as_str().unwrap().to_string())
        .collect();
    runs.sort();
    runs
}

fn sorted(runs: &[&String]) -> Vec<String> {
    let mut runs: Vec<String> = runs.iter().map(|r| r.to_string()).collect();
    runs.sort();
    runs
}

fn entry<'a>(json: &'a Value, key: &str, run: &str) -> &'a Value {
    json[key]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["run"] == run)
        .unwrap_or_else(|| panic!("{run} is not in {key}: {json}"))
}

#[test]
fn prune_removes_only_what_may_go_and_lists_stranded_work() {
    let env = TestEnv::new();
    let repo = ignoring_repo(&env);
    // Abandoned while it ran, with nothing done (first: what it ran is long gone when
    // doctor looks).
    let abandoned = live(&env, &repo, "abandoned", "hang", "gone/**");
    env.crew(&repo, &["abandon", &abandoned]).expect_code(0);
    // Integrated, its worktree holding only what git ignores.
    let merged = finished(&env, &repo, "merged", "own-file", "work/**", &[]);
    integrate_keeping_all(&env, &repo, &merged);
    write(&worktree(&repo, &merged).join("target/debug/app"), "binary");
    write(&worktree(&repo, &merged).join(".env"), "TOKEN=1");
    // Integrated, then changed by hand in its worktree.
    let edited = finished(&env, &repo, "edited", "own-file", "work/**", &[]);
    integrate_keeping_all(&env, &repo, &edited);
    write(&worktree(&repo, &edited).join("work/notes.txt"), "unsaved");
    // Passed, never integrated: its commit is kept by nothing else.
    let waiting = finished(&env, &repo, "waiting", "own-file", "work/**", &[]);
    // Failed its verify, with a commit.
    let failed = finished(
        &env,
        &repo,
        "failed",
        "own-file",
        "work/**",
        &["--verify", "false"],
    );
    // No footer, no change.
    let empty = finished(&env, &repo, "empty", "no-footer", "work/**", &[]);
    // Rejected for its scope, its out-of-scope change left uncommitted.
    let rejected = finished(
        &env,
        &repo,
        "rejected",
        "out-of-scope",
        "src/routes/**",
        &[],
    );
    // Live: working, and parked on a question.
    let working = live(&env, &repo, "working", "hang", "live/**");
    let parked = live(&env, &repo, "parked", "needs-help", "help/**");
    env.wait(&repo, &parked).run().expect_code(5);

    let every = [
        (&merged, "merged"),
        (&edited, "edited"),
        (&waiting, "waiting"),
        (&failed, "failed"),
        (&empty, "empty"),
        (&rejected, "rejected"),
        (&abandoned, "abandoned"),
        (&working, "working"),
        (&parked, "parked"),
    ];
    let present = |env: &TestEnv| -> Vec<String> {
        let mut left: Vec<String> = every
            .iter()
            .filter(|(run, task)| {
                worktree(&repo, run).exists() && branch_exists(env, &repo, task, run)
            })
            .map(|(run, _)| run.to_string())
            .collect();
        left.sort();
        left
    };
    let all: Vec<String> = sorted(&every.iter().map(|(r, _)| *r).collect::<Vec<_>>());
    assert_eq!(present(&env), all);

    // A dry run says everything and changes nothing.
    let out = env.crew(&repo, &["prune", "--dry-run"]);
    out.expect_code(0);
    let plan = out.json();
    assert_eq!(plan["dry_run"], true);
    assert_eq!(runs_of(&plan, "removed"), [merged.as_str()]);
    let mut ignored = entry(&plan, "removed", &merged)["ignored"].clone();
    ignored
        .as_array_mut()
        .unwrap()
        .sort_by_key(|v| v.to_string());
    assert_eq!(ignored, serde_json::json!([".env", "target/"]));
    assert_eq!(
        runs_of(&plan, "stranded"),
        sorted(&[&edited, &waiting, &failed, &rejected])
    );
    assert_eq!(present(&env), all, "a dry run removed something");

    let stranded_next = |json: &Value, run: &str| entry(json, "stranded", run)["next"].clone();
    assert_eq!(
        stranded_next(&plan, &waiting),
        format!("git crew integrate {waiting}")
    );
    for run in [&edited, &failed, &rejected] {
        assert_eq!(stranded_next(&plan, run), format!("git crew abandon {run}"));
    }
    let w = entry(&plan, "stranded", &waiting);
    assert_eq!(w["unkept_commits"], 1);
    assert_eq!(w["diff"]["files"], serde_json::json!(["work/waiting.txt"]));
    assert_eq!(w["diff"]["insertions"], 1);
    assert_eq!(w["dirty"], false);
    assert_eq!(w["phase"], "done");
    assert_eq!(w["outcome"], "pass");
    assert!(w["age_s"].is_u64() && w["finished_at"].is_string(), "{w}");
    let e = entry(&plan, "stranded", &edited);
    assert_eq!(e["dirty"], true);
    assert_eq!(e["uncommitted"], serde_json::json!(["work/notes.txt"]));
    assert_eq!(e["unkept_commits"], 0);
    let r = entry(&plan, "stranded", &rejected);
    assert_eq!(r["outcome"], "scope-reject");
    assert_eq!(r["uncommitted"], serde_json::json!(["README.md"]));
    let why = |run: &str| entry(&plan, "skipped", run)["why"].clone();
    assert_eq!(why(&working), "live");
    assert_eq!(why(&parked), "live");
    assert_eq!(why(&empty), "not-integrated");
    assert_eq!(why(&abandoned), "not-integrated");

    // For people: what would go, the stranded work with its next command, what is left.
    let human = env.crew(&repo, &["prune", "--dry-run", "--human"]);
    let text = human.stdout;
    assert!(text.starts_with("would remove 1 run:\n"), "{text}");
    assert!(text.contains("(with the ignored "), "{text}");
    assert!(text.contains("stranded work (4 runs)"), "{text}");
    assert!(
        text.contains(&format!("    next: git crew integrate {waiting}")),
        "{text}"
    );
    assert!(text.contains("1 commit that nothing else keeps"), "{text}");
    assert!(
        text.contains("left alone: 2 live, 2 not integrated (--all removes them)"),
        "{text}"
    );

    // Integrated runs go.
    let out = env.crew(&repo, &["prune"]);
    out.expect_code(0);
    assert_eq!(runs_of(&out.json(), "removed"), [merged.as_str()]);
    let remaining: Vec<String> = all.iter().filter(|r| **r != merged).cloned().collect();
    assert_eq!(present(&env), remaining);
    assert!(!worktree(&repo, &merged).exists());
    assert!(!branch_exists(&env, &repo, "merged", &merged));
    // Its record still reads, and says it was pruned; its commits are still kept.
    let shown = env.crew(&repo, &["show", &merged]);
    shown.expect_code(0);
    let pruned = &shown.json()["run"]["pruned"];
    assert_eq!(pruned["worktree"], true);
    assert_eq!(pruned["branch"], true);
    assert_eq!(pruned["ignored"].as_array().unwrap().len(), 2);
    let block = env.crew(&repo, &["show", &merged, "--human"]).stdout;
    assert!(
        block.contains("(deleted)") && block.contains("(pruned, "),
        "{block}"
    );
    env.git_ok(
        &repo,
        &[
            "cat-file",
            "-e",
            &format!("refs/crew/attempts/{merged}^{{commit}}"),
        ],
    );

    // --all: the finished runs that hold nothing unkept go too; stranded work stays.
    let out = env.crew(&repo, &["prune", "--all"]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(runs_of(&json, "removed"), sorted(&[&empty, &abandoned]));
    assert_eq!(
        runs_of(&json, "stranded"),
        sorted(&[&edited, &waiting, &failed, &rejected])
    );
    assert_eq!(
        present(&env),
        sorted(&[&edited, &waiting, &failed, &rejected, &working, &parked])
    );
    assert_eq!(
        read(&worktree(&repo, &edited).join("work/notes.txt")),
        "unsaved"
    );
    assert!(
        env.crew(&repo, &["status"]).json()["runs"]
            .as_array()
            .unwrap()
            .len()
            >= 2
    );

    // doctor lists the stranded work, and it fails no check.
    let out = env.crew(&repo, &["doctor"]);
    out.expect_code(0);
    let doctor = out.json();
    assert_eq!(
        runs_of(&doctor, "stranded"),
        sorted(&[&edited, &waiting, &failed, &rejected])
    );
    let text = env.crew(&repo, &["doctor", "--human"]).stdout;
    assert!(
        text.contains(&format!("next: git crew abandon {failed}")),
        "{text}"
    );

    // Abandoning an ended run keeps what it holds — commits and uncommitted changes —
    // under refs/crew/attempts/<run>; then prune may remove it, and nothing is lost.
    for run in [&rejected, &edited, &failed] {
        let out = env.crew(&repo, &["abandon", run]);
        out.expect_code(0);
        let json = out.json();
        assert_eq!(
            json["kept"]["attempts_ref"],
            format!("refs/crew/attempts/{run}")
        );
        assert_eq!(json["kept"]["already"], false, "{json}");
    }
    // The outcome stays what it was.
    assert_eq!(
        env.crew(&repo, &["show", &rejected]).json()["run"]["outcome"],
        "scope-reject"
    );
    // Twice is the same as once.
    let again = env.crew(&repo, &["abandon", &rejected]);
    again.expect_code(0);
    assert_eq!(again.json()["kept"]["already"], true);

    let out = env.crew(&repo, &["prune", "--all"]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(
        runs_of(&json, "removed"),
        sorted(&[&edited, &failed, &rejected])
    );
    assert_eq!(runs_of(&json, "stranded"), [waiting.as_str()]);
    assert_eq!(present(&env), sorted(&[&waiting, &working, &parked]));
    let kept = |run: &str, path: &str| {
        env.git_ok(
            &repo,
            &["show", &format!("refs/crew/attempts/{run}:{path}")],
        )
    };
    assert!(kept(&rejected, "README.md").contains("changed by a worker"));
    assert_eq!(kept(&edited, "work/notes.txt"), "unsaved");
    assert!(kept(&failed, "work/failed.txt").starts_with("done by "));

    // The live runs were never touched, and still are.
    let status = env.crew(&repo, &["show", &working]).json();
    assert_eq!(status["run"]["phase"], "working");
    assert_eq!(
        env.crew(&repo, &["show", &parked]).json()["run"]["phase"],
        "needs-help"
    );
    env.crew(&repo, &["abandon", &working]).expect_code(0);
    env.crew(&repo, &["abandon", &parked]).expect_code(0);
}

#[test]
fn older_than_filters_by_when_the_run_finished_on_the_pinned_clock() {
    let env = TestEnv::new();
    let repo = ignoring_repo(&env);
    let run = finished(&env, &repo, "merged", "own-file", "work/**", &[]);
    integrate_keeping_all(&env, &repo, &run);
    let waiting = finished(&env, &repo, "waiting", "own-file", "work/**", &[]);
    env.set_clock("2026-01-11T00:00:00Z");

    let out = env.crew(&repo, &["prune", "--older-than", "11d"]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["removed"], serde_json::json!([]));
    // Younger runs are not looked at at all: neither removed nor listed.
    assert_eq!(json["stranded"], serde_json::json!([]));
    assert_eq!(entry(&json, "skipped", &run)["why"], "younger");
    assert_eq!(entry(&json, "skipped", &waiting)["why"], "younger");
    assert!(worktree(&repo, &run).exists());

    let out = env.crew(&repo, &["prune", "--older-than", "9d 23h"]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(runs_of(&json, "removed"), [run.as_str()]);
    let stranded = entry(&json, "stranded", &waiting);
    // Ten days on the pinned clock, less the seconds the runs took to finish.
    assert!(
        stranded["age_s"].as_u64().unwrap() >= 10 * 86_400 - 60,
        "{stranded}"
    );
    // A few minutes on, so the seconds the runs took do not round the age down.
    env.set_clock("2026-01-11T00:05:00Z");
    let text = env.crew(&repo, &["prune", "--human"]).stdout;
    assert!(text.contains("pass, 10d ago: 1 file, +1 -0"), "{text}");
    assert!(!worktree(&repo, &run).exists());

    let bad = env.crew(&repo, &["prune", "--older-than", "soon"]);
    bad.expect_code(2);
    assert_eq!(bad.json()["error"]["code"], "bad-duration");
}

#[test]
fn uninstall_with_purge_prunes_every_finished_run_and_keeps_stranded_work() {
    let env = TestEnv::new();
    let repo = ignoring_repo(&env);
    let merged = finished(&env, &repo, "merged", "own-file", "work/**", &[]);
    integrate_keeping_all(&env, &repo, &merged);
    let empty = finished(&env, &repo, "empty", "no-footer", "work/**", &[]);

    // --purge goes with --uninstall only.
    env.crew(&repo, &["init", "--purge"]).expect_code(2);
    let out = env.crew(&repo, &["init", "--uninstall", "--purge"]);
    out.expect_code(0);
    let json = out.json();
    assert!(!repo.join(".git/hooks/pre-commit").exists());
    assert_eq!(
        runs_of(&json["pruned"], "removed"),
        sorted(&[&merged, &empty])
    );
    assert!(!worktree(&repo, &merged).exists() && !worktree(&repo, &empty).exists());
    // With the runs' worktrees gone first, the config they needed goes too.
    assert!(
        env.git(
            &repo,
            &["config", "--local", "--get", "extensions.worktreeConfig"]
        )
        .stdout
        .is_empty()
    );

    // Stranded work survives a purge and is listed.
    let env = TestEnv::new();
    let repo = ignoring_repo(&env);
    let waiting = finished(&env, &repo, "waiting", "own-file", "work/**", &[]);
    let out = env.crew(&repo, &["init", "--uninstall", "--purge", "--human"]);
    out.expect_code(0);
    assert!(
        out.stdout.contains("stranded work (1 run)"),
        "{}",
        out.stdout
    );
    assert!(worktree(&repo, &waiting).exists());
    assert!(branch_exists(&env, &repo, "waiting", &waiting));
}

#[test]
fn integrate_names_the_ignored_files_its_cleanup_removes() {
    let env = TestEnv::new();
    let repo = ignoring_repo(&env);
    let run = finished(&env, &repo, "merged", "own-file", "work/**", &[]);
    write(&worktree(&repo, &run).join("target/cache"), "x");
    let out = env.crew(&repo, &["integrate", &run]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["cleanup"]["worktree"], "removed");
    assert_eq!(json["cleanup"]["ignored"], serde_json::json!(["target/"]));
    assert!(!worktree(&repo, &run).exists());
    let record = env.crew(&repo, &["show", &run]).json();
    assert_eq!(
        record["run"]["pruned"]["ignored"],
        serde_json::json!(["target/"])
    );
    // With nothing ignored, nothing is named.
    let other = finished(&env, &repo, "other", "own-file", "work/**", &[]);
    let out = env.crew(&repo, &["integrate", &other]);
    out.expect_code(0);
    assert_eq!(out.json()["cleanup"]["ignored"], serde_json::json!([]));
}

#[test]
fn commits_made_after_integration_and_repositories_inside_are_never_lost() {
    let env = TestEnv::new();
    let repo = ignoring_repo(&env);
    let late = finished(&env, &repo, "late", "own-file", "work/**", &[]);
    integrate_keeping_all(&env, &repo, &late);
    let wt = worktree(&repo, &late);
    write(&wt.join("work/late.txt"), "after the fact");
    env.git_ok(&wt, &["add", "work/late.txt"]);
    env.git_ok(&wt, &["commit", "-q", "-m", "late"]);
    let late_commit = env.git_ok(&wt, &["rev-parse", "HEAD"]);
    // A repository cloned inside another run's worktree, untracked, with work of its own.
    let nested = finished(&env, &repo, "nested", "own-file", "work/**", &[]);
    integrate_keeping_all(&env, &repo, &nested);
    let inner = worktree(&repo, &nested).join("work/inner");
    env.git_ok(&repo, &["init", "-q", &inner.to_string_lossy()]);
    write(&inner.join("a.txt"), "inner work");
    env.git_ok(&inner, &["add", "a.txt"]);
    env.git_ok(&inner, &["commit", "-q", "-m", "inner"]);

    let out = env.crew(&repo, &["prune", "--all"]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["removed"], serde_json::json!([]));
    let l = entry(&json, "stranded", &late);
    assert_eq!(l["unkept_commits"], 1);
    assert_eq!(l["next"], format!("git crew abandon {late}"));
    let n = entry(&json, "stranded", &nested);
    assert_eq!(n["next"], Value::Null);
    assert!(n["why"][0].as_str().unwrap().contains("repository"), "{n}");
    // abandon cannot keep what it cannot see: refused, nothing changed.
    let out = env.crew(&repo, &["abandon", &nested]);
    out.expect_code(4);
    assert_eq!(out.json()["error"]["code"], "worktree-unreadable");

    // A record rewritten to name another branch, its seal gone: that branch is never
    // deleted.
    let tampered = finished(&env, &repo, "tampered", "own-file", "work/**", &[]);
    integrate_keeping_all(&env, &repo, &tampered);
    let record = repo.join(format!(".git/crew/runs/{tampered}.json"));
    let text = read(&record).replace(&format!("\"crew/tampered/{tampered}\""), "\"main\"");
    write(&record, &text);
    env.git_ok(
        &repo,
        &["update-ref", "-d", &format!("refs/crew/sealed/{tampered}")],
    );
    let out = env.crew(&repo, &["prune"]);
    out.expect_code(0);
    let json = out.json();
    let t = entry(&json, "removed", &tampered);
    assert_eq!(t["branch"], Value::Null, "{t}");
    assert!(
        t["branch_kept_because"]
            .as_str()
            .unwrap()
            .contains("not the run's own branch")
    );
    env.git_ok(&repo, &["rev-parse", "--verify", "refs/heads/main"]);
    assert!(branch_exists(&env, &repo, "tampered", &tampered));

    env.crew(&repo, &["abandon", &late]).expect_code(0);
    let out = env.crew(&repo, &["prune", "--all"]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(runs_of(&json, "removed"), [late.as_str()]);
    assert_eq!(
        env.git_ok(&repo, &["rev-parse", &format!("refs/crew/attempts/{late}")]),
        late_commit
    );
    assert_eq!(read(&inner.join("a.txt")), "inner work");
}

#[test]
fn edits_git_status_is_told_to_hide_and_a_merge_in_progress_are_never_pruned() {
    let env = TestEnv::new();
    let repo = ignoring_repo(&env);
    // Edits to files marked assume-unchanged and skip-worktree: `git status` says clean.
    let mut hidden = Vec::new();
    for (task, flag) in [
        ("unseen", "--assume-unchanged"),
        ("skipped", "--skip-worktree"),
    ] {
        let run = finished(&env, &repo, task, "own-file", "work/**", &[]);
        integrate_keeping_all(&env, &repo, &run);
        let wt = worktree(&repo, &run);
        let file = format!("work/{task}.txt");
        env.git_ok(&wt, &["update-index", flag, &file]);
        write(&wt.join(&file), "precious");
        assert_eq!(env.git_ok(&wt, &["status", "--porcelain"]), "");
        hidden.push((run, wt.join(&file)));
    }
    // A merge stopped on a conflict in another run's worktree.
    let merging = finished(&env, &repo, "merging", "own-file", "work/**", &[]);
    integrate_keeping_all(&env, &repo, &merging);
    let wt = worktree(&repo, &merging);
    env.git_ok(&wt, &["checkout", "-q", "-b", "side"]);
    write(&wt.join("work/merging.txt"), "theirs\n");
    env.git_ok(&wt, &["commit", "-qam", "side"]);
    env.git_ok(&wt, &["checkout", "-q", "-"]);
    write(&wt.join("work/merging.txt"), "ours\n");
    env.git_ok(&wt, &["commit", "-qam", "ours"]);
    env.git(&wt, &["merge", "side"]).expect_code(1);
    let merge_head = repo
        .join(".git/worktrees")
        .join(&merging)
        .join("MERGE_HEAD");
    assert!(merge_head.exists());

    for args in [
        &["doctor"][..],
        &["prune", "--dry-run", "--all"],
        &["prune", "--all"],
    ] {
        let out = env.crew(&repo, args);
        let json = out.json();
        assert!(merge_head.exists(), "{args:?} threw the merge away");
        if args[0] == "prune" {
            out.expect_code(0);
            assert_eq!(json["removed"], serde_json::json!([]), "{json}");
            let m = entry(&json, "stranded", &merging);
            assert!(m["why"][0].as_str().unwrap().contains("MERGE_HEAD"), "{m}");
            for (run, _) in &hidden {
                entry(&json, "stranded", run);
            }
        }
    }
    for (_, file) in &hidden {
        assert_eq!(read(file), "precious");
    }
    env.git_ok(&wt, &["merge", "--abort"]);
}
