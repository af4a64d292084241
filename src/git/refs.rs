//! References: HEAD, tips, the refs under a prefix, ancestry, and branch-name rules.

use super::error::{Context, Result};
use gix::ObjectId;

/// The commit HEAD points at; `None` on an unborn branch.
pub fn head_id(repo: &gix::Repository) -> Option<ObjectId> {
    repo.head_id().ok().map(|id| id.detach())
}

/// HEAD's branch as a full ref name (`refs/heads/main`); `None` when detached.
pub fn head_ref(repo: &gix::Repository) -> Result<Option<String>> {
    Ok(repo.head_name()?.map(|name| name.as_bstr().to_string()))
}

/// HEAD's branch, short (`main`); `None` when detached or unreadable.
pub fn head_branch(repo: &gix::Repository) -> Option<String> {
    repo.head_name()
        .ok()
        .flatten()
        .map(|name| name.shorten().to_string())
}

/// What `name` (a full ref name, or `ORIG_HEAD`) points at, peeled to an object;
/// `None` when there is no such ref.
pub fn tip(repo: &gix::Repository, name: &str) -> Result<Option<ObjectId>> {
    Ok(repo
        .try_find_reference(name)?
        .and_then(|mut r| r.peel_to_id().ok())
        .map(|id| id.detach()))
}

/// Whether the ref `name` exists.
pub fn exists(repo: &gix::Repository, name: &str) -> bool {
    repo.try_find_reference(name).ok().flatten().is_some()
}

/// Every ref under `prefix` (such as `refs/heads/crew/`), by full name, with what it
/// points at (`None` when it cannot be peeled). An unreadable ref is left out.
pub fn under(repo: &gix::Repository, prefix: &str) -> Result<Vec<(String, Option<ObjectId>)>> {
    let refs = repo.references()?;
    let Ok(found) = refs.prefixed(prefix) else {
        return Ok(Vec::new());
    };
    Ok(found
        .flatten()
        .map(|mut r| {
            let name = r.name().as_bstr().to_string();
            (name, r.peel_to_id().ok().map(|id| id.detach()))
        })
        .collect())
}

/// The full names of the refs under `prefix`, nothing resolved: no object is looked at.
/// An unreadable ref is left out, as [`under`] leaves it out.
pub fn names_under(repo: &gix::Repository, prefix: &str) -> Result<Vec<String>> {
    let refs = repo.references()?;
    let Ok(found) = refs.prefixed(prefix) else {
        return Ok(Vec::new());
    };
    Ok(found
        .flatten()
        .map(|r| r.name().as_bstr().to_string())
        .collect())
}

/// Whether `commit` is on some branch: reachable from a ref under `refs/heads/`, or under
/// `refs/remotes/` (a remote's branch as last fetched: a landing through a fleet's remote
/// may leave the local branch behind). When the refs cannot be read, it is taken to be.
pub fn on_a_branch(repo: &gix::Repository, commit: ObjectId) -> bool {
    ["refs/heads/", "refs/remotes/"].iter().any(|prefix| {
        under(repo, prefix).map_or(true, |refs| {
            refs.iter()
                .filter_map(|(_, tip)| *tip)
                .any(|tip| crate::git::merge::is_ancestor(repo, commit, tip))
        })
    })
}

/// The best common ancestor of two commits.
pub fn merge_base(repo: &gix::Repository, a: ObjectId, b: ObjectId) -> Option<ObjectId> {
    repo.merge_base(a, b).ok().flatten().map(|id| id.detach())
}

/// Whether `name` is a valid local branch name (`refs/heads/<name>` is a valid ref).
pub fn is_branch_name(name: &str) -> bool {
    gix::refs::FullName::try_from(format!("refs/heads/{name}")).is_ok()
}

/// An object id from its hex form.
pub fn oid(hex: &str) -> Result<ObjectId> {
    ObjectId::from_hex(hex.as_bytes())
        .map_err(|_| super::error::Error::invalid(format!("`{hex}` is not an object id")))
}

/// The most entries [`folder`] looks at: a folder a worker filled with more is named by
/// what was looked at, and the rest is found by the next look.
const MAX_ENTRIES: usize = 10_000;

/// Everything in the ref folder `prefix` (a full ref name prefix ending in `/`, such as
/// `refs/heads/crew/<task>/`): every ref git reads there, loose or packed, and every loose
/// file under the folder git does not read as a ref (a name git refuses, such as
/// `x.lock`; content that names no object; a symbolic link, which is never followed — a
/// ref git reads through a linked folder is left out, the link is named instead). What
/// each points at is named only when the object is in the store.
pub fn folder(repo: &gix::Repository, prefix: &str) -> Result<Vec<crate::core::strays::Found>> {
    use crate::core::strays::Found;
    let common = repo.common_dir();
    let mut out: Vec<Found> = Vec::new();
    for (name, target) in under(repo, prefix)? {
        if through_link(common, prefix, &name) {
            continue;
        }
        out.push(Found {
            name,
            target: target
                .filter(|id| repo.has_object(id))
                .map(|id| id.to_string()),
            git_reads: true,
        });
    }
    let mut loose = Vec::new();
    walk(&common.join(prefix), prefix, 0, &mut loose);
    for (name, path) in loose {
        if out.iter().any(|f| f.name == name) {
            continue;
        }
        out.push(Found {
            target: loose_target(repo, &path),
            name,
            git_reads: false,
        });
    }
    Ok(out)
}

/// Every entry under `dir` that is not a real folder (files, links, anything else), by
/// ref name and path; real folders are walked, links never followed.
fn walk(
    dir: &std::path::Path,
    prefix: &str,
    depth: usize,
    out: &mut Vec<(String, std::path::PathBuf)>,
) {
    if depth > 64 {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        if out.len() >= MAX_ENTRIES {
            return;
        }
        let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            walk(&entry.path(), &format!("{name}/"), depth + 1, out);
        } else {
            out.push((name, entry.path()));
        }
    }
}

/// Whether the loose file of ref `name` is a link or lies under one, below the folder
/// `prefix` (whose own place git-crew made).
fn through_link(common: &std::path::Path, prefix: &str, name: &str) -> bool {
    let Some(rel) = name.strip_prefix(prefix) else {
        return true;
    };
    let mut path = common.join(prefix);
    rel.split('/').any(|part| {
        path.push(part);
        std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink())
    })
}

/// The object a loose file git does not read names, when it is a small regular file
/// holding an object id of the store.
fn loose_target(repo: &gix::Repository, path: &std::path::Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() || meta.len() > 4096 {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    let id = ObjectId::from_hex(text.trim().as_bytes()).ok()?;
    repo.has_object(id).then(|| id.to_string())
}

/// Takes `found` (from [`folder`] of `prefix`) out of the folder, only while it is still
/// what was found: a ref through a compare-and-swap that never follows a symbolic ref
/// (its loose file, its packed entry and its reflog go), a loose file git does not read
/// by removing that file (a link itself, never what it points at). Folders this leaves
/// empty below `prefix` go too; `prefix`'s own stays.
pub fn remove_found(
    repo: &gix::Repository,
    prefix: &str,
    found: &crate::core::strays::Found,
) -> Result<()> {
    use super::error::bail;
    use gix::refs::transaction::{PreviousValue, RefEdit};
    let common = repo.common_dir();
    let Some(rel) = found.name.strip_prefix(prefix) else {
        bail!("{} is not in {prefix}", found.name);
    };
    if rel
        .split('/')
        .any(|p| p.is_empty() || p == "." || p == "..")
    {
        bail!("{} is no name in the folder", found.name);
    }
    if found.git_reads {
        if through_link(common, prefix, &found.name) {
            bail!("it lies under a link now");
        }
        let Some(reference) = repo.try_find_reference(found.name.as_str())? else {
            return Ok(());
        };
        let now = tip(repo, &found.name)?
            .filter(|id| repo.has_object(id))
            .map(|id| id.to_string());
        if now != found.target {
            bail!("it moved while it was looked at");
        }
        let name = gix::refs::FullName::try_from(found.name.as_str())?;
        repo.edit_reference(RefEdit::delete(
            name,
            PreviousValue::MustExistAndMatch(reference.inner().target.clone()),
        ))?;
    } else {
        // Its folders are real ones (the walk never went through a link): still so now?
        let parent = rel.rsplit_once('/').map_or("", |(p, _)| p);
        if !parent.is_empty() && through_link(common, prefix, &format!("{prefix}{parent}")) {
            bail!("it lies under a link now");
        }
        let path = common.join(&found.name);
        let meta = std::fs::symlink_metadata(&path);
        match meta {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
            Ok(m) if m.is_dir() => bail!("it is a folder now"),
            Ok(_) => std::fs::remove_file(&path)?,
        }
        let log = common.join("logs").join(&found.name);
        if std::fs::symlink_metadata(&log).is_ok_and(|m| !m.is_dir()) {
            let _ = std::fs::remove_file(&log);
        }
    }
    // Empty folders left behind, in the refs and in their logs.
    for root in [common.to_path_buf(), common.join("logs")] {
        let stop = root.join(prefix);
        let mut dir = root.join(&found.name);
        while dir.pop() && dir.starts_with(&stop) && dir != stop {
            if std::fs::remove_dir(&dir).is_err() {
                break;
            }
        }
    }
    Ok(())
}

/// Creates ref `name` at `id`; it must not exist yet (or hold `id` already).
pub fn create(repo: &gix::Repository, name: &str, id: ObjectId, message: &str) -> Result<()> {
    use gix::refs::transaction::PreviousValue;
    repo.reference(name, id, PreviousValue::MustNotExist, message)
        .with_context(|| format!("cannot create {name}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::core::strays::Found;

    use crate::git::test_git as git;

    const T: &str = "refs/heads/crew/t/";

    fn names(found: &[Found]) -> Vec<(String, bool, bool)> {
        let mut out: Vec<(String, bool, bool)> = found
            .iter()
            .map(|f| (f.name.clone(), f.git_reads, f.target.is_some()))
            .collect();
        out.sort();
        out
    }

    #[test]
    fn a_folder_holds_what_git_reads_and_what_it_does_not() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        git(dir, &["init", "-q", "-b", "main"]);
        git(dir, &["commit", "-q", "--allow-empty", "-m", "one"]);
        let run = "refs/heads/crew/t/20260101-000000-0001";
        git(dir, &["update-ref", run, "HEAD"]);
        git(dir, &["update-ref", "refs/heads/crew/t/packed", "HEAD"]);
        git(dir, &["pack-refs", "--all"]);
        // main loose again, beside its packed entry.
        git(dir, &["commit", "-q", "--allow-empty", "-m", "two"]);
        let head = git(dir, &["rev-parse", "HEAD"]);
        git(dir, &["update-ref", "refs/heads/crew/t/a/b", "HEAD"]);
        git(
            dir,
            &["symbolic-ref", "refs/heads/crew/t/sym", "refs/heads/main"],
        );
        let folder_dir = dir.join(".git/refs/heads/crew/t");
        std::fs::write(folder_dir.join("x.lock"), format!("{head}\n")).unwrap();
        std::fs::write(folder_dir.join("bad name"), format!("{head}\n")).unwrap();
        std::fs::write(folder_dir.join("garbage"), "not an id\n").unwrap();
        // A link to the lead's branches: never followed, never a way to delete them.
        std::os::unix::fs::symlink(dir.join(".git/refs/heads"), folder_dir.join("link")).unwrap();
        let repo = gix::open(dir).unwrap();
        let found = folder(&repo, T).unwrap();
        let s = |n: &str| n.to_string();
        assert_eq!(
            names(&found),
            [
                (s("refs/heads/crew/t/20260101-000000-0001"), true, true),
                (s("refs/heads/crew/t/a/b"), true, true),
                (s("refs/heads/crew/t/bad name"), false, true),
                (s("refs/heads/crew/t/garbage"), false, false),
                (s("refs/heads/crew/t/link"), false, false),
                (s("refs/heads/crew/t/packed"), true, true),
                (s("refs/heads/crew/t/sym"), true, true),
                (s("refs/heads/crew/t/x.lock"), false, true),
            ]
        );
        for f in found.iter().filter(|f| !f.name.ends_with("0001")) {
            remove_found(&repo, T, f).unwrap_or_else(|e| panic!("{}: {e:#}", f.name));
        }
        // Only the run's branch is left, and nothing the stray refs pointed through.
        assert_eq!(names(&folder(&repo, T).unwrap()), [(s(run), true, true)]);
        assert_eq!(git(dir, &["rev-parse", "refs/heads/main"]), head);
        assert!(dir.join(".git/refs/heads/main").exists());
        assert!(!folder_dir.join("a").exists(), "the empty folder is gone");
        assert!(!dir.join(".git/logs/refs/heads/crew/t/a").exists());
        assert!(folder_dir.exists());
        let listed = git(dir, &["for-each-ref", "--format=%(refname)", "refs/heads/"]);
        assert_eq!(
            listed,
            format!("refs/heads/crew/t/20260101-000000-0001\nrefs/heads/main")
        );
    }

    #[test]
    fn a_ref_that_moved_since_it_was_found_stays() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        git(dir, &["init", "-q", "-b", "main"]);
        git(dir, &["commit", "-q", "--allow-empty", "-m", "one"]);
        git(dir, &["update-ref", "refs/heads/crew/t/x", "HEAD"]);
        let repo = gix::open(dir).unwrap();
        let found = folder(&repo, T).unwrap();
        git(dir, &["commit", "-q", "--allow-empty", "-m", "two"]);
        git(dir, &["update-ref", "refs/heads/crew/t/x", "HEAD"]);
        let err = remove_found(&repo, T, &found[0]).unwrap_err();
        assert!(err.to_string().contains("moved"), "{err:#}");
        assert!(exists(&repo, "refs/heads/crew/t/x"));
        let id = oid(&git(dir, &["rev-parse", "HEAD"])).unwrap();
        create(&repo, "refs/crew/strays/r/x", id, "keep").unwrap();
        create(&repo, "refs/crew/strays/r/x", id, "keep").unwrap();
        let first = found[0].target.as_deref().map(oid).unwrap().unwrap();
        assert!(create(&repo, "refs/crew/strays/r/x", first, "keep").is_err());
    }
}
