//! What a run spent, and the spend fence, with scripted workers that report their usage
//! through `$CREW_USAGE_FILE` (the real CLIs' streams are in `real_clis.rs`).

use std::path::PathBuf;

use serde_json::Value;

use crate::common::{TestEnv, write};

/// A crew repository whose flight config prices model `scripted-1` at $2 per million
/// input tokens, $0.5 cached and $8 output.
fn priced_repo(env: &TestEnv) -> PathBuf {
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let flight = repo.join(".crew/flight.toml");
    let mut text = crate::common::read(&flight);
    text.push_str("\n[prices.\"scripted-1\"]\ninput = 2\ncached_input = 0.5\noutput = 8\n");
    write(&flight, &text);
    env.git_ok(&repo, &["commit", "-qam", "prices"]);
    repo
}

fn show(env: &TestEnv, repo: &std::path::Path, run: &str) -> Value {
    env.crew(repo, &["show", run]).json()["run"].clone()
}

#[test]
fn a_priced_model_gets_the_computed_cost_and_an_unpriced_one_none() {
    let env = TestEnv::new();
    let repo = priced_repo(&env);
    let run = env
        .dispatch(&repo, "routes")
        .backend("spend")
        .scope("src/routes/**")
        .verify("true")
        .args(&["--model", "scripted-1"])
        .finished();
    let result = show(&env, &repo, &run);
    assert_eq!(result["outcome"], "pass", "{result}");
    let usage = &result["usage"];
    let attempt = &usage["attempts"][0];
    assert_eq!(attempt["attempt"], 1);
    assert_eq!(attempt["input_tokens"], 12000);
    assert_eq!(attempt["cached_input_tokens"], 2000);
    assert_eq!(attempt["output_tokens"], 800);
    assert_eq!(attempt["reasoning_tokens"], 100);
    // 10,000 fresh × $2 + 2,000 cached × $0.5 + 800 out × $8, per million: $0.0274.
    let cost = usage["total"]["cost_usd"].as_f64().unwrap();
    assert!((cost - 0.0274).abs() < 1e-12, "{cost}");
    assert_eq!(result["price"]["input"], 2.0);
    // For people: show says it, and status has a spend column.
    let human = env.crew(&repo, &["show", &run, "--human"]).stdout;
    assert!(
        human.contains("spend: 12.0k in (2000 cached), 800 out, $0.03"),
        "{human}"
    );
    let status = env.crew(&repo, &["status", "--human"]).stdout;
    assert!(status.lines().next().unwrap().contains("SPEND"), "{status}");
    assert!(status.contains("$0.03"), "{status}");

    // The ledger row and, once integrated, the run record note carry the numbers.
    let rows = env.crew(&repo, &["ledger", "--task", "routes"]).json();
    assert_eq!(rows["rows"][0]["usage"]["input_tokens"], 12000, "{rows}");
    env.crew(&repo, &["integrate", &run]).expect_code(0);
    let note = env.git_ok(&repo, &["notes", "--ref=crew", "show", "HEAD"]);
    let note: Value = serde_json::from_str(note.lines().next().unwrap()).unwrap();
    assert_eq!(note["usage"]["output_tokens"], 800, "{note}");
    assert!((note["usage"]["cost_usd"].as_f64().unwrap() - 0.0274).abs() < 1e-12);

    // Another model has no price: its tokens are recorded, its cost is unknown.
    let other = env
        .dispatch(&repo, "docs")
        .backend("spend")
        .scope("src/routes/**")
        .args(&["--model", "scripted-2"])
        .finished();
    let usage = &show(&env, &repo, &other)["usage"];
    assert_eq!(usage["total"]["input_tokens"], 12000);
    assert!(usage["total"]["cost_usd"].is_null(), "{usage}");
    let human = env.crew(&repo, &["show", &other, "--human"]).stdout;
    assert!(human.contains("unpriced"), "{human}");
}

#[test]
fn a_cost_the_worker_reports_is_taken_as_reported_and_a_false_one_is_no_figure() {
    let env = TestEnv::new();
    let repo = priced_repo(&env);
    let reported = env
        .dispatch(&repo, "routes")
        .backend("spend")
        .scope("src/routes/**")
        .args(&["--model", "scripted-1"])
        .set(r#"backends.spend.env.SPEND_USAGE={"input_tokens": 10, "output_tokens": 5, "cost_usd": 1.25}"#)
        .finished();
    assert_eq!(
        show(&env, &repo, &reported)["usage"]["total"]["cost_usd"],
        1.25
    );
    // A negative cost is no cost: the tokens are priced instead.
    let lying = env
        .dispatch(&repo, "docs")
        .backend("spend")
        .scope("src/routes/**")
        .args(&["--model", "scripted-1"])
        .set(r#"backends.spend.env.SPEND_USAGE={"input_tokens": 1000000, "cost_usd": -5}"#)
        .finished();
    assert_eq!(show(&env, &repo, &lying)["usage"]["total"]["cost_usd"], 2.0);
    // A usage file that is not the shape records nothing, and the run is not harmed.
    let garbage = env
        .dispatch(&repo, "api")
        .backend("spend")
        .scope("src/routes/**")
        .set("backends.spend.env.SPEND_USAGE=NaN tokens")
        .finished();
    let result = show(&env, &repo, &garbage);
    assert!(result["usage"].is_null(), "{result}");
    assert_eq!(result["outcome"], "pass");
}

#[test]
fn the_spend_fence_ends_a_worker_that_keeps_spending() {
    let env = TestEnv::new();
    let repo = priced_repo(&env);
    let run = env
        .dispatch(&repo, "routes")
        .backend("spend-forever")
        .scope("src/routes/**")
        .args(&["--max-tokens", "5000"])
        .finished();
    let result = show(&env, &repo, &run);
    assert_eq!(result["outcome"], "timeout", "{result}");
    assert_eq!(result["phase"], "timed-out");
    let decision = result["decision"].as_str().unwrap();
    assert!(
        decision.starts_with("the spend fence was reached: ")
            && decision.ends_with("tokens of 5000 (fences.max_tokens)"),
        "{decision}"
    );
    // Stopped at the fence, long before its 30 s budget.
    let spent = result["usage"]["total"]["input_tokens"].as_u64().unwrap();
    assert!((5000..=20_000).contains(&spent), "{spent}");
    assert!(result["elapsed_s"].as_u64().unwrap() < 25, "{result}");
    assert_eq!(result["max_tokens"], 5000);
    assert_eq!(result["attempts"], 1);

    // In dollars, from the flight config: 1,000 tokens a tick at $2 per million.
    let run = env
        .dispatch(&repo, "docs")
        .backend("spend-forever")
        .scope("docs/**")
        .args(&["--model", "scripted-1"])
        .set("fences.max_cost_usd=0.01")
        .finished();
    let result = show(&env, &repo, &run);
    let decision = result["decision"].as_str().unwrap();
    assert!(
        decision.ends_with("of $0.01 (fences.max_cost_usd)"),
        "{decision}"
    );
    assert!(result["usage"]["total"]["cost_usd"].as_f64().unwrap() >= 0.01);
}

#[test]
fn a_run_past_its_fence_starts_no_other_attempt() {
    let env = TestEnv::new();
    let repo = priced_repo(&env);
    // Each attempt spends 12,800 tokens and fails verify: continuation would try again,
    // but the fence is passed after the first.
    let run = env
        .dispatch(&repo, "routes")
        .backend("spend")
        .scope("src/routes/**")
        .verify("false")
        .args(&["--continue-until-pass", "--max-tokens", "10000"])
        .finished();
    let result = show(&env, &repo, &run);
    assert_eq!(result["attempts"], 1, "{result}");
    assert_eq!(result["outcome"], "timeout");
    assert!(
        result["decision"]
            .as_str()
            .unwrap()
            .contains("12800 tokens of 10000"),
        "{result}"
    );
    // Without the fence, continuation does try again.
    let run = env
        .dispatch(&repo, "docs")
        .backend("spend")
        .scope("src/routes/**")
        .verify("false")
        .args(&["--continue-until-pass"])
        .finished();
    let result = show(&env, &repo, &run);
    assert!(result["attempts"].as_u64().unwrap() >= 2, "{result}");
    assert_eq!(
        result["usage"]["attempts"].as_array().unwrap().len() as u64,
        result["attempts"].as_u64().unwrap()
    );
}

#[test]
fn a_bad_spend_flag_is_a_usage_error() {
    let env = TestEnv::new();
    let repo = priced_repo(&env);
    for flag in [
        ["--max-cost", "-1"],
        ["--max-tokens", "0"],
        ["--max-cost", "lots"],
    ] {
        let out = env
            .dispatch(&repo, "routes")
            .backend("spend")
            .scope("src/routes/**")
            .args(&flag)
            .run();
        out.expect_code(2);
        assert!(out.stdout.contains(flag[0]), "{}", out.stdout);
    }
}

#[test]
fn ledger_stats_give_the_cost_of_a_verified_pass_failures_included() {
    let env = TestEnv::new();
    let repo = priced_repo(&env);
    for (task, verify) in [("routes", "true"), ("docs", "false")] {
        env.dispatch(&repo, task)
            .backend("spend")
            .scope("src/routes/**")
            .verify(verify)
            .args(&["--model", "scripted-1"])
            .finished();
    }
    let stats = env.crew(&repo, &["ledger", "stats"]).json();
    let config = stats["stats"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["backend"] == "spend")
        .unwrap()
        .clone();
    let spend = &config["spend"];
    assert_eq!(spend["verified_passes"], 1, "{config}");
    assert_eq!(spend["tokens"], 25_600);
    // Two runs at $0.0274 each bought one verified pass.
    let per_pass = spend["cost_per_verified_pass_usd"].as_f64().unwrap();
    assert!((per_pass - 0.0548).abs() < 1e-12, "{per_pass}");
    let per_run = spend["cost_per_run_usd"].as_f64().unwrap();
    assert!((per_run - 0.0274).abs() < 1e-12, "{per_run}");
    let human = env.crew(&repo, &["ledger", "stats", "--human"]).stdout;
    assert!(
        human.contains("spend: 12800 tokens and $0.03 a run; 25600 tokens and $0.05 a verified pass (1 of them)"),
        "{human}"
    );
}

#[test]
fn a_usage_file_made_a_trap_stops_neither_the_budget_nor_the_supervisor() {
    let env = TestEnv::new();
    let repo = priced_repo(&env);
    // Unfenced, a worker may replace its usage file: a FIFO would block a reader, and
    // /dev/zero never ends.
    for (task, trap) in [("fifo", "fifo"), ("zero", "zero")] {
        let started = std::time::Instant::now();
        let run = env
            .dispatch(&repo, task)
            .backend("usage-trap")
            .scope(&format!("{task}/**"))
            .set("sandbox.enabled=false")
            .set(&format!("backends.usage-trap.env.TRAP={trap}"))
            .args(&["--time-budget", "3s", "--max-tokens", "10"])
            .finished();
        let result = show(&env, &repo, &run);
        assert_eq!(result["outcome"], "timeout", "{trap}: {result}");
        assert_eq!(result["decision"], "the time budget was spent", "{trap}");
        assert!(result["usage"].is_null(), "{trap}: {result}");
        let unread = match trap {
            "zero" => "the usage file (CREW_USAGE_FILE) is a symbolic link",
            _ => "the usage file (CREW_USAGE_FILE) is a FIFO",
        };
        assert!(
            result["discrepancies"]
                .as_array()
                .unwrap()
                .iter()
                .any(|d| d.as_str().unwrap().contains(unread)),
            "{trap}: {result}"
        );
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "{trap}: the supervisor was held"
        );
    }
}

#[test]
fn a_retry_keeps_the_spend_fence_and_absurd_reports_do_not_break_the_stats() {
    let env = TestEnv::new();
    let repo = priced_repo(&env);
    let run = env
        .dispatch(&repo, "routes")
        .backend("spend-forever")
        .scope("src/routes/**")
        .args(&["--max-tokens", "5000"])
        .finished();
    let out = env.crew(&repo, &["retry", &run, "--wait"]);
    let retried = out.json()["runs"][0].clone();
    assert_eq!(retried["retry_of"], run.as_str(), "{}", out.stdout);
    assert_eq!(retried["max_tokens"], 5000);
    assert!(
        retried["decision"]
            .as_str()
            .unwrap()
            .ends_with("(fences.max_tokens)"),
        "{retried}"
    );

    // Two runs that each claim every token there is: the sums saturate, never panic.
    for task in ["a", "b"] {
        env.dispatch(&repo, task)
            .backend("spend")
            .scope(&format!("{task}/**"))
            .set(r#"backends.spend.env.SPEND_USAGE={"input_tokens": 18446744073709551615, "output_tokens": 9, "cost_usd": 1e308}"#)
            .finished();
    }
    let out = env.crew(&repo, &["ledger", "stats"]);
    out.expect_code(0);
    let spend = out.json()["stats"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["backend"] == "spend")
        .unwrap()["spend"]
        .clone();
    assert_eq!(spend["tokens"], u64::MAX, "{spend}");
    assert!(spend["cost_usd"].is_null(), "{spend}");
    env.crew(&repo, &["ledger", "stats", "--human"])
        .expect_code(0);
}
