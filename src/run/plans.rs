//! Plans on disk and the facts their derived status needs: the plan file
//! (`.crew/plans/<plan>.toml`), the runs in flight, the runs integrated into HEAD
//! (`docs/state/crew.json` in HEAD's tree), and the gates' verdicts
//! (`refs/notes/crew-gates`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::run::error::{Context, Result};

use crate::core::flight::{Diagnostic, Flight};
use crate::core::integrate::STATE_FILE;
use crate::core::plan::{self, Facts, Plan, Verdict};
use crate::git::notes;
use crate::state::runs::RunStore;

/// Why a plan could not be had.
#[derive(Debug)]
pub enum PlanError {
    NotFound(String),
    /// `--plan` left out where the repository does not have exactly one plan.
    Ambiguous(Vec<String>),
    Invalid(Vec<Diagnostic>),
}

pub fn plans_dir(workdir: &Path) -> PathBuf {
    workdir.join(".crew").join("plans")
}

/// The plans of the repository, by name.
pub fn names(workdir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(plans_dir(workdir))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            name.strip_suffix(".toml").map(String::from)
        })
        .collect();
    out.sort();
    out
}

/// Every plan's name and text, by name; a plan file that cannot be read is left out.
pub fn texts(workdir: &Path) -> Vec<(String, String)> {
    names(workdir)
        .into_iter()
        .filter_map(|name| {
            let path = workdir.join(crate::core::layout::plan_file(&name));
            Some((name, std::fs::read_to_string(path).ok()?))
        })
        .collect()
}

/// Loads plan `name`, or the only plan when `name` is `None`.
pub fn load(workdir: &Path, name: Option<&str>) -> Result<Plan, PlanError> {
    let name = match name {
        Some(name) => name.to_string(),
        None => {
            let all = names(workdir);
            match all.as_slice() {
                [only] => only.clone(),
                _ => return Err(PlanError::Ambiguous(all)),
            }
        }
    };
    let origin = crate::core::layout::plan_file(&name);
    let path = workdir.join(&origin);
    let text = std::fs::read_to_string(&path).map_err(|_| {
        PlanError::NotFound(format!("no plan {name} (looked for {})", path.display()))
    })?;
    plan::parse(&name, &origin, &text).map_err(PlanError::Invalid)
}

/// The blob key a gate's verdict history hangs on.
pub fn gate_key(plan: &str, gate: &str) -> String {
    format!("crew-gate:{plan}/{gate}")
}

/// Every verdict recorded for a gate, oldest first.
pub fn history(repo: &crate::git::Repository, plan: &str, gate: &str) -> Result<Vec<Verdict>> {
    let key = notes::key_id(repo, &gate_key(plan, gate))?;
    let text = notes::read(repo, notes::GATES, key)?.unwrap_or_default();
    let mut rows: Vec<Verdict> = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    rows.sort_by(|a, b| crate::core::stamp::cmp(&a.at, &b.at));
    Ok(rows)
}

/// The latest verdict of every gate of `plan` that has one.
pub fn verdicts(repo: &crate::git::Repository, plan: &Plan) -> Result<HashMap<String, Verdict>> {
    let mut out = HashMap::new();
    for gate in &plan.gates {
        if let Some(last) = history(repo, &plan.id, &gate.id)?.pop() {
            out.insert(gate.id.clone(), last);
        }
    }
    Ok(out)
}

/// Records a verdict: on the gate's blob (its history) and on the commit it was measured
/// at, in one update of the notes ref.
pub fn record_verdict(
    repo: &crate::git::Repository,
    verdict: &Verdict,
    measured_at: crate::git::ObjectId,
) -> Result<()> {
    let key = notes::key_blob(repo, &gate_key(&verdict.plan, &verdict.gate))?;
    let line = serde_json::to_string(verdict)?;
    notes::edit(
        repo,
        notes::GATES,
        "crew: record a gate verdict",
        |current| {
            let mut edits = Vec::new();
            for object in [key, measured_at] {
                let mut text = current.get(object)?.unwrap_or_default();
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                // After every verdict the history holds: the latest recorded is the
                // latest by `at`, on every clone.
                text.push_str(&crate::core::stamp::after(&text, &line));
                text.push('\n');
                edits.push((object, text));
            }
            Ok(edits)
        },
    )?;
    Ok(())
}

/// The runs integrated into HEAD, by task, from `docs/state/crew.json` in HEAD's tree.
pub fn integrated(repo: &crate::git::Repository) -> Result<HashMap<String, String>> {
    let Some(head) = crate::git::refs::head_id(repo) else {
        return Ok(HashMap::new());
    };
    let Some(bytes) = crate::git::merge::read_path(repo, head, STATE_FILE)? else {
        return Ok(HashMap::new());
    };
    let state: serde_json::Value =
        serde_json::from_slice(&bytes).with_context(|| format!("{STATE_FILE} in HEAD"))?;
    let mut out = HashMap::new();
    for run in state["runs"].as_array().into_iter().flatten() {
        if let (Some(task), Some(id)) = (run["task"].as_str(), run["run"].as_str()) {
            out.insert(task.to_string(), id.to_string());
        }
    }
    Ok(out)
}

/// Everything a plan's derived status is computed from.
pub fn facts(
    repo: &crate::git::Repository,
    store: &RunStore,
    plan: &Plan,
    flight: &Flight,
) -> Result<Facts> {
    let live = store.live()?.into_iter().map(|r| (r.task, r.run)).collect();
    Ok(Facts {
        live,
        done: integrated(repo)?,
        verdicts: verdicts(repo, plan)?,
        enforce: flight.gates.enforce,
        on_fail: flight.gates.on_fail,
    })
}

/// Days since the plan file last changed: its last commit, or its modification time
/// when it has uncommitted changes or none.
pub fn stale_days(workdir: &Path, plan: &str) -> Option<i64> {
    let rel = crate::core::layout::plan_file(plan);
    let dirty = crate::git::worktree::path_is_dirty(workdir, &rel);
    let now = crate::sys::clock::now_millis() as i64 / 1000;
    let changed = if dirty {
        std::fs::metadata(workdir.join(&rel))
            .ok()?
            .modified()
            .ok()?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?
            .as_secs() as i64
    } else {
        crate::git::worktree::last_commit_time(workdir, &rel)?
    };
    Some((now - changed).max(0) / 86_400)
}

/// Why a plan's task cannot be dispatched.
#[derive(Debug)]
pub enum TaskRefusal {
    /// The plan has no such task; the closest id, if one is close.
    NotFound {
        plan: String,
        id: String,
        suggestion: Option<String>,
    },
    /// A gate holds it under `gates.enforce = "strict"`.
    Held(crate::core::plan::Held),
}

/// A plan's task as a dispatch takes it, with what the lead should know.
pub struct ForDispatch {
    pub task: crate::core::plan::Task,
    /// A gate that holds it under `warn`, dependencies it goes ahead of, a stale plan.
    pub warnings: Vec<String>,
    /// Days since the plan file changed, when beyond `plans.stale_after_days`.
    pub stale_days: Option<i64>,
}

/// Task `id` of `plan` for a dispatch: the gates asked directly (a task that is done or
/// in flight has no blockers in its status, but a gate still holds a new run of it), its
/// unfinished dependencies and a stale plan file as warnings.
pub fn task_for_dispatch(
    repo: &crate::git::Repository,
    store: &RunStore,
    workdir: &Path,
    plan: &Plan,
    id: &str,
    flight: &Flight,
) -> Result<Result<ForDispatch, TaskRefusal>> {
    let Some(task) = plan.task(id).cloned() else {
        return Ok(Err(TaskRefusal::NotFound {
            plan: plan.id.clone(),
            id: id.to_string(),
            suggestion: crate::core::flight::did_you_mean(
                id,
                plan.tasks.iter().map(|t| t.id.as_str()),
            ),
        }));
    };
    let facts = facts(repo, store, plan, flight)?;
    let mut warnings = Vec::new();
    match crate::core::plan::gate_hold(plan, &task, &facts, "dispatched") {
        Ok(warning) => warnings.extend(warning),
        Err(held) => return Ok(Err(TaskRefusal::Held(held))),
    }
    let statuses = crate::core::plan::status(plan, &facts);
    for dep in statuses
        .iter()
        .filter(|s| s.task == id)
        .flat_map(|s| s.blockers.iter())
        .filter(|b| matches!(b, crate::core::plan::Blocker::Dependency { .. }))
    {
        warnings.push(format!("task {id} {dep}: dispatched ahead of it"));
    }
    let stale_days =
        stale_days(workdir, &plan.id).filter(|days| *days > flight.plans.stale_after_days);
    if let Some(days) = stale_days {
        warnings.push(format!(
            "plan {} has not changed for {days} days (plans.stale_after_days = {}): its assumptions may have expired",
            plan.id, flight.plans.stale_after_days
        ));
    }
    Ok(Ok(ForDispatch {
        task,
        warnings,
        stale_days,
    }))
}
