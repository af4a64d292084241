//! What a run's checkout gets beside its commit: the lead's ignored files that
//! `.worktreeinclude` names, copied in (for the run's worktree at dispatch and for a
//! verify's throwaway checkout alike), and the hooks folder every run worktree uses.

use std::path::Path;

use crate::run::error::{Context, Result};

use crate::core::install::CLIENT_HOOKS;

/// Copies what `.worktreeinclude` names in the lead's checkout at `repo_dir` (the files
/// git ignores there and does not track, `git::worktree_files::included`) into the new
/// checkout at `wt`, to the same paths. Every write stays beneath `wt` and follows no
/// symlink (the checkout's content may be a worker's: a committed `.env` link, a
/// `config` link to a folder elsewhere); nothing already there is replaced. A symlink of
/// the lead's is copied as a link when it points inside the checkout, else passed over.
/// Returns the warnings: what was passed over, and patterns that copy nothing.
pub fn copy_includes(repo_dir: &Path, wt: &Path) -> Vec<String> {
    use crate::git::worktree_files::Item;
    use crate::sys::fs::Put;
    let include = crate::core::worktree_files::INCLUDE_FILE;
    let found = match crate::git::worktree_files::included(repo_dir) {
        Ok(found) => found,
        Err(e) => {
            return vec![format!(
                "{include}: nothing copied: {}",
                crate::fault::chain(&e)
            )];
        }
    };
    let mut warnings = found.warnings;
    for item in &found.items {
        let (rel, put) = match item {
            Item::File(rel) => (
                rel,
                crate::sys::fs::open_beneath(repo_dir, rel).and_then(|(mut file, meta)| {
                    use std::os::unix::fs::PermissionsExt;
                    crate::sys::fs::create_beneath(wt, rel, &mut file, meta.permissions().mode())
                }),
            ),
            Item::Link(rel, target) => (rel, crate::sys::fs::symlink_beneath(wt, rel, target)),
        };
        match put {
            Ok(Put::Made) => {}
            Ok(Put::Taken) => warnings.push(format!(
                "{include}: {} is in the checked-out commit already: not copied over it",
                rel.display()
            )),
            Err(e) => warnings.push(format!(
                "{include}: {} not copied: {}",
                rel.display(),
                crate::fault::chain(&e)
            )),
        }
    }
    warnings
}

/// Writes (or refreshes) `<git-common-dir>/crew/hooks/`: the hooks directory of every run
/// worktree. `pre-commit` runs the scope check first; every shim then chains the hook the
/// repository already has in `chain_dir` (its `core.hooksPath`, or `.git/hooks`).
pub fn ensure_run_hooks(hooks: &Path, chain_dir: &Path) -> Result<()> {
    std::fs::create_dir_all(hooks)?;
    // Dispatched from inside a run worktree, the hooks directory git reports is this one:
    // chaining it would make every shim run itself forever. Chain the common hooks then.
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let common_hooks = hooks
        .parent()
        .and_then(Path::parent)
        .map(|crew_parent| crew_parent.join("hooks"));
    let chain_dir = match common_hooks {
        Some(common) if canon(chain_dir) == canon(hooks) => common,
        _ => chain_dir.to_path_buf(),
    };
    let chain_dir = chain_dir.as_path();
    let exe = std::env::current_exe().context("cannot find the git-crew binary")?;
    // The pre-commit check from `git-crew-hook` where it was installed beside git-crew:
    // it starts sooner, and hands a refusal to the git-crew beside it.
    let quick = exe
        .parent()
        .map(|dir| dir.join("git-crew-hook"))
        .filter(|hook| hook.is_file());
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let pre_commit = match &quick {
        Some(hook) => format!("{} pre-commit", quote(&hook.to_string_lossy())),
        None => format!("{} hook pre-commit", quote(&exe.to_string_lossy())),
    };
    let exe = quote(&exe.to_string_lossy());
    let chain = quote(&chain_dir.to_string_lossy());
    for name in CLIENT_HOOKS {
        let check = match *name {
            "pre-commit" => format!("{pre_commit} \"$@\" || exit $?\n"),
            "post-merge" => format!("{exe} hook post-merge \"$@\" || true\n"),
            _ => String::new(),
        };
        let text = format!(
            "#!/bin/sh\n# git-crew: hooks of run worktrees (written by dispatch)\n{check}if [ -x {chain}/{name} ]; then exec {chain}/{name} \"$@\"; fi\n"
        );
        let path = hooks.join(name);
        if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
            crate::sys::fs::write_atomic(&path, &text, 0o755)?;
        }
    }
    Ok(())
}
