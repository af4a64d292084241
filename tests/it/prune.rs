//! prune, stranded work, `abandon` of an ended run, doctor's list of stranded work,
//! `init --uninstall --purge`, and the ignored files integrate's cleanup names — against
//! a repository holding a run in every state, with real scripted workers.

use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use serde_json::Value;

use crate::common::{TestEnv, poll_until, read, write};

/// crew-repo.sh with a committed `.gitignore` (build output, `.env`).
pub(crate) fn ignoring_repo(env: &TestEnv) -> PathBuf {
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    write(&repo.join(".gitignore"), "target/\n.env\n");
    env.git_ok(&repo, &["add", ".gitignore"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "ignore build output"]);
    repo
}

/// A finished run of `task` on `backend` within `scope`.
pub(crate) fn finished(
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

pub(crate) fn integrate_keeping_all(env: &TestEnv, repo: &Path, run: &str) {
    env.crew(repo, &["integrate", run, "--set", "worktree.cleanup=never"])
        .expect_code(0);
}

/// An integrated run (task `merging`) whose worktree holds a merge stopped on a conflict
/// in `work/merging.txt`: the run and its worktree.
fn merge_stopped_on_a_conflict(env: &TestEnv, repo: &Path) -> (String, PathBuf) {
    let merging = finished(env, repo, "merging", "own-file", "work/**", &[]);
    integrate_keeping_all(env, repo, &merging);
    let wt = worktree(repo, &merging);
    env.git_ok(&wt, &["checkout", "-q", "-b", "side"]);
    write(&wt.join("work/merging.txt"), "theirs\n");
    env.git_ok(&wt, &["commit", "-qam", "side"]);
    env.git_ok(&wt, &["checkout", "-q", "-"]);
    write(&wt.join("work/merging.txt"), "ours\n");
    env.git_ok(&wt, &["commit", "-qam", "ours"]);
    env.git(&wt, &["merge", "side"]).expect_code(1);
    (merging, wt)
}

pub(crate) fn worktree(repo: &Path, run: &str) -> PathBuf {
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

/// Counts, for every finished run of `repo`, the commits prune finds nothing else keeps,
/// in-process (`git::reach::unreached`, all runs at once) and with one `git rev-list
/// --count` each (what prune ran before): they must agree. The counts, by run.
fn counts_agree(repo: &Path) -> Vec<(String, u64)> {
    let gix = git_crew::git::repo::open(repo).unwrap();
    let store = git_crew::state::runs::RunStore::new(&git_crew::git::repo::state_dir(&gix));
    let asks = git_crew::run::prune::asks(&gix, &store).unwrap();
    let all: Vec<_> = asks.iter().map(|(_, ask)| ask.clone()).collect();
    let counts = git_crew::git::reach::unreached(&gix, &all);
    asks.iter()
        .zip(counts)
        .map(|((run, ask), count)| {
            let by_git =
                git_crew::git::reach::unreached_by_git(repo, &ask.tips, &ask.keepers()).unwrap();
            assert_eq!(count, Some(by_git), "run {run}: {ask:?}");
            (run.clone(), by_git)
        })
        .collect()
}

/// For every finished run of `repo` whose worktree prune and doctor look at: the
/// in-process stranded-work check (`RunTree::indexed`: whether the worktree is at rest,
/// and what it holds beside its commit — the untracked paths that are work and what git
/// ignores) against the git-process check — `git status` for what is uncommitted
/// (`RunTree::uncommitted`, as prune and doctor asked git before), one `git status
/// --ignored=matching` (`RunTree::held_by_git`, the fallback) for that and what is
/// ignored, `git ls-files -v` and `--stage` for the hidden paths and a nested repository.
/// Wherever the in-process check answers, it must say what git says. With `settle`, each
/// worktree is settled first (`settle_worktree`: its tracked files' times put in the
/// past, none "racily clean", which only git can look into). By run: whether it answered.
pub(crate) fn stranded_checks_agree(
    env: &TestEnv,
    repo: &Path,
    settle: bool,
) -> Vec<(String, bool)> {
    stranded_looks(env, repo, settle)
        .into_iter()
        .map(|look| (look.run, look.in_process))
        .collect()
}

/// What [`stranded_checks_agree`] found of one run's worktree.
pub(crate) struct StrandedLook {
    pub run: String,
    /// The in-process check answered (and agreed with git).
    pub in_process: bool,
    /// git's answer.
    pub by_git: git_crew::git::untracked::Held,
}

/// [`stranded_checks_agree`], with git's answer for each run.
pub(crate) fn stranded_looks(env: &TestEnv, repo: &Path, settle: bool) -> Vec<StrandedLook> {
    use git_crew::git::worktree::RunTree;
    let gix = git_crew::git::repo::open(repo).unwrap();
    let store = git_crew::state::runs::RunStore::new(&git_crew::git::repo::state_dir(&gix));
    let live: Vec<String> = store.live().unwrap().into_iter().map(|r| r.run).collect();
    let mut looks = Vec::new();
    for record in store.finished().unwrap() {
        let wt = Path::new(&record.worktree);
        if live.contains(&record.run)
            || !wt.exists()
            || RunTree::operation_in_progress(gix.common_dir(), wt).is_some()
        {
            continue;
        }
        let run = &record.run;
        if settle {
            settle_worktree(env, wt);
        }
        let tree = RunTree::inspect(gix.common_dir(), wt, &record.identity()).unwrap();
        let by_git = tree.held_by_git().unwrap();
        assert_eq!(by_git.uncommitted, tree.uncommitted().unwrap(), "run {run}");
        let indexed = tree.indexed(&gix);
        if let Some(indexed) = &indexed {
            assert_eq!(
                indexed.hidden,
                tree.hidden_from_status().unwrap(),
                "run {run}"
            );
            assert_eq!(
                indexed.nested,
                tree.holds_nested_repository().unwrap(),
                "run {run}"
            );
            if indexed.at_rest {
                assert_eq!(by_git, Default::default(), "run {run}: taken for at rest");
            }
            if let Some(held) = &indexed.held {
                assert_eq!(held, &by_git, "run {run}: in-process and git disagree");
            }
        }
        looks.push(StrandedLook {
            run: run.clone(),
            in_process: indexed.is_some_and(|i| i.held.is_some()),
            by_git,
        });
    }
    looks
}

fn count_of(counts: &[(String, u64)], run: &str) -> u64 {
    counts
        .iter()
        .find(|(r, _)| r == run)
        .unwrap_or_else(|| panic!("{run} was not counted: {counts:?}"))
        .1
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
    let counts = counts_agree(&repo);
    stranded_checks_agree(&env, &repo, false);
    // Settled (no file written in the second its index was), every worktree is looked at
    // in-process but the one with a changed tracked file, which git must read.
    let answered = stranded_checks_agree(&env, &repo, true);
    let in_process = |run: &str| {
        answered
            .iter()
            .find(|(r, _)| r == run)
            .unwrap_or_else(|| panic!("{run} was not looked at: {answered:?}"))
            .1
    };
    for run in [&merged, &edited, &waiting, &failed, &empty, &abandoned] {
        assert!(in_process(run), "{run}: {answered:?}");
    }
    assert!(!in_process(&rejected), "{answered:?}");
    assert_eq!(count_of(&counts, &waiting), 1);
    assert_eq!(count_of(&counts, &failed), 1);
    assert_eq!(count_of(&counts, &merged), 0);

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

    counts_agree(&repo);
    stranded_checks_agree(&env, &repo, false);
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
    // What abandon kept counts as kept.
    let counts = counts_agree(&repo);
    stranded_checks_agree(&env, &repo, false);
    assert_eq!(count_of(&counts, &failed), 0);

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
    counts_agree(&repo);
    stranded_checks_agree(&env, &repo, false);

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
    assert_eq!(count_of(&counts_agree(&repo), &waiting), 1);
    stranded_checks_agree(&env, &repo, false);

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
    assert_eq!(count_of(&counts_agree(&repo), &empty), 0);
    stranded_checks_agree(&env, &repo, false);

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

    assert_eq!(count_of(&counts_agree(&repo), &late), 1);
    stranded_checks_agree(&env, &repo, false);
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

    counts_agree(&repo);
    stranded_checks_agree(&env, &repo, false);
    env.crew(&repo, &["abandon", &late]).expect_code(0);
    assert_eq!(count_of(&counts_agree(&repo), &late), 0);
    stranded_checks_agree(&env, &repo, false);
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
    let (merging, wt) = merge_stopped_on_a_conflict(&env, &repo);
    let merge_head = repo
        .join(".git/worktrees")
        .join(&merging)
        .join("MERGE_HEAD");
    assert!(merge_head.exists());
    counts_agree(&repo);
    stranded_checks_agree(&env, &repo, false);

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

/// `git rev-list --count <tips> ^<keepers>`, asked of git for each of `asks` and of
/// `git::reach` for all of them at once (and for each alone): the same counts.
fn same_counts_as_git(repo: &Path, asks: &[git_crew::git::reach::Ask]) -> Vec<u64> {
    let gix = git_crew::git::repo::open(repo).unwrap();
    let together = git_crew::git::reach::unreached(&gix, asks);
    asks.iter()
        .zip(together)
        .map(|(ask, count)| {
            let by_git =
                git_crew::git::reach::unreached_by_git(repo, &ask.tips, &ask.keepers()).unwrap();
            assert_eq!(count, Some(by_git), "{ask:?}");
            let alone = git_crew::git::reach::unreached(&gix, std::slice::from_ref(ask));
            assert_eq!(alone, [Some(by_git)], "{ask:?}");
            by_git
        })
        .collect()
}

#[test]
fn unkept_commits_are_counted_in_process_as_git_rev_list_counts_them() {
    use git_crew::git::ObjectId;
    use git_crew::git::reach::Ask;
    let env = TestEnv::new();
    let repo = env.fixture("plain.sh", "repo", &[]);
    let id = |rev: &str| -> ObjectId {
        ObjectId::from_hex(env.git_ok(&repo, &["rev-parse", rev]).trim().as_bytes()).unwrap()
    };
    let commit = |file: &str| {
        write(&repo.join(file), file);
        env.git_ok(&repo, &["add", file]);
        env.git_ok(&repo, &["commit", "-q", "-m", file]);
    };
    // a: two commits merged into main after main moved on; b: one commit, and one more
    // on top of it elsewhere (as abandon keeps); c: two commits cut from a's; d: a
    // branch of its own; o: a history of its own.
    env.git_ok(&repo, &["checkout", "-q", "-b", "a"]);
    commit("a1");
    commit("a2");
    env.git_ok(&repo, &["checkout", "-q", "main"]);
    commit("m1");
    env.git_ok(&repo, &["merge", "-q", "--no-ff", "-m", "merge a", "a"]);
    env.git_ok(&repo, &["checkout", "-q", "-b", "b", "main~2"]);
    commit("b1");
    env.git_ok(&repo, &["checkout", "-q", "-b", "k"]);
    commit("k1");
    env.git_ok(&repo, &["checkout", "-q", "-b", "c", "a"]);
    commit("c1");
    commit("c2");
    env.git_ok(&repo, &["checkout", "-q", "-b", "d", "main~2"]);
    commit("d1");
    env.git_ok(&repo, &["checkout", "-q", "--orphan", "o"]);
    commit("o1");
    env.git_ok(&repo, &["checkout", "-q", "main"]);
    let (main, a, b, k, c, d, o) = (
        id("main"),
        id("a"),
        id("b"),
        id("k"),
        id("c"),
        id("d"),
        id("o"),
    );
    let ask = |tips: &[ObjectId], targets: &[ObjectId], own: &[ObjectId]| Ask {
        tips: tips.to_vec(),
        targets: targets.to_vec(),
        own: own.to_vec(),
    };
    let asks = [
        ask(&[a], &[main], &[]),
        ask(&[b], &[main], &[]),
        ask(&[b], &[main], &[k]),
        ask(&[k], &[main], &[b]),
        ask(&[c], &[main], &[]),
        ask(&[c, b], &[main], &[]),
        ask(&[c], &[main], &[id("c~1")]),
        ask(&[o], &[main], &[]),
        ask(&[b], &[], &[]),
        ask(&[b], &[d], &[]),
        ask(&[d], &[d], &[]),
        ask(&[], &[main], &[]),
        ask(&[a, a], &[main, main], &[a]),
        ask(&[main], &[b], &[]),
        ask(&[main], &[b, d], &[c]),
        ask(&[k, c, o], &[d], &[b]),
    ];
    let counts = same_counts_as_git(&repo, &asks);
    assert_eq!(&counts[..8], [0, 1, 0, 1, 2, 3, 1, 1]);
    assert_eq!(counts[11], 0);

    // A tip that is no object (a worktree's HEAD can name anything): that run's commits
    // cannot be counted, as git cannot count them; the others' still are.
    let missing = ObjectId::from_hex(b"1234567890123456789012345678901234567890").unwrap();
    let gix = git_crew::git::repo::open(&repo).unwrap();
    let with_missing = [
        ask(&[b], &[main], &[]),
        ask(&[missing], &[main], &[]),
        ask(&[c], &[main], &[]),
    ];
    assert_eq!(
        git_crew::git::reach::unreached(&gix, &with_missing),
        [Some(1), None, Some(2)]
    );
    assert!(git_crew::git::reach::unreached_by_git(&repo, &[missing], &[main]).is_err());
}

/// Sets every tracked file of the worktree `wt` into the past — a second of its own each
/// time, so that git, which compares whole seconds, sees the change — and refreshes its
/// index, so no entry is younger than the index ("racily clean").
pub(crate) fn settle_worktree(env: &TestEnv, wt: &Path) {
    static TIMES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let files = env.git_ok(wt, &["ls-files", "-z"]);
    let n = TIMES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let past = UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000 + n);
    for file in files.split('\0').filter(|f| !f.is_empty()) {
        if !std::fs::symlink_metadata(wt.join(file)).is_ok_and(|m| m.is_file()) {
            continue;
        }
        std::fs::File::options()
            .write(true)
            .open(wt.join(file))
            .unwrap()
            .set_modified(past)
            .unwrap();
    }
    env.git_ok(wt, &["update-index", "-q", "--really-refresh"]);
}

#[test]
fn a_worktree_is_at_rest_in_process_only_where_git_sees_nothing() {
    use git_crew::git::worktree::RunTree;
    let env = TestEnv::new();
    let repo = ignoring_repo(&env);
    let run = finished(&env, &repo, "look", "own-file", "work/**", &[]);
    let wt = worktree(&repo, &run);
    let gix = git_crew::git::repo::open(&repo).unwrap();
    let store = git_crew::state::runs::RunStore::new(&git_crew::git::repo::state_dir(&gix));
    let record = store
        .finished()
        .unwrap()
        .into_iter()
        .find(|r| r.run == run)
        .unwrap();
    // What the in-process look says, checked against git's own answers: the same hidden
    // paths and nested repository, and at rest only where git lists nothing.
    let look = |what: &str| -> bool {
        let tree = RunTree::inspect(gix.common_dir(), &wt, &record.identity()).unwrap();
        let indexed = tree
            .indexed(&gix)
            .unwrap_or_else(|| panic!("{what}: the index was not read"));
        assert_eq!(indexed.hidden, tree.hidden_from_status().unwrap(), "{what}");
        assert_eq!(
            indexed.nested,
            tree.holds_nested_repository().unwrap(),
            "{what}"
        );
        if indexed.at_rest {
            assert_eq!(tree.uncommitted().unwrap(), Vec::<String>::new(), "{what}");
            assert_eq!(tree.ignored().unwrap(), Vec::<String>::new(), "{what}");
        }
        indexed.at_rest
    };
    // Every file written again from HEAD: git's own check, to the second, would keep a
    // file changed within the second it was written.
    let reset = || {
        env.git_ok(&wt, &["read-tree", "--empty"]);
        env.git_ok(&wt, &["reset", "-q", "--hard"]);
        env.git_ok(&wt, &["clean", "-q", "-ffdx"]);
        settle_worktree(&env, &wt);
    };
    let tracked = wt.join("work/look.txt");
    reset();
    assert!(look("settled"));

    type Change<'a> = Box<dyn Fn() + 'a>;
    let states: Vec<(&str, Change)> = vec![
        ("a changed file", Box::new(|| write(&tracked, "changed\n"))),
        (
            "a file changed to the same size, its time put back",
            Box::new(|| {
                let mtime = std::fs::metadata(&tracked).unwrap().modified().unwrap();
                let same = "X".repeat(read(&tracked).len());
                write(&tracked, &same);
                std::fs::File::options()
                    .write(true)
                    .open(&tracked)
                    .unwrap()
                    .set_modified(mtime)
                    .unwrap();
            }),
        ),
        (
            "a removed file",
            Box::new(|| std::fs::remove_file(&tracked).unwrap()),
        ),
        (
            "an untracked file",
            Box::new(|| write(&wt.join("work/new.txt"), "new")),
        ),
        (
            "an ignored file",
            Box::new(|| write(&wt.join("target/debug/app"), "binary")),
        ),
        (
            "an empty folder",
            Box::new(|| std::fs::create_dir_all(wt.join("empty")).unwrap()),
        ),
        (
            "a staged change",
            Box::new(|| {
                write(&tracked, "staged\n");
                env.git_ok(&wt, &["add", "work/look.txt"]);
                settle_worktree(&env, &wt);
            }),
        ),
        (
            "a file added with intent to add",
            Box::new(|| {
                write(&wt.join("work/later.txt"), "later");
                env.git_ok(&wt, &["add", "-N", "work/later.txt"]);
            }),
        ),
        (
            "an edit git status is told to ignore",
            Box::new(|| {
                env.git_ok(
                    &wt,
                    &["update-index", "--assume-unchanged", "work/look.txt"],
                );
                write(&tracked, "hidden\n");
            }),
        ),
        (
            "a file outside the sparse checkout",
            Box::new(|| {
                env.git_ok(&wt, &["update-index", "--skip-worktree", "README.md"]);
            }),
        ),
        (
            "an index older than its entries",
            Box::new(|| {
                let index = repo.join(".git/worktrees").join(&run).join("index");
                std::fs::File::options()
                    .write(true)
                    .open(index)
                    .unwrap()
                    .set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1))
                    .unwrap();
            }),
        ),
        (
            "a repository checked out under a gitlink",
            Box::new(|| {
                let inner = wt.join("work/inner");
                env.git_ok(&repo, &["init", "-q", &inner.to_string_lossy()]);
                write(&inner.join("a.txt"), "inner");
                env.git_ok(&inner, &["add", "a.txt"]);
                env.git_ok(&inner, &["commit", "-q", "-m", "inner"]);
                env.git_ok(&wt, &["add", "work/inner"]);
            }),
        ),
    ];
    for (what, make) in &states {
        make();
        assert!(!look(what), "{what}: taken for at rest");
        env.git(
            &wt,
            &["update-index", "--no-assume-unchanged", "work/look.txt"],
        );
        env.git(&wt, &["update-index", "--no-skip-worktree", "README.md"]);
        reset();
        assert!(look("settled again"), "after {what}");
    }
}

/// Every file, folder and link under `dir`: its path, and its kind, inode, size,
/// modification and change times.
fn inodes(dir: &Path) -> std::collections::BTreeMap<String, String> {
    use std::os::unix::fs::MetadataExt;
    let mut out = std::collections::BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(at) = todo.pop() {
        for entry in std::fs::read_dir(&at).unwrap().flatten() {
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            let kind = match meta.file_type() {
                t if t.is_dir() => "dir",
                t if t.is_symlink() => "link",
                _ => "file",
            };
            out.insert(
                path.strip_prefix(dir).unwrap().display().to_string(),
                format!(
                    "{kind} ino {} size {} mtime {}.{} ctime {}.{}",
                    meta.ino(),
                    meta.size(),
                    meta.mtime(),
                    meta.mtime_nsec(),
                    meta.ctime(),
                    meta.ctime_nsec()
                ),
            );
            if meta.is_dir() {
                todo.push(path);
            }
        }
    }
    out
}

#[test]
fn a_dry_run_and_doctor_leave_every_file_under_git_as_it_was() {
    let env = TestEnv::new();
    let repo = ignoring_repo(&env);
    // Integrated with its worktree kept: with ignored files; with an edit; untouched.
    let merged = finished(&env, &repo, "merged", "own-file", "work/**", &[]);
    integrate_keeping_all(&env, &repo, &merged);
    write(&worktree(&repo, &merged).join("target/debug/app"), "binary");
    let edited = finished(&env, &repo, "edited", "own-file", "work/**", &[]);
    integrate_keeping_all(&env, &repo, &edited);
    write(&worktree(&repo, &edited).join("work/notes.txt"), "unsaved");
    let clean = finished(&env, &repo, "clean", "own-file", "work/**", &[]);
    integrate_keeping_all(&env, &repo, &clean);
    // Passed and never integrated; failed; rejected, its change left uncommitted; and a
    // rejected one abandoned, its uncommitted change kept under refs/crew/attempts.
    let waiting = finished(&env, &repo, "waiting", "own-file", "work/**", &[]);
    let failed = finished(
        &env,
        &repo,
        "failed",
        "own-file",
        "work/**",
        &["--verify", "false"],
    );
    let rejected = finished(
        &env,
        &repo,
        "rejected",
        "out-of-scope",
        "src/routes/**",
        &[],
    );
    let kept = finished(&env, &repo, "kept", "out-of-scope", "src/api/**", &[]);
    env.crew(&repo, &["abandon", &kept]).expect_code(0);
    // An edit git status is told not to look at.
    let hidden = finished(&env, &repo, "hidden", "own-file", "work/**", &[]);
    integrate_keeping_all(&env, &repo, &hidden);
    let wt = worktree(&repo, &hidden);
    env.git_ok(
        &wt,
        &["update-index", "--assume-unchanged", "work/hidden.txt"],
    );
    write(&wt.join("work/hidden.txt"), "precious");
    // A worktree whose administration a worker changed: a filter in its own config that
    // leaves a mark when git runs it, on every path of the worktree, and one path that git
    // must read again. Read in place, it would run; a restore would write the config back.
    let tampered = finished(&env, &repo, "tampered", "own-file", "work/**", &[]);
    integrate_keeping_all(&env, &repo, &tampered);
    let mark = env.root().join("filter-ran");
    let config = repo
        .join(".git/worktrees")
        .join(&tampered)
        .join("config.worktree");
    let tampered_config = format!(
        "{}[filter \"mark\"]\n\tclean = sh -c 'touch {}; cat'\n",
        read(&config),
        mark.display()
    );
    write(&config, &tampered_config);
    let wt = worktree(&repo, &tampered);
    write(&wt.join(".gitattributes"), "* filter=mark\n");
    let file = wt.join("work/tampered.txt");
    std::fs::File::options()
        .write(true)
        .open(&file)
        .unwrap()
        .set_modified(std::time::SystemTime::now())
        .unwrap();
    // A merge stopped on a conflict.
    let (merging, _) = merge_stopped_on_a_conflict(&env, &repo);
    poll_until(
        std::time::Duration::from_secs(20),
        "the supervisors to end",
        || crate::read_only::supervisors(&repo).is_empty(),
    );

    stranded_checks_agree(&env, &repo, false);
    // No lock file is made either: a lock no process ever took is not taken.
    for lock in ["integrate.lock", "dispatch.lock"] {
        std::fs::remove_file(repo.join(".git/crew").join(lock)).unwrap();
    }
    let before = inodes(&repo.join(".git"));
    let mut plans = Vec::new();
    for args in [
        &["doctor"][..],
        &["doctor", "--human"],
        &["prune", "--dry-run"],
        &["prune", "--dry-run", "--all"],
        &["prune", "--dry-run", "--all", "--human"],
        &["prune", "--dry-run", "--older-than", "1s"],
    ] {
        let out = env.crew(&repo, args);
        out.expect_code(0);
        if args.len() == 3 && args[2] == "--all" {
            plans.push(out.json());
        }
        let after = inodes(&repo.join(".git"));
        let changed: Vec<String> = before
            .iter()
            .filter(|(path, was)| after.get(*path) != Some(was))
            .map(|(path, was)| format!("{path}: {was} -> {:?}", after.get(path)))
            .chain(
                after
                    .keys()
                    .filter(|path| !before.contains_key(*path))
                    .map(|path| format!("{path}: new")),
            )
            .collect();
        assert!(
            changed.is_empty(),
            "{args:?} changed:\n{}",
            changed.join("\n")
        );
    }
    assert!(!mark.exists(), "the worker's filter ran");
    assert_eq!(read(&config), tampered_config);

    // What the dry run said is what prune does.
    let plan = &plans[0];
    assert_eq!(runs_of(plan, "removed"), sorted(&[&merged, &clean, &kept]));
    assert_eq!(
        runs_of(plan, "stranded"),
        sorted(&[
            &edited, &waiting, &failed, &rejected, &hidden, &tampered, &merging
        ])
    );
    assert_eq!(
        entry(plan, "removed", &merged)["ignored"],
        serde_json::json!(["target/"])
    );
    let out = env.crew(&repo, &["prune", "--all"]);
    out.expect_code(0);
    let done = out.json();
    for key in ["removed", "stranded"] {
        assert_eq!(runs_of(&done, key), runs_of(plan, key), "{key}");
    }
    assert_eq!(
        entry(&done, "removed", &merged)["ignored"],
        serde_json::json!(["target/"])
    );
    assert!(!mark.exists(), "the worker's filter ran");
}
