//! `status` (alias `ls`): the runs as they are, live and recent, each live one with its
//! supervisor judged, and the conflict forecast of those that may land; a read, so
//! nothing is settled or written.

use crate::core::record::RunRecord;
use crate::error::Result;

use crate::state::runs::Finished;
pub use crate::state::runs::Found;

use super::forecast::{self, Among, Focus, Forecasts};
use super::{Context, runs};

pub struct Request {
    /// Only this run (a run address, see [`runs::resolve`]).
    pub run: Option<String>,
    /// How many finished runs to include, most recent first.
    pub recent: usize,
    /// Every finished run instead of the `recent` ones.
    pub all: bool,
}

/// The runs found, oldest first.
pub struct Status {
    pub runs: Vec<Found>,
    /// How many older finished runs were left out.
    pub hidden: usize,
    /// The conflict forecast of each run listed that is a pass awaiting integration or a
    /// live run with commits.
    pub forecasts: Forecasts,
}

impl Status {
    /// What `status` prints as data, each run measured at `now` (Unix milliseconds).
    pub fn output(&self, now: u64) -> crate::view::output::StatusOutput<'_> {
        crate::view::output::StatusOutput {
            runs: self
                .runs
                .iter()
                .map(|f| {
                    crate::view::result::FoundResult::at(&f.record, f.supervisor, now)
                        .with_forecast(self.forecasts.of(&f.record.run))
                })
                .collect(),
            hidden: self.hidden,
        }
    }
}

/// The runs as they are: a run whose supervisor died is listed live, its supervisor dead.
pub fn status(ctx: &Context, req: &Request) -> Result<Status> {
    let store = runs::open(ctx)?;
    if let Some(run) = &req.run {
        let found = runs::found(&store, &runs::resolve(&store, run)?)?;
        let live = store.live().map_err(crate::error::CrewError::from)?;
        let live: Vec<&RunRecord> = live.iter().collect();
        let forecasts = forecasts(ctx, &store, &live, &[found.record.run.as_str()]);
        return Ok(Status {
            runs: vec![found],
            hidden: 0,
            forecasts,
        });
    }
    let finished = if req.all {
        Finished::All
    } else {
        Finished::Recent(req.recent)
    };
    let snapshot = runs::snapshot(&store, finished)?;
    let hidden = snapshot.hidden;
    let live: Vec<&RunRecord> = snapshot.live_records().collect();
    let listed: Vec<&str> = (live.iter().copied())
        .chain(&snapshot.finished)
        .map(|r| r.run.as_str())
        .collect();
    // Holding every finished run, `--all` finds the passes among them: nothing is read
    // twice.
    let forecasts = match req.all {
        true => forecast::or_warn(
            ctx,
            forecast::forecast_with(
                ctx,
                &live,
                &snapshot.finished,
                Among::Everything,
                Focus::Runs(&listed),
                None,
            ),
        ),
        false => forecasts(ctx, &store, &live, &listed),
    };
    let runs = snapshot.into_runs();
    Ok(Status {
        runs,
        hidden,
        forecasts,
    })
}

/// The forecasts of the runs `listed` (with a warning instead, when they cannot be made).
fn forecasts(
    ctx: &Context,
    store: &crate::state::runs::RunStore,
    live: &[&RunRecord],
    listed: &[&str],
) -> Forecasts {
    let found = forecast::forecast(
        ctx,
        store,
        live,
        Among::Everything,
        Focus::Runs(listed),
        None,
    );
    forecast::or_warn(ctx, found)
}
