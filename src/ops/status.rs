//! `status` (alias `ls`): the runs as they are, live and recent, each live one with its
//! supervisor judged; a read, so nothing is settled or written.

use crate::error::Result;

use crate::state::runs::Finished;
pub use crate::state::runs::Found;

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
}

impl Status {
    /// What `status` prints as data, each run measured at `now` (Unix milliseconds).
    pub fn output(&self, now: u64) -> crate::view::output::StatusOutput<'_> {
        crate::view::output::StatusOutput {
            runs: self
                .runs
                .iter()
                .map(|f| crate::view::result::FoundResult::at(&f.record, f.supervisor, now))
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
        return Ok(Status {
            runs: vec![found],
            hidden: 0,
        });
    }
    let finished = if req.all {
        Finished::All
    } else {
        Finished::Recent(req.recent)
    };
    let snapshot = runs::snapshot(&store, finished)?;
    let hidden = snapshot.hidden;
    Ok(Status {
        runs: snapshot.into_runs(),
        hidden,
    })
}
