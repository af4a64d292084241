//! `git crew watch`: the live console driven in a real terminal (tmux: keys sent, the
//! pane read back), and its one-frame forms.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{TestEnv, poll_until, read};

/// tmux, from PATH (CI installs it).
const TMUX: &str = "tmux";

fn crew_repo(env: &TestEnv) -> PathBuf {
    env.fixture("crew-repo.sh", "repo", &[])
}

/// A tmux server of its own (its socket in the test's temp dir, no config) with one
/// 120×30 window running `sh` in a directory, in the test environment; killed when
/// dropped.
struct Tmux {
    socket: PathBuf,
    env_vars: Vec<(&'static str, std::ffi::OsString)>,
}

/// The zombie children of the `git-crew watch` running in the pane.
fn console_zombies(tmux: &Tmux) -> Vec<u32> {
    let pane: u32 = tmux
        .run(&["display", "-p", "-t", "0", "#{pane_pid}"])
        .trim()
        .parse()
        .unwrap();
    // (pid, parent, state, command line) of every process.
    let procs: Vec<(u32, u32, char, String)> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
            let state = fields.next()?.chars().next()?;
            let parent = fields.next()?.parse().ok()?;
            let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
            Some((
                pid,
                parent,
                state,
                String::from_utf8_lossy(&cmdline).replace('\0', " "),
            ))
        })
        .collect();
    let below = |root: u32, pid: u32| {
        let mut at = pid;
        for _ in 0..64 {
            if at == root {
                return true;
            }
            match procs.iter().find(|p| p.0 == at) {
                Some(p) if p.1 != 0 => at = p.1,
                _ => return false,
            }
        }
        false
    };
    let console = procs
        .iter()
        .find(|p| p.3.contains("git-crew") && p.3.contains(" watch") && below(pane, p.0))
        .map(|p| p.0)
        .expect("the console runs in the pane");
    procs
        .iter()
        .filter(|p| p.1 == console && p.2 == 'Z')
        .map(|p| p.0)
        .collect()
}

impl Tmux {
    fn start(env: &TestEnv, dir: &Path) -> Tmux {
        let tmux = Tmux {
            socket: env.root().join("tmux.sock"),
            env_vars: env.vars(),
        };
        let dir = dir.to_str().unwrap();
        tmux.run(&[
            "new-session",
            "-d",
            "-x",
            "120",
            "-y",
            "30",
            "-c",
            dir,
            "sh",
        ]);
        tmux
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(TMUX);
        cmd.env_clear()
            .envs(self.env_vars.iter().cloned())
            .env("TERM", "xterm-256color")
            .arg("-u")
            .arg("-S")
            .arg(&self.socket)
            .args(["-f", "/dev/null"])
            .args(args);
        cmd
    }

    #[track_caller]
    fn run(&self, args: &[&str]) -> String {
        let out = self.command(args).output().expect("tmux runs");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Keys by name (`Down`, `Enter`, `Escape`, `C-c`, `a`).
    fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "0"];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    /// Text typed as it is.
    fn type_text(&self, text: &str) {
        self.run(&["send-keys", "-t", "0", "-l", text]);
    }

    /// A shell command line, typed and entered.
    fn enter(&self, line: &str) {
        self.type_text(line);
        self.keys(&["Enter"]);
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "0"])
    }

    /// Waits (30 s at most) until the pane shows `text`; returns the screen.
    #[track_caller]
    fn wait_for(&self, text: &str) -> String {
        self.wait_until(text, |screen| screen.contains(text))
    }

    #[track_caller]
    fn wait_until(&self, what: &str, check: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.screen();
            if check(&screen) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "still waiting for {what}; the screen:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = self.command(&["kill-server"]).output();
    }
}

fn show(env: &TestEnv, repo: &Path, run: &str) -> Value {
    let out = env.crew(repo, &["show", run]);
    out.expect_code(0);
    out.json()["run"].clone()
}

/// After the console quits, the shell has the terminal back as it was: the command's exit
/// status is printed and the line discipline is canonical again.
#[track_caller]
fn terminal_given_back(tmux: &Tmux, exited: &str) {
    let screen = tmux.wait_for(exited);
    assert!(!screen.contains("git crew watch —"), "{screen}");
    tmux.enter("stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e -icanon -e echo -e -echo | tr '\\n' ' '; echo");
    tmux.wait_for("icanon echo");
}

#[test]
fn the_console_picks_up_runs_and_answers_integrates_and_abandons_them() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let tmux = Tmux::start(&env, &repo);
    tmux.enter("git crew watch; echo \"watch exited $?\"");
    // Nothing runs: the console stays open and says so.
    tmux.wait_for("no runs in flight");

    // Runs dispatched from elsewhere appear, with the question of the one that asks.
    let asks = env
        .dispatch(&repo, "db")
        .backend("needs-help")
        .scope("src/db/**")
        .run_id();
    tmux.wait_for(&format!(
        "{asks} asks: which database should the routes use?"
    ));
    let helped = env
        .dispatch(&repo, "routes")
        .backend("help-then-work")
        .scope("src/routes/**")
        .run_id();
    let screen = tmux.wait_for(&format!("{helped} asks: which store?"));
    assert!(
        screen.contains("options: sqlite | postgres · leaning: sqlite"),
        "{screen}"
    );
    assert!(screen.contains("2 in flight"), "{screen}");

    // `a` on a run that does not ask says so; on the one that asks it takes a line of
    // text, and Enter sends it with advise: the run resumes with it.
    tmux.keys(&["Down", "a"]);
    tmux.wait_for(&format!("answer {helped}:"));
    tmux.type_text("Use sqlite, q and x are just letters here");
    tmux.keys(&["Enter"]);
    tmux.wait_for(&format!("advised {helped}"));
    let (out, result) = env.wait(&repo, &helped).result();
    out.expect_code(0);
    assert_eq!(result["attempts"], 2, "{result}");
    let store = read(&repo.join(format!(".git/crew/worktrees/{helped}/src/routes/store.rs")));
    assert_eq!(store, "Use sqlite, q and x are just letters here\n");
    // Passed, it waits to be integrated, still selected.
    tmux.wait_for("1 awaiting integration");
    // The supervisor the console started for the answer has ended, and was waited for:
    // the console keeps no zombie.
    poll_until(
        Duration::from_secs(10),
        "the console to reap its supervisors",
        || console_zombies(&tmux).is_empty(),
    );

    // `d` hands the terminal to `git crew diff`, then comes back on a key.
    tmux.keys(&["d"]);
    let screen = tmux.wait_for("press any key to return");
    assert!(screen.contains("+Use sqlite"), "{screen}");
    tmux.keys(&["Space"]);
    tmux.wait_for("1 awaiting integration");

    // `i` integrates it, as `git crew integrate` does.
    tmux.keys(&["i"]);
    poll_until(Duration::from_secs(30), "the integration", || {
        show(&env, &repo, &helped)["integration"].is_object()
    });
    let commit = show(&env, &repo, &helped)["integration"]["commit"]
        .as_str()
        .unwrap()
        .to_string();
    let parent = env.git_ok(&repo, &["rev-parse", &format!("{commit}^1")]);
    env.assert_in_sealed_scope(&repo, &helped, parent.trim(), &commit);
    tmux.wait_until("the integrated run to leave the list", |s| {
        !s.contains(&format!("{helped} routes")) && s.contains("1 in flight")
    });

    // Enter shows the run that is left (the selection moved to it).
    tmux.keys(&["Enter"]);
    let screen = tmux.wait_for("press any key to return");
    assert!(screen.contains(&format!("run {asks} (task db")), "{screen}");
    tmux.keys(&["Space"]);

    // `x` asks first; anything but y keeps the run.
    tmux.keys(&["x"]);
    tmux.wait_for(&format!("abandon {asks}? y/n"));
    tmux.keys(&["n"]);
    tmux.wait_for(&format!("{asks} not abandoned"));
    assert_eq!(show(&env, &repo, &asks)["phase"], "needs-help");
    tmux.keys(&["x"]);
    tmux.wait_for(&format!("abandon {asks}? y/n"));
    tmux.keys(&["y"]);
    poll_until(Duration::from_secs(30), "the abandon", || {
        show(&env, &repo, &asks)["phase"] == "abandoned"
    });
    // Nothing runs again; the console stays.
    tmux.wait_for("no runs in flight");

    tmux.keys(&["q"]);
    terminal_given_back(&tmux, "watch exited 0");
}

#[test]
fn the_console_shows_worker_text_without_obeying_it_and_gives_the_terminal_back() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    let run = env
        .dispatch(&repo, "routes")
        .backend("escapes")
        .scope("src/routes/**")
        .args(&["--time-budget", "5m"])
        .run_id();
    let tmux = Tmux::start(&env, &repo);
    tmux.enter("git crew watch --interval 200ms; echo \"watch exited $?\"");
    // The worker's escape sequences (clear the screen, red, a title) are not obeyed: its
    // words show in the table, under the header.
    let screen = tmux.wait_for("red alert done");
    assert!(
        screen.starts_with("git crew watch — 1 in flight"),
        "{screen}"
    );
    assert!(screen.contains(&run), "{screen}");
    assert!(!screen.contains("pwned"), "{screen}");
    let title = tmux.run(&["display-message", "-p", "#{pane_title}"]);
    assert!(!title.contains("pwned"), "{title}");

    // A narrow terminal: the table fits, the phase beside the run.
    tmux.run(&["resize-window", "-x", "44"]);
    tmux.wait_until("a table 44 columns wide", |s| {
        s.lines().any(|l| l.contains(&run) && l.contains("working"))
            && s.lines().all(|l| l.chars().count() <= 44)
    });

    // Esc quits; the shell gets its terminal back.
    tmux.keys(&["Escape"]);
    terminal_given_back(&tmux, "watch exited 0");

    // SIGTERM stops the console (exit 130), and it gives the terminal back too. (`git-crew`
    // itself: `git crew` would be git, which passes the signal on and dies of it.)
    let pid_file = env.root().join("watch.pid");
    tmux.run(&["resize-window", "-x", "120"]);
    tmux.enter(&format!(
        "clear; sh -c 'echo $$ > {}; exec git-crew watch'; echo \"watch ended $?\"",
        pid_file.display()
    ));
    tmux.wait_for("red alert done");
    let pid = read(&pid_file);
    let killed = Command::new("kill")
        .args(["-TERM", pid.trim()])
        .status()
        .unwrap();
    assert!(killed.success());
    terminal_given_back(&tmux, "watch ended 130");
    env.crew(&repo, &["abandon", &run]).expect_code(0);
}

#[test]
fn watch_without_a_terminal_is_a_usage_error_and_once_prints_a_frame() {
    let env = TestEnv::new();
    let repo = crew_repo(&env);
    for args in [&["watch"][..], &["watch", "--human"]] {
        let out = env.crew(&repo, args);
        out.expect_code(2);
        assert!(out.stdout.is_empty() || args.len() == 1, "{}", out.stdout);
    }
    let out = env.crew(&repo, &["watch"]);
    assert_eq!(out.json()["error"]["code"], "no-terminal");
    let human = env.crew(&repo, &["watch", "--human"]);
    assert!(
        human.stderr.contains("stdout is not a terminal")
            && human.stderr.contains("git crew watch --once"),
        "{}",
        human.stderr
    );
    // --json (or --once) prints one frame, piped or not.
    for args in [&["watch", "--json"][..], &["watch", "--once"]] {
        let out = env.crew(&repo, args);
        out.expect_code(0);
        assert_eq!(out.json()["runs"], serde_json::json!([]));
        assert_eq!(out.json()["awaiting_integration"], serde_json::json!([]));
    }
    let out = env.crew_env(
        &repo,
        &["watch", "--once", "--human"],
        &[("COLUMNS", "80".as_ref())],
    );
    out.expect_code(0);
    insta::assert_snapshot!(env.snapshot(&out), @r"
    git crew watch — 0 in flight — [TIME]
    no runs in flight
    ↑/↓ select  Enter show  d diff  a answer  i integrate  x abandon  q/Esc quit
    [EOF]
    [exit status: 0]
    ");
    // A run that passed waits to be integrated: listed apart, in the frame and its JSON.
    let run = env
        .dispatch(&repo, "routes")
        .backend("ok")
        .scope("src/routes/**")
        .finished();
    let json = env.crew(&repo, &["watch", "--once"]).json();
    assert_eq!(json["runs"], serde_json::json!([]));
    assert_eq!(json["awaiting_integration"][0]["run"], run.as_str());
    let out = env.crew_env(
        &repo,
        &["watch", "--once", "--human"],
        &[("COLUMNS", "100".as_ref())],
    );
    let frame = out.stdout;
    assert!(
        frame.starts_with("git crew watch — 0 in flight, 1 awaiting integration"),
        "{frame}"
    );
    let row = frame
        .lines()
        .find(|l| l.contains(&run))
        .expect("the run's row");
    assert!(
        row.contains("routes") && row.contains("done") && row.ends_with("unverified"),
        "{row}"
    );
    // A bad interval is a usage error.
    env.crew(&repo, &["watch", "--once", "--interval", "soon"])
        .expect_code(2);
}
