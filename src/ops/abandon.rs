//! `abandon`: stop a live run, keeping its branch; or give up an ended run's work
//! without losing it (kept under `refs/crew/attempts/<run>`).

use crate::core::record::RunRecord;
use crate::error::{CrewError, ErrorCode, Result};
use crate::run::prune::{Kept, NotKept};

use super::{Context, runs};

pub struct Request {
    /// A run address (see [`runs::resolve`]).
    pub run: String,
    /// A fleet's remote (else `fleet.remote`) where a run this clone does not know
    /// holds a claim to drop: a pass whose machine is gone, or a claim whose lease ran
    /// out.
    pub remote: Option<String>,
}

pub enum Abandoned {
    /// A live run, stopped: its outcome is `abandoned`.
    Stopped(RunRecord),
    /// An ended run: what now keeps its work, and whether the claim it held on a
    /// fleet's remote was let go.
    Kept {
        record: RunRecord,
        kept: Kept,
        released_claim: bool,
    },
    /// A run of another machine: its claim, dropped from the fleet's remote.
    Dropped(DroppedClaim),
}

/// A claim `abandon --remote` dropped from a fleet's remote.
#[derive(Debug, serde::Serialize, schemars::JsonSchema)]
pub struct DroppedClaim {
    pub remote: String,
    pub task: String,
    pub run: String,
    pub machine: String,
    /// What it was: `passed` (never integrated) or `expired`.
    pub phase: crate::core::fleet::FleetPhase,
    /// Where the run's commits stay on the remote.
    pub attempt_ref: String,
}

/// What `abandon` prints as data: the run stopped (`{"run": run result}`), or an ended
/// run and what now keeps its work.
#[derive(serde::Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Output<'a> {
    Stopped(crate::view::result::RunOutput<'a>),
    Kept {
        run: crate::view::result::RunResult<'a>,
        kept: &'a Kept,
        released_claim: bool,
    },
    Dropped {
        dropped: &'a DroppedClaim,
    },
}

impl Abandoned {
    /// What `abandon` prints as data, measured at `now` (Unix milliseconds).
    pub fn output(&self, now: u64) -> Output<'_> {
        match self {
            Abandoned::Stopped(record) => {
                Output::Stopped(crate::view::result::RunOutput::at(record, now))
            }
            Abandoned::Kept {
                record,
                kept,
                released_claim,
            } => Output::Kept {
                run: crate::view::result::RunResult::at(record, now),
                kept,
                released_claim: *released_claim,
            },
            Abandoned::Dropped(dropped) => Output::Dropped { dropped },
        }
    }
}

/// Stops the run, or keeps what an ended run holds; refused (exit 4) when the run ends
/// on its own meanwhile, or when what it holds cannot be read. A run this clone does not
/// know is looked for on the fleet's remote, when there is one: its claim is dropped.
pub fn abandon(ctx: &Context, request: &Request) -> Result<Abandoned> {
    let store = runs::settled(ctx)?;
    let record = match runs::resolve(&store, &request.run).and_then(|r| runs::load(&store, &r)) {
        Ok(record) => record,
        Err(e) if e.code == ErrorCode::RunNotFound => {
            return match super::fleet::remote(ctx, request.remote.as_deref())? {
                Some(remote) => drop_claim(ctx, &remote, &request.run, e),
                None => Err(e),
            };
        }
        Err(e) => return Err(e),
    };
    if record.phase.is_final() {
        return keep(ctx, &store, record);
    }
    let repo_dir = ctx.workdir()?.to_path_buf();
    let run = record.run.clone();
    let stopped = crate::run::reap::abandon(&store, &repo_dir, record, "abandoned by the lead")
        .map_err(CrewError::from)?;
    match stopped {
        Some(ended) => {
            if let Some(not_filed) = ended.not_filed {
                ctx.warn(not_filed);
            }
            // Its slot is free: a queued run of its backend (or of its worker) may start.
            // The run is abandoned whatever the queue does; a queue left waiting starts at
            // the next command that acts.
            let _ = crate::run::queue::promote(&store, &repo_dir);
            Ok(Abandoned::Stopped(ended.record))
        }
        None => {
            let ended = runs::load(&store, &run)?;
            Err(CrewError::new(
                ErrorCode::RunEnded,
                format!(
                    "run {run} ended ({}) before it could be abandoned",
                    ended.phase.as_str()
                ),
            ))
        }
    }
}

/// An ended run's work, given up and kept under `refs/crew/attempts/<run>`.
fn keep(
    ctx: &Context,
    store: &crate::state::runs::RunStore,
    record: RunRecord,
) -> Result<Abandoned> {
    let repo = ctx.repo()?;
    let _turn = store
        .integrate_lock(std::time::Duration::from_secs(600))
        .map_err(CrewError::from)?;
    match crate::run::prune::keep(repo, store, &record).map_err(CrewError::from)? {
        Ok(kept) => {
            // Given up: a pass's claim on a fleet's remote holds its task no longer.
            let repo_dir = ctx.workdir()?;
            let released_claim =
                match crate::run::fleet::let_go(repo_dir, &store.run_dir(&record.run)) {
                    Ok(released) => released == Some(true),
                    Err(e) => {
                        ctx.warn(format!(
                            "run {}'s claim on the fleet's remote was not let go: {}",
                            record.run,
                            crate::fault::chain(&e)
                        ));
                        false
                    }
                };
            Ok(Abandoned::Kept {
                record,
                kept,
                released_claim,
            })
        }
        Err(NotKept::Unreadable(why)) => Err(CrewError::new(
            ErrorCode::WorktreeUnreadable,
            format!(
                "run {} has ended; what it holds cannot be kept: {why}",
                record.run
            ),
        )),
    }
}

/// Drops run `run`'s claim from `remote`: a pass whose machine never integrated it, or a
/// claim whose lease ran out. `unknown` is the error to give when the remote has no claim
/// of the run either.
fn drop_claim(ctx: &Context, remote: &str, run: &str, unknown: CrewError) -> Result<Abandoned> {
    use crate::run::fleet::Dropped;
    let repo_dir = ctx.workdir()?.to_path_buf();
    super::fleet::known(ctx.repo()?, remote)?;
    let dropped = crate::run::fleet::drop_claim(&repo_dir, remote, run)
        .map_err(|e| CrewError::new(ErrorCode::FetchFailed, crate::fault::chain(&e)))?;
    match dropped {
        Dropped::Gone(seen) => {
            let claim = seen.claim.ok_or_else(|| {
                CrewError::new(
                    ErrorCode::Internal,
                    "a dropped claim was read as unreadable",
                )
            })?;
            let phase =
                crate::core::fleet::FleetPhase::of(Some(&claim), crate::sys::clock::now_millis());
            Ok(Abandoned::Dropped(DroppedClaim {
                remote: remote.to_string(),
                task: claim.task,
                run: claim.run,
                machine: claim.machine,
                phase,
                attempt_ref: claim.attempt_ref,
            }))
        }
        Dropped::Live(why) => Err(CrewError::new(ErrorCode::ClaimLive, why)),
        Dropped::Absent => Err(unknown.hinted(format!(
            "nor does a claim on {remote} name it: `git crew status --fleet` lists them"
        ))),
        Dropped::RemoteRefused(why) => Err(CrewError::new(
            ErrorCode::RemoteRefused,
            format!("{remote} refused to drop run {run}'s claim: {why}"),
        )),
    }
}
