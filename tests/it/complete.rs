//! Shell completion for real: the printed scripts are valid shell code, and each shell
//! driven with them offers the run ids and task ids of the repository at hand, for
//! `git-crew ...` and for `git crew ...` under git's own completion.

use std::path::{Path, PathBuf};

use crate::common::{Out, TestEnv, run, write};

const PLAN: &str = "[[tasks]]\nid = \"api\"\nscope = [\"src/api/**\"]\nprompt = \"x\"\n\n\
                    [[tasks]]\nid = \"routes\"\nscope = [\"src/routes/**\"]\nprompt = \"x\"\n";

/// A repository with two finished runs (`routes`, then `docs`) and a plan declaring
/// `api` and `routes`; returns it and the run ids, oldest first.
fn repo_with_runs(env: &TestEnv) -> (PathBuf, String, String) {
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let first = env.finished_run(&repo, "routes", "ok", &["--scope", "src/routes/**"]);
    let second = env.finished_run(&repo, "docs", "ok", &["--scope", "docs/**"]);
    write(&repo.join(".crew/plans/v1.toml"), PLAN);
    (repo, first, second)
}

fn script(env: &TestEnv, shell: &str) -> PathBuf {
    let out = env.crew(env.root(), &["completions", shell]);
    out.expect_code(0);
    let path = env.root().join(format!("completion.{shell}"));
    write(&path, &out.stdout);
    path
}

fn has(program: &str) -> bool {
    std::process::Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The shell a test drives: an ignored test (`.ci/run` installs what they need and runs
/// them with `--ignored`) fails when it is missing.
#[track_caller]
fn require(program: &str) {
    assert!(
        has(program),
        "{program} is not installed: this test drives it (apt-get install zsh fish bash-completion)"
    );
}

fn quoted(words: &[&str]) -> String {
    words
        .iter()
        .map(|w| format!("'{}'", w.replace('\'', r"'\''")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs a bash program in `dir` with nothing but `prelude` loaded, and insists it said
/// nothing on stderr.
#[track_caller]
fn bash(env: &TestEnv, dir: &Path, program: &str) -> Out {
    let out = run(
        env.command("bash")
            .current_dir(dir)
            .args(["--norc", "--noprofile", "-c", program]),
        None,
    );
    assert!(
        out.stderr.is_empty(),
        "bash said on stderr: {}\nstdout: {}",
        out.stderr,
        out.stdout
    );
    out.expect_code(0);
    out
}

/// COMPREPLY after bash completes `words` (the last is the word under the cursor) with
/// the completion function bash has registered for `words[0]`, as bash sets it up.
fn bash_reply(env: &TestEnv, dir: &Path, prelude: &str, words: &[&str]) -> Vec<String> {
    let program = format!(
        r#"{prelude}
COMP_WORDS=({words})
COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1))
COMP_LINE="${{COMP_WORDS[*]}}"
COMP_POINT=${{#COMP_LINE}}
spec=$(complete -p "${{COMP_WORDS[0]}}") || exit 9
fn=${{spec##*-F }}; fn=${{fn%% *}}
COMPREPLY=()
"$fn" "${{COMP_WORDS[0]}}" "${{COMP_WORDS[COMP_CWORD]}}" "${{COMP_WORDS[COMP_CWORD-1]}}"
printf '%s\n' "${{COMPREPLY[@]}}"
"#,
        words = quoted(words)
    );
    lines(&bash(env, dir, &program).stdout)
}

fn lines(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

/// git's bash completion, where this system keeps it.
fn git_bash_completion() -> Option<PathBuf> {
    [
        "/usr/share/bash-completion/completions/git",
        "/usr/share/git/completion/git-completion.bash",
        "/usr/share/git-core/contrib/completion/git-completion.bash",
        "/etc/bash_completion.d/git",
        "/opt/homebrew/etc/bash_completion.d/git-completion.bash",
        "/usr/local/etc/bash_completion.d/git-completion.bash",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.is_file())
}

#[test]
fn every_completion_script_is_valid_shell_code() {
    let env = TestEnv::new();
    let bash_script = script(&env, "bash");
    let text = crate::common::read(&bash_script);
    assert!(text.contains("GIT_CREW_COMPLETE"), "{text}");
    assert!(text.contains("_git_crew()"), "{text}");
    bash(
        &env,
        env.root(),
        &format!("bash -n {}", quoted(&[&bash_script.to_string_lossy()])),
    );
    for (shell, check) in [("zsh", "_git-crew()"), ("fish", "--command git-crew")] {
        let path = script(&env, shell);
        assert!(
            crate::common::read(&path).contains(check),
            "{shell}: {check}"
        );
    }
}

/// `shell -n` on its script.
#[track_caller]
fn parses(env: &TestEnv, shell: &str) {
    require(shell);
    let path = script(env, shell);
    let out = run(env.command(shell).arg("-n").arg(&path), None);
    assert_eq!(out.code, 0, "{shell} -n: {}{}", out.stdout, out.stderr);
}

#[test]
fn bash_completes_run_ids_and_task_ids_for_git_crew_and_git_dash_crew() {
    let env = TestEnv::new();
    let (repo, first, second) = repo_with_runs(&env);
    let load = format!(
        "source {}",
        quoted(&[&script(&env, "bash").to_string_lossy()])
    );

    // `git-crew show <TAB>`: @last, the tasks and the runs, newest first; then flags.
    let all = bash_reply(&env, &repo, &load, &["git-crew", "show", ""]);
    assert_eq!(
        all[..5],
        ["@last", "docs", "routes", &second, &first],
        "{all:?}"
    );
    assert!(all[5..].iter().all(|c| c.starts_with('-')), "{all:?}");
    let prefix = &first[..12];
    assert_eq!(
        bash_reply(&env, &repo, &load, &["git-crew", "wait", &first, prefix]),
        [second.as_str(), first.as_str()]
    );
    assert_eq!(
        bash_reply(&env, &repo, &load, &["git-crew", "diff", "ro"]),
        ["routes"]
    );
    // The tail of a run id, which a RUN also takes, completes to the whole id.
    let tail = &first[first.len() - 4..];
    assert_eq!(
        bash_reply(&env, &repo, &load, &["git-crew", "integrate", tail]),
        [first.as_str()]
    );
    // A task argument: the plan's tasks in order, then those of past runs, once each.
    assert_eq!(
        bash_reply(&env, &repo, &load, &["git-crew", "dispatch", "--task", ""]),
        ["api", "routes", "docs"]
    );
    assert_eq!(
        bash_reply(&env, &repo, &load, &["git-crew", "ledger", "--task", "d"]),
        ["docs"]
    );

    // `git crew show <TAB>` as git's completion calls it: `_git_crew` with git's words,
    // with and without the index of the command word newer git sets.
    for index in ["__git_cmd_idx=1", "unset __git_cmd_idx"] {
        let program = format!(
            "{load}\n{index}\nwords=(git crew show {prefix}); cword=3; cur={prefix}; prev=show\n\
             COMPREPLY=(); _git_crew; printf '%s\\n' \"${{COMPREPLY[@]}}\""
        );
        assert_eq!(
            lines(&bash(&env, &repo, &program).stdout),
            [second.as_str(), first.as_str()],
            "{index}"
        );
    }
}

#[test]
#[ignore = "needs git's bash completion: .ci/run runs the ignored tests"]
fn bash_completes_git_crew_under_gits_own_completion() {
    let env = TestEnv::new();
    let (repo, first, second) = repo_with_runs(&env);
    let load = format!(
        "source {}",
        quoted(&[&script(&env, "bash").to_string_lossy()])
    );
    let prefix = &first[..12];
    let git_completion =
        git_bash_completion().expect("git's bash completion is not installed here");
    let with_git = format!(
        "source {}\n{load}",
        quoted(&[&git_completion.to_string_lossy()])
    );
    let all = bash_reply(&env, &repo, &with_git, &["git", "crew", "show", ""]);
    assert_eq!(
        all[..5],
        ["@last", "docs", "routes", &second, &first],
        "{all:?}"
    );
    assert_eq!(
        bash_reply(&env, &repo, &with_git, &["git", "crew", "show", prefix]),
        [second.as_str(), first.as_str()]
    );
    assert_eq!(
        bash_reply(
            &env,
            &repo,
            &with_git,
            &["git", "crew", "dispatch", "--task", ""]
        ),
        ["api", "routes", "docs"]
    );
    // git's own -C reaches git-crew: completed from outside the repository.
    let repo_arg = repo.to_string_lossy();
    assert_eq!(
        bash_reply(
            &env,
            env.root(),
            &with_git,
            &["git", "-C", &repo_arg, "crew", "show", "ro"]
        ),
        ["routes"]
    );
    assert!(
        bash_reply(&env, env.root(), &with_git, &["git", "crew", "show", "ro"]).is_empty(),
        "outside a repository there is nothing to offer"
    );
    // The commands themselves.
    let commands = bash_reply(&env, &repo, &with_git, &["git", "crew", "sh"]);
    assert_eq!(commands, ["show", "should-stop"]);
}

#[test]
#[ignore = "needs zsh: .ci/run installs it and runs the ignored tests"]
fn zsh_completes_git_crew_through_zsh_s_own_git_completion() {
    let env = TestEnv::new();
    parses(&env, "zsh");
    let (repo, first, second) = repo_with_runs(&env);
    let script = script(&env, "zsh");
    // A real interactive zsh with compinit, on a pseudo-terminal; every compadd call
    // the completion makes is recorded.
    let complete = |line: &str| -> Option<String> {
        let capture = env.root().join("captured");
        let _ = std::fs::remove_file(&capture);
        let driver = format!(
            r#"zmodload zsh/zpty || exit 7
[[ -n ${{^fpath}}/_git(N) ]] || {{ print "no _git"; exit 0; }}
zpty z 'TERM=dumb zsh -f -i'
zpty -w z 'autoload -U compinit; compinit -u -D; source {script}'
zpty -w z 'compadd() {{ print -r -- "${{(j: :)@}}" >> {capture}; builtin compadd "$@"; }}'
zpty -w -n z $'{line}\t'
for i in {{1..200}}; do [[ -s {capture} ]] && break; sleep 0.1; done
sleep 0.5
zpty -d z
"#,
            script = quoted(&[&script.to_string_lossy()]),
            capture = quoted(&[&capture.to_string_lossy()]),
        );
        let out = run(
            env.command("zsh")
                .current_dir(&repo)
                .args(["-f", "-c", &driver]),
            None,
        );
        assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
        if out.stdout.contains("no _git") {
            return None;
        }
        Some(std::fs::read_to_string(&capture).unwrap_or_default())
    };
    let shown = complete("git crew show ").expect("zsh has no _git completion here");
    let expected = format!("@last docs routes {second} {first}");
    assert!(shown.contains(&expected), "{expected} not in:\n{shown}");
    let tasks = complete("git-crew dispatch --task ").unwrap_or_default();
    assert!(tasks.contains("api routes docs"), "{tasks}");
}

#[test]
#[ignore = "needs fish: .ci/run installs it and runs the ignored tests"]
fn fish_completes_git_dash_crew() {
    let env = TestEnv::new();
    parses(&env, "fish");
    let (repo, first, second) = repo_with_runs(&env);
    let script = script(&env, "fish");
    let complete = |line: &str| -> Vec<String> {
        let program = format!(
            "source {}; complete -C {}",
            quoted(&[&script.to_string_lossy()]),
            quoted(&[line])
        );
        let out = run(
            env.command("fish")
                .current_dir(&repo)
                .args(["--no-config", "-c", &program]),
            None,
        );
        out.expect_code(0);
        assert!(out.stderr.is_empty(), "{}", out.stderr);
        out.stdout
            .lines()
            .map(|l| l.split('\t').next().unwrap_or_default().to_string())
            .collect()
    };
    let all = complete("git-crew show ");
    assert_eq!(
        all[..5],
        ["@last", "docs", "routes", &second, &first],
        "{all:?}"
    );
    assert_eq!(
        complete("git-crew dispatch --task "),
        ["api", "routes", "docs"]
    );
}

/// The completer itself, as a shell calls it.
fn ask(env: &TestEnv, dir: &Path, shell: &str, words: &[&str]) -> Out {
    let mut args = vec!["--"];
    args.extend(words);
    run(
        env.command(crate::common::bin())
            .current_dir(dir)
            .env("GIT_CREW_COMPLETE", shell)
            .args(&args),
        None,
    )
}

#[test]
fn the_completer_says_nothing_where_there_is_nothing_to_offer() {
    let env = TestEnv::new();
    let outside = env.root().join("elsewhere");
    std::fs::create_dir_all(&outside).unwrap();
    for words in [
        &["git-crew", "show", "2026"][..],
        &["git-crew", "dispatch", "--task", ""],
        &["git-crew", "-C", "/no/such/dir", "show", "r"],
        &["git-crew", "show", "--", ""],
    ] {
        let out = ask(&env, &outside, "fish", words);
        assert_eq!(
            (out.code, out.stdout.as_str(), out.stderr.as_str()),
            (0, "", ""),
            "{words:?}"
        );
    }
    // A shell the completer does not know: no answer, and still nothing on stderr.
    let out = ask(&env, &outside, "tcsh", &["git-crew", "show", ""]);
    assert_ne!(out.code, 0);
    assert_eq!((out.stdout.as_str(), out.stderr.as_str()), ("", ""));
    // The variable alone is not a request: the command runs as usual.
    let out = run(
        env.command(crate::common::bin())
            .current_dir(&outside)
            .env("GIT_CREW_COMPLETE", "bash")
            .arg("--version"),
        None,
    );
    out.expect_code(0);
    assert!(out.stdout.starts_with("git-crew "), "{}", out.stdout);
}

#[test]
fn the_completer_reads_a_broken_store_without_a_word_and_changes_nothing() {
    let env = TestEnv::new();
    let (repo, first, second) = repo_with_runs(&env);
    let state = repo.join(".git/crew");
    // A record that is not JSON, a stray file and a folder that is not a run.
    let broken = "20990101-000000-dead";
    write(&state.join(format!("runs/{broken}.json")), "{not json");
    write(&state.join("runs/notes.txt"), "x");
    std::fs::create_dir_all(state.join("live/not-a-run.json")).unwrap();
    let listing = |dir: &Path| -> Vec<String> {
        let mut all = Vec::new();
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                let meta = e.metadata().unwrap();
                all.push(format!("{} {:?}", e.path().display(), meta.modified().ok()));
                if meta.is_dir() {
                    stack.push(e.path());
                }
            }
        }
        all.sort();
        all
    };
    let before = listing(&state);
    let out = ask(&env, &repo, "fish", &["git-crew", "show", ""]);
    assert_eq!((out.code, out.stderr.as_str()), (0, ""), "{}", out.stdout);
    let values: Vec<&str> = out
        .stdout
        .lines()
        .map(|l| l.split('\t').next().unwrap())
        .collect();
    assert_eq!(
        values[..6],
        ["@last", "docs", "routes", broken, &second, &first],
        "{values:?}"
    );
    assert_eq!(listing(&state), before, "completing wrote to the store");
}
