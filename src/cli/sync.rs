//! `git crew sync [REMOTE]`: exchange the notes refs with a remote, merging by line union.

use clap::Args;
use serde_json::json;

use super::context::CommandContext;
use super::error::{CrewError, ErrorKind, Result};
use super::ui::Report;
use crate::git::{notes, sync};

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
    let mut rounds = 0;
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
    let refs: Vec<serde_json::Value> = results
        .iter()
        .map(|(r, pushed)| {
            let mut v = serde_json::to_value(r).unwrap_or_default();
            v["pushed"] = json!(pushed);
            v
        })
        .collect();
    Ok(Report::new(
        json!({"remote": remote, "rounds": rounds, "refs": refs}),
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
