//! `wave dispatch` and `wave status`, and what they and `summary` share: a plan's wave,
//! its facts, every ready task of it dispatched at once (all or nothing), and whether it
//! is complete, task by task.

use crate::core::flight::{Enforcement, Invocation};
use crate::core::plan::{Gate, Plan, TaskStatus, Verdict};
use crate::core::summary::{self, At, Summary, WaveFacts};
use crate::core::wave::{self, FollowOn, Skipped};
use crate::error::{CrewError, ErrorCode, Result};
use crate::run::wave::WaveFailure;

use super::Context;
use super::dispatch::Dispatched;
use super::runs::Access;

/// Exit 3 when the plan has no task in `wave`, naming the waves it has.
pub fn wave_tasks(plan: &Plan, wave: u32) -> Result<()> {
    if plan.tasks.iter().any(|t| t.wave == wave) {
        Ok(())
    } else {
        Err(CrewError::new(
            ErrorCode::WaveNotFound,
            format!("plan {} has no task in wave {wave}", plan.id),
        )
        .hinted(format!(
            "its waves: {}",
            plan.waves()
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        )))
    }
}

/// What the summary and `wave status` say of wave `wave`, gathered
/// (`run::wave::facts`): from the runs as they are for a command that reads, settled
/// first for one that acts.
pub fn gather(
    ctx: &Context,
    plan: &Plan,
    wave: u32,
    access: Access,
) -> Result<(WaveFacts, Vec<TaskStatus>, Vec<FollowOn>)> {
    let flight = super::flight::resolve(ctx, &Invocation::default())?.flight;
    let store = access.store(ctx)?;
    crate::run::wave::facts(ctx.repo()?, &store, plan, &flight, wave, access.cache())
        .map_err(CrewError::from)
}

pub struct StatusRequest {
    pub wave: u32,
    /// The plan (default: the only one).
    pub plan: Option<String>,
}

/// Where a wave stands.
pub struct WaveStatus {
    pub plan: String,
    pub wave: u32,
    /// Every task of the wave: its derived status, and its run's.
    pub tasks: Vec<TaskOfWave>,
    /// The gate that closes the wave, with its latest verdict.
    pub closing: Option<(Gate, Option<Verdict>)>,
    /// What the wave's runs deferred, as candidate follow-ons.
    pub follow_ons: Vec<FollowOn>,
    /// The completion summary.
    pub summary: Summary,
    /// Whether `summary.at` asks for the completion summary to be shown.
    pub show_summary: bool,
    /// Why the wave is not complete; `None` when it is.
    pub incomplete_because: Option<String>,
}

/// A task of the wave: its derived status, and its run with the run's status.
pub struct TaskOfWave {
    pub status: TaskStatus,
    pub run: Option<String>,
    pub run_status: String,
}

impl WaveStatus {
    /// What `wave status` prints as data: the completion summary only when `summary.at`
    /// asks for it.
    pub fn output(&self) -> crate::view::output::WaveStatusOutput<'_> {
        use crate::view::output::{WaveGateOutput, WaveStatusOutput, WaveTaskOutput};
        WaveStatusOutput {
            plan: &self.plan,
            wave: self.wave,
            complete: self.incomplete_because.is_none(),
            incomplete_because: self.incomplete_because.as_deref(),
            tasks: self
                .tasks
                .iter()
                .map(|t| WaveTaskOutput {
                    task: &t.status.task,
                    wave: t.status.wave,
                    status: t.status.status,
                    blockers: &t.status.blockers,
                    run: t.run.as_deref(),
                    run_status: &t.run_status,
                })
                .collect(),
            gate: self.closing.as_ref().map(|(g, v)| WaveGateOutput {
                gate: &g.id,
                verdict: v.as_ref(),
            }),
            follow_ons: &self.follow_ons,
            summary: self.show_summary.then_some(&self.summary),
        }
    }
}

/// Reports the wave (exit 3 when the plan has no task in it). A read: the runs as they
/// are; a wave whose closing gate has no verdict is incomplete.
pub fn status(ctx: &Context, req: &StatusRequest) -> Result<WaveStatus> {
    let wave = req.wave;
    let plan = super::plans::load(ctx, req.plan.as_deref())?;
    wave_tasks(&plan, wave)?;
    let (facts, statuses, follow_ons) = gather(ctx, &plan, wave, Access::Read)?;
    let summary = summary::summarize(&facts, At::Completion);
    let show_summary = super::flight::resolve(ctx, &Invocation::default())?
        .flight
        .summary
        .at
        .contains(&At::Completion);
    let incomplete_because = wave::incomplete_because(&statuses, summary.complete, &summary.why);
    let tasks = statuses
        .into_iter()
        .zip(facts.tasks)
        .map(|(status, task)| TaskOfWave {
            status,
            run: task.run,
            run_status: task.status,
        })
        .collect();
    Ok(WaveStatus {
        plan: plan.id,
        wave,
        tasks,
        closing: facts.closing,
        follow_ons,
        summary,
        show_summary,
        incomplete_because,
    })
}

pub struct Request {
    pub wave: u32,
    /// The plan (default: the only one).
    pub plan: Option<String>,
    /// Decide every task's run; start nothing.
    pub dry_run: bool,
    /// The invocation layer of the routing config, for every run of the wave.
    pub invocation: Invocation,
}

/// What a wave dispatch did.
pub struct Waved {
    pub plan: String,
    pub wave: u32,
    /// The tasks left out, and why.
    pub skipped: Vec<Skipped>,
    pub went: Went,
}

pub enum Went {
    /// No task of the wave was ready.
    Nothing,
    /// `dry_run`: each ready task's dispatch decision.
    Planned(Vec<Dispatched>),
    /// Every ready task started: each dispatch, the runs as (run, task), and the
    /// dispatch summary when `summary.at` asks for it.
    Started {
        dispatched: Vec<Dispatched>,
        runs: Vec<(String, String)>,
        summary: Option<Summary>,
    },
}

impl Waved {
    /// What each dispatch of the wave carries as its warnings ([`Dispatched::said`]), in
    /// the order of the dispatches.
    pub fn said(&self) -> Vec<Vec<String>> {
        match &self.went {
            Went::Nothing => Vec::new(),
            Went::Planned(each)
            | Went::Started {
                dispatched: each, ..
            } => each.iter().map(Dispatched::said).collect(),
        }
    }

    /// What `wave dispatch` prints as data: each task's dispatch output (as `dispatch`
    /// prints it, carrying `said`'s warnings), the tasks left out, and the summary.
    pub fn output<'a>(
        &'a self,
        said: &'a [Vec<String>],
    ) -> crate::view::output::WaveDispatchOutput<'a> {
        use crate::view::output::WaveDispatchOutput;
        let each = |dispatched: &'a [Dispatched]| {
            dispatched
                .iter()
                .zip(said)
                .map(|(d, warnings)| d.output(warnings))
                .collect()
        };
        match &self.went {
            Went::Nothing => WaveDispatchOutput::Started {
                plan: &self.plan,
                wave: self.wave,
                dispatched: Vec::new(),
                skipped: &self.skipped,
                summary: None,
            },
            Went::Planned(planned) => WaveDispatchOutput::Planned {
                plan: &self.plan,
                wave: self.wave,
                dry_run: true,
                planned: each(planned),
                skipped: &self.skipped,
            },
            Went::Started {
                dispatched,
                summary,
                ..
            } => WaveDispatchOutput::Started {
                plan: &self.plan,
                wave: self.wave,
                dispatched: each(dispatched),
                skipped: &self.skipped,
                summary: summary.as_ref(),
            },
        }
    }
}

/// Dispatches every ready task of the wave at once: refused (exit 4), with nothing
/// started, when a gate holds the wave under `strict` or two write scopes overlap (or
/// one overlaps a run in flight); when one fails to start, those started are rolled back.
pub fn dispatch(ctx: &Context, req: &Request) -> Result<Waved> {
    let wave = req.wave;
    let plan = super::plans::load(ctx, req.plan.as_deref())?;
    wave_tasks(&plan, wave)?;
    let flight = super::flight::resolve(ctx, &req.invocation)?.flight;
    let (statuses, _) = super::plans::derive(ctx, &plan, &flight, Access::Act)?;
    let in_wave: Vec<&TaskStatus> = statuses.iter().filter(|s| s.wave == wave).collect();
    // Ready tasks (under `warn`, also those only a gate holds), except a task whose run
    // passed and waits to be integrated.
    let finished = super::runs::open(ctx)?
        .finished()
        .map_err(CrewError::from)?;
    let waiting = |task: &str| wave::awaiting_integration(&finished, task);
    let wave::Selection {
        ready,
        skipped,
        held,
    } = wave::select(&in_wave, flight.gates.enforce, &waiting);
    // A gate holds the whole wave: under `strict` nothing of it goes.
    if !held.is_empty() && flight.gates.enforce == Enforcement::Strict {
        return Err(CrewError::new(
            ErrorCode::BlockedByGate,
            format!("wave {wave} is held by a gate: nothing was dispatched"),
        )
        .with_details(held));
    }
    let waved = |went| Waved {
        plan: plan.id.clone(),
        wave,
        skipped: skipped.clone(),
        went,
    };
    if ready.is_empty() {
        return Ok(waved(Went::Nothing));
    }
    // Up front, before anything starts: no two write scopes of the wave may overlap, nor
    // overlap a run in flight.
    let live = super::runs::settled(ctx)?.live().map_err(CrewError::from)?;
    let tasks: Vec<&crate::core::plan::Task> =
        ready.iter().filter_map(|s| plan.task(&s.task)).collect();
    let clashes = wave::clashes_with(&tasks, &live);
    if !clashes.is_empty() {
        return Err(CrewError::new(
            ErrorCode::ScopeOverlap,
            format!("wave {wave} cannot run at once: write scopes overlap; nothing was dispatched"),
        )
        .with_details(clashes));
    }
    let request_for = |task: &str, dry_run: bool| super::dispatch::Request {
        task: task.to_string(),
        dry_run,
        queue: true,
        plan: Some(plan.id.clone()),
        invocation: req.invocation.clone(),
        ..Default::default()
    };
    let names: Vec<String> = ready.iter().map(|s| s.task.clone()).collect();
    let fail_second = crate::sys::failpoint::fails_at("wave-start-second");
    let mut start = |i: usize, task: &str, dry_run: bool| {
        if !dry_run && i == 1 && fail_second {
            return Err(CrewError::internal("a failure injected for tests"));
        }
        super::dispatch::dispatch(ctx, &request_for(task, dry_run)).map(|dispatched| {
            let run = dispatched.started.record.as_ref().map(|r| r.run.clone());
            // What a started run's dispatch has to say is said as it starts, even when a
            // later task fails and the wave is rolled back.
            if run.is_some() {
                let said = dispatched.warnings.iter().chain(&dispatched.split_advice);
                for warning in said {
                    ctx.warn(warning);
                }
            }
            (dispatched, run)
        })
    };
    let store = super::runs::settled(ctx)?;
    let outcome =
        crate::run::wave::start_all(&store, ctx.workdir()?, &names, req.dry_run, &mut start);
    let started = match outcome {
        Ok(started) => started,
        Err(WaveFailure::Planning { task, error }) => {
            return Err(CrewError {
                message: format!(
                    "task {task} of wave {wave} cannot be dispatched: {}; nothing was dispatched",
                    error.message
                ),
                ..error
            });
        }
        Err(WaveFailure::Starting {
            task,
            error,
            rolled_back,
        }) => {
            let mut details = error.details.clone();
            details.push(format!(
                "rolled back (abandoned, branches kept): {rolled_back}"
            ));
            return Err(CrewError {
                message: format!(
                    "dispatching task {task} of wave {wave}: {}; the wave was rolled back",
                    error.message
                ),
                details,
                ..error
            });
        }
    };
    if req.dry_run {
        return Ok(waved(Went::Planned(started.outputs)));
    }
    let (mut facts, _, _) = gather(ctx, &plan, wave, Access::Act)?;
    // What was just started, whether or not a fast worker has already finished.
    wave::mark_started(&mut facts, &started.runs);
    // `summary.at` says whether the dispatch summary is printed.
    let summary = (flight.summary.at)
        .contains(&At::Dispatch)
        .then(|| summary::summarize(&facts, At::Dispatch));
    Ok(waved(Went::Started {
        dispatched: started.outputs,
        runs: started.runs,
        summary,
    }))
}
