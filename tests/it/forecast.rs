//! The conflict forecast against real git: three runs by a scripted worker, two of them
//! editing the same lines of one file. What `status`, `show` and `watch` forecast must be
//! what `git merge-tree --write-tree` says of each run onto the target's tip and of each
//! pair; the reads write no object; `integrate --all` lands the two that do not clash and
//! names the third.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use crate::common::{TestEnv, write};

/// Every file under `.git/objects`, with its size: what a read must leave as it is.
fn objects(repo: &Path) -> BTreeSet<(String, u64)> {
    let root = repo.join(".git/objects");
    walkdir(&root)
        .into_iter()
        .map(|p| {
            let size = std::fs::metadata(&p).unwrap().len();
            (p.strip_prefix(&root).unwrap().display().to_string(), size)
        })
        .collect()
}

fn walkdir(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(walkdir(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// Whether `git merge-tree --write-tree a b` finds a conflict (it exits 1 for one, 0 for
/// a clean merge).
fn git_conflicts(env: &TestEnv, repo: &Path, a: &str, b: &str) -> bool {
    let out = env.git(repo, &["merge-tree", "--write-tree", a, b]);
    assert!(
        out.code == 0 || out.code == 1,
        "git merge-tree {a} {b}: exit {}\n{}{}",
        out.code,
        out.stdout,
        out.stderr
    );
    out.code == 1
}

/// The twelve lines of `src/shared.txt` on main.
fn shared() -> String {
    (1..=12).map(|i| format!("line {i}\n")).collect()
}

/// A pass by the `edit-lines` worker: `edits` are its `EDIT path:line text` lines.
fn edit_run(env: &TestEnv, repo: &Path, task: &str, scope: &str, edits: &[&str]) -> String {
    let prompt: Vec<String> = edits.iter().map(|e| format!("EDIT {e}")).collect();
    let run = env
        .dispatch(repo, task)
        .backend("edit-lines")
        .scope(scope)
        .verify("true")
        .prompt(&prompt.join("\n"))
        .finished();
    let shown = env.crew(repo, &["show", &run]).json();
    assert_eq!(shown["run"]["outcome"], "pass", "{shown}");
    run
}

fn forecast_of<'a>(runs: &'a Value, run: &str) -> &'a Value {
    let found = runs
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["run"] == run)
        .unwrap_or_else(|| panic!("{run} not in {runs}"));
    &found["forecast"]
}

fn names(list: &Value) -> BTreeSet<String> {
    list.as_array()
        .unwrap_or_else(|| panic!("not a list: {list}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_forecast_agrees_with_git_merge_tree_and_integrate_all_lands_what_does_not_clash() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    write(&repo.join("src/shared.txt"), &shared());
    env.git_ok(&repo, &["add", "src/shared.txt"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "a shared file"]);

    // a and b rewrite line 2; c rewrites line 11 of the same file, far from both.
    let a = edit_run(
        &env,
        &repo,
        "alpha",
        "src/shared.txt",
        &["src/shared.txt:2 alpha"],
    );
    let b = edit_run(
        &env,
        &repo,
        "beta",
        "src/shared.txt",
        &["src/shared.txt:2 beta"],
    );
    let c = edit_run(
        &env,
        &repo,
        "gamma",
        "src/shared.txt",
        &["src/shared.txt:11 gamma"],
    );
    // The target moves on after the runs were cut: line 6 changes on main, so every
    // merge onto the tip is a real three-way merge of the file's content.
    let mut moved = shared().replace("line 6\n", "line six\n");
    write(&repo.join("src/shared.txt"), &moved);
    env.git_ok(&repo, &["commit", "-q", "-am", "the lead edits line 6"]);
    let tip = env.git_ok(&repo, &["rev-parse", "main"]).trim().to_string();

    // The reads: not one object written.
    let before = objects(&repo);
    let status = env.crew(&repo, &["status", "--json"]);
    status.expect_code(0);
    let status = status.json();
    let shown: Vec<Value> = [&a, &b, &c]
        .iter()
        .map(|run| {
            let out = env.crew(&repo, &["show", run, "--json"]);
            out.expect_code(0);
            out.json()["run"]["forecast"].clone()
        })
        .collect();
    let frame = env.crew(&repo, &["watch", "--once", "--json"]);
    frame.expect_code(0);
    let frame = frame.json();
    // `--all`, holding every record already, finds the passes among them: the same
    // forecasts.
    let all = env.crew(&repo, &["status", "--all", "--json"]);
    all.expect_code(0);
    let all = all.json();
    let human = env.crew(&repo, &["status", "--human"]);
    let show_b = env.crew(&repo, &["show", &b, "--human"]);
    let watch_human = env.crew(&repo, &["watch", "--once", "--human"]);
    assert_eq!(objects(&repo), before, "a read wrote to .git/objects");

    // What the forecast says, and what git says: each run onto main's tip, each pair.
    let runs = [("a", &a), ("b", &b), ("c", &c)];
    for (i, (name, run)) in runs.iter().enumerate() {
        let forecast = forecast_of(&status["runs"], run);
        assert_eq!(forecast["into"], "main", "{name}: {forecast}");
        assert_eq!(forecast["tip"], tip.as_str(), "{name}: {forecast}");
        let branch = format!("crew/{}/{run}", ["alpha", "beta", "gamma"][i]);
        let conflicts = git_conflicts(&env, &repo, "main", &branch);
        assert_eq!(
            forecast["merges_cleanly"], !conflicts,
            "{name} onto main: forecast {forecast}, git merge-tree says conflicts={conflicts}"
        );
        // show, watch and status --all say the same.
        assert_eq!(&shown[i], forecast, "{name}: show and status differ");
        assert_eq!(
            forecast_of(&all["runs"], run),
            forecast,
            "{name}: status --all and status differ"
        );
        assert_eq!(
            forecast_of(&frame["awaiting_integration"], run),
            forecast,
            "{name}: watch and status differ"
        );
        for (j, (other, other_run)) in runs.iter().enumerate() {
            if i == j {
                continue;
            }
            let other_branch = format!("crew/{}/{other_run}", ["alpha", "beta", "gamma"][j]);
            let clash = git_conflicts(&env, &repo, &branch, &other_branch);
            let named = names(&forecast["conflicts_with"]).contains(other_run.as_str());
            assert_eq!(
                named, clash,
                "{name} with {other}: forecast {forecast}, git merge-tree says conflicts={clash}"
            );
        }
    }
    // The case at hand: every run merges onto main; a and b clash, c clashes with none.
    for run in [&a, &b, &c] {
        assert_eq!(forecast_of(&status["runs"], run)["merges_cleanly"], true);
    }
    assert_eq!(
        names(&forecast_of(&status["runs"], &a)["conflicts_with"]),
        BTreeSet::from([b.clone()])
    );
    assert_eq!(
        names(&forecast_of(&status["runs"], &b)["conflicts_with"]),
        BTreeSet::from([a.clone()])
    );
    assert!(names(&forecast_of(&status["runs"], &c)["conflicts_with"]).is_empty());

    // For people: a marker on each line, a line in show.
    human.expect_code(0);
    assert!(human.stdout.contains("FORECAST"), "{}", human.stdout);
    assert!(
        human.stdout.contains("conflicts: 1 run"),
        "{}",
        human.stdout
    );
    assert!(human.stdout.contains("clean"), "{}", human.stdout);
    show_b.expect_code(0);
    let line = show_b
        .stdout
        .lines()
        .find(|l| l.starts_with("forecast onto main @ "))
        .unwrap_or_else(|| panic!("no forecast line:\n{}", show_b.stdout));
    assert!(line.contains("merges cleanly"), "{line}");
    assert!(line.contains(&format!("conflicts with {a}")), "{line}");
    watch_human.expect_code(0);
    assert!(
        watch_human.stdout.contains("conflicts: 1 run"),
        "{}",
        watch_human.stdout
    );

    // integrate --all: c (no clash) and a land; b is held back, named, never tried.
    let dry = env.crew(&repo, &["integrate", "--all", "--dry-run", "--json"]);
    dry.expect_code(0);
    let dry = dry.json();
    assert_eq!(dry["order"], serde_json::json!([c, a]));
    assert_eq!(dry["landed"], serde_json::json!([]));
    assert_eq!(dry["left"][0]["run"], b.as_str(), "{dry}");
    assert_eq!(env.git_ok(&repo, &["rev-parse", "main"]).trim(), tip);

    let out = env.crew(&repo, &["integrate", "--all", "--json"]);
    out.expect_code(4);
    let all = out.json();
    assert_eq!(all["ok"], false);
    assert_eq!(all["error"]["code"], "merge-conflict", "{all}");
    assert_eq!(all["refused"], Value::Null, "{all}");
    let landed: Vec<&str> = all["landed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["run"].as_str().unwrap())
        .collect();
    assert_eq!(landed, [c.as_str(), a.as_str()], "{all}");
    for done in all["landed"].as_array().unwrap() {
        env.assert_landed_in_scope(&repo, done["run"].as_str().unwrap(), &done.to_string());
    }
    assert_eq!(
        all["left"],
        serde_json::json!([{
            "run": b, "task": "beta", "reason": "conflicts-with-runs",
            "conflicts_with": [a], "conflicting_paths": [],
        }])
    );
    // main has a's and c's lines and its own, not b's.
    moved = moved
        .replace("line 2\n", "alpha\n")
        .replace("line 11\n", "gamma\n");
    assert_eq!(env.git_ok(&repo, &["show", "main:src/shared.txt"]), moved);
    let b_shown = env.crew(&repo, &["show", &b]).json();
    assert_eq!(b_shown["run"]["integration"], Value::Null);

    // Now b conflicts with main itself, as git says too; the others are integrated and
    // have no forecast.
    let status = env.crew(&repo, &["status", "--json"]).json();
    let forecast = forecast_of(&status["runs"], &b);
    assert!(git_conflicts(
        &env,
        &repo,
        "main",
        &format!("crew/beta/{b}")
    ));
    assert_eq!(forecast["merges_cleanly"], false, "{forecast}");
    assert_eq!(
        forecast["conflicting_paths"],
        serde_json::json!(["src/shared.txt"])
    );
    assert!(names(&forecast["conflicts_with"]).is_empty());
    assert_eq!(forecast_of(&status["runs"], &a), &Value::Null);
    // And a second --all holds it back for the target, trying nothing.
    let again = env.crew(&repo, &["integrate", "--all", "--json"]);
    again.expect_code(4);
    let again = again.json();
    assert_eq!(again["landed"], serde_json::json!([]));
    assert_eq!(again["left"][0]["reason"], "conflicts-with-target");
    assert_eq!(
        again["left"][0]["conflicting_paths"],
        serde_json::json!(["src/shared.txt"])
    );
}

#[test]
fn a_live_run_with_commits_is_forecast_and_never_holds_a_pass_back() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    write(&repo.join("src/shared.txt"), &shared());
    env.git_ok(&repo, &["add", "src/shared.txt"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "a shared file"]);
    let pass = edit_run(
        &env,
        &repo,
        "alpha",
        "src/shared.txt",
        &["src/shared.txt:2 alpha"],
    );
    // A live run with commits: it rewrote the same line, then asked for help (its work
    // is committed and taken in when its attempt ends; it waits for the lead, live). And
    // a live run with no commits.
    let live = env
        .dispatch(&repo, "delta")
        .backend("edit-lines")
        .scope("src/shared.txt")
        .prompt("EDIT src/shared.txt:2 delta\nHELP")
        .finished();
    let shown = env.crew(&repo, &["show", &live]).json();
    assert_eq!(shown["run"]["phase"], "needs-help", "{shown}");
    let idle = env
        .dispatch(&repo, "idle")
        .backend("hang")
        .scope("src/idle/**")
        .run_id();
    let branch = format!("crew/delta/{live}");
    let base = env.git_ok(&repo, &["rev-parse", "main"]).trim().to_string();
    assert_ne!(env.git_ok(&repo, &["rev-parse", &branch]).trim(), base);
    // A run still working that has committed: inside the write fence its commit is in
    // its quarantine until its attempt ends, which a read never opens.
    let working = env
        .dispatch(&repo, "epsilon")
        .backend("edit-lines")
        .scope("src/other.txt")
        .prompt("EDIT src/other.txt:1 epsilon\nHOLD 60")
        .run_id();
    let working_tip = crate::common::poll_for(
        std::time::Duration::from_secs(20),
        "the working run's commit",
        || {
            let tip = env.git(&repo, &["rev-parse", &format!("crew/epsilon/{working}")]);
            (tip.code == 0 && tip.stdout.trim() != base).then(|| tip.stdout.trim().to_string())
        },
    );
    let taken_in = env.git(&repo, &["cat-file", "-e", &working_tip]).code == 0;

    let before = objects(&repo);
    let status = env.crew(&repo, &["status", "--json"]);
    status.expect_code(0);
    assert!(!status.stderr.contains("warning"), "{}", status.stderr);
    let status = status.json();
    let frame = env.crew(&repo, &["watch", "--once", "--json"]).json();
    assert_eq!(objects(&repo), before, "a read wrote to .git/objects");
    // Its forecast comes once the store has its commit (at once without a fence).
    assert_eq!(
        forecast_of(&status["runs"], &working).is_null(),
        !taken_in,
        "{status}"
    );
    let forecast = forecast_of(&status["runs"], &live);
    assert_eq!(
        forecast["phase"],
        Value::Null,
        "the forecast alone: {forecast}"
    );
    assert_eq!(
        forecast["merges_cleanly"],
        !git_conflicts(&env, &repo, "main", &branch)
    );
    let clash = git_conflicts(&env, &repo, &branch, &format!("crew/alpha/{pass}"));
    assert!(clash, "the scenario: both rewrite line 2");
    assert_eq!(
        names(&forecast["conflicts_with"]),
        BTreeSet::from([pass.clone()])
    );
    assert_eq!(
        names(&forecast_of(&status["runs"], &pass)["conflicts_with"]),
        BTreeSet::from([live.clone()])
    );
    // The console says the same of the run in flight; a run with no commits has none.
    assert_eq!(forecast_of(&frame["runs"], &live), forecast);
    assert_eq!(forecast_of(&status["runs"], &idle), &Value::Null);
    assert_eq!(forecast_of(&frame["runs"], &idle), &Value::Null);

    // integrate --all takes the passes only: the live run's clash holds nothing back.
    let out = env.crew(&repo, &["integrate", "--all", "--json"]);
    out.expect_code(0);
    let all = out.json();
    assert_eq!(all["landed"][0]["run"], pass.as_str(), "{all}");
    assert_eq!(all["left"], serde_json::json!([]));
    // Landed, the pass has no forecast; the live run now conflicts with main.
    let status = env.crew(&repo, &["status", "--json"]).json();
    assert_eq!(forecast_of(&status["runs"], &pass), &Value::Null);
    let forecast = forecast_of(&status["runs"], &live);
    assert!(git_conflicts(&env, &repo, "main", &branch));
    assert_eq!(forecast["merges_cleanly"], false, "{forecast}");
}

#[test]
fn integrate_all_stops_at_the_first_refusal_and_says_what_is_left() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    write(&repo.join("src/shared.txt"), &shared());
    env.git_ok(&repo, &["add", "src/shared.txt"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "a shared file"]);
    // Three passes that clash with nothing; the oldest verifies that src/stop is absent.
    let pass = |task: &str, line: usize, verify: &str| {
        let run = env
            .dispatch(&repo, task)
            .backend("edit-lines")
            .scope("src/shared.txt")
            .verify(verify)
            .prompt(&format!("EDIT src/shared.txt:{line} {task}"))
            .finished();
        assert_eq!(
            env.crew(&repo, &["show", &run]).json()["run"]["outcome"],
            "pass"
        );
        run
    };
    let first = pass("one", 2, "test ! -f src/stop");
    let second = pass("two", 7, "true");
    let third = pass("three", 12, "true");
    // main moves on with src/stop: the first's verify fails on its merged tree.
    write(&repo.join("src/stop"), "stop\n");
    env.git_ok(&repo, &["add", "src/stop"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "stop"]);
    let tip = env.git_ok(&repo, &["rev-parse", "main"]);

    let out = env.crew(&repo, &["integrate", "--all", "--json"]);
    // The refusal's own code and exit.
    out.expect_code(1);
    let all = out.json();
    assert_eq!(all["error"]["code"], "verify-failed", "{all}");
    assert_eq!(all["order"], serde_json::json!([first, second, third]));
    assert_eq!(all["landed"], serde_json::json!([]));
    assert_eq!(all["refused"]["run"], first.as_str());
    assert_eq!(all["refused"]["error"]["code"], "verify-failed");
    let left: Vec<(&str, &str)> = all["left"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| (l["run"].as_str().unwrap(), l["reason"].as_str().unwrap()))
        .collect();
    assert_eq!(
        left,
        [
            (second.as_str(), "not-reached"),
            (third.as_str(), "not-reached")
        ]
    );
    assert_eq!(
        env.git_ok(&repo, &["rev-parse", "main"]),
        tip,
        "nothing landed"
    );
    let human = env.crew(&repo, &["integrate", "--all", "--human"]);
    human.expect_code(1);
    assert!(
        human.stdout.contains(&format!(
            "left run {third} (task three): not tried after the refusal"
        )),
        "{}",
        human.stdout
    );
}
