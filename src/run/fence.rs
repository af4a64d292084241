//! What a run's write fence holds (the kernel side is `sys::fence`): every process of an
//! attempt — the worker and everything it spawns, the verify command, the commit of the
//! work it left behind — may write only the paths listed here.
//!
//! What a commit in a linked worktree writes (checked with real git under the fence): the
//! worktree, its private git dir (`<common>/worktrees/<name>/`: index, HEAD, logs,
//! config.worktree), new objects — sent to the run's own quarantine, never the
//! repository's store, and LFS objects to the run's own LFS store — and its branch's ref
//! and reflog folders (`refs/heads/crew/<task>/`, `logs/refs/heads/crew/<task>/`).
//! Nothing else of the repository: not the main checkout, other worktrees, hooks,
//! `packed-refs`, other refs, the notes, the repository's LFS store, or git-crew's own
//! records.

use std::path::{Path, PathBuf};

use crate::run::error::{Context, Result};

use crate::sys::fence::Fence;

/// Sends git's new objects to the run's quarantine (`core::layout::quarantine`), never
/// into the repository's store, which they could otherwise corrupt in place (nothing
/// checks a loose object's name against its content on read); git-crew imports them,
/// each hashed again, when an attempt ends.
///
/// Under a private `/tmp` (and where overlayfs serves), the process sees the git dir as
/// a private view whose store writes into the quarantine: git needs no variable, so a
/// nested repository (a submodule, a scratch repository of a test) keeps its own objects,
/// and what git writes beyond the fence (`refs/stash`, `packed-refs.lock`) stays in the
/// view. Elsewhere `GIT_OBJECT_DIRECTORY` names the quarantine and the repository's
/// objects are read from `common_dir/objects`.
fn quarantine_objects(fence: &mut Fence, run_dir: &Path, common_dir: &Path) -> Result<()> {
    let quarantine = crate::core::layout::quarantine(run_dir);
    for sub in ["pack", "info"] {
        std::fs::create_dir_all(quarantine.join(sub))
            .with_context(|| format!("cannot create {}", quarantine.display()))?;
    }
    fence.add_repo_dir(&quarantine);
    let alternates = quarantine.join("info").join("alternates");
    if fence.private_tmp.is_some() {
        let view = crate::sys::ns::GitView {
            common: common_dir.to_path_buf(),
            objects_upper: quarantine.clone(),
            objects_work: crate::core::layout::quarantine_work(run_dir),
            lfs_upper: crate::core::layout::lfs_store(run_dir),
            lfs_work: crate::core::layout::lfs_work(run_dir),
            scratch: crate::core::layout::git_view_scratch(run_dir),
        };
        if view.representable() && crate::sys::ns::view_available() {
            // The LFS overlay's lower layer is the repository's LFS store, made if the
            // repository has none yet (git-lfs makes it on first use).
            let lfs = common_dir.join("lfs");
            for dir in [
                &view.objects_work,
                &view.scratch,
                &view.lfs_upper,
                &view.lfs_work,
                &lfs,
            ] {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
            }
            // In the view the quarantine's `info/` lies over the store's own: no alternates
            // of its own there (the worker's symlink is taken away, not followed).
            crate::sys::fs::remove_entry(&alternates)?;
            fence.git_view = Some(view);
            return Ok(());
        }
    }
    // For readers that take no variable (git-crew's own hooks): the repository's store
    // is the quarantine's alternate.
    std::fs::write(
        &alternates,
        format!("{}\n", common_dir.join("objects").display()),
    )
    .context("cannot write the quarantine's alternates")?;
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

/// Sends git LFS's new objects, and its temp files, to the run's own LFS store
/// (`core::layout::lfs_store`), never into the repository's (`<common>/lfs`): a lead-side
/// checkout reads an LFS object by its name without hashing it again. git-crew imports
/// them, each hashed again, when an attempt ends (`git::lfs`). In a git view (see
/// [`quarantine_objects`]) the repository's LFS store is an overlay whose upper layer is
/// the run's: git-lfs needs no setting and reads the repository's objects as they are.
/// Elsewhere every fenced process gets `lfs.storage` (through `GIT_CONFIG_COUNT`), and
/// git-lfs reads the repository's objects from the LFS store beside the alternate object
/// store (`GIT_ALTERNATE_OBJECT_DIRECTORIES`, for a run that commits), copying what it
/// needs into the run's. Given to every run, read-only ones too: `git status` cleans a
/// file through git-lfs when the index's stat data cannot vouch for it.
fn lfs_store(fence: &mut Fence, run_dir: &Path) -> Result<()> {
    if fence.git_view.is_some() {
        return Ok(());
    }
    let store = crate::core::layout::lfs_store(run_dir);
    std::fs::create_dir_all(&store)
        .with_context(|| format!("cannot create {}", store.display()))?;
    fence.add_repo_dir(&store);
    fence.git_config("lfs.storage", &store.to_string_lossy());
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

/// The shared part of every fence of a run: device nodes, the worker's own home and the
/// workers' caches, the extra `writable` paths, the worker's variables (and none of the
/// lead's services'), its temp folder, and — where the run's fence says `+ns` — a private
/// /tmp with the lead's runtime folder hidden.
pub fn base(
    workenv: &crate::run::workenv::WorkerEnv,
    run_dir: &Path,
    namespaces: bool,
    extra: &[PathBuf],
) -> Result<Fence> {
    let mut fence = Fence::with_devices();
    fence.add(&workenv.places.home);
    fence.add(&workenv.places.cache);
    for path in extra {
        fence.add(path);
    }
    let tmp = crate::core::layout::tmp(run_dir);
    std::fs::create_dir_all(&tmp).context("cannot create the run's temp folder")?;
    fence.add(&tmp);
    fence.env = workenv.env.clone();
    fence
        .env
        .push(("TMPDIR".into(), tmp.to_string_lossy().into_owned()));
    // No automatic gc or maintenance in a run: in a private view of the git dir a
    // `gc --auto` after a commit would pack the refs into the view (and drop the run's
    // real branch ref, packed there alone) and repack the repository's whole store into
    // the run's quarantine. A worker's own `git gc` harms only its own run.
    fence.git_config("gc.auto", "0");
    fence.git_config("maintenance.auto", "false");
    fence.unset = crate::core::workenv::SCRUBBED
        .iter()
        .map(|s| s.to_string())
        .collect();
    // What the worker reads of the lead's: its global git config and its toolchains.
    for key in ["GIT_CONFIG_GLOBAL", "RUSTUP_HOME"] {
        if let Some((_, value)) = workenv.env.iter().find(|(k, _)| k == key) {
            fence.readable.push(PathBuf::from(value));
        }
    }
    if namespaces {
        fence.private_tmp = Some(tmp);
        fence.hide = runtime_dirs();
    }
    Ok(fence)
}

/// The lead's runtime folders (`$XDG_RUNTIME_DIR`, `/run/user/<uid>`), where its
/// sessions' sockets live, and the folders of the sockets its environment names (its
/// tmux server's, `$TMUX_TMPDIR`, its ssh agent's).
fn runtime_dirs() -> Vec<PathBuf> {
    let var = |key: &str| {
        std::env::var_os(key)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let mut dirs: Vec<PathBuf> = var("XDG_RUNTIME_DIR").into_iter().collect();
    dirs.extend(var("TMUX_TMPDIR"));
    let socket = |value: Option<PathBuf>| {
        value.and_then(|v| {
            // `$TMUX` is `<socket>,<pid>,<session>`.
            let text = v.to_string_lossy().into_owned();
            let path = PathBuf::from(text.split(',').next().unwrap_or_default());
            path.parent()
                .filter(|p| p.is_absolute())
                .map(Path::to_path_buf)
        })
    };
    dirs.extend(socket(var("TMUX")));
    dirs.extend(socket(var("SSH_AUTH_SOCK")));
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    dirs.push(PathBuf::from(format!("/run/user/{uid}")));
    dirs.sort();
    dirs.dedup();
    dirs
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
/// folder (`TMPDIR`), its LFS store, and the files it hands in (its manifest, session and usage files,
/// created empty if missing). Returns the fence and the temp folder.
pub fn for_run(paths: &RunPaths, base: Fence, handed_in: &[&Path]) -> Result<(Fence, PathBuf)> {
    let mut fence = base;
    // Git reads the whole repository (its objects, refs, config) under a private /tmp.
    fence.readable.push(paths.common_dir.to_path_buf());
    // The temp folder is made and fenced by `base`.
    let tmp = crate::core::layout::tmp(paths.run_dir);
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
        quarantine_objects(&mut fence, paths.run_dir, paths.common_dir)?;
        for dir in ref_folders(paths.common_dir, paths.task)? {
            fence.add_repo_dir(&dir);
        }
    }
    lfs_store(&mut fence, paths.run_dir)?;
    Ok((fence, tmp))
}

/// The task's ref and reflog folders (`refs/heads/crew/<task>/`,
/// `logs/refs/heads/crew/<task>/`), made when missing: git cannot make them under the
/// fence, so they are made before it goes up — and again after strays were taken out of
/// them, in case that left one empty and git took it away.
pub fn ref_folders(common_dir: &Path, task: &str) -> Result<[PathBuf; 2]> {
    let dirs = ["refs/heads/crew", "logs/refs/heads/crew"].map(|f| common_dir.join(f).join(task));
    for dir in &dirs {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    Ok(dirs)
}

/// The fence of a verify in a checkout (the run's worktree, or a throwaway one): that
/// checkout, its private git dir, the run's object quarantine and LFS store (next to the
/// verifier folder) and the verifier folder.
pub fn for_checkout(
    common_dir: &Path,
    checkout: &Path,
    verifier_dir: &Path,
    base: Fence,
) -> Result<Fence> {
    let mut fence = base;
    fence.readable.push(common_dir.to_path_buf());
    fence.add_repo_dir(checkout);
    if let Some(name) = checkout.file_name() {
        fence.add_repo_dir(&common_dir.join("worktrees").join(name));
    }
    let run_dir = verifier_dir
        .parent()
        .context("a verifier folder lies in its run's folder")?;
    quarantine_objects(&mut fence, run_dir, common_dir)?;
    lfs_store(&mut fence, run_dir)?;
    fence.add(verifier_dir);
    Ok(fence)
}

/// The shared part of a run's fence, when the run has one (`None` for a run dispatched
/// without a fence), with its worker's environment made.
pub fn base_for(record: &crate::core::record::RunRecord, run_dir: &Path) -> Result<Option<Fence>> {
    let config = backend_of(run_dir);
    let workenv = crate::run::workenv::prepare(run_dir, record, &config)?;
    fenced(record, run_dir, &workenv)
}

/// The backend config a run was dispatched with.
pub fn backend_of(run_dir: &Path) -> crate::core::flight::Backend {
    crate::state::run_files::backend(run_dir).unwrap_or_default()
}

/// [`base_for`], for a worker environment already made.
pub fn fenced(
    record: &crate::core::record::RunRecord,
    run_dir: &Path,
    workenv: &crate::run::workenv::WorkerEnv,
) -> Result<Option<Fence>> {
    if !record
        .fence
        .as_deref()
        .is_some_and(|f| f.starts_with("landlock"))
    {
        return Ok(None);
    }
    let extra = crate::state::run_files::writable(run_dir)?;
    let namespaces = crate::core::dispatch::fence_has_namespaces(record.fence.as_deref());
    let mut fence = base(workenv, run_dir, namespaces, &extra)?;
    // A run with a setup may have links into the lead's checkout (heavy folders a setup
    // links rather than copies): its processes read it, never write it, even under a
    // private /tmp. (`<common>/crew/runs/<run>`)
    if record.setup.is_some()
        && let Some(main) = run_dir
            .parent()
            .and_then(Path::parent)
            .and_then(Path::parent)
            .and_then(main_worktree)
    {
        fence.readable.push(main);
    }
    Ok(Some(fence))
}

/// The repository's main worktree as git names it (`get_main_worktree`): its common dir
/// without the trailing `.git`, canonical; none for a bare repository, whose common dir
/// is not a `.git` folder.
pub fn main_worktree(common_dir: &Path) -> Option<PathBuf> {
    let common = common_dir.canonicalize().ok()?;
    if common.file_name()? != ".git" {
        return None;
    }
    common.parent().map(Path::to_path_buf)
}
