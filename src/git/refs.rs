//! References: HEAD, tips, the refs under a prefix, ancestry, and branch-name rules.

use gix::ObjectId;

/// The commit HEAD points at; `None` on an unborn branch.
pub fn head_id(repo: &gix::Repository) -> Option<ObjectId> {
    repo.head_id().ok().map(|id| id.detach())
}

/// HEAD's branch as a full ref name (`refs/heads/main`); `None` when detached.
pub fn head_ref(repo: &gix::Repository) -> anyhow::Result<Option<String>> {
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
pub fn tip(repo: &gix::Repository, name: &str) -> anyhow::Result<Option<ObjectId>> {
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
pub fn under(
    repo: &gix::Repository,
    prefix: &str,
) -> anyhow::Result<Vec<(String, Option<ObjectId>)>> {
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

/// Whether `commit` is on some branch: reachable from a ref under `refs/heads/` (when the
/// refs cannot be read, it is taken to be).
pub fn on_a_branch(repo: &gix::Repository, commit: ObjectId) -> bool {
    under(repo, "refs/heads/").map_or(true, |refs| {
        refs.iter()
            .filter_map(|(_, tip)| *tip)
            .any(|tip| crate::git::merge::is_ancestor(repo, commit, tip))
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
pub fn oid(hex: &str) -> anyhow::Result<ObjectId> {
    ObjectId::from_hex(hex.as_bytes()).map_err(|_| anyhow::anyhow!("`{hex}` is not an object id"))
}

/// Deletes a local branch whatever it holds (one being taken back); a missing one is fine.
pub fn force_delete_branch(repo_dir: &std::path::Path, branch: &str) {
    let _ = super::run::GitRunner::new(repo_dir).output(&["branch", "-D", branch]);
}
