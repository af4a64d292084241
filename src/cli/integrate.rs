//! `git crew integrate RUN`: scope audit, merge onto the target, notes, ledger, state
//! file, cleanup (SPEC §5.9).

use super::context::CommandContext;
use super::error::Result;
use super::flight::RoutingArgs;
use super::ui::Report;
use crate::ops::integrate::Event;
use crate::run::integrate;
use clap::Args;

/// Integrate a finished, verified run into its target.
///
/// Integrate a finished, verified run: audit its branch against its scope, merge it onto
/// the target's current tip away from your checkout (verifying the merged tree again when
/// the target moved), write the run record note on the integration commit and on every
/// worker commit, update docs/state/crew.json inside the integration commit, advance the
/// target, and clean up per `worktree.cleanup`. Integrations run one at a time. A run the
/// target already contains (merged by hand after a conflict, with no hook to record it)
/// is audited and recorded as a hand merge is, from the commit that brought it in; paths
/// that commit changed outside the scope are a scope violation (exit 1). On a terminal,
/// stderr shows the step it is at (auditing, merging, re-verifying on the merged tree,
/// writing notes).
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  git crew integrate 20261202-101500-1a2b\n  git crew integrate 20261202-101500-1a2b --into release --squash\n  git notes --ref=crew show main"
)]
pub struct IntegrateArgs {
    #[arg(value_parser = super::runs::run_address, add = super::complete::runs())]
    pub run: String,
    /// The branch to integrate into (default: the branch the run was cut from).
    #[arg(long, value_name = "BRANCH")]
    pub into: Option<String>,
    /// One commit on the target instead of a merge commit (the worker commits stay under
    /// refs/crew/attempts/<run>).
    #[arg(long)]
    pub squash: bool,
    /// Integrate although verify did not pass (recorded in the note).
    #[arg(long)]
    pub force_unverified: bool,
    /// Set any flight key for this call: dotted.key=value (e.g. worktree.cleanup=never).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Audit, check the gates and build the merge, then say what would land; change
    /// nothing (no verify of the merge runs).
    #[arg(long)]
    pub dry_run: bool,
}

pub fn run(ctx: &CommandContext, args: IntegrateArgs) -> Result<Report> {
    let routing = RoutingArgs {
        set: args.set.clone(),
        ..RoutingArgs::default()
    };
    let request = crate::ops::integrate::Request {
        run: args.run,
        into: args.into,
        squash: args.squash,
        force_unverified: args.force_unverified,
        invocation: routing.invocation(),
        dry_run: args.dry_run,
    };
    let progress = super::progress::Progress::for_steps();
    let done = crate::ops::integrate::integrate(ctx, &request, &|event| match event {
        Event::Step { step, run, into } => progress.step(step_text(step, run, into)),
        Event::Warning(warning) => progress.suspend(|| super::ui::warn(warning)),
    });
    drop(progress);
    let done = done?;
    for link in &done.landing.links_outside_scope {
        super::ui::warn(&format!("symlink outside the run's scope: {link}"));
    }
    Ok(report(&done))
}

/// What integrate did (or, under `--dry-run`, would do), for JSON and for people.
pub fn report(done: &integrate::Done) -> Report {
    let forced = if done
        .record
        .integration
        .as_ref()
        .is_some_and(|i| i.forced_unverified)
    {
        " — forced: not verified (recorded in the note)"
    } else {
        ""
    };
    let landing = &done.landing;
    if done.dry_run {
        let human = match landing.by_hand {
            true => format!(
                "run {} (task {}) is in {} already, merged by hand in {}: {} paths, all inside its scope; integrate would record it",
                landing.run,
                landing.task,
                landing.into,
                &done.commit.to_string()[..12],
                landing.files.len()
            ),
            false => format!(
                "would integrate run {} (task {}) into {} ({}): {} paths, all inside its scope",
                landing.run,
                landing.task,
                landing.into,
                landing.applied_as,
                landing.files.len()
            ),
        };
        // The plan itself: the value the real command applies.
        return Report::of(&crate::ops::integrate::output(done), human);
    }
    let how = if landing.by_hand {
        " (merged by hand before; recorded now)"
    } else {
        ""
    };
    let human = format!(
        "integrated run {} (task {}) into {} as {}{how}{forced}{}\n  notes: {} commits; worktree {}; branch {}{}{}",
        done.record.run,
        done.record.task,
        landing.into,
        &done.commit.to_string()[..12],
        done.merged_verify
            .as_ref()
            .map(|v| format!(" (verified again on the merge, reward {})", v.reward))
            .unwrap_or_default(),
        done.noted.len(),
        done.cleanup.worktree,
        done.cleanup.branch,
        done.cleanup
            .kept_because
            .as_ref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default(),
        super::prune::ignored_note(&done.cleanup.ignored),
    );
    Report::of(&crate::ops::integrate::output(done), human)
}

/// The status line of an integration at `step`.
fn step_text(step: integrate::Step, run: &str, into: &str) -> String {
    use integrate::Step;
    match step {
        Step::Auditing => format!("integrate {run}: auditing"),
        Step::WaitingTurn => format!("integrate {run}: waiting for the integration ahead"),
        Step::Merging => format!("integrate {run}: merging onto {into}"),
        Step::Reverifying => format!("integrate {run}: re-verifying on the merged tree"),
        Step::WritingNotes => format!("integrate {run}: writing notes"),
    }
}
