//! Run worktrees and their branches, through the git binary (a linked worktree, its lock,
//! its own config, commits made on a worker's behalf, and what its branch changed).

use std::path::{Path, PathBuf};

use super::error::{Context, Result, bail};

use super::run::{Finished, GitRunner};
use crate::core::oversize::LeftFile;

/// Makes the run's branch `branch` at `base`; it must not exist (or already point at
/// `base`). One ref written, with a reflog entry: the part of a worktree's making that
/// other dispatches must see at once.
pub fn create_branch(repo: &gix::Repository, branch: &str, base: &str) -> Result<()> {
    use gix::refs::transaction::PreviousValue;
    let base = gix::ObjectId::from_hex(base.as_bytes()).context("the base is not an object id")?;
    let name: gix::refs::FullName = format!("refs/heads/{branch}")
        .try_into()
        .with_context(|| format!("`{branch}` is not a valid branch name"))?;
    repo.reference(
        name,
        base,
        PreviousValue::MustNotExist,
        format!("crew: branch {branch}"),
    )
    .with_context(|| format!("cannot create branch {branch}"))?;
    Ok(())
}

/// Deletes a local branch in-process whatever it holds (one being taken back); a missing
/// one is fine.
pub fn delete_branch(repo: &gix::Repository, branch: &str) {
    if let Ok(Some(reference)) = repo.try_find_reference(format!("refs/heads/{branch}").as_str()) {
        let _ = reference.delete();
    }
}

/// Registers a linked worktree at `path` (which must not exist) on the existing branch
/// `branch`, locked with `reason` from the start, without checking anything out yet
/// ([`check_out`] does). The administration is written as `git worktree add` writes it
/// (`gitdir`, `commondir`, `HEAD`, `locked`, the worktree's `.git` link) and as
/// [`RunTree::restore`] puts it back; no other worktree is read on the way — neither by a
/// git process nor by gix's own `add_worktree`, which opens every one of them — so its
/// cost does not grow with the worktrees the repository holds. On failure nothing of it
/// is left (the branch is the caller's). Returns the worktree's private git dir.
pub fn register(
    repo: &gix::Repository,
    path: &Path,
    branch: &str,
    reason: &str,
) -> Result<PathBuf> {
    let common = std::path::absolute(repo.common_dir()).context("the common git dir")?;
    let path = std::path::absolute(path).context("the worktree path")?;
    let name = path
        .file_name()
        .with_context(|| format!("{} names no worktree", path.display()))?;
    let worktrees = common.join("worktrees");
    std::fs::create_dir_all(&worktrees)
        .with_context(|| format!("cannot create {}", worktrees.display()))?;
    let admin = worktrees.join(name);
    // Made here, or the name is taken: nothing of another worktree is touched.
    std::fs::create_dir(&admin).with_context(|| format!("cannot create {}", admin.display()))?;
    let made = (|| -> Result<()> {
        let write = |file: &Path, text: &str| {
            std::fs::write(file, text).with_context(|| format!("cannot write {}", file.display()))
        };
        write(&admin.join("locked"), &format!("{reason}\n"))?;
        write(&admin.join("commondir"), "../..\n")?;
        write(
            &admin.join("gitdir"),
            &format!("{}\n", path.join(".git").display()),
        )?;
        write(&admin.join("HEAD"), &format!("ref: refs/heads/{branch}\n"))?;
        carry_over(repo, &admin)?;
        std::fs::create_dir(&path).with_context(|| format!("cannot create {}", path.display()))?;
        write(
            &path.join(".git"),
            &format!("gitdir: {}\n", admin.display()),
        )
    })();
    if let Err(err) = made {
        discard_at(&admin, &path);
        return Err(err);
    }
    Ok(admin)
}

/// What `git worktree add` carries into a new worktree's administration `admin` from the
/// worktree it is run from (`repo`'s): its own config (`config.worktree`, under
/// `extensions.worktreeConfig`), without `core.worktree` and a true `core.bare`; and its
/// sparse-checkout patterns while sparse checkout is on — so the checkout is cut as git
/// cuts it (dispatch writes the run's own config over it afterwards).
fn carry_over(repo: &gix::Repository, admin: &Path) -> Result<()> {
    let own = repo.git_dir().join("config.worktree");
    if super::config::worktree_config_on(repo) && plain_text(&own).is_some() {
        let mut config =
            gix::config::File::from_path_no_includes(own.clone(), gix::config::Source::Worktree)
                .with_context(|| format!("cannot read {}", own.display()))?;
        if config.boolean("core.bare").ok().flatten() == Some(true)
            && let Ok(mut values) = config.raw_values_mut("core.bare")
        {
            values.delete_all();
        }
        if let Ok(mut values) = config.raw_values_mut("core.worktree") {
            values.delete_all();
        }
        let mut text = Vec::new();
        config
            .write_to(&mut text)
            .context("cannot write the worktree's config")?;
        std::fs::write(admin.join("config.worktree"), text)
            .with_context(|| format!("cannot write {}", admin.display()))?;
    }
    let patterns = repo.git_dir().join("info").join("sparse-checkout");
    if repo.config_snapshot().boolean("core.sparseCheckout") == Some(true)
        && let Some(text) = plain_text(&patterns)
    {
        std::fs::create_dir(admin.join("info"))
            .and_then(|()| std::fs::write(admin.join("info").join("sparse-checkout"), text))
            .with_context(|| format!("cannot write {}", admin.display()))?;
    }
    Ok(())
}

/// Checks out HEAD in the worktree [`register`] made at `path` (nothing there but its
/// `.git` link): in-process with gix, on every core; where gix cannot (a filter it does
/// not run, say), with git in that worktree alone, no hook run. What a failed checkout
/// wrote stays for the caller to discard with the worktree.
pub fn check_out(path: &Path) -> Result<()> {
    if crate::sys::failpoint::fails_at("dispatch-checkout") {
        bail!("the checkout failed (GIT_CREW_FAILPOINT=dispatch-checkout)");
    }
    checkout(path)
}

/// [`check_out`]'s work.
fn checkout(path: &Path) -> Result<()> {
    let interrupt = std::sync::atomic::AtomicBool::new(false);
    let in_process = gix::open(path)
        .with_context(|| format!("cannot open {}", path.display()))
        .and_then(|linked| {
            let worktree = linked
                .worktree()
                .context("a linked worktree has a work tree")?;
            worktree
                .checkout(gix::progress::Discard, &interrupt)
                .with_context(|| format!("cannot check out {}", path.display()))?;
            Ok(())
        });
    let Err(err) = in_process else {
        return Ok(());
    };
    // What gix wrote goes, its `.git` link and administration stay for git.
    let admin = std::fs::read_to_string(path.join(".git"))
        .ok()
        .and_then(|t| {
            t.strip_prefix("gitdir: ")
                .map(|a| PathBuf::from(a.trim_end()))
        });
    if let Some(admin) = &admin {
        let _ = std::fs::remove_file(admin.join("index"));
    }
    if let Ok(entries) = std::fs::read_dir(path) {
        for entry in entries.flatten().filter(|e| e.file_name() != ".git") {
            let _ = crate::sys::fs::remove_entry(&entry.path());
        }
    }
    GitRunner::new(path)
        .with_config("core.hooksPath=/dev/null")
        .output(&["reset", "--hard", "--quiet"])
        .map_err(|git_err| {
            super::error::Error::within(
                format!("cannot check out the worktree {}: {err}", path.display()),
                git_err,
            )
        })?;
    Ok(())
}

/// Removes the run worktree at `path` of the repository whose common dir is `common_dir`
/// and its registration, whatever it holds (one being taken back), in-process; a worktree
/// that is not there is fine.
pub fn discard(common_dir: &Path, path: &Path) {
    if let Some(name) = path.file_name() {
        discard_at(&common_dir.join("worktrees").join(name), path);
    }
}

/// Removes the work tree at `path`, then its administration `admin`, as `git worktree
/// remove --force` does — no link followed.
fn discard_at(admin: &Path, path: &Path) {
    let _ = crate::sys::fs::remove_entry(path);
    let _ = crate::sys::fs::remove_entry(admin);
    if let Some(registrations) = admin.parent() {
        let _ = std::fs::remove_dir(registrations);
    }
}

/// The administration folder of the registered worktree at `path`.
fn admin_dir(common_dir: &Path, path: &Path) -> Result<PathBuf> {
    let name = path
        .file_name()
        .with_context(|| format!("{} names no worktree", path.display()))?;
    let admin = common_dir.join("worktrees").join(name);
    if !std::fs::symlink_metadata(&admin).is_ok_and(|m| m.is_dir()) {
        bail!("{} is not a registered worktree", path.display());
    }
    Ok(admin)
}

/// Writes a worktree's own config (`config.worktree` in its private git dir) as
/// `git config --worktree` would: `(section, key, values)` triples, one line per value.
pub fn write_config(git_dir: &Path, entries: &[(&str, &str, Vec<String>)]) -> Result<()> {
    let text = config_text(entries)?;
    Ok(crate::sys::fs::write_atomic(
        &git_dir.join("config.worktree"),
        &text,
        0o644,
    )?)
}

/// What [`write_config`] writes for `entries`.
fn config_text(entries: &[(&str, &str, Vec<String>)]) -> Result<String> {
    let mut text = String::new();
    let mut section = "";
    for (sec, key, values) in entries {
        if *sec != section {
            text.push_str(&format!("[{sec}]\n"));
            section = sec;
        }
        for value in values {
            if value.contains(['\n', '\r', '\0']) {
                bail!("a config value cannot hold a line break: {value:?}");
            }
            let quoted = value.replace('\\', "\\\\").replace('"', "\\\"");
            text.push_str(&format!("\t{key} = \"{quoted}\"\n"));
        }
    }
    Ok(text)
}

/// Unlocks the run worktree at `path` (of the repository whose work tree is
/// `repo_dir`); one that is not locked is fine. In-process — the `locked` file of its
/// registration removed, as `git worktree unlock` does — when the registration named
/// after it is the one of `path`; else through git, which looks at every worktree.
pub fn unlock(repo_dir: &Path, path: &Path) -> Result<()> {
    let common = gix::open(repo_dir)
        .ok()
        .map(|r| r.common_dir().to_path_buf());
    unlock_in(repo_dir, common.as_deref(), path)
}

/// [`unlock`] where the caller knows the common dir (`None`: it could not be found).
pub fn unlock_in(repo_dir: &Path, common_dir: Option<&Path>, path: &Path) -> Result<()> {
    if let Some(admin) = common_dir.and_then(|common| registration(common, path)) {
        return match std::fs::remove_file(admin.join("locked")) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other.with_context(|| format!("cannot unlock {}", path.display())),
        };
    }
    let text = path.to_string_lossy();
    let out = GitRunner::new(repo_dir).raw(&["worktree", "unlock", &text])?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.success() || stderr.contains("not locked") {
        Ok(())
    } else {
        bail!("git worktree unlock failed: {}", stderr.trim())
    }
}

/// The registration of the worktree at `path`: `<git-common-dir>/worktrees/<name>`
/// named after it, when its `gitdir` names `path` (as dispatch registers a run's
/// worktree); `None` when it is not found so.
fn registration(common_dir: &Path, path: &Path) -> Option<PathBuf> {
    let admin = admin_dir(common_dir, path).ok()?;
    let gitdir = plain_text(&admin.join("gitdir"))?;
    (Path::new(gitdir.trim_end_matches(['\n', '\r'])) == path.join(".git")).then_some(admin)
}

/// What git-crew's commit of a worker's staged work came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Commit {
    Committed,
    /// git refused it; what it printed.
    Refused(String),
}

/// How git-crew's own git runs in a run's worktree once the run's processes are gone:
/// inside the run's write fence (what git runs there — a filter, a hook — may be the
/// worker's code, and what it hashes goes to the run's quarantine), and only until
/// `until`.
#[derive(Debug, Clone)]
pub struct Bound {
    pub fence: Option<crate::sys::fence::Fence>,
    pub until: std::time::Instant,
}

impl Bound {
    /// The time left.
    pub fn left(&self) -> std::time::Duration {
        self.until
            .saturating_duration_since(std::time::Instant::now())
    }
}

/// The config dispatch gives a run's worktree (`config.worktree`): its identity for the
/// in-worktree pre-commit hook, git-crew's hooks, and the run's excludes file (in
/// `run_dir`), so that the tool state a worker or a verify leaves is never work.
pub fn run_config(
    identity: &crate::core::scope::RunIdentity,
    hooks: &Path,
    run_dir: &Path,
) -> Vec<(&'static str, &'static str, Vec<String>)> {
    let excludes = crate::core::layout::run_excludes(run_dir);
    vec![
        ("crew", "run", vec![identity.run.clone()]),
        ("crew", "task", vec![identity.task.clone()]),
        ("crew", "role", vec![identity.role.clone()]),
        ("crew", "scope", identity.scope.clone()),
        (
            "core",
            "hooksPath",
            vec![hooks.to_string_lossy().into_owned()],
        ),
        (
            "core",
            "excludesFile",
            vec![excludes.to_string_lossy().into_owned()],
        ),
    ]
}

/// A run's worktree as git-crew itself (the supervisor, `verify`, `integrate`) works in
/// it. The worker can write the worktree's administration — its `config.worktree`
/// (`core.fsmonitor`, filters, includes), `commondir`, `gitdir` and the `.git` link — and
/// any git command that reads them would run the worker's code outside its fence. So
/// [`RunTree::restore`] writes them back as dispatch made them before git-crew runs git
/// there, and git runs with the administration named explicitly and fsmonitor off.
/// [`RunTree::inspect`] is the same for a look that must change nothing (a dry run, a
/// check): an administration as dispatch made it is read in place; any other is read
/// from a copy put right in a scratch folder outside the repository.
pub struct RunTree {
    /// `<git-common-dir>/worktrees/<name>` (for an inspection of an administration that
    /// was not as dispatch made it, its corrected copy in a scratch folder).
    pub admin: PathBuf,
    pub path: PathBuf,
    /// Entries of the administration that were not regular files (a folder, a FIFO, a
    /// symlink where git keeps a file) and were replaced: the worker tampered with them.
    /// (An inspection names those a restore would replace.)
    pub replaced: Vec<String>,
    /// Nothing may be written: git takes no optional lock, and snapshots go aside.
    read_only: bool,
    /// The scratch folder holding the corrected copy of the administration, while it is
    /// used.
    _aside: Option<tempfile::TempDir>,
}

/// Makes `path` free for a regular file: whatever else is there (a folder, a FIFO, a
/// symlink) is removed without being followed. Returns whether something had to go.
fn clear_for_file(path: &Path) -> Result<bool> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() => Ok(false),
        Ok(m) if m.is_dir() => {
            std::fs::remove_dir_all(path)
                .with_context(|| format!("cannot remove {}", path.display()))?;
            Ok(true)
        }
        Ok(_) => {
            std::fs::remove_file(path)
                .with_context(|| format!("cannot remove {}", path.display()))?;
            Ok(true)
        }
        Err(_) => Ok(false),
    }
}

/// What a restore does with an entry of a worktree's administration, by its name and
/// kind: (whether it is a name git keeps there, whether it stays as it is). What else git
/// finds there is state of an operation the worker left unfinished (a rebase, a merge, a
/// bisect) — or a trap: a FIFO or a symlink that git would read and hang on. All of it
/// goes, unfollowed; what is not a plain file or folder is the worker's doing.
fn fate(name: &str, plain_file: bool, plain_dir: bool) -> (bool, bool) {
    // (the name git uses, and whether it is of the kind git makes there)
    let operation = matches!(
        name,
        "rebase-merge" | "rebase-apply" | "sequencer" | "AUTO_MERGE"
    ) || name.starts_with("MERGE_")
        || name.starts_with("BISECT_")
        || (name.ends_with("_HEAD") && name != "ORIG_HEAD");
    match name {
        "HEAD" | "index" | "ORIG_HEAD" | "COMMIT_EDITMSG" | "commondir" | "gitdir"
        | "config.worktree" | "locked" => (true, plain_file),
        // Git's own per-worktree folders: submodules' repositories, refs, reflogs,
        // sparse-checkout; never removed.
        "logs" | "modules" | "refs" | "info" => (true, plain_dir),
        _ if name.starts_with("sharedindex.") => (true, plain_file),
        _ if operation => (false, false),
        // Anything else git did not put there is left, if it is plain.
        _ => (false, plain_file || plain_dir),
    }
}

/// Whether a worktree's HEAD names a branch or a commit, as it must.
fn head_is_sound(text: &str) -> bool {
    let h = text.trim();
    h.strip_prefix("ref: refs/heads/")
        .is_some_and(|r| !r.is_empty())
        || (h.len() == 40 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// What a regular file at `path` holds (`None` for anything else, or nothing).
fn plain_text(path: &Path) -> Option<String> {
    std::fs::symlink_metadata(path)
        .is_ok_and(|m| m.is_file())
        .then(|| std::fs::read_to_string(path).ok())
        .flatten()
}

/// Copies the regular file `from` to `to` with its modification time: git takes an
/// index entry changed at or after its index's own time as possibly changed, and a copy
/// with a later time would hide such a change.
fn copy_with_time(from: &Path, to: &Path) -> Result<()> {
    std::fs::copy(from, to).with_context(|| format!("cannot copy {}", from.display()))?;
    let modified = std::fs::metadata(from)
        .and_then(|m| m.modified())
        .with_context(|| format!("cannot read the time of {}", from.display()))?;
    std::fs::File::options()
        .write(true)
        .open(to)
        .and_then(|f| f.set_modified(modified))
        .with_context(|| format!("cannot set the time of {}", to.display()))?;
    Ok(())
}

impl RunTree {
    /// The git operation in progress in the worktree at `path` (a merge, a rebase, a
    /// cherry-pick, a revert, a bisect), by the files git keeps for it, if any.
    pub fn operation_in_progress(common_dir: &Path, path: &Path) -> Option<String> {
        let admin = common_dir.join("worktrees").join(path.file_name()?);
        let names = std::fs::read_dir(admin).ok()?;
        names
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .find(|name| {
                matches!(
                    name.as_str(),
                    "MERGE_HEAD"
                        | "rebase-merge"
                        | "rebase-apply"
                        | "sequencer"
                        | "CHERRY_PICK_HEAD"
                        | "REVERT_HEAD"
                        | "BISECT_LOG"
                )
            })
    }

    /// Writes back the administration of the worktree at `path` (of the repository whose
    /// common dir is `common_dir`) from the lead's facts: `identity` and git-crew's hooks
    /// folder.
    pub fn restore(
        common_dir: &Path,
        path: &Path,
        identity: &crate::core::scope::RunIdentity,
    ) -> Result<RunTree> {
        // What is there already as it must be is left alone: a replaced file is one more
        // write, rename and deletion each time a worktree is looked at.
        let write_atomic = |path: &Path, text: &str, mode: u32| -> Result<()> {
            if plain_text(path).as_deref() == Some(text) {
                return Ok(());
            }
            Ok(crate::sys::fs::write_atomic(path, text, mode)?)
        };
        let admin = admin_dir(common_dir, path)?;
        let mut replaced = Vec::new();
        if let Ok(entries) = std::fs::read_dir(&admin) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                let kind = entry.file_type().ok();
                let plain_file = kind.is_some_and(|t| t.is_file());
                let plain_dir = kind.is_some_and(|t| t.is_dir());
                let (known, kept) = fate(&name, plain_file, plain_dir);
                if kept {
                    continue;
                }
                if known || (!plain_file && !plain_dir) {
                    replaced.push(name);
                }
                let path = entry.path();
                if plain_dir {
                    std::fs::remove_dir_all(&path)
                } else {
                    std::fs::remove_file(&path)
                }
                .with_context(|| format!("cannot remove {}", path.display()))?;
            }
        }
        // HEAD must name the run's branch or a commit; anything else points at the
        // branch again, and says so.
        if !std::fs::read_to_string(admin.join("HEAD")).is_ok_and(|h| head_is_sound(&h)) {
            if !replaced.iter().any(|e| e == "HEAD") {
                replaced.push("HEAD".to_string());
            }
            write_atomic(
                &admin.join("HEAD"),
                &format!("ref: refs/heads/crew/{}/{}\n", identity.task, identity.run),
                0o644,
            )?;
        }
        let state_dir = common_dir.join("crew");
        let hooks = crate::core::layout::run_hooks(&state_dir);
        let run_dir = crate::core::layout::run_dir(&state_dir, &identity.run);
        write_atomic(&admin.join("commondir"), "../..\n", 0o644)?;
        write_atomic(
            &admin.join("gitdir"),
            &format!("{}\n", path.join(".git").display()),
            0o644,
        )?;
        write_atomic(
            &admin.join("config.worktree"),
            &config_text(&run_config(identity, &hooks, &run_dir))?,
            0o644,
        )?;
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
            let link = path.join(".git");
            // Never tracked content: a `.git` folder or link here is the worker's stand-in
            // for the real administration.
            if clear_for_file(&link)? {
                replaced.push(".git".to_string());
            }
            write_atomic(&link, &format!("gitdir: {}\n", admin.display()), 0o644)?;
        }
        Ok(RunTree {
            admin,
            path: path.to_path_buf(),
            replaced,
            read_only: false,
            _aside: None,
        })
    }

    /// The worktree at `path`, to be looked at without writing anything anywhere in the
    /// repository: git reads an administration exactly as [`RunTree::restore`] would
    /// leave it (every entry kept, HEAD sound, `commondir` and `config.worktree` as
    /// dispatch wrote them) in place, and any other from a copy put right the way a
    /// restore would put it right, in a scratch folder outside the repository (the index
    /// copied with its time). The `.git` link and `gitdir` are not git's to read here:
    /// git runs with the administration named.
    pub fn inspect(
        common_dir: &Path,
        path: &Path,
        identity: &crate::core::scope::RunIdentity,
    ) -> Result<RunTree> {
        let admin = admin_dir(common_dir, path)?;
        let state_dir = common_dir.join("crew");
        let hooks = crate::core::layout::run_hooks(&state_dir);
        let run_dir = crate::core::layout::run_dir(&state_dir, &identity.run);
        let config = config_text(&run_config(identity, &hooks, &run_dir))?;
        let mut replaced = Vec::new();
        // The entries git may read, to carry into a copy: the index (and the shared
        // index it names), and the sparse-checkout patterns.
        let mut carried = Vec::new();
        let entries = std::fs::read_dir(&admin)
            .with_context(|| format!("cannot read {}", admin.display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("cannot read {}", admin.display()))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            let kind = entry.file_type().ok();
            let plain_file = kind.is_some_and(|t| t.is_file());
            let plain_dir = kind.is_some_and(|t| t.is_dir());
            let (known, kept) = fate(&name, plain_file, plain_dir);
            if !kept {
                if known || (!plain_file && !plain_dir) {
                    replaced.push(name);
                }
                continue;
            }
            if name == "index" || name.starts_with("sharedindex.") || name == "info" {
                carried.push(name);
            }
        }
        let head = plain_text(&admin.join("HEAD")).filter(|h| head_is_sound(h));
        if head.is_none() && !replaced.iter().any(|e| e == "HEAD") {
            replaced.push("HEAD".to_string());
        }
        let in_place = replaced.is_empty()
            && plain_text(&admin.join("commondir")).as_deref() == Some("../..\n")
            && plain_text(&admin.join("config.worktree")).as_deref() == Some(config.as_str());
        if in_place {
            return Ok(RunTree {
                admin,
                path: path.to_path_buf(),
                replaced,
                read_only: true,
                _aside: None,
            });
        }
        let aside = tempfile::Builder::new()
            .prefix("crew-look-")
            .tempdir()
            .context("cannot make a scratch folder")?;
        let copy = aside.path();
        let write = |name: &str, text: &str| {
            std::fs::write(copy.join(name), text)
                .with_context(|| format!("cannot write {}", copy.join(name).display()))
        };
        let common = common_dir
            .canonicalize()
            .unwrap_or_else(|_| common_dir.to_path_buf());
        write(
            "HEAD",
            &head.unwrap_or_else(|| {
                format!("ref: refs/heads/crew/{}/{}\n", identity.task, identity.run)
            }),
        )?;
        write("commondir", &format!("{}\n", common.display()))?;
        write("gitdir", &format!("{}\n", path.join(".git").display()))?;
        write("config.worktree", &config)?;
        for name in carried {
            let from = admin.join(&name);
            if name != "info" {
                copy_with_time(&from, &copy.join(&name))?;
                continue;
            }
            std::fs::create_dir(copy.join("info")).context("cannot make a scratch folder")?;
            for entry in std::fs::read_dir(&from).into_iter().flatten().flatten() {
                if entry.file_type().is_ok_and(|t| t.is_file()) {
                    copy_with_time(&entry.path(), &copy.join("info").join(entry.file_name()))?;
                }
            }
        }
        Ok(RunTree {
            admin: copy.to_path_buf(),
            path: path.to_path_buf(),
            replaced,
            read_only: true,
            _aside: Some(aside),
        })
    }

    /// git in this worktree, reading only the restored administration; no fsmonitor and
    /// no hooks (a fenced commit is [`RunTree::commit_all`]'s business).
    fn git(&self) -> GitRunner {
        let git = GitRunner::new(&self.path);
        // A look that must change nothing: no refresh of the index written back.
        let git = match self.read_only {
            true => git.with_env("GIT_OPTIONAL_LOCKS", "0"),
            false => git,
        };
        git.with_env("GIT_DIR", &self.admin.to_string_lossy())
            .with_env("GIT_WORK_TREE", &self.path.to_string_lossy())
            .with_config("core.fsmonitor=false")
            .with_config("core.hooksPath=/dev/null")
            // A repository nested in the worktree has a config of its own, the worker's:
            // git never goes into it.
            .with_config("diff.ignoreSubmodules=all")
            .with_config("submodule.recurse=false")
    }

    /// Whether the worktree has uncommitted changes (untracked files included; a nested
    /// repository counts by its pointer only).
    pub fn is_dirty(&self) -> Result<bool> {
        let status = self.git().output(&[
            "status",
            "--porcelain",
            "--untracked-files=all",
            "--ignore-submodules=all",
        ])?;
        Ok(!status.trim().is_empty())
    }

    /// git in this worktree within `bound`: its output, or `None` when it ran past.
    fn git_within(&self, args: &[&str], bound: &Bound) -> Result<Option<Finished>> {
        Ok(self
            .git()
            .with_fence(bound.fence.clone())
            .within(args, None, bound.left())?)
    }

    /// The regular files git would add here that are bigger than `larger_than` bytes: the
    /// untracked files git does not ignore and the tracked ones, each measured by
    /// `lstat` (its apparent size; nothing is read), a tracked one with the size of the
    /// blob its index entry names when `repo` has it. `None` when listing them ran past
    /// `bound`. Nothing here hashes: `git ls-files` lists the index and walks the folders.
    pub fn files_larger_than(
        &self,
        repo: &gix::Repository,
        larger_than: u64,
        bound: &Bound,
    ) -> Result<Option<Vec<LeftFile>>> {
        let mut found = Vec::new();
        let mut measure = |path: &str, recorded: &dyn Fn() -> Option<u64>| {
            let Ok(meta) = std::fs::symlink_metadata(self.path.join(path)) else {
                return;
            };
            if meta.is_file() && meta.len() > larger_than {
                found.push(LeftFile {
                    path: path.to_string(),
                    size: meta.len(),
                    recorded: recorded(),
                });
            }
        };
        let listed = |args: &[&str]| -> Result<Option<Vec<u8>>> {
            let Some(out) = self.git_within(args, bound)? else {
                return Ok(None);
            };
            if !out.success {
                bail!("git {} failed: {}", args.join(" "), out.stderr.trim());
            }
            Ok(Some(out.stdout))
        };
        let Some(untracked) = listed(&["ls-files", "-z", "--others", "--exclude-standard"])? else {
            return Ok(None);
        };
        for path in untracked.split(|b| *b == 0).filter(|p| !p.is_empty()) {
            measure(&String::from_utf8_lossy(path), &|| None);
        }
        let Some(tracked) = listed(&["ls-files", "-z", "--stage"])? else {
            return Ok(None);
        };
        for entry in tracked.split(|b| *b == 0).filter(|p| !p.is_empty()) {
            // `<mode> <id> <stage>\t<path>`
            let entry = String::from_utf8_lossy(entry);
            let Some((info, path)) = entry.split_once('\t') else {
                continue;
            };
            let mut fields = info.split(' ');
            let (mode, id) = (fields.next().unwrap_or(""), fields.next().unwrap_or(""));
            let blob = matches!(mode, "100644" | "100755")
                .then(|| gix::ObjectId::from_hex(id.as_bytes()).ok())
                .flatten();
            measure(path, &|| {
                blob.and_then(|id| repo.find_header(id).ok().map(|h| h.size()))
            });
        }
        Ok(Some(found))
    }

    /// The paths with uncommitted changes (untracked files included; a nested
    /// repository counts by its pointer only), as `git status` names them.
    pub fn uncommitted(&self) -> Result<Vec<String>> {
        let status = self.git().output(&[
            "status",
            "--porcelain",
            "-z",
            "--untracked-files=all",
            "--ignore-submodules=all",
        ])?;
        Ok(porcelain_paths(&status))
    }

    /// Tracked files whose changes `git status` does not look at: marked
    /// assume-unchanged or skip-worktree (`git update-index`). What they hold may differ
    /// from their commit, unseen.
    pub fn hidden_from_status(&self) -> Result<Vec<String>> {
        let listed = self.git().output(&["ls-files", "-v", "-z"])?;
        Ok(listed
            .split('\0')
            .filter_map(|entry| {
                let (tag, path) = entry.split_once(' ')?;
                let hidden = tag.chars().all(|c| c.is_ascii_lowercase()) || tag == "S";
                hidden.then(|| path.to_string())
            })
            .collect())
    }

    /// The untracked files git does not ignore in the worktree, a folder of them named
    /// once (`htmlcov/`).
    pub fn untracked(&self) -> Result<Vec<String>> {
        self.others(&[])
    }

    /// `git ls-files --others --exclude-standard --directory` with `extra` flags: the
    /// paths it lists, a folder named once.
    fn others(&self, extra: &[&str]) -> Result<Vec<String>> {
        let mut args = vec!["ls-files", "--others"];
        args.extend_from_slice(extra);
        args.extend(["--exclude-standard", "--directory", "-z"]);
        let out = self.git().output(&args)?;
        Ok(out
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect())
    }

    /// The files and folders git ignores in the worktree: each path an ignore pattern
    /// matches, a matched folder named once (`target/`) rather than file by file.
    pub fn ignored(&self) -> Result<Vec<String>> {
        Ok(self.held_by_git()?.ignored)
    }

    /// What the worktree holds beside its commit — its uncommitted changes (untracked files
    /// included; a nested repository counts by its pointer only) and what git ignores —
    /// as one `git status` names them. The in-process answer, where it is certain, is
    /// [`Indexed::held`].
    pub fn held_by_git(&self) -> Result<super::untracked::Held> {
        let status = self.git().output(&[
            "status",
            "--porcelain",
            "-z",
            "--untracked-files=all",
            "--ignored=matching",
            "--ignore-submodules=all",
        ])?;
        Ok(super::untracked::Held::from_porcelain(&status))
    }

    /// The tree of everything the worktree holds that git does not ignore — its HEAD
    /// with every uncommitted change and untracked file added — written through a
    /// scratch index at `scratch`, never the worktree's own.
    pub fn snapshot(&self, scratch: &Path) -> Result<gix::ObjectId> {
        let _ = std::fs::remove_file(scratch);
        if std::fs::symlink_metadata(self.admin.join("index")).is_ok_and(|m| m.is_file()) {
            copy_with_time(&self.admin.join("index"), scratch)?;
        }
        let index = scratch.to_string_lossy();
        let git = self.git().with_env("GIT_INDEX_FILE", &index);
        let written = git
            .output(&["add", "-A"])
            .and_then(|_| git.output(&["write-tree"]));
        let _ = std::fs::remove_file(scratch);
        let tree = written?;
        gix::ObjectId::from_hex(tree.trim().as_bytes()).context("write-tree named no tree")
    }

    /// The tree [`RunTree::snapshot`] would write, found without writing anything into the
    /// repository: through a copy of the index in a scratch folder, the objects git
    /// writes on the way going to a scratch object folder, all of it thrown away. The
    /// repository's objects are not even named as alternates (git would freshen the time
    /// of each one it found there): only the files that changed are hashed, and the tree
    /// is written without checking that what it names is there.
    pub fn snapshot_aside(&self) -> Result<gix::ObjectId> {
        let aside = tempfile::Builder::new()
            .prefix("crew-snapshot-")
            .tempdir()
            .context("cannot make a scratch folder")?;
        let index = aside.path().join("index");
        if std::fs::symlink_metadata(self.admin.join("index")).is_ok_and(|m| m.is_file()) {
            copy_with_time(&self.admin.join("index"), &index)?;
        }
        let objects = aside.path().join("objects");
        std::fs::create_dir_all(objects.join("info")).context("cannot make a scratch folder")?;
        let git = self
            .git()
            .with_env("GIT_INDEX_FILE", &index.to_string_lossy())
            .with_env("GIT_OBJECT_DIRECTORY", &objects.to_string_lossy());
        git.output(&["add", "-A"])?;
        let tree = git.output(&["write-tree", "--missing-ok"])?;
        gix::ObjectId::from_hex(tree.trim().as_bytes()).context("write-tree named no tree")
    }

    /// What the worktree's index says, read in-process — when it is a plain one (not split,
    /// not sparse, nothing unmerged; else `None`, and git must be asked): the paths `git
    /// status` is told not to look at, whether a repository is checked out under a
    /// gitlink, and whether the worktree is certainly at rest.
    pub fn indexed(&self, repo: &gix::Repository) -> Option<Indexed> {
        use gix::index::entry::{Flags, Mode};
        let file = self.admin.join("index");
        if !std::fs::symlink_metadata(&file).is_ok_and(|m| m.is_file()) {
            return None;
        }
        // One thread: a small index gains nothing from more, and asking how many there
        // are costs more than reading it.
        let options = gix::index::decode::Options {
            thread_limit: Some(1),
            ..Default::default()
        };
        let index = gix::index::File::at(&file, repo.object_hash(), false, options).ok()?;
        if index.link().is_some() || index.is_sparse() {
            return None;
        }
        let mut hidden = Vec::new();
        let mut nested = false;
        let mut plain = true;
        // Entries a sparse checkout leaves out, or a `.gitignore` that is no plain file:
        // what is untracked there is git's to say.
        let mut walkable = true;
        for entry in index.entries() {
            if entry.flags.stage_raw() != 0 {
                return None;
            }
            let path = entry.path(&index);
            if entry
                .flags
                .intersects(Flags::ASSUME_VALID | Flags::SKIP_WORKTREE)
            {
                hidden.push(path.to_string());
            }
            if entry.flags.contains(Flags::SKIP_WORKTREE) {
                walkable = false;
            }
            if entry.flags.contains(Flags::INTENT_TO_ADD) {
                plain = false;
            }
            if entry.mode == Mode::COMMIT {
                plain = false;
                nested |=
                    std::fs::symlink_metadata(self.path.join(on_disk(path)).join(".git")).is_ok();
            }
            let name: &[u8] = path.rsplit(|b| *b == b'/').next().unwrap_or_default();
            if name == b".gitignore" && !matches!(entry.mode, Mode::FILE | Mode::FILE_EXECUTABLE) {
                walkable = false;
            }
        }
        // Cheapest to fail first: a worktree with build output or an untracked file fails
        // at the first folder that holds it, before any file is looked at.
        let quiet = plain && hidden.is_empty() && nothing_beside(&self.path, &index);
        let walk = plain && walkable;
        // Tracked files certainly as committed (those git status is told not to look at
        // aside, as git leaves them).
        let tracked = (quiet || walk)
            && files_unchanged(&self.path, &index)
            && self
                .head(repo)
                .is_some_and(|head| holds_head(repo, &index, head));
        let at_rest = quiet && tracked;
        // Then what else git status would list is what is untracked.
        let held = match at_rest {
            true => Some(super::untracked::Held::default()),
            false if tracked && walk => {
                super::untracked::beside_tracked(repo, &self.path, &self.admin, &index)
            }
            false => None,
        };
        Some(Indexed {
            hidden,
            nested,
            at_rest,
            held,
        })
    }

    /// What is staged in the worktree (its index against its HEAD), read in-process.
    pub fn staged(&self) -> Result<Vec<crate::core::scope::Change>> {
        let repo = gix::open(&self.path)
            .with_context(|| format!("cannot open {}", self.path.display()))?;
        super::staged::staged_changes(&repo)
    }

    /// Whether a repository is checked out inside the worktree (under a gitlink): its own
    /// work is not what `is_dirty` sees, so the worktree is never removed.
    pub fn holds_nested_repository(&self) -> Result<bool> {
        let staged = self.git().output(&["ls-files", "--stage", "-z"])?;
        Ok(staged
            .split('\0')
            .filter(|entry| entry.starts_with("160000 "))
            .filter_map(|entry| entry.split_once('\t').map(|(_, path)| path))
            .any(|path| std::fs::symlink_metadata(self.path.join(path).join(".git")).is_ok()))
    }

    /// Removes the worktree and its administration — only after the caller saw it clean
    /// and holding no nested repository; git's own check, which would run `git status`
    /// in it (into nested repositories, with their configs), is not needed then. The work
    /// tree goes, then its administration, as `git worktree remove --force` removes them
    /// (no link followed), in-process: git would read every other worktree first. A
    /// worktree looked at through a copy of its administration is removed by git.
    pub fn remove(&self, repo_dir: &Path) -> Result<()> {
        if self._aside.is_none() {
            crate::sys::fs::remove_entry(&self.path)
                .with_context(|| format!("cannot remove {}", self.path.display()))?;
            crate::sys::fs::remove_entry(&self.admin)
                .with_context(|| format!("cannot remove {}", self.admin.display()))?;
            // As git does: the folder of registrations goes with its last one.
            if let Some(registrations) = self.admin.parent() {
                let _ = std::fs::remove_dir(registrations);
            }
            return Ok(());
        }
        let path = self.path.to_string_lossy();
        GitRunner::new(repo_dir)
            .with_config("core.fsmonitor=false")
            .output(&["worktree", "remove", "--force", &path])?;
        Ok(())
    }

    /// [`RunTree::remove`], the files deleted later: the work tree, then its
    /// administration, each moved by one rename into the folder `trash` (on the same
    /// filesystem), where nothing of them is where git or anyone looks; a detached process
    /// then deletes what `trash` holds (`sys::fs::delete_in_background`), so the caller
    /// does not wait for every file to go. Where a rename cannot be made, they are
    /// removed here, as [`RunTree::remove`] removes them.
    pub fn remove_later(&self, repo_dir: &Path, trash: &Path) -> Result<()> {
        if self._aside.is_some() || std::fs::create_dir_all(trash).is_err() {
            return self.remove(repo_dir);
        }
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        let stamp = format!("{name}-{}-{nanos}", std::process::id());
        if std::fs::rename(&self.path, trash.join(format!("{stamp}.tree"))).is_err() {
            return self.remove(repo_dir);
        }
        if std::fs::rename(&self.admin, trash.join(format!("{stamp}.admin"))).is_err() {
            crate::sys::fs::remove_entry(&self.admin)
                .with_context(|| format!("cannot remove {}", self.admin.display()))?;
        }
        if let Some(registrations) = self.admin.parent() {
            let _ = std::fs::remove_dir(registrations);
        }
        crate::sys::fs::delete_in_background(trash);
        Ok(())
    }

    /// The commit the worktree's HEAD names, read from its administration (never by
    /// running git there).
    pub fn head(&self, repo: &gix::Repository) -> Option<gix::ObjectId> {
        let text = std::fs::read_to_string(self.admin.join("HEAD")).ok()?;
        let text = text.trim();
        match text.strip_prefix("ref:") {
            Some(name) => repo
                .try_find_reference(name.trim())
                .ok()
                .flatten()
                .and_then(|mut r| r.peel_to_id().ok())
                .map(gix::Id::detach),
            None => gix::ObjectId::from_hex(text.as_bytes()).ok(),
        }
    }

    /// The paths with uncommitted changes, as [`RunTree::uncommitted`], with git inside
    /// `bound`'s fence (a status may run the repository's filters) and within its time:
    /// `None` when it ran past.
    pub fn uncommitted_within(&self, bound: &Bound) -> Result<Option<Vec<String>>> {
        let args = [
            "status",
            "--porcelain",
            "-z",
            "--untracked-files=all",
            "--ignore-submodules=all",
        ];
        let Some(out) = self.git_within(&args, bound)? else {
            return Ok(None);
        };
        if !out.success {
            bail!("git status failed: {}", out.stderr.trim());
        }
        let status = String::from_utf8_lossy(&out.stdout);
        Ok(Some(porcelain_paths(&status)))
    }

    /// Whether the worktree has uncommitted changes, as [`RunTree::is_dirty`], inside the
    /// bound's fence and within its time (`git status` hashes a tracked file whose size
    /// matches its index entry but whose time does not, through its filter); when it
    /// fails, the facts of whose failure it is (a filter it ran, or the worktree as the
    /// worker left it).
    pub fn status(&self, bound: &Bound) -> Result<Looked> {
        let args = [
            "status",
            "--porcelain",
            "--untracked-files=all",
            "--ignore-submodules=all",
        ];
        let Some(out) = self.git_within(&args, bound)? else {
            return Ok(Looked::OutOfTime);
        };
        if out.success {
            return Ok(if out.stdout.iter().all(u8::is_ascii_whitespace) {
                Looked::Clean
            } else {
                Looked::Dirty
            });
        }
        let output = String::from_utf8_lossy(&out.stdout).into_owned() + &out.stderr;
        Ok(
            match self.failure(crate::core::toolchain::GitStep::Status, output, bound)? {
                Some(failure) => Looked::Failed(failure),
                None => Looked::OutOfTime,
            },
        )
    }

    /// Stages everything left in the worktree (`git add -A`, which runs the repository's
    /// filters), inside the bound's fence and within its time. When git refuses, the
    /// facts of whose failure it is are gathered: whether the same step succeeds with
    /// every filter off (into a scratch index and a scratch object folder, both thrown
    /// away), and which filters the paths carry.
    pub fn stage_all(&self, bound: &Bound) -> Result<Staged> {
        use crate::core::oversize::Step;
        match self.status(bound)? {
            Looked::OutOfTime => return Ok(Staged::OutOfTime(Step::Status)),
            Looked::Clean => return Ok(Staged::Clean),
            Looked::Failed(failure) => return Ok(Staged::Failed(failure)),
            Looked::Dirty => {}
        }
        let Some(added) = self.git_within(&["add", "-A"], bound)? else {
            // The stopped `git add` leaves its lock; nothing else holds it.
            clear_index_lock(&self.admin);
            return Ok(Staged::OutOfTime(Step::Add));
        };
        if !added.success {
            clear_index_lock(&self.admin);
            let output = String::from_utf8_lossy(&added.stdout).into_owned() + &added.stderr;
            return Ok(
                match self.failure(crate::core::toolchain::GitStep::Add, output, bound)? {
                    Some(failure) => Staged::Failed(failure),
                    None => Staged::OutOfTime(Step::Add),
                },
            );
        }
        let Some(staged) = self.git_within(&["diff", "--cached", "--quiet"], bound)? else {
            return Ok(Staged::OutOfTime(Step::Add));
        };
        Ok(if staged.success {
            Staged::Clean
        } else {
            Staged::Staged
        })
    }

    /// The facts of a failed `step` that printed `output`: `None` when gathering them
    /// ran past the bound.
    fn failure(
        &self,
        step: crate::core::toolchain::GitStep,
        output: String,
        bound: &Bound,
    ) -> Result<Option<crate::core::toolchain::Failure>> {
        let (without_filters, filters) = match self.probe_without_filters(step, bound) {
            Ok(Some(found)) => found,
            Ok(None) => return Ok(None),
            Err(_) => (None, Vec::new()),
        };
        Ok(Some(crate::core::toolchain::Failure::Git {
            step,
            output,
            without_filters,
            filters,
        }))
    }

    /// The filter drivers the repository configures: (name, command), the command its
    /// `process` where it has one, else its `clean`. `None` when git ran past the bound.
    fn configured_filters(&self, bound: &Bound) -> Result<Option<Vec<(String, String)>>> {
        let args = [
            "config",
            "-z",
            "--get-regexp",
            r"^filter\..*\.(clean|process)$",
        ];
        let Some(out) = self.git_within(&args, bound)? else {
            return Ok(None);
        };
        let text = String::from_utf8_lossy(&out.stdout);
        // (name, command, whether it is the `process` one)
        let mut drivers: Vec<(String, String, bool)> = Vec::new();
        for entry in text.split('\0').filter(|e| !e.is_empty()) {
            let (key, value) = entry.split_once('\n').unwrap_or((entry, ""));
            let Some(rest) = key.strip_prefix("filter.") else {
                continue;
            };
            // git prints the section and the key in lower case, the name as written.
            let (name, process) = match (rest.strip_suffix(".process"), rest.strip_suffix(".clean"))
            {
                (Some(name), _) => (name, true),
                (None, Some(name)) => (name, false),
                _ => continue,
            };
            match drivers.iter_mut().find(|(n, _, _)| n == name) {
                Some(found) if process && !found.2 => {
                    *found = (name.to_string(), value.to_string(), true);
                }
                Some(_) => {}
                None => drivers.push((name.to_string(), value.to_string(), process)),
            }
        }
        Ok(Some(
            drivers
                .into_iter()
                .filter(|(_, command, _)| !command.trim().is_empty())
                .map(|(name, command, _)| (name, command))
                .collect(),
        ))
    }

    /// After a failed `step`: whether it succeeds with every configured filter off, and
    /// the configured filters the worktree's paths carry. `None` when it ran past the
    /// bound.
    #[allow(clippy::type_complexity)]
    fn probe_without_filters(
        &self,
        step: crate::core::toolchain::GitStep,
        bound: &Bound,
    ) -> Result<Option<(Option<bool>, Vec<crate::core::toolchain::Filter>)>> {
        let Some(drivers) = self.configured_filters(bound)? else {
            return Ok(None);
        };
        let scratch_index = self.admin.join("crew-probe-index");
        let scratch_objects = self.admin.join("crew-probe-objects");
        let clear = || {
            let _ = std::fs::remove_file(&scratch_index);
            let _ = std::fs::remove_dir_all(&scratch_objects);
        };
        clear();
        if std::fs::symlink_metadata(self.admin.join("index")).is_ok_and(|m| m.is_file()) {
            std::fs::copy(self.admin.join("index"), &scratch_index)
                .context("cannot copy the worktree's index")?;
        }
        std::fs::create_dir_all(scratch_objects.join("info"))
            .context("cannot make the probe's object folder")?;
        // What git writes here is thrown away: its objects go to a folder of their own
        // (never the run's quarantine), reading the store (and the quarantine) as
        // alternates.
        let common_objects = self
            .admin
            .parent()
            .and_then(Path::parent)
            .context("a worktree's administration lies in its git dir")?
            .join("objects");
        let objects = scratch_objects.to_string_lossy().into_owned();
        let mut alternates = common_objects.to_string_lossy().into_owned();
        if let Some(fence) = &bound.fence
            && let Some((_, quarantine)) =
                fence.env.iter().find(|(k, _)| k == "GIT_OBJECT_DIRECTORY")
        {
            alternates = format!("{quarantine}:{alternates}");
        }
        let fence = bound.fence.clone().map(|mut fence| {
            fence.env.retain(|(k, _)| {
                k != "GIT_OBJECT_DIRECTORY" && k != "GIT_ALTERNATE_OBJECT_DIRECTORIES"
            });
            fence
                .env
                .push(("GIT_OBJECT_DIRECTORY".into(), objects.clone()));
            fence.env.push((
                "GIT_ALTERNATE_OBJECT_DIRECTORIES".into(),
                alternates.clone(),
            ));
            fence
        });
        let index = scratch_index.to_string_lossy().into_owned();
        let mut git = self
            .git()
            .with_env("GIT_INDEX_FILE", &index)
            .with_env("GIT_OBJECT_DIRECTORY", &objects)
            .with_env("GIT_ALTERNATE_OBJECT_DIRECTORIES", &alternates)
            .with_env("GIT_OPTIONAL_LOCKS", "0");
        for (name, _) in &drivers {
            git = git
                .with_config(&format!("filter.{name}.clean="))
                .with_config(&format!("filter.{name}.smudge="))
                .with_config(&format!("filter.{name}.process="))
                .with_config(&format!("filter.{name}.required=false"));
        }
        let git = git.with_fence(fence);
        let args: &[&str] = match step {
            crate::core::toolchain::GitStep::Add => &["add", "-A"],
            crate::core::toolchain::GitStep::Status => &[
                "status",
                "--porcelain",
                "--untracked-files=all",
                "--ignore-submodules=all",
            ],
        };
        let probed = (|| -> Result<Option<(bool, Vec<u8>)>> {
            let Some(done) = git.within(args, None, bound.left())? else {
                return Ok(None);
            };
            // Every path git looks at here, tracked or not: no file is read.
            let Some(listed) = git.within(
                &[
                    "ls-files",
                    "-z",
                    "--cached",
                    "--others",
                    "--exclude-standard",
                ],
                None,
                bound.left(),
            )?
            else {
                return Ok(None);
            };
            Ok(Some((done.success, listed.stdout)))
        })();
        clear();
        let Some((succeeded, listed)) = probed? else {
            return Ok(None);
        };
        if drivers.is_empty() || listed.is_empty() {
            return Ok(Some((Some(succeeded), Vec::new())));
        }
        // Which filter each path carries (`.gitattributes` as the worktree has it).
        let mut paths = tempfile::tempfile()?;
        std::io::Write::write_all(&mut paths, &listed)?;
        std::io::Seek::rewind(&mut paths)?;
        let Some(attrs) = self.git().with_fence(bound.fence.clone()).within(
            &["check-attr", "-z", "--stdin", "filter"],
            Some(paths),
            bound.left(),
        )?
        else {
            return Ok(None);
        };
        let text = String::from_utf8_lossy(&attrs.stdout);
        let fields: Vec<&str> = text.split('\0').collect();
        let mut filters: Vec<crate::core::toolchain::Filter> = Vec::new();
        for triple in fields.chunks(3) {
            let [path, _, value] = triple else { continue };
            let Some((name, command)) = drivers.iter().find(|(n, _)| n == value) else {
                continue;
            };
            match filters.iter_mut().find(|f| &f.name == name) {
                Some(f) => f.paths.push(path.to_string()),
                None => filters.push(crate::core::toolchain::Filter {
                    name: name.clone(),
                    command: command.clone(),
                    paths: vec![path.to_string()],
                }),
            }
        }
        Ok(Some((Some(succeeded), filters)))
    }

    /// Runs the worktree's pre-commit hook on its own (`git hook run`), as `git commit`
    /// would, inside the bound's fence and within its time: its exit code and output, or
    /// `None` when it ran past (its whole group killed). No hook is a pass. For a commit
    /// that was refused: whether its pre-commit hook refuses, and with which code.
    pub fn pre_commit(&self, bound: &Bound) -> Result<Option<HookRun>> {
        // What `git commit` hands its hooks: the index it commits, and no editor.
        let index = self.admin.join("index");
        let git = GitRunner::new(&self.path)
            .with_env("GIT_INDEX_FILE", &index.to_string_lossy())
            .with_env("GIT_EDITOR", ":")
            .with_fence(bound.fence.clone());
        let Some((exit_code, output)) = git.code_within(
            &["hook", "run", "--ignore-missing", "pre-commit"],
            bound.left(),
        )?
        else {
            return Ok(None);
        };
        Ok(Some(HookRun { exit_code, output }))
    }

    /// Commits what is staged, through every hook (`git commit` as a person runs it),
    /// inside the bound's fence and within its time: `None` when it ran past (its whole
    /// group killed).
    pub fn commit_staged(&self, message: &str, bound: &Bound) -> Result<Option<Commit>> {
        let git = GitRunner::new(&self.path).with_fence(bound.fence.clone());
        Ok(
            match git.raw_within(&["commit", "--quiet", "-m", message], bound.left())? {
                Some((true, _)) => Some(Commit::Committed),
                Some((false, output)) => Some(Commit::Refused(output.trim().to_string())),
                None => None,
            },
        )
    }
}

/// A worktree's index, read in-process ([`RunTree::indexed`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Indexed {
    /// Tracked files marked assume-unchanged or skip-worktree, as
    /// [`RunTree::hidden_from_status`] names them.
    pub hidden: Vec<String>,
    /// A repository is checked out under a gitlink, as
    /// [`RunTree::holds_nested_repository`] says.
    pub nested: bool,
    /// Certainly nothing uncommitted and nothing beside the tracked files: `git status`
    /// would list nothing, and neither would `git ls-files --others --ignored`. It holds
    /// only when the index has exactly HEAD's files, each file's stat data match its
    /// entry (and the entry is not younger than the index, whose content git would read
    /// again), and every path on disk is a tracked file or a folder of them. `false`
    /// says only that git must look.
    pub at_rest: bool,
    /// What the worktree holds beside its commit, as [`RunTree::held_by_git`] would say it,
    /// found in-process — when that is certain: the index has exactly HEAD's files, each
    /// file's stat data match its entry (one git status is told not to look at aside),
    /// and the walk of what is untracked met nothing gix and git might see differently.
    /// `None`: git must look.
    pub held: Option<super::untracked::Held>,
}

/// The most entries whose content [`same_files`] reads (their stat data say nothing
/// certain: racily clean, or smudged by git): past it, git is asked.
const MOST_READ: usize = 256;

/// The index at `file`, when it is a plain one git-crew can judge alone: not split, not
/// sparse, nothing unmerged, no entry marked assume-unchanged, skip-worktree or
/// intent-to-add, and no gitlink (a repository's own changes are git's to find).
fn plain_index(file: &Path, hash: gix::hash::Kind) -> Option<gix::index::File> {
    use gix::index::entry::{Flags, Mode};
    if !std::fs::symlink_metadata(file).is_ok_and(|m| m.is_file()) {
        return None;
    }
    let options = gix::index::decode::Options {
        thread_limit: Some(1),
        ..Default::default()
    };
    let index = gix::index::File::at(file, hash, false, options).ok()?;
    if index.link().is_some() || index.is_sparse() {
        return None;
    }
    let odd = Flags::ASSUME_VALID | Flags::SKIP_WORKTREE | Flags::INTENT_TO_ADD;
    let plain = index.entries().iter().all(|entry| {
        entry.flags.stage_raw() == 0 && !entry.flags.intersects(odd) && entry.mode != Mode::COMMIT
    });
    plain.then_some(index)
}

/// Whether every tracked file of the checkout `repo` (opened at `worktree`) is there, of
/// its kind, and holds what its index entry names, as git's status would find it: by its
/// stat data where they match and the entry is not racily clean; else by its content,
/// read only where no filter applies to it (a symlink's target, a file with no
/// attribute or config that converts it) and hashed — a file a filter would convert, or
/// more than [`MOST_READ`] of them, and git is asked (`false`).
fn same_files(repo: &gix::Repository, worktree: &Path, index: &gix::index::File) -> bool {
    use gix::index::entry::{Mode, Stat, stat};
    let strict = stat::Options {
        trust_ctime: true,
        check_stat: true,
        use_nsec: true,
        use_stdev: false,
    };
    let racy = stat::Options {
        use_nsec: false,
        ..strict
    };
    let written = index.timestamp();
    let mut unsure = Vec::new();
    for entry in index.entries() {
        let rel = on_disk(entry.path(index));
        let Ok(meta) = gix::index::fs::Metadata::from_path_no_follow(&worktree.join(rel)) else {
            return false;
        };
        let kind = match entry.mode {
            Mode::FILE => meta.is_file() && !meta.is_executable(),
            Mode::FILE_EXECUTABLE => meta.is_file() && meta.is_executable(),
            Mode::SYMLINK => meta.is_symlink(),
            _ => false,
        };
        if !kind {
            return false;
        }
        let sure = Stat::from_fs(&meta).is_ok_and(|now| entry.stat.matches(&now, strict))
            && !entry.stat.is_racy(written, racy);
        if !sure {
            if unsure.len() == MOST_READ {
                return false;
            }
            unsure.push(entry);
        }
    }
    if unsure.is_empty() {
        return true;
    }
    let Ok((mut pipeline, state)) = repo.filter_pipeline(None) else {
        return false;
    };
    unsure.into_iter().all(|entry| {
        let rel = on_disk(entry.path(index));
        let path = worktree.join(rel);
        let content = match entry.mode {
            Mode::SYMLINK => {
                use std::os::unix::ffi::OsStrExt;
                match std::fs::read_link(&path) {
                    Ok(target) => target.as_os_str().as_bytes().to_vec(),
                    Err(_) => return false,
                }
            }
            _ => {
                let Ok(bytes) = std::fs::read(&path) else {
                    return false;
                };
                match pipeline.convert_to_git(bytes.as_slice(), rel, &state) {
                    Ok(gix::filter::plumbing::pipeline::convert::ToGitOutcome::Unchanged(_)) => {
                        bytes
                    }
                    _ => return false,
                }
            }
        };
        gix::objs::compute_hash(repo.object_hash(), gix::objs::Kind::Blob, &content)
            .is_ok_and(|id| id == entry.id)
    })
}

/// Whether the checkout at `worktree` certainly has no change to its tracked files,
/// staged or not, against `head` (its HEAD's commit), read in-process: its index is plain
/// ([`plain_index`]), holds exactly `head`'s files, and each file on disk holds what its
/// entry names ([`same_files`]). `false` says only that git must look. What is untracked
/// is not looked at (`git status --untracked-files=no`).
///
/// `repo` is used when `worktree` is its work tree; any other checkout is opened.
pub fn tracked_at_rest(repo: &gix::Repository, worktree: &Path, head: gix::ObjectId) -> bool {
    let opened;
    let checkout = match repo.workdir() == Some(worktree) {
        true => repo,
        false => match gix::open(worktree) {
            Ok(other) => {
                opened = other;
                &opened
            }
            Err(_) => return false,
        },
    };
    let Some(index) = plain_index(&checkout.index_path(), checkout.object_hash()) else {
        return false;
    };
    holds_head(checkout, &index, head) && same_files(checkout, worktree, &index)
}

impl RunTree {
    /// Whether the worktree can certainly be removed without git's look: its index is
    /// plain ([`plain_index`]) and holds exactly its HEAD's files, every file holds what
    /// its entry names ([`same_files`]: racily clean entries, and those git smudged when
    /// it committed right after the worker wrote them, by their content), and every path
    /// on disk is a tracked file or a folder of them — nothing uncommitted, nothing
    /// ignored, no repository nested in it. `false` says only that git must look.
    pub fn surely_clean(&self, repo: &gix::Repository) -> bool {
        let Some(index) = plain_index(&self.admin.join("index"), repo.object_hash()) else {
            return false;
        };
        let Some(head) = self.head(repo) else {
            return false;
        };
        if !(nothing_beside(&self.path, &index) && holds_head(repo, &index, head)) {
            return false;
        }
        // The attributes and config its files are read with: the worktree's own, through
        // its `.git` link — which must lead to this administration.
        let canon = |p: &Path| p.canonicalize().ok();
        let Ok(linked) = gix::open(&self.path) else {
            return false;
        };
        canon(linked.git_dir()).is_some_and(|d| Some(d) == canon(&self.admin))
            && same_files(&linked, &self.path, &index)
    }
}

/// An index path as a path on disk (relative to the worktree).
fn on_disk(path: &gix::bstr::BStr) -> &Path {
    use std::os::unix::ffi::OsStrExt;
    Path::new(std::ffi::OsStr::from_bytes(path))
}

/// Whether the index holds exactly the files of commit `head`'s tree: each path, mode
/// and blob.
fn holds_head(repo: &gix::Repository, index: &gix::index::File, head: gix::ObjectId) -> bool {
    let Some(tree) = repo.find_commit(head).ok().and_then(|c| c.tree().ok()) else {
        return false;
    };
    let mut recorder = gix::traverse::tree::Recorder::default();
    if tree.traverse().breadthfirst(&mut recorder).is_err() {
        return false;
    }
    let mut files: Vec<_> = recorder
        .records
        .into_iter()
        .filter(|e| !e.mode.is_tree())
        .collect();
    files.sort_by(|a, b| a.filepath.cmp(&b.filepath));
    let entries = index.entries();
    files.len() == entries.len()
        && files.iter().zip(entries).all(|(file, entry)| {
            file.filepath == entry.path(index)
                && file.oid == entry.id
                && entry.mode.to_tree_entry_mode() == Some(file.mode)
        })
}

/// Whether every entry's file is there, of its kind, with the stat data the index
/// recorded for it, and not changed at or after the index was written (a "racily clean"
/// entry, whose content git would read again).
fn files_unchanged(worktree: &Path, index: &gix::index::File) -> bool {
    use gix::index::entry::{Mode, Stat, stat};
    let strict = stat::Options {
        trust_ctime: true,
        check_stat: true,
        use_nsec: true,
        use_stdev: false,
    };
    // Racy to the second, as git is when built without nanosecond times.
    let racy = stat::Options {
        use_nsec: false,
        ..strict
    };
    let written = index.timestamp();
    index.entries().iter().all(|entry| {
        // git does not look at it either.
        if entry.flags.contains(gix::index::entry::Flags::ASSUME_VALID) {
            return true;
        }
        let path = worktree.join(on_disk(entry.path(index)));
        let Ok(meta) = gix::index::fs::Metadata::from_path_no_follow(&path) else {
            return false;
        };
        let kind = match entry.mode {
            Mode::FILE => meta.is_file() && !meta.is_executable(),
            Mode::FILE_EXECUTABLE => meta.is_file() && meta.is_executable(),
            Mode::SYMLINK => meta.is_symlink(),
            _ => false,
        };
        kind && Stat::from_fs(&meta).is_ok_and(|now| entry.stat.matches(&now, strict))
            && !entry.stat.is_racy(written, racy)
    })
}

/// Whether every path in the worktree is a tracked file or a folder holding one (the
/// `.git` link at its top aside): no untracked file, no ignored one, no empty folder.
fn nothing_beside(worktree: &Path, index: &gix::index::File) -> bool {
    use std::collections::HashSet;
    use std::os::unix::ffi::OsStrExt;
    let mut files: HashSet<&[u8]> = HashSet::new();
    let mut folders: HashSet<&[u8]> = HashSet::new();
    for entry in index.entries() {
        let path: &[u8] = entry.path(index).as_ref();
        files.insert(path);
        for (i, b) in path.iter().enumerate() {
            if *b == b'/' {
                folders.insert(&path[..i]);
            }
        }
    }
    let mut todo: Vec<(PathBuf, Vec<u8>)> = vec![(worktree.to_path_buf(), Vec::new())];
    while let Some((dir, prefix)) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            return false;
        };
        for entry in entries {
            let Ok(entry) = entry else { return false };
            let name = entry.file_name();
            let Ok(kind) = entry.file_type() else {
                return false;
            };
            if prefix.is_empty() && name.as_bytes() == b".git" && kind.is_file() {
                continue;
            }
            let mut rel = prefix.clone();
            if !rel.is_empty() {
                rel.push(b'/');
            }
            rel.extend_from_slice(name.as_bytes());
            if kind.is_dir() {
                if !folders.contains(rel.as_slice()) {
                    return false;
                }
                todo.push((entry.path(), rel));
            } else if !files.contains(rel.as_slice()) {
                return false;
            }
        }
    }
    true
}

/// What `git status` in a run's worktree came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Looked {
    Clean,
    Dirty,
    /// It failed: the facts of whose failure it is.
    Failed(crate::core::toolchain::Failure),
    /// It ran past its bound and was stopped.
    OutOfTime,
}

/// What staging the work left behind came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Staged {
    /// Nothing was left uncommitted.
    Clean,
    Staged,
    /// `git status` or `git add` failed: the facts of whose failure it is.
    Failed(crate::core::toolchain::Failure),
    /// A step (`git status`, `git add`) ran past its bound and was stopped.
    OutOfTime(crate::core::oversize::Step),
}

/// A pre-commit hook run on its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HookRun {
    /// `None` when a signal ended it.
    pub exit_code: Option<i32>,
    pub output: String,
}

/// The paths `git status --porcelain -z` lists, each once (a rename or copy names its
/// source in the next field, which is skipped).
pub fn porcelain_paths(status: &str) -> Vec<String> {
    let mut paths = Vec::new();
    let mut fields = status.split('\0').filter(|f| !f.is_empty());
    while let Some(entry) = fields.next() {
        let (code, path) = entry.split_at(entry.len().min(3));
        paths.push(path.to_string());
        if code.starts_with(['R', 'C']) {
            fields.next();
        }
    }
    paths
}

/// The commit a revision names.
pub fn rev_parse(dir: &Path, rev: &str) -> Result<String> {
    let spec = format!("{rev}^{{commit}}");
    let out = GitRunner::new(dir).raw(&["rev-parse", "--verify", "--quiet", &spec])?;
    if !out.status.success() {
        bail!("`{rev}` does not name a commit");
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Files, insertions and deletions between two commits.
pub fn numstat(dir: &Path, base: &str, tip: &str) -> Result<(Vec<String>, u64, u64)> {
    let range = format!("{base}..{tip}");
    let out = GitRunner::new(dir)
        .output(&["diff", "--numstat", "--no-renames", "-z", &range])
        .context("cannot measure the run's diff")?;
    let (mut files, mut ins, mut del) = (Vec::new(), 0, 0);
    for record in out.split('\0').filter(|r| !r.is_empty()) {
        let mut parts = record.splitn(3, '\t');
        let (a, d, path) = (parts.next(), parts.next(), parts.next());
        ins += a.and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
        del += d.and_then(|n| n.parse::<u64>().ok()).unwrap_or(0);
        if let Some(path) = path {
            files.push(path.to_string());
        }
    }
    Ok((files, ins, del))
}

/// Removes the `index.lock` a killed git process left in a worktree's administration
/// (`<git-common-dir>/worktrees/<name>`, found from the repository, never through the
/// worktree's own `.git` link).
pub fn clear_index_lock(admin: &Path) {
    let lock = admin.join("index.lock");
    if std::fs::symlink_metadata(&lock).is_ok() {
        let _ = std::fs::remove_file(lock);
    }
}

/// The throwaway checkouts (a verify's `verify-checkout`, integrate's `merged`) registered
/// under `runs_dir`, as (path, run): read from the administration of the repository
/// whose common dir is `common_dir` — only the entries git names after a throwaway
/// (`merged`, `verify-checkout`, with a number when the name was taken), each one's
/// `gitdir` — as `git worktree list` would list them, without asking it about every run's
/// worktree.
pub fn throwaways(common_dir: &Path, runs_dir: &Path) -> Vec<(PathBuf, String)> {
    let Ok(entries) = std::fs::read_dir(common_dir.join("worktrees")) else {
        return Vec::new();
    };
    let runs_dir = runs_dir
        .canonicalize()
        .unwrap_or_else(|_| runs_dir.to_path_buf());
    let mut found: Vec<(PathBuf, String)> = entries
        .flatten()
        .filter(|e| crate::core::layout::is_throwaway_name(&e.file_name().to_string_lossy()))
        .filter_map(|e| {
            let admin = e.path();
            let gitdir = std::fs::read_to_string(admin.join("gitdir")).ok()?;
            let gitdir = admin.join(gitdir.trim_end_matches(['\n', '\r']));
            let path = gitdir.parent()?;
            let path = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
            let rest = path.strip_prefix(&runs_dir).ok()?;
            let mut parts = rest.iter();
            let run = parts.next()?.to_string_lossy().into_owned();
            let leaf = parts.next()?.to_string_lossy().into_owned();
            let throwaway = leaf == crate::core::layout::MERGED_CHECKOUT
                || leaf == crate::core::layout::VERIFY_CHECKOUT;
            (parts.next().is_none() && throwaway).then_some((path.to_path_buf(), run))
        })
        .collect();
    found.sort();
    found
}

/// Removes a throwaway checkout and its registration (it holds nothing of anyone's: a
/// clean checkout of a commit, made to verify it).
pub fn remove_throwaway(repo_dir: &Path, path: &Path) -> Result<()> {
    let text = path.to_string_lossy();
    GitRunner::new(repo_dir).output(&["worktree", "remove", "--force", "--force", &text])?;
    Ok(())
}

/// Checks `commit` out, detached, in a new throwaway worktree at `path`, with no hook run.
pub fn add_detached(repo_dir: &Path, path: &Path, commit: &str) -> Result<()> {
    GitRunner::new(repo_dir).output(&[
        "-c",
        "core.hooksPath=/dev/null",
        "worktree",
        "add",
        "--detach",
        "--quiet",
        &path.to_string_lossy(),
        commit,
    ])?;
    Ok(())
}

/// Removes the worktree at `path` whatever it holds (a throwaway, or one being taken
/// back); a worktree that is not there is fine.
pub fn force_remove(repo_dir: &Path, path: &Path) {
    let _ =
        GitRunner::new(repo_dir).raw(&["worktree", "remove", "--force", &path.to_string_lossy()]);
}

/// Whether `rel` has uncommitted changes in the work tree at `dir` (unknown counts as
/// changed).
pub fn path_is_dirty(dir: &Path, rel: &str) -> bool {
    GitRunner::new(dir)
        .output(&["status", "--porcelain", "--", rel])
        .map(|o| !o.trim().is_empty())
        .unwrap_or(true)
}

/// When `rel` was last committed (seconds since the epoch), if ever.
pub fn last_commit_time(dir: &Path, rel: &str) -> Option<i64> {
    GitRunner::new(dir)
        .output(&["log", "-1", "--format=%ct", "--", rel])
        .ok()?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::test_git as git;

    /// A repository with two files committed, the second in a folder: (dir, HEAD).
    fn committed(dir: &Path) -> gix::ObjectId {
        git(dir, &["init", "-q", "-b", "main"]);
        std::fs::write(dir.join("a.txt"), "alpha\n").unwrap();
        std::fs::create_dir(dir.join("docs")).unwrap();
        std::fs::write(dir.join("docs/b.txt"), "bravo\n").unwrap();
        git(dir, &["add", "-A"]);
        git(dir, &["commit", "-q", "-m", "one"]);
        gix::ObjectId::from_hex(git(dir, &["rev-parse", "HEAD"]).as_bytes()).unwrap()
    }

    /// What git's own status says of the tracked files, as integrate would ask it.
    fn git_sees_changes(dir: &Path) -> bool {
        !git(dir, &["status", "--porcelain", "--untracked-files=no"]).is_empty()
    }

    #[test]
    fn tracked_files_at_rest_agree_with_gits_status_and_doubt_means_no() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let head = committed(dir);
        // Just committed: the entries are racily clean (written in the index's second),
        // and their content says they are unchanged.
        assert!(tracked_at_rest(&gix::open(dir).unwrap(), dir, head));
        assert!(!git_sees_changes(dir));
        // An untracked file is not looked at.
        std::fs::write(dir.join("new.txt"), "n\n").unwrap();
        assert!(tracked_at_rest(&gix::open(dir).unwrap(), dir, head));
        // The same size and time, another content.
        let file = dir.join("docs/b.txt");
        let time = std::fs::metadata(&file).unwrap().modified().unwrap();
        std::fs::write(&file, "BRAVO\n").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&file)
            .unwrap()
            .set_modified(time)
            .unwrap();
        assert!(git_sees_changes(dir));
        assert!(!tracked_at_rest(&gix::open(dir).unwrap(), dir, head));
        git(dir, &["checkout", "-q", "docs/b.txt"]);
        assert!(tracked_at_rest(&gix::open(dir).unwrap(), dir, head));
        // Staged: the index no longer holds HEAD's files.
        std::fs::write(dir.join("a.txt"), "changed\n").unwrap();
        git(dir, &["add", "a.txt"]);
        assert!(git_sees_changes(dir));
        assert!(!tracked_at_rest(&gix::open(dir).unwrap(), dir, head));
        git(dir, &["reset", "-q", "--hard"]);
        assert!(tracked_at_rest(&gix::open(dir).unwrap(), dir, head));
        // A file gone; a file that became a folder.
        std::fs::remove_file(dir.join("a.txt")).unwrap();
        assert!(!tracked_at_rest(&gix::open(dir).unwrap(), dir, head));
        std::fs::create_dir(dir.join("a.txt")).unwrap();
        assert!(!tracked_at_rest(&gix::open(dir).unwrap(), dir, head));
        std::fs::remove_dir(dir.join("a.txt")).unwrap();
        git(dir, &["checkout", "-q", "a.txt"]);
        assert!(tracked_at_rest(&gix::open(dir).unwrap(), dir, head));
        // Hidden from status (assume-unchanged): git must look.
        git(dir, &["update-index", "--assume-unchanged", "a.txt"]);
        assert!(!tracked_at_rest(&gix::open(dir).unwrap(), dir, head));
        git(dir, &["update-index", "--no-assume-unchanged", "a.txt"]);
        // A filter may convert a file whose stat data say nothing certain: git must look.
        std::fs::write(dir.join(".gitattributes"), "*.txt text eol=crlf\n").unwrap();
        git(dir, &["add", ".gitattributes"]);
        git(dir, &["commit", "-q", "-m", "attributes"]);
        let head = gix::ObjectId::from_hex(git(dir, &["rev-parse", "HEAD"]).as_bytes()).unwrap();
        let index = dir.join(".git/index");
        let later = std::time::SystemTime::now() + std::time::Duration::from_secs(5);
        // The files are younger than the index no more: their content must be read.
        for file in ["a.txt", "docs/b.txt"] {
            std::fs::File::options()
                .write(true)
                .open(dir.join(file))
                .unwrap()
                .set_modified(later)
                .unwrap();
        }
        assert!(index.exists());
        assert!(!tracked_at_rest(&gix::open(dir).unwrap(), dir, head));
        // Another HEAD than the index's.
        let empty = gix::ObjectId::empty_tree(gix::hash::Kind::Sha1);
        assert!(!tracked_at_rest(&gix::open(dir).unwrap(), dir, empty));
    }

    #[test]
    fn a_registered_worktree_is_as_git_worktree_add_makes_one_and_goes_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("lead");
        std::fs::create_dir(&dir).unwrap();
        let head = committed(&dir);
        let repo = gix::open(&dir).unwrap();
        create_branch(&repo, "crew/t/r1", &head.to_string()).unwrap();
        let wt = dir.join(".git/crew/worktrees/r1");
        std::fs::create_dir_all(wt.parent().unwrap()).unwrap();
        let admin = register(&repo, &wt, "crew/t/r1", "git-crew run r1 is live").unwrap();
        check_out(&wt).unwrap();
        assert_eq!(admin, dir.join(".git/worktrees/r1"));
        // git reads it as its own: on its branch, locked, clean, every file there.
        let listed = git(&dir, &["worktree", "list", "--porcelain"]);
        assert!(
            listed.contains(&format!("worktree {}", wt.display())),
            "{listed}"
        );
        assert!(listed.contains("branch refs/heads/crew/t/r1"), "{listed}");
        assert!(
            listed.contains("locked git-crew run r1 is live"),
            "{listed}"
        );
        assert_eq!(git(&wt, &["status", "--porcelain"]), "");
        assert_eq!(
            std::fs::read_to_string(wt.join("docs/b.txt")).unwrap(),
            "bravo\n"
        );
        assert!(tracked_at_rest(&repo, &wt, head));
        // The name is taken: a second registration touches nothing of the first.
        assert!(register(&repo, &wt, "crew/t/r1", "again").is_err());
        assert_eq!(git(&wt, &["status", "--porcelain"]), "");
        // Unlocked in-process, as git would see it.
        unlock(&dir, &wt).unwrap();
        let listed = git(&dir, &["worktree", "list", "--porcelain"]);
        assert!(!listed.contains("locked"), "{listed}");
        unlock(&dir, &wt).unwrap();
        // Discarded: nothing of it is left, not even the folder of registrations.
        discard(repo.common_dir(), &wt);
        assert!(!wt.exists());
        assert!(!dir.join(".git/worktrees").exists());
        assert_eq!(
            git(&dir, &["worktree", "list", "--porcelain"])
                .matches("worktree ")
                .count(),
            1
        );
    }
}
