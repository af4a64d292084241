//! `git crew prune [--dry-run] [--older-than D] [--all]`: remove what finished runs left
//! behind, list the stranded work, never lose a line.

use clap::Args;

use super::context::CommandContext;
use super::error::{CrewError, ErrorCode, Result};
use super::ui::Report;
use crate::core::prune::{Left, age_text, plural};
use crate::run::prune::{Pruned, Request, Stranded};

/// Remove the worktrees and branches of finished runs.
///
/// Remove the worktrees and branches of integrated runs; with --all, of every finished run.
///
/// Nothing is removed that would lose work: a worktree with uncommitted changes, a
/// repository checked out inside one, or commits that neither refs/crew/attempts/<run>
/// nor the run's target keeps. Such runs are listed as stranded work — finished, never
/// integrated — with their age, their diff stat and the command that settles them
/// (`git crew integrate RUN`, or `git crew abandon RUN`, which keeps what the run holds
/// under refs/crew/attempts/<run> so that the next prune can remove it). Live runs are
/// never touched. The files git ignored in a removed worktree (build output, `.env`) go
/// with it and are named. The run's record stays: `git crew show RUN` says it was pruned.
///
/// Refs in a task's ref folder (refs/heads/crew/<task>/) that are no run's branch — what a
/// worker made there beside its branch — are taken out whatever the flags, and what each
/// points at is kept under refs/crew/strays/<run>/ (the task's latest run); those of a
/// task with a live run are only listed.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  git crew prune --dry-run\n  git crew prune\n  git crew prune --all --older-than 7d"
)]
pub struct PruneArgs {
    /// Say what would be removed and what is stranded; change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Only runs that finished at least this long ago (e.g. 12h, 7d).
    #[arg(long, value_name = "DURATION")]
    pub older_than: Option<String>,
    /// Every finished run, not only integrated ones: abandoned, rejected, failed and
    /// timed-out runs too (still never anything unkept).
    #[arg(long)]
    pub all: bool,
}

pub fn run(ctx: &CommandContext, args: PruneArgs) -> Result<Report> {
    let older_than_s = args
        .older_than
        .as_deref()
        .map(|d| {
            humantime::parse_duration(d)
                .map(|d| d.as_secs())
                .map_err(|e| {
                    CrewError::new(ErrorCode::BadDuration, format!("--older-than {d}: {e}"))
                        .hinted("give a duration such as 12h or 7d")
                })
        })
        .transpose()?;
    let request = Request {
        all: args.all,
        older_than_s,
        dry_run: args.dry_run,
    };
    let pruned = apply(ctx, request)?;
    Ok(Report::of(&pruned, human(&pruned)))
}

/// Prunes the current repository, saying on stderr what could not be looked at.
fn apply(ctx: &CommandContext, request: Request) -> Result<Pruned> {
    let pruned = crate::ops::prune::prune(ctx, request)?;
    warn(&pruned);
    Ok(pruned)
}

/// What prune could not look at, on stderr (also for `init --uninstall --purge`).
pub fn warn(pruned: &Pruned) {
    for warning in &pruned.warnings {
        super::ui::warn(warning);
    }
}

/// What prune did, for people: what went, the stranded work, what was left alone.
pub fn human(pruned: &Pruned) -> String {
    let mut out = Vec::new();
    if !pruned.removed.is_empty() {
        let verb = if pruned.dry_run {
            "would remove"
        } else {
            "removed"
        };
        out.push(format!(
            "{verb} {}:",
            plural(pruned.removed.len() as u64, "run")
        ));
        for r in &pruned.removed {
            let what: Vec<String> = [
                r.worktree.as_ref().map(|_| "worktree".to_string()),
                r.branch.as_ref().map(|b| format!("branch {b}")),
            ]
            .into_iter()
            .flatten()
            .collect();
            out.push(format!(
                "  {}  {}  {}: {}{}{}",
                r.run,
                r.task,
                r.outcome.map_or(r.phase.as_str(), |o| o.as_str()),
                what.join(", "),
                r.branch_kept_because
                    .as_ref()
                    .map(|w| format!(" (branch kept: {w})"))
                    .unwrap_or_default(),
                ignored_note(&r.ignored),
            ));
        }
    }
    out.extend(stranded_lines(&pruned.stranded));
    if !pruned.strays.is_empty() {
        out.push(format!(
            "stray refs in task ref folders ({}):",
            pruned.strays.len()
        ));
        for stray in &pruned.strays {
            out.push(format!("  {}", stray.describe("git crew prune")));
        }
    }
    let count = |why: Left| pruned.skipped.iter().filter(|s| s.why == why).count() as u64;
    let left: Vec<String> = [
        (count(Left::Live), "live"),
        (count(Left::Younger), "younger than --older-than"),
        (
            count(Left::NotIntegrated),
            "not integrated (--all removes them)",
        ),
    ]
    .into_iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, why)| format!("{n} {why}"))
    .collect();
    if !left.is_empty() {
        out.push(format!("left alone: {}", left.join(", ")));
    }
    if out.is_empty() {
        out.push("nothing to prune".to_string());
    }
    out.join("\n")
}

/// The stranded work, for people (`prune`, `doctor`): one line per run and its next step.
pub fn stranded_lines(stranded: &[Stranded]) -> Vec<String> {
    if stranded.is_empty() {
        return Vec::new();
    }
    let mut out = vec![format!(
        "stranded work ({}), kept until settled:",
        plural(stranded.len() as u64, "run")
    )];
    for s in stranded {
        out.push(format!(
            "  {}  {}  {}, {} ago: {}, +{} -{}; {}",
            s.run,
            s.task,
            s.outcome.map_or(s.phase.as_str(), |o| o.as_str()),
            age_text(s.age_s),
            plural(s.diff.files.len() as u64, "file"),
            s.diff.insertions,
            s.diff.deletions,
            s.why.join("; "),
        ));
        match &s.next {
            Some(next) => out.push(format!("    next: {next}")),
            None => out.push(format!(
                "    next: look inside {} yourself",
                s.worktree.as_deref().unwrap_or("its worktree")
            )),
        }
    }
    out
}

/// ` (with the ignored target/, .env)`: what git ignored in a removed worktree, named.
pub fn ignored_note(ignored: &[String]) -> String {
    const SHOWN: usize = 5;
    match ignored.len() {
        0 => String::new(),
        n if n <= SHOWN => format!(" (with the ignored {})", ignored.join(", ")),
        n => format!(
            " (with the ignored {} and {} more)",
            ignored[..SHOWN].join(", "),
            n - SHOWN
        ),
    }
}
