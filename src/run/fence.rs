//! The kernel write fence (Linux Landlock, through the `landlock` crate): every process
//! of an attempt — the worker and everything it spawns, the verify command, the commit of
//! the work it left behind — may write only the paths listed here. Reads, exec and the
//! network stay open. The fence goes up between fork and exec with `no_new_privs`, so
//! neither the worker nor its children can lift it.
//!
//! What a commit in a linked worktree writes (checked with real git under the fence): the
//! worktree, its private git dir (`<common>/worktrees/<name>/`: index, HEAD, logs,
//! config.worktree), new objects — sent to the run's own quarantine, never the
//! repository's store — and its branch's ref and reflog folders
//! (`refs/heads/crew/<task>/`, `logs/refs/heads/crew/<task>/`). Nothing else of the
//! repository: not the main checkout, other worktrees, hooks, `packed-refs`, other refs,
//! the notes, or git-crew's own records.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use anyhow::Context;
use landlock::{
    ABI, AccessFs, PathBeneath, PathFd, Ruleset, RulesetAttr, RulesetCreatedAttr, RulesetStatus,
    Scope,
};

/// The rights the fence handles: every write-side right up to Landlock ABI 5 (write,
/// truncate, make and remove files and folders, refer, device ioctls).
const HANDLED: ABI = ABI::V5;

/// Tool state and build caches under the home folder that workers may write by default
/// (those that exist; a CLI's own state folder is created for it).
/// No folder that holds programs is on it (`~/.cargo/bin`, `~/.rustup`, `~/.cache` as a
/// whole, where CLIs get installed): a worker that could rewrite a tool would reach past
/// its run through the lead's next use of it.
pub const HOME_DEFAULTS: &[&str] = &[
    ".codex",
    ".claude",
    ".claude.json",
    ".cache/pip",
    ".cache/uv",
    ".cache/go-build",
    ".cache/yarn",
    ".cache/pnpm",
    ".npm/_cacache",
    ".cargo/registry",
    ".cargo/git",
    ".gradle/caches",
    ".m2/repository",
    "go/pkg/mod",
];

/// Variables that name a CLI's state folder.
const STATE_VARS: &[&str] = &["CODEX_HOME", "CLAUDE_CONFIG_DIR"];

/// Device nodes every process needs to write.
const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/pts",
    "/dev/shm",
];

/// The Landlock ABI of the running kernel, if it has Landlock enabled.
pub fn kernel_abi() -> Option<i32> {
    // SAFETY: landlock_create_ruleset(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION) only
    // returns the ABI version (or an error); it touches no memory.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            1u32,
        )
    };
    (v > 0).then_some(v as i32)
}

/// What `"fence"` says: `landlock-v<ABI>`, or `none`.
pub fn describe(abi: Option<i32>) -> String {
    match abi {
        Some(abi) => format!("landlock-v{abi}"),
        None => "none".to_string(),
    }
}

/// The paths one fenced process tree may write.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fence {
    pub dirs: Vec<PathBuf>,
    /// Folders of the repository a worker may write, but never make a FIFO, socket or
    /// device node in: git-crew and git read them, and a FIFO there would hang them.
    pub repo_dirs: Vec<PathBuf>,
    pub files: Vec<PathBuf>,
    /// Variables every fenced process gets: where git writes new objects (the run's
    /// quarantine) and where it reads the repository's.
    pub env: Vec<(String, String)>,
}

/// A run's object quarantine: git inside the fence writes new objects here, never into
/// the repository's store (which it could otherwise corrupt in place: nothing checks a
/// loose object's name against its content on read). git-crew imports them, each hashed
/// again, when an attempt ends.
pub fn quarantine(run_dir: &Path) -> PathBuf {
    crate::state::runs::layout::quarantine(run_dir)
}

impl Fence {
    /// Sends git's new objects to `quarantine`, reading the repository's from
    /// `common_dir/objects`.
    fn quarantine_objects(&mut self, quarantine: &Path, common_dir: &Path) -> anyhow::Result<()> {
        for sub in ["pack", "info"] {
            std::fs::create_dir_all(quarantine.join(sub))
                .with_context(|| format!("cannot create {}", quarantine.display()))?;
        }
        // For readers that take no variable (git-crew's own hooks): the repository's store
        // is the quarantine's alternate.
        std::fs::write(
            quarantine.join("info").join("alternates"),
            format!("{}\n", common_dir.join("objects").display()),
        )
        .context("cannot write the quarantine's alternates")?;
        self.add_repo_dir(quarantine);
        self.env.push((
            "GIT_OBJECT_DIRECTORY".into(),
            quarantine.to_string_lossy().into_owned(),
        ));
        self.env.push((
            "GIT_ALTERNATE_OBJECT_DIRECTORIES".into(),
            common_dir.join("objects").to_string_lossy().into_owned(),
        ));
        Ok(())
    }
}

/// Why a `[sandbox] writable` entry cannot be used.
pub fn check_writable(entry: &Path, repo_dir: &Path, common_dir: &Path) -> Result<(), String> {
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let entry_c = canon(entry);
    for (what, held) in [
        ("repository", canon(repo_dir)),
        ("git dir", canon(common_dir)),
    ] {
        if held.starts_with(&entry_c) || entry_c.starts_with(&held) {
            return Err(format!(
                "[sandbox] writable entry {} holds or lies in the {what} ({}): it would void the write fence",
                entry.display(),
                held.display()
            ));
        }
    }
    Ok(())
}

/// Expands a `writable` entry: `~/x` is under the home folder; a relative one is refused.
pub fn expand(entry: &str, home: Option<&Path>) -> Result<PathBuf, String> {
    let path = match (entry.strip_prefix("~/"), home) {
        (Some(rest), Some(home)) => home.join(rest),
        (Some(_), None) => return Err(format!("`{entry}`: there is no home folder")),
        _ if entry == "~" => home
            .map(Path::to_path_buf)
            .ok_or_else(|| format!("`{entry}`: there is no home folder"))?,
        _ => PathBuf::from(entry),
    };
    if !path.is_absolute() {
        return Err(format!(
            "[sandbox] writable entry `{entry}` must be absolute or start with ~/"
        ));
    }
    Ok(path)
}

impl Fence {
    /// The shared part of every fence: device nodes, tool state and caches under `home`
    /// (the adapter's own state folder created), and the extra `writable` paths.
    pub fn base(home: Option<&Path>, adapter: &str, extra: &[PathBuf]) -> Fence {
        let mut fence = Fence::default();
        for dev in DEVICES {
            fence.add(Path::new(dev));
        }
        if let Some(home) = home {
            let own = match adapter {
                "codex" => Some(".codex"),
                "claude" => Some(".claude"),
                _ => None,
            };
            if let Some(own) = own {
                let _ = std::fs::create_dir_all(home.join(own));
            }
            for rel in HOME_DEFAULTS {
                fence.add(&home.join(rel));
            }
        }
        for path in extra {
            fence.add(path);
        }
        fence
    }

    /// Adds a folder of the repository (see `repo_dirs`); a missing one is skipped.
    pub fn add_repo_dir(&mut self, path: &Path) {
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
            self.repo_dirs.push(path.to_path_buf());
        }
    }

    /// Adds a path that exists (as a folder or a file rule); a missing one is skipped.
    pub fn add(&mut self, path: &Path) {
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => self.dirs.push(path.to_path_buf()),
            Ok(_) => self.files.push(path.to_path_buf()),
            Err(_) => {}
        }
    }

    /// Puts the fence up in `command`'s child between fork and exec. The ruleset is built
    /// here, in the parent; the child only restricts itself, and fails to start — never
    /// runs unfenced — when the kernel does not enforce it.
    pub fn apply_to(&self, command: &mut Command) -> anyhow::Result<()> {
        let write = AccessFs::from_write(HANDLED);
        let file_rights = write & AccessFs::from_file(HANDLED);
        let mut ruleset = Ruleset::default()
            .handle_access(write)
            .context("cannot set up the write fence")?
            // Nor may a fenced process signal one outside the fence (the supervisor, the
            // lead's own processes), where the kernel scopes signals (ABI 6).
            .scope(Scope::Signal)
            .context("cannot set up the write fence")?
            .create()
            .context("cannot create the write fence")?;
        for dir in &self.dirs {
            let fd = PathFd::new(dir).with_context(|| format!("cannot open {}", dir.display()))?;
            ruleset = ruleset.add_rule(PathBeneath::new(fd, write))?;
        }
        let special =
            AccessFs::MakeFifo | AccessFs::MakeSock | AccessFs::MakeChar | AccessFs::MakeBlock;
        for dir in &self.repo_dirs {
            let fd = PathFd::new(dir).with_context(|| format!("cannot open {}", dir.display()))?;
            ruleset = ruleset.add_rule(PathBeneath::new(fd, write & !special))?;
        }
        for file in &self.files {
            let fd =
                PathFd::new(file).with_context(|| format!("cannot open {}", file.display()))?;
            ruleset = ruleset.add_rule(PathBeneath::new(fd, file_rights))?;
        }
        for (key, value) in &self.env {
            command.env(key, value);
        }
        let slot = Mutex::new(Some(ruleset));
        // SAFETY: the closure runs in the forked child before exec. It takes the ruleset
        // built above and makes two system calls (prctl, landlock_restrict_self); it
        // allocates nothing on the success path.
        unsafe {
            command.pre_exec(move || {
                let ruleset = slot
                    .lock()
                    .ok()
                    .and_then(|mut s| s.take())
                    .ok_or_else(|| std::io::Error::other("the write fence was already used"))?;
                match ruleset.restrict_self() {
                    Ok(status) if status.ruleset != RulesetStatus::NotEnforced => Ok(()),
                    Ok(_) => Err(std::io::Error::other(
                        "the kernel does not enforce the write fence",
                    )),
                    Err(_) => Err(std::io::Error::other("cannot put up the write fence")),
                }
            });
        }
        Ok(())
    }
}

/// What the repository side of a run's fence needs.
pub struct RunPaths<'a> {
    pub common_dir: &'a Path,
    pub worktree: &'a Path,
    pub task: &'a str,
    pub run_dir: &'a Path,
    pub may_commit: bool,
}

/// The fence of a run's worker: for a run that commits, its worktree, its private git
/// dir, the object store, its branch's ref and reflog folders; for any run, its temp
/// folder (`TMPDIR`), its manifest and session file (created empty if missing). Returns
/// the fence and the temp folder.
pub fn for_run(
    paths: &RunPaths,
    base: Fence,
    manifest: &Path,
    session: &Path,
) -> anyhow::Result<(Fence, PathBuf)> {
    let mut fence = base;
    let tmp = crate::state::runs::layout::tmp(paths.run_dir);
    std::fs::create_dir_all(&tmp).context("cannot create the run's temp folder")?;
    fence.add(&tmp);
    for file in [manifest, session] {
        if !file.exists() {
            std::fs::write(file, "")
                .with_context(|| format!("cannot create {}", file.display()))?;
        }
        fence.add(file);
    }
    if paths.may_commit {
        fence.add_repo_dir(paths.worktree);
        let name = paths
            .worktree
            .file_name()
            .context("a worktree path has a name")?;
        fence.add_repo_dir(&paths.common_dir.join("worktrees").join(name));
        fence.quarantine_objects(&quarantine(paths.run_dir), paths.common_dir)?;
        for folder in ["refs/heads/crew", "logs/refs/heads/crew"] {
            let dir = paths.common_dir.join(folder).join(paths.task);
            // git cannot make these under the fence: they are made before it goes up.
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            fence.add_repo_dir(&dir);
        }
    }
    Ok((fence, tmp))
}

/// The fence of a verify in a checkout (the run's worktree, or a throwaway one): that
/// checkout, its private git dir, the run's object quarantine (next to the verifier
/// folder) and the verifier folder.
pub fn for_checkout(
    common_dir: &Path,
    checkout: &Path,
    verifier_dir: &Path,
    base: Fence,
) -> anyhow::Result<Fence> {
    let mut fence = base;
    fence.add_repo_dir(checkout);
    if let Some(name) = checkout.file_name() {
        fence.add_repo_dir(&common_dir.join("worktrees").join(name));
    }
    let run_dir = verifier_dir
        .parent()
        .context("a verifier folder lies in its run's folder")?;
    fence.quarantine_objects(&quarantine(run_dir), common_dir)?;
    fence.add(verifier_dir);
    Ok(fence)
}

/// The shared part of a run's fence, when the run has one: `None` for a run dispatched
/// without a fence.
pub fn base_for(
    record: &crate::core::record::RunRecord,
    run_dir: &Path,
) -> anyhow::Result<Option<Fence>> {
    if !record
        .fence
        .as_deref()
        .is_some_and(|f| f.starts_with("landlock"))
    {
        return Ok(None);
    }
    let extra: Vec<PathBuf> = match std::fs::read(crate::state::runs::layout::fence_extra(run_dir))
    {
        Ok(bytes) => serde_json::from_slice(&bytes).context("cannot read the run's fence")?,
        Err(_) => Vec::new(),
    };
    let mut extra = extra;
    // A CLI's state folder named in the worker's environment (the backend's `env`, else
    // this process's) is its state too.
    let config: crate::core::flight::Backend =
        std::fs::read(crate::state::runs::layout::backend_config(run_dir))
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default();
    for key in STATE_VARS {
        let value = config
            .env
            .as_ref()
            .and_then(|e| e.get(*key).cloned())
            .or_else(|| std::env::var(key).ok());
        if let Some(dir) = value.map(PathBuf::from).filter(|p| p.is_absolute()) {
            let _ = std::fs::create_dir_all(&dir);
            extra.push(dir);
        }
    }
    let home = std::env::var_os("HOME").map(PathBuf::from);
    Ok(Some(Fence::base(home.as_deref(), &record.adapter, &extra)))
}
