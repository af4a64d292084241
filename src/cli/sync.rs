//! `git crew sync [REMOTE]`: exchange the notes refs with a remote, merging by line union.

use clap::Args;
use serde::Serialize;

use super::context::CommandContext;
use super::error::Result;
use super::ui::Report;
use crate::git::sync;

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
    let synced = crate::ops::sync::sync(ctx, args.remote)?;
    let (remote, rounds, results) = (&synced.remote, synced.rounds, &synced.refs);
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
        remote,
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
