//! The error boundary: an I/O or environment failure underneath is its own kind
//! (`io-error`, exit 74) with the causes that name it, and the errors git-crew decides
//! keep their codes and exits.

use crate::common::TestEnv;

/// A file where git-crew's state folder should be: init cannot read or write anything
/// under it. That is the system refusing, not a bug in git-crew: exit 74, with the
/// cause underneath named in JSON and for people.
#[test]
fn a_failure_of_the_filesystem_is_an_io_error_with_its_causes() {
    let env = TestEnv::new();
    let repo = env.fixture("plain.sh", "repo", &[]);
    let state = repo.join(".git/crew");
    let _ = std::fs::remove_dir_all(&state);
    std::fs::write(&state, "not a folder\n").unwrap();

    let out = env.crew(&repo, &["init", "--json"]);
    out.expect_code(74);
    let json = out.json();
    assert_eq!(json["ok"], false);
    let error = &json["error"];
    assert_eq!(error["code"], "io-error", "{json}");
    assert!(
        error["message"].as_str().unwrap().contains(".git/crew/"),
        "the message says what git-crew was doing: {json}"
    );
    let causes: Vec<&str> = error["causes"]
        .as_array()
        .expect("an io-error carries its causes")
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert!(
        causes.last().is_some_and(|c| c.contains("Not a directory")),
        "the failure at the bottom is named: {json}"
    );
    assert!(
        !error["hint"].as_str().unwrap().contains("bug"),
        "not reported as a bug: {json}"
    );

    let out = env.crew(&repo, &["init", "--human"]);
    out.expect_code(74);
    assert_eq!(out.stdout, "");
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert!(lines[0].starts_with("error: "), "{}", out.stderr);
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("caused by: ") && l.contains("Not a directory")),
        "{}",
        out.stderr
    );
    assert!(
        lines.last().unwrap().starts_with("hint: "),
        "{}",
        out.stderr
    );
    // Nothing was written where the folder should be.
    assert_eq!(std::fs::read_to_string(&state).unwrap(), "not a folder\n");
}

/// An error git-crew decides itself keeps its code, its exit and its hint, and has no
/// causes to report.
#[test]
fn a_usage_error_keeps_its_code_exit_and_hint() {
    let env = TestEnv::new();
    let out = env.crew(env.root(), &["status", "--json"]);
    out.expect_code(2);
    assert_eq!(
        out.json()["error"],
        serde_json::json!({
            "code": "not-a-repository",
            "message": out.json()["error"]["message"],
            "hint": "run git crew inside a git repository, or pass -C <path>",
        })
    );
    assert!(out.json()["error"].get("causes").is_none());

    let repo = env.fixture("plain.sh", "repo", &[]);
    let out = env.crew(&repo, &["prune", "--older-than", "soon", "--json"]);
    out.expect_code(2);
    let json = out.json();
    assert_eq!(json["error"]["code"], "bad-duration", "{json}");
    assert_eq!(json["error"]["hint"], "give a duration such as 12h or 7d");
    assert!(json["error"].get("causes").is_none());

    let out = env.crew(&repo, &["prune", "--older-than", "soon", "--human"]);
    out.expect_code(2);
    assert!(!out.stderr.contains("caused by"), "{}", out.stderr);
}
