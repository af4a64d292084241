//! The `watch` table as values: a row per run (phase, elapsed/budget, last activity, and
//! what to read: the question of a run that asks, the integration state of one that
//! waits for it, else the last line of its output), the columns that fit a width, and
//! worker text made safe to put on a terminal.

use crate::core::record::{Phase, RunRecord};
use crate::view::human::{self, IntegrationState};

/// A run of the table, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub run: String,
    pub task: String,
    pub phase: Phase,
    pub time: String,
    pub activity: String,
    /// What the run has spent so far (`$0.04`, `12.8k tok`), or nothing.
    pub spend: String,
    /// Its conflict forecast's marker (`clean`, `conflicts: main`), or nothing.
    pub forecast: String,
    pub last: String,
}

/// The row of `record` at `now` (Unix milliseconds); `last_line` is the last line of its
/// output. Its forecast is for the caller to add ([`Row::with_forecast`]).
pub fn row(record: &RunRecord, now: u64, last_line: &str) -> Row {
    let elapsed = crate::view::result::RunResult::at(record, now).elapsed_s;
    let active = record.last_activity_at.or(record.finished_at);
    let last = match (&record.needs_help, IntegrationState::of(record)) {
        (Some(help), _) if record.phase == Phase::NeedsHelp => format!("asks: {}", help.question),
        (_, Some(state)) => state.as_str().to_string(),
        _ => last_line.to_string(),
    };
    Row {
        run: record.run.clone(),
        task: human::printable(&record.task),
        phase: record.phase,
        time: human::elapsed_of_budget(elapsed, record.budget_s),
        activity: active.map_or("-".into(), |at| human::ago(human::millis(at), now)),
        spend: record
            .usage
            .as_ref()
            .map(|u| crate::core::usage::short(&u.total))
            .unwrap_or_default(),
        forecast: String::new(),
        last: human::printable(&last),
    }
}

impl Row {
    /// The row with the marker of the run's conflict forecast, when it has one.
    pub fn with_forecast(mut self, forecast: Option<&crate::core::forecast::Forecast>) -> Row {
        self.forecast = forecast
            .map(super::super::forecast::marker)
            .unwrap_or_default();
        self
    }
}

/// The lines under the table for a run that asks for help: its question, then its
/// options and leaning (to be indented under it).
pub fn question(record: &RunRecord) -> Option<[String; 2]> {
    let help = record.needs_help.as_ref()?;
    (record.phase == Phase::NeedsHelp).then(|| {
        [
            human::printable(&format!("{} asks: {}", record.run, help.question)),
            human::printable(&format!(
                "options: {} · leaning: {}",
                help.options, help.leaning
            )),
        ]
    })
}

/// A column of the table, in the order shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    Run,
    Task,
    Phase,
    Time,
    Activity,
    Spend,
    Forecast,
    Last,
}

impl Column {
    pub fn header(self) -> &'static str {
        match self {
            Column::Run => "RUN",
            Column::Task => "TASK",
            Column::Phase => "PHASE",
            Column::Time => "TIME",
            Column::Activity => "ACTIVITY",
            Column::Spend => "SPEND",
            Column::Forecast => "FORECAST",
            Column::Last => "LAST",
        }
    }

    /// The cell of `row` in this column, cut to `width`: a run id keeps its end, which
    /// tells runs apart; the rest their start.
    pub fn cell(self, row: &Row, width: usize) -> String {
        let text = self.of(row);
        let len = text.chars().count();
        if self != Column::Run || len <= width || width == 0 {
            return human::truncate(text, width);
        }
        let tail: String = text.chars().skip(len - (width - 1)).collect();
        format!("…{tail}")
    }

    pub fn of(self, row: &Row) -> &str {
        match self {
            Column::Run => &row.run,
            Column::Task => &row.task,
            Column::Phase => row.phase.as_str(),
            Column::Time => &row.time,
            Column::Activity => &row.activity,
            Column::Spend => &row.spend,
            Column::Forecast => &row.forecast,
            Column::Last => &row.last,
        }
    }
}

/// Left of the first column: the selection marker.
pub const MARKER: usize = 2;
/// Between columns.
pub const SPACING: usize = 1;
/// The most a task id takes: longer ones are cut.
const TASK_MAX: usize = 32;

/// The columns shown in `width` and the width of each, in the order shown. Each column
/// first gets its least width (the run id whole, a task or the last line 8 characters,
/// the others their widest cell), in the order that matters most (run, phase, task, time,
/// activity, spend — shown only when a run reported one — forecast — shown only when a
/// run has one — last line), those that do not fit being left out; then what is left goes to
/// each in that order up to its widest cell, and the rest to the last line.
pub fn fit(width: usize, rows: &[Row]) -> Vec<(Column, usize)> {
    use Column::*;
    let widest = |c: Column| {
        rows.iter()
            .map(|r| c.of(r).chars().count())
            .chain([c.header().len()])
            .max()
            .unwrap_or(0)
    };
    let wants = |c: Column| match c {
        Task => widest(c).min(TASK_MAX),
        Last => usize::MAX,
        _ => widest(c),
    };
    let mut left = width.saturating_sub(MARKER);
    let mut taken: Vec<(Column, usize)> = Vec::new();
    // A spend column only when some run reported one, a forecast column only when some
    // run has a forecast.
    let spent = rows.iter().any(|r| !r.spend.is_empty());
    let forecast = rows.iter().any(|r| !r.forecast.is_empty());
    for c in [Run, Phase, Task, Time, Activity, Spend, Forecast, Last] {
        if (c == Spend && !spent) || (c == Forecast && !forecast) {
            continue;
        }
        // The run id is what people type: whole where the phase fits beside it, else
        // cut to leave the phase room.
        let least = match c {
            Run => wants(c)
                .min(left.saturating_sub(wants(Phase) + SPACING))
                .max(wants(c).min(left).min(8)),
            Task | Last => wants(c).min(8),
            _ => wants(c),
        };
        let need = least + if taken.is_empty() { 0 } else { SPACING };
        if least > 0 && need <= left {
            left -= need;
            taken.push((c, least));
        }
    }
    for (c, w) in &mut taken {
        let more = wants(*c).saturating_sub(*w).min(left);
        *w += more;
        left -= more;
    }
    taken.sort_by_key(|(c, _)| *c as u8);
    taken
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a_row(task: &str, last: &str) -> Row {
        Row {
            run: "20260101-000000-0001".into(),
            task: task.into(),
            phase: Phase::NeedsHelp,
            time: "1m12s/25m".into(),
            activity: "just now".into(),
            spend: String::new(),
            forecast: String::new(),
            last: last.into(),
        }
    }

    fn widths(width: usize, rows: &[Row]) -> Vec<(Column, usize)> {
        fit(width, rows)
    }

    #[test]
    fn a_wide_terminal_shows_every_column_and_gives_the_rest_to_the_last_line() {
        let rows = [a_row("routes", "thinking")];
        let cols = widths(120, &rows);
        use Column::*;
        assert_eq!(
            cols,
            [
                (Run, 20),
                (Task, 6),
                (Phase, 10),
                (Time, 9),
                (Activity, 8),
                (Last, 120 - 2 - 20 - 6 - 10 - 9 - 8 - 5)
            ]
        );
    }

    #[test]
    fn a_narrow_terminal_cuts_long_tasks_and_leaves_out_what_does_not_fit() {
        let long = "a-task-id-that-goes-on-and-on-and-on-forever";
        let rows = [a_row(long, "x")];
        use Column::*;
        // Task ids are cut at 32 characters however wide the terminal.
        assert!(widths(200, &rows).contains(&(Task, 32)));
        // 60 columns: run, phase and time whole, the task cut to what is left; no room
        // for the activity or the last line.
        let cols = widths(60, &rows);
        assert_eq!(cols, [(Run, 20), (Task, 16), (Phase, 10), (Time, 9)]);
        let used: usize = cols.iter().map(|(_, w)| w + SPACING).sum::<usize>() - SPACING;
        assert!(MARKER + used <= 60);
        assert_eq!(widths(34, &rows), [(Run, 20), (Phase, 10)]);
        // Narrower, the run id is cut to leave the phase room, down to 8 characters.
        assert_eq!(widths(30, &rows), [(Run, 17), (Phase, 10)]);
        assert_eq!(widths(10, &rows), [(Run, 8)]);
        assert_eq!(Run.cell(&rows[0], 17), "…0101-000000-0001");
        assert_eq!(Run.cell(&rows[0], 20), "20260101-000000-0001");
        assert_eq!(Task.cell(&rows[0], 8), "a-task-…");
        assert_eq!(widths(0, &rows), []);
    }

    #[test]
    fn a_spend_column_shows_only_when_a_run_reported_a_spend() {
        let mut spent = a_row("routes", "thinking");
        spent.spend = "$0.04".into();
        let rows = [a_row("docs", "x"), spent];
        let cols = widths(120, &rows);
        assert!(cols.contains(&(Column::Spend, 5)), "{cols:?}");
        assert!(
            !widths(120, &rows[..1])
                .iter()
                .any(|(c, _)| *c == Column::Spend)
        );
        let mut r = RunRecord::example();
        let mut usage = crate::core::usage::RunUsage::default();
        usage.set(
            1,
            crate::core::usage::Usage {
                input_tokens: 12_000,
                output_tokens: 800,
                ..Default::default()
            },
        );
        r.usage = Some(usage);
        assert_eq!(row(&r, 0, "").spend, "12.8k tok");
    }

    #[test]
    fn a_forecast_column_shows_only_when_a_run_has_a_forecast() {
        let forecast = crate::core::forecast::Forecast {
            into: "main".into(),
            tip: "t".into(),
            merges_cleanly: false,
            conflicting_paths: vec!["a".into()],
            conflicts_with: vec!["r2".into()],
        };
        let r = RunRecord::example();
        let with = row(&r, 0, "x").with_forecast(Some(&forecast));
        assert_eq!(with.forecast, "conflicts: main, 1 run");
        assert_eq!(row(&r, 0, "x").with_forecast(None).forecast, "");
        let rows = [a_row("docs", "x"), with];
        let cols = widths(120, &rows);
        assert!(cols.contains(&(Column::Forecast, 22)), "{cols:?}");
        // Shown between the spend and the last line.
        let at = |c: Column| cols.iter().position(|(x, _)| *x == c).unwrap();
        assert_eq!(at(Column::Forecast) + 1, at(Column::Last));
        assert!(
            !widths(120, &rows[..1])
                .iter()
                .any(|(c, _)| *c == Column::Forecast)
        );
    }

    #[test]
    fn a_row_says_what_to_read() {
        let mut r = RunRecord::example();
        r.run = "20260101-000000-0001".into();
        r.phase = Phase::NeedsHelp;
        r.outcome = None;
        r.needs_help = Some(crate::core::footer::NeedsHelp {
            question: "which db?\u{1b}[2J".into(),
            tried: "-".into(),
            options: "a | b".into(),
            leaning: "a".into(),
            cost_if_wrong: "-".into(),
        });
        assert_eq!(row(&r, 0, "ignored").last, "asks: which db?");
        let [ask, options] = question(&r).unwrap();
        assert_eq!(ask, "20260101-000000-0001 asks: which db?");
        assert_eq!(options, "options: a | b · leaning: a");
        r.phase = Phase::Working;
        assert_eq!(row(&r, 0, "compiling\u{7}").last, "compiling");
        assert_eq!(question(&r), None);
        r.phase = Phase::Done;
        r.outcome = Some(crate::core::record::Outcome::Pass);
        r.verify = None;
        assert_eq!(row(&r, 0, "x").last, "unverified");
    }
}
