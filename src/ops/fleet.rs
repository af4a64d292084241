//! What the fleet's commands share: which remote a command works with, and that it is one
//! of this repository's.

use crate::error::{CrewError, ErrorCode, Result};

use super::Context;

/// The fleet's remote a command works with: `given` (its `--remote`), else
/// `fleet.remote`; none when neither names one.
pub fn remote(ctx: &Context, given: Option<&str>) -> Result<Option<String>> {
    if let Some(remote) = given {
        return Ok(Some(remote.to_string()));
    }
    let invocation = crate::core::flight::Invocation::default();
    Ok(super::flight::resolve(ctx, &invocation)?
        .flight
        .fleet
        .remote
        .filter(|r| !r.is_empty()))
}

/// Refuses (exit 3, `remote-not-found`) a name that is not a remote of this repository.
pub fn known(repo: &crate::git::Repository, remote: &str) -> Result<()> {
    if crate::git::sync::remotes(repo).iter().any(|r| r == remote) {
        return Ok(());
    }
    Err(CrewError::new(
        ErrorCode::RemoteNotFound,
        format!("no remote {remote}: the fleet's claims live on a remote of this repository"),
    )
    .hinted("`git remote -v` lists them; --remote NAME or fleet.remote names one"))
}
