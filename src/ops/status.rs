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

/// `status --fleet`: which remote's claims to read (`fleet.remote` when none).
pub struct FleetRequest {
    pub remote: Option<String>,
}

/// The claims on the fleet's remote, with the commit each run keeps there.
pub struct FleetStatus {
    pub remote: String,
    pub claims: Vec<(crate::core::fleet::Seen, Option<String>)>,
}

impl FleetStatus {
    /// What `status --fleet` prints as data, each claim weighed at `now` (Unix ms).
    pub fn output(&self, now: u64) -> crate::view::output::FleetStatusOutput {
        use crate::core::fleet::FleetPhase;
        use crate::view::output::{FleetClaimOutput, FleetStatusOutput};
        let claims = self
            .claims
            .iter()
            .map(|(seen, attempt)| {
                let c = seen.claim.as_ref();
                let expires = c.and_then(crate::core::fleet::FleetClaim::expires_ms);
                FleetClaimOutput {
                    task: seen.task.clone(),
                    machine: c.map(|c| c.machine.clone()),
                    run: c.map(|c| c.run.clone()),
                    phase: FleetPhase::of(c, now),
                    writes: c.map(|c| c.writes),
                    scope: c.map(|c| c.scope.clone()).unwrap_or_default(),
                    since_ms: c.map(|c| c.since_ms),
                    renewed_ms: c.map(|c| c.renewed_ms),
                    lease_ms: c.map(|c| c.lease_ms),
                    expires_ms: expires,
                    age_ms: c.map(|c| now.saturating_sub(c.renewed_ms)),
                    left_ms: expires.map(|e| {
                        i64::try_from(e)
                            .unwrap_or(i64::MAX)
                            .saturating_sub(i64::try_from(now).unwrap_or(i64::MAX))
                    }),
                    passed_ms: c.and_then(|c| c.passed_ms),
                    attempt_ref: c.map(|c| c.attempt_ref.clone()),
                    attempt: attempt.clone(),
                    took_over: c.and_then(|c| c.took_over.clone()),
                    claim: seen.id.clone(),
                }
            })
            .collect();
        FleetStatusOutput {
            remote: self.remote.clone(),
            now_ms: now,
            claims,
        }
    }
}

/// Fetches the fleet remote's claims (into `refs/crew/remotes/<remote>/`, as a fetch
/// would: nothing else here changes) and lists them, each with the commit its run keeps
/// on the remote.
pub fn fleet(ctx: &Context, req: &FleetRequest) -> Result<FleetStatus> {
    use crate::error::{CrewError, ErrorCode};
    let remote = super::fleet::remote(ctx, req.remote.as_deref())?.ok_or_else(|| {
        CrewError::new(
            ErrorCode::RemoteRequired,
            "no fleet remote: name the one whose claims to read",
        )
        .hinted("--remote NAME, or fleet.remote in the flight config")
    })?;
    let repo_dir = ctx.workdir()?.to_path_buf();
    super::fleet::known(ctx.repo()?, &remote)?;
    let unreachable = |e: crate::git::error::Error| {
        CrewError::new(ErrorCode::FetchFailed, crate::fault::chain(&e))
    };
    crate::git::fleet::fetch(&repo_dir, &remote).map_err(unreachable)?;
    let attempts = crate::git::fleet::attempts(&repo_dir, &remote).map_err(unreachable)?;
    // A fresh view of the refs the fetch moved.
    let repo = crate::git::repo::open(&repo_dir).map_err(CrewError::from)?;
    let (seen, _) = crate::git::fleet::seen(&repo, &remote).map_err(CrewError::from)?;
    let claims = seen
        .into_iter()
        .map(|s| {
            let attempt = s.claim.as_ref().and_then(|c| {
                let run = c
                    .attempt_ref
                    .strip_prefix(crate::core::fleet::ATTEMPTS_PREFIX)?;
                attempts
                    .iter()
                    .find(|(r, _)| r == run)
                    .map(|(_, id)| id.to_string())
            });
            (s, attempt)
        })
        .collect();
    Ok(FleetStatus { remote, claims })
}
