//! `integrate --all`: every pass awaiting integration, in the order the conflict forecast
//! gives ([`crate::core::forecast::queue`]), each integrated exactly as `integrate RUN`
//! integrates it ([`super::integrate::integrate`]: the same audit, gates and verify of the
//! merged tree). It stops at the first refusal and says what is left. A pass the forecast
//! sees conflicting with its target's tip, or with a pass that lands before it, is held
//! back and named, never tried.

use crate::core::flight::Invocation;
use crate::core::forecast::Hold;
use crate::error::{CrewError, Result};
use crate::run::integrate::Done;

use super::forecast::{self, Among, Focus};
use super::integrate::Event;
use super::{Context, runs};

pub struct Request {
    /// The branch to integrate every pass into (default: the branch each was cut from).
    pub into: Option<String>,
    pub squash: bool,
    /// The invocation layer of the routing config (`--set`).
    pub invocation: Invocation,
    /// Only say the order and what would be held back; integrate nothing.
    pub dry_run: bool,
    /// Land each through this fleet remote (see [`super::integrate::Request::remote`]).
    pub remote: Option<String>,
}

/// Why a pass did not land.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Why {
    /// The forecast held it back.
    Held(Hold),
    /// An integrate before it refused, and the rest were not tried.
    NotReached,
}

/// A pass that did not land.
#[derive(Debug, Clone)]
pub struct Left {
    pub run: String,
    pub task: String,
    pub why: Why,
}

/// What `integrate --all` came to.
pub struct All {
    /// The passes in the order they are tried.
    pub order: Vec<String>,
    /// What landed, in order.
    pub landed: Vec<Done>,
    /// The run whose integrate refused, and its refusal: where it stopped.
    pub refused: Option<(String, CrewError)>,
    /// The passes that did not land (the refused one aside): those not reached, then
    /// those the forecast held back (under `--dry-run`: those it would hold back).
    pub left: Vec<Left>,
    /// Nothing was integrated (`--dry-run`).
    pub dry_run: bool,
}

/// What `integrate --all` prints as data: the order tried, what landed (each as
/// `integrate RUN` prints it), the refusal that stopped it, and what is left and why.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct Output<'a> {
    pub dry_run: bool,
    /// The passes in the order tried.
    pub order: &'a [String],
    /// Each as `integrate RUN` prints it.
    pub landed: Vec<super::integrate::Output<'a>>,
    pub refused: Option<RefusedOutput<'a>>,
    pub left: Vec<LeftOutput<'a>>,
}

/// The pass whose integrate refused, and its error.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct RefusedOutput<'a> {
    pub run: &'a str,
    #[schemars(with = "super::answer::ErrorJson")]
    pub error: serde_json::Value,
}

/// A pass that did not land, and why: `not-reached` (after the refusal),
/// `conflicts-with-runs` or `conflicts-with-target` (held back by the forecast).
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct LeftOutput<'a> {
    pub run: &'a str,
    pub task: &'a str,
    pub reason: &'static str,
    pub conflicts_with: &'a [String],
    pub conflicting_paths: &'a [String],
}

impl All {
    /// What `integrate --all` prints as data.
    pub fn output(&self) -> Output<'_> {
        Output {
            dry_run: self.dry_run,
            order: &self.order,
            landed: self.landed.iter().map(super::integrate::output).collect(),
            refused: self.refused.as_ref().map(|(run, error)| RefusedOutput {
                run,
                error: error.to_json(),
            }),
            left: self
                .left
                .iter()
                .map(|left| {
                    let (reason, conflicts_with, conflicting_paths) = match &left.why {
                        Why::NotReached => ("not-reached", &[][..], &[][..]),
                        Why::Held(Hold::Target { paths, .. }) => {
                            ("conflicts-with-target", &[][..], &paths[..])
                        }
                        Why::Held(Hold::Clashes(with)) => {
                            ("conflicts-with-runs", &with[..], &[][..])
                        }
                    };
                    LeftOutput {
                        run: &left.run,
                        task: &left.task,
                        reason,
                        conflicts_with,
                        conflicting_paths,
                    }
                })
                .collect(),
        }
    }

    /// How it came out: the refusal that stopped it, else `merge-conflict` when the
    /// forecast held a pass back (not under `--dry-run`), else ok.
    pub fn status(&self) -> super::answer::Status {
        use super::answer::Status;
        let held: Vec<String> = (self.left.iter())
            .filter_map(|l| match &l.why {
                Why::Held(hold) => Some(format!("{} ({})", l.run, hold.describe())),
                Why::NotReached => None,
            })
            .collect();
        if let Some((_, error)) = &self.refused {
            Status::Failed(error.clone())
        } else if !held.is_empty() && !self.dry_run {
            let passes = crate::view::human::count(held.len(), "pass", "passes");
            Status::Failed(
                CrewError::new(
                    crate::error::ErrorCode::MergeConflict,
                    format!("{passes} held back: the forecast sees a conflict"),
                )
                .with_details(held)
                .hinted("`git crew show RUN` names what a pass conflicts with; `git crew retry RUN` dispatches its task again from the new tip, or merge its branch by hand and `git crew integrate RUN` records it"),
            )
        } else {
            Status::Ok
        }
    }
}

/// What `integrate` prints as data: one run, or every pass (`--all`).
#[derive(serde::Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Either<'a> {
    One(super::integrate::Output<'a>),
    All(Output<'a>),
}

/// Integrates every pass awaiting integration in the forecast's order; `observe` hears
/// of each integrate's steps and warnings. A refusal is not an error here: it ends the
/// list, and [`All::refused`] carries it.
pub fn integrate_all(ctx: &Context, request: &Request, observe: &dyn Fn(Event<'_>)) -> Result<All> {
    if let Some(into) = &request.into
        && !crate::git::refs::is_branch_name(into)
    {
        return Err(CrewError::new(
            crate::error::ErrorCode::BadBranch,
            format!("`{into}` is not a valid branch name"),
        ));
    }
    let store = runs::settled(ctx)?;
    let forecasts = forecast::forecast(
        ctx,
        &store,
        &[],
        Among::Passes,
        Focus::All,
        request.into.as_deref(),
    )?;
    let queue = forecasts.queue();
    let mut all = All {
        order: queue.order.clone(),
        landed: Vec::new(),
        refused: None,
        left: Vec::new(),
        dry_run: request.dry_run,
    };
    let mut not_reached = Vec::new();
    for (i, run) in queue.order.iter().enumerate() {
        if request.dry_run {
            break;
        }
        let one = super::integrate::Request {
            run: run.clone(),
            into: request.into.clone(),
            squash: request.squash,
            force_unverified: false,
            invocation: request.invocation.clone(),
            dry_run: false,
            remote: request.remote.clone(),
        };
        match super::integrate::integrate(ctx, &one, observe) {
            Ok(done) => all.landed.push(done),
            Err(refusal) => {
                all.refused = Some((run.clone(), refusal));
                not_reached.extend(queue.order[i + 1..].iter().cloned());
                break;
            }
        }
    }
    let left: Vec<(String, Why)> = (not_reached.into_iter())
        .map(|run| (run, Why::NotReached))
        .chain(queue.held.into_iter().map(|h| (h.run, Why::Held(h.hold))))
        .collect();
    let runs: Vec<&str> = left.iter().map(|(run, _)| run.as_str()).collect();
    let tasks = store.tasks_of(&runs);
    all.left = left
        .into_iter()
        .map(|(run, why)| Left {
            task: (tasks.iter())
                .find(|(r, _)| *r == run)
                .map(|(_, t)| t.clone())
                .unwrap_or_default(),
            run,
            why,
        })
        .collect();
    Ok(all)
}
