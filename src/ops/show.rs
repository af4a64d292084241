//! `show` and `transcript`: one run's record as it is, with its conflict forecast, and
//! the raw transcript its runs archived; reads, so nothing is settled or written.

use std::path::PathBuf;

use crate::core::record::RunRecord;
use crate::error::{CrewError, ErrorCode, Result};

pub use crate::state::runs::Found;

use super::{Context, runs};

pub struct Request {
    /// A run address (see [`runs::resolve`]).
    pub run: String,
}

/// A run as `show` finds it.
pub struct Shown {
    pub found: Found,
    /// Its conflict forecast: a pass awaiting integration and a live run with commits
    /// have one.
    pub forecast: Option<crate::core::forecast::Forecast>,
}

impl Shown {
    /// What `show` prints as data: the run as found, with its forecast, measured at `now`
    /// (Unix milliseconds).
    pub fn output(&self, now: u64) -> crate::view::result::FoundOutput<'_> {
        let found = &self.found;
        crate::view::result::FoundOutput {
            run: crate::view::result::FoundResult::at(&found.record, found.supervisor, now)
                .with_forecast(self.forecast.as_ref()),
        }
    }
}

/// The run as it is, live or finished: a live run whose supervisor died is found live,
/// its supervisor dead. Exit 3 when there is none.
pub fn show(ctx: &Context, req: &Request) -> Result<Shown> {
    let store = runs::open(ctx)?;
    let found = runs::found(&store, &runs::resolve(&store, &req.run)?)?;
    let run = found.record.run.clone();
    let live = store.live().map_err(CrewError::from)?;
    let live: Vec<&RunRecord> = live.iter().collect();
    let forecasts = super::forecast::forecast(
        ctx,
        &store,
        &live,
        super::forecast::Among::Everything,
        super::forecast::Focus::Runs(&[run.as_str()]),
        None,
    );
    let forecast = super::forecast::or_warn(ctx, forecasts).of(&run).cloned();
    Ok(Shown { found, forecast })
}

/// A run's archived transcript.
pub struct Transcript {
    pub record: RunRecord,
    /// Where it is archived.
    pub path: PathBuf,
    /// The transcript, read as text (what is not UTF-8 replaced).
    pub text: String,
}

/// The run's archived transcript: refused when the run was dispatched with transcripts
/// disabled, or when the archive cannot be read.
pub fn transcript(ctx: &Context, req: &Request) -> Result<Transcript> {
    let store = runs::open(ctx)?;
    let record = runs::load(&store, &runs::resolve(&store, &req.run)?)?;
    let Some(path) = record.transcript.clone().map(PathBuf::from) else {
        return Err(CrewError::new(
            ErrorCode::TranscriptDisabled,
            format!(
                "run {} was dispatched with transcripts disabled",
                record.run
            ),
        ));
    };
    let bytes = std::fs::read(&path).map_err(|e| {
        CrewError::new(
            ErrorCode::TranscriptNotFound,
            format!("no transcript at {}: {e}", path.display()),
        )
    })?;
    let text = String::from_utf8_lossy(&bytes).into_owned();
    Ok(Transcript { record, path, text })
}
