//! `git crew ledger [--task T]` and `git crew should-stop --task T --model M [--tier X]`.

use clap::Args;

use super::context::CommandContext;
use super::error::Result;
use super::ui::Report;
use crate::core::ledger::{ConfigStats, Row};
use crate::core::policy::Decision;
use crate::ops::{self, ledger::Ledger, ledger::Stopped};

/// List the outcome ledger, or learn from it (stats).
///
/// List the outcome ledger: one row per finished run (metadata only), oldest first.
/// `ledger stats` learns from it per agent configuration (backend, model, effort): runs,
/// pass rate, success per size bucket, the competence horizon (the largest size still
/// passing at least half the time), the speed factor (actual over estimated hours) and
/// claim accuracy (how often `done` was a verified pass). Runs whose scope changed are
/// left out.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  git crew ledger\n  git crew ledger --task routes\n  git crew ledger stats"
)]
pub struct LedgerArgs {
    /// Only this task's rows.
    #[arg(long, add = super::complete::tasks())]
    pub task: Option<String>,
    /// `stats`: learn from the ledger instead of listing it.
    #[arg(value_parser = ["stats"])]
    pub view: Option<String>,
}

/// What runs spent, for people: a run's tokens and dollars, and a verified pass's;
/// `unpriced` or `-` where a figure is unknown.
fn spend_line(s: &crate::core::ledger::SpendStats) -> String {
    use crate::core::usage::dollars;
    if s.reported == 0 {
        return "none reported".to_string();
    }
    let tokens = |t: Option<f64>| t.map_or("-".into(), |t| format!("{t:.0} tokens"));
    let cost = |c: Option<f64>| c.map_or("unpriced".into(), dollars);
    format!(
        "{} and {} a run; {} and {} a verified pass ({} of them)",
        tokens(s.tokens_per_run),
        cost(s.cost_per_run_usd),
        tokens(s.tokens_per_verified_pass),
        cost(s.cost_per_verified_pass_usd),
        s.verified_passes
    )
}

pub fn ledger(ctx: &CommandContext, args: LedgerArgs) -> Result<Report> {
    let request = ops::ledger::Request {
        task: args.task,
        stats: args.view.is_some(),
    };
    let ledger = ops::ledger::ledger(ctx, &request)?;
    let human = match &ledger {
        Ledger::Stats(stats) => stats_human(stats),
        Ledger::Rows(rows) => rows_human(rows, request.task.as_deref()),
    };
    Ok(Report::of(&ledger.output(), human))
}

/// `ledger stats`, for people.
fn stats_human(stats: &[ConfigStats]) -> String {
    let human = stats
        .iter()
        .map(|s| {
            let mut text = format!(
                "{} {} {}: {}, pass rate {:.0}%, horizon {}, speed factor {}, claim accuracy {}\n  spend: {}",
                s.backend,
                s.model.as_deref().unwrap_or("-"),
                s.effort.as_deref().unwrap_or("-"),
                crate::view::human::count(s.runs, "run", "runs"),
                s.pass_rate * 100.0,
                s.horizon_h.map_or("-".into(), |h| format!("{h}h")),
                s.speed_factor.map_or("-".into(), |f| f.to_string()),
                s.claim_accuracy
                    .map_or("-".into(), |a| format!("{:.0}%", a * 100.0)),
                spend_line(&s.spend),
            );
            for b in s.by_size.iter().filter(|b| b.spend.reported > 0) {
                text.push_str(&format!("\n  {}: {}", b.size, spend_line(&b.spend)));
            }
            text
        })
        .collect::<Vec<_>>()
        .join("\n");
    if stats.is_empty() {
        "no finished runs to learn from yet".to_string()
    } else {
        human
    }
}

/// The ledger's rows (of `task`, when one was named), for people.
fn rows_human(rows: &[Row], task: Option<&str>) -> String {
    let mut human = rows
        .iter()
        .map(|r| {
            let outcome = r.outcome.map_or("-".to_string(), |o| {
                serde_json::to_value(o)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default()
            });
            let what = match &r.integrated {
                Some(commit) => format!("integrated as {}", &commit[..commit.len().min(12)]),
                None => format!("claimed {:<4} → {outcome}{}", r.claimed, verified_by(r)),
            };
            format!(
                "{}  {}  {:<12} {:<10} {:<14} {what}",
                r.at,
                r.run,
                r.task,
                r.backend,
                r.model.as_deref().unwrap_or("-"),
            )
        })
        .collect::<Vec<_>>()
        .join("\n");
    if rows.is_empty() {
        human = match task {
            Some(task) => format!("no rows for task {task}"),
            None => "no rows yet: a row is filed when a run ends".to_string(),
        };
    }
    human
}

/// What decided a row's verify, for people: ` (verify: exit 1)`, ` (verify: exit 0,
/// reward 0.5)`; nothing for a row without one (or from before it was kept).
fn verified_by(row: &crate::core::ledger::Row) -> String {
    match row.verify_decided_by {
        Some(by) => format!(
            " (verify: {})",
            crate::core::record::verify_grounds(
                Some(by),
                row.verify_exit_code,
                row.reward.unwrap_or_default()
            )
        ),
        None => String::new(),
    }
}

/// Apply the two-failure rule to a task and model.
///
/// Apply the two-failure rule to a (task, model) from the ledger.
///
/// Fewer than `fences.needs_help_after_failures` (2) failures: `continue` (exit 0). That
/// many with a higher tier configured: `escalate-tier`, naming the backend and model there
/// (exit 5). That many at the top tier: `human-report`, written under .git/crew/reports/
/// (exit 5). A scope rejection counts as a failure; a handoff (NEEDS-HELP) and an
/// infrastructure error do not. For a backend that names no model, pass
/// `--model backend:<name>`.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  git crew should-stop --task routes --model gpt-5.6-sol\n  git crew should-stop --task routes --model claude-sonnet-5 --tier mid"
)]
pub struct ShouldStopArgs {
    #[arg(long, add = super::complete::tasks())]
    pub task: String,
    #[arg(long)]
    pub model: String,
    /// The tier the model runs at (default: the tier of the backend using it).
    #[arg(long)]
    pub tier: Option<String>,
    /// Set any flight key for this decision: dotted.key=value (e.g.
    /// fences.needs_help_after_failures=3).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
}

pub fn should_stop(ctx: &CommandContext, args: ShouldStopArgs) -> Result<Report> {
    let request = ops::ledger::ShouldStopRequest {
        task: args.task,
        model: args.model,
        tier: args.tier,
        set: args.set,
    };
    let stopped = ops::ledger::should_stop(ctx, &request)?;
    Ok(should_stop_report(&request, &stopped))
}

/// The rule's decision, for JSON and for people; any decision but `continue` asks for
/// attention (exit 5).
fn should_stop_report(request: &ops::ledger::ShouldStopRequest, stopped: &Stopped) -> Report {
    let verdict = &stopped.verdict;
    let human = match (&verdict.decision, &verdict.next, &stopped.report) {
        (Decision::Continue, _, _) => format!(
            "continue ({} failures of {} on {})",
            verdict.failures, request.model, request.task
        ),
        (Decision::EscalateTier, Some(next), _) => format!(
            "escalate-tier: {} failures; next tier {} on backend {} ({})",
            verdict.failures,
            next.tier,
            next.backend,
            next.model.as_deref().unwrap_or("-")
        ),
        (_, _, Some(path)) => format!(
            "human-report: {} failures at the top tier; report at {}",
            verdict.failures,
            path.display()
        ),
        _ => String::new(),
    };
    Report::with_status(&stopped.output(request), human, stopped.status())
}
