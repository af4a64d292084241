//! `prune`: remove what finished runs left behind, list the stranded work, never lose a
//! line.

use crate::error::{CrewError, Result};
use crate::run::prune::{Pruned, Request};

use super::Context;

/// Prunes the repository (also `init --uninstall --purge`); what could not be looked at
/// is in the result's `warnings`.
pub fn prune(ctx: &Context, request: Request) -> Result<Pruned> {
    let repo = ctx.repo()?;
    let repo_dir = ctx.workdir()?.to_path_buf();
    let store = super::runs::settled(ctx)?;
    crate::run::prune::prune(repo, &repo_dir, &store, request).map_err(CrewError::from)
}
