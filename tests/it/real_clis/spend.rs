//! What the real CLIs spent, as git-crew records it: the scripted model server reports
//! the token counts each test chooses, the way the real APIs do, and every figure
//! git-crew files is checked against what the CLI's own stream said (the run's
//! transcript), computed here by hand.

use std::path::Path;
use std::time::Instant;

use serde_json::{Value, json};

use super::{ModelServer, clis, repo_with_real_backends_and, wait};
use crate::common::TestEnv;

/// Token counts: every input token, the part of them read from a cache, every output
/// token, the part of them spent reasoning.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
struct Tokens {
    input: u64,
    cached: u64,
    output: u64,
    reasoning: u64,
}

fn n(v: &Value) -> u64 {
    v.as_u64()
        .unwrap_or_else(|| panic!("not a token count: {v}"))
}

impl Tokens {
    /// As git-crew filed them (an attempt's usage, or the total).
    fn recorded(u: &Value) -> Tokens {
        Tokens {
            input: n(&u["input_tokens"]),
            cached: n(&u["cached_input_tokens"]),
            output: n(&u["output_tokens"]),
            reasoning: n(&u["reasoning_tokens"]),
        }
    }

    /// codex's `turn.completed.usage`.
    fn codex(u: &Value) -> Tokens {
        Tokens {
            input: n(&u["input_tokens"]),
            cached: n(&u["cached_input_tokens"]),
            output: n(&u["output_tokens"]),
            reasoning: n(&u["reasoning_output_tokens"]),
        }
    }

    /// claude's usage object: its `input_tokens` are the uncached part only.
    fn claude(u: &Value) -> Tokens {
        Tokens {
            input: n(&u["input_tokens"])
                + n(&u["cache_creation_input_tokens"])
                + n(&u["cache_read_input_tokens"]),
            cached: n(&u["cache_read_input_tokens"]),
            output: n(&u["output_tokens"]),
            reasoning: 0,
        }
    }

    /// What the model server reported for these requests, added up.
    fn served(requests: &[&Value]) -> Tokens {
        requests.iter().fold(Tokens::default(), |sum, r| {
            let u = &r["usage"];
            sum.plus(Tokens {
                input: n(&u["input"]),
                cached: n(&u["cached"]),
                output: n(&u["output"]),
                reasoning: n(&u["reasoning"]),
            })
        })
    }

    fn plus(self, o: Tokens) -> Tokens {
        Tokens {
            input: self.input + o.input,
            cached: self.cached + o.cached,
            output: self.output + o.output,
            reasoning: self.reasoning + o.reasoning,
        }
    }

    fn minus(self, o: Tokens) -> Tokens {
        Tokens {
            input: self.input - o.input,
            cached: self.cached - o.cached,
            output: self.output - o.output,
            reasoning: self.reasoning - o.reasoning,
        }
    }
}

/// The JSON events each attempt printed on stdout, read back from the run's transcript:
/// element 0 is attempt 1.
fn streams(env: &TestEnv, repo: &Path, run: &str) -> Vec<Vec<Value>> {
    let out = env.crew(repo, &["transcript", run]);
    out.expect_code(0);
    let mut attempts: Vec<Vec<Value>> = Vec::new();
    let mut in_stdout = false;
    for line in out.stdout.lines() {
        if let Some(rest) = line.strip_prefix("===== git-crew run ") {
            let n: usize = rest
                .split(" attempt ")
                .nth(1)
                .and_then(|s| s.split(' ').next())
                .and_then(|s| s.parse().ok())
                .unwrap_or_else(|| panic!("an attempt header without its number: {line}"));
            assert_eq!(n, attempts.len() + 1, "attempts in order: {line}");
            attempts.push(Vec::new());
            in_stdout = false;
        } else if line == "----- stdout -----" {
            in_stdout = true;
        } else if line.starts_with("----- ") {
            in_stdout = false;
        } else if in_stdout
            && let Ok(event) = serde_json::from_str::<Value>(line)
            && event.is_object()
        {
            attempts
                .last_mut()
                .expect("output after an attempt header")
                .push(event);
        }
    }
    attempts
}

/// The last event of a type in one attempt's stream.
fn last_of<'a>(stream: &'a [Value], kind: &str) -> &'a Value {
    stream
        .iter()
        .rev()
        .find(|e| e["type"] == kind)
        .unwrap_or_else(|| panic!("no {kind} event in {stream:?}"))
}

fn usage_of(run: &Value) -> Value {
    run["usage"].clone()
}

fn dispatch(env: &TestEnv, repo: &Path, args: &[&str]) -> String {
    let out = env.crew(repo, &[&["dispatch"], args].concat());
    out.expect_code(0);
    out.json()["run"].as_str().unwrap().to_string()
}

const CODEX_PRICE: &str =
    "\n[prices.\"gpt-5.5\"]\ninput = 1.25\ncached_input = 0.125\noutput = 10\n";

/// Dollars for `t` at CODEX_PRICE, by hand: uncached input, cached input, output.
fn codex_cost(t: Tokens) -> f64 {
    ((t.input - t.cached) as f64 * 1.25 + t.cached as f64 * 0.125 + t.output as f64 * 10.0)
        / 1_000_000.0
}

fn assert_cost(recorded: &Value, expected: f64) {
    let cost = recorded
        .as_f64()
        .unwrap_or_else(|| panic!("no cost recorded: {recorded}"));
    assert!(
        (cost - expected).abs() < 1e-12,
        "cost {cost}, computed {expected}"
    );
}

#[test]
#[ignore = "needs the real codex and claude CLIs; .ci/run installs them and runs these with --ignored"]
fn codex_resumed_after_advice_spent_the_threads_total_less_what_came_before() {
    let bin = clis();
    let env = TestEnv::new();
    let server = ModelServer::start(&env);
    server.report_usage(json!({
        "help": {"input": 5000, "cached": 1000, "output": 300, "reasoning": 120},
        "*": {"input": 7000, "cached": 4000, "output": 200, "reasoning": 50},
    }));
    let repo = repo_with_real_backends_and(&env, &bin, &server, "");
    let run = dispatch(
        &env,
        &repo,
        &[
            "--task",
            "store",
            "--backend",
            "codex",
            "--scope",
            "src/**",
            "--prompt",
            "Pick a store. [[mock:help]]",
        ],
    );
    let (out, first) = wait(&env, &repo, &run);
    out.expect_code(5);
    assert_eq!(first["phase"], "needs-help", "{first}");
    let session = first["session"].as_str().unwrap().to_string();
    let streams_1 = streams(&env, &repo, &run);
    assert_eq!(streams_1.len(), 1);
    let total_1 = Tokens::codex(&last_of(&streams_1[0], "turn.completed")["usage"]);
    // The stream carried what the model server reported.
    let requests = server.requests();
    let help: Vec<&Value> = requests.iter().filter(|r| r["answer"] == "help").collect();
    assert_eq!(help.len(), requests.len(), "{requests:?}");
    assert_eq!(total_1, Tokens::served(&help));
    let usage = usage_of(&first);
    assert_eq!(usage["attempts"].as_array().unwrap().len(), 1, "{usage}");
    assert_eq!(usage["attempts"][0]["attempt"], 1);
    assert_eq!(Tokens::recorded(&usage["attempts"][0]), total_1);
    assert_eq!(Tokens::recorded(&usage["total"]), total_1);

    env.crew(&repo, &["advise", &run, "--text", "Use sqlite."])
        .expect_code(0);
    let (out, done) = wait(&env, &repo, &run);
    out.expect_code(0);
    assert_eq!(done["outcome"], "pass", "{done}");
    assert_eq!(done["session"], session.as_str());
    assert_eq!(done["attempts"], 2, "{done}");
    let streams_2 = streams(&env, &repo, &run);
    assert_eq!(streams_2.len(), 2);
    let total_2 = Tokens::codex(&last_of(&streams_2[1], "turn.completed")["usage"]);
    // codex carried its total over the resume: attempt 2's stream says both turns.
    let requests = server.requests();
    let all: Vec<&Value> = requests.iter().collect();
    assert_eq!(total_2, Tokens::served(&all));
    assert_eq!(total_2, total_1.plus(Tokens::served(&all[help.len()..])));

    let usage = usage_of(&done);
    let attempts = usage["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2, "{usage}");
    assert_eq!(
        (
            attempts[0]["attempt"].clone(),
            attempts[1]["attempt"].clone()
        ),
        (json!(1), json!(2))
    );
    assert_eq!(Tokens::recorded(&attempts[0]), total_1);
    // Attempt 2 spent the thread's total after the resume less its total before it.
    assert_eq!(Tokens::recorded(&attempts[1]), total_2.minus(total_1));
    assert_eq!(
        Tokens::recorded(&attempts[1]),
        Tokens {
            input: 7000,
            cached: 4000,
            output: 200,
            reasoning: 50
        }
    );
    assert_eq!(Tokens::recorded(&usage["total"]), total_2);
    assert_eq!(usage["thread"]["session"], session.as_str());
    assert_eq!(Tokens::recorded(&usage["thread"]), total_2);
    // No price for gpt-5.5 here: unpriced, never a made-up cost.
    assert_eq!(done["price"], Value::Null);
    for u in [&attempts[0], &attempts[1], &usage["total"]] {
        assert!(u["cost_usd"].is_null(), "{u}");
    }
    // `show` files the same figures; where it says what a run spent, it says unpriced.
    let shown = env.crew(&repo, &["show", &run, "--json"]);
    shown.expect_code(0);
    assert_eq!(shown.json()["run"]["usage"], usage);
    let human = env.crew(&repo, &["show", &run, "--human"]).stdout;
    if let Some(line) = human.lines().find(|l| l.trim_start().starts_with("spend:")) {
        assert!(line.contains("unpriced"), "{human}");
        assert!(!line.contains('$'), "{human}");
    }
}

#[test]
#[ignore = "needs the real codex and claude CLIs; .ci/run installs them and runs these with --ignored"]
fn a_priced_codex_model_gets_the_cost_of_the_tokens_of_every_request_of_its_turn() {
    let bin = clis();
    let env = TestEnv::new();
    let server = ModelServer::start(&env);
    // Two requests in the turn (the tool call, then the answer after its result), each
    // with its own figures: codex adds them up.
    server.report_usage(json!({
        "write": {"input": 12000, "cached": 4000, "output": 500, "reasoning": 200},
        "tool_result": {"input": 15000, "cached": 11000, "output": 800, "reasoning": 300},
    }));
    let repo = repo_with_real_backends_and(&env, &bin, &server, CODEX_PRICE);
    let run = dispatch(
        &env,
        &repo,
        &[
            "--task",
            "hello",
            "--backend",
            "codex",
            "--scope",
            "hello.txt",
            "--prompt",
            "Please [[mock:write hello.txt]]",
        ],
    );
    let (out, result) = wait(&env, &repo, &run);
    out.expect_code(0);
    assert_eq!(result["outcome"], "pass", "{result}");
    let streams = streams(&env, &repo, &run);
    assert_eq!(streams.len(), 1);
    let total = Tokens::codex(&last_of(&streams[0], "turn.completed")["usage"]);
    let requests = server.requests();
    let answers: Vec<&Value> = requests.iter().map(|r| &r["answer"]).collect();
    assert_eq!(answers, [&json!("write"), &json!("tool_result")]);
    assert_eq!(
        total,
        Tokens::served(&requests.iter().collect::<Vec<_>>()),
        "the stream carried the sum of the turn's requests"
    );
    assert_eq!(
        total,
        Tokens {
            input: 27000,
            cached: 15000,
            output: 1300,
            reasoning: 500
        }
    );
    let usage = usage_of(&result);
    assert_eq!(Tokens::recorded(&usage["attempts"][0]), total);
    assert_eq!(Tokens::recorded(&usage["total"]), total);
    assert_eq!(
        result["price"],
        json!({"input": 1.25, "cached_input": 0.125, "output": 10.0})
    );
    // 12000 uncached × $1.25 + 15000 cached × $0.125 + 1300 out × $10, per million.
    assert_cost(&usage["attempts"][0]["cost_usd"], codex_cost(total));
    assert_cost(&usage["attempts"][0]["cost_usd"], 0.029875);
    assert_cost(&usage["total"]["cost_usd"], 0.029875);
}

#[test]
#[ignore = "needs the real codex and claude CLIs; .ci/run installs them and runs these with --ignored"]
fn claude_spent_what_its_result_says_and_its_cost_is_taken_as_reported() {
    let bin = clis();
    let env = TestEnv::new();
    let server = ModelServer::start(&env);
    server.report_usage(json!({
        "write": {"input": 9000, "cached": 3000, "cache_write": 2000, "output": 400},
        "tool_result": {"input": 11000, "cached": 8000, "cache_write": 500, "output": 600},
    }));
    // A price for the model that would give another cost: the CLI's own figure wins.
    let repo = repo_with_real_backends_and(
        &env,
        &bin,
        &server,
        "\n[prices.sonnet]\ninput = 100\ncached_input = 100\noutput = 100\n",
    );
    let run = dispatch(
        &env,
        &repo,
        &[
            "--task",
            "hello",
            "--backend",
            "claude",
            "--scope",
            "hello.txt",
            "--prompt",
            "Please [[mock:write hello.txt]]",
        ],
    );
    let (out, result) = wait(&env, &repo, &run);
    out.expect_code(0);
    assert_eq!(result["outcome"], "pass", "{result}");
    let streams = streams(&env, &repo, &run);
    assert_eq!(streams.len(), 1);
    let last = last_of(&streams[0], "result");
    let spent = Tokens::claude(&last["usage"]);
    let requests = server.requests();
    assert_eq!(
        spent,
        Tokens::served(&requests.iter().collect::<Vec<_>>()),
        "the stream carried the sum of the invocation's requests: {requests:?}"
    );
    assert_eq!(
        spent,
        Tokens {
            input: 20000,
            cached: 11000,
            output: 1000,
            reasoning: 0
        }
    );
    let reported = last["total_cost_usd"]
        .as_f64()
        .expect("claude reports a cost");
    assert!(reported > 0.0);
    let usage = usage_of(&result);
    assert_eq!(usage["attempts"].as_array().unwrap().len(), 1, "{usage}");
    assert_eq!(Tokens::recorded(&usage["attempts"][0]), spent);
    assert_eq!(Tokens::recorded(&usage["total"]), spent);
    assert_eq!(usage["attempts"][0]["cost_usd"].as_f64(), Some(reported));
    assert_eq!(usage["total"]["cost_usd"].as_f64(), Some(reported));
    // The configured price was there, and would have said $2.10.
    assert_eq!(result["price"]["input"], 100.0);
    assert!((reported - 2.1).abs() > 0.1, "{reported}");
}

#[test]
#[ignore = "needs the real codex and claude CLIs; .ci/run installs them and runs these with --ignored"]
fn the_spend_fence_stops_claude_in_the_middle_and_no_attempt_follows() {
    let bin = clis();
    let env = TestEnv::new();
    let server = ModelServer::start(&env);
    // The first request alone is past the fence. Its tool call is held back half a
    // minute after the text that carries its usage, so the fence stops the CLI before
    // the tool runs (a kill in the middle of a write could leave a temporary file
    // outside the scope, which would make the run a scope-reject). The answer after the
    // tool call is held back a minute, so a CLI still running then would finish and say
    // `result`.
    server.report_usage(json!({
        "write": {"input": 20000, "cached": 5000, "cache_write": 3000, "output": 400, "hold": 30},
        "tool_result": {"input": 21000, "output": 300, "delay": 60},
    }));
    let repo = repo_with_real_backends_and(&env, &bin, &server, "");
    let started = Instant::now();
    let run = dispatch(
        &env,
        &repo,
        &[
            "--task",
            "hello",
            "--backend",
            "claude",
            "--scope",
            "hello.txt",
            "--prompt",
            "Please [[mock:write hello.txt]]",
            "--verify",
            "false",
            "--continue-until-pass",
            "--max-tokens",
            "10000",
        ],
    );
    let (_, result) = wait(&env, &repo, &run);
    assert!(
        started.elapsed().as_secs() < 55,
        "the attempt was not stopped before the CLI went on: {:?}",
        started.elapsed()
    );
    assert_eq!(result["outcome"], "timeout", "{result}");
    assert_eq!(result["phase"], "timed-out", "{result}");
    assert_eq!(result["attempts"], 1, "{result}");
    assert_eq!(result["max_tokens"], 10000);
    // Stopped before its tool ran: nothing was written.
    let worktree = std::path::Path::new(result["worktree"].as_str().unwrap());
    let written: Vec<_> = std::fs::read_dir(worktree)
        .expect("a timed-out run keeps its worktree")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(
        !written
            .iter()
            .any(|n| n.to_string_lossy().starts_with("hello.txt")),
        "{written:?}"
    );
    let streams = streams(&env, &repo, &run);
    assert_eq!(streams.len(), 1);
    assert!(
        !streams[0].iter().any(|e| e["type"] == "result"),
        "the CLI finished: {:?}",
        streams[0]
    );
    // What its messages said as they began: counted once per message.
    let mut messages: Vec<(String, Tokens)> = Vec::new();
    for event in streams[0].iter().filter(|e| e["type"] == "assistant") {
        let id = event["message"]["id"].as_str().unwrap().to_string();
        let seen = Tokens::claude(&event["message"]["usage"]);
        match messages.iter_mut().find(|(m, _)| *m == id) {
            Some((_, t)) => assert_eq!(*t, seen, "one message, one usage"),
            None => messages.push((id, seen)),
        }
    }
    assert_eq!(messages.len(), 1, "{messages:?}");
    let spent = messages[0].1;
    assert_eq!(
        (spent.input, spent.cached),
        (20000, 5000),
        "the message began with the first request's input"
    );
    let usage = usage_of(&result);
    assert_eq!(usage["attempts"].as_array().unwrap().len(), 1, "{usage}");
    assert_eq!(Tokens::recorded(&usage["attempts"][0]), spent);
    assert!(usage["attempts"][0]["cost_usd"].is_null(), "{usage}");
    assert_eq!(
        result["decision"],
        format!(
            "the spend fence was reached: {} tokens of 10000 (fences.max_tokens)",
            spent.input + spent.output
        )
    );
}

#[test]
#[ignore = "needs the real codex and claude CLIs; .ci/run installs them and runs these with --ignored"]
fn a_codex_run_at_its_spend_fence_after_an_attempt_is_judged_and_starts_no_other() {
    let bin = clis();
    let env = TestEnv::new();
    let server = ModelServer::start(&env);
    server.report_usage(json!({
        "*": {"input": 8000, "cached": 2000, "output": 123, "reasoning": 40},
    }));
    // Failing verifies alone would go on to the fifth attempt.
    let repo = repo_with_real_backends_and(
        &env,
        &bin,
        &server,
        &format!("{CODEX_PRICE}\n[fences]\nneeds_help_after_failures = 5\n"),
    );
    let each = Tokens {
        input: 8000,
        cached: 2000,
        output: 123,
        reasoning: 40,
    };
    // Dispatches a run and waits for it; checks that `attempts` attempts ran, each
    // resuming the thread and spending `each`.
    let fenced = |task: &str, verify: &str, fence: &[&str], attempts: usize| {
        let before = server.requests().len();
        let run = dispatch(
            &env,
            &repo,
            &[
                &[
                    "--task",
                    task,
                    "--backend",
                    "codex",
                    "--scope",
                    "src/**",
                    "--prompt",
                    "Report. [[mock:footer]]",
                    "--verify",
                    verify,
                    "--continue-until-pass",
                ][..],
                fence,
            ]
            .concat(),
        );
        let (_, result) = wait(&env, &repo, &run);
        assert_eq!(result["attempts"], attempts, "{result}");
        assert_eq!(
            server.requests().len() - before,
            attempts,
            "one model request per attempt"
        );
        let streams = streams(&env, &repo, &run);
        assert_eq!(streams.len(), attempts, "{result}");
        let usage = usage_of(&result);
        assert_eq!(usage["attempts"].as_array().unwrap().len(), attempts);
        let mut thread = Tokens::default();
        for (i, stream) in streams.iter().enumerate() {
            let total = Tokens::codex(&last_of(stream, "turn.completed")["usage"]);
            let spent = total.minus(thread);
            thread = total;
            assert_eq!(spent, each, "attempt {}", i + 1);
            assert_eq!(usage["attempts"][i]["attempt"], i + 1);
            assert_eq!(Tokens::recorded(&usage["attempts"][i]), spent);
            assert_cost(&usage["attempts"][i]["cost_usd"], codex_cost(spent));
        }
        assert_eq!(Tokens::recorded(&usage["total"]), thread);
        (result, thread)
    };

    let timed_out = |result: &Value| {
        assert_eq!(result["outcome"], "timeout", "{result}");
        assert_eq!(result["phase"], "timed-out", "{result}");
    };
    // A verify that fails: the run would go on, but the fence holds the next attempt.
    let (result, spent) = fenced("tokens", "false", &["--max-tokens", "5000"], 1);
    timed_out(&result);
    assert_eq!(
        result["decision"],
        format!(
            "the spend fence was reached: {} tokens of 5000 (fences.max_tokens)",
            spent.input + spent.output
        )
    );
    // Exactly at the limit is reaching it; one token short of it is not.
    let (result, _) = fenced("at", "false", &["--max-tokens", "8123"], 1);
    timed_out(&result);
    assert_eq!(
        result["decision"],
        "the spend fence was reached: 8123 tokens of 8123 (fences.max_tokens)"
    );
    let (result, _) = fenced("short", "false", &["--max-tokens", "8124"], 2);
    timed_out(&result);
    assert_eq!(
        result["decision"],
        "the spend fence was reached: 16246 tokens of 8124 (fences.max_tokens)"
    );
    // 6000 × $1.25 + 2000 × $0.125 + 123 × $10 per million: $0.00898.
    let (result, spent) = fenced("dollars", "false", &["--max-cost", "0.005"], 1);
    timed_out(&result);
    assert_eq!(
        result["decision"],
        format!(
            "the spend fence was reached: ${:.4} of $0.0050 (fences.max_cost_usd)",
            codex_cost(spent)
        )
    );
    assert_eq!(result["max_cost_usd"], 0.005);
    // A turn that ends past the fence ended by itself: its work is judged as any other,
    // and passes.
    let (result, _) = fenced("passes", "true", &["--max-tokens", "5000"], 1);
    assert_eq!(result["outcome"], "pass", "{result}");
    assert_eq!(result["verify"]["passed"], true, "{result}");
}

#[test]
#[ignore = "needs the real codex and claude CLIs; .ci/run installs them and runs these with --ignored"]
fn a_standing_codex_workers_next_run_spent_only_its_own_turn_of_the_thread() {
    let bin = clis();
    let env = TestEnv::new();
    let server = ModelServer::start(&env);
    server.report_usage(json!({
        "footer": {"input": 3000, "cached": 500, "output": 90, "reasoning": 30},
        "*": {"input": 4000, "cached": 2500, "output": 70, "reasoning": 10},
    }));
    let repo = repo_with_real_backends_and(
        &env,
        &bin,
        &server,
        "\n[workers.mem]\nbackend = \"codex\"\n",
    );
    let mut runs = Vec::new();
    for (task, marker) in [("one", "[[mock:footer]]"), ("two", "")] {
        let run = dispatch(
            &env,
            &repo,
            &[
                "--task",
                task,
                "--worker",
                "mem",
                "--scope",
                &format!("{task}/**"),
                "--prompt",
                &format!("Report. {marker}"),
            ],
        );
        let (out, result) = wait(&env, &repo, &run);
        out.expect_code(0);
        assert_eq!(result["outcome"], "pass", "{result}");
        runs.push((run, result));
    }
    let (run_1, first) = &runs[0];
    let (run_2, second) = &runs[1];
    assert_eq!(
        second["session"], first["session"],
        "the worker's thread went on"
    );
    let total_1 =
        Tokens::codex(&last_of(&streams(&env, &repo, run_1)[0], "turn.completed")["usage"]);
    let total_2 =
        Tokens::codex(&last_of(&streams(&env, &repo, run_2)[0], "turn.completed")["usage"]);
    let requests = server.requests();
    let answers: Vec<&Value> = requests.iter().map(|r| &r["answer"]).collect();
    assert_eq!(answers, [&json!("footer"), &json!("default")]);
    assert_eq!(total_1, Tokens::served(&[&requests[0]]));
    // codex's total for the thread runs on from the first run into the second.
    assert_eq!(total_2, total_1.plus(Tokens::served(&[&requests[1]])));
    assert_eq!(Tokens::recorded(&usage_of(first)["total"]), total_1);
    assert_eq!(
        Tokens::recorded(&usage_of(second)["total"]),
        total_2.minus(total_1)
    );
    assert_eq!(Tokens::recorded(&usage_of(second)["thread"]), total_2);
}

#[test]
#[ignore = "needs the real codex and claude CLIs; .ci/run installs them and runs these with --ignored"]
fn claude_resumed_after_advice_spent_what_its_second_invocation_says() {
    let bin = clis();
    let env = TestEnv::new();
    let server = ModelServer::start(&env);
    server.report_usage(json!({
        "help": {"input": 6000, "cached": 1000, "cache_write": 4000, "output": 300},
        "*": {"input": 9000, "cached": 7000, "cache_write": 1000, "output": 200},
    }));
    let repo = repo_with_real_backends_and(&env, &bin, &server, "");
    let run = dispatch(
        &env,
        &repo,
        &[
            "--task",
            "store",
            "--backend",
            "claude",
            "--scope",
            "src/**",
            "--prompt",
            "Pick a store. [[mock:help]]",
        ],
    );
    let (out, first) = wait(&env, &repo, &run);
    out.expect_code(5);
    assert_eq!(first["phase"], "needs-help", "{first}");
    env.crew(&repo, &["advise", &run, "--text", "Use sqlite."])
        .expect_code(0);
    let (out, done) = wait(&env, &repo, &run);
    out.expect_code(0);
    assert_eq!(done["outcome"], "pass", "{done}");
    assert_eq!(done["session"], first["session"]);
    let streams = streams(&env, &repo, &run);
    assert_eq!(streams.len(), 2);
    let results: Vec<&Value> = streams.iter().map(|s| last_of(s, "result")).collect();
    let spent: Vec<Tokens> = results
        .iter()
        .map(|r| Tokens::claude(&r["usage"]))
        .collect();
    let requests = server.requests();
    let answers: Vec<&Value> = requests.iter().map(|r| &r["answer"]).collect();
    assert_eq!(answers, [&json!("help"), &json!("default")]);
    // Each invocation's result says what that invocation spent, not the session's total.
    assert_eq!(spent[0], Tokens::served(&[&requests[0]]));
    assert_eq!(spent[1], Tokens::served(&[&requests[1]]));
    let usage = usage_of(&done);
    let attempts = usage["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 2, "{usage}");
    let mut cost = 0.0;
    for (i, attempt) in attempts.iter().enumerate() {
        assert_eq!(attempt["attempt"], i + 1);
        assert_eq!(Tokens::recorded(attempt), spent[i], "attempt {}", i + 1);
        let reported = results[i]["total_cost_usd"].as_f64().unwrap();
        assert_eq!(attempt["cost_usd"].as_f64(), Some(reported));
        cost += reported;
    }
    assert_eq!(Tokens::recorded(&usage["total"]), spent[0].plus(spent[1]));
    assert_cost(&usage["total"]["cost_usd"], cost);
    assert!(
        usage["thread"].is_null(),
        "a claude session has no thread total: {usage}"
    );
}
