//! `sync`: exchange the notes refs with a remote, merging by line union; nothing local
//! is ever dropped, nothing is forced.

use crate::error::{CrewError, ErrorCode, Result};
use crate::git::{notes, sync};

use super::Context;

/// What a sync did.
pub struct Synced {
    pub remote: String,
    /// How many fetch-merge-push rounds it took.
    pub rounds: u64,
    /// Each notes ref as it was merged, and whether it was pushed.
    pub refs: Vec<(sync::RefSync, bool)>,
}

/// Fetches, merges by line union and pushes the notes refs, again while the remote
/// moves meanwhile (at most eight rounds).
pub fn sync(ctx: &Context, remote: Option<String>) -> Result<Synced> {
    let repo_dir = ctx.workdir()?.to_path_buf();
    let repo = ctx.repo()?;
    let remotes = sync::remotes(repo);
    let remote = match remote {
        Some(remote) if remotes.contains(&remote) => remote,
        Some(remote) => {
            return Err(
                CrewError::new(ErrorCode::RemoteNotFound, format!("no remote {remote}"))
                    .hinted(format!("remotes here: {}", list(&remotes))),
            );
        }
        None if remotes.iter().any(|r| r == "origin") => "origin".to_string(),
        None if remotes.len() == 1 => remotes[0].clone(),
        None => {
            return Err(CrewError::new(
                ErrorCode::RemoteRequired,
                format!(
                    "name the remote to sync with (remotes here: {})",
                    list(&remotes)
                ),
            ));
        }
    };
    let mut rounds: u64 = 0;
    let results = loop {
        rounds += 1;
        sync::fetch(&repo_dir, &remote)
            .map_err(|e| CrewError::new(ErrorCode::FetchFailed, crate::fault::chain(&e)))?;
        // A fresh view of the refs the fetch moved.
        let repo = crate::git::repo::open(&repo_dir).map_err(CrewError::from)?;
        let mut results = Vec::new();
        for local in notes::ALL {
            let tracking = sync::tracking_ref(&remote, local);
            results.push(
                sync::merge_into(&repo, local, &tracking).map_err(|e| match e {
                    sync::MergeError::NotNotes(bad) => {
                        CrewError::new(ErrorCode::RemoteNotesInvalid, bad.to_string())
                    }
                    sync::MergeError::Failed(e) => CrewError::from(e),
                })?,
            );
        }
        let to_push: Vec<String> = results
            .iter()
            .filter(|r| r.ahead)
            .map(|r| r.name.clone())
            .collect();
        if sync::push(&repo_dir, &remote, &to_push).map_err(CrewError::from)? {
            break results
                .into_iter()
                .map(|r| {
                    let pushed = to_push.contains(&r.name);
                    (r, pushed)
                })
                .collect::<Vec<_>>();
        }
        if rounds >= 8 {
            return Err(CrewError::new(
                ErrorCode::SyncRejected,
                format!("{remote} kept refusing the notes after {rounds} rounds"),
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(100 * rounds));
    };
    Ok(Synced {
        remote,
        rounds,
        refs: results,
    })
}

fn list(remotes: &[String]) -> String {
    if remotes.is_empty() {
        "none".to_string()
    } else {
        remotes.join(", ")
    }
}
