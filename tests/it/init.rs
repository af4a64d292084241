//! `git crew init` and `init --uninstall` on real repositories.

use std::os::unix::fs::PermissionsExt;

use crate::common::{TestEnv, read, write};

fn local_config(env: &TestEnv, dir: &std::path::Path, key: &str) -> Vec<String> {
    env.git(dir, &["config", "--local", "--get-all", key])
        .stdout
        .lines()
        .map(str::to_string)
        .collect()
}

#[test]
fn init_on_a_plain_repository_installs_everything() {
    let env = TestEnv::new();
    let repo = env.fixture("plain.sh", "repo", &[]);
    let out = env.crew(&repo, &["init"]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["ok"], true);
    assert_eq!(json["hooks"][0]["name"], "pre-commit");
    assert_eq!(json["hooks"][0]["action"], "created");
    assert_eq!(json["hooks"][1]["name"], "post-merge");
    assert_eq!(json["hooks"][2]["name"], "post-commit");
    assert_eq!(json["hooks"][2]["action"], "created");
    assert_eq!(json["flight"]["action"], "created");

    for hook in ["pre-commit", "post-merge", "post-commit"] {
        let path = repo.join(".git/hooks").join(hook);
        let text = read(&path);
        assert!(
            text.starts_with("#!/bin/sh\n# >>> git-crew >>>\n"),
            "{text}"
        );
        assert!(text.contains(&format!("git-crew hook {hook} \"$@\"")));
        assert!(text.trim_end().ends_with("# <<< git-crew <<<"));
        assert_ne!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o111,
            0
        );
    }
    assert_eq!(
        local_config(&env, &repo, "extensions.worktreeConfig"),
        ["true"]
    );
    // A pattern that matches refs/notes/crew alone: git warns of no missing ref.
    assert_eq!(
        local_config(&env, &repo, "notes.displayRef"),
        ["refs/notes/cre[w]"]
    );
    assert_eq!(
        local_config(&env, &repo, "notes.rewriteRef"),
        ["refs/notes/cre[w]"]
    );
    assert_eq!(
        local_config(&env, &repo, "index.recordEndOfIndexEntries"),
        ["true"]
    );
    assert!(read(&repo.join(".git/hooks/pre-commit")).contains("git-crew-hook pre-commit \"$@\""));
    let flight = read(&repo.join(".crew/flight.toml"));
    assert!(flight.starts_with("# git-crew flight control"));

    // The local state folder stays out of git: only the committed config shows up.
    let status = env.git_ok(&repo, &["status", "--porcelain", "--untracked-files=all"]);
    assert_eq!(status, "?? .crew/flight.toml\n");
    // And the starter config resolves cleanly.
    env.crew(&repo, &["flight"]).expect_code(0);
}

#[test]
fn init_twice_changes_nothing_the_second_time() {
    let env = TestEnv::new();
    let repo = env.fixture("existing-hook.sh", "repo", &[]);
    env.crew(&repo, &["init"]).expect_code(0);
    let snapshot = || {
        (
            read(&repo.join(".git/hooks/pre-commit")),
            read(&repo.join(".git/hooks/post-merge")),
            read(&repo.join(".git/hooks/post-commit")),
            read(&repo.join(".git/config")),
            read(&repo.join(".crew/flight.toml")),
        )
    };
    let first = snapshot();
    let out = env.crew(&repo, &["init"]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["hooks"][0]["action"], "unchanged");
    assert_eq!(json["hooks"][1]["action"], "unchanged");
    assert_eq!(json["hooks"][2]["action"], "unchanged");
    assert!(
        json["config"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["action"] == "kept")
    );
    assert_eq!(json["flight"]["action"], "kept");
    assert_eq!(snapshot(), first);
    assert_eq!(local_config(&env, &repo, "notes.displayRef").len(), 1);
}

#[test]
fn an_existing_hook_keeps_running_after_init_and_is_restored_by_uninstall() {
    let env = TestEnv::new();
    let repo = env.fixture("existing-hook.sh", "repo", &[]);
    let hook = repo.join(".git/hooks/pre-commit");
    let original = read(&hook);
    let out = env.crew(&repo, &["init"]);
    out.expect_code(0);
    assert_eq!(out.json()["hooks"][0]["action"], "updated");
    let text = read(&hook);
    assert!(text.starts_with("#!/bin/sh\n# >>> git-crew >>>"));
    assert!(text.contains("exit 0"));

    write(&repo.join("notes.txt"), "x\n");
    env.git_ok(&repo, &["add", "notes.txt"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "plain commit"]);
    assert_eq!(read(&repo.join(".git/own-hook-ran")), "ran\n");

    let out = env.crew(&repo, &["init", "--uninstall"]);
    out.expect_code(0);
    assert_eq!(out.json()["hooks"][0]["action"], "removed");
    assert_eq!(read(&hook), original);
    assert_ne!(
        std::fs::metadata(&hook).unwrap().permissions().mode() & 0o111,
        0
    );
}

#[test]
fn a_husky_hooks_path_is_honoured_and_never_rewritten() {
    let env = TestEnv::new();
    let repo = env.fixture("husky.sh", "repo", &[]);
    let out = env.crew(&repo, &["init"]);
    out.expect_code(0);
    let json = out.json();
    let hooks_dir = std::path::PathBuf::from(json["hooks_dir"].as_str().unwrap());
    assert_eq!(
        hooks_dir.canonicalize().unwrap(),
        repo.join(".husky").canonicalize().unwrap()
    );
    assert_eq!(local_config(&env, &repo, "core.hooksPath"), [".husky"]);
    let text = read(&repo.join(".husky/pre-commit"));
    assert!(text.starts_with("# >>> git-crew >>>"), "{text}");
    // A committed hook carries no path of this machine.
    let bin = crate::common::bin();
    assert!(!text.contains(bin.to_str().unwrap()), "{text}");
    assert!(
        out.json()["warnings"][0]
            .as_str()
            .unwrap()
            .contains("part of the work tree")
    );
    assert!(text.ends_with("echo ran >> \"$(git rev-parse --git-common-dir)/husky-ran\"\n"));
    assert!(!repo.join(".git/hooks/pre-commit").exists());

    write(&repo.join("notes.txt"), "x\n");
    env.git_ok(&repo, &["add", "notes.txt"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "through husky"]);
    assert_eq!(read(&repo.join(".git/husky-ran")), "ran\n");

    env.crew(&repo, &["init", "--uninstall"]).expect_code(0);
    assert_eq!(
        read(&repo.join(".husky/pre-commit")),
        "echo ran >> \"$(git rev-parse --git-common-dir)/husky-ran\"\n"
    );
    assert!(!repo.join(".husky/post-merge").exists());
    assert!(!repo.join(".husky/post-commit").exists());
    assert_eq!(local_config(&env, &repo, "core.hooksPath"), [".husky"]);
}

#[test]
fn a_hook_in_another_language_is_chained_and_restored() {
    let env = TestEnv::new();
    let repo = env.fixture("awk-hook.sh", "repo", &[]);
    let hook = repo.join(".git/hooks/pre-commit");
    let original = read(&hook);
    let out = env.crew(&repo, &["init"]);
    out.expect_code(0);
    assert_eq!(out.json()["hooks"][0]["action"], "chained");
    assert_eq!(read(&repo.join(".git/hooks/pre-commit.pre-crew")), original);

    write(&repo.join("notes.txt"), "x\n");
    env.git_ok(&repo, &["add", "notes.txt"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "chained"]);
    assert_eq!(read(&repo.join(".git/awk-hook-ran")), "ran\n");

    // A second init keeps the chain: the moved hook still runs.
    let out = env.crew(&repo, &["init"]);
    out.expect_code(0);
    assert_eq!(out.json()["hooks"][0]["action"], "unchanged");
    write(&repo.join("notes2.txt"), "x\n");
    env.git_ok(&repo, &["add", "notes2.txt"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "chained again"]);
    assert_eq!(read(&repo.join(".git/awk-hook-ran")), "ran\nran\n");

    let out = env.crew(&repo, &["init", "--uninstall"]);
    out.expect_code(0);
    assert_eq!(out.json()["hooks"][0]["action"], "restored");
    assert_eq!(read(&hook), original);
    assert!(!repo.join(".git/hooks/pre-commit.pre-crew").exists());
}

#[test]
fn uninstall_removes_exactly_what_init_added() {
    let env = TestEnv::new();
    let repo = env.fixture("plain.sh", "repo", &[]);
    // The user had one of the values already: it is not init's to remove.
    env.git_ok(
        &repo,
        &["config", "--local", "notes.displayRef", "refs/notes/crew"],
    );
    env.git_ok(
        &repo,
        &[
            "config",
            "--local",
            "--add",
            "notes.displayRef",
            "refs/notes/review",
        ],
    );
    let config_before = read(&repo.join(".git/config"));
    env.crew(&repo, &["init"]).expect_code(0);
    env.crew(&repo, &["init"]).expect_code(0);

    let out = env.crew(&repo, &["init", "--uninstall"]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["hooks"][0]["action"], "deleted");
    assert_eq!(json["hooks"][1]["action"], "deleted");
    assert_eq!(json["hooks"][2]["action"], "deleted");
    assert_eq!(json["flight"]["action"], "removed");
    assert!(!repo.join(".git/hooks/pre-commit").exists());
    assert!(!repo.join(".git/hooks/post-merge").exists());
    assert!(!repo.join(".git/hooks/post-commit").exists());
    assert!(!repo.join(".crew").exists());
    assert_eq!(
        local_config(&env, &repo, "notes.displayRef"),
        ["refs/notes/crew", "refs/notes/review"]
    );
    assert!(local_config(&env, &repo, "notes.rewriteRef").is_empty());
    assert!(local_config(&env, &repo, "extensions.worktreeConfig").is_empty());
    // git leaves empty section headers behind when the last key goes; the keys are what count.
    let keys = |text: &str| {
        text.lines()
            .filter(|l| l.contains('='))
            .map(str::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(keys(&read(&repo.join(".git/config"))), keys(&config_before));
    assert!(!repo.join(".git/crew/init.json").exists());
    assert_eq!(env.git_ok(&repo, &["status", "--porcelain"]), "");
}

#[test]
fn uninstall_keeps_an_edited_flight_file_and_hooks_the_user_extended() {
    let env = TestEnv::new();
    let repo = env.fixture("plain.sh", "repo", &[]);
    env.crew(&repo, &["init"]).expect_code(0);
    write(
        &repo.join(".crew/flight.toml"),
        "version = 1\ndefault_backend = \"claude\"\n",
    );
    let hook = repo.join(".git/hooks/post-merge");
    let mut text = read(&hook);
    text.push_str("echo mine\n");
    write(&hook, &text);

    let out = env.crew(&repo, &["init", "--uninstall"]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["flight"]["action"], "kept");
    assert_eq!(json["hooks"][1]["action"], "removed");
    assert_eq!(read(&hook), "#!/bin/sh\necho mine\n");
    assert!(
        out.stderr.contains("it was edited after init"),
        "{}",
        out.stderr
    );
    assert_eq!(
        read(&repo.join(".crew/flight.toml")),
        "version = 1\ndefault_backend = \"claude\"\n"
    );
}

#[test]
fn init_outside_a_repository_is_a_usage_error() {
    let env = TestEnv::new();
    let out = env.crew(env.root(), &["init"]);
    out.expect_code(2);
    let json = out.json();
    assert_eq!(json["ok"], false);
    assert_eq!(json["error"]["code"], "not-a-repository");
    assert!(json["error"]["hint"].as_str().unwrap().contains("-C"));
}

#[test]
fn a_symlinked_hook_is_moved_aside_as_a_link_and_restored() {
    let env = TestEnv::new();
    let repo = env.fixture("plain.sh", "repo", &[]);
    write(
        &repo.join("scripts/check.sh"),
        "#!/bin/sh\necho ran >> \"$(git rev-parse --git-common-dir)/linked-ran\"\n",
    );
    std::fs::set_permissions(
        repo.join("scripts/check.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let hook = repo.join(".git/hooks/pre-commit");
    std::os::unix::fs::symlink("../../scripts/check.sh", &hook).unwrap();

    let out = env.crew(&repo, &["init"]);
    out.expect_code(0);
    assert_eq!(out.json()["hooks"][0]["action"], "chained");
    let moved = repo.join(".git/hooks/pre-commit.pre-crew");
    assert!(
        std::fs::symlink_metadata(&moved)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    write(&repo.join("notes.txt"), "x\n");
    env.git_ok(&repo, &["add", "notes.txt"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "through the link"]);
    assert_eq!(read(&repo.join(".git/linked-ran")), "ran\n");

    env.crew(&repo, &["init", "--uninstall"]).expect_code(0);
    let meta = std::fs::symlink_metadata(&hook).unwrap();
    assert!(meta.file_type().is_symlink());
    assert_eq!(
        std::fs::read_link(&hook).unwrap(),
        std::path::Path::new("../../scripts/check.sh")
    );
}

#[test]
fn a_disabled_hook_stays_disabled() {
    let env = TestEnv::new();
    let repo = env.fixture("existing-hook.sh", "repo", &[]);
    let hook = repo.join(".git/hooks/pre-commit");
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o644)).unwrap();
    let original = read(&hook);
    env.crew(&repo, &["init"]).expect_code(0);
    write(&repo.join("notes.txt"), "x\n");
    env.git_ok(&repo, &["add", "notes.txt"]);
    env.git_ok(&repo, &["commit", "-q", "-m", "disabled hook"]);
    assert!(!repo.join(".git/own-hook-ran").exists());

    env.crew(&repo, &["init", "--uninstall"]).expect_code(0);
    assert_eq!(read(&hook), original);
    assert_eq!(
        std::fs::metadata(&hook).unwrap().permissions().mode() & 0o777,
        0o644
    );
}

#[test]
fn a_hook_in_the_way_of_chaining_is_refused_and_nothing_is_lost() {
    let env = TestEnv::new();
    let repo = env.fixture("awk-hook.sh", "repo", &[]);
    write(
        &repo.join(".git/hooks/pre-commit.pre-crew"),
        "#!/bin/sh\necho older\n",
    );
    let before = read(&repo.join(".git/hooks/pre-commit"));
    let out = env.crew(&repo, &["init"]);
    out.expect_code(4);
    assert_eq!(out.json()["error"]["code"], "hook-in-the-way");
    assert_eq!(read(&repo.join(".git/hooks/pre-commit")), before);
    assert_eq!(
        read(&repo.join(".git/hooks/pre-commit.pre-crew")),
        "#!/bin/sh\necho older\n"
    );
}

#[test]
fn init_inside_a_runs_worktree_is_refused_and_changes_nothing() {
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let run = env.finished_run(&repo, "routes", "ok", &["--scope", "src/routes/**"]);
    let wt = repo.join(format!(".git/crew/worktrees/{run}"));
    let before = std::fs::read(repo.join(".git/crew/init.json")).unwrap();
    for args in [&["init"][..], &["init", "--uninstall"][..]] {
        let out = env.crew(&wt, args);
        out.expect_code(4);
        assert_eq!(out.json()["error"]["code"], "inside-run-worktree");
    }
    assert_eq!(
        std::fs::read(repo.join(".git/crew/init.json")).unwrap(),
        before
    );
}

#[test]
fn init_names_a_default_backend_this_machine_has_and_uninstall_takes_it_back() {
    let env = TestEnv::new();
    let repo = env.fixture("plain.sh", "repo", &[]);
    // A `claude` on PATH and no `codex`: the starter routes to claude.
    let tools = env.root().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let claude = tools.join("claude");
    std::fs::write(&claude, "#!/bin/sh\nexit 0\n").unwrap();
    std::fs::set_permissions(&claude, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = env
        .vars()
        .into_iter()
        .find(|(k, _)| *k == "PATH")
        .map(|(_, v)| v)
        .unwrap();
    let mut with_claude = std::ffi::OsString::from(&tools);
    with_claude.push(":");
    with_claude.push(&path);
    env.crew_env(&repo, &["init"], &[("PATH", &with_claude)])
        .expect_code(0);
    let flight = std::fs::read_to_string(repo.join(".crew/flight.toml")).unwrap();
    assert!(
        flight
            .lines()
            .any(|l| l.starts_with("default_backend = \"claude\"")),
        "{flight}"
    );
    let out = env.crew_env(&repo, &["flight"], &[("PATH", &with_claude)]);
    out.expect_code(0);
    assert_eq!(out.json()["flight"]["default_backend"], "claude");
    // Unedited, it is init's to take back.
    env.crew(&repo, &["init", "--uninstall"]).expect_code(0);
    assert!(!repo.join(".crew/flight.toml").exists());
}

/// `init --dry-run` shows each file init would write as a diff, and each config value,
/// and changes nothing; the init that follows does exactly what it showed.
#[test]
fn init_dry_run_shows_the_diffs_it_would_apply_and_changes_nothing() {
    let env = TestEnv::new();
    let repo = env.fixture("plain.sh", "repo", &[]);
    let hook = repo.join(".git/hooks/pre-commit");
    let own = "#!/bin/sh\necho checking\nexit 0\n";
    write(&hook, own);
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config_before = read(&repo.join(".git/config"));

    let out = env.crew(&repo, &["init", "--dry-run"]);
    out.expect_code(0);
    let json = out.json();
    assert_eq!(json["dry_run"], true);
    assert_eq!(json["hooks"][0]["name"], "pre-commit");
    assert_eq!(json["hooks"][0]["action"], "updated");
    assert_eq!(json["hooks"][1]["action"], "created");
    assert_eq!(json["flight"]["action"], "created");
    let diff = json["hooks"][0]["diff"].as_str().unwrap().to_string();
    assert!(diff.starts_with("--- a/"), "{diff}");
    assert!(diff.contains("\n+# >>> git-crew >>>\n"), "{diff}");
    assert!(diff.contains("\n echo checking\n"), "{diff}");
    let created = json["hooks"][1]["diff"].as_str().unwrap();
    assert!(created.starts_with("--- /dev/null\n"), "{created}");
    let flight_diff = json["flight"]["diff"].as_str().unwrap();
    assert!(
        flight_diff.contains("\n+# git-crew flight control"),
        "{flight_diff}"
    );
    let config: Vec<(String, String)> = json["config"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["key"].as_str().unwrap().into(),
                c["action"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(
        config.contains(&("notes.displayRef".into(), "set".into())),
        "{config:?}"
    );

    // Nothing was written.
    assert_eq!(read(&hook), own);
    assert!(!repo.join(".git/hooks/post-merge").exists());
    assert!(!repo.join(".crew/flight.toml").exists());
    assert_eq!(read(&repo.join(".git/config")), config_before);
    assert!(!repo.join(".git/crew/init.json").exists());

    // The human rendering carries the same diff.
    let human = env.crew(&repo, &["init", "--dry-run", "--human"]);
    human.expect_code(0);
    assert!(
        human
            .stdout
            .contains("would add git-crew's block to: hook "),
        "{}",
        human.stdout
    );
    assert!(
        human.stdout.contains("+# >>> git-crew >>>"),
        "{}",
        human.stdout
    );
    assert!(
        human.stdout.contains("nothing was changed"),
        "{}",
        human.stdout
    );

    // What init then does is what the dry run showed, down to the text.
    let real = env.crew(&repo, &["init"]);
    real.expect_code(0);
    let real = real.json();
    for i in 0..3 {
        assert_eq!(real["hooks"][i]["action"], json["hooks"][i]["action"]);
    }
    let after = read(&hook);
    let path = json["hooks"][0]["path"].as_str().unwrap();
    assert_eq!(git_crew::core::text::unified_diff(own, &after, path), diff);
    let flight = read(&repo.join(".crew/flight.toml"));
    assert_eq!(
        git_crew::core::text::unified_diff("", &flight, json["flight"]["path"].as_str().unwrap()),
        flight_diff
    );

    // Run again, the dry run has nothing to change.
    let again = env.crew(&repo, &["init", "--dry-run"]).json();
    for i in 0..3 {
        assert_eq!(again["hooks"][i]["action"], "unchanged");
        assert_eq!(again["hooks"][i]["diff"], "");
    }
    assert_eq!(again["flight"]["action"], "kept");
    assert!(
        again["config"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["action"] == "kept")
    );
}

#[test]
fn init_dry_run_does_not_combine_with_uninstall() {
    let env = TestEnv::new();
    let repo = env.fixture("plain.sh", "repo", &[]);
    env.crew(&repo, &["init", "--uninstall", "--dry-run"])
        .expect_code(2);
}

/// `init --agents` writes the skill, an `AGENTS.md` section and the MCP registrations
/// beside what a project already has; a second run changes nothing; `--uninstall` leaves
/// every file byte for byte as it was, and removes the files and folders init made.
#[test]
fn init_agents_adds_the_agent_files_and_uninstall_gives_back_exactly_what_was_there() {
    let env = TestEnv::new();
    let repo = env.fixture("plain.sh", "repo", &[]);
    let agents_md = "# Project rules\n\nRun `make test` before you push.\n";
    let mcp_json = "{\n  \"mcpServers\": {\n    \"docs\": {\n      \"command\": \"docs-server\"\n    }\n  }\n}\n";
    write(&repo.join("AGENTS.md"), agents_md);
    write(&repo.join(".mcp.json"), mcp_json);

    // The dry run shows each file's change and writes nothing.
    let dry = env.crew(&repo, &["init", "--agents", "--dry-run", "--json"]);
    dry.expect_code(0);
    let planned = dry.json()["agents"].as_array().unwrap().clone();
    assert_eq!(planned.len(), 4, "{planned:?}");
    assert!(
        planned
            .iter()
            .all(|a| !a["diff"].as_str().unwrap().is_empty())
    );
    assert!(!repo.join(".claude").exists() && !repo.join(".codex").exists());
    assert_eq!(read(&repo.join("AGENTS.md")), agents_md);

    let out = env.crew(&repo, &["init", "--agents", "--json"]);
    out.expect_code(0);
    let actions: Vec<(String, String)> = out.json()["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["kind"].as_str().unwrap().into(),
                a["action"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(
        actions,
        [
            ("skill".into(), "created".into()),
            ("agents-md".into(), "updated".into()),
            ("mcp-json".into(), "updated".into()),
            ("codex-config".into(), "created".into()),
        ]
    );
    let skill = read(&repo.join(".claude/skills/git-crew/SKILL.md"));
    assert!(skill.starts_with("---\nname: git-crew\n"), "{skill}");
    assert!(skill.contains("git crew dispatch --task ID"));
    let section = read(&repo.join("AGENTS.md"));
    assert!(section.starts_with(agents_md), "{section}");
    assert!(section.contains("## Leading a crew of coding workers with git-crew"));
    let mcp: serde_json::Value = serde_json::from_str(&read(&repo.join(".mcp.json"))).unwrap();
    assert_eq!(mcp["mcpServers"]["docs"]["command"], "docs-server");
    assert_eq!(mcp["mcpServers"]["git-crew"]["command"], "git");
    assert_eq!(
        mcp["mcpServers"]["git-crew"]["args"],
        serde_json::json!(["crew", "mcp"])
    );
    let codex: toml::Table = toml::from_str(&read(&repo.join(".codex/config.toml"))).unwrap();
    assert_eq!(
        codex["mcp_servers"]["git-crew"]["args"][1].as_str(),
        Some("mcp")
    );

    // Again: nothing changes.
    let again = env.crew(&repo, &["init", "--agents", "--json"]);
    again.expect_code(0);
    assert!(
        again.json()["agents"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["action"] == "unchanged")
    );

    // The person adds a server of their own to the codex config; uninstall keeps it.
    let codex_path = repo.join(".codex/config.toml");
    let mut grown = read(&codex_path);
    grown.push_str("\n[mcp_servers.mine]\ncommand = \"mine\"\n");
    write(&codex_path, &grown);

    let un = env.crew(&repo, &["init", "--uninstall", "--json"]);
    un.expect_code(0);
    assert!(
        un.json()["agents"]
            .as_array()
            .unwrap()
            .iter()
            .all(|a| a["action"] == "removed"),
        "{}",
        un.stdout
    );
    assert_eq!(read(&repo.join("AGENTS.md")), agents_md);
    assert_eq!(read(&repo.join(".mcp.json")), mcp_json);
    assert!(
        !repo.join(".claude").exists(),
        "the folders init made go too"
    );
    let left: toml::Table = toml::from_str(&read(&codex_path)).unwrap();
    assert!(left["mcp_servers"].get("git-crew").is_none());
    assert_eq!(
        left["mcp_servers"]["mine"]["command"].as_str(),
        Some("mine")
    );
}

/// An edited skill is never overwritten or removed: init and uninstall say so.
#[test]
fn an_edited_skill_is_kept_by_init_and_by_uninstall() {
    let env = TestEnv::new();
    let repo = env.fixture("plain.sh", "repo", &[]);
    env.crew(&repo, &["init", "--agents"]).expect_code(0);
    let skill = repo.join(".claude/skills/git-crew/SKILL.md");
    let edited = format!(
        "{}\nOur team always dispatches with --size.\n",
        read(&skill)
    );
    write(&skill, &edited);
    let again = env.crew(&repo, &["init", "--agents", "--json"]);
    again.expect_code(0);
    assert_eq!(again.json()["agents"][0]["action"], "kept");
    assert!(
        again.stderr.contains("it holds text init did not write"),
        "{}",
        again.stderr
    );
    let un = env.crew(&repo, &["init", "--uninstall", "--json"]);
    un.expect_code(0);
    assert_eq!(un.json()["agents"][0]["action"], "kept");
    assert!(
        un.stderr.contains("it was edited after init"),
        "{}",
        un.stderr
    );
    assert_eq!(read(&skill), edited);
    assert!(!repo.join("AGENTS.md").exists() && !repo.join(".mcp.json").exists());
    assert!(!repo.join(".codex").exists());
}

/// `index.recordEndOfIndexEntries` is set only where no config file sets it, and taken
/// back by uninstall only when init set it; a commit then writes `EOIE`.
#[test]
fn the_end_of_index_entries_is_recorded_unless_the_user_chose_otherwise() {
    let env = TestEnv::new();
    let repo = env.fixture("plain.sh", "repo", &[]);
    env.crew(&repo, &["init"]).expect_code(0);
    write(&repo.join("README.md"), "changed\n");
    env.git_ok(&repo, &["commit", "-qam", "a commit writes the index"]);
    let index = std::fs::read(repo.join(".git/index")).unwrap();
    assert_eq!(&index[index.len() - 20 - 32..][..4], b"EOIE");
    env.crew(&repo, &["init", "--uninstall"]).expect_code(0);
    assert!(local_config(&env, &repo, "index.recordEndOfIndexEntries").is_empty());

    // The user's own choice is kept, and left there by uninstall.
    env.git_ok(&repo, &["config", "index.recordEndOfIndexEntries", "false"]);
    let out = env.crew(&repo, &["init"]);
    out.expect_code(0);
    let step = out.json()["config"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["key"] == "index.recordEndOfIndexEntries")
        .cloned()
        .unwrap();
    assert_eq!(step["action"], "kept");
    env.crew(&repo, &["init", "--uninstall"]).expect_code(0);
    assert_eq!(
        local_config(&env, &repo, "index.recordEndOfIndexEntries"),
        ["false"]
    );
}
