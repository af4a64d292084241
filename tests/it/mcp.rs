//! `git crew mcp`: the real binary as an MCP server over stdio, driven with JSON-RPC by a
//! client that checks every line the server writes is JSON-RPC and every tool result's
//! structured content against the tool's own output schema.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::{TestEnv, bin, poll_until, read};

/// Every tool the server offers, reads first.
const TOOLS: [&str; 16] = [
    "status",
    "show",
    "diff",
    "ledger",
    "should_stop",
    "plan_status",
    "wave_status",
    "workers",
    "dispatch",
    "wave_dispatch",
    "advise",
    "verify",
    "integrate",
    "abandon",
    "retry",
    "wait",
];

/// A client of `git crew mcp` in a repository: it sends requests on the server's stdin
/// and reads its stdout line by line on a thread of its own.
pub struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<Value>,
    next_id: u64,
    /// The notifications received so far, in order.
    pub notifications: Vec<Value>,
    /// Each tool's output schema, from `tools/list`.
    outputs: HashMap<String, Value>,
    stderr: PathBuf,
}

impl Client {
    /// Starts the server in `repo`, initializes the session and lists the tools.
    pub fn start(env: &TestEnv, repo: &Path) -> Client {
        let stderr = env
            .root()
            .join(format!("mcp-stderr-{}", std::process::id()));
        let mut child = env
            .command(bin())
            .current_dir(repo)
            .arg("mcp")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                // Nothing but the protocol: every line is a JSON-RPC message.
                let message: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
                    panic!("the server wrote a line that is not JSON ({e}): {line}")
                });
                assert_eq!(message["jsonrpc"], "2.0", "{line}");
                if tx.send(message).is_err() {
                    return;
                }
            }
        });
        let mut client = Client {
            stdin: child.stdin.take(),
            child,
            lines,
            next_id: 0,
            notifications: Vec::new(),
            outputs: HashMap::new(),
            stderr,
        };
        let init = client.request(
            "initialize",
            json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "git-crew-test", "version": "1"},
            }),
        );
        assert_eq!(init["result"]["serverInfo"]["name"], "git-crew", "{init}");
        client.notify("notifications/initialized", json!({}));
        let tools = client.request("tools/list", json!({}));
        for tool in tools["result"]["tools"].as_array().unwrap() {
            client.outputs.insert(
                tool["name"].as_str().unwrap().to_string(),
                tool["outputSchema"].clone(),
            );
        }
        client
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().expect("the session is open");
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    pub fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}));
    }

    /// Sends a request and returns its response (`result` or `error`), keeping the
    /// notifications that came before it.
    pub fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let message = self.next(deadline, method);
            if message["id"] == id {
                return message;
            }
            self.notifications.push(message);
        }
    }

    fn next(&mut self, deadline: Instant, waiting_for: &str) -> Value {
        let left = deadline.saturating_duration_since(Instant::now());
        self.lines.recv_timeout(left).unwrap_or_else(|e| {
            panic!(
                "no answer to {waiting_for} ({e}); the server said on stderr:\n{}",
                std::fs::read_to_string(&self.stderr).unwrap_or_default()
            )
        })
    }

    /// Calls a tool; returns its result after checking that the structured content
    /// validates against the tool's output schema and is what the text content says.
    pub fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let response = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        let result = response
            .get("result")
            .unwrap_or_else(|| panic!("{tool}: a protocol error, not a tool result: {response}"))
            .clone();
        let structured = &result["structuredContent"];
        let text = result["content"][0]["text"].as_str().unwrap();
        assert_eq!(
            &serde_json::from_str::<Value>(text).unwrap(),
            structured,
            "{tool}: the text is not the structured content"
        );
        let schema = &self.outputs[tool];
        let validator = jsonschema::validator_for(schema).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(structured)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{tool}: the structured content does not match the output schema: {errors:?}\n{structured}"
        );
        assert_eq!(
            result["isError"],
            structured["ok"] == false,
            "{tool}: isError is not `ok: false`: {result}"
        );
        result
    }

    /// The structured content of a tool call that succeeded.
    pub fn ok(&mut self, tool: &str, arguments: Value) -> Value {
        let result = self.call(tool, arguments);
        assert_eq!(result["isError"], false, "{tool}: {result}");
        result["structuredContent"].clone()
    }

    /// Waits (at most `timeout`) for a notification `matches` takes.
    pub fn notification(&mut self, timeout: Duration, matches: impl Fn(&Value) -> bool) -> Value {
        if let Some(found) = self.notifications.iter().find(|n| matches(n)) {
            return found.clone();
        }
        let deadline = Instant::now() + timeout;
        loop {
            let message = self.next(deadline, "a notification");
            self.notifications.push(message.clone());
            if matches(&message) {
                return message;
            }
        }
    }

    /// Closes the server's stdin and waits for it to exit; its exit status.
    pub fn close(mut self) -> i32 {
        drop(self.stdin.take());
        let start = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code().unwrap_or(-1);
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "the server did not exit when its client went"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The CLI's JSON of `args` in `repo`.
fn cli(env: &TestEnv, repo: &Path, args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.push("--json");
    env.crew(repo, &args).json()
}

#[test]
fn every_tool_is_listed_with_an_input_and_an_output_schema() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let mut client = Client::start(&env, &repo);
    let listed = client.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, TOOLS);
    for tool in tools {
        let name = &tool["name"];
        assert!(!tool["description"].as_str().unwrap().is_empty(), "{name}");
        for key in ["inputSchema", "outputSchema"] {
            assert_eq!(tool[key]["type"], "object", "{name} {key}");
            jsonschema::validator_for(&tool[key]).unwrap_or_else(|e| panic!("{name} {key}: {e}"));
        }
        let read_only = tool["annotations"]["readOnlyHint"] == true;
        let reads = [
            "status",
            "show",
            "diff",
            "ledger",
            "plan_status",
            "wave_status",
            "workers",
        ];
        assert_eq!(read_only, reads.contains(&name.as_str().unwrap()), "{name}");
    }
    // The capabilities a lead relies on.
    let init = client.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "again", "version": "1"}}),
    );
    let capabilities = &init["result"]["capabilities"];
    assert_eq!(capabilities["resources"]["subscribe"], true, "{init}");
    // An empty repository: the status of no runs, as the CLI prints it.
    assert_eq!(
        client.ok("status", json!({})),
        cli(&env, &repo, &["status"])
    );
    assert_eq!(client.close(), 0);
}

#[test]
fn a_run_dispatched_through_the_server_is_waited_for_shown_and_integrated() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let mut client = Client::start(&env, &repo);
    let dispatched = client.ok(
        "dispatch",
        json!({
            "task": "routes",
            "prompt": "Add the routes.",
            "scope": ["src/routes/**"],
            "verify": "test -f src/routes/routes.rs",
            "backend": "slow",
            "set": ["backends.slow.env.SLOW_SECONDS=\"3\""],
        }),
    );
    let run = dispatched["run"].as_str().unwrap().to_string();
    assert_eq!(dispatched["task"], "routes");
    let uri = format!("crew://runs/{run}");
    let subscribed = client.request("resources/subscribe", json!({"uri": uri}));
    assert!(subscribed.get("result").is_some(), "{subscribed}");
    // The run is a resource, listed and read as `show` prints it.
    let listed = client.request("resources/list", json!({}));
    let uris: Vec<&str> = listed["result"]["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(uris, ["crew://runs", uri.as_str()]);

    let waited = client.ok("wait", json!({"runs": [run], "timeout": "50s"}));
    assert_eq!(waited["timed_out"], false, "{waited}");
    assert_eq!(waited["runs"][0]["outcome"], "pass", "{waited}");
    assert_eq!(waited["runs"][0]["footer"]["result"], "Done slowly.");
    // Its phase changed while the client was subscribed: it heard.
    client.notification(Duration::from_secs(20), |n| {
        n["method"] == "notifications/resources/updated" && n["params"]["uri"] == uri.as_str()
    });

    let shown = client.ok("show", json!({"run": run}));
    assert_eq!(shown, cli(&env, &repo, &["show", &run]));
    let read = client.request("resources/read", json!({"uri": uri}));
    let contents = &read["result"]["contents"][0];
    assert_eq!(contents["mimeType"], "application/json");
    let text: Value = serde_json::from_str(contents["text"].as_str().unwrap()).unwrap();
    assert_eq!(text, shown);
    let diff = client.ok("diff", json!({"run": run, "form": "name-status"}));
    assert_eq!(diff, cli(&env, &repo, &["diff", &run, "--name-status"]));

    let integrated = client.ok("integrate", json!({"run": run}));
    assert_eq!(integrated["run"], run.as_str());
    assert_eq!(integrated["into"], "main");
    let landed = env.git_ok(&repo, &["show", "main:src/routes/routes.rs"]);
    assert_eq!(landed.trim(), format!("slow {run}"));
    env.assert_landed_in_scope(&repo, &run, &integrated.to_string());
    // Integrated, as the record says and the CLI shows it.
    let shown = client.ok("show", json!({"run": run}));
    assert_eq!(shown["run"]["integration"]["commit"], integrated["commit"]);
    assert_eq!(shown, cli(&env, &repo, &["show", &run]));
    // The ledger tells both: the attempt and the integration.
    let ledger = client.ok("ledger", json!({"task": "routes"}));
    assert_eq!(ledger, cli(&env, &repo, &["ledger", "--task", "routes"]));
    assert_eq!(ledger["rows"].as_array().unwrap().len(), 2, "{ledger}");
    assert_eq!(client.close(), 0);
}

#[test]
fn a_refusal_is_a_tool_error_carrying_the_clis_code_message_and_hint() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let mut client = Client::start(&env, &repo);
    let refused = client.call("show", json!({"run": "nope"}));
    assert_eq!(refused["isError"], true);
    let json = &refused["structuredContent"];
    assert_eq!(json["error"]["code"], "run-not-found");
    assert!(
        !json["error"]["hint"].as_str().unwrap().is_empty(),
        "{json}"
    );
    let out = env.crew(&repo, &["show", "nope", "--json"]);
    out.expect_code(3);
    assert_eq!(json, &out.json());

    // A second dispatch of a task with a live run: refused by state, as the CLI refuses it.
    let first = client.ok(
        "dispatch",
        json!({"task": "api", "prompt": "x", "scope": ["src/api/**"], "backend": "hang"}),
    );
    let again = client.call(
        "dispatch",
        json!({"task": "api", "prompt": "x", "scope": ["src/api/**"], "backend": "hang"}),
    );
    assert_eq!(
        again["structuredContent"]["error"]["code"], "dispatch-refused",
        "{again}"
    );
    // A wait that runs out is no error: the lead hears which runs still work.
    let run = first["run"].as_str().unwrap();
    let waited = client.ok("wait", json!({"runs": [run], "timeout": "1s"}));
    assert_eq!(waited["timed_out"], true);
    assert_eq!(waited["still_working"][0]["run"], run);
    let abandoned = client.ok("abandon", json!({"run": run}));
    assert_eq!(abandoned["run"]["phase"], "abandoned", "{abandoned}");

    // Arguments the tool does not take, or of the wrong type: usage errors, still
    // tool results.
    for (tool, args) in [
        ("show", json!({"run": "nope", "verbose": true})),
        ("show", json!({})),
        ("wait", json!({"runs": []})),
        ("status", json!({"recent": "many"})),
        ("show", json!({"run": "../etc"})),
    ] {
        let refused = client.call(tool, args.clone());
        assert_eq!(
            refused["structuredContent"]["error"]["code"], "usage",
            "{tool} {args}: {refused}"
        );
    }
    // An unknown tool is the one protocol error.
    let unknown = client.request("tools/call", json!({"name": "rm", "arguments": {}}));
    assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
    assert_eq!(client.close(), 0);
}

#[test]
fn a_run_dispatched_through_the_server_outlives_it() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let mut client = Client::start(&env, &repo);
    let dispatched = client.ok(
        "dispatch",
        json!({"task": "routes", "prompt": "x", "scope": ["src/routes/**"], "backend": "slow"}),
    );
    let run = dispatched["run"].as_str().unwrap().to_string();
    let live = repo.join(format!(".git/crew/live/{run}.json"));
    let pid = client.pid();
    std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    poll_until(Duration::from_secs(10), "the server to die", || {
        crate::dispatch::pid_gone(&pid.to_string())
    });
    drop(client);
    // Still working when its server died (the worker takes two seconds).
    assert!(live.exists(), "the run ended before the server died");
    let (out, result) = env.wait(&repo, &run).result();
    out.expect_code(0);
    assert_eq!(result["outcome"], "pass", "{result}");
    let written = read(&repo.join(format!(".git/crew/worktrees/{run}/src/routes/routes.rs")));
    assert_eq!(written.trim(), format!("slow {run}"));
}

#[test]
fn a_subscriber_to_the_list_hears_of_a_new_run_and_an_unsubscribed_one_does_not() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let mut client = Client::start(&env, &repo);
    client.request("resources/subscribe", json!({"uri": "crew://runs"}));
    // Dispatched from the command line: the server hears it through the filesystem.
    let run = env
        .dispatch(&repo, "routes")
        .backend("ok")
        .scope("src/routes/**")
        .finished();
    client.notification(Duration::from_secs(20), |n| {
        n["method"] == "notifications/resources/updated" && n["params"]["uri"] == "crew://runs"
    });
    client.notification(Duration::from_secs(20), |n| {
        n["method"] == "notifications/resources/list_changed"
    });
    let runs = client.request("resources/read", json!({"uri": "crew://runs"}));
    let text: Value =
        serde_json::from_str(runs["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(text["runs"][0]["run"], run.as_str());
    let templates = client.request("resources/templates/list", json!({}));
    assert_eq!(
        templates["result"]["resourceTemplates"][0]["uriTemplate"],
        "crew://runs/{run}"
    );
    // A run that is not there: the protocol's resource-not-found, with the CLI's error.
    let missing = client.request("resources/read", json!({"uri": "crew://runs/nope"}));
    assert_eq!(missing["error"]["code"], -32002, "{missing}");
    assert_eq!(missing["error"]["data"]["error"]["code"], "run-not-found");

    client.request("resources/unsubscribe", json!({"uri": "crew://runs"}));
    let heard = client.notifications.len();
    env.dispatch(&repo, "api")
        .backend("ok")
        .scope("src/api/**")
        .finished();
    // A request after the run ended: any notification would have come before its answer.
    std::thread::sleep(Duration::from_millis(500));
    client.request("ping", json!({}));
    let updates: Vec<&Value> = client.notifications[heard..]
        .iter()
        .filter(|n| n["method"] == "notifications/resources/updated")
        .collect();
    assert!(updates.is_empty(), "{updates:?}");
    assert_eq!(client.close(), 0);
}

#[test]
fn a_question_is_answered_a_run_verified_and_retried_and_a_wave_planned_through_the_server() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    crate::common::write(
        &repo.join(".crew/plans/v1.toml"),
        "[plan]\nid = \"v1\"\n\n[[tasks]]\nid = \"docs\"\nwave = 1\nscope = [\"docs/**\"]\nprompt = \"x\"\n",
    );
    env.git_ok(&repo, &["add", ".crew"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "a plan"]);
    let mut client = Client::start(&env, &repo);
    // What would start, started by nothing.
    let planned = client.ok(
        "dispatch",
        json!({"task": "store", "prompt": "x", "scope": ["src/routes/**"], "backend": "help-then-work", "dry_run": true}),
    );
    assert_eq!(planned["dry_run"], true, "{planned}");
    let waved = client.ok("wave_dispatch", json!({"wave": 1, "dry_run": true}));
    assert_eq!(waved["planned"][0]["task"], "docs", "{waved}");
    assert_eq!(
        waved,
        cli(&env, &repo, &["wave", "dispatch", "1", "--dry-run"])
    );

    let run = client.ok(
        "dispatch",
        json!({"task": "store", "prompt": "x", "scope": ["src/routes/**"], "backend": "help-then-work", "verify": "test -f src/routes/store.rs"}),
    )["run"]
        .as_str()
        .unwrap()
        .to_string();
    // A question is no error: the lead answers it.
    let asked = client.ok("wait", json!({"runs": [run]}));
    assert_eq!(asked["runs"][0]["phase"], "needs-help", "{asked}");
    assert_eq!(asked["runs"][0]["needs_help"]["leaning"], "sqlite");
    let advised = client.ok("advise", json!({"run": run, "text": "Use sqlite."}));
    assert_eq!(advised["run"], run.as_str());
    let done = client.ok("wait", json!({"runs": [run]}));
    assert_eq!(done["runs"][0]["outcome"], "pass", "{done}");
    let verified = client.ok("verify", json!({"run": run}));
    assert_eq!(verified["verify"]["passed"], true, "{verified}");
    // A verify that fails is a check that said no: a tool error with the run's verdict.
    let failed = client.call("verify", json!({"run": run, "command": "false"}));
    assert_eq!(failed["isError"], true);
    assert_eq!(
        failed["structuredContent"]["error"]["code"],
        "verify-failed"
    );
    assert_eq!(failed["structuredContent"]["verify"]["passed"], false);
    let retried = client.ok("retry", json!({"run": run, "dry_run": true}));
    assert_eq!(retried["retry_of"], run.as_str(), "{retried}");
    assert_eq!(client.close(), 0);
}

#[test]
fn every_pass_is_integrated_in_the_forecasts_order_through_the_server() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    // Two passes that touch different files (the slow worker writes src/routes/<task>.rs).
    let quick = [
        "--scope",
        "src/routes/**",
        "--verify",
        "true",
        "--set",
        "backends.slow.env.SLOW_SECONDS=\"0\"",
    ];
    let first = env.finished_run(&repo, "a", "slow", &quick);
    let second = env.finished_run(&repo, "b", "slow", &quick);
    let mut client = Client::start(&env, &repo);
    let both = client.call("integrate", json!({"run": first, "all": true}));
    assert_eq!(
        both["structuredContent"]["error"]["code"], "usage",
        "{both}"
    );
    let planned = client.ok("integrate", json!({"all": true, "dry_run": true}));
    assert_eq!(
        planned,
        cli(&env, &repo, &["integrate", "--all", "--dry-run"])
    );
    let all = client.ok("integrate", json!({"all": true}));
    let landed: Vec<&str> = all["landed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["run"].as_str().unwrap())
        .collect();
    assert_eq!(landed, [first.as_str(), second.as_str()], "{all}");
    assert!(all["left"].as_array().unwrap().is_empty(), "{all}");
    for run in [&first, &second] {
        let shown = client.ok("show", json!({"run": run}));
        assert!(shown["run"]["integration"].is_object(), "{shown}");
    }
    assert_eq!(client.close(), 0);
}

#[test]
fn a_server_that_cannot_start_says_why_on_stderr_and_nothing_on_stdout() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let outside = env.root().join("tmp");
    for (dir, args, code, said) in [
        (&outside, vec!["mcp"], 2, "not a git repository"),
        (&repo, vec!["mcp", "--http", "0.0.0.0:0"], 2, "loopback"),
    ] {
        let out = env.crew(dir, &args);
        assert_eq!(out.code, code, "{args:?}: {out:?}");
        assert!(out.stdout.is_empty(), "{args:?}: {}", out.stdout);
        assert!(out.stderr.contains(said), "{args:?}: {}", out.stderr);
    }
}

/// The supported scenarios of the official conformance suite, over Streamable HTTP.
/// `.ci/run` installs `@modelcontextprotocol/conformance` beside the real CLIs.
#[test]
#[ignore = "needs npx @modelcontextprotocol/conformance (installed by .ci/run)"]
fn the_server_passes_every_conformance_scenario_it_supports() {
    let conformance = crate::real_clis::clis_dir().join("conformance");
    assert!(
        conformance.exists(),
        "{} is not installed (run .ci/run, or npm install --prefix ~/.cache/git-crew/clis @modelcontextprotocol/conformance@0.1.13)",
        conformance.display()
    );
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let stderr = env.root().join("mcp-http-stderr");
    let mut server = env
        .command(bin())
        .current_dir(&repo)
        .args(["mcp", "--http", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let url = crate::common::poll_for(Duration::from_secs(20), "the server's URL", || {
        let said = std::fs::read_to_string(&stderr).unwrap_or_default();
        said.split_whitespace()
            .find(|w| w.starts_with("http://127.0.0.1:"))
            .map(String::from)
    });
    let mut failed = Vec::new();
    for scenario in SCENARIOS {
        let out = crate::common::run(
            std::process::Command::new(&conformance)
                .current_dir(env.root())
                .env("PATH", std::env::var_os("PATH").unwrap_or_default())
                .args(["server", "--url", &url, "--scenario", scenario]),
            None,
        );
        let passed = out.code == 0 && out.stdout.contains(" 0 failed");
        if !passed {
            failed.push(format!("{scenario}:\n{}{}", out.stdout, out.stderr));
        }
    }
    let _ = server.kill();
    let _ = server.wait();
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
}

/// The server scenarios of `@modelcontextprotocol/conformance` 0.1.13 git-crew supports
/// (README.md names the others and why).
const SCENARIOS: [&str; 10] = [
    "server-initialize",
    "ping",
    "logging-set-level",
    "tools-list",
    "resources-list",
    "resources-subscribe",
    "resources-unsubscribe",
    "server-sse-multiple-streams",
    "server-sse-polling",
    "dns-rebinding-protection",
];
