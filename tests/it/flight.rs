//! `git crew flight`: the four layers from real files and flags, provenance, and every
//! class of configuration error.

use crate::common::{TestEnv, write};

#[test]
fn the_four_layers_merge_key_by_key_with_provenance() {
    let env = TestEnv::new();
    let repo = env.fixture("plain.sh", "repo", &[]);
    write(
        &env.home().join(".config/git-crew/flight.toml"),
        "[backends.codex]\nmodel = \"user-model\"\neffort = \"low\"\n",
    );
    write(
        &repo.join(".crew/flight.toml"),
        "version = 1\n[backends.codex]\neffort = \"medium\"\n",
    );
    let out = env.crew(
        &repo,
        &[
            "flight",
            "--explain",
            "--set",
            "gates.enforce=warn",
            "--concurrency",
            "5",
        ],
    );
    out.expect_code(0);
    let json = out.json();
    let codex = &json["flight"]["backends"]["codex"];
    assert_eq!(codex["model"], "user-model");
    assert_eq!(codex["effort"], "medium");
    assert_eq!(codex["concurrency"], 5);
    assert_eq!(codex["time_budget"], "25m");
    assert_eq!(json["flight"]["gates"]["enforce"], "warn");
    let sources = &json["sources"];
    assert_eq!(sources["backends.codex.model"], "user");
    assert_eq!(sources["backends.codex.effort"], "project");
    assert_eq!(sources["backends.codex.concurrency"], "invocation");
    assert_eq!(sources["gates.enforce"], "invocation");
    assert_eq!(sources["backends.codex.time_budget"], "default");
    assert_eq!(sources["version"], "project");
}

#[test]
fn xdg_config_home_wins_over_home() {
    let env = TestEnv::new();
    let repo = env.fixture("plain.sh", "repo", &[]);
    write(
        &env.home().join(".config/git-crew/flight.toml"),
        "default_backend = \"native\"\n",
    );
    let xdg = env.root().join("xdg");
    write(
        &xdg.join("git-crew/flight.toml"),
        "default_backend = \"claude\"\n",
    );
    let mut cmd = env.command(crate::common::bin());
    let out = cmd
        .current_dir(&repo)
        .env("XDG_CONFIG_HOME", &xdg)
        .args(["flight", "--json"])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["flight"]["default_backend"], "claude");
    let out = env.crew(&repo, &["flight"]);
    assert_eq!(out.json()["flight"]["default_backend"], "native");
}

#[test]
fn the_backend_flag_routes_the_other_flags() {
    let env = TestEnv::new();
    let repo = env.fixture("plain.sh", "repo", &[]);
    let out = env.crew(
        &repo,
        &[
            "flight",
            "--backend",
            "claude",
            "--model",
            "m2",
            "--effort",
            "high",
            "--time-budget",
            "40m",
        ],
    );
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["flight"]["default_backend"], "claude");
    assert_eq!(json["flight"]["backends"]["claude"]["model"], "m2");
    assert_eq!(json["flight"]["backends"]["claude"]["effort"], "high");
    assert_eq!(json["flight"]["backends"]["claude"]["time_budget"], "40m");
    assert_eq!(json["flight"]["backends"]["codex"]["model"], "gpt-5.6-sol");
    assert!(json.get("sources").is_none());
}

#[test]
fn explain_in_human_form_names_layer_and_location() {
    let env = TestEnv::new();
    let repo = env.fixture("plain.sh", "repo", &[]);
    write(
        &repo.join(".crew/flight.toml"),
        "[fences]\ntime_budget = \"40m\"\n",
    );
    let out = env.crew(&repo, &["flight", "--explain", "--human"]);
    out.expect_code(0);
    let stdout = env.redact(&out.stdout);
    assert!(
        stdout.contains(
            "fences.time_budget = \"40m\"    # project ([TMP]/repo/.crew/flight.toml:2:1)\n"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("default_backend = \"codex\"    # default\n"),
        "{stdout}"
    );
}

#[test]
fn a_malformed_file_is_exit_2_with_its_location() {
    let env = TestEnv::new();
    let repo = env.fixture("plain.sh", "repo", &[]);
    write(
        &repo.join(".crew/flight.toml"),
        "version = 1\n[backends.codex\nmodel = 1\n",
    );
    let out = env.crew(&repo, &["flight", "--human"]);
    out.expect_code(2);
    let stderr = env.redact(&out.stderr);
    assert!(
        stderr.starts_with("error: flight config has 1 problem\n  [TMP]/repo/.crew/flight.toml:2:"),
        "{stderr}"
    );
    assert!(stderr.contains("malformed TOML"), "{stderr}");
    assert!(
        stderr.contains("hint: `git crew flight schema`"),
        "{stderr}"
    );
    assert_eq!(out.stdout, "");
}

#[test]
fn unknown_keys_wrong_types_and_bad_references_are_all_reported() {
    let env = TestEnv::new();
    let repo = env.fixture("plain.sh", "repo", &[]);
    write(
        &repo.join(".crew/flight.toml"),
        "default_backend = \"codx\"\n[backends.codex]\nmodle = \"x\"\nconcurrency = \"3\"\n[gates]\nenforce = \"strickt\"\n",
    );
    let out = env.crew(&repo, &["flight"]);
    out.expect_code(2);
    let json = out.json();
    assert_eq!(json["ok"], false);
    assert_eq!(json["error"]["code"], "config-invalid");
    let details: Vec<String> = json["error"]["details"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| env.redact(d.as_str().unwrap()))
        .collect();
    let p = "[TMP]/repo/.crew/flight.toml";
    assert_eq!(details.len(), 3, "{details:#?}");
    assert_eq!(
        details[0],
        format!("{p}:4:15: `backends.codex.concurrency`: expected an integer, found string")
    );
    assert!(
        details[1].starts_with(&format!("{p}:3:1: `backends.codex.modle`: unknown key")),
        "{details:#?}"
    );
    assert!(details[1].ends_with("(did you mean `backends.codex.model`?)"));
    assert_eq!(
        details[2],
        format!(
            "{p}:6:11: `gates.enforce`: `strickt` is not one of strict, warn, off (did you mean `strict`?)"
        )
    );

    // Once the types are right, references between keys are checked.
    write(
        &repo.join(".crew/flight.toml"),
        "default_backend = \"codx\"\n",
    );
    let out = env.crew(&repo, &["flight"]);
    out.expect_code(2);
    let detail = env.redact(out.json()["error"]["details"][0].as_str().unwrap());
    assert_eq!(
        detail,
        format!(
            "{p}:1:1: `default_backend`: unknown backend `codx` (known: claude, codex, native) (did you mean `codex`?)"
        )
    );
}

#[test]
fn a_bad_user_layer_is_reported_against_its_own_file() {
    let env = TestEnv::new();
    let repo = env.fixture("plain.sh", "repo", &[]);
    write(
        &env.home().join(".config/git-crew/flight.toml"),
        "tiers = [1]\n",
    );
    let out = env.crew(&repo, &["flight"]);
    out.expect_code(2);
    let detail = env.redact(out.json()["error"]["details"][0].as_str().unwrap());
    assert_eq!(
        detail,
        "[TMP]/home/.config/git-crew/flight.toml:1:10: `tiers[0]`: expected a string, found integer"
    );
}

#[test]
fn invocation_errors_name_the_flag() {
    let env = TestEnv::new();
    let repo = env.fixture("plain.sh", "repo", &[]);
    let out = env.crew(
        &repo,
        &[
            "flight",
            "--set",
            "fences.time_budgte=5m",
            "--time-budget",
            "soon",
        ],
    );
    out.expect_code(2);
    let details = out.json()["error"]["details"].clone();
    assert!(
        details[0]
            .as_str()
            .unwrap()
            .starts_with("--set fences.time_budgte=5m: `fences.time_budgte`: unknown key")
    );
    assert!(
        details[1].as_str().unwrap().starts_with(
            "--time-budget soon: `backends.codex.time_budget`: `soon` is not a duration"
        )
    );
}

#[test]
fn the_schema_is_json_schema_for_every_key() {
    let env = TestEnv::new();
    let out = env.crew(env.root(), &["flight", "schema"]);
    out.expect_code(0);
    // A pure JSON Schema document, with no envelope.
    let schema = out.json();
    assert!(schema.get("ok").is_none(), "{schema}");
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft-07/schema#"
    );
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["additionalProperties"], false);
    let backend = &schema["properties"]["backends"]["additionalProperties"];
    assert_eq!(
        backend["properties"]["adapter"]["enum"],
        serde_json::json!(["codex", "claude", "command", "native"])
    );
    assert_eq!(backend["properties"]["concurrency"]["type"], "integer");
    assert!(schema["properties"]["roles"]["properties"]["review"].is_object());
}

#[test]
fn flight_works_outside_a_repository_with_the_user_layer() {
    let env = TestEnv::new();
    write(
        &env.home().join(".config/git-crew/flight.toml"),
        "default_backend = \"claude\"\n",
    );
    let out = env.crew(env.root(), &["flight", "--explain"]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["flight"]["default_backend"], "claude");
    assert_eq!(json["sources"]["default_backend"], "user");
}
