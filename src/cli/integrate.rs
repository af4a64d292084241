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
///
/// With --all instead of RUN it integrates every pass awaiting integration, each as above,
/// in an order that meets none of the conflicts the forecast sees (`git crew status`
/// shows it): a pass that does not merge cleanly onto its target's tip is held back, and
/// of passes that conflict with each other, the one that conflicts with the fewest goes
/// first and the others are held back, naming it. Held passes are never tried. It stops
/// at the first refusal and says what landed, what refused and why, and what is left;
/// it exits with the refusal's code, or 4 (merge-conflict) when it held a pass back.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  git crew integrate 20261202-101500-1a2b\n  git crew integrate 20261202-101500-1a2b --into release --squash\n  git crew integrate --all\n  git notes --ref=crew show main"
)]
pub struct IntegrateArgs {
    #[arg(
        value_parser = super::runs::run_address,
        add = super::complete::runs(),
        required_unless_present = "all",
        conflicts_with = "all"
    )]
    pub run: Option<String>,
    /// Every pass awaiting integration, in the order the conflict forecast gives.
    #[arg(long, conflicts_with = "force_unverified")]
    pub all: bool,
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
    /// Land through this git remote (a fleet sharing it; default fleet.remote): merge onto
    /// the remote's tip of the target and push the target, the notes and the claim's
    /// release in one atomic push, again on a fresh tip when another machine landed first.
    #[arg(long, value_name = "NAME")]
    pub remote: Option<String>,
    /// Audit, check the gates and build the merge, then say what would land; change
    /// nothing (no verify of the merge runs). With --all: the order and what would be
    /// held back.
    #[arg(long)]
    pub dry_run: bool,
}

pub fn run(ctx: &CommandContext, args: IntegrateArgs) -> Result<Report> {
    let routing = RoutingArgs {
        set: args.set.clone(),
        ..RoutingArgs::default()
    };
    let Some(run) = args.run else {
        return all(
            ctx,
            args.into,
            args.squash,
            routing,
            args.dry_run,
            args.remote,
        );
    };
    let request = crate::ops::integrate::Request {
        run,
        into: args.into,
        squash: args.squash,
        force_unverified: args.force_unverified,
        invocation: routing.invocation(),
        dry_run: args.dry_run,
        remote: args.remote,
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

/// `integrate --all`.
fn all(
    ctx: &CommandContext,
    into: Option<String>,
    squash: bool,
    routing: RoutingArgs,
    dry_run: bool,
    remote: Option<String>,
) -> Result<Report> {
    let request = crate::ops::integrate_all::Request {
        into,
        squash,
        invocation: routing.invocation(),
        dry_run,
        remote,
    };
    let progress = super::progress::Progress::for_steps();
    let all = crate::ops::integrate_all::integrate_all(ctx, &request, &|event| match event {
        Event::Step { step, run, into } => progress.step(step_text(step, run, into)),
        Event::Warning(warning) => progress.suspend(|| super::ui::warn(warning)),
    });
    drop(progress);
    let all = all?;
    for done in &all.landed {
        for link in &done.landing.links_outside_scope {
            super::ui::warn(&format!("symlink outside the run's scope: {link}"));
        }
    }
    Ok(all_report(all))
}

/// What `integrate --all` did, for JSON and for people: what landed (each as `integrate
/// RUN` prints it), what refused with its error, what is left and why; failed with the
/// refusal, or with `merge-conflict` when the forecast held a pass back.
fn all_report(all: crate::ops::integrate_all::All) -> Report {
    use crate::ops::integrate_all::Why;
    let mut human: Vec<String> = all.landed.iter().map(|d| report(d).human).collect();
    if all.dry_run {
        human.extend(
            all.order
                .iter()
                .map(|run| format!("would integrate run {run}")),
        );
    }
    if let Some((run, error)) = &all.refused {
        human.push(format!("refused run {run}: {}", error.message));
    }
    for left in &all.left {
        human.push(match &left.why {
            Why::NotReached => format!(
                "left run {} (task {}): not tried after the refusal",
                left.run, left.task
            ),
            Why::Held(hold) => format!(
                "{} run {} (task {}): {}",
                if all.dry_run { "would hold" } else { "held" },
                left.run,
                left.task,
                hold.describe()
            ),
        });
    }
    if human.is_empty() {
        human.push("no pass awaits integration".to_string());
    }
    Report::with_status(&all.output(), human.join("\n"), all.status())
}

/// What integrate did (or, under `--dry-run`, would do), for JSON and for people.
/// What a landing through a fleet's remote did there and here, in a line.
fn remote_line(through: &crate::run::integrate::remote::Through) -> String {
    use crate::core::fleet::LocalTarget;
    let tries = match through.tries {
        1 => String::new(),
        n => format!(" (built {n} times: other machines landed first)"),
    };
    let claim = if through.released {
        ", claim let go"
    } else {
        ""
    };
    let local = match &through.local {
        LocalTarget::Absent => "no such branch here".to_string(),
        LocalTarget::UpToDate => "the branch here is at it".to_string(),
        LocalTarget::FastForward => "the branch here fast-forwarded".to_string(),
        LocalTarget::Left(why) => format!("the branch here left where it is: {why}"),
    };
    format!(
        "pushed to {} in one atomic push ({} refs{claim}){tries}; {local}",
        through.remote,
        through.pushed.len()
    )
}

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
    let human = match &done.remote {
        None => human,
        Some(through) => format!("{human}\n  {}", remote_line(through)),
    };
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
