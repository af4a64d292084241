//! The hooks directory git really uses, and the file work of adding and removing
//! git-crew's marker block in its hooks. The text edits themselves are
//! `core::hookblock`.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use super::error::{Context, Result};
use serde::Serialize;

use crate::core::hookblock::{self, Install};

/// The variable `git merge --ff-only` carries into the hooks while integrate advances a
/// checked-out branch: the post-merge hook leaves that run to integrate.
pub const INTEGRATING_VAR: &str = "GIT_CREW_INTEGRATING";

/// Suffix of a non-shell hook moved aside so a shell hook can chain it.
pub const CHAINED_SUFFIX: &str = ".pre-crew";

/// `core.hooksPath` when set (relative to the work tree, `~` expanded), else the common
/// `hooks` directory. Never rewrites `core.hooksPath`.
pub fn hooks_dir(repo: &gix::Repository) -> PathBuf {
    let configured = repo
        .config_snapshot()
        .string("core.hooksPath")
        .map(|v| v.to_string())
        .filter(|v| !v.is_empty());
    match configured {
        Some(value) => resolve(repo, &value),
        None => repo.common_dir().join("hooks"),
    }
}

/// A `core.hooksPath` value as git reads it: `~/` is the home folder, and a relative path
/// is relative to the work tree (of the worktree git runs in).
pub fn resolve(repo: &gix::Repository, value: &str) -> PathBuf {
    let path = match value.strip_prefix("~/") {
        Some(rest) => std::env::var_os("HOME")
            .map_or_else(|| PathBuf::from(value), |h| PathBuf::from(h).join(rest)),
        None => PathBuf::from(value),
    };
    if path.is_absolute() {
        path
    } else {
        repo.workdir().unwrap_or_else(|| repo.git_dir()).join(path)
    }
}

/// Whether `git merge --ff-only` of the checkout at `worktree` would run no hook but
/// git-crew's own post-merge shim, which leaves the run being integrated
/// (`GIT_CREW_INTEGRATING`) alone: then git may be told to look for no hook at all. It
/// is so only when the checkout is this repository's own work tree, `core.hooksPath` is
/// set nowhere (nor on git's command line), and the hooks directory holds nothing but
/// git's samples, `pre-commit` and `post-commit` (a fast-forward commits nothing) and a
/// `post-merge` that is init's shim alone. A user's post-merge, a chained hook, a
/// `reference-transaction`, `post-index-change` or `pre-auto-gc` hook — anything else —
/// and git runs the hooks as it always does.
pub fn only_crew_post_merge(repo: &gix::Repository, worktree: &Path) -> bool {
    if ["GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT"]
        .iter()
        .any(|var| std::env::var_os(var).is_some())
        || repo.config_snapshot().string("core.hooksPath").is_some()
    {
        return false;
    }
    let same = |a: &Path, b: &Path| match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if !repo.workdir().is_some_and(|own| same(own, worktree)) {
        return false;
    }
    let dir = repo.common_dir().join("hooks");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        // No hooks directory: no hook either.
        return !dir.exists();
    };
    for entry in entries {
        let Ok(entry) = entry else {
            return false;
        };
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            return false;
        };
        let fine = match name {
            "pre-commit" | "post-commit" => true,
            "post-merge" => std::fs::read_to_string(entry.path())
                .is_ok_and(|text| crate::core::install::is_bare_shim("post-merge", &text)),
            _ => name.ends_with(".sample"),
        };
        if !fine {
            return false;
        }
    }
    true
}

/// Writes the hooks of this repository's own hooks directory `dir`, each running the
/// hook of the same name in `shared` (a folder other repositories use too, left as it
/// is). A hook that already carries git-crew's block keeps it.
pub fn write_repo_hooks(dir: &Path, shared: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let shared = shared.to_string_lossy();
    for name in crate::core::install::CLIENT_HOOKS {
        let path = dir.join(name);
        let mut text = crate::core::install::repo_hook(name, &shared);
        if let Some(current) = read_optional(&path)?
            && let Some(block) = hookblock::block_of(&current)
            && let Install::Update(with_block) = hookblock::install(Some(&text), block)
        {
            text = with_block;
        }
        if read_optional(&path)?.as_deref() != Some(text.as_str()) {
            crate::sys::fs::write_atomic(&path, &text, 0o755)?;
        }
    }
    Ok(())
}

/// Takes this repository's own hooks directory `dir` back: the hooks init wrote there
/// (without git-crew's block, which uninstall took out first) go, and so does the
/// folder once it is empty. Returns the hooks removed, and whether something the user
/// put there keeps the folder.
pub fn remove_repo_hooks(dir: &Path, shared: &Path) -> Result<(Vec<&'static str>, bool)> {
    let shared = shared.to_string_lossy();
    let mut removed = Vec::new();
    for name in crate::core::install::CLIENT_HOOKS {
        let path = dir.join(name);
        if read_optional(&path)?.as_deref()
            == Some(crate::core::install::repo_hook(name, &shared).as_str())
        {
            std::fs::remove_file(&path)
                .with_context(|| format!("cannot remove {}", path.display()))?;
            removed.push(*name);
        }
    }
    let kept = match std::fs::remove_dir(dir) {
        Ok(()) => false,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(_) => true,
    };
    Ok((removed, kept))
}

/// What happened to one hook file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum HookAction {
    /// There was no hook: git-crew created it.
    Created,
    /// git-crew's block was added to (or refreshed in) an existing hook.
    Updated,
    /// The hook already carried the current block.
    Unchanged,
    /// A non-shell hook was moved aside and is now run after git-crew's block.
    Chained,
    /// git-crew's block was taken out of a hook that stays.
    Removed,
    /// A hook git-crew had created was deleted.
    Deleted,
    /// A chained hook was moved back into place.
    Restored,
    /// There was nothing of git-crew's to remove.
    Absent,
}

/// A hook cannot be chained because the name it would be moved to is taken.
#[derive(Debug, thiserror::Error)]
#[error("cannot move {hook} aside: {moved} already exists")]
pub struct ChainTargetTaken {
    pub hook: PathBuf,
    pub moved: PathBuf,
}

/// Why git-crew's block cannot go into a hook: a hook is in the way, or something failed
/// underneath.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error(transparent)]
    Taken(#[from] ChainTargetTaken),
    #[error(transparent)]
    Failed(#[from] super::error::Error),
}

/// What adding git-crew's block to one hook would do, read from the hook as it is and
/// written by nothing: [`apply`] carries it out, and `init --dry-run` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookPlan {
    pub path: PathBuf,
    pub action: HookAction,
    /// The hook's text now (none when there is no hook, or it is not text).
    pub before: Option<String>,
    /// The hook's text afterwards.
    pub after: String,
    /// Where a hook that cannot take a shell block is moved aside to (`Chained`).
    pub moved_to: Option<PathBuf>,
    mode: u32,
}

/// Plans adding `block` to the hook `name` in `dir`: refused with [`ChainTargetTaken`]
/// when the hook would have to be moved aside onto a name that is taken.
pub fn plan(dir: &Path, name: &str, block: &str) -> Result<HookPlan, InstallError> {
    let path = dir.join(name);
    let moved = format!("{name}{CHAINED_SUFFIX}");
    let moved_path = dir.join(&moved);
    // Once a hook has been chained, the block that belongs in its place is the chaining one.
    let block = if moved_path.exists() {
        hookblock::chain_block(block, &moved)
    } else {
        block.to_string()
    };
    let (install, before, mode) = match std::fs::symlink_metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            (hookblock::install(None, &block), None, 0o755)
        }
        Err(e) => {
            return Err(
                super::error::Error::within(format!("cannot read {}", path.display()), e).into(),
            );
        }
        // A symlink is moved aside as it is (it often points at a tracked script), and a
        // hook git would not run (not executable) stays one that does not run.
        Ok(meta) if meta.file_type().is_symlink() || meta.permissions().mode() & 0o111 == 0 => {
            (Install::Chain, None, 0o755)
        }
        Ok(meta) => {
            let mode = meta.permissions().mode() & 0o7777;
            match read_optional(&path)? {
                // A binary hook cannot take a shell block.
                Some(text) if text.contains('\0') || text.contains('\u{fffd}') => {
                    (Install::Chain, None, 0o755)
                }
                text => (hookblock::install(text.as_deref(), &block), text, mode),
            }
        }
    };
    let plan = |action, after: String, moved_to| HookPlan {
        path: path.clone(),
        action,
        before: before.clone(),
        after,
        moved_to,
        mode,
    };
    Ok(match install {
        Install::Create(text) => plan(HookAction::Created, text, None),
        Install::Update(text) => plan(HookAction::Updated, text, None),
        Install::Unchanged => plan(
            HookAction::Unchanged,
            before.clone().unwrap_or_default(),
            None,
        ),
        Install::Chain => {
            if std::fs::symlink_metadata(&moved_path).is_ok() {
                return Err(ChainTargetTaken {
                    hook: path,
                    moved: moved_path,
                }
                .into());
            }
            let chained = hookblock::chain_block(&block, &moved);
            let text = format!("{}\n{chained}\n", hookblock::SHEBANG);
            plan(HookAction::Chained, text, Some(moved_path))
        }
    })
}

/// Carries out a [`plan`] made just before.
pub fn apply(plan: &HookPlan) -> Result<HookAction> {
    if let Some(dir) = plan.path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    }
    match plan.action {
        HookAction::Unchanged => {}
        HookAction::Chained => {
            if let Some(moved) = &plan.moved_to {
                std::fs::rename(&plan.path, moved)
                    .with_context(|| format!("cannot move {} aside", plan.path.display()))?;
            }
            crate::sys::fs::write_atomic(&plan.path, &plan.after, 0o755)?;
        }
        _ => crate::sys::fs::write_atomic(&plan.path, &plan.after, plan.mode)?,
    }
    Ok(plan.action)
}

/// Adds `block` to the hook `name` in `dir`.
pub fn install(dir: &Path, name: &str, block: &str) -> Result<HookAction, InstallError> {
    Ok(apply(&plan(dir, name, block)?)?)
}

/// Takes git-crew's block out of the hook `name`; deletes the file when git-crew created
/// it and nothing else was added since; moves a chained hook back.
pub fn uninstall(dir: &Path, name: &str, created: bool) -> Result<HookAction> {
    let path = dir.join(name);
    let Some(text) = read_optional(&path)? else {
        return Ok(HookAction::Absent);
    };
    let Some(left) = hookblock::remove(&text) else {
        return Ok(HookAction::Absent);
    };
    let moved_path = dir.join(format!("{name}{CHAINED_SUFFIX}"));
    if hookblock::is_only_shebang(&left) && moved_path.exists() {
        std::fs::rename(&moved_path, &path)
            .with_context(|| format!("cannot restore {}", moved_path.display()))?;
        return Ok(HookAction::Restored);
    }
    if created && hookblock::is_only_shebang(&left) {
        std::fs::remove_file(&path).with_context(|| format!("cannot remove {}", path.display()))?;
        return Ok(HookAction::Deleted);
    }
    let mode = std::fs::metadata(&path).map_or(0o755, |m| m.permissions().mode() & 0o7777);
    crate::sys::fs::write_atomic(&path, &left, mode)?;
    Ok(HookAction::Removed)
}

/// Whether the hook `name` in `dir` carries git-crew's block.
pub fn has_block(dir: &Path, name: &str) -> Result<bool> {
    Ok(read_optional(&dir.join(name))?.is_some_and(|text| hookblock::block_of(&text).is_some()))
}

fn read_optional(path: &Path) -> Result<Option<String>> {
    match std::fs::read(path) {
        Ok(bytes) => Ok(Some(String::from_utf8_lossy(&bytes).into_owned())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}
