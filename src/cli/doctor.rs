//! `git crew doctor [--fix]`: find and repair rot, never losing a commit.

use clap::Args;
use serde::Serialize;

use super::context::CommandContext;
use super::error::{CrewError, ErrorCode, Result};
use super::ui::{Report, Status};
use crate::core::doctor::Problem;

/// Find rot, and with --fix repair it.
///
/// Find rot: dead supervisors, orphaned worker processes, stale live pointers, orphan
/// worktrees, stray refs in task ref folders, missing hooks, notes that diverged from a
/// remote's. With --fix, repair what can be repaired without losing work.
///
/// Runs whose supervisor died are marked abandoned by every command that acts, doctor
/// included (their commits are kept); doctor reports them. Orphan worktrees are listed, never removed. A hook that
/// lost git-crew's block (hook-missing: husky writes .husky/_ again on `npm install`)
/// gets it back with --fix. A stray task
/// ref (stray-task-ref) is a ref in refs/heads/crew/<task>/ that is no run's branch; --fix
/// keeps what it points at under refs/crew/strays/<run>/ and takes it out. Stranded work
/// — finished runs holding commits or changes nothing else keeps — is listed with the
/// command that settles it, as `git crew prune` lists it; it is not a problem.
#[derive(Debug, Args)]
#[command(after_help = "Examples:\n  git crew doctor\n  git crew doctor --fix")]
pub struct DoctorArgs {
    /// Repair what can be repaired.
    #[arg(long)]
    pub fix: bool,
}

/// What doctor prints: every problem found (fixed or not), the stranded work (finished
/// runs holding work nothing else keeps: not rot, so it never fails the check) and the
/// kernel's write fence.
#[derive(Serialize)]
struct Checkup<'a> {
    problems: &'a [Problem],
    stranded: &'a [crate::run::prune::Stranded],
    fence: &'a str,
}

pub fn run(ctx: &CommandContext, args: DoctorArgs) -> Result<Report> {
    let checkup = crate::ops::doctor::doctor(ctx, args.fix)?;
    let problems = &checkup.problems;
    let human = if problems.is_empty() {
        "no problems found".to_string()
    } else {
        problems
            .iter()
            .map(|p| {
                format!(
                    "{}{}: {}",
                    if p.fixed { "fixed " } else { "" },
                    p.kind.as_str(),
                    p.detail
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let stranded = &checkup.stranded;
    let mut human = vec![human];
    human.extend(super::prune::stranded_lines(stranded));
    let human = format!("{}\nfence: {}", human.join("\n"), checkup.fence);
    let output = Checkup {
        problems,
        stranded,
        fence: &checkup.fence,
    };
    let mut report = Report::of(&output, human);
    let open = problems.iter().filter(|p| !p.fixed).count();
    if open > 0 {
        report.status = Status::Failed(
            CrewError::new(
                ErrorCode::ProblemsFound,
                format!("{open} problem(s) need attention"),
            )
            .hinted(if args.fix {
                "the rest needs a person"
            } else {
                "`git crew doctor --fix` repairs what it can"
            }),
        );
    }
    Ok(report)
}
