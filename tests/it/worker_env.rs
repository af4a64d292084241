//! A worker's own environment against workers that misbehave: nothing a lead-side process
//! later reads as configuration or runs as code changes during a run (the lead's home,
//! its temp folders, the repository's config and hooks, git-crew's own config), a worker
//! sees its own home and none of the variables of the lead's services, and no service of
//! the lead's that listens on a socket with a path (tmux) can be driven from inside.
//!
//! The suite's temp dirs lie under `/tmp`, where a worker's private `/tmp` hides the
//! lead's home and checkout altogether; the `_outside_tmp` cases put them where they lie
//! on a real machine, where the write fence and the read-only mounts of the worker's view
//! hold (Landlock governs writes, not a file's mode: a `chmod` of the lead's files is
//! refused by the read-only mount), and the folder of the socket the lead's `$TMUX`
//! names is covered.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::hash::{Hash, Hasher};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::Value;

use crate::common::{TestEnv, read, write};
use crate::dispatch::require_fence;

/// What one path is, read without following a symlink: its type, mode, size, and a hash
/// of its content (a regular file's bytes, a symlink's target).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Print {
    kind: &'static str,
    mode: u32,
    size: u64,
    hash: u64,
}

fn print(path: &Path) -> Option<Print> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    let kind = meta.file_type();
    let mut hasher = std::hash::DefaultHasher::new();
    let kind = if kind.is_symlink() {
        std::fs::read_link(path).ok()?.hash(&mut hasher);
        "symlink"
    } else if kind.is_file() {
        std::fs::read(path).ok()?.hash(&mut hasher);
        "file"
    } else if kind.is_dir() {
        "dir"
    } else if kind.is_socket() {
        "socket"
    } else if kind.is_fifo() {
        "fifo"
    } else {
        "other"
    };
    Some(Print {
        kind,
        mode: meta.mode(),
        size: if meta.is_dir() { 0 } else { meta.len() },
        hash: hasher.finish(),
    })
}

/// Every path under `root` (itself included) but those `skip` names, with its print.
fn walk(root: &Path, skip: &dyn Fn(&Path) -> bool, out: &mut BTreeMap<PathBuf, Print>) {
    if skip(root) {
        return;
    }
    let Some(found) = print(root) else {
        return;
    };
    let is_dir = found.kind == "dir";
    out.insert(root.to_path_buf(), found);
    if is_dir && let Ok(entries) = std::fs::read_dir(root) {
        for entry in entries.flatten() {
            walk(&entry.path(), skip, out);
        }
    }
}

/// What git-crew itself writes in the repository's git dir during a run (its run's
/// folders, records, locks, caches and transcripts, the worktree's administration, the
/// run's objects, branch, seal and ledger row), relative to the git dir.
const CREW_WRITES: &[&str] = &[
    "crew/runs",
    "crew/worktrees",
    "crew/live",
    "crew/homes",
    "crew/worker-cache",
    "crew/transcripts",
    "crew/locks",
    "crew/cache",
    "crew/ledger-writer",
    "crew/dispatch.lock",
    "crew/pointers.lock",
    "worktrees",
    "objects",
    "logs/refs/heads/crew",
    "logs/refs/notes/crew-ledger",
    "refs/heads/crew",
    "refs/crew",
    "refs/notes/crew-ledger",
];

/// Everything a run must leave as it was: the test's whole temp dir (the lead's home,
/// its `TMPDIR`, the repository, its git dir but what [`CREW_WRITES`] names; and
/// `run-ids`, git-crew's own counter), and the `extra` paths (in `/tmp` itself).
fn snapshot(env: &TestEnv, repo: &Path, extra: &[PathBuf]) -> BTreeMap<PathBuf, Print> {
    let git = repo.join(".git");
    let skip = |path: &Path| {
        path == env.root().join("run-ids")
            || path
                .strip_prefix(&git)
                .is_ok_and(|rel| CREW_WRITES.iter().any(|w| rel.starts_with(w)))
    };
    let mut out = BTreeMap::new();
    walk(env.root(), &skip, &mut out);
    for path in extra {
        walk(path, &|_| false, &mut out);
    }
    out
}

/// Each path that differs between `before` and `after`, and how.
fn changes(before: &BTreeMap<PathBuf, Print>, after: &BTreeMap<PathBuf, Print>) -> Vec<String> {
    let mut changed = Vec::new();
    for (path, was) in before {
        match after.get(path) {
            None => changed.push(format!("removed {}", path.display())),
            Some(now) if now != was => {
                changed.push(format!("changed {}: {was:?} -> {now:?}", path.display()))
            }
            Some(_) => {}
        }
    }
    for path in after.keys().filter(|p| !before.contains_key(*p)) {
        changed.push(format!("created {}", path.display()));
    }
    changed
}

/// The lead's CLI state, credentials, shell and ssh config and package caches, as a
/// developer's home holds them.
const LEAD_FILES: &[(&str, &str)] = &[
    (
        ".claude/settings.json",
        "{\"permissions\": {\"allow\": [\"Bash(git status)\"]}}\n",
    ),
    (".claude/CLAUDE.md", "# Lead's instructions\n"),
    (
        ".claude.json",
        "{\"hasCompletedOnboarding\": true, \"mcpServers\": {\"docs\": {\"command\": \"docs-mcp\", \"args\": []}}}\n",
    ),
    (".codex/config.toml", "model = \"gpt-5\"\n"),
    (".codex/auth.json", "{\"OPENAI_API_KEY\": \"sk-lead\"}\n"),
    (
        ".cargo/registry/src/index/somecrate-1.0.0/build.rs",
        "fn main() {}\n",
    ),
    ("go/pkg/mod/example.com/m@v1/m.go", "package m\n"),
    (".cache/pre-commit/repoabc/hook.py", "print('hook')\n"),
    (".npm/_cacache/x", "cached\n"),
    (".config/git/config", "[core]\n\tautocrlf = false\n"),
    (
        ".gitconfig",
        "[user]\n\tname = Lead\n\temail = lead@example.com\n",
    ),
    (".ssh/config", "Host forge\n\tUser git\n"),
    (".bashrc", "export EDITOR=vi\n"),
];

/// Every way `hostile-home.sh` tries to change one of the lead's files.
const ATTACKS: &[&str] = &[
    "write", "append", "truncate", "chmod", "replace", "rename", "delete", "symlink", "hardlink",
];

/// What `git-fixtures/workers/<worker>.sh` reported: each attempt's name and result
/// (`<attempt>: <result>`, the result one word).
fn attempts(transcript: &str) -> Vec<(String, String)> {
    transcript
        .lines()
        .filter_map(|line| line.rsplit_once(": "))
        .filter(|(_, result)| ["refused", "WROTE", "DROVE"].contains(result))
        .map(|(name, result)| (name.to_string(), result.to_string()))
        .collect()
}

/// `--set backends.<backend>.env.<KEY>="<value>"`.
fn backend_env(backend: &str, key: &str, value: &Path) -> String {
    format!("backends.{backend}.env.{key}=\"{}\"", value.display())
}

/// Dispatches `backend` for task `task` (scope `src/routes/**`) with the lead's extra
/// variables `vars` and the backend's `sets`, waits for it, and returns its result and
/// transcript.
fn hostile_run(
    env: &TestEnv,
    repo: &Path,
    task: &str,
    backend: &str,
    sets: &[String],
    vars: &[(&str, OsString)],
) -> (Value, String) {
    let mut args = vec![
        "dispatch",
        "--task",
        task,
        "--backend",
        backend,
        "--prompt",
        "x",
        "--scope",
        "src/routes/**",
        "--wait",
    ];
    for set in sets {
        args.extend(["--set", set]);
    }
    let vars: Vec<(&str, &std::ffi::OsStr)> =
        vars.iter().map(|(k, v)| (*k, v.as_os_str())).collect();
    let out = env.crew_env(repo, &args, &vars);
    let json = out.json();
    let run = json["runs"][0].clone();
    let id = run["run"]
        .as_str()
        .unwrap_or_else(|| panic!("no run: {json}"));
    let transcript = env.transcript(repo, id);
    (run, transcript)
}

/// Whether the test's folders lie under /tmp, where a worker's private /tmp hides them.
fn under_tmp(env: &TestEnv) -> bool {
    env.root().starts_with("/tmp")
}

fn uid() -> u32 {
    // SAFETY: getuid cannot fail.
    unsafe { libc::getuid() }
}

/// With the test's folders under /tmp, the worker's private /tmp hides the lead's home,
/// its `TMPDIR` and checkout; it sees the repository's git dir bound back read-only.
#[test]
fn a_worker_cannot_change_anything_the_lead_later_reads_or_runs() {
    require_fence();
    lead_state_stays_the_leads(&TestEnv::new());
}

/// With the test's folders where a real machine has them, the worker sees the lead's
/// home and checkout, and only the write fence stands between them: it must keep their
/// modes as well as their content. The git dir is its private view: what it writes there
/// must stay there.
#[test]
fn a_worker_cannot_change_anything_the_lead_later_reads_or_runs_outside_tmp() {
    require_fence();
    lead_state_stays_the_leads(&TestEnv::outside_tmp());
}

fn lead_state_stays_the_leads(env: &TestEnv) {
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let home = env.home();
    for (rel, text) in LEAD_FILES {
        write(&home.join(rel), text);
    }
    let lead_tmpdir = env.root().join("tmp");
    write(&lead_tmpdir.join("lead-scratch"), "the lead's\n");
    // The lead's runtime folder: where it lies on a real machine when the test's folders
    // lie under /tmp (one there keeps every worker from starting: see the last test);
    // else one of the test's, holding the lead's session bus, which the worker must not
    // see.
    let runtime = if under_tmp(env) {
        PathBuf::from(format!("/run/user/{}", uid()))
    } else {
        let dir = env.root().join("run");
        write(&dir.join("bus"), "");
        dir
    };
    // A marker of the lead's directly in /tmp, and the names the worker plants there.
    let marker = PathBuf::from(format!("/tmp/crew-lead-marker-{}", uuid::Uuid::new_v4()));
    std::fs::write(&marker, "the lead's marker\n").unwrap();
    let _marker = Removed(marker.clone());
    let mut extra: Vec<PathBuf> = ["planted", "planted.d", "planted-link"]
        .iter()
        .map(|name| Path::new("/tmp").join(name))
        .collect();
    extra.push(marker.clone());
    // A first run makes what git-crew makes once (its hooks, the ledger's ref folder):
    // the hostile run finds them there.
    env.dispatch(&repo, "first")
        .backend("ok")
        .scope("src/routes/**")
        .finished();
    let before = snapshot(env, &repo, &extra);
    for watched in [
        home.join(".claude/settings.json"),
        home.join(".bashrc"),
        lead_tmpdir.join("lead-scratch"),
        repo.join(".git/config"),
        repo.join(".git/hooks/pre-commit"),
        repo.join(".git/info/exclude"),
        repo.join(".git/crew/hooks/pre-commit"),
        repo.join(".git/refs/heads/main"),
        repo.join(".crew/flight.toml"),
        marker.clone(),
    ] {
        assert!(
            before.contains_key(&watched),
            "{} is not watched",
            watched.display()
        );
    }
    let (run, transcript) = hostile_run(
        env,
        &repo,
        "home",
        "hostile-home",
        &[
            backend_env("hostile-home", "LEAD_HOME", &home),
            backend_env("hostile-home", "LEAD_TMPDIR", &lead_tmpdir),
            backend_env("hostile-home", "LEAD_MARKER", &marker),
            backend_env("hostile-home", "LEAD_RUNTIME_DIR", &runtime),
        ],
        &[
            ("GIT_CONFIG_GLOBAL", home.join(".gitconfig").into()),
            ("TMUX", format!("/tmp/tmux-{}/default,4242,0", uid()).into()),
            ("TMUX_PANE", "%0".into()),
            ("SSH_AUTH_SOCK", env.root().join("ssh-agent.sock").into()),
            (
                "DBUS_SESSION_BUS_ADDRESS",
                format!("unix:path={}/bus", runtime.display()).into(),
            ),
            ("DISPLAY", ":0".into()),
            ("WAYLAND_DISPLAY", "wayland-0".into()),
            ("XDG_RUNTIME_DIR", runtime.clone().into()),
        ],
    );
    let id = run["run"].as_str().unwrap();
    assert!(
        run["fence"].as_str().is_some_and(|f| f.ends_with("+ns")),
        "{run}\n{transcript}"
    );
    assert_eq!(run["outcome"], "pass", "{run}\n{transcript}");
    let after = snapshot(env, &repo, &extra);

    // Every attempt on a path of the lead's was refused; those on /tmp itself reach the
    // worker's own /tmp at most, which the snapshot of the real one shows.
    let attempts = attempts(&transcript);
    let home_text = home.display().to_string();
    let in_tmp = |name: &str| {
        extra
            .iter()
            .any(|p| name.ends_with(&format!(" {}", p.display())))
    };
    // The repository's git dir is a private, copy-on-write view in the run: a write
    // there may get through to the worker's own view, and the snapshot of the real one
    // shows that none reached the lead.
    let git_dir = format!(" {}/.git/", repo.display());
    let in_view = |name: &str| name.contains(&git_dir) || name == "git-config-local";
    let mut wrote = Vec::new();
    for (name, result) in &attempts {
        if !name.starts_with("own ") && !in_tmp(name) && !in_view(name) && result != "refused" {
            wrote.push(format!("{name}: {result}"));
        }
    }
    for (rel, _) in LEAD_FILES {
        for attack in ATTACKS {
            let name = format!("{attack} {home_text}/{rel}");
            assert!(
                attempts.iter().any(|(n, _)| *n == name),
                "no attempt `{name}`:\n{transcript}"
            );
        }
    }
    for name in [
        format!("claude-hook {home_text}/.claude/settings.json"),
        format!("codex-notify {home_text}/.codex/config.toml"),
        format!("create {home_text}/.ssh/authorized_keys"),
        format!("write {}/planted", lead_tmpdir.display()),
        format!("write {}/.git/config", repo.display()),
        format!("create {}/.git/hooks/post-checkout", repo.display()),
        format!("append {}/.git/info/exclude", repo.display()),
        format!("write {}/.git/crew/hooks/pre-commit", repo.display()),
        format!("append {}/.crew/flight.toml", repo.display()),
        "git-config-global".to_string(),
        "write /tmp/planted".to_string(),
    ] {
        assert!(
            attempts.iter().any(|(n, _)| *n == name),
            "no attempt `{name}`:\n{transcript}"
        );
    }
    let changed = changes(&before, &after);
    assert!(
        wrote.is_empty() && changed.is_empty(),
        "attempts on the lead's paths got through:\n{}\nthe run changed what the lead reads:\n{}",
        wrote.join("\n"),
        changed.join("\n")
    );

    // Its own home took its own writes.
    let own = repo.join(".git/crew/runs").join(id).join("home");
    for name in ["own {}/.claude/settings.json", "own {}/.codex/config.toml"] {
        let name = name.replace("{}", &format!("{}/", own.display()));
        let name = name.replace("//", "/");
        assert!(
            attempts
                .iter()
                .any(|(n, r)| n.replace("//", "/") == name && r == "WROTE"),
            "no `{name}: WROTE`:\n{transcript}"
        );
    }
    assert!(read(&own.join(".claude/settings.json")).contains(id));
    assert!(read(&own.join(".codex/config.toml")).contains(id));
    // Its home is its own, under git-crew's folder, and no variable of the lead's
    // services reached it.
    let home_line = transcript
        .lines()
        .find_map(|l| l.strip_prefix("env HOME="))
        .unwrap_or_else(|| panic!("no HOME:\n{transcript}"));
    assert!(
        Path::new(home_line).starts_with(repo.join(".git/crew")),
        "{home_line}"
    );
    for var in [
        "TMUX",
        "TMUX_PANE",
        "SSH_AUTH_SOCK",
        "DBUS_SESSION_BUS_ADDRESS",
        "DISPLAY",
        "WAYLAND_DISPLAY",
        "XDG_RUNTIME_DIR",
    ] {
        assert!(
            transcript.contains(&format!("env {var} unset\n")),
            "{var}:\n{transcript}"
        );
    }
    if !under_tmp(env) {
        assert!(transcript.contains("runtime-dir: hidden\n"), "{transcript}");
    }
}

/// A path removed when the test ends, however it ends.
struct Removed(PathBuf);

impl Drop for Removed {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
        let _ = std::fs::remove_file(&self.0);
    }
}

/// A tmux server of the lead's on socket `sock`, with one session `lead`; killed (and
/// `remove` removed) when the test ends, however it ends.
struct Tmux {
    sock: PathBuf,
    remove: Option<PathBuf>,
}

impl Tmux {
    fn start(env: &TestEnv, sock: PathBuf, remove: Option<PathBuf>) -> Tmux {
        std::fs::create_dir_all(sock.parent().unwrap()).unwrap();
        let server = Tmux { sock, remove };
        let out = server
            .tmux(env)
            .args(["new-session", "-d", "-s", "lead", "sleep", "600"])
            .output()
            .expect("tmux");
        assert!(
            out.status.success(),
            "tmux: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        server
    }

    fn tmux(&self, env: &TestEnv) -> Command {
        let mut cmd = env.command("tmux");
        cmd.arg("-f").arg("/dev/null").arg("-S").arg(&self.sock);
        cmd
    }

    /// `tmux list-windows -a`, and the server's process id.
    /// The tty of the lead's pane.
    fn pane_tty(&self, env: &TestEnv) -> String {
        let out = self
            .tmux(env)
            .args(["display-message", "-p", "-t", "lead", "#{pane_tty}"])
            .output()
            .expect("tmux");
        let tty = String::from_utf8_lossy(&out.stdout).trim().to_string();
        assert!(tty.starts_with("/dev/"), "no pane tty: {tty:?}");
        tty
    }

    fn state(&self, env: &TestEnv) -> (String, String) {
        let run = |args: &[&str]| {
            let out = self.tmux(env).args(args).output().expect("tmux");
            assert!(out.status.success(), "tmux {args:?} failed");
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        (
            run(&[
                "list-windows",
                "-a",
                "-F",
                "#{session_name}:#{window_index}",
            ]),
            run(&["display-message", "-p", "#{pid}"]).trim().to_string(),
        )
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.sock)
            .arg("kill-server")
            .output();
        if let Some(dir) = &self.remove {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Both sockets lie under /tmp, which the worker's private /tmp covers: of the test's
/// temp dir it sees only the repository's git dir, bound back read-only (a socket in
/// there would be reachable: a connect is no write).
#[test]
fn a_worker_cannot_drive_the_leads_tmux() {
    require_fence();
    leads_tmux_stays_the_leads(&TestEnv::new());
}

/// With the test's folders outside /tmp, the lead's tmux socket (the one its `$TMUX`
/// names) lies beside the repository, in the worker's view but for the empty tmpfs that
/// covers its folder: the write fence does not cover a connect.
#[test]
fn a_worker_cannot_drive_the_leads_tmux_outside_tmp() {
    require_fence();
    leads_tmux_stays_the_leads(&TestEnv::outside_tmp());
}

fn leads_tmux_stays_the_leads(env: &TestEnv) {
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    // One server on a socket in a folder next to the repository (as `TMUX_TMPDIR` would
    // put it), one on a socket directly under /tmp, as tmux's default `/tmp/tmux-<uid>/`.
    let beside = Tmux::start(env, env.root().join("lead-tmux/default"), None);
    let in_tmp_dir = PathBuf::from(format!("/tmp/crew-tmux-{}", uuid::Uuid::new_v4()));
    let in_tmp = Tmux::start(env, in_tmp_dir.join("default"), Some(in_tmp_dir));
    let servers = [&beside, &in_tmp];
    let before: Vec<(String, String)> = servers.iter().map(|s| s.state(env)).collect();
    let sockets = servers
        .iter()
        .map(|s| s.sock.display().to_string())
        .collect::<Vec<_>>()
        .join(":");
    // The lead's terminals: its panes' ttys.
    let ttys: Vec<String> = servers.iter().map(|s| s.pane_tty(env)).collect();
    // The lead runs inside its tmux: the one beside the repository, whose socket lies
    // outside /tmp (the one under /tmp is out of a worker's view whatever names it).
    let tmux_var = format!("{},{},0", beside.sock.display(), before[0].1);
    let (run, transcript) = hostile_run(
        env,
        &repo,
        "tmux",
        "hostile-tmux",
        &[
            format!("backends.hostile-tmux.env.LEAD_TMUX_SOCKETS=\"{sockets}\""),
            format!("backends.hostile-tmux.env.LEAD_TTYS=\"{}\"", ttys.join(" ")),
            backend_env("hostile-tmux", "LEAD_HOME", &env.home()),
        ],
        &[("TMUX", tmux_var.into()), ("TMUX_PANE", "%0".into())],
    );
    assert!(
        run["fence"].as_str().is_some_and(|f| f.ends_with("+ns")),
        "{run}\n{transcript}"
    );
    assert_eq!(run["outcome"], "pass", "{run}\n{transcript}");
    // Whatever a server was made to run has had time to run.
    std::thread::sleep(Duration::from_secs(2));
    let attempts = attempts(&transcript);
    let drove: Vec<String> = attempts
        .iter()
        .filter(|(_, result)| result != "refused")
        .map(|(name, result)| format!("{name}: {result}"))
        .collect();
    let after: Vec<(String, String)> = servers.iter().map(|s| s.state(env)).collect();
    let pwned = [repo.join("PWNED"), env.home().join("pwned")];
    let pwned: Vec<&PathBuf> = pwned.iter().filter(|p| p.exists()).collect();
    assert!(
        drove.is_empty() && pwned.is_empty() && after == before,
        "the worker drove the lead's tmux:\n{}\ncreated: {pwned:?}\nwindows before: {before:?}\nafter: {after:?}",
        drove.join("\n")
    );
    // 2 sockets, each by its path and through 2 other views of /tmp, 4 commands each;
    // a keystroke into each of the 2 panes; and 2 with $TMUX, which it did not get.
    assert_eq!(attempts.len(), 2 * 3 * 4 + 2 + 2, "{transcript}");
    assert!(transcript.contains("env TMUX unset\n"), "{transcript}");
}

/// A runtime folder that lies under /tmp is hidden from the worker along with the rest
/// of /tmp; it must not keep the worker from starting.
#[test]
fn a_lead_whose_runtime_folder_lies_under_tmp_still_gets_its_workers_started() {
    require_fence();
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    // As a lead without a login session's runtime folder gets one (`/tmp/runtime-<user>`).
    let runtime = env.root().join("runtime");
    std::fs::create_dir_all(&runtime).unwrap();
    let (run, transcript) = hostile_run(
        &env,
        &repo,
        "routes",
        "ok",
        &[],
        &[("XDG_RUNTIME_DIR", runtime.into())],
    );
    assert!(
        run["fence"].as_str().is_some_and(|f| f.ends_with("+ns")),
        "{run}"
    );
    assert_eq!(run["outcome"], "pass", "{run}\n{transcript}");
}

/// A worker opens pseudo-terminals and runs programs on them (python's `pty`, `script`):
/// they live in a devpts instance of its own. The lead's terminals stay out of its reach:
/// a keystroke pushed with TIOCSTI at the path of the lead's pane (which, in the
/// worker's view, names one of its own ptys if anything), through another process's view
/// of /dev, or through /dev/tty never shows in the lead's pane.
#[test]
fn a_worker_runs_programs_on_its_own_ptys_but_cannot_type_into_the_leads() {
    require_fence();
    let env = TestEnv::new();
    let repo = env.fixture("crew-repo.sh", "repo", &[]);
    let lead = Tmux::start(&env, env.root().join("lead-tmux/default"), None);
    let tty = lead.pane_tty(&env);
    let (run, transcript) = hostile_run(
        &env,
        &repo,
        "ptys",
        "pty",
        &[format!("backends.pty.env.LEAD_TTYS=\"{tty}\"")],
        &[],
    );
    assert!(
        run["fence"].as_str().is_some_and(|f| f.ends_with("+ns")),
        "{run}\n{transcript}"
    );
    assert_eq!(run["outcome"], "pass", "{run}\n{transcript}");
    // Its programs ran on its ptys.
    for line in ["own pty: /dev/pts/", "on a tty", "via script: /dev/pts/"] {
        assert!(transcript.contains(line), "no {line:?}:\n{transcript}");
    }
    // The pushes: at the pane's path, through its parent's and init's views, /dev/tty.
    let pushes: Vec<(String, String)> = transcript
        .lines()
        .filter(|l| l.starts_with("tiocsti "))
        .filter_map(|l| l.rsplit_once(": "))
        .map(|(name, result)| (name.to_string(), result.to_string()))
        .collect();
    assert_eq!(pushes.len(), 4, "{transcript}");
    let drove: Vec<&(String, String)> = pushes
        .iter()
        .filter(|(_, result)| result != "refused" && result != "own pty")
        .collect();
    assert!(drove.is_empty(), "{drove:?}\n{transcript}");
    // Whatever it pushed has had time to show, echoed, in the lead's pane.
    std::thread::sleep(Duration::from_secs(1));
    let out = lead
        .tmux(&env)
        .args(["capture-pane", "-p", "-t", "lead"])
        .output()
        .expect("tmux");
    assert!(out.status.success());
    let pane = String::from_utf8_lossy(&out.stdout);
    assert!(
        !pane.contains("crewpwned"),
        "the worker typed into the lead's pane:\n{pane}\n{transcript}"
    );
}
