//! Reads are snapshots: every command that only reports leaves the repository as it
//! found it — its refs, notes, `.git/crew/`, worktrees and processes — even with a dead
//! supervisor to report and a queued run waiting; the next command that acts settles.

use std::collections::BTreeSet;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::common::{Out, TestEnv, bin, poll_for, poll_until, read, run, write};
use crate::dispatch::pid_gone;

const PLAN: &str = r#"[plan]
id = "v1"

[[tasks]]
id = "routes"
wave = 1
scope = ["src/routes/**"]
prompt = "x"
size = 1.0

[[tasks]]
id = "api"
wave = 1
scope = ["src/api/**"]
prompt = "x"
size = 0.5

[[tasks]]
id = "cli"
wave = 1
scope = ["src/cli/**"]
prompt = "x"

[[tasks]]
id = "docs"
wave = 2
depends_on = ["routes"]
scope = ["docs/**"]
prompt = "x"
"#;

/// Everything a command could change: refs and their targets, each notes ref's notes,
/// every file and folder under `.git/crew/` (path, size, mtime, content hash) and under
/// `.git/objects/` (the conflict forecast's trial merges write none), the worktree list,
/// and the supervisors running for this repository.
struct State {
    refs: String,
    notes: Vec<(String, String)>,
    files: Vec<(String, String)>,
    objects: Vec<(String, String)>,
    worktrees: String,
    supervisors: Vec<u32>,
}

fn state(env: &TestEnv, repo: &Path) -> State {
    let refs = env.git_ok(
        repo,
        &[
            "for-each-ref",
            "--format=%(refname) %(objecttype) %(objectname)",
        ],
    );
    let notes = refs
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|r| r.starts_with("refs/notes/"))
        .map(|r| {
            (
                r.to_string(),
                env.git_ok(repo, &["notes", "--ref", r, "list"]),
            )
        })
        .collect();
    let mut files = Vec::new();
    walk(&repo.join(".git/crew"), &repo.join(".git/crew"), &mut files);
    files.sort();
    let mut objects = Vec::new();
    walk(
        &repo.join(".git/objects"),
        &repo.join(".git/objects"),
        &mut objects,
    );
    objects.sort();
    State {
        refs,
        notes,
        files,
        objects,
        worktrees: env.git_ok(repo, &["worktree", "list", "--porcelain"]),
        supervisors: supervisors(repo),
    }
}

/// What differs from `before` to `after`, one line per change.
fn changes(before: &State, after: &State) -> Vec<String> {
    let lines = |text: &str| -> BTreeSet<String> { text.lines().map(String::from).collect() };
    let mut out = Vec::new();
    let mut sets = |what: &str, a: BTreeSet<String>, b: BTreeSet<String>| {
        out.extend(a.difference(&b).map(|l| format!("{what}: gone {l}")));
        out.extend(b.difference(&a).map(|l| format!("{what}: new {l}")));
    };
    sets("ref", lines(&before.refs), lines(&after.refs));
    let notes = |s: &State| -> BTreeSet<String> {
        s.notes
            .iter()
            .flat_map(|(r, list)| list.lines().map(move |l| format!("{r} {l}")))
            .collect()
    };
    sets("note", notes(before), notes(after));
    let files = |s: &State| -> BTreeSet<String> {
        s.files
            .iter()
            .map(|(p, what)| format!("{p} ({what})"))
            .collect()
    };
    sets(".git/crew", files(before), files(after));
    let objects = |s: &State| -> BTreeSet<String> {
        s.objects
            .iter()
            .map(|(p, what)| format!("{p} ({what})"))
            .collect()
    };
    sets(".git/objects", objects(before), objects(after));
    sets(
        "worktree",
        lines(&before.worktrees),
        lines(&after.worktrees),
    );
    let pids =
        |s: &State| -> BTreeSet<String> { s.supervisors.iter().map(u32::to_string).collect() };
    sets("supervisor pid", pids(before), pids(after));
    out
}

/// Each entry under `dir`, with what it is: a folder and its mtime, a symlink and its
/// target, a file and its size, mtime and content hash.
fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    let mtime = |m: &std::fs::Metadata| {
        m.modified()
            .unwrap()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    };
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let name = path.strip_prefix(root).unwrap().display().to_string();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.is_dir() {
            out.push((name, format!("dir {}", mtime(&meta))));
            walk(root, &path, out);
        } else if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path).unwrap();
            out.push((name, format!("link {}", target.display())));
        } else {
            let mut hasher = DefaultHasher::new();
            std::fs::read(&path).unwrap().hash(&mut hasher);
            let what = format!("{} {} {:x}", meta.len(), mtime(&meta), hasher.finish());
            out.push((name, what));
        }
    }
}

/// The pids of the `git crew supervise` processes of `repo` (the repository is in their
/// command line), zombies left out.
pub fn supervisors(repo: &Path) -> Vec<u32> {
    let repo = repo.to_string_lossy().into_owned();
    let mut pids: Vec<u32> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                let text = String::from_utf8_lossy(&c);
                text.contains(&repo) && text.contains("\0supervise\0")
            })
        })
        .collect();
    pids.sort_unstable();
    pids
}

/// The completer, as a shell asks it for `words`.
fn complete(env: &TestEnv, repo: &Path, words: &[&str]) -> Out {
    let mut args = vec!["--"];
    args.extend(words);
    run(
        env.command(bin())
            .current_dir(repo)
            .env("GIT_CREW_COMPLETE", "fish")
            .args(&args),
        None,
    )
}

fn pointer(repo: &Path, run: &str) -> Value {
    serde_json::from_str(&read(&repo.join(format!(".git/crew/live/{run}.json")))).unwrap()
}

/// The runs a read finds: `integrated` (finished and integrated), `passes` (two passes
/// awaiting integration that edit the same line, so the reads forecast a conflict between
/// them; main moved since, so each forecast onto main merges file content),
/// `rejected` (finished), `asks` (live, needs help: no supervisor), `dead` (live, its
/// supervisor killed) and `queued` (waiting behind `dead` for its backend's one slot).
struct Runs {
    integrated: String,
    passes: [String; 2],
    rejected: String,
    asks: String,
    dead: String,
    queued: String,
}

fn repository(env: &TestEnv) -> (PathBuf, Runs) {
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    write(&repo.join(".crew/plans/v1.toml"), PLAN);
    let flight = read(&repo.join(".crew/flight.toml"));
    write(
        &repo.join(".crew/flight.toml"),
        &format!("{flight}\n[workers.scout]\nbackend = \"ok\"\n"),
    );
    env.git_ok(&repo, &["add", ".crew"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "a plan and a worker"]);
    let integrated = env
        .dispatch(&repo, "routes")
        .backend("ok")
        .scope("src/routes/**")
        .verify("true")
        .args(&["--size", "1"])
        .finished();
    env.crew(&repo, &["integrate", &integrated]).expect_code(0);
    let lines: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    write(&repo.join("notes/shared.txt"), &lines);
    env.git_ok(&repo, &["add", "notes"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "a shared file"]);
    let passes = ["alpha", "beta"].map(|task| {
        env.dispatch(&repo, task)
            .backend("edit-lines")
            .scope("notes/shared.txt")
            .verify("true")
            .prompt(&format!("EDIT notes/shared.txt:2 {task}"))
            .finished()
    });
    write(
        &repo.join("notes/shared.txt"),
        &lines.replace("line 9\n", "line nine\n"),
    );
    env.git_ok(&repo, &["commit", "-q", "-am", "main moves on"]);
    let rejected = env
        .dispatch(&repo, "docs")
        .backend("out-of-scope")
        .scope("docs/**")
        .finished();
    let asks = env
        .dispatch(&repo, "db")
        .backend("needs-help")
        .scope("src/db/**")
        .finished();
    let one = "backends.hang.concurrency=1";
    let dead = env
        .dispatch(&repo, "api")
        .backend("hang")
        .scope("src/api/**")
        .set(one)
        .run_id();
    let queued = env
        .dispatch(&repo, "cli")
        .backend("hang")
        .scope("src/cli/**")
        .set(one)
        .args(&["--queue"])
        .run_id();
    let child = repo.join(format!(".git/crew/runs/{dead}/tmp/child-pid"));
    poll_until(Duration::from_secs(20), "the worker's child", || {
        child.exists()
    });
    let supervisor = poll_for(Duration::from_secs(20), "the supervisor's pid", || {
        pointer(&repo, &dead)["supervisor_pid"].as_u64()
    });
    std::process::Command::new("kill")
        .args(["-9", &supervisor.to_string()])
        .status()
        .unwrap();
    poll_until(Duration::from_secs(20), "the supervisor to die", || {
        pid_gone(&supervisor.to_string())
    });
    // Every other supervisor has finished its work (a finished run's may still be
    // telling the lead): from here on only a command can change anything.
    poll_until(
        Duration::from_secs(20),
        "the other supervisors to end",
        || supervisors(&repo).is_empty(),
    );
    // What the ledger teaches is worked out afresh, so a read would have a cache to write.
    let _ = std::fs::remove_file(repo.join(".git/crew/cache/ledger-learnt.json"));
    let runs = Runs {
        integrated,
        passes,
        rejected,
        asks,
        dead,
        queued,
    };
    (repo, runs)
}

#[test]
fn every_read_command_changes_nothing_and_the_next_command_that_acts_settles() {
    let env = TestEnv::new();
    let (repo, runs) = repository(&env);
    let before = state(&env, &repo);
    assert_eq!(pointer(&repo, &runs.queued)["phase"], "queued");

    let commands: Vec<Vec<&str>> = vec![
        vec!["status"],
        vec!["ls"],
        vec!["status", "--all"],
        vec!["status", "--recent", "1"],
        vec!["status", &runs.dead],
        vec!["status", &runs.queued],
        vec!["show", &runs.integrated],
        vec!["show", &runs.rejected],
        vec!["show", &runs.asks],
        vec!["show", &runs.dead],
        vec!["show", &runs.queued],
        vec!["show", "@last"],
        vec!["transcript", &runs.integrated],
        vec!["diff", &runs.integrated],
        vec!["diff", &runs.integrated, "--stat"],
        vec!["diff", &runs.dead, "--name-status"],
        vec!["ledger"],
        vec!["ledger", "--task", "routes"],
        vec!["ledger", "stats"],
        vec!["ledger", "stats", "--task", "routes"],
        vec!["plan", "status"],
        vec!["wave", "status", "1"],
        vec!["summary", "--wave", "1", "--at", "completion"],
        vec!["summary", "--wave", "1", "--at", "dispatch"],
        vec!["workers"],
        vec!["watch", "--once"],
        vec!["gate", "ls"],
        vec!["flight"],
        vec!["flight", "--explain"],
    ];
    // Each in JSON and for people; and `watch --json`, one frame.
    let mut reads: Vec<Vec<&str>> = commands
        .iter()
        .flat_map(|args| {
            [
                [args.as_slice(), &["--json"]].concat(),
                [args.as_slice(), &["--human"]].concat(),
            ]
        })
        .collect();
    reads.push(vec!["watch", "--json"]);
    let mut outs = Vec::new();
    for args in &reads {
        let out = env.crew(&repo, args);
        // Each read says what it found (a wave that is not complete is exit 1).
        assert!(
            out.code == 0 || (out.code == 1 && args[0] == "wave"),
            "{args:?}: exit {}\n{}{}",
            out.code,
            out.stdout,
            out.stderr
        );
        outs.push((args, out));
    }
    for words in [
        &["git-crew", "show", ""][..],
        &["git-crew", "status", "2026"],
        &["git-crew", "dispatch", "--task", ""],
    ] {
        let out = complete(&env, &repo, words);
        out.expect_code(0);
        assert!(!out.stdout.is_empty(), "{words:?} offered nothing");
    }
    let changed = changes(&before, &state(&env, &repo));
    assert!(
        changed.is_empty(),
        "the reads changed:\n{}",
        changed.join("\n")
    );
    assert_eq!(pointer(&repo, &runs.queued)["phase"], "queued");
    assert_eq!(pointer(&repo, &runs.queued)["supervisor_pid"], Value::Null);

    // What they reported: the dead supervisor as a fact, the others as they are.
    let status = env.crew(&repo, &["status"]).json();
    let of = |run: &str| -> Value {
        status["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["run"] == run)
            .cloned()
            .unwrap_or_else(|| panic!("{run} not in {status}"))
    };
    assert_eq!(of(&runs.dead)["phase"], "working");
    assert_eq!(of(&runs.dead)["supervisor"], "dead");
    for run in [&runs.queued, &runs.asks, &runs.integrated, &runs.rejected] {
        assert_eq!(of(run)["supervisor"], Value::Null, "{run}");
        assert_eq!(of(run)["forecast"], Value::Null, "{run}");
    }
    // The passes' forecasts were there to make: each merges onto main, and they clash.
    let [alpha, beta] = &runs.passes;
    for (run, other) in [(alpha, beta), (beta, alpha)] {
        let forecast = &of(run)["forecast"];
        assert_eq!(forecast["merges_cleanly"], true, "{forecast}");
        assert_eq!(forecast["conflicts_with"], serde_json::json!([other]));
    }
    let show = env.crew(&repo, &["show", &runs.dead]).json();
    assert_eq!(show["run"]["supervisor"], "dead");
    let said = |args: &[&str]| {
        outs.iter()
            .find(|(a, _)| a.as_slice() == args)
            .map(|(_, out)| out.stdout.clone())
            .unwrap()
    };
    assert!(
        said(&["status", "--human"]).contains("supervisor dead"),
        "{}",
        said(&["status", "--human"])
    );
    assert!(said(&["show", &runs.dead, "--human"]).contains("supervisor dead"));
    let frame: Value = serde_json::from_str(&said(&["watch", "--once", "--json"])).unwrap();
    let in_frame: Vec<(&str, &Value)> = frame["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["run"].as_str().unwrap(), &r["supervisor"]))
        .collect();
    assert_eq!(
        in_frame,
        [
            (runs.asks.as_str(), &Value::Null),
            (runs.dead.as_str(), &Value::from("dead")),
            (runs.queued.as_str(), &Value::Null),
        ]
    );
    assert!(said(&["ledger", "--json"]).contains(&runs.integrated));
    assert!(!said(&["ledger", "--json"]).contains(&runs.dead));

    // The next command that acts settles: the dead run is filed as abandoned with its
    // ledger row, and its slot goes to the queued run.
    let acting = env
        .dispatch(&repo, "later")
        .backend("ok")
        .scope("src/later/**")
        .run_id();
    let filed: Value = serde_json::from_str(&read(
        &repo.join(format!(".git/crew/runs/{}.json", runs.dead)),
    ))
    .unwrap();
    assert_eq!(filed["outcome"], "abandoned");
    assert!(
        filed["decision"]
            .as_str()
            .unwrap()
            .contains("the supervisor died"),
        "{filed}"
    );
    assert!(
        !repo
            .join(format!(".git/crew/live/{}.json", runs.dead))
            .exists()
    );
    let rows = env.crew(&repo, &["ledger", "--task", "api"]).json()["rows"].clone();
    assert_eq!(rows[0]["run"], runs.dead.as_str(), "{rows}");
    assert_ne!(pointer(&repo, &runs.queued)["phase"], "queued");
    env.wait(&repo, &acting).run();
}

/// The MCP server's reads are the same snapshots: every read tool, the resources and a
/// subscription leave the repository as they found it, and say what the CLI says.
#[test]
fn every_mcp_read_changes_nothing() {
    let env = TestEnv::new();
    let (repo, runs) = repository(&env);
    let before = state(&env, &repo);
    let mut client = crate::mcp::Client::start(&env, &repo);
    let reads: Vec<(&str, Value)> = vec![
        ("status", json!({})),
        ("status", json!({"all": true})),
        ("status", json!({"recent": 1})),
        ("status", json!({"run": runs.dead})),
        ("show", json!({"run": runs.integrated})),
        ("show", json!({"run": runs.rejected})),
        ("show", json!({"run": runs.asks})),
        ("show", json!({"run": runs.dead})),
        ("show", json!({"run": runs.queued})),
        ("show", json!({"run": "@last"})),
        ("diff", json!({"run": runs.integrated})),
        ("diff", json!({"run": runs.integrated, "form": "stat"})),
        ("diff", json!({"run": runs.dead, "form": "name-status"})),
        ("ledger", json!({})),
        ("ledger", json!({"task": "routes"})),
        ("ledger", json!({"stats": true})),
        ("ledger", json!({"stats": true, "task": "routes"})),
        (
            "should_stop",
            json!({"task": "routes", "model": "backend:ok"}),
        ),
        ("plan_status", json!({})),
        ("wave_status", json!({"wave": 1})),
        ("workers", json!({})),
    ];
    let mut said = Vec::new();
    for (tool, args) in &reads {
        said.push(client.ok(tool, args.clone()));
    }
    for (method, params) in [
        ("resources/list", json!({})),
        ("resources/templates/list", json!({})),
        ("resources/read", json!({"uri": "crew://runs"})),
        (
            "resources/read",
            json!({"uri": format!("crew://runs/{}", runs.dead)}),
        ),
        (
            "resources/read",
            json!({"uri": format!("crew://runs/{}", runs.queued)}),
        ),
        (
            "resources/subscribe",
            json!({"uri": format!("crew://runs/{}", runs.dead)}),
        ),
        ("resources/subscribe", json!({"uri": "crew://runs"})),
    ] {
        let answer = client.request(method, params);
        assert!(answer.get("result").is_some(), "{method}: {answer}");
    }
    assert_eq!(client.close(), 0);
    let changed = changes(&before, &state(&env, &repo));
    assert!(
        changed.is_empty(),
        "the MCP reads changed:\n{}",
        changed.join("\n")
    );
    assert_eq!(pointer(&repo, &runs.queued)["phase"], "queued");
    // What they said: the dead supervisor as a fact, a finished run as the CLI shows it.
    assert_eq!(said[7]["run"]["supervisor"], "dead", "{}", said[7]);
    let cli = |args: &[&str]| env.crew(&repo, args).json();
    assert_eq!(said[4], cli(&["show", &runs.integrated, "--json"]));
    assert_eq!(said[14], cli(&["ledger", "--task", "routes", "--json"]));
    assert_eq!(said[17]["decision"], "continue", "{}", said[17]);
    assert_eq!(said[18], cli(&["plan", "status", "--json"]));
}
