//! A real terminal for the tests that need one: a command run in a tmux pane (its own
//! server on its own socket under the test's temp dir, so nothing of the developer's tmux
//! is touched), driven with keys and read back as the screen shows it.
//!
//! The pane's command gets the test environment ([`TestEnv::vars`]) plus what the caller
//! adds, and `TERM` as tmux sets it. The pane stays as it is when its command exits, so
//! its last frame and exit status can be read; the server is killed on drop.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::TestEnv;

/// A tmux server with one pane running a command.
pub struct Tmux {
    socket: PathBuf,
    target: String,
    /// Where the command's exit status is written when it exits.
    status: PathBuf,
}

impl Tmux {
    /// Runs `cmd` (the program, then its arguments) in `dir`, in a `cols` x `rows` pane.
    #[track_caller]
    pub fn start(env: &TestEnv, dir: &Path, cmd: &[&str], cols: u16, rows: u16) -> Tmux {
        Tmux::start_with(env, dir, cmd, &[], cols, rows)
    }

    /// [`Tmux::start`], with `vars` added to the command's environment.
    #[track_caller]
    pub fn start_with(
        env: &TestEnv,
        dir: &Path,
        cmd: &[&str],
        vars: &[(&str, &str)],
        cols: u16,
        rows: u16,
    ) -> Tmux {
        let n = std::fs::read_dir(env.root())
            .map(|d| {
                d.flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with("tmux-"))
                    .count()
            })
            .unwrap_or(0);
        let home = env.root().join(format!("tmux-{n}"));
        std::fs::create_dir_all(&home).unwrap();
        // No status line: the pane is the whole screen.
        let conf = home.join("tmux.conf");
        std::fs::write(&conf, "set -g status off\nset -g history-limit 5000\n").unwrap();
        let tmux = Tmux {
            socket: home.join("socket"),
            target: "crew".into(),
            status: home.join("status"),
        };
        // A shell writes the exit status (tmux does not always reap a pane's command in
        // time to report it), then keeps the pane open, its last frame as it was (a dead
        // pane's notice would scroll it). Ctrl-C ends the command, not the shell: a
        // caught signal is the default again in the command.
        let script = format!(
            "trap true INT; \"$@\"; echo $? > '{}'; exec sleep 100000",
            tmux.status.display()
        );
        let mut command = env.command("tmux");
        command
            .arg("-S")
            .arg(&tmux.socket)
            .arg("-f")
            .arg(&conf)
            .args(["new-session", "-d", "-s", &tmux.target])
            .args(["-x", &cols.to_string(), "-y", &rows.to_string()])
            .arg("-c")
            .arg(dir)
            .args(["sh", "-c", &script, "sh"])
            .args(cmd);
        for (key, value) in vars {
            command.env(key, value);
        }
        let out = command
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .output()
            .unwrap_or_else(|e| panic!("these tests need tmux on PATH: {e}"));
        assert!(
            out.status.success(),
            "tmux new-session failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        tmux
    }

    fn tmux(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .env_remove("TMUX")
            .stdin(Stdio::null())
            .output()
            .expect("tmux");
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Sends keys as `tmux send-keys` takes them (`"q"`, `"Enter"`, `"C-c"`).
    pub fn send_keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", &self.target];
        args.extend(keys);
        self.tmux(&args);
    }

    /// The screen as text, trailing blanks trimmed.
    pub fn capture(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", &self.target])
    }

    /// The screen with its colours and attributes as escape sequences.
    pub fn capture_escapes(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-e", "-t", &self.target])
    }

    /// Waits (up to `timeout`) until the screen shows `text`; returns that screen.
    #[track_caller]
    pub fn wait_for(&self, text: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let screen = self.capture();
            if screen.contains(text) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "the screen did not show {text:?} within {timeout:?}:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits (up to `timeout`) for the pane's command to exit; its exit status.
    #[track_caller]
    pub fn wait_exit(&self, timeout: Duration) -> i32 {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(status) = std::fs::read_to_string(&self.status)
                && let Ok(status) = status.trim().parse()
            {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "the pane's command still runs after {timeout:?}:\n{}",
                self.capture()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
}

/// `sh -c 'exec "$0" "$@" 2>FILE'` around `cmd`: its stderr goes to `file`, not to the
/// terminal.
pub fn stderr_to(file: &Path, cmd: &[&str]) -> Vec<String> {
    let mut out = vec![
        "sh".to_string(),
        "-c".into(),
        format!("exec \"$0\" \"$@\" 2>'{}'", file.display()),
    ];
    out.extend(cmd.iter().map(|s| s.to_string()));
    out
}
