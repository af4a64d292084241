//! The real CLIs as the lead. In a repository after `git crew init --agents`, `claude -p`
//! and `codex exec` load git-crew's MCP server from the files init wrote (`.mcp.json`;
//! `[mcp_servers.git-crew]` of a trusted project's `.codex/config.toml`) and, against the
//! scripted model server's lead script (`[[mock:lead BACKEND]]`), drive a scripted worker
//! through it: dispatch, wait, advise its NEEDS-HELP, wait, show, integrate, and integrate
//! once more, which git-crew refuses. Every tool result the lead received (the model
//! server logs them) is checked against the command's own `--json`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{ModelServer, clis};
use crate::common::{Out, TestEnv, bin, read, run, write};

/// The worker: NEEDS-HELP first; advised, it writes `src/routes/store.rs` and a footer.
const WORKER: &str = "help-then-work";
const PROMPT: &str =
    "Lead the crew: have a store picked for the routes. [[mock:lead help-then-work]]";
/// What the lead script dispatches and advises (git-fixtures/model-server.py).
const SCOPE: &str = "src/routes/**";
const ADVICE: &str = "Use sqlite.";
/// The tools the lead calls, in order.
const SCRIPT: [&str; 7] = [
    "dispatch",
    "wait",
    "advise",
    "wait",
    "show",
    "integrate",
    "integrate",
];
/// The fields of a run's result that advising it, its second attempt and integrating it
/// change (or may, with the timing): a wait's result from before them is compared with
/// the command's after them on every other field.
const CHANGED_SINCE_NEEDS_HELP: [&str; 17] = [
    "phase",
    "outcome",
    "attempts",
    "finished_at",
    "deadline",
    "elapsed_s",
    "last_activity_at",
    "footer",
    "needs_help",
    "verify",
    "decision",
    "diff",
    "supervisor_pid",
    "parked_at",
    "verified_tip",
    "integration",
    "pruned",
];
/// The fields integrating a run changes (its worktree goes: `pruned`).
const CHANGED_BY_INTEGRATE: [&str; 2] = ["integration", "pruned"];

/// A repository with git-crew's agent files committed, as a person would after
/// `git crew init --agents`. Its git identity is in its config: codex starts an MCP server
/// with a cleared environment (HOME, PATH, LANG, SHELL, TERM and little else), so the
/// GIT_AUTHOR_* variables of the test's environment never reach git-crew there.
fn lead_repo(env: &TestEnv) -> PathBuf {
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    env.git_ok(&repo, &["config", "user.name", "Crew Test"]);
    env.git_ok(&repo, &["config", "user.email", "crew@example.com"]);
    let out = env.crew(&repo, &["init", "--agents"]);
    out.expect_code(0);
    let written: BTreeSet<String> = out.json()["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| format!("{} {}", a["kind"].as_str().unwrap(), a["action"]))
        .collect();
    assert_eq!(
        written,
        BTreeSet::from(
            [
                "skill \"created\"",
                "agents-md \"created\"",
                "mcp-json \"created\"",
                "codex-config \"created\""
            ]
            .map(String::from)
        )
    );
    env.git_ok(&repo, &["add", "-A"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "the lead's agent files"]);
    repo
}

/// `git crew mcp`, as the shipped registrations start it, is the binary under test: the
/// first `git-crew` on the PATH the CLIs get.
fn assert_git_crew_is_under_test(env: &TestEnv) {
    let path = env
        .vars()
        .into_iter()
        .find(|(k, _)| *k == "PATH")
        .unwrap()
        .1;
    let first = std::env::split_paths(&path)
        .map(|d| d.join("git-crew"))
        .find(|p| p.is_file())
        .expect("a git-crew on the PATH");
    assert_eq!(first, bin());
}

/// One tool result the lead received: git-crew's tool, its JSON, and whether the CLI
/// told the model it was an error.
#[derive(Debug)]
struct Received {
    tool: String,
    json: Value,
    error: bool,
}

/// The JSON of a result's text: Claude Code hands the model the result's JSON serialised
/// again (see [`numbers`]); codex hands it git-crew's text after a header of its own,
/// `Wall time: S seconds\nOutput:\n`.
fn result_json(cli: &str, texts: &Value) -> Value {
    let texts = texts.as_array().expect("the result's texts");
    assert_eq!(texts.len(), 1, "one text block: {texts:?}");
    let text = texts[0].as_str().unwrap();
    let text = if cli == "codex" {
        let rest = text
            .strip_prefix("Wall time: ")
            .unwrap_or_else(|| panic!("codex's header: {text}"));
        let (seconds, json) = rest
            .split_once(" seconds\nOutput:\n")
            .unwrap_or_else(|| panic!("codex's header: {text}"));
        assert!(seconds.parse::<f64>().is_ok(), "{text}");
        json
    } else {
        text
    };
    numbers(serde_json::from_str(text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}")))
}

/// Every git-crew tool result the lead received, in order, from the model server's log
/// (`requests`). The error flag is the CLI's: the tool_result's `is_error` for claude; for codex, the
/// `mcp_tool_call` item of its own stream (status `failed`), whose order is the calls'.
fn received(requests: &[Value], cli: &str, stream: &[Value]) -> Vec<Received> {
    let mut got = Vec::new();
    for request in requests {
        assert_eq!(request["answer"], "lead", "{request}");
        let saw = &request["lead"]["saw"];
        if saw.is_null() || saw["tool"] == "Skill" {
            continue;
        }
        got.push(Received {
            tool: saw["tool"].as_str().unwrap().to_string(),
            json: result_json(cli, &saw["texts"]),
            error: saw["is_error"].as_bool().unwrap_or(false),
        });
    }
    if cli == "codex" {
        let calls: Vec<&Value> = stream
            .iter()
            .filter(|e| e["type"] == "item.completed" && e["item"]["type"] == "mcp_tool_call")
            .map(|e| &e["item"])
            .collect();
        assert_eq!(calls.len(), got.len(), "{calls:?}");
        for (call, received) in calls.iter().zip(got.iter_mut()) {
            assert_eq!(call["server"], "git-crew");
            assert_eq!(call["tool"], received.tool.as_str());
            // The structured content codex got is the JSON the model got.
            assert_eq!(
                numbers(call["result"]["structured_content"].clone()),
                received.json
            );
            received.error = call["status"] == "failed";
        }
    }
    got
}

/// `v` with every number as a float. Claude Code hands the model a tool's JSON as it
/// serialises it again (JavaScript's numbers: git-crew's `1.0` comes as `1`), so numbers
/// are compared by value.
fn numbers(v: Value) -> Value {
    match v {
        Value::Number(n) => n
            .as_f64()
            .and_then(serde_json::Number::from_f64)
            .map_or(Value::Null, Value::Number),
        Value::Array(items) => Value::Array(items.into_iter().map(numbers).collect()),
        Value::Object(map) => {
            Value::Object(map.into_iter().map(|(k, v)| (k, numbers(v))).collect())
        }
        other => other,
    }
}

/// A command's JSON, numbers compared by value.
fn json_of(out: &Out) -> Value {
    numbers(out.json())
}

/// The keys of a JSON object.
fn keys(v: &Value) -> BTreeSet<&str> {
    v.as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .map(String::as_str)
        .collect()
}

/// `then` (a tool result) and `now` (the command's JSON after the fact) have the same
/// fields, equal but for `changed`.
#[track_caller]
fn same_but(what: &str, then: &Value, now: &Value, changed: &[&str]) {
    assert_eq!(keys(then), keys(now), "{what}: the same fields");
    let differ: Vec<String> = keys(then)
        .into_iter()
        .filter(|key| !changed.contains(key) && then[*key] != now[*key])
        .map(|key| format!("{key}: {} then, {} now", then[key], now[key]))
        .collect();
    assert!(differ.is_empty(), "{what}:\n{}", differ.join("\n"));
}

/// The reply of attempt `n` of `run`, from its transcript.
fn reply(env: &TestEnv, repo: &Path, run: &str, n: u32) -> String {
    let transcript = env.transcript(repo, run);
    let header = format!("task store attempt {n} ");
    let start = transcript
        .find(&header)
        .unwrap_or_else(|| panic!("attempt {n} in:\n{transcript}"));
    let rest = &transcript[start..];
    let body = &rest[rest.find("----- stdout -----\n").unwrap() + 19..];
    body.split("\n=====").next().unwrap().trim().to_string()
}

/// Each tool result the lead received is the CLI's JSON, the worker's change is on the
/// target and the run record note is there.
fn check_the_lead(env: &TestEnv, repo: &Path, got: &[Received], final_text: &str) {
    let tools: Vec<&str> = got.iter().map(|r| r.tool.as_str()).collect();
    assert_eq!(tools, SCRIPT, "{got:#?}");
    let run = got[0].json["run"].as_str().unwrap().to_string();
    let shown = env.crew(repo, &["show", &run, "--json"]);
    shown.expect_code(0);
    let shown = json_of(&shown)["run"].clone();
    let waited = env.crew(repo, &["wait", &run, "--timeout", "5s", "--json"]);
    waited.expect_code(0);
    let waited = json_of(&waited)["runs"][0].clone();
    for r in &got[..6] {
        assert_eq!(r.json["ok"], true, "{}: {}", r.tool, r.json);
        assert!(!r.error, "{} was flagged an error", r.tool);
    }

    // dispatch: every field but the phase is the run's record, and the deadline, which
    // advise moves by the time the run waited for the lead.
    let dispatched = &got[0].json;
    assert!(
        ["preparing", "working"].contains(&dispatched["phase"].as_str().unwrap()),
        "{dispatched}"
    );
    for key in keys(dispatched) {
        if !["ok", "phase", "deadline"].contains(&key) {
            assert_eq!(dispatched[key], shown[key], "dispatch: {key}");
        }
    }
    assert!(dispatched["deadline"].as_str().unwrap() <= shown["deadline"].as_str().unwrap());
    assert_eq!(dispatched["backend"], WORKER);
    assert_eq!(dispatched["scope"], serde_json::json!([SCOPE]));

    // wait: the worker asks; its question is what `git crew footer` reads in its reply.
    let asked = &got[1].json;
    assert_eq!(asked["timed_out"], false);
    let asked = &asked["runs"][0];
    assert_eq!(asked["phase"], "needs-help", "{asked}");
    let question = env.crew_stdin(
        repo,
        &["footer", "--json"],
        reply(env, repo, &run, 1).as_bytes(),
    );
    question.expect_code(5);
    assert_eq!(asked["needs_help"], json_of(&question)["needs_help"]);
    same_but("the first wait", asked, &waited, &CHANGED_SINCE_NEEDS_HELP);

    // advise: the advice went to the same session.
    let advised = &got[2].json;
    assert_eq!(advised["run"], run.as_str());
    assert_eq!(advised["session"], shown["session"]);
    assert_eq!(advised["deadline"], shown["deadline"]);
    assert!(read(Path::new(advised["advice_file"].as_str().unwrap())).contains(ADVICE));

    // wait: the run passed; everything but its integration is as the command says now.
    let passed = &got[3].json["runs"][0];
    assert_eq!(passed["outcome"], "pass", "{passed}");
    same_but("the second wait", passed, &waited, &CHANGED_BY_INTEGRATE);

    // show, before integrate: the footer and the outcome are the record's, and the
    // footer is what `git crew footer` reads in the worker's reply.
    let before = &got[4].json["run"];
    assert_eq!(keys(before), keys(&shown), "show: the same fields");
    for key in [
        "footer", "outcome", "verify", "decision", "session", "attempts",
    ] {
        assert_eq!(before[key], shown[key], "show: {key}");
    }
    let footer = env.crew_stdin(
        repo,
        &["footer", "--json"],
        reply(env, repo, &run, 2).as_bytes(),
    );
    footer.expect_code(0);
    let sections = &json_of(&footer)["sections"];
    for key in ["result", "how_to_verify", "deferred"] {
        assert_eq!(before["footer"][key], sections[key], "footer: {key}");
    }

    // integrate: the change is on the target, with the run record note.
    let landed = &got[5].json;
    let tip = env.git_ok(repo, &["rev-parse", "main"]);
    assert_eq!(landed["commit"], tip.trim());
    assert_eq!(landed["run"], run.as_str());
    assert_eq!(landed["files"], serde_json::json!(["src/routes/store.rs"]));
    env.assert_in_sealed_scope(
        repo,
        &run,
        landed["parents"][0].as_str().unwrap(),
        tip.trim(),
    );
    assert_eq!(
        env.git_ok(repo, &["show", "main:src/routes/store.rs"])
            .trim(),
        ADVICE
    );
    let note = env.git_ok(repo, &["notes", "--ref=crew", "show", tip.trim()]);
    let note = numbers(serde_json::from_str(&note).expect("the run record is JSON"));
    assert_eq!(note["run"], run.as_str());
    assert_eq!(note["footer"], shown["footer"]);

    // integrate again: a refusal, flagged as an error, the command's own JSON.
    let refused = &got[6];
    assert!(refused.error, "the refusal was not flagged an error");
    let cli = env.crew(repo, &["integrate", &run, "--json"]);
    cli.expect_code(4);
    assert_eq!(refused.json, json_of(&cli));
    let error = &refused.json["error"];
    assert_eq!(refused.json["ok"], false);
    assert_eq!(error["code"], "already-integrated");
    for key in ["message", "hint"] {
        assert!(
            !error[key].as_str().unwrap_or_default().is_empty(),
            "{key}: {error}"
        );
    }
    // And the lead heard it.
    assert!(final_text.contains("already-integrated"), "{final_text}");
}

/// The lines of a CLI's JSON stream.
fn stream(out: &Out) -> Vec<Value> {
    out.stdout
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[test]
#[ignore = "needs the real codex and claude CLIs; .ci/run installs them and runs these with --ignored"]
fn claude_leads_through_the_shipped_skill_and_mcp_json() {
    let bin = clis();
    let env = TestEnv::new();
    assert_git_crew_is_under_test(&env);
    let server = ModelServer::start(&env);
    let repo = lead_repo(&env);
    // A config dir of its own: no MCP server but the project's .mcp.json. In print mode
    // Claude Code starts the project's servers without asking; their tools need a grant.
    let config = env.root().join("claude-lead");
    std::fs::create_dir_all(&config).unwrap();
    let out = run(
        env.command("timeout")
            .current_dir(&repo)
            .arg("240")
            .arg(bin.join("claude"))
            .args(["-p", PROMPT, "--output-format", "stream-json", "--verbose"])
            .args(["--allowedTools", "mcp__git-crew"])
            .env(
                "ANTHROPIC_BASE_URL",
                format!("http://127.0.0.1:{}", server.port),
            )
            .env("ANTHROPIC_API_KEY", "dummy")
            .env("DISABLE_AUTOUPDATER", "1")
            .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
            .env("CLAUDE_CODE_MAX_RETRIES", "0")
            .env("CLAUDE_CONFIG_DIR", &config),
        None,
    );
    out.expect_code(0);
    let events = stream(&out);
    let init = events
        .iter()
        .find(|e| e["type"] == "system" && e["subtype"] == "init")
        .expect("the init event");
    assert_eq!(
        init["mcp_servers"],
        serde_json::json!([{"name": "git-crew", "status": "connected"}])
    );
    let result = events.last().unwrap();
    assert_eq!(result["type"], "result");
    assert_eq!(result["is_error"], false, "{result}");
    assert_eq!(result["permission_denials"], serde_json::json!([]));

    // The tools as Claude Code offers them, and the skill it loaded.
    let requests = server.requests();
    let offered: BTreeSet<&str> = requests[0]["lead"]["offered"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert!(
        ["Skill", "dispatch", "wait", "advise", "show", "integrate"]
            .iter()
            .all(|t| offered.contains(t)),
        "{offered:?}"
    );
    assert_eq!(requests[0]["lead"]["call"], "Skill");
    let skill = &requests[1]["lead"]["saw"];
    assert_eq!(skill["tool"], "Skill");
    let loaded = skill["beside"].to_string();
    let shipped = read(&repo.join(".claude/skills/git-crew/SKILL.md"));
    let heading = shipped
        .lines()
        .find(|l| l.starts_with("# "))
        .expect("the skill's heading");
    assert!(loaded.contains(heading), "{loaded}");

    let got = received(&requests, "claude", &events);
    check_the_lead(&env, &repo, &got, result["result"].as_str().unwrap());
}

/// codex, pointed at the model server as the worker tests point it, with a catalog model:
/// it holds that model's MCP tools back behind its `tool_search`, which the lead script
/// calls (by the tool's name) for each tool it has not found yet. It is started outside
/// the repository, which `-C` names: the project, its trust and the server's folder.
fn codex_lead(env: &TestEnv, bin: &Path, server: &ModelServer, repo: &Path, home: &Path) -> Out {
    let port = server.port;
    run(
        env.command("timeout")
            .current_dir(env.root())
            .arg("240")
            .arg(bin.join("codex"))
            .args(["exec", "--json", "-C"])
            .arg(repo)
            .args(["-m", "gpt-5.5", "-c", "model_provider=mock"])
            .args(["-c", "model_providers.mock.name=mock"])
            .args([
                "-c",
                &format!("model_providers.mock.base_url=\"http://127.0.0.1:{port}/v1\""),
            ])
            .args(["-c", "model_providers.mock.wire_api=responses"])
            .args(["-c", "model_providers.mock.env_key=MOCK_API_KEY"])
            .args(["--disable", "unbounded_connection_retries"])
            .args(["-c", "model_providers.mock.request_max_retries=0"])
            .args(["-c", "model_providers.mock.stream_max_retries=0"])
            .arg(PROMPT)
            .env("MOCK_API_KEY", "dummy")
            .env("CODEX_HOME", home),
        None,
    )
}

#[test]
#[ignore = "needs the real codex and claude CLIs; .ci/run installs them and runs these with --ignored"]
fn codex_leads_through_the_shipped_agents_md_and_project_config() {
    let bin = clis();
    let env = TestEnv::new();
    assert_git_crew_is_under_test(&env);
    let server = ModelServer::start(&env);
    let repo = lead_repo(&env);

    // Not trusted, codex ignores the project's .codex/config.toml: no git-crew tool.
    let untrusted = env.root().join("codex-untrusted");
    std::fs::create_dir_all(&untrusted).unwrap();
    let out = codex_lead(&env, &bin, &server, &repo, &untrusted);
    out.expect_code(0);
    assert!(
        out.stderr
            .contains("Untrusted project-local configuration is disabled"),
        "{}",
        out.stderr
    );
    let requests = server.requests();
    assert!(!requests.is_empty());
    assert!(requests.iter().all(|r| {
        r["lead"]["offered"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t == "tool_search")
    }));
    let events = stream(&out);
    assert!(events.iter().all(|e| e["item"]["type"] != "mcp_tool_call"));
    assert!(
        events.iter().any(|e| e["item"]["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("The dispatch tool is not on offer."))),
        "{}",
        out.stdout
    );
    let seen = requests.len();

    // Trusted as `codex exec --trust` records it: the shipped [mcp_servers.git-crew].
    let home = env.root().join("codex-lead");
    let trusted = repo.canonicalize().unwrap();
    write(
        &home.join("config.toml"),
        &format!(
            "[projects.\"{}\"]\ntrust_level = \"trusted\"\n",
            trusted.display()
        ),
    );
    let out = codex_lead(&env, &bin, &server, &repo, &home);
    out.expect_code(0);
    let events = stream(&out);
    assert!(
        events.iter().any(|e| e["type"] == "turn.completed"),
        "{}",
        out.stdout
    );
    let final_text = events
        .iter()
        .rev()
        .find(|e| e["type"] == "item.completed" && e["item"]["type"] == "agent_message")
        .map(|e| e["item"]["text"].as_str().unwrap().to_string())
        .expect("a final message");

    // The AGENTS.md section was in every request, and the tools were found by search.
    let requests: Vec<Value> = server.requests().split_off(seen);
    assert!(requests.iter().all(|r| r["lead"]["guide"] == true));
    let searched: BTreeSet<&str> = requests
        .iter()
        .filter_map(|r| r["lead"]["searched"].as_str())
        .collect();
    assert!(searched.contains("dispatch"), "{searched:?}");
    let got = received(&requests, "codex", &events);
    check_the_lead(&env, &repo, &got, &final_text);
}
