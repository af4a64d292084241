//! A fleet's refs on the remote (the rule is `core::fleet`'s): fetching the claims into
//! `refs/crew/remotes/<remote>/...`, reading them, and moving refs on the remote in one
//! atomic push, each with a lease on the value it was read at (`--force-with-lease`,
//! `--atomic`): all of them move, or none.

use std::path::Path;

use super::error::{Context, Result, bail};
use super::run::GitRunner;
use crate::core::fleet::{ATTEMPTS_PREFIX, CLAIMS_PREFIX, FleetClaim, SERIAL, Seen};
use gix::ObjectId;

/// Where the remote's claims are kept here.
pub fn tracking_prefix(remote: &str) -> String {
    format!("refs/crew/remotes/{remote}/claims/")
}

/// Where the remote's serial ref is kept here.
pub fn tracking_serial(remote: &str) -> String {
    format!("refs/crew/remotes/{remote}/fleet")
}

/// Fetches the remote's claims and serial ref; claims let go there are let go here.
pub fn fetch(repo_dir: &Path, remote: &str) -> Result<()> {
    let claims = format!("+{CLAIMS_PREFIX}*:{}*", tracking_prefix(remote));
    // A glob, so that a remote with no serial ref yet is not an error.
    let serial = format!("+{SERIAL}*:{}*", tracking_serial(remote));
    super::sync::fetch_refs(repo_dir, remote, &[&claims, &serial], true)
        .with_context(|| format!("cannot fetch the fleet's claims from {remote}"))
}

/// Where the remote's branch `branch` is kept here (git's own remote-tracking ref).
pub fn tracking_branch(remote: &str, branch: &str) -> String {
    format!("refs/remotes/{remote}/{branch}")
}

/// Fetches what a landing through the remote decides on, in one fetch: the target
/// branch (into its remote-tracking ref), the notes (into `refs/notes/remotes/<remote>/`,
/// as `sync` does) and the claims.
pub fn fetch_landing(repo_dir: &Path, remote: &str, branch: &str) -> Result<()> {
    let target = format!("+refs/heads/{branch}:{}", tracking_branch(remote, branch));
    let notes = format!("+refs/notes/crew*:refs/notes/remotes/{remote}/crew*");
    let claims = format!("+{CLAIMS_PREFIX}*:{}*", tracking_prefix(remote));
    let turn = format!(
        "+{}*:{}*",
        crate::core::fleet::turn_ref(branch),
        tracking_turn(remote, branch)
    );
    super::sync::fetch_refs(repo_dir, remote, &[&target, &notes, &claims, &turn], true)
        .with_context(|| {
            format!("cannot fetch {branch} and the fleet's notes and claims from {remote}")
        })
}

/// Where the remote's landing turn on `branch` is kept here.
pub fn tracking_turn(remote: &str, branch: &str) -> String {
    format!("refs/crew/remotes/{remote}/landing/{branch}")
}

/// The landing turn on `branch` last fetched from `remote`: its value, and what it says
/// (`None` when the blob is not a turn).
pub fn seen_turn(
    repo: &gix::Repository,
    remote: &str,
    branch: &str,
) -> Result<Option<(ObjectId, Option<crate::core::fleet::LandingTurn>)>> {
    let Some(id) = super::refs::tip(repo, &tracking_turn(remote, branch))? else {
        return Ok(None);
    };
    let turn = repo
        .find_object(id)
        .ok()
        .filter(|o| o.kind == gix::object::Kind::Blob)
        .and_then(|o| crate::core::fleet::LandingTurn::parse(&String::from_utf8_lossy(&o.data)));
    Ok(Some((id, turn)))
}

/// The claims last fetched from `remote`, and the serial ref's value then.
pub fn seen(repo: &gix::Repository, remote: &str) -> Result<(Vec<Seen>, Option<ObjectId>)> {
    let prefix = tracking_prefix(remote);
    let mut seen = Vec::new();
    for (name, id) in super::refs::under(repo, &prefix)? {
        let (Some(task), Some(id)) = (name.strip_prefix(&prefix), id) else {
            continue;
        };
        let claim = repo
            .find_object(id)
            .ok()
            .filter(|o| o.kind == gix::object::Kind::Blob)
            .and_then(|o| FleetClaim::parse(&String::from_utf8_lossy(&o.data)));
        seen.push(Seen {
            task: task.to_string(),
            id: id.to_string(),
            claim,
        });
    }
    let serial = super::refs::tip(repo, &tracking_serial(remote))?;
    Ok((seen, serial))
}

/// The remote's attempt refs (`refs/crew/attempts/<run>` → the commit it names), as
/// `git ls-remote` lists them: nothing is fetched, nothing written here.
pub fn attempts(repo_dir: &Path, remote: &str) -> Result<Vec<(String, ObjectId)>> {
    let pattern = format!("{ATTEMPTS_PREFIX}*");
    let out = GitRunner::new(repo_dir)
        .output(&["ls-remote", "--refs", remote, &pattern])
        .with_context(|| format!("cannot list the fleet's attempts on {remote}"))?;
    Ok(parse_ls_remote(&out)
        .into_iter()
        .filter_map(|(name, id)| Some((name.strip_prefix(ATTEMPTS_PREFIX)?.to_string(), id)))
        .collect())
}

/// `git ls-remote`'s lines: each ref with the object it names.
fn parse_ls_remote(out: &str) -> Vec<(String, ObjectId)> {
    out.lines()
        .filter_map(|line| {
            let (id, name) = line.split_once('\t')?;
            Some((name.to_string(), ObjectId::from_hex(id.as_bytes()).ok()?))
        })
        .collect()
}

/// Writes `text` as a blob here (for a push to name).
pub fn write_text(repo: &gix::Repository, text: &str) -> Result<ObjectId> {
    Ok(repo
        .write_blob(text.as_bytes())
        .context("cannot write a fleet blob")?
        .detach())
}

/// One ref to move on the remote: from `old` (`None`: it must not exist) to `new`
/// (`None`: delete it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Update {
    pub reference: String,
    pub old: Option<ObjectId>,
    pub new: Option<ObjectId>,
}

/// How an atomic push ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pushed {
    /// Every ref moved.
    Done,
    /// Nothing moved: a ref was not at the value leased (another machine moved it first).
    Lost,
    /// Nothing moved: the remote refused (a hook, a protected ref); what it said.
    Refused(String),
}

/// Moves every ref of `updates` on `remote` in one atomic push, each with a lease on its
/// old value.
pub fn push(repo_dir: &Path, remote: &str, updates: &[Update]) -> Result<Pushed> {
    push_with(GitRunner::new(repo_dir), remote, updates)
}

/// [`push`] through `runner` (a repository and its environment).
fn push_with(runner: GitRunner, remote: &str, updates: &[Update]) -> Result<Pushed> {
    if updates.is_empty() {
        return Ok(Pushed::Done);
    }
    let mut args: Vec<String> = vec![
        "push".into(),
        "--porcelain".into(),
        "--atomic".into(),
        "--no-verify".into(),
    ];
    for u in updates {
        let old = u.old.map(|id| id.to_string()).unwrap_or_default();
        args.push(format!("--force-with-lease={}:{old}", u.reference));
    }
    args.push(remote.to_string());
    for u in updates {
        let new = u.new.map(|id| id.to_string()).unwrap_or_default();
        args.push(format!("{new}:{}", u.reference));
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = runner.raw(&args)?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    Ok(match outcome(out.status.success(), &stdout, &stderr) {
        Some(pushed) => pushed,
        None => bail!("git push to {remote} failed: {}", stderr.trim()),
    })
}

/// Pushes a run's commits to its attempt ref on the remote (`update`, leased on what was
/// pushed last), reading the objects of the repository and of `store` (the attempt's
/// objects copied out of its quarantine, each hashed again: see
/// `objects::copy_live`). What the worker's ref names is checked first, and nothing is
/// pushed unless it is a commit that descends from the run's `base`: `Refused` says why.
/// Nothing is written here.
pub fn push_attempt(
    repo_dir: &Path,
    remote: &str,
    update: &Update,
    base: ObjectId,
    store: &Path,
) -> Result<Pushed> {
    let Some(tip) = update.new else {
        return push(repo_dir, remote, std::slice::from_ref(update));
    };
    let runner = || {
        let mut runner = GitRunner::new(repo_dir);
        let text = store.to_string_lossy();
        // git splits the variable at a colon; a store it cannot name is left out.
        if store.is_dir() && !text.contains([':', '"', '\n']) {
            runner = runner.with_env("GIT_ALTERNATE_OBJECT_DIRECTORIES", &text);
        }
        runner
    };
    let tip_hex = tip.to_string();
    let kind = runner().raw(&["cat-file", "-t", &tip_hex])?;
    if !kind.status.success() || String::from_utf8_lossy(&kind.stdout).trim() != "commit" {
        return Ok(Pushed::Refused(format!(
            "the run's branch names {tip_hex}, which is no commit of the run's"
        )));
    }
    let descends = runner().raw(&["merge-base", "--is-ancestor", &base.to_string(), &tip_hex])?;
    if !descends.status.success() {
        return Ok(Pushed::Refused(format!(
            "the run's branch names {tip_hex}, which does not descend from the run's base {base}"
        )));
    }
    push_with(runner(), remote, std::slice::from_ref(update))
}

/// The commit a branch of a run names, read with care while the run's processes may
/// still write its folder (`refs/heads/crew/<task>/`): the loose ref is opened without
/// following a symlink or blocking, must be a regular file holding an object id and
/// nothing else (a symbolic ref, a folder, a FIFO or junk name nothing); with no loose
/// ref, the packed one. `name` is the full ref name.
pub fn branch_tip(common_dir: &Path, name: &str) -> Option<ObjectId> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(common_dir.join(name));
    let text = match opened {
        Ok(file) => {
            if !file.metadata().ok()?.is_file() {
                return None;
            }
            let mut text = String::new();
            file.take(128).read_to_string(&mut text).ok()?;
            text
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // git-crew's own file: the worker cannot write it.
            let packed = std::fs::read_to_string(common_dir.join("packed-refs")).ok()?;
            let line = packed
                .lines()
                .find(|l| l.split_once(' ').is_some_and(|(_, n)| n == name))?;
            line.split_once(' ')?.0.to_string()
        }
        Err(_) => return None,
    };
    let hex = text.trim_end_matches('\n');
    if !matches!(hex.len(), 40 | 64) || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    ObjectId::from_hex(hex.as_bytes()).ok()
}

/// What a push's porcelain output says; `None` when it failed before any ref was
/// weighed (the remote unreachable).
fn outcome(success: bool, stdout: &str, stderr: &str) -> Option<Pushed> {
    if success {
        return Some(Pushed::Done);
    }
    let rejected: Vec<&str> = stdout.lines().filter(|l| l.starts_with('!')).collect();
    if rejected.is_empty() {
        return None;
    }
    let declined = |l: &&str| l.contains("hook declined");
    let lost = |l: &&str| {
        [
            "stale info",
            "fetch first",
            "non-fast-forward",
            "already exists",
            "failed to update ref",
            "cannot lock ref",
            "failed to lock",
            "incorrect old value",
            "atomic transaction failed",
        ]
        .iter()
        .any(|why| l.contains(why))
    };
    // A ref the remote found moved under its lock is said on stderr only.
    if !rejected.iter().any(declined)
        && (rejected.iter().any(lost) || stderr.lines().any(|l| lost(&l)))
    {
        return Some(Pushed::Lost);
    }
    // The refusal is the line that is not only the atomic push's echo of another's.
    let why = rejected
        .iter()
        .find(|l| !l.contains("atomic push failed"))
        .or(rejected.first())
        .map(|l| l.rsplit('\t').next().unwrap_or(l).trim().to_string())
        .unwrap_or_default();
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("remote:"))
        .map(|l| l.trim_start_matches("remote:").trim())
        .filter(|l| !l.is_empty())
        .collect();
    Some(Pushed::Refused(if said.is_empty() {
        why
    } else {
        format!("{why}: {}", said.join("; "))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_push_is_done_lost_or_refused_by_what_git_prints() {
        assert_eq!(outcome(true, "", ""), Some(Pushed::Done));
        let stale = "To r\n!\tab:refs/crew/claims/t\t[rejected] (stale info)\nDone\n";
        assert_eq!(outcome(false, stale, ""), Some(Pushed::Lost));
        let atomic = "To r\n!\tab:refs/crew/claims/t\t[rejected] (stale info)\n!\tcd:refs/crew/fleet\t[rejected] (atomic push failed)\n";
        assert_eq!(outcome(false, atomic, ""), Some(Pushed::Lost));
        let hook =
            "To r\n!\tab:refs/crew/claims/t\t[remote rejected] (pre-receive hook declined)\n";
        assert_eq!(
            outcome(false, hook, "remote: no claims here\nerror: failed to push"),
            Some(Pushed::Refused(
                "[remote rejected] (pre-receive hook declined): no claims here".into()
            ))
        );
        let raced =
            "To r\n!\tab:refs/crew/claims/t\t[remote rejected] (atomic transaction failed)\n";
        assert_eq!(
            outcome(
                false,
                raced,
                "error: cannot lock ref 'refs/crew/claims/t': reference already exists"
            ),
            Some(Pushed::Lost)
        );
        assert_eq!(
            outcome(false, "", "fatal: could not read from remote"),
            None
        );
    }

    #[test]
    fn ls_remote_lines_are_read_as_refs_and_ids() {
        let id = "0123456789abcdef0123456789abcdef01234567";
        let out = format!("{id}\trefs/crew/attempts/r1\nnot a line\nzz\trefs/crew/attempts/r2\n");
        assert_eq!(
            parse_ls_remote(&out),
            vec![(
                "refs/crew/attempts/r1".to_string(),
                ObjectId::from_hex(id.as_bytes()).unwrap()
            )]
        );
    }
}
