//! `dispatch`: a worker on a task in its own worktree, in the background, at once; and
//! what `retry` shares with it (a plan's task, the start, the base branch).

use std::path::PathBuf;

use crate::core::dispatch::{Flags, PromptSource, prompt_source, request};
use crate::core::flight::{Flight, Invocation};
use crate::core::plan::Plan;
use crate::core::scope::Role;
use crate::error::{CrewError, ErrorCode, Result};
use crate::run::dispatch::{self, Started};
use crate::run::plans::ForDispatch;
use crate::state::runs::RunStore;

use super::Context;

/// Where the task's prompt comes from.
pub enum Prompt {
    Text(String),
    /// A file (relative to the working directory): a regular file of at most 1 MiB.
    File(PathBuf),
}

#[derive(Default)]
pub struct Request {
    pub task: String,
    /// None: the plan task's `prompt` or `prompt_file`.
    pub prompt: Option<Prompt>,
    pub scope: Vec<String>,
    pub role: Option<Role>,
    pub verify: Option<String>,
    /// The revision to cut from (default HEAD).
    pub base: Option<String>,
    pub queue: bool,
    pub continue_until_pass: bool,
    /// The plan to take the task from.
    pub plan: Option<String>,
    pub size_h: Option<f64>,
    pub worker: Option<String>,
    /// Where transcripts go (relative to the working directory); "" disables them.
    pub transcripts: Option<String>,
    /// The invocation layer of the routing config.
    pub invocation: Invocation,
    /// Decide everything and create nothing.
    pub dry_run: bool,
    /// The fleet's remote to claim the task on first; none: `fleet.remote`, if set.
    pub remote: Option<String>,
}

/// A dispatch carried out, or only decided (`dry_run`, or a record-less plan).
pub struct Dispatched {
    pub started: Started,
    /// Everything the lead should hear: the plan's, the worktree's making, the ledger's
    /// advice to split the task.
    pub warnings: Vec<String>,
    /// Days since the plan file changed, when it is stale.
    pub stale_days: Option<i64>,
    /// How the standing worker's session is used (a started run of a worker).
    pub session_plan: Option<String>,
    /// The ledger's advice to split the task (a started run).
    pub split_advice: Option<String>,
}

impl Dispatched {
    /// What the front end says of a dispatch beside its output: the warnings, and for a
    /// started run the ledger's advice to split the task. A started run's output carries
    /// them too.
    pub fn said(&self) -> Vec<String> {
        let mut said = self.warnings.clone();
        if self.started.record.is_some() {
            said.extend(self.split_advice.clone());
        }
        said
    }

    /// What `dispatch` and `retry` print as data: the run started, or (a dry run) the run
    /// that would start; `warnings` are what it carries (see [`Dispatched::said`]).
    pub fn output<'a>(
        &'a self,
        warnings: &'a [String],
    ) -> crate::view::dispatch::DispatchOutput<'a> {
        use crate::view::dispatch::{DispatchOutput, Dispatched as Started, DryRun};
        let plan = &self.started.plan;
        match &self.started.record {
            None => {
                DispatchOutput::DryRun(DryRun::of(&plan.record, &plan.escalated_from, warnings))
            }
            Some(record) => DispatchOutput::Started(Box::new(Started {
                stale_days: self.stale_days,
                session_plan: self.session_plan.clone(),
                split_advice: self.split_advice.clone(),
                warnings,
                ..Started::of(record, &plan.escalated_from)
            })),
        }
    }
}

/// A task's size in worker-hours: a finite number above zero, up to 10,000 (a record must
/// read back); else what is wrong with it.
pub fn size_hours(hours: f64) -> std::result::Result<f64, String> {
    if hours.is_finite() && hours > 0.0 && hours <= 10_000.0 {
        Ok(hours)
    } else {
        Err(size_problem(&hours.to_string()))
    }
}

/// What is wrong with a size given as `text`.
pub fn size_problem(text: &str) -> String {
    format!("`{text}` is not a size: give worker-hours above zero, such as 2 or 0.5")
}

/// Dispatches the task (or decides it, for `dry_run`).
pub fn dispatch(ctx: &Context, req: &Request) -> Result<Dispatched> {
    let flight = super::flight::resolve(ctx, &req.invocation)?.flight;
    let repo = ctx.repo()?;
    let repo_dir = ctx.workdir()?.to_path_buf();
    let mut warnings: Vec<String> = Vec::new();
    let mut stale_days = None;
    let store = super::runs::settled(ctx)?;
    let from_plan = match &req.plan {
        Some(name) => {
            let (plan, found) = plan_task(ctx, &store, &flight, name, &req.task)?;
            warnings.extend(found.warnings);
            stale_days = found.stale_days;
            Some((plan, found.task))
        }
        None => None,
    };
    let task = from_plan.as_ref().map(|(_, t)| t);
    let (text, file) = match &req.prompt {
        Some(Prompt::Text(text)) => (Some(text.as_str()), None),
        Some(Prompt::File(file)) => (None, Some(file.as_path())),
        None => (None, None),
    };
    let prompt = match prompt_source(text, file, task) {
        PromptSource::Text(text) => text,
        PromptSource::FlagFile(file) => read_prompt(&ctx.cwd.join(file))?,
        PromptSource::TaskFile(file) => read_prompt(&repo_dir.join(file))?,
        PromptSource::Missing => {
            return Err(CrewError::new(
                ErrorCode::NoPrompt,
                format!("task {} of the plan has no prompt or prompt_file", req.task),
            ));
        }
    };
    let base_rev = req.base.clone().unwrap_or_else(|| "HEAD".into());
    // HEAD's commit is read in-process; any other revision is git's to resolve.
    let head = (req.base.is_none())
        .then(|| crate::git::refs::head_id(repo))
        .flatten();
    let base = match head {
        Some(id) => id.to_string(),
        None => crate::git::worktree::rev_parse(&repo_dir, &base_rev).map_err(|e| {
            CrewError::new(ErrorCode::BadBase, e.to_string())
                .hinted("--base takes a branch, tag or commit")
        })?,
    };
    let flags = Flags {
        base_ref: base_branch(repo, req.base.as_deref()),
        task: req.task.clone(),
        scope: req.scope.clone(),
        role: req.role,
        verify: req.verify.clone(),
        size_h: req.size_h,
        worker: req.worker.clone(),
        backend: req.invocation.backend.clone(),
        model: req.invocation.model.clone(),
        effort: req.invocation.effort.clone(),
        time_budget: req.invocation.time_budget.clone(),
        queue: req.queue,
        continue_until_pass: req.continue_until_pass,
        transcripts: req.transcripts.as_ref().map(|d| match d.is_empty() {
            true => PathBuf::new(),
            false => ctx.cwd.join(d),
        }),
    };
    let mut request = request(flags, prompt, from_plan.as_ref().map(|(p, t)| (p, t)));
    request.remote = req.remote.clone();
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

/// Task `task` of plan `name` as a dispatch takes it: refused when the plan or the task
/// is not there, or a gate holds it; with the warnings it carries (a stale plan).
pub fn plan_task(
    ctx: &Context,
    store: &RunStore,
    flight: &Flight,
    name: &str,
    task: &str,
) -> Result<(Plan, ForDispatch)> {
    let plan = super::plans::load(ctx, Some(name))?;
    let found = crate::run::plans::task_for_dispatch(
        ctx.repo()?,
        store,
        ctx.workdir()?,
        &plan,
        task,
        flight,
    )
    .map_err(CrewError::from)?
    .map_err(CrewError::from)?;
    Ok((plan, found))
}

/// Carries out (or, for `dry_run`, only decides) the dispatch `request` asks for, cut
/// from `base`: `dispatch` and `retry` alike.
pub fn start(
    ctx: &Context,
    store: &RunStore,
    flight: &Flight,
    request: &crate::core::dispatch::Request,
    (base, dry_run): (String, bool),
    mut warnings: Vec<String>,
    stale_days: Option<i64>,
) -> Result<Dispatched> {
    let repo = ctx.repo()?;
    let repo_dir = ctx.workdir()?.to_path_buf();
    let started = dispatch::start(repo, &repo_dir, store, flight, request, base, dry_run)
        .map_err(CrewError::from)?
        .map_err(CrewError::from)?;
    warnings.extend(started.warnings.iter().cloned());
    let (session_plan, split_advice) = match &started.record {
        Some(record) => (
            dispatch::session_plan(store, flight, record),
            crate::run::ledger::split_advice(repo, record),
        ),
        None => (None, None),
    };
    Ok(Dispatched {
        started,
        warnings,
        stale_days,
        session_plan,
        split_advice,
    })
}

/// A prompt file (`--prompt-file`, a plan task's `prompt_file`): a regular file of at
/// most 1 MiB.
fn read_prompt(path: &std::path::Path) -> Result<String> {
    let bytes = super::files::read_given(
        path,
        crate::core::layout::PROMPT_FILE_CAP,
        "the prompt file",
    )?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The branch a run is cut from: HEAD's branch, or `base` when it names a local branch.
pub fn base_branch(repo: &crate::git::Repository, base: Option<&str>) -> Option<String> {
    match base {
        None => crate::git::refs::head_branch(repo),
        Some(rev) => {
            let rev = rev.strip_prefix("refs/heads/").unwrap_or(rev);
            crate::git::refs::exists(repo, &format!("refs/heads/{rev}")).then(|| rev.to_string())
        }
    }
}
