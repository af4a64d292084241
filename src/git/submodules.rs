//! Submodules in a run's worktree: the ones the lead's checkout has initialised are
//! cloned into the worktree from the lead's own copies, and the objects a run's commits
//! made in them are found again when its attempt ends.

use std::path::{Path, PathBuf};

use super::error::{Context, Result};

use super::run::GitRunner;

/// The submodules the lead's checkout has initialised: each name and its git dir
/// (`<common>/modules/<name>`). Nested submodules are left to the project.
pub fn initialised(common_dir: &Path) -> Vec<(String, PathBuf)> {
    let root = common_dir.join("modules");
    let mut found = Vec::new();
    let mut walk = walkdir::WalkDir::new(&root)
        .min_depth(1)
        .max_depth(16)
        .into_iter();
    while let Some(Ok(entry)) = walk.next() {
        if !entry.file_type().is_dir() {
            continue;
        }
        let dir = entry.path();
        if dir.join("HEAD").is_file() && dir.join("objects").is_dir() {
            if let Ok(rel) = dir.strip_prefix(&root) {
                found.push((rel.to_string_lossy().into_owned(), dir.to_path_buf()));
            }
            walk.skip_current_dir();
        }
    }
    found
}

/// The object folder of submodule `name` in a run worktree's git dir `admin`
/// (`<admin>/modules/<name>/objects`), when every folder on the way is a real one: the
/// worker may have made any of them a symlink, which is never followed.
pub fn run_objects(admin: &Path, name: &str) -> Option<PathBuf> {
    let mut at = admin.to_path_buf();
    let rel = Path::new("modules").join(name).join("objects");
    for part in rel.components() {
        let std::path::Component::Normal(part) = part else {
            return None;
        };
        at.push(part);
        if !std::fs::symlink_metadata(&at).is_ok_and(|m| m.is_dir()) {
            return None;
        }
    }
    Some(at)
}

/// The submodules `.gitmodules` of the checkout at `dir` declares: each name and path.
fn declared(dir: &Path) -> Result<Vec<(String, String)>> {
    if !dir.join(".gitmodules").is_file() {
        return Ok(Vec::new());
    }
    let out = GitRunner::new(dir).raw(&[
        "config",
        "--file",
        ".gitmodules",
        "--null",
        "--get-regexp",
        r"^submodule\..*\.path$",
    ])?;
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text
        .split('\0')
        .filter_map(|entry| {
            let (key, path) = entry.split_once('\n')?;
            let name = key.strip_prefix("submodule.")?.strip_suffix(".path")?;
            Some((name.to_string(), path.to_string()))
        })
        .collect())
}

/// Initialises, in the new run worktree `wt`, each submodule the lead's checkout has
/// initialised: it is cloned from the lead's own copy over `file://` (no hard link into
/// the lead's store) with that copy as its reference (its objects are read, not copied),
/// into the worktree's own git dir. The URL is given on the command line: nothing of the
/// lead's config is written. Returns the paths initialised.
pub fn init(common_dir: &Path, wt: &Path) -> Result<Vec<String>> {
    let lead: Vec<(String, PathBuf)> = initialised(common_dir);
    let mut done = Vec::new();
    for (name, path) in declared(wt)? {
        let Some((_, module)) = lead.iter().find(|(n, _)| *n == name) else {
            continue;
        };
        let module = module.to_string_lossy();
        GitRunner::new(wt)
            .with_config("protocol.file.allow=always")
            .with_config(&format!("submodule.{name}.url=file://{module}"))
            .output(&["submodule", "update", "--reference", &module, "--", &path])
            .with_context(|| format!("cannot initialise submodule {path} in the run's worktree"))?;
        done.push(path);
    }
    Ok(done)
}

/// After run `branch` landed as `commit` (cut from `base`): each initialised submodule
/// whose commit it moved gets that commit on a branch of the same name in the lead's copy
/// (`refs/heads/<branch>`), so `git submodule update` finds it reachable and it can be
/// pushed to the submodule's own remote. Returns the submodules so kept.
pub fn keep(
    common_dir: &Path,
    repo_dir: &Path,
    base: &str,
    commit: &str,
    branch: &str,
) -> Result<Vec<String>> {
    // Only a submodule the lead's copy has initialised is kept: with none, there is
    // nothing to ask git.
    let modules = initialised(common_dir);
    if modules.is_empty() {
        return Ok(Vec::new());
    }
    let git = GitRunner::new(repo_dir);
    let blob = format!("{commit}:.gitmodules");
    if !git.raw(&["cat-file", "-e", &blob])?.status.success() {
        return Ok(Vec::new());
    }
    let out = git.raw(&[
        "config",
        "--blob",
        &blob,
        "--null",
        "--get-regexp",
        r"^submodule\..*\.path$",
    ])?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let gitlink = |rev: &str, path: &str| {
        git.raw(&["rev-parse", "--verify", "--quiet", &format!("{rev}:{path}")])
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let mut kept = Vec::new();
    for (name, module) in modules {
        let Some(path) = text.split('\0').find_map(|entry| {
            let (key, path) = entry.split_once('\n')?;
            (key == format!("submodule.{name}.path")).then(|| path.to_string())
        }) else {
            continue;
        };
        let Some(new) = gitlink(commit, &path) else {
            continue;
        };
        if gitlink(base, &path).as_deref() == Some(new.as_str()) {
            continue;
        }
        let module_git = GitRunner::new(&module);
        let is_commit = module_git
            .raw(&["cat-file", "-t", &new])
            .is_ok_and(|o| o.status.success() && o.stdout.starts_with(b"commit"));
        if is_commit {
            module_git.output(&["update-ref", &format!("refs/heads/{branch}"), &new])?;
            kept.push(path);
        }
    }
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_submodule_folder_reached_through_a_symlink_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let admin = dir.path().join("admin");
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(admin.join("modules/vendor/lib/objects")).unwrap();
        std::fs::create_dir_all(elsewhere.join("lib/objects")).unwrap();
        assert_eq!(
            run_objects(&admin, "vendor/lib"),
            Some(admin.join("modules/vendor/lib/objects"))
        );
        std::fs::remove_dir_all(admin.join("modules/vendor")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, admin.join("modules/vendor")).unwrap();
        assert_eq!(run_objects(&admin, "vendor/lib"), None);
        assert_eq!(run_objects(&admin, "../elsewhere/lib"), None);
    }

    #[test]
    fn only_folders_that_are_git_dirs_are_initialised_submodules() {
        let dir = tempfile::tempdir().unwrap();
        let modules = dir.path().join("modules");
        for module in ["vendor/lib", "top"] {
            std::fs::create_dir_all(modules.join(module).join("objects")).unwrap();
            std::fs::write(modules.join(module).join("HEAD"), "ref: refs/heads/main\n").unwrap();
        }
        std::fs::create_dir_all(modules.join("vendor/empty")).unwrap();
        let mut names: Vec<String> = initialised(dir.path())
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        names.sort();
        assert_eq!(names, ["top", "vendor/lib"]);
    }
}
