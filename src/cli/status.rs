//! `git crew status [RUN]` (alias `ls`): in-flight and recent runs.

use clap::Args;

use super::context::CommandContext;
use super::error::Result;
use super::runs;
use super::table::{Cell, Column, Fit, Table, tone};
use super::ui::Report;
use crate::core::forecast::Forecast;
use crate::core::record::{Phase, RunRecord};
use crate::core::supervisor::Supervisor;
use crate::ops::forecast::Forecasts;
use crate::ops::status::Found;
use crate::view::forecast::marker;
use crate::view::human::{self, IntegrationState, Tone};
use crate::view::result::DEAD_SUPERVISOR;

const EXAMPLES: &str =
    "Examples:\n  git crew status\n  git crew status 20261202-101500-1a2b\n  git crew ls --all";

/// List in-flight and recent runs.
///
/// Phase, elapsed/budget, last activity, spend, integration, and the conflict forecast.
///
/// The forecast is for each pass awaiting integration and each live run with commits:
/// `clean` when it merges cleanly onto its target's current tip and conflicts with no
/// other such run, else what it conflicts with (`conflicts: main, 1 run`); `git crew show
/// RUN` names them. The merges are made in memory: nothing is written.
///
/// For people it is a table sized to the terminal (or to COLUMNS), coloured by phase on a
/// terminal; NO_COLOR turns colour off and CLICOLOR_FORCE turns it on when piped.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct StatusArgs {
    /// Only this run.
    #[arg(value_parser = super::runs::run_address, add = super::complete::runs())]
    pub run: Option<String>,
    /// How many finished runs to include (most recent first).
    #[arg(long, default_value_t = 20)]
    pub recent: usize,
    /// Include every finished run.
    #[arg(long)]
    pub all: bool,
    /// The runs in flight on every machine of the fleet instead, from the claims on its
    /// remote: machine, task, run, phase (running, passed, expired) and lease. Fetches
    /// the claims; changes nothing else.
    #[arg(long, conflicts_with_all = ["run", "all"])]
    pub fleet: bool,
    /// The fleet's remote (default: fleet.remote).
    #[arg(long, value_name = "NAME", requires = "fleet")]
    pub remote: Option<String>,
}

/// The runs as they are: a read, so nothing is settled — a run whose supervisor died is
/// listed live, its supervisor `dead`.
pub fn run(ctx: &CommandContext, args: StatusArgs) -> Result<Report> {
    if args.fleet {
        return fleet(ctx, args.remote);
    }
    let request = crate::ops::status::Request {
        run: args.run,
        recent: args.recent,
        all: args.all,
    };
    let status = crate::ops::status::status(ctx, &request)?;
    let now = crate::sys::clock::now_millis();
    let (found, hidden) = (&status.runs, status.hidden);
    let mut human = if found.is_empty() {
        "no runs".to_string()
    } else {
        table(found, &status.forecasts, now)
            .render(crate::sys::term::stdout_width(), super::ui::colour())
    };
    if hidden > 0 {
        let older = human::count(hidden, "older run", "older runs");
        human.push_str(&format!("\n{older} hidden (--all shows them)"));
    }
    let mut report = Report::of(&status.output(now), human);
    // The table made every cell printable; its colours stay.
    report.styled = true;
    Ok(report)
}

/// `status --fleet`: the claims on the fleet's remote, as a table for people.
fn fleet(ctx: &CommandContext, remote: Option<String>) -> Result<Report> {
    let status = crate::ops::status::fleet(ctx, &crate::ops::status::FleetRequest { remote })?;
    let output = status.output(crate::sys::clock::now_millis());
    let human = if output.claims.is_empty() {
        format!("no runs in flight on {}", output.remote)
    } else {
        fleet_table(&output).render(crate::sys::term::stdout_width(), super::ui::colour())
    };
    let mut report = Report::of(&output, human);
    report.styled = true;
    Ok(report)
}

/// The fleet's claims for people: the lease as `renewed 12s ago, 1m48s left`, or when
/// it ran out; a pass as when it passed (it holds with no lease).
pub fn fleet_table(output: &crate::view::output::FleetStatusOutput) -> Table {
    use crate::core::fleet::FleetPhase;
    let columns = vec![
        Column::new("MACHINE", Fit::Shrink { min: 6 }),
        Column::new("TASK", Fit::Shrink { min: 8 }),
        Column::new("RUN", Fit::Fixed).dropped_at(1),
        Column::new("PHASE", Fit::Fixed),
        Column::new("LEASE", Fit::Fill { min: 12 }),
        Column::new("ATTEMPT", Fit::Fixed).dropped_at(0),
    ];
    let now = output.now_ms;
    let rows = output
        .claims
        .iter()
        .map(|c| {
            let phase_tone = match c.phase {
                FleetPhase::Running => Tone::Busy,
                FleetPhase::Passed => Tone::Good,
                FleetPhase::Expired | FleetPhase::Unreadable => Tone::Attention,
            };
            let lease = match (c.passed_ms, c.renewed_ms, c.left_ms) {
                (Some(passed), ..) => {
                    format!("passed {}, held until integrated", human::ago(passed, now))
                }
                (None, Some(renewed), Some(left)) if left > 0 => format!(
                    "renewed {}, {} left",
                    human::ago(renewed, now),
                    human::duration(left.unsigned_abs().div_ceil(1000))
                ),
                (None, Some(_), Some(left)) => format!(
                    "ran out {} ago",
                    human::duration(left.unsigned_abs() / 1000)
                ),
                _ => format!("claim {} cannot be read", c.claim),
            };
            let attempt = c
                .attempt
                .as_deref()
                .map(|id| id.get(..12).unwrap_or(id))
                .unwrap_or("-");
            vec![
                c.machine.as_deref().unwrap_or("?").into(),
                c.task.as_str().into(),
                c.run.as_deref().unwrap_or("?").into(),
                Cell::styled(c.phase.as_str(), tone(phase_tone)),
                lease.into(),
                attempt.into(),
            ]
        })
        .collect();
    Table { columns, rows }
}

/// The runs as a table for people, measured at `now` (Unix milliseconds), with the
/// conflict forecast of those that have one.
pub fn table(runs: &[Found], forecasts: &Forecasts, now: u64) -> Table {
    let columns = vec![
        Column::new("RUN", Fit::Fixed),
        Column::new("TASK", Fit::Shrink { min: 8 }),
        Column::new("PHASE", Fit::Fixed),
        Column::new("WORKER", Fit::Shrink { min: 6 }).dropped_at(1),
        Column::new("TIME", Fit::Fixed),
        Column::new("ACTIVITY", Fit::Fixed).dropped_at(3),
        Column::new("SPEND", Fit::Fixed).dropped_at(2),
        Column::new("INTEGRATION", Fit::Fixed).dropped_at(4),
        Column::new("FORECAST", Fit::Fixed).dropped_at(3),
        Column::new("NOTE", Fit::Fill { min: 16 }).dropped_at(0),
    ];
    let rows = runs
        .iter()
        .map(|f| row(&f.record, f.supervisor, forecasts.of(&f.record.run), now))
        .collect();
    let mut table = Table { columns, rows };
    // A spend column only when some run reported one, a forecast column only when some
    // run has a forecast.
    if runs.iter().all(|f| f.record.usage.is_none()) {
        table.drop_column("SPEND");
    }
    if runs.iter().all(|f| forecasts.of(&f.record.run).is_none()) {
        table.drop_column("FORECAST");
    }
    table
}

fn row(
    record: &RunRecord,
    supervisor: Option<Supervisor>,
    forecast: Option<&Forecast>,
    now: u64,
) -> Vec<Cell> {
    let result = runs::result(record);
    let activity = match (record.finished_at, record.last_activity_at) {
        _ if record.unreadable.is_some() => None,
        (Some(at), _) | (None, Some(at)) => Some(at),
        (None, None) => Some(record.started_at),
    };
    let integration = IntegrationState::of(record).map(|s| match s {
        // The header says what it awaits; the full words are in `show`.
        IntegrationState::AwaitingIntegration => "awaiting",
        other => other.as_str(),
    });
    let note = match (&record.needs_help, record.phase) {
        (Some(help), Phase::NeedsHelp) => format!("asks: {}", help.question),
        _ => record.decision.clone().unwrap_or_default(),
    };
    // A dead supervisor is what matters most of a run that has one.
    let note = match (supervisor, note.is_empty()) {
        (Some(Supervisor::Dead), true) => DEAD_SUPERVISOR.to_string(),
        (Some(Supervisor::Dead), false) => format!("{DEAD_SUPERVISOR}; {note}"),
        _ => note,
    };
    vec![
        record.run.as_str().into(),
        record.task.as_str().into(),
        Cell::styled(record.phase.as_str(), tone(Tone::of(record.phase))),
        record.backend.as_str().into(),
        human::elapsed_of_budget(result.elapsed_s, record.budget_s).into(),
        activity
            .map(|at| human::ago(human::millis(at), now))
            .unwrap_or_default()
            .into(),
        record
            .usage
            .as_ref()
            .map(|u| crate::core::usage::short(&u.total))
            .unwrap_or_default()
            .into(),
        integration.unwrap_or("").into(),
        forecast.map(marker).unwrap_or_default().into(),
        note.into(),
    ]
}
