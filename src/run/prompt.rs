//! Worker prompts, rendered from `templates/`: the task by id, and the four fences.

use crate::core::record::RunRecord;

const WORKER: &str = include_str!("../../templates/worker.md");
const CORRECTIVE: &str = include_str!("../../templates/corrective.md");
const ADVICE: &str = include_str!("../../templates/advice.md");

fn render(template: &str, vars: &[(&str, String)]) -> String {
    let mut out = template.to_string();
    for (key, value) in vars {
        out = out.replace(&format!("{{{{{key}}}}}"), value);
    }
    out
}

/// The prompt of a run's first attempt.
pub fn worker(record: &RunRecord, task_prompt: &str) -> String {
    let scope = if record.scope.is_empty() {
        "   (none: this run may not change any file)".to_string()
    } else {
        record
            .scope
            .iter()
            .map(|g| format!("   - `{g}`"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let role_rule = match record.role.as_str() {
        "review" | "investigate" => format!(
            "   This is a {} run: do not change or commit any file; your reply is your only output.",
            record.role
        ),
        _ => "   Commit your work as you go; anything left uncommitted is committed for you."
            .to_string(),
    };
    let verify = match &record.verify_command {
        Some(cmd) => {
            format!("\nWhen you are done, `{cmd}` is run in your worktree to check the work.")
        }
        None => String::new(),
    };
    let budget =
        humantime::format_duration(std::time::Duration::from_secs(record.budget_s)).to_string();
    render(
        WORKER,
        &[
            ("run", record.run.clone()),
            ("task", record.task.clone()),
            ("role", record.role.to_string()),
            ("attempt", record.attempts.max(1).to_string()),
            ("base", short(&record.base)),
            ("branch", record.branch.clone()),
            ("prompt", task_prompt.trim_end().to_string()),
            ("scope", scope),
            ("role_rule", role_rule),
            ("budget", budget),
            (
                "deadline",
                crate::core::stamp::format_seconds(record.deadline),
            ),
            ("manifest", record.manifest.clone()),
            ("verify", verify),
        ],
    )
}

/// The corrective prompt after a reply that broke the delivery contract: the report
/// only, not a redo.
pub fn corrective(record: &RunRecord, problem: &str) -> String {
    render(
        CORRECTIVE,
        &[
            ("run", record.run.clone()),
            ("problem", problem.to_string()),
        ],
    )
}

/// The lead's answer to a NEEDS-HELP, resuming the same session.
pub fn advice(record: &RunRecord, advice: &str) -> String {
    render(
        ADVICE,
        &[
            ("run", record.run.clone()),
            ("task", record.task.clone()),
            ("advice", advice.trim().to_string()),
            (
                "deadline",
                crate::core::stamp::format_seconds(record.deadline),
            ),
        ],
    )
}

fn short(id: &str) -> String {
    id.chars().take(12).collect()
}
