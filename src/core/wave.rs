//! A wave, decided in pure code: which of its tasks start and which are held or skipped
//! (and why), which write scopes clash, what each task's line in the summary says, the
//! follow-ons its runs deferred, and whether it is complete. `run::wave` gathers the
//! plan's statuses, the runs and the routing, and applies the answer.

use serde::Serialize;

use super::flight::Enforcement;
use super::plan::{Blocker, Task, TaskStatus};
use super::record::RunRecord;
use super::routing::Route;
use super::scope::{Role, scopes_overlap};
use super::summary::{WaveFacts, WaveTask};

/// A follow-on a run of the wave deferred (`wave status`).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct FollowOn {
    pub task: String,
    pub run: Option<String>,
    pub deferred: String,
}

/// A task of the wave that a dispatch leaves out, and why (SPEC: `wave dispatch`).
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Skipped {
    pub task: String,
    pub status: crate::core::plan::TaskState,
    pub blockers: Vec<Blocker>,
    pub reason: String,
}

/// Which of a wave's tasks a dispatch starts.
#[derive(Debug, Clone, PartialEq)]
pub struct Selection<'a> {
    /// The tasks to start, in plan order.
    pub ready: Vec<&'a TaskStatus>,
    pub skipped: Vec<Skipped>,
    /// What the gates that hold the wave say; under `gates.enforce = "strict"` a held
    /// wave starts nothing.
    pub held: Vec<String>,
}

/// Ready tasks (under `warn`, also those only a gate holds) start, except a task whose
/// run passed and waits to be integrated (`waiting` names that run): a second run would
/// only compete with it.
pub fn select<'a>(
    in_wave: &[&'a TaskStatus],
    enforce: Enforcement,
    waiting: &dyn Fn(&str) -> Option<String>,
) -> Selection<'a> {
    let mut held: Vec<String> = in_wave
        .iter()
        .flat_map(|s| s.blockers.iter())
        .filter(|b| matches!(b, Blocker::Gate { .. }))
        .map(ToString::to_string)
        .collect();
    held.sort();
    held.dedup();
    let mut ready = Vec::new();
    let mut skipped = Vec::new();
    for s in in_wave {
        let only_gates = s.status == "blocked"
            && enforce == Enforcement::Warn
            && s.blockers.iter().all(|b| matches!(b, Blocker::Gate { .. }));
        let reason = if s.status != "ready" && !only_gates {
            match &s.run {
                Some(run) => format!("{} (run {run})", s.status),
                None => format!("{}: {}", s.status, s.blockers_text()),
            }
        } else if let Some(run) = waiting(&s.task) {
            format!("run {run} passed and waits to be integrated")
        } else {
            ready.push(*s);
            continue;
        };
        skipped.push(Skipped {
            task: s.task.clone(),
            status: s.status,
            blockers: s.blockers.clone(),
            reason,
        });
    }
    Selection {
        ready,
        skipped,
        held,
    }
}

/// What a run deferred, when it deferred anything ("none", "n/a" and the like do not
/// count).
pub fn follow_on(deferred: &str) -> Option<&str> {
    let deferred = deferred.trim();
    let nothing = deferred.is_empty()
        || ["none", "none.", "nothing", "n/a", "-"].contains(&deferred.to_lowercase().as_str());
    (!nothing).then_some(deferred)
}

/// A task's line in the wave's summary: from its run when it has one (the live or
/// integrated run, else its latest finished run, which waits to be integrated), else
/// from where the routing would send it.
pub fn task_line(
    task: &Task,
    status: &TaskStatus,
    record: Option<&RunRecord>,
    route: Option<&Route>,
    estimate_h: Option<f64>,
) -> WaveTask {
    let shown_status = match (&status.run, record) {
        (None, Some(r)) => format!(
            "{}, not integrated",
            r.outcome
                .map(|o| o.as_str().to_string())
                .unwrap_or_else(|| r.phase.as_str().to_string())
        ),
        _ => status.status.to_string(),
    };
    WaveTask {
        id: task.id.clone(),
        status: shown_status,
        run: record.map(|r| r.run.clone()),
        commit: record.and_then(|r| r.integration.as_ref().map(|i| i.commit.clone())),
        backend: match record {
            Some(r) => Some(r.backend.clone()),
            None => route.map(|r| r.backend.clone()),
        },
        model: match record {
            Some(r) => r.model.clone(),
            None => route.and_then(|r| r.model.clone()),
        },
        effort: match record {
            Some(r) => r.effort.clone(),
            None => route.and_then(|r| r.effort.clone()),
        },
        worker: task.worker.clone(),
        scope: task.scope.clone(),
        estimate_h,
        wall_s: record
            .filter(|r| r.finished_at.is_some())
            .map(|r| r.elapsed_s),
        usage: record.and_then(|r| r.usage.as_ref()).map(|u| u.total),
    }
}

/// Why a wave is not complete (`None`: it is): a task not done, else what its summary
/// says (a closing gate without a pass, say).
pub fn incomplete_because(
    statuses: &[TaskStatus],
    summary_complete: Option<bool>,
    summary_why: &str,
) -> Option<String> {
    let not_done = statuses.iter().filter(|s| s.status != "done").count();
    if not_done > 0 {
        Some(format!(
            "{not_done} of {} tasks are not done",
            statuses.len()
        ))
    } else if summary_complete != Some(true) {
        Some(summary_why.to_string())
    } else {
        None
    }
}

/// A task or a run, as far as its write scope goes.
#[derive(Debug, Clone)]
pub struct Writer<'a> {
    /// The task id, or `run <id> (task <task>)` for a run in flight.
    pub name: String,
    pub role: Role,
    pub scope: &'a [String],
}

impl Writer<'_> {
    fn writes(&self) -> bool {
        self.role.may_commit()
    }
}

/// Every pair whose write scopes overlap: two of the wave's `tasks`, or one of them and a
/// run in `flight`. Only roles that write count (a review's scope reserves nothing).
pub fn clashes(tasks: &[Writer], flight: &[Writer]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, a) in tasks.iter().enumerate().filter(|(_, t)| t.writes()) {
        for b in tasks[i + 1..].iter().filter(|t| t.writes()) {
            if let Some((x, y)) = scopes_overlap(a.scope, b.scope) {
                out.push(format!("{} `{x}` overlaps {} `{y}`", a.name, b.name));
            }
        }
        for run in flight.iter().filter(|r| r.writes()) {
            if let Some((x, y)) = scopes_overlap(a.scope, run.scope) {
                out.push(format!(
                    "{} `{x}` overlaps `{y}` of in-flight {}",
                    a.name, run.name
                ));
            }
        }
    }
    out
}

/// The run of `task` that passed and waits to be integrated, if its latest finished run
/// did: a second run would only compete with it.
pub fn awaiting_integration(finished: &[RunRecord], task: &str) -> Option<String> {
    finished
        .iter()
        .rev()
        .find(|r| r.task == task)
        .filter(|r| r.outcome == Some(super::record::Outcome::Pass) && r.integration.is_none())
        .map(|r| r.run.clone())
}

/// The scope clashes of the wave's `tasks` among themselves and with the runs in flight.
pub fn clashes_with(tasks: &[&Task], live: &[RunRecord]) -> Vec<String> {
    let tasks: Vec<Writer> = tasks
        .iter()
        .map(|t| Writer {
            name: t.id.clone(),
            role: t.role,
            scope: &t.scope,
        })
        .collect();
    let in_flight: Vec<Writer> = live
        .iter()
        .map(|r| Writer {
            name: format!("run {} (task {})", r.run, r.task),
            role: r.role,
            scope: &r.scope,
        })
        .collect();
    clashes(&tasks, &in_flight)
}

/// Marks the tasks a wave dispatch just started, given as (run, task), as in flight, whether or not
/// a fast worker has already finished.
pub fn mark_started(facts: &mut WaveFacts, started: &[(String, String)]) {
    for task in &mut facts.tasks {
        if let Some((run, _)) = started.iter().find(|(_, t)| *t == task.id) {
            task.status = "in-flight".into();
            task.run = Some(run.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w<'a>(name: &str, role: &str, scope: &'a [String]) -> Writer<'a> {
        Writer {
            name: name.to_string(),
            role: Role::parse(role).unwrap(),
            scope,
        }
    }

    #[test]
    fn writers_clash_with_writers_and_runs_in_flight_only() {
        let src = vec!["src/**".to_string()];
        let routes = vec!["src/routes/**".to_string()];
        let docs = vec!["docs/**".to_string()];
        let tasks = [
            w("a", "implement", &src),
            w("b", "cleanup", &routes),
            w("c", "implement", &docs),
            w("d", "review", &src),
        ];
        let flight = [
            w("run r1 (task x)", "implement", &docs),
            w("run r2 (task y)", "review", &routes),
        ];
        assert_eq!(
            clashes(&tasks, &flight),
            [
                "a `src/**` overlaps b `src/routes/**`",
                "c `docs/**` overlaps `docs/**` of in-flight run r1 (task x)",
            ]
        );
        assert!(clashes(&tasks[2..3], &[]).is_empty());
    }
}
