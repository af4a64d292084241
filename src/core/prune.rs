//! What `prune` decides, as values: for each run, from facts gathered by `run::prune`
//! (its phase, whether it was integrated, its age, what its worktree holds, how many of
//! its commits nothing else keeps), whether its worktree and branch go, whether it is
//! *stranded work* — something in it would be lost — or whether it is left alone, and
//! why. Nothing that would lose work is ever removed: a worktree with uncommitted changes
//! (unless `abandon` kept exactly them), a repository checked out inside one, or commits
//! that neither `refs/crew/attempts/<run>` nor the run's target keeps. No git, no files.

use jiff::Timestamp;
use serde::Serialize;

use super::record::{Outcome, Phase};

/// What the caller asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Every finished run, not only integrated ones.
    pub all: bool,
    /// Only runs finished at least this long ago.
    pub older_than_s: Option<u64>,
    /// Now, in milliseconds since the epoch.
    pub now_ms: u64,
}

/// What a run's worktree holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tree {
    /// There is none on disk.
    Absent,
    /// Nothing uncommitted.
    Clean,
    /// Uncommitted changes (untracked files included): `kept` when
    /// `refs/crew/attempts/<run>` holds exactly this state (an `abandon` kept it).
    Dirty { paths: Vec<String>, kept: bool },
    /// A repository is checked out inside it: its own work is not seen from here.
    Nested,
    /// It could not be looked at safely (not a registered worktree): why.
    Unreadable(String),
}

/// The facts about one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Facts {
    pub run: String,
    pub phase: Phase,
    pub outcome: Option<Outcome>,
    /// Its live pointer is there (running, parked, queued, awaiting attach).
    pub live: bool,
    pub integrated: bool,
    pub finished_at: Option<Timestamp>,
    pub worktree: String,
    pub tree: Tree,
    /// Its branch exists.
    pub branch: bool,
    /// Commits of its branch (and of its worktree's HEAD) that neither
    /// `refs/crew/attempts/<run>` nor its target reaches; `None` when they could not be
    /// counted (then they are not known to be kept).
    pub unkept_commits: Option<u64>,
    /// Why its branch must stay even when the run goes (the lead has it checked out; it
    /// is not the run's own `crew/<task>/<run>`).
    pub branch_stays: Option<String>,
}

/// Why a run is left alone although nothing in it is at risk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Left {
    /// It is live: never touched.
    Live,
    /// It finished more recently than `--older-than`.
    Younger,
    /// It was never integrated, and `--all` was not given.
    NotIntegrated,
}

impl Left {
    pub fn as_str(self) -> &'static str {
        match self {
            Left::Live => "live",
            Left::Younger => "younger",
            Left::NotIntegrated => "not-integrated",
        }
    }
}

/// What becomes of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Its worktree and branch are gone already.
    Nothing,
    Left(Left),
    /// Something in it would be lost: listed, never removed.
    Stranded {
        why: Vec<String>,
        /// The command that settles it, where one does.
        next: Option<String>,
    },
    Remove {
        worktree: bool,
        branch: bool,
        /// Why the branch stays although the run goes.
        branch_kept_because: Option<String>,
    },
}

/// Seconds from a run's end to `now_ms` (0 for a run with no end recorded).
pub fn age_s(finished_at: Option<Timestamp>, now_ms: u64) -> u64 {
    finished_at.map_or(0, |at| {
        now_ms.saturating_sub(super::stamp::millis(at)) / 1000
    })
}

/// The verdict on one run.
pub fn decide(facts: &Facts, options: &Options) -> Verdict {
    if facts.live || !facts.phase.is_final() {
        return Verdict::Left(Left::Live);
    }
    let has_tree = facts.tree != Tree::Absent;
    if !has_tree && !facts.branch {
        return Verdict::Nothing;
    }
    if let Some(min) = options.older_than_s
        && age_s(facts.finished_at, options.now_ms) < min
    {
        return Verdict::Left(Left::Younger);
    }
    let why = at_risk(facts);
    if !why.is_empty() {
        return Verdict::Stranded {
            why,
            next: next(facts),
        };
    }
    if !facts.integrated && !options.all {
        return Verdict::Left(Left::NotIntegrated);
    }
    let branch_kept_because = facts.branch_stays.clone().filter(|_| facts.branch);
    if !has_tree && branch_kept_because.is_some() {
        return Verdict::Nothing;
    }
    Verdict::Remove {
        worktree: has_tree,
        branch: facts.branch && branch_kept_because.is_none(),
        branch_kept_because,
    }
}

/// What removing the run would lose, one reason each.
fn at_risk(facts: &Facts) -> Vec<String> {
    let mut why = Vec::new();
    match &facts.tree {
        Tree::Dirty { paths, kept: false } => why.push(format!(
            "{} uncommitted in its worktree",
            plural(paths.len() as u64, "path")
        )),
        Tree::Nested => why.push(
            "a repository is checked out inside its worktree (its work is not seen from here)"
                .to_string(),
        ),
        Tree::Unreadable(reason) => why.push(format!("its worktree cannot be looked at: {reason}")),
        Tree::Absent | Tree::Clean | Tree::Dirty { kept: true, .. } => {}
    }
    match facts.unkept_commits {
        Some(0) => {}
        Some(n) => why.push(format!("{} that nothing else keeps", plural(n, "commit"))),
        None => why.push("its commits could not be counted".to_string()),
    }
    why
}

/// The command that settles stranded work: integrate a pass whose commits are not in yet;
/// abandon anything else (which keeps what it holds under `refs/crew/attempts/<run>`, so
/// the next prune can remove it). A worktree git-crew cannot look into is the lead's to
/// inspect: no command settles it.
fn next(facts: &Facts) -> Option<String> {
    let run = &facts.run;
    match facts.tree {
        Tree::Nested | Tree::Unreadable(_) => None,
        _ if facts.outcome == Some(Outcome::Pass)
            && !facts.integrated
            && facts.unkept_commits.is_some_and(|n| n > 0) =>
        {
            Some(format!("git crew integrate {run}"))
        }
        _ => Some(format!("git crew abandon {run}")),
    }
}

/// `1 commit`, `2 commits`.
pub fn plural(n: u64, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

/// A duration for people, in its largest whole unit: `45s`, `12m`, `3h`, `2d`.
pub fn age_text(seconds: u64) -> String {
    match seconds {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m", s / 60),
        s if s < 86_400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(phase: Phase, outcome: Option<Outcome>) -> Facts {
        Facts {
            run: "r".into(),
            phase,
            outcome,
            live: false,
            integrated: false,
            finished_at: Some("2026-01-01T00:00:00Z".parse().unwrap()),
            worktree: "/w".into(),
            tree: Tree::Clean,
            branch: true,
            unkept_commits: Some(0),
            branch_stays: None,
        }
    }

    /// Ten days after the runs finished.
    const NOW: u64 = 1_767_225_600_000 + 10 * 86_400_000;

    fn options(all: bool) -> Options {
        Options {
            all,
            older_than_s: None,
            now_ms: NOW,
        }
    }

    const BOTH: Verdict = Verdict::Remove {
        worktree: true,
        branch: true,
        branch_kept_because: None,
    };

    #[test]
    fn integrated_runs_go_and_others_only_with_all() {
        let mut f = facts(Phase::Done, Some(Outcome::Pass));
        f.integrated = true;
        assert_eq!(decide(&f, &options(false)), BOTH);
        for (phase, outcome) in [
            (Phase::Failed, Outcome::Fail),
            (Phase::Rejected, Outcome::ScopeReject),
            (Phase::Abandoned, Outcome::Abandoned),
            (Phase::TimedOut, Outcome::Timeout),
            (Phase::Failed, Outcome::Error),
        ] {
            let f = facts(phase, Some(outcome));
            assert_eq!(
                decide(&f, &options(false)),
                Verdict::Left(Left::NotIntegrated)
            );
            assert_eq!(decide(&f, &options(true)), BOTH, "{phase:?}");
        }
    }

    #[test]
    fn live_runs_are_never_touched() {
        for phase in [
            Phase::Working,
            Phase::NeedsHelp,
            Phase::Queued,
            Phase::AwaitingAttach,
        ] {
            let mut f = facts(phase, None);
            f.live = true;
            f.tree = Tree::Dirty {
                paths: vec!["a".into()],
                kept: false,
            };
            assert_eq!(decide(&f, &options(true)), Verdict::Left(Left::Live));
        }
        // A finished phase with its pointer still there is live all the same.
        let mut f = facts(Phase::Done, Some(Outcome::Pass));
        f.live = true;
        f.integrated = true;
        assert_eq!(decide(&f, &options(true)), Verdict::Left(Left::Live));
    }

    #[test]
    fn anything_unkept_is_stranded_whatever_the_flags() {
        let mut f = facts(Phase::Done, Some(Outcome::Pass));
        f.unkept_commits = Some(2);
        let Verdict::Stranded { why, next } = decide(&f, &options(false)) else {
            panic!()
        };
        assert_eq!(why, ["2 commits that nothing else keeps"]);
        assert_eq!(next.as_deref(), Some("git crew integrate r"));

        // Integrated, but with changes made in its worktree since.
        let mut f = facts(Phase::Done, Some(Outcome::Pass));
        f.integrated = true;
        f.tree = Tree::Dirty {
            paths: vec!["a".into()],
            kept: false,
        };
        let Verdict::Stranded { why, next } = decide(&f, &options(true)) else {
            panic!()
        };
        assert_eq!(why, ["1 path uncommitted in its worktree"]);
        assert_eq!(next.as_deref(), Some("git crew abandon r"));

        // A failed run's commits: abandon keeps them, integrate would refuse.
        let mut f = facts(Phase::Failed, Some(Outcome::Fail));
        f.unkept_commits = Some(1);
        let Verdict::Stranded { why, next } = decide(&f, &options(true)) else {
            panic!()
        };
        assert_eq!(why, ["1 commit that nothing else keeps"]);
        assert_eq!(next.as_deref(), Some("git crew abandon r"));

        let mut f = facts(Phase::Done, Some(Outcome::Pass));
        f.integrated = true;
        f.tree = Tree::Nested;
        assert!(matches!(
            decide(&f, &options(true)),
            Verdict::Stranded { next: None, .. }
        ));
    }

    #[test]
    fn what_abandon_kept_may_go() {
        let mut f = facts(Phase::Rejected, Some(Outcome::ScopeReject));
        f.tree = Tree::Dirty {
            paths: vec!["README.md".into()],
            kept: true,
        };
        assert_eq!(decide(&f, &options(true)), BOTH);
    }

    #[test]
    fn older_than_filters_by_the_age_of_the_end() {
        let mut f = facts(Phase::Done, Some(Outcome::Pass));
        f.integrated = true;
        let mut o = options(false);
        o.older_than_s = Some(11 * 86_400);
        assert_eq!(decide(&f, &o), Verdict::Left(Left::Younger));
        o.older_than_s = Some(10 * 86_400);
        assert_eq!(decide(&f, &o), BOTH);
        // Young stranded work is left out too: the filter says which runs are looked at.
        f.unkept_commits = Some(1);
        o.older_than_s = Some(11 * 86_400);
        assert_eq!(decide(&f, &o), Verdict::Left(Left::Younger));
        assert_eq!(age_s(f.finished_at, NOW), 10 * 86_400);
        assert_eq!(age_s(None, NOW), 0);
    }

    #[test]
    fn a_branch_checked_out_by_the_lead_stays_and_nothing_left_is_nothing() {
        let mut f = facts(Phase::Done, Some(Outcome::Pass));
        f.integrated = true;
        f.branch_stays = Some("it is checked out in /repo".into());
        assert_eq!(
            decide(&f, &options(false)),
            Verdict::Remove {
                worktree: true,
                branch: false,
                branch_kept_because: Some("it is checked out in /repo".into()),
            }
        );
        // Once its worktree is gone, there is nothing more to do.
        f.tree = Tree::Absent;
        assert_eq!(decide(&f, &options(true)), Verdict::Nothing);
        f.branch = false;
        f.branch_stays = None;
        assert_eq!(decide(&f, &options(true)), Verdict::Nothing);
    }

    #[test]
    fn words_for_people() {
        assert_eq!(plural(1, "run"), "1 run");
        assert_eq!(plural(0, "run"), "0 runs");
        assert_eq!(age_text(59), "59s");
        assert_eq!(age_text(3600 * 5), "5h");
        assert_eq!(age_text(86_400 * 3 + 5), "3d");
    }
}
