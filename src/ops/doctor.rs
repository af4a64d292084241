//! `doctor`: find rot and, with `fix`, repair it, never losing a commit.

use crate::core::doctor::Problem;
use crate::error::{CrewError, Result};
use crate::run::prune::Stranded;
use crate::state::runs::RunStore;

use super::Context;

/// What doctor found (and fixed).
pub struct Checkup {
    pub problems: Vec<Problem>,
    /// Finished runs whose work nothing keeps, however old.
    pub stranded: Vec<Stranded>,
    /// The fence a run would get here.
    pub fence: String,
}

/// Checks the repository's git-crew state; repairs what it can when `fix`.
pub fn doctor(ctx: &Context, fix: bool) -> Result<Checkup> {
    let repo = ctx.repo()?;
    let repo_dir = ctx.workdir()?.to_path_buf();
    let store = RunStore::new(&crate::git::repo::state_dir(repo));
    let checkup = crate::run::doctor::check(repo, &repo_dir, &store, fix)?;
    for row in checkup.not_filed {
        ctx.warn(row);
    }
    let stranded =
        crate::run::prune::stranded_work(repo, &repo_dir, &store).map_err(CrewError::internal)?;
    Ok(Checkup {
        problems: checkup.problems,
        stranded,
        fence: checkup.fence,
    })
}
