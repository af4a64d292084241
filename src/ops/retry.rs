//! `retry`: the task of an ended run, dispatched again under the same fences, with
//! feedback on how the run went.

use std::path::{Path, PathBuf};

use crate::core::flight::Invocation;
use crate::core::record::RunRecord;
use crate::core::retry;
use crate::error::{CrewError, ErrorKind, Result};
use crate::state::runs::RunStore;

use super::dispatch::{Dispatched, base_branch, plan_task, start};
use super::{Context, runs};

pub struct Request {
    /// A run address (see [`runs::resolve`]).
    pub run: String,
    /// The lead's feedback (default: what was measured in the run).
    pub text: Option<String>,
    pub queue: bool,
    /// Routing for the new run (default: the old run's backend, model and budget).
    pub invocation: Invocation,
    pub dry_run: bool,
}

/// Dispatches the ended run's task again (or decides it, for `dry_run`); a live run is
/// refused (exit 4), a run with no seal is a failed check (exit 1).
pub fn retry(ctx: &Context, req: &Request) -> Result<Dispatched> {
    let repo = ctx.repo()?;
    let repo_dir = ctx.workdir()?.to_path_buf();
    let store = runs::settled(ctx)?;
    let run = runs::resolve(&store, &req.run)?;
    let mut old = runs::load(&store, &run)?;
    if let Some(why) = retry::refusal(&old, store.live_path(&run).exists()) {
        return Err(CrewError::new(ErrorKind::Refused, "run-in-flight", why).hinted(format!(
            "wait for it (`git crew wait {run}`), answer it if it asks (`git crew advise`), or stop it (`git crew abandon {run}`); then retry it"
        )));
    }
    // The fences are the ones dispatch sealed, never what the record says now.
    match crate::git::seal::read(repo, &run).map_err(CrewError::internal)? {
        Some(sealed) => {
            sealed.restore(&mut old);
        }
        None => {
            return Err(CrewError::check(
                "record-tampered",
                format!(
                    "run {run} has no seal (refs/crew/sealed/{run}): nothing vouches for its fences"
                ),
            )
            .hinted("dispatch the task afresh with `git crew dispatch`"));
        }
    }
    // The spend fence goes with the run too, unless this retry sets its own.
    let mut invocation = req.invocation.clone();
    invocation.max_cost = invocation
        .max_cost
        .or(old.max_cost_usd.map(|c| c.to_string()));
    invocation.max_tokens = (invocation.max_tokens).or(old.max_tokens.map(|t| t.to_string()));
    let flight = super::flight::resolve(ctx, &invocation)?.flight;
    let task_prompt = crate::state::run_files::task_prompt(&store.run_dir(&run)).map_err(|e| {
        CrewError::new(
            ErrorKind::NotFound,
            "prompt-not-found",
            format!("the prompt of run {run} cannot be read: {e}"),
        )
        .hinted("dispatch the task afresh with `git crew dispatch --prompt ...`")
    })?;
    let section = crate::run::prompt::retry(&store, &old, req.text.as_deref());
    let mut warnings = Vec::new();
    let mut stale_days = None;
    // A plan's gates hold a retry as they hold a dispatch.
    if let Some(name) = &old.plan {
        let (_, found) = plan_task(ctx, &store, &flight, name, &old.task)?;
        warnings.extend(found.warnings);
        stale_days = found.stale_days;
    }
    let overrides = retry::Overrides {
        backend: req.invocation.backend.clone(),
        model: req.invocation.model.clone(),
        effort: req.invocation.effort.clone(),
        time_budget: req.invocation.time_budget.clone(),
        queue: req.queue,
    };
    let request = retry::request(
        &old,
        retry::prompt(&task_prompt, &section),
        base_branch(repo, None),
        transcripts(&store, &old),
        overrides,
    );
    let base = crate::git::worktree::rev_parse(&repo_dir, "HEAD").map_err(|e| {
        CrewError::usage("bad-base", e.to_string())
            .hinted("a retry is cut from HEAD: commit something first")
    })?;
    start(
        ctx,
        &store,
        &flight,
        &request,
        (base, req.dry_run),
        warnings,
        stale_days,
    )
}

/// Where the old run's transcript went, as a dispatch request says it: the default
/// (`None`), disabled (an empty path) or a folder of its own.
fn transcripts(store: &RunStore, record: &RunRecord) -> Option<PathBuf> {
    match &record.transcript {
        None => Some(PathBuf::new()),
        Some(path) if Path::new(path) == store.transcript_path(&record.task) => None,
        Some(path) => Path::new(path).parent().map(Path::to_path_buf),
    }
}
