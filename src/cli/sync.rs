//! `git crew sync [REMOTE]`: exchange the notes refs with a remote, merging by line union.

use clap::Args;
use serde::Serialize;

use super::context::CommandContext;
use super::error::{CrewError, ErrorKind, Result};
use super::ui::Report;
use crate::git::{notes, sync};

/// `sync`: the remote, how many fetch-merge-push rounds it took, and what happened to
/// each notes ref (SPEC §2 `sync`, §4).
#[derive(Debug, Serialize)]
pub struct SyncOutput<'a> {
    pub remote: &'a str,
    pub rounds: u64,
    pub refs: Vec<SyncedRef<'a>>,
}

/// One notes ref of `sync`: its tip before and after, the remote's, how the two were
/// merged, how many notes were joined line by line, and whether it was pushed (SPEC §4).
#[derive(Debug, Serialize)]
pub struct SyncedRef<'a> {
    #[serde(rename = "ref")]
    pub name: &'a str,
    pub before: Option<&'a str>,
    pub after: Option<&'a str>,
    pub remote: Option<&'a str>,
    /// `up-to-date`, `created`, `fast-forward`, `merged`, or `local-only`.
    pub merge: &'a str,
    pub unioned: usize,
    pub pushed: bool,
}

impl<'a> SyncedRef<'a> {
    fn of(r: &'a sync::RefSync, pushed: bool) -> SyncedRef<'a> {
        SyncedRef {
            name: &r.name,
            before: r.before.as_deref(),
            after: r.after.as_deref(),
            remote: r.remote.as_deref(),
            merge: r.merge,
            unioned: r.unioned,
            pushed,
        }
    }
}

/// Push and fetch the git-crew notes.
///
/// Push and fetch the git-crew notes (refs/notes/crew, crew-ledger, crew-gates): the
/// remote's are fetched into refs/notes/remotes/<remote>/..., merged into yours by line
/// union (nothing local is ever dropped), and yours are pushed without force — again,
/// after another fetch and merge, when the remote moved meanwhile.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  git crew sync\n  git crew sync upstream")]
pub struct SyncArgs {
    /// The remote (default: origin, or the only remote).
    pub remote: Option<String>,
}

pub fn run(ctx: &CommandContext, args: SyncArgs) -> Result<Report> {
    let repo_dir = ctx.workdir()?.to_path_buf();
    let repo = ctx.repo()?;
    let remotes = sync::remotes(repo);
    let remote = match args.remote {
        Some(remote) if remotes.contains(&remote) => remote,
        Some(remote) => {
            return Err(CrewError::new(
                ErrorKind::NotFound,
                "remote-not-found",
                format!("no remote {remote}"),
            )
            .hinted(format!("remotes here: {}", list(&remotes))));
        }
        None if remotes.iter().any(|r| r == "origin") => "origin".to_string(),
        None if remotes.len() == 1 => remotes[0].clone(),
        None => {
            return Err(CrewError::usage(
                "remote-required",
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
        sync::fetch(&repo_dir, &remote).map_err(|e| {
            CrewError::new(ErrorKind::Refused, "fetch-failed", format!("{e:#}"))
                .hinted("check that the remote is reachable: git fetch REMOTE")
        })?;
        // A fresh view of the refs the fetch moved.
        let repo = crate::git::repo::open(&repo_dir).map_err(CrewError::internal)?;
        let mut results = Vec::new();
        for local in notes::ALL {
            let tracking = sync::tracking_ref(&remote, local);
            results.push(sync::merge_into(&repo, local, &tracking).map_err(|e| {
                match e.downcast_ref::<sync::NotNotes>() {
                    Some(bad) => CrewError::usage("remote-notes-invalid", bad.to_string())
                        .hinted("the remote's notes ref is broken; fix or delete it there"),
                    None => CrewError::internal(e),
                }
            })?);
        }
        let to_push: Vec<String> = results
            .iter()
            .filter(|r| r.ahead)
            .map(|r| r.name.clone())
            .collect();
        if sync::push(&repo_dir, &remote, &to_push).map_err(CrewError::internal)? {
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
                ErrorKind::Refused,
                "sync-rejected",
                format!("{remote} kept refusing the notes after {rounds} rounds"),
            )
            .hinted("someone is pushing notes continuously; run `git crew sync` again"));
        }
        std::thread::sleep(std::time::Duration::from_millis(100 * rounds));
    };
    let human: Vec<String> = results
        .iter()
        .map(|(r, pushed)| {
            format!(
                "{}: {}{}{}",
                r.name,
                r.merge,
                if r.unioned > 0 {
                    format!(" ({} notes joined line by line)", r.unioned)
                } else {
                    String::new()
                },
                if *pushed { ", pushed" } else { "" }
            )
        })
        .collect();
    let output = SyncOutput {
        remote: &remote,
        rounds,
        refs: results
            .iter()
            .map(|(r, pushed)| SyncedRef::of(r, *pushed))
            .collect(),
    };
    Ok(Report::of(
        &output,
        format!("synced the notes with {remote}\n  {}", human.join("\n  ")),
    ))
}

fn list(remotes: &[String]) -> String {
    if remotes.is_empty() {
        "none".to_string()
    } else {
        remotes.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_synced_ref_is_what_the_merge_reports_and_whether_it_was_pushed() {
        let merged = sync::RefSync {
            name: "refs/notes/crew".into(),
            before: Some("a".into()),
            after: Some("b".into()),
            remote: None,
            merge: "merged",
            unioned: 2,
            ahead: true,
        };
        let mut expected = serde_json::to_value(&merged).unwrap();
        expected["pushed"] = true.into();
        assert_eq!(
            serde_json::to_string(&SyncedRef::of(&merged, true)).unwrap(),
            serde_json::to_string(&expected).unwrap()
        );
        // The first key is `ref`; `ahead` is the sync's own business, and an unknown
        // remote tip is null.
        assert!(
            serde_json::to_string(&SyncedRef::of(&merged, true))
                .unwrap()
                .starts_with(r#"{"ref":"refs/notes/crew","before":"a","after":"b","remote":null,"#)
        );
    }
}
