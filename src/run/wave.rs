//! A wave on disk: what its summary and status say (gathered from the plan's facts, the
//! runs, the ledger's estimates and the routing), and taking back what a wave dispatch
//! started when one of its tasks could not start.

use crate::run::error::Result;
use std::path::Path;

use crate::core::flight::Flight;
use crate::core::plan::{Plan, TaskStatus};
use crate::core::summary::WaveFacts;
use crate::core::wave::{self, FollowOn};
use crate::state::runs::RunStore;

/// What the summary and `wave status` say of wave `wave`: its facts, its tasks' statuses
/// and the follow-ons its runs deferred. Read from `store` as it is given; `cache` says
/// whether the ledger's estimates may be kept.
pub fn facts(
    repo: &crate::git::Repository,
    store: &RunStore,
    plan: &Plan,
    flight: &Flight,
    wave: u32,
    cache: super::ledger::Cache,
) -> Result<(WaveFacts, Vec<TaskStatus>, Vec<FollowOn>)> {
    let facts = super::plans::facts(repo, store, plan, flight)?;
    let statuses = crate::core::plan::status(plan, &facts);
    let estimates = super::ledger::estimates(repo, plan, cache)?;
    let verdicts = &facts.verdicts;
    let finished = store.finished()?;
    let mut tasks = Vec::new();
    let mut follow_ons = Vec::new();
    let mut mine = Vec::new();
    for status in statuses.iter().filter(|s| s.wave == wave) {
        let task = plan
            .task(&status.task)
            .expect("statuses come from the plan");
        // The live or integrated run; else the task's latest finished run, which waits
        // to be integrated (or to be tried again).
        let record = match &status.run {
            Some(run) => store.load(run).ok().flatten(),
            None => finished.iter().rev().find(|r| r.task == task.id).cloned(),
        };
        if let Some(deferred) = record
            .as_ref()
            .and_then(|r| r.footer.as_ref())
            .and_then(|f| wave::follow_on(&f.deferred))
        {
            follow_ons.push(FollowOn {
                task: task.id.clone(),
                run: record.as_ref().map(|r| r.run.clone()),
                deferred: deferred.to_string(),
            });
        }
        // Where no run says how the task runs, the routing says where it would go: the
        // same precedence as dispatch (the task's worker, its role's routing, the backend).
        let route = crate::core::routing::route(
            flight,
            &crate::core::routing::Ask {
                role: task.role.as_str(),
                worker: task.worker.as_deref(),
                ..Default::default()
            },
        )
        .ok();
        tasks.push(wave::task_line(
            task,
            status,
            record.as_ref(),
            route.as_ref(),
            estimates.get(&task.id).copied(),
        ));
        mine.push(status.clone());
    }
    let facts = WaveFacts {
        plan: plan.id.clone(),
        north_star: plan.north_star.clone(),
        wave,
        tasks,
        gated_by: plan
            .gates
            .iter()
            .filter(|g| g.gates_waves.contains(&wave))
            .map(|g| (g.clone(), verdicts.get(&g.id).cloned()))
            .collect(),
        closing: plan
            .closing_gate(wave)
            .map(|g| (g.clone(), verdicts.get(&g.id).cloned())),
    };
    Ok((facts, mine, follow_ons))
}

/// Why a wave dispatch stopped; every task was decided first, so nothing starts unless
/// all can.
#[derive(Debug)]
pub enum WaveFailure<E> {
    /// A task cannot be dispatched: nothing was started.
    Planning { task: String, error: E },
    /// A task failed to start: the runs started before it were abandoned again (their
    /// branches kept), named in `rolled_back` (`none` when there were none).
    Starting {
        task: String,
        error: E,
        rolled_back: String,
    },
}

/// What a wave dispatch did: each task's dispatch output (the dry runs' under
/// `dry_run`), and the runs it started as (run, task).
pub struct Started<T> {
    pub outputs: Vec<T>,
    pub runs: Vec<(String, String)>,
}

impl<T> Default for Started<T> {
    fn default() -> Self {
        Started {
            outputs: Vec::new(),
            runs: Vec::new(),
        }
    }
}

/// One task's dispatch: its output, and the run it started (none for a dry run).
pub type Dispatched<T> = (T, Option<String>);

/// How a wave starts one task: `(index, task, dry_run)` to its dispatch.
pub type Start<'a, T, E> = dyn FnMut(usize, &str, bool) -> Result<Dispatched<T>, E> + 'a;

/// Dispatches a wave's `tasks` all or nothing: each is decided first (`start(i, task,
/// true)`, a dry run), then — unless `dry_run` — each is started (`start(i, task,
/// false)`, which gives the dispatch's output and the run it started); when one fails to
/// start, those started before it are rolled back. Returns each task's dispatch output
/// (the dry runs' under `dry_run`).
pub fn start_all<T, E>(
    store: &RunStore,
    repo_dir: &Path,
    tasks: &[String],
    dry_run: bool,
    start: &mut Start<'_, T, E>,
) -> Result<Started<T>, WaveFailure<E>> {
    let mut planned = Vec::new();
    for (i, task) in tasks.iter().enumerate() {
        match start(i, task, true) {
            Ok((plan, _)) => planned.push(plan),
            Err(error) => {
                return Err(WaveFailure::Planning {
                    task: task.clone(),
                    error,
                });
            }
        }
    }
    if dry_run {
        return Ok(Started {
            outputs: planned,
            runs: Vec::new(),
        });
    }
    let mut started = Vec::new();
    let mut runs: Vec<(String, String)> = Vec::new();
    for (i, task) in tasks.iter().enumerate() {
        match start(i, task, false) {
            Ok((output, run)) => {
                started.push(output);
                runs.extend(run.map(|run| (run, task.clone())));
            }
            Err(error) => {
                let rolled_back = roll_back(store, repo_dir, &runs, task);
                return Err(WaveFailure::Starting {
                    task: task.clone(),
                    error,
                    rolled_back: if rolled_back.is_empty() {
                        "none".to_string()
                    } else {
                        rolled_back.join(", ")
                    },
                });
            }
        }
    }
    Ok(Started {
        outputs: started,
        runs,
    })
}

/// Abandons the runs a wave dispatch started before one of its tasks failed; returns
/// them as `run (task)`.
pub fn roll_back(
    store: &RunStore,
    repo_dir: &Path,
    started: &[(String, String)],
    failed: &str,
) -> Vec<String> {
    let mut out = Vec::new();
    for (run, task) in started {
        if let Ok(Some(record)) = store.load_live(run) {
            let why = format!("rolled back: the wave's task {failed} could not be dispatched");
            match super::reap::abandon(store, repo_dir, record, &why) {
                // Its ledger row not written is said with it: the roll-back is what reports.
                Ok(Some(super::reap::Ended {
                    not_filed: Some(row),
                    ..
                })) => out.push(format!("{run} ({task}; {row})")),
                Ok(_) => out.push(format!("{run} ({task})")),
                Err(_) => {}
            }
        }
    }
    out
}
