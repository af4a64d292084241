//! The conflict forecast: for every pass awaiting integration and every live run with
//! commits, whether it merges cleanly onto its target's current tip and which of the
//! others it conflicts with. The facts are trial merges made in memory
//! ([`crate::git::forecast`]: nothing is written, no checkout), cached in the
//! [`Context`] by the commits merged, so that a long-lived front end (the `watch`
//! console, an MCP server) merges again only what moved; `core::forecast` decides on
//! them. A read: nothing on disk changes.

use std::collections::{BTreeMap, HashMap};

use crate::core::forecast::{self, Candidate, Forecast, Onto, Queue};
use crate::core::record::RunRecord;
use crate::error::{CrewError, Result};
use crate::git::ObjectId;
use crate::git::forecast::Trials;
use crate::state::runs::RunStore;
use crate::view::human::IntegrationState;

use super::Context;

/// The forecasts found, by run.
#[derive(Debug, Clone, Default)]
pub struct Forecasts {
    candidates: Vec<Candidate>,
    by_run: BTreeMap<String, Forecast>,
    /// How many merges were made for it (the rest came from the cache).
    pub merged: usize,
}

impl Forecasts {
    /// The forecast of `run`, when it has one.
    pub fn of(&self, run: &str) -> Option<&Forecast> {
        self.by_run.get(run)
    }

    /// Every forecast, by run.
    pub fn all(&self) -> &BTreeMap<String, Forecast> {
        &self.by_run
    }

    /// The passes in the order that meets none of the forecast's conflicts, and those it
    /// holds back (`integrate --all`).
    pub fn queue(&self) -> Queue {
        forecast::queue(&self.candidates, &self.by_run)
    }
}

/// Whose forecasts are wanted.
#[derive(Debug, Clone, Copy)]
pub enum Focus<'a> {
    /// Every candidate's.
    All,
    /// These runs' only: only the merges they are in are made.
    Runs(&'a [&'a str]),
}

impl Focus<'_> {
    fn holds(&self, run: &str) -> bool {
        match self {
            Focus::All => true,
            Focus::Runs(runs) => runs.contains(&run),
        }
    }
}

/// Which runs the forecast looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Among {
    /// The passes awaiting integration and the live runs with commits.
    Everything,
    /// The passes awaiting integration only (`integrate --all`).
    Passes,
}

/// A candidate with its commits.
struct Gathered {
    candidate: Candidate,
    tip: ObjectId,
    base: ObjectId,
}

/// The forecasts of the runs `focus` names: the candidates are the passes awaiting
/// integration on file, however old, and (with [`Among::Everything`]) the live runs of
/// `live` that have commits; each lands on `into`, else the branch it was cut from, else
/// HEAD's, as integrate decides.
pub fn forecast(
    ctx: &Context,
    store: &RunStore,
    live: &[&RunRecord],
    among: Among,
    focus: Focus<'_>,
    into: Option<&str>,
) -> Result<Forecasts> {
    let passes = store.passed_not_integrated();
    forecast_with(ctx, live, &passes, among, focus, into)
}

/// [`forecast`] where the caller holds every finished run already (`status --all`):
/// the passes awaiting integration are found among `finished`, and no record is read
/// again.
pub fn forecast_with(
    ctx: &Context,
    live: &[&RunRecord],
    finished: &[RunRecord],
    among: Among,
    focus: Focus<'_>,
    into: Option<&str>,
) -> Result<Forecasts> {
    let repo = ctx.repo()?;
    let mut records: Vec<(&RunRecord, bool)> = Vec::new();
    if among == Among::Everything {
        records.extend(live.iter().map(|r| (*r, false)));
    }
    let passes = finished.iter().filter(|r| {
        r.outcome == Some(crate::core::record::Outcome::Pass) && r.integration.is_none()
    });
    records.extend(
        passes
            .filter(|r| {
                matches!(
                    IntegrationState::of(r),
                    Some(IntegrationState::AwaitingIntegration | IntegrationState::Unverified)
                )
            })
            .map(|r| (r, true)),
    );
    records.sort_by(|(a, _), (b, _)| a.started_at.cmp(&b.started_at).then(a.run.cmp(&b.run)));
    records.dedup_by(|(a, _), (b, _)| a.run == b.run);

    let head = crate::git::refs::head_branch(repo);
    let asked = crate::core::integrate::Asked {
        into: into.map(String::from),
        squash: false,
        force_unverified: false,
        dry_run: false,
        session_reuse: false,
        cleanup: crate::core::flight::WorktreeCleanup::Conservative,
    };
    let mut gathered = Vec::new();
    for (record, pass) in records {
        if record.unreadable.is_some() {
            continue;
        }
        let Some(into) = crate::core::integrate::target(&asked, record, head.as_deref()) else {
            continue;
        };
        // A fenced run's commits stay in its quarantine while an attempt works, and are
        // taken into the store when it ends: a read never opens the quarantine (what is
        // there is the worker's, not checked yet), so until then it has no forecast.
        let tip = crate::git::forecast::stored_tip(repo, &record.branch, &record.run);
        let (Some(tip), Ok(base)) = (tip, crate::git::refs::oid(&record.base)) else {
            continue;
        };
        // A run with no commits of its own has nothing to land.
        if tip == base {
            continue;
        }
        gathered.push(Gathered {
            candidate: Candidate {
                run: record.run.clone(),
                into,
                pass,
            },
            tip,
            base,
        });
    }

    if gathered.is_empty() {
        return Ok(Forecasts::default());
    }
    let mut targets: HashMap<String, Option<ObjectId>> = HashMap::new();
    let mut cache = ctx.trial_cache();
    let mut trials = Trials::new(repo, &mut cache);
    // A merge that cannot be made (an object missing) leaves its run without a forecast,
    // or its pair out, and says so: the other runs are forecast still.
    let failed = |e: crate::git::error::Error| {
        ctx.warn(format!("no conflict forecast: {}", crate::fault::chain(&e)));
    };
    let mut broken = vec![false; gathered.len()];
    let mut onto = Vec::with_capacity(gathered.len());
    for (i, g) in gathered.iter().enumerate() {
        if !focus.holds(&g.candidate.run) {
            onto.push(None);
            continue;
        }
        let into = &g.candidate.into;
        let target = match targets.get(into) {
            Some(tip) => *tip,
            None => {
                let tip = crate::git::merge::branch_tip(repo, into).map_err(CrewError::from)?;
                targets.insert(into.clone(), tip);
                tip
            }
        };
        let Some(target) = target else {
            onto.push(None);
            continue;
        };
        let trial = match trials.onto(target, g.tip, g.base) {
            Ok(trial) => trial,
            Err(e) => {
                failed(e);
                broken[i] = true;
                onto.push(None);
                continue;
            }
        };
        onto.push(Some(Onto {
            tip: target.to_string(),
            conflicts: trial.paths().to_vec(),
        }));
    }
    let candidates: Vec<Candidate> = gathered.iter().map(|g| g.candidate.clone()).collect();
    let mut clashes = Vec::new();
    for (i, j) in forecast::pairs(&candidates, |c| focus.holds(&c.run)) {
        if broken[i] || broken[j] {
            continue;
        }
        match trials.pair(gathered[i].tip, gathered[j].tip) {
            Ok(trial) if !trial.is_clean() => clashes.push((i, j)),
            Ok(_) => {}
            Err(e) => failed(e),
        }
    }
    let merged = trials.merged();
    drop(trials);
    Ok(Forecasts {
        by_run: forecast::forecasts(&candidates, &onto, &clashes),
        candidates,
        merged,
    })
}

/// The forecasts, or — when they cannot be made — none, with a warning: a read that
/// shows runs shows them without a forecast rather than not at all.
pub fn or_warn(ctx: &Context, found: Result<Forecasts>) -> Forecasts {
    found.unwrap_or_else(|e| {
        ctx.warn(format!("no conflict forecast: {}", e.message));
        Forecasts::default()
    })
}
