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
