//! What a run's write fence holds (the kernel side is `sys::fence`): every process of an
//! attempt — the worker and everything it spawns, the verify command, the commit of the
//! work it left behind — may write only the paths listed here.
//!
//! What a commit in a linked worktree writes (checked with real git under the fence): the
//! worktree, its private git dir (`<common>/worktrees/<name>/`: index, HEAD, logs,
//! config.worktree), new objects — sent to the run's own quarantine, never the
//! repository's store — and its branch's ref and reflog folders
//! (`refs/heads/crew/<task>/`, `logs/refs/heads/crew/<task>/`). Nothing else of the
//! repository: not the main checkout, other worktrees, hooks, `packed-refs`, other refs,
//! the notes, or git-crew's own records.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::core::flight::AdapterKind;
use crate::sys::fence::Fence;

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

/// Sends git's new objects to the run's quarantine (`core::layout::quarantine`), never
/// into the repository's store, which they could otherwise corrupt in place (nothing
/// checks a loose object's name against its content on read); git-crew imports them,
/// each hashed again, when an attempt ends. The repository's objects are read from
/// `common_dir/objects`.
fn quarantine_objects(
    fence: &mut Fence,
    quarantine: &Path,
    common_dir: &Path,
) -> anyhow::Result<()> {
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
    fence.add_repo_dir(quarantine);
    fence.env.push((
        "GIT_OBJECT_DIRECTORY".into(),
        quarantine.to_string_lossy().into_owned(),
    ));
    fence.env.push((
        "GIT_ALTERNATE_OBJECT_DIRECTORIES".into(),
        common_dir.join("objects").to_string_lossy().into_owned(),
    ));
    Ok(())
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

/// The shared part of every fence: device nodes, tool state and caches under `home`
/// (the adapter's own state folder created), and the extra `writable` paths.
pub fn base(home: Option<&Path>, adapter: AdapterKind, extra: &[PathBuf]) -> Fence {
    let mut fence = Fence::with_devices();
    if let Some(home) = home {
        if let Some(own) = adapter.home_state() {
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
/// folder (`TMPDIR`), and the files it hands in (its manifest, session and usage files,
/// created empty if missing). Returns the fence and the temp folder.
pub fn for_run(
    paths: &RunPaths,
    base: Fence,
    handed_in: &[&Path],
) -> anyhow::Result<(Fence, PathBuf)> {
    let mut fence = base;
    let tmp = crate::core::layout::tmp(paths.run_dir);
    std::fs::create_dir_all(&tmp).context("cannot create the run's temp folder")?;
    fence.add(&tmp);
    for &file in handed_in {
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
        quarantine_objects(
            &mut fence,
            &crate::core::layout::quarantine(paths.run_dir),
            paths.common_dir,
        )?;
        for dir in ref_folders(paths.common_dir, paths.task)? {
            fence.add_repo_dir(&dir);
        }
    }
    Ok((fence, tmp))
}

/// The task's ref and reflog folders (`refs/heads/crew/<task>/`,
/// `logs/refs/heads/crew/<task>/`), made when missing: git cannot make them under the
/// fence, so they are made before it goes up — and again after strays were taken out of
/// them, in case that left one empty and git took it away.
pub fn ref_folders(common_dir: &Path, task: &str) -> anyhow::Result<[PathBuf; 2]> {
    let dirs = ["refs/heads/crew", "logs/refs/heads/crew"].map(|f| common_dir.join(f).join(task));
    for dir in &dirs {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    Ok(dirs)
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
    quarantine_objects(
        &mut fence,
        &crate::core::layout::quarantine(run_dir),
        common_dir,
    )?;
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
    let extra: Vec<PathBuf> = match std::fs::read(crate::core::layout::fence_extra(run_dir)) {
        Ok(bytes) => serde_json::from_slice(&bytes).context("cannot read the run's fence")?,
        Err(_) => Vec::new(),
    };
    let mut extra = extra;
    // A CLI's state folder named in the worker's environment (the backend's `env`, else
    // this process's) is its state too.
    let config: crate::core::flight::Backend =
        std::fs::read(crate::core::layout::backend_config(run_dir))
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
    Ok(Some(base(home.as_deref(), record.adapter, &extra)))
}
