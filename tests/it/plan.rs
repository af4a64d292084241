//! Plans, waves and gates end to end: scripted workers, real runs, real notes.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::{TestEnv, write};

const PLAN: &str = r#"[plan]
id = "v1"
north_star = "every task lands"

[[tasks]]
id = "a"
wave = 1
scope = ["work/a.txt"]
prompt = "Write work/a.txt."
verify = "test -f work/a.txt"
size = 1.0
worker = "filer"

[[tasks]]
id = "b"
wave = 1
scope = ["work/b.txt"]
prompt = "Write work/b.txt."
verify = "test -f work/b.txt"
size = 0.5
worker = "filer"

[[tasks]]
id = "c"
wave = 2
depends_on = ["a"]
scope = ["work/c.txt"]
prompt = "Write work/c.txt."
verify = "test -f work/c.txt"
worker = "filer"

[[gates]]
id = "g1"
measure = "both files exist"
required_evidence = "ls work/"
closes_wave = 1
gates_waves = [2]
"#;

pub fn planned_repo(env: &TestEnv) -> PathBuf {
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let flight = crate::common::read(&repo.join(".crew/flight.toml"));
    write(
        &repo.join(".crew/flight.toml"),
        &format!("{flight}[workers.filer]\nbackend = \"own-file\"\nnote = \"writes one file\"\n"),
    );
    write(&repo.join(".crew/plans/v1.toml"), PLAN);
    env.git_ok(&repo, &["add", "-A"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "the plan"]);
    repo
}

fn statuses(env: &TestEnv, repo: &Path) -> Vec<(String, String, Vec<String>)> {
    let out = env.crew(repo, &["plan", "status"]);
    out.expect_code(0);
    out.json()["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["task"].as_str().unwrap().to_string(),
                t["status"].as_str().unwrap().to_string(),
                t["blockers"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|b| {
                        format!(
                            "{}:{}",
                            b["kind"].as_str().unwrap(),
                            b["task"].as_str().or(b["gate"].as_str()).unwrap()
                        )
                    })
                    .collect(),
            )
        })
        .collect()
}

fn status_of(env: &TestEnv, repo: &Path, task: &str) -> (String, Vec<String>) {
    let all = statuses(env, repo);
    let (_, status, blockers) = all.into_iter().find(|(t, _, _)| t == task).unwrap();
    (status, blockers)
}

#[test]
fn a_plan_runs_in_waves_behind_its_gate() {
    let env = TestEnv::new();
    let repo = planned_repo(&env);
    assert_eq!(
        statuses(&env, &repo),
        [
            ("a".into(), "ready".into(), vec![]),
            ("b".into(), "ready".into(), vec![]),
            (
                "c".into(),
                "blocked".into(),
                vec!["dependency:a".to_string(), "gate:g1".to_string()]
            ),
        ]
    );
    let human = env.crew(&repo, &["plan", "status", "--human"]);
    assert!(human.stdout.contains("wave 2\n  └─ c"), "{}", human.stdout);

    // A gate holds wave 2: strict refuses a dispatch of c.
    let out = env.crew(&repo, &["dispatch", "--plan", "v1", "--task", "c"]);
    out.expect_code(4);
    assert_eq!(out.json()["error"]["code"], "blocked-by-gate");

    // Wave 1 goes at once, through the roster's worker, with the dispatch summary.
    let out = env.crew(&repo, &["wave", "dispatch", "1"]);
    out.expect_code(0);
    let json = out.json();
    let runs: Vec<String> = json["dispatched"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["run"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(runs.len(), 2);
    assert_eq!(json["dispatched"][0]["backend"], "own-file");
    assert_eq!(json["summary"]["title"], "Dispatching wave 1 — 2 workers");
    assert!(
        json["summary"]["what"]
            .as_str()
            .unwrap()
            .starts_with(&format!("a (run {})", runs[0])),
        "{}",
        json["summary"]
    );
    assert!(
        json["summary"]["when"]
            .as_str()
            .unwrap()
            .contains("closed by gate g1")
    );
    // Nothing twice: the wave's runs are in flight (or done); wave 2 is held by its gate.
    let again = env.crew(&repo, &["wave", "dispatch", "1"]);
    again.expect_code(0);
    assert_eq!(again.json()["dispatched"], serde_json::json!([]));
    assert!(
        again.json()["skipped"][0]["reason"]
            .as_str()
            .unwrap()
            .contains(&runs[0]),
        "{}",
        again.stdout
    );
    let held = env.crew(&repo, &["wave", "dispatch", "2"]);
    held.expect_code(4);
    assert_eq!(held.json()["error"]["code"], "blocked-by-gate");
    let mut wait = vec!["wait", "--timeout", "60s"];
    wait.extend(runs.iter().map(String::as_str));
    env.crew(&repo, &wait).expect_code(0);
    // Finished, not integrated: the summary says so, and the task is still `ready`.
    let s = env
        .crew(&repo, &["summary", "--wave", "1", "--at", "completion"])
        .json();
    assert_eq!(
        s["what"],
        format!(
            "a → run {} (pass, not integrated); b → run {} (pass, not integrated)",
            runs[0], runs[1]
        )
    );
    for run in &runs {
        env.crew(&repo, &["integrate", run]).expect_code(0);
    }
    assert_eq!(status_of(&env, &repo, "a").0, "done");
    assert_eq!(
        status_of(&env, &repo, "c"),
        ("blocked".into(), vec!["gate:g1".into()])
    );

    // Done, but the closing gate has no evidence: the wave reads as incomplete.
    let out = env.crew(&repo, &["wave", "status", "1"]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["complete"], false);
    assert_eq!(
        json["summary"]["why"],
        "incomplete: gate g1 has no verdict yet (needs: ls work/)"
    );
    assert_eq!(json["incomplete_because"], json["summary"]["why"]);
    let follow_ons: Vec<&str> = json["follow_ons"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["deferred"].as_str().unwrap())
        .collect();
    assert_eq!(
        follow_ons,
        [
            "work/a.txt could be indexed.",
            "work/b.txt could be indexed."
        ]
    );
    let micro = env
        .crew(&repo, &["summary", "--wave", "2", "--at", "micro-plan"])
        .json();
    assert_eq!(micro["title"], "Micro-plan for wave 2 — 1 task");
    assert_eq!(
        micro["why"],
        "gate g1 has not passed; toward: every task lands"
    );

    // A failing verdict holds wave 2; a verdict needs its evidence.
    env.crew(
        &repo,
        &[
            "gate",
            "record",
            "g1",
            "--verdict",
            "fail",
            "--evidence",
            "b missing",
        ],
    )
    .expect_code(0);
    assert_eq!(
        status_of(&env, &repo, "c"),
        ("blocked".into(), vec!["gate:g1".into()])
    );
    let out = env.crew(&repo, &["gate", "record", "g1", "--verdict", "pass"]);
    out.expect_code(2);
    assert_eq!(out.json()["error"]["code"], "evidence-required");
    env.crew(
        &repo,
        &[
            "gate",
            "record",
            "g1",
            "--verdict",
            "pass",
            "--evidence",
            "a.txt b.txt",
        ],
    )
    .expect_code(0);
    assert_eq!(status_of(&env, &repo, "c"), ("ready".into(), vec![]));
    let ls = env.crew(&repo, &["gate", "ls"]).json();
    assert_eq!(ls["gates"][0]["verdict"]["verdict"], "pass");
    // The verdict is on the gate's history and on the commit it was measured at.
    let note = env.git_ok(&repo, &["notes", "--ref=crew-gates", "show", "HEAD"]);
    assert!(note.contains("\"evidence\":\"a.txt b.txt\""), "{note}");

    let out = env.crew(&repo, &["summary", "--wave", "1", "--at", "completion"]);
    out.expect_code(0);
    let s = out.json();
    assert_eq!(s["why"], "gate g1 passed: a.txt b.txt");
    assert!(s["what"].as_str().unwrap().contains(" @ "), "{s}");
    let human = env.crew(
        &repo,
        &["summary", "--wave", "1", "--at", "completion", "--human"],
    );
    let lines: Vec<&str> = human.stdout.lines().collect();
    assert!(
        lines[0].starts_with("Wave 1 completion — 2 of 2 tasks done"),
        "{lines:?}"
    );
    for label in ["WHAT", "WHY", "HOW", "WHEN"] {
        assert_eq!(
            lines.iter().filter(|l| l.starts_with(label)).count(),
            1,
            "{lines:?}"
        );
    }
    assert!(lines.len() <= 9);
    let status = env.crew(&repo, &["wave", "status", "1"]).json();
    assert_eq!(status["complete"], true);

    // The ledger learnt from the sized runs.
    let stats = env.crew(&repo, &["ledger", "stats"]).json();
    let own = stats["stats"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["backend"] == "own-file")
        .unwrap()
        .clone();
    assert_eq!(own["runs"], 2);
    assert_eq!(own["pass_rate"], 1.0);
    assert_eq!(own["claim_accuracy"], 1.0);
    assert!(own["speed_factor"].is_number(), "{own}");
    let rows = env.crew(&repo, &["ledger", "--task", "a"]).json()["rows"].clone();
    assert_eq!(rows[0]["size_h"], 1.0);
    assert_eq!(rows[0]["worker"], "filer");
}

#[test]
fn a_wave_with_overlapping_scopes_is_refused_up_front_and_the_rest_queue() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let task = |id: &str, scope: &str| {
        format!("[[tasks]]\nid = \"{id}\"\nwave = 1\nscope = [\"{scope}\"]\nprompt = \"x\"\n")
    };
    write(
        &repo.join(".crew/plans/clash.toml"),
        &(task("x", "work/**") + &task("y", "work/y.txt")),
    );
    let out = env.crew(&repo, &["wave", "dispatch", "1", "--plan", "clash"]);
    out.expect_code(4);
    let json = out.json();
    assert_eq!(json["error"]["code"], "scope-overlap");
    assert_eq!(
        json["error"]["details"][0],
        "x `work/**` overlaps y `work/y.txt`"
    );
    assert_eq!(
        env.crew(&repo, &["status"]).json()["runs"]
            .as_array()
            .unwrap()
            .len(),
        0
    );

    write(
        &repo.join(".crew/plans/three.toml"),
        &(task("p", "work/p.txt") + &task("q", "work/q.txt") + &task("r", "work/r.txt"))
            .replace("prompt = \"x\"", "prompt = \"x\"\nrole = \"implement\""),
    );
    // Two plans: --plan is now required.
    let out = env.crew(&repo, &["plan", "status"]);
    out.expect_code(2);
    assert_eq!(out.json()["error"]["code"], "plan-required");
    std::fs::remove_file(repo.join(".crew/plans/clash.toml")).unwrap();
    // Workers that keep running (backend `hang`, concurrency 2): the third run queues.
    let flight = crate::common::read(&repo.join(".crew/flight.toml"));
    write(
        &repo.join(".crew/flight.toml"),
        &flight.replace("default_backend = \"ok\"", "default_backend = \"hang\""),
    );
    let out = env.crew(&repo, &["wave", "dispatch", "1"]);
    out.expect_code(0);
    let phases: Vec<Value> = out.json()["dispatched"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["phase"].clone())
        .collect();
    assert_eq!(phases[2], "queued", "{phases:?}");
    let runs: Vec<String> = out.json()["dispatched"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["run"].as_str().unwrap().to_string())
        .collect();
    for run in &runs {
        env.crew(&repo, &["abandon", run]);
    }
}

#[test]
fn every_validation_error_class_is_exit_2_with_its_location() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    write(
        &repo.join(".crew/plans/bad.toml"),
        "[plan]\nid = \"bad\"\n[[tasks]]\nid = \"a\"\ndepends_on = [\"b\"]\nstatus = \"blocked\"\n\
         [[tasks]]\nid = \"b\"\ndepends_on = [\"a\"]\nwaev = 2\n[[tasks]]\nid = \"a\"\n\
         [[tasks]]\nid = \"d\"\ndepends_on = [\"zz\"]\n[[gates]]\nid = \"g\"\ngates_waves = [7]\n",
    );
    let out = env.crew(&repo, &["plan", "status", "bad"]);
    out.expect_code(2);
    let error = &out.json()["error"];
    assert_eq!(error["code"], "plan-invalid");
    let details: Vec<String> = error["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_str().unwrap().to_string())
        .collect();
    let has = |needle: &str| details.iter().any(|d| d.contains(needle));
    assert!(
        has(".crew/plans/bad.toml:6:1: `tasks[0].status`: a status is derived"),
        "{details:#?}"
    );
    assert!(
        has("`tasks[1].waev`: unknown key (did you mean `wave`?)"),
        "{details:#?}"
    );
    assert!(has("duplicate task id `a`"), "{details:#?}");
    assert!(has("unknown task `zz`"), "{details:#?}");
    assert!(has("no task is in wave 7"), "{details:#?}");
    assert!(has("dependency cycle: a → b → a"), "{details:#?}");
    let out = env.crew(&repo, &["plan", "status", "nope"]);
    out.expect_code(3);
    let out = env.crew(&repo, &["dispatch", "--plan", "bad", "--task", "a"]);
    out.expect_code(2);
}

#[test]
fn dispatch_from_a_plan_warns_when_stale_or_too_big_and_obeys_warn_mode() {
    let env = TestEnv::new();
    let repo = planned_repo(&env);
    // Two passing 1-hour runs of backend `ok`: its horizon is 1 h.
    for task in ["h1", "h2"] {
        env.dispatch(&repo, task)
            .backend("ok")
            .scope("src/routes/**")
            .args(&["--size", "1"])
            .finished();
    }
    // The plan was committed on 2026-01-01 (the tests' fixed date); a year on, it is
    // stale.
    env.set_clock("2027-01-01T00:00:00Z");
    let out = env.crew(
        &repo,
        &[
            "dispatch",
            "--plan",
            "v1",
            "--task",
            "a",
            "--backend",
            "ok",
            "--size",
            "6",
            "--scope",
            "work/a.txt",
            "--verify",
            "true",
        ],
    );
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["stale_days"], 365, "{json}");
    assert_eq!(
        json["split_advice"],
        "task a is sized 6h, beyond the 1h competence horizon of ok - -: split it into tasks of at most 1h"
    );
    assert!(
        out.stderr.contains("its assumptions may have expired"),
        "{}",
        out.stderr
    );
    // Flags override the plan; the plan fills the rest.
    let run = json["run"].as_str().unwrap();
    let shown = env.crew(&repo, &["show", run]).json();
    assert_eq!(shown["run"]["verify_command"], "true");
    assert_eq!(shown["run"]["plan"], "v1");
    assert_eq!(shown["run"]["size_h"], 6.0);
    assert_eq!(shown["run"]["worker"], "filer");
    let prompt = crate::common::read(Path::new(shown["run"]["prompt_file"].as_str().unwrap()));
    assert!(
        prompt.contains("Plan v1 (.crew/plans/v1.toml), task a, wave 1."),
        "{prompt}"
    );
    env.crew(&repo, &["wait", run, "--timeout", "60s"]);

    // Under `warn`, a task a gate holds goes, with a warning.
    let out = env.crew(
        &repo,
        &[
            "dispatch",
            "--plan",
            "v1",
            "--task",
            "c",
            "--set",
            "gates.enforce=warn",
            "--set",
            "plans.stale_after_days=3650",
        ],
    );
    out.expect_code(0);
    let json = out.json();
    assert!(json.get("stale_days").is_none());
    let warnings: Vec<&str> = json["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .collect();
    assert!(
        warnings.iter().any(|w| w.contains("held by a gate")),
        "{warnings:?}"
    );
    assert!(
        warnings.iter().any(|w| w.contains("depends on a (")),
        "{warnings:?}"
    );
    // Integrating it is held by the gate all the same under the default `strict`.
    let run = json["run"].as_str().unwrap();
    env.crew(&repo, &["wait", run, "--timeout", "60s"])
        .expect_code(0);
    let out = env.crew(&repo, &["integrate", run]);
    out.expect_code(4);
    assert_eq!(out.json()["error"]["code"], "blocked-by-gate");
    env.crew(
        &repo,
        &[
            "gate",
            "record",
            "g1",
            "--verdict",
            "pass",
            "--evidence",
            "ok",
        ],
    )
    .expect_code(0);
    let out = env.crew(&repo, &["integrate", run]);
    out.expect_code(0);
    let commit = out.json()["commit"].as_str().unwrap().to_string();
    let note = env.git_ok(&repo, &["notes", "--ref=crew", "show", &commit]);
    assert!(
        note.contains("\"gates\":[{\"gate\":\"g1\",\"verdict\":{"),
        "{note}"
    );

    // A run re-scoped away from its plan task is marked, and left out of the stats.
    assert_eq!(shown["run"]["scope_changed"], false);
    let out = env.crew(
        &repo,
        &[
            "dispatch",
            "--plan",
            "v1",
            "--task",
            "b",
            "--scope",
            "work/b2.txt",
        ],
    );
    out.expect_code(0);
    let run = out.json()["run"].as_str().unwrap().to_string();
    env.crew(&repo, &["wait", &run, "--timeout", "60s"]);
    let rows = env.crew(&repo, &["ledger", "--task", "b"]).json()["rows"].clone();
    assert_eq!(rows[0]["scope_changed"], true, "{rows}");
    let stats = env.crew(&repo, &["ledger", "stats", "--task", "b"]).json();
    assert_eq!(stats["stats"][0]["excluded_scope_changed"], 1, "{stats}");
    env.crew(&repo, &["plan", "status", "--plan", "v1"])
        .expect_code(0);
}

#[test]
fn a_wave_is_decided_whole_before_it_starts_and_rolled_back_when_a_start_fails() {
    let env = TestEnv::new();
    let repo = planned_repo(&env);
    // --dry-run decides every task, with the routing flags, and starts nothing.
    let out = env.crew(
        &repo,
        &["wave", "dispatch", "1", "--dry-run", "--time-budget", "5m"],
    );
    out.expect_code(0);
    let json = out.json();
    let planned = json["planned"].as_array().unwrap();
    assert_eq!(planned.len(), 2, "{json}");
    assert!(planned.iter().all(|p| p["budget_s"] == 300), "{json}");
    let live = env.crew(&repo, &["status"]).json();
    assert_eq!(live["runs"], serde_json::json!([]), "{live}");

    // A start that fails half-way: what started is abandoned again, its branch kept.
    let mut cmd = env.command(crate::common::bin());
    cmd.current_dir(&repo)
        .args(["wave", "dispatch", "1"])
        .env("GIT_CREW_FAILPOINT", "wave-start-second");
    let out = cmd.output().unwrap();
    assert_ne!(out.status.code(), Some(0));
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let details = json["error"]["details"].to_string();
    assert!(details.contains("rolled back"), "{json}");
    let runs = env.crew(&repo, &["status", "--all"]).json();
    let runs = runs["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["outcome"], "abandoned", "{runs:?}");
    let branch = runs[0]["branch"].as_str().unwrap();
    env.git_ok(&repo, &["rev-parse", "--verify", branch]);
    assert!(details.contains(runs[0]["run"].as_str().unwrap()), "{json}");
}

#[test]
fn summary_at_decides_which_summaries_are_printed() {
    let env = TestEnv::new();
    let repo = planned_repo(&env);
    let out = env.crew(
        &repo,
        &[
            "wave",
            "dispatch",
            "1",
            "--set",
            "summary.at=[\"completion\"]",
        ],
    );
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["summary"], serde_json::Value::Null, "{json}");
    assert_eq!(json["dispatched"].as_array().unwrap().len(), 2);
    let status = env.crew(&repo, &["wave", "status", "1"]).json();
    assert!(status["summary"].is_object(), "{status}");
}

#[test]
fn a_plan_task_must_have_a_branch_name_id_a_scope_inside_the_repository_and_a_prompt() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    write(
        &repo.join(".crew/plans/odd.toml"),
        "[plan]\nid = \"odd\"\n\
         [[tasks]]\nid = \"a.lock/b\"\nscope = [\"src/**\"]\nprompt = \"x\"\n\
         [[tasks]]\nid = \"empty\"\nscope = []\nprompt = \"x\"\n\
         [[tasks]]\nid = \"escapes\"\nscope = [\"../elsewhere/**\"]\nprompt = \"x\"\n\
         [[tasks]]\nid = \"silent\"\nscope = [\"docs/**\"]\n\
         [[tasks]]\nid = \"far\"\nscope = [\"lib/**\"]\nprompt_file = \"../../etc/passwd\"\n",
    );
    let out = env.crew(&repo, &["plan", "status", "odd"]);
    out.expect_code(2);
    let details = out.json()["error"]["details"].to_string();
    for needle in [
        "`a.lock/b` cannot be a task id",
        "tasks[1].scope`: this implement task needs a write scope",
        "tasks[2].scope",
        "tasks[3]`: a task needs `prompt` or `prompt_file`",
        "tasks[4].prompt_file`: `../../etc/passwd` lies outside the repository",
    ] {
        assert!(details.contains(needle), "{needle}: {details}");
    }
    assert!(details.contains(".crew/plans/odd.toml:"), "{details}");
    // On the command line too: never exit 70.
    let out = env.crew(
        &repo,
        &[
            "dispatch", "--task", "a.lock/b", "--prompt", "x", "--scope", "src/**",
        ],
    );
    out.expect_code(2);
}

#[test]
fn the_summary_routes_a_task_as_dispatch_would_through_its_role() {
    let env = TestEnv::new();
    let repo = planned_repo(&env);
    let flight = crate::common::read(&repo.join(".crew/flight.toml"));
    write(
        &repo.join(".crew/flight.toml"),
        &format!("{flight}[roles.review]\nbackend = \"review\"\n"),
    );
    write(
        &repo.join(".crew/plans/r.toml"),
        "[plan]\nid = \"r\"\n[[tasks]]\nid = \"look\"\nwave = 1\nrole = \"review\"\nprompt = \"Review it.\"\n",
    );
    env.git_ok(&repo, &["add", "-A"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "a review plan"]);
    let out = env.crew(
        &repo,
        &["summary", "--plan", "r", "--wave", "1", "--at", "dispatch"],
    );
    out.expect_code(0);
    let how = out.json()["how"].as_str().unwrap().to_string();
    assert!(how.contains("review"), "{how}");
    assert!(!how.contains("own-file"), "{how}");
    // And dispatch goes where the summary said.
    let out = env.crew(
        &repo,
        &["dispatch", "--plan", "r", "--task", "look", "--dry-run"],
    );
    out.expect_code(0);
    assert_eq!(out.json()["backend"], "review");
}

#[test]
fn what_a_worker_wrote_crosses_as_data_and_never_drives_the_terminal() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    write(
        &repo.join(".crew/plans/esc.toml"),
        "[plan]\nid = \"esc\"\n\n[[tasks]]\nid = \"routes\"\nwave = 1\n\
         scope = [\"src/routes/**\"]\nprompt = \"Add the routes.\"\n\
         verify = \"test -f src/routes/crew.rs\"\n\n[[gates]]\nid = \"g1\"\n\
         measure = \"the routes exist\"\nrequired_evidence = \"ls\"\ncloses_wave = 1\n",
    );
    env.git_ok(&repo, &["add", "-A"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "the plan"]);
    let run = env
        .dispatch(&repo, "routes")
        .args(&["--plan", "esc"])
        .backend("footer-escapes")
        .run_id();
    // The gate's evidence is the lead's, and may be pasted from a worker's output.
    env.crew(
        &repo,
        &[
            "gate",
            "record",
            "g1",
            "--verdict",
            "pass",
            "--evidence",
            "ls \u{1b}]52;c;cm0K\u{7}ok\u{1b}[2K",
        ],
    )
    .expect_code(0);
    let waited = env.wait(&repo, &run).human().run();
    waited.expect_code(0);
    let show = env.crew(&repo, &["show", &run, "--human"]);
    show.expect_code(0);
    let status = env.crew(&repo, &["status", "--human"]);
    status.expect_code(0);
    let wave = env.crew(&repo, &["wave", "status", "1", "--human"]);
    wave.expect_code(0);
    let summary = env.crew(
        &repo,
        &["summary", "--wave", "1", "--at", "completion", "--human"],
    );
    summary.expect_code(0);
    for (name, out) in [
        ("wait", &waited),
        ("show", &show),
        ("status", &status),
        ("wave status", &wave),
        ("summary", &summary),
    ] {
        let text = format!("{}{}", out.stdout, out.stderr);
        let bad: Vec<char> = text
            .chars()
            .filter(|c| c.is_control() && *c != '\n' && *c != '\t')
            .collect();
        assert!(bad.is_empty(), "{name} printed {bad:?}:\n{text}");
        assert!(
            !text.contains("52;c;") && !text.contains("pwned"),
            "{name}:\n{text}"
        );
    }
    // The words stay.
    for out in [&waited, &show] {
        for words in [
            "Added crew.rs. Copied.\nErased line.",
            "concealed-text shown",
            "Title kept and bell rung.",
        ] {
            assert!(out.stdout.contains(words), "{words}:\n{}", out.stdout);
        }
    }
    assert!(
        wave.stdout
            .contains("follow-on (routes): Title kept and bell rung."),
        "{}",
        wave.stdout
    );
    assert!(
        summary.stdout.contains("gate g1 passed: ls ok"),
        "{}",
        summary.stdout
    );
    // JSON keeps the text as it came, as data.
    let json = env.crew(&repo, &["show", &run]).json();
    let footer = &json["run"]["footer"];
    assert!(
        footer["result"]
            .as_str()
            .unwrap()
            .contains("\u{1b}]52;c;cm0gLXJmIH4K\u{7} Copied."),
        "{footer}"
    );
    assert!(
        footer["how_to_verify"]
            .as_str()
            .unwrap()
            .contains("\u{1b}[8mconcealed-text"),
        "{footer}"
    );
}
