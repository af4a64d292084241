//! The command contract shared by every command: output format, error envelope, exit
//! codes, `-C`, `--version`, `--help`.

use crate::common::{TestEnv, write};

#[test]
fn version_and_help_exit_zero() {
    let env = TestEnv::new();
    let out = env.crew(env.root(), &["--version"]);
    out.expect_code(0);
    assert_eq!(
        out.stdout,
        format!("git-crew {}\n", env!("CARGO_PKG_VERSION"))
    );
    let out = env.crew(env.root(), &["--help"]);
    out.expect_code(0);
    assert!(out.stdout.contains("Examples:"));
    assert!(out.stdout.contains("init"));
    assert!(
        out.stdout
            .contains("Exit codes: 0 ok, 1 a check said no, 2 usage or config error")
    );
    assert!(
        !out.stdout
            .lines()
            .any(|l| l.trim_start().starts_with("hook ")),
        "hidden entry points stay out of the help"
    );
    for (command, example) in [
        ("flight", "  git crew flight --explain\n"),
        ("init", "  git crew init --uninstall\n"),
        ("footer", "  git crew footer reply.md\n"),
    ] {
        let out = env.crew(env.root(), &[command, "--help"]);
        out.expect_code(0);
        assert!(out.stdout.contains("Examples:\n"), "{}", out.stdout);
        assert!(out.stdout.contains(example), "{}", out.stdout);
    }
}

#[test]
fn usage_errors_are_exit_2_in_the_envelope() {
    let env = TestEnv::new();
    let out = env.crew(env.root(), &["frobnicate"]);
    out.expect_code(2);
    let json = out.json();
    assert_eq!(json["ok"], false);
    assert_eq!(json["error"]["code"], "usage");
    assert!(
        json["error"]["message"]
            .as_str()
            .unwrap()
            .contains("frobnicate")
    );
    assert!(json["error"]["hint"].as_str().unwrap().contains("--help"));

    for args in [&[][..], &["hook"][..]] {
        let out = env.crew(env.root(), args);
        out.expect_code(2);
        assert_eq!(out.json()["error"]["message"], "a subcommand is required");
    }

    let out = env.crew(env.root(), &["flight", "--bogus", "--human"]);
    out.expect_code(2);
    assert_eq!(out.stdout, "");
    assert!(out.stderr.contains("--bogus"));
}

#[test]
fn an_unknown_command_is_a_usage_error() {
    let env = TestEnv::new();
    let out = env.crew(env.root(), &["bogus-command"]);
    out.expect_code(2);
    let message = out.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("unrecognized subcommand"), "{message}");
}

#[test]
fn minus_c_works_like_git_and_stacks() {
    let env = TestEnv::new();
    let repo = env.fixture("plain.sh", "repo", &[]);
    write(
        &repo.join(".crew/flight.toml"),
        "default_backend = \"claude\"\n",
    );
    let out = env.crew(env.root(), &["-C", "repo", "flight"]);
    out.expect_code(0);
    assert_eq!(out.json()["flight"]["default_backend"], "claude");
    let out = env.crew(env.root(), &["-C", "repo", "-C", ".crew", "flight"]);
    assert_eq!(out.json()["flight"]["default_backend"], "claude");
    let out = env.crew(env.root(), &["-C", "missing", "flight"]);
    out.expect_code(2);
    assert_eq!(out.json()["error"]["code"], "bad-directory");
}

#[test]
fn the_format_follows_flags_and_environment() {
    let env = TestEnv::new();
    let repo = env.fixture("plain.sh", "repo", &[]);
    // Not a terminal: JSON.
    assert!(
        env.crew(&repo, &["flight"])
            .stdout
            .starts_with("{\"ok\":true,")
    );
    // --human on a pipe.
    let human = env.crew(&repo, &["flight", "--human"]).stdout;
    assert!(
        human.starts_with("backends.claude.adapter = \"claude\"\n"),
        "{human}"
    );
    // GIT_CREW_FORMAT=human, and --json beats it.
    let mut cmd = env.command(crate::common::bin());
    let out = cmd
        .current_dir(&repo)
        .env("GIT_CREW_FORMAT", "human")
        .arg("flight")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), human);
    let mut cmd = env.command(crate::common::bin());
    let out = cmd
        .current_dir(&repo)
        .env("GIT_CREW_FORMAT", "human")
        .args(["flight", "--json"])
        .output()
        .unwrap();
    assert!(out.stdout.starts_with(b"{\"ok\":true,"));
}

#[test]
fn no_bad_input_is_a_bug_no_command_exits_70_or_panics() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let battery: &[&[&str]] = &[
        &[
            "dispatch", "--task", "a.lock/b", "--prompt", "x", "--scope", "src/**",
        ],
        &[
            "dispatch",
            "--task",
            "t",
            "--prompt",
            "x",
            "--scope",
            "src/**",
            "--time-budget",
            "10000years",
        ],
        &[
            "dispatch", "--task", "t", "--prompt", "x", "--scope", "src/**", "--size", "inf",
        ],
        &[
            "dispatch", "--task", "t", "--prompt", "x", "--scope", "../x/**",
        ],
        &[
            "dispatch", "--task", "t", "--prompt", "x", "--scope", "src/**", "--base", "nope",
        ],
        &[
            "dispatch",
            "--task",
            "t",
            "--prompt",
            "x",
            "--scope",
            "src/**",
            "--set",
            "backends.ok.argv=[\"/nope\"]",
        ],
        &["show", "../../../etc/passwd"],
        &["verify", "20261202-101500-1a2b"],
        &["integrate", "20261202-101500-1a2b", "--into", "main..x"],
        &[
            "should-stop",
            "--task",
            "t",
            "--model",
            "m",
            "--set",
            "fences.needs_help_after_failures=0",
        ],
        &[
            "gate",
            "record",
            "g",
            "--verdict",
            "maybe",
            "--evidence",
            "e",
        ],
        &["plan", "status", "nope"],
        &["wave", "dispatch", "1"],
        &["sync", "nowhere"],
        &["ledger", "--task", "../../x"],
        &["footer", "/nonexistent"],
    ];
    for args in battery {
        let out = env.crew(&repo, args);
        assert!(
            out.code != 70 && out.code != 101,
            "{args:?} exited {}:\n{}\n{}",
            out.code,
            out.stdout,
            out.stderr
        );
    }
    // A remote whose notes ref names a blob, not a notes commit.
    let remote = env.root().join("remote.git");
    env.git_ok(
        env.root(),
        &[
            "clone",
            "-q",
            "--bare",
            repo.to_str().unwrap(),
            remote.to_str().unwrap(),
        ],
    );
    let out = env
        .command("sh")
        .current_dir(&remote)
        .args([
            "-c",
            "git update-ref refs/notes/crew-ledger $(echo junk | git hash-object -w --stdin)",
        ])
        .output()
        .unwrap();
    assert!(out.status.success());
    env.git_ok(
        &repo,
        &["remote", "add", "origin", remote.to_str().unwrap()],
    );
    let out = env.crew(&repo, &["sync", "origin"]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert_eq!(out.json()["error"]["code"], "remote-notes-invalid");
}
