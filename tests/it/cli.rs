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
        &["retry", "20261202-101500-1a2b", "--text", ""],
        &["retry", "routes", "--backend", "nope"],
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

#[test]
fn what_a_command_is_given_that_it_cannot_take_is_exit_2_never_a_bug() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let fifo = env.root().join("fifo");
    let made = env.command("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    let big = env.root().join("big.md");
    write(&big, &"x".repeat((1 << 20) + 1));
    let huge = env.root().join("huge.md");
    write(&huge, &"y\n".repeat((4 << 20) + 1));
    let (fifo, big, huge) = (
        fifo.to_str().unwrap(),
        big.to_str().unwrap(),
        huge.to_str().unwrap(),
    );
    let dispatch = |extra: &[&'static str]| {
        let mut args = vec!["dispatch", "--task", "t", "--scope", "src/**"];
        args.extend_from_slice(extra);
        args
    };
    let cases: Vec<(Vec<&str>, &str, &str)> = vec![
        (
            vec![
                "dispatch", "--task", "t", "--prompt", "x", "--scope", "x\nb/**",
            ],
            "scope-invalid",
            "it holds a line break",
        ),
        (
            vec![
                "dispatch",
                "--task",
                "t",
                "--prompt",
                "x",
                "--scope",
                "src/\u{1b}[2K**",
            ],
            "scope-invalid",
            "control character U+001B",
        ),
        (
            dispatch(&["--prompt-file", "/dev/zero"]),
            "not-a-file",
            "/dev/zero: it is a character device, not a regular file",
        ),
        (
            dispatch(&["--prompt-file", "/"]),
            "not-a-file",
            "it is a directory",
        ),
        (
            [dispatch(&[]), vec!["--prompt-file", fifo]].concat(),
            "not-a-file",
            "it is a FIFO",
        ),
        (
            [dispatch(&[]), vec!["--prompt-file", big]].concat(),
            "file-too-large",
            "holds more than 1 MiB (1048576 bytes)",
        ),
        (
            dispatch(&["--prompt-file", "/proc/self/mem"]),
            "file-unreadable",
            "cannot read the prompt file /proc/self/mem",
        ),
        (vec!["footer", "/"], "not-a-file", "it is a directory"),
        (vec!["footer", "src"], "not-a-file", "it is a directory"),
        (
            vec!["footer", "/dev/zero"],
            "not-a-file",
            "a character device",
        ),
        (vec!["footer", fifo], "not-a-file", "it is a FIFO"),
        (
            vec!["footer", "/proc/self/mem"],
            "file-unreadable",
            "cannot read the reply /proc/self/mem",
        ),
        (
            vec!["footer", huge],
            "file-too-large",
            "holds more than 8 MiB (8388608 bytes)",
        ),
    ];
    for (args, code, words) in cases {
        // A command that waited on what it was given would hang: `timeout` ends it.
        let mut cmd = env.command("timeout");
        cmd.current_dir(&repo)
            .arg("20")
            .arg(crate::common::bin())
            .args(&args);
        let out = crate::common::run(&mut cmd, None);
        assert_eq!(out.code, 2, "{args:?}:\n{}\n{}", out.stdout, out.stderr);
        let error = &out.json()["error"];
        assert_eq!(error["code"], code, "{args:?}: {error}");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains(words), "{args:?}: {message}");
        assert!(!error["hint"].as_str().unwrap().is_empty(), "{args:?}");
    }
    // Standard input is held to the same cap as a reply file, and nothing was dispatched.
    let out = env.crew_stdin(&repo, &["footer"], "z".repeat((8 << 20) + 1).as_bytes());
    out.expect_code(2);
    assert_eq!(out.json()["error"]["code"], "file-too-large");
    let status = env.crew(&repo, &["status"]);
    assert_eq!(
        status.json()["runs"],
        serde_json::json!([]),
        "{}",
        status.stdout
    );
    assert_eq!(env.git_ok(&repo, &["branch", "--list", "crew/*"]), "");
    // A native run's reply file is held to the same cap and kinds.
    let run = env.crew(
        &repo,
        &[
            "dispatch",
            "--task",
            "n",
            "--backend",
            "native",
            "--prompt",
            "x",
            "--scope",
            "n/**",
        ],
    );
    run.expect_code(0);
    let run = run.json()["run"].as_str().unwrap().to_string();
    for (file, code) in [("/dev/zero", "not-a-file"), (huge, "file-too-large")] {
        let out = env.crew(&repo, &["deliver", &run, "--reply-file", file]);
        out.expect_code(2);
        assert_eq!(out.json()["error"]["code"], code, "{}", out.stdout);
    }
    env.crew(&repo, &["abandon", &run]).expect_code(0);
}

/// Whether `man` is on this machine (the manual-page test needs it).
fn has_man() -> bool {
    std::process::Command::new("man")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn installed_man_pages_serve_git_help_and_every_command_has_one() {
    let env = TestEnv::new();
    let man = env.root().join("man");
    let out = env.crew(env.root(), &["install-man-pages", man.to_str().unwrap()]);
    out.expect_code(0);
    let pages = out.json()["pages"].clone();
    let pages: Vec<&str> = pages
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    // Every visible command of `git crew --help` has its page.
    let help = env.crew(env.root(), &["help"]).stdout;
    let commands: Vec<&str> = help
        .split("Commands:")
        .nth(1)
        .unwrap()
        .split("\n\n")
        .next()
        .unwrap()
        .lines()
        // A command starts its line; its description may wrap onto deeper ones.
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .map(|c| c.trim_end_matches(','))
        .filter(|c| *c != "help")
        .collect();
    assert!(commands.len() > 20, "{help}");
    for command in commands {
        let page = format!("git-crew-{command}.1");
        assert!(pages.contains(&page.as_str()), "{page} missing: {pages:?}");
        assert!(man.join("man1").join(&page).is_file());
    }
    if !has_man() {
        eprintln!("man is not installed: the pages are written, not read");
        return;
    }
    // git's own help finds them, as it finds git's pages.
    for args in [&["crew", "--help"][..], &["help", "crew"][..]] {
        let out = run_with(
            env.command("git")
                .current_dir(env.root())
                .args(args)
                .env("MANPATH", &man)
                .env("MANPAGER", "cat")
                .env("PAGER", "cat"),
        );
        assert_eq!(out.0, 0, "git {args:?}: {}", out.1);
        assert!(out.1.contains("git-crew"), "git {args:?}: {}", out.1);
        assert!(out.1.contains("dispatch"), "git {args:?}: {}", out.1);
    }
}

fn run_with(cmd: &mut std::process::Command) -> (i32, String) {
    let out = cmd.output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr),
    )
}

#[test]
fn completions_are_scripts_even_when_piped() {
    let env = TestEnv::new();
    for (shell, marker) in [
        ("bash", "-F _clap_complete_git_crew git-crew"),
        ("zsh", "#compdef git-crew"),
        ("fish", "--command git-crew"),
    ] {
        let out = env.crew(env.root(), &["completions", shell]);
        out.expect_code(0);
        assert!(out.stdout.contains(marker), "{shell}: {}", out.stdout);
        assert!(out.stdout.contains("GIT_CREW_COMPLETE"), "{shell}");
        assert!(
            !out.stdout.starts_with("{\"ok\""),
            "{shell}: wrapped in JSON"
        );
    }
    let out = env.crew(env.root(), &["completions", "bash", "--json"]);
    assert!(out.json()["text"].as_str().unwrap().contains("_git_crew()"));
    env.crew(env.root(), &["completions", "tcsh-nope"])
        .expect_code(2);
}

#[test]
fn a_mistyped_command_or_flag_gets_clap_s_suggestion_as_its_hint() {
    let env = TestEnv::new();
    let out = env.crew(env.root(), &["statsu", "--json"]);
    out.expect_code(2);
    let hint = out.json()["error"]["hint"].as_str().unwrap().to_string();
    assert!(hint.starts_with("did you mean `status`?"), "{hint}");
    let out = env.crew(env.root(), &["status", "--alll", "--json"]);
    out.expect_code(2);
    let hint = out.json()["error"]["hint"].as_str().unwrap().to_string();
    assert!(hint.starts_with("did you mean `--all`?"), "{hint}");
    // An error that names no next step of its own still gets its kind's.
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let out = env.crew(&repo, &["show", "nope"]);
    out.expect_code(3);
    assert!(!out.json()["error"]["hint"].as_str().unwrap().is_empty());
}
