//! The repository's configuration as git-crew reads it (writes go through `git config`,
//! behind [`super::run::GitRunner`]).

/// Whether `core.hooksPath` is set in any scope git reads.
pub fn hooks_path_set(repo: &gix::Repository) -> bool {
    repo.config_snapshot().string("core.hooksPath").is_some()
}

/// `Name <email>` of the configured committer, if one is.
pub fn committer(repo: &gix::Repository) -> Option<String> {
    match repo.committer() {
        Some(Ok(sig)) => Some(format!("{} <{}>", sig.name, sig.email)),
        _ => None,
    }
}

/// Whether `extensions.worktreeConfig` is on (each worktree may carry its own config).
pub fn worktree_config_on(repo: &gix::Repository) -> bool {
    repo.config_snapshot()
        .boolean("extensions.worktreeConfig")
        .unwrap_or(false)
}
