//! One frame of `watch` as it is shown: the table's rows, the questions, the header and
//! the JSON of the frame [`ops::watch`](crate::ops::watch) reads.

use serde::Serialize;

use crate::core::forecast::Forecast;
use crate::core::supervisor::Supervisor;
use crate::ops::watch::Frame;
use crate::view::console::table::{self, Row};
use crate::view::result::{DEAD_SUPERVISOR, RunResult};

/// `watch --once` and `watch --json`: the runs in flight (SPEC §2, each a run result and
/// the last line of its output), then the finished runs that wait to be integrated; each
/// with its conflict forecast.
#[derive(Debug, Serialize)]
pub struct WatchFrame<'a> {
    pub runs: Vec<WatchRun<'a>>,
    pub awaiting_integration: Vec<Awaiting<'a>>,
}

/// A run of a `watch` frame: its run result (SPEC §2), its supervisor as found
/// (`"alive"`, `"dead"`, or `null` for a run with none to lose), the last line of its
/// output, then its conflict forecast (`null` for a run with no commits).
#[derive(Debug, Serialize)]
pub struct WatchRun<'a> {
    #[serde(flatten)]
    pub result: RunResult<'a>,
    pub supervisor: Option<Supervisor>,
    pub last_line: &'a str,
    pub forecast: Option<&'a Forecast>,
}

/// A run of a `watch` frame that waits to be integrated: its run result, then its
/// conflict forecast.
#[derive(Debug, Serialize)]
pub struct Awaiting<'a> {
    #[serde(flatten)]
    pub result: RunResult<'a>,
    pub forecast: Option<&'a Forecast>,
}

/// A row per run, in flight first, then those awaiting integration.
pub fn rows(frame: &Frame) -> Vec<Row> {
    // A dead supervisor says so where the run's last line would be.
    let live = frame.live.iter().map(|w| {
        let last = match w.supervisor {
            Some(Supervisor::Dead) => DEAD_SUPERVISOR,
            _ => w.last_line.as_str(),
        };
        table::row(&w.record, frame.now, last).with_forecast(frame.forecasts.of(&w.record.run))
    });
    let awaiting = frame
        .awaiting
        .iter()
        .map(|r| table::row(r, frame.now, "").with_forecast(frame.forecasts.of(&r.run)));
    live.chain(awaiting).collect()
}

/// The question of each run in flight that asks for help.
pub fn questions(frame: &Frame) -> Vec<[String; 2]> {
    frame
        .live
        .iter()
        .filter_map(|w| table::question(&w.record))
        .collect()
}

/// `git crew watch — 2 in flight, 1 awaiting integration — <time>`.
pub fn header(frame: &Frame) -> String {
    let mut counts = format!("{} in flight", frame.live.len());
    if !frame.awaiting.is_empty() {
        counts.push_str(&format!(", {} awaiting integration", frame.awaiting.len()));
    }
    format!(
        "git crew watch — {counts} — {}",
        crate::core::stamp::seconds_of_millis(frame.now)
    )
}

/// The frame as JSON.
pub fn json(frame: &Frame) -> WatchFrame<'_> {
    WatchFrame {
        runs: frame
            .live
            .iter()
            .map(|w| WatchRun {
                result: RunResult::at(&w.record, frame.now),
                supervisor: w.supervisor,
                last_line: &w.last_line,
                forecast: frame.forecasts.of(&w.record.run),
            })
            .collect(),
        awaiting_integration: frame
            .awaiting
            .iter()
            .map(|r| Awaiting {
                result: RunResult::at(r, frame.now),
                forecast: frame.forecasts.of(&r.run),
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::record::{Phase, RunRecord};
    use crate::ops::watch::Watched;

    fn live(run: &str, supervisor: Option<Supervisor>) -> Watched {
        let mut record = RunRecord::blank(run);
        record.phase = Phase::Working;
        Watched {
            record,
            supervisor,
            last_line: "compiling routes".into(),
        }
    }

    #[test]
    fn a_dead_supervisor_shows_in_the_row_and_the_json_keeps_the_last_line() {
        let frame = Frame {
            now: 1_000,
            live: vec![
                live("20261202-101500-1a2b", Some(Supervisor::Dead)),
                live("20261202-101600-3c4d", Some(Supervisor::Alive)),
            ],
            awaiting: vec![RunRecord::blank("20261202-100000-5e6f")],
            forecasts: Default::default(),
        };
        let rows = rows(&frame);
        let lasts: Vec<&str> = rows.iter().map(|r| r.last.as_str()).collect();
        assert_eq!(lasts, [DEAD_SUPERVISOR, "compiling routes", ""]);
        let json = serde_json::to_value(json(&frame)).unwrap();
        assert_eq!(json["runs"][0]["supervisor"], "dead");
        assert_eq!(json["runs"][0]["last_line"], "compiling routes");
        assert_eq!(json["awaiting_integration"].as_array().unwrap().len(), 1);
        assert!(header(&frame).contains("2 in flight, 1 awaiting integration"));
    }
}
