//! `ledger` (and `ledger stats`): the outcome rows, or what they teach of each agent
//! configuration; and `should-stop`: the two-failure rule applied to a (task, model).

use std::path::PathBuf;

use crate::core::flight::Invocation;
use crate::core::ledger::{ConfigStats, Row};
use crate::core::policy::{self, Decision, Verdict};
use crate::error::{CrewError, Result};

use super::Context;

pub struct Request {
    /// Only this task's rows.
    pub task: Option<String>,
    /// Learn from the rows instead of listing them.
    pub stats: bool,
}

/// What the ledger says.
pub enum Ledger {
    /// The rows, oldest first.
    Rows(Vec<Row>),
    /// What the rows teach of each agent configuration.
    Stats(Vec<ConfigStats>),
}

impl Ledger {
    /// What `ledger` prints as data: `{"rows": [...]}` or `{"stats": [...]}`.
    pub fn output(&self) -> crate::view::output::LedgerOutput<'_> {
        match self {
            Ledger::Rows(rows) => crate::view::output::LedgerOutput::Rows { rows },
            Ledger::Stats(stats) => crate::view::output::LedgerOutput::Stats { stats },
        }
    }
}

/// Reads the ledger; a read, so the stats' cache is used when current and never written.
pub fn ledger(ctx: &Context, req: &Request) -> Result<Ledger> {
    let repo = ctx.repo()?;
    let rows = |task: Option<&str>| crate::run::ledger::rows(repo, task).map_err(CrewError::from);
    if !req.stats {
        return Ok(Ledger::Rows(rows(req.task.as_deref())?));
    }
    let stats = match &req.task {
        Some(task) => crate::core::ledger::stats(&rows(Some(task))?),
        // A read: a current cache is used, none is written.
        None => {
            crate::run::ledger::learnt(repo, super::runs::Access::Read.cache())
                .map_err(CrewError::from)?
                .stats
        }
    };
    Ok(Ledger::Stats(stats))
}

pub struct ShouldStopRequest {
    pub task: String,
    /// The model, or `backend:<name>` for a backend that names none.
    pub model: String,
    /// The tier the model runs at (default: the tier of the backend using it).
    pub tier: Option<String>,
    /// Flight keys set for this decision: dotted.key=value.
    pub set: Vec<String>,
}

/// The rule's decision, and the human report written when it is `human-report`.
pub struct Stopped {
    pub verdict: Verdict,
    pub report: Option<PathBuf>,
}

impl Stopped {
    /// What `should-stop` prints as data, for `req`.
    pub fn output<'a>(
        &'a self,
        req: &'a ShouldStopRequest,
    ) -> crate::view::output::ShouldStopOutput<'a> {
        crate::view::output::ShouldStopOutput {
            decision: &self.verdict.decision,
            task: &req.task,
            model: &req.model,
            tier: &self.verdict.tier,
            failures: self.verdict.failures,
            next: self.verdict.next.as_ref(),
            report: self.report.as_deref(),
        }
    }

    /// Any decision but `continue` asks for the lead's attention (exit 5).
    pub fn status(&self) -> super::answer::Status {
        match self.verdict.decision {
            Decision::Continue => super::answer::Status::Ok,
            _ => super::answer::Status::Attention,
        }
    }
}

/// Applies the two-failure rule to the task's ledger rows, from its head note alone (the
/// older rows' failures and tiers are carried there). The flight config is read only
/// when the ledger alone cannot settle the answer (agents call this in loops); at the top
/// tier the human report is written under `.git/crew/reports/`, from every row.
pub fn should_stop(ctx: &Context, req: &ShouldStopRequest) -> Result<Stopped> {
    let repo = ctx.repo()?;
    let tally = crate::run::ledger::tally(repo, &req.task).map_err(CrewError::from)?;
    let settled = req
        .set
        .is_empty()
        .then(|| policy::settled_by_ledger(&tally, &req.model, req.tier.as_deref()))
        .flatten();
    let verdict = match settled {
        Some(verdict) => verdict,
        None => {
            let invocation = Invocation {
                set: req.set.clone(),
                ..Invocation::default()
            };
            policy::should_stop(
                &tally,
                &super::flight::resolve(ctx, &invocation)?.flight,
                &req.model,
                req.tier.as_deref(),
            )
        }
    };
    let report = if verdict.decision == Decision::HumanReport {
        let rows = crate::run::ledger::rows(repo, Some(&req.task)).map_err(CrewError::from)?;
        let state_dir = crate::git::repo::state_dir(repo);
        let report = policy::human_report(&req.task, &req.model, &rows);
        Some(
            crate::state::reports::file(&state_dir, &req.task, &report).ok_or_else(|| {
                CrewError::internal(format!(
                    "cannot write the human report of task {}",
                    req.task
                ))
            })?,
        )
    } else {
        None
    };
    Ok(Stopped { verdict, report })
}
