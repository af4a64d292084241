//! What the run-reading commands share: opening the run store, reaping runs whose
//! supervisor died, and the run result as SPEC §2 prints it.

use serde_json::Value;

use super::context::CommandContext;
use super::error::{CrewError, ErrorKind, Result};
use crate::core::record::RunRecord;
use crate::run::supervisor;
use crate::state::runs::RunStore;

/// The run store of the current repository, as it is.
pub fn open(ctx: &CommandContext) -> Result<RunStore> {
    Ok(RunStore::new(&crate::git::repo::state_dir(ctx.repo()?)))
}

/// The run store, settled first: runs whose supervisor died are filed, and queued runs
/// start where slots are free (`run::queue::settle`). Every command that reports or acts
/// on live runs opens it this way.
pub fn settled(ctx: &CommandContext) -> Result<RunStore> {
    let store = open(ctx)?;
    crate::run::queue::settle(&store, ctx.workdir()?).map_err(CrewError::internal)?;
    Ok(store)
}

/// The parser of every RUN argument: a run id as dispatch makes them, or a usage error
/// (exit 2) — a run id is never a path.
pub fn run_id(text: &str) -> std::result::Result<String, String> {
    if crate::core::record::is_run_id(text) {
        Ok(text.to_string())
    } else {
        Err(format!(
            "`{text}` is not a run id (they look like 20261202-101500-1a2b; `git crew status` lists them)"
        ))
    }
}

/// One run, live or finished; exit 3 when there is none.
pub fn load(store: &RunStore, run: &str) -> Result<RunRecord> {
    store
        .load(run)
        .map_err(
            |err| match err.downcast_ref::<crate::state::runs::Unreadable>() {
                Some(u) => CrewError::new(ErrorKind::Refused, "run-unreadable", u.to_string())
                    .hinted("`git crew doctor` reports it; restore or remove the file by hand"),
                None => CrewError::internal(err),
            },
        )?
        .ok_or_else(|| {
            CrewError::new(
                ErrorKind::NotFound,
                "run-not-found",
                format!("no run {run}"),
            )
            .hinted("`git crew status` lists the runs")
        })
}

/// The run result of SPEC §2 (never the transcript).
pub fn result_json(record: &RunRecord) -> Value {
    let mut value = serde_json::to_value(record).unwrap_or(Value::Null);
    if record.finished_at.is_none() {
        value["elapsed_s"] =
            supervisor::elapsed_s(&record.started_at, crate::sys::clock::now_millis()).into();
    }
    value
}

/// One line per run for people.
pub fn result_line(record: &RunRecord) -> String {
    let elapsed = if record.finished_at.is_none() {
        supervisor::elapsed_s(&record.started_at, crate::sys::clock::now_millis())
    } else {
        record.elapsed_s
    };
    format!(
        "{}  {:<10} {:<14} {:<12} {}s/{}s  {}",
        record.run,
        record.task,
        record.phase.as_str(),
        record.backend,
        elapsed,
        record.budget_s,
        record.decision.as_deref().unwrap_or("")
    )
}

/// A run in full for people: fences, phase, attempts, footer, verify, decision.
pub fn result_block(record: &RunRecord) -> String {
    let mut out = vec![
        format!(
            "run {} (task {}, role {})",
            record.run, record.task, record.role
        ),
        format!(
            "phase {}{}, attempts {}",
            record.phase.as_str(),
            record
                .outcome
                .map(|o| format!(
                    " ({})",
                    serde_json::to_value(o)
                        .unwrap_or_default()
                        .as_str()
                        .unwrap_or_default()
                ))
                .unwrap_or_default(),
            record.attempts
        ),
        format!(
            "backend {} model {} session {}",
            record.backend,
            record.model.as_deref().unwrap_or("-"),
            record.session.as_deref().unwrap_or("-")
        ),
        format!("branch {} in {}", record.branch, record.worktree),
        format!("scope {}", record.scope.join(", ")),
        format!("budget {}s, deadline {}", record.budget_s, record.deadline),
    ];
    if let Some(decision) = &record.decision {
        out.push(format!("decision: {decision}"));
    }
    if let Some(verify) = &record.verify {
        out.push(format!(
            "verify `{}`: reward {} ({})",
            verify.command,
            verify.reward,
            if verify.passed { "pass" } else { "fail" }
        ));
    }
    if let Some(help) = &record.needs_help {
        out.push(format!(
            "NEEDS-HELP: {}\n  tried: {}\n  options: {}\n  leaning: {}\n  cost-if-wrong: {}",
            help.question, help.tried, help.options, help.leaning, help.cost_if_wrong
        ));
    }
    if let Some(footer) = &record.footer {
        out.push(format!(
            "## Result\n{}\n\n## How to verify\n{}\n\n## Deferred / concerns\n{}",
            footer.result, footer.how_to_verify, footer.deferred
        ));
    }
    for d in &record.discrepancies {
        out.push(format!("discrepancy: {d}"));
    }
    out.join("\n")
}
