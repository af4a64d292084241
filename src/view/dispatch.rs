//! What `dispatch` prints (SPEC §2 `dispatch`): the run started, or with `--dry-run` the
//! run that would start, and a native run's directive to the lead.

use schemars::JsonSchema;
use serde::Serialize;

use crate::core::dispatch::Escalation;
use crate::core::flight::AdapterKind;
use crate::core::record::{Phase, RunRecord};
use crate::core::scope::Role;

/// What the lead does with a `native` run: its own sub-task, in the run's worktree
/// (`directive` in `dispatch`'s output).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Directive {
    pub worktree: String,
    pub prompt_file: String,
    pub manifest: String,
    pub fences: DirectiveFences,
    pub attach: String,
    pub deliver: String,
}

/// The fences a native run's directive names.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DirectiveFences {
    pub scope: Vec<String>,
    pub time_budget_s: u64,
    pub deadline: String,
    pub delivery: &'static str,
    pub needs_help: &'static str,
}

impl Directive {
    pub fn of(record: &RunRecord) -> Directive {
        Directive {
            worktree: record.worktree.clone(),
            prompt_file: record.prompt_file.clone(),
            manifest: record.manifest.clone(),
            fences: DirectiveFences {
                scope: record.scope.clone(),
                time_budget_s: record.budget_s,
                deadline: crate::core::stamp::format_seconds(record.deadline),
                delivery: "end the reply with ## Result, ## How to verify, ## Deferred / concerns",
                needs_help: "first line NEEDS-HELP: with tried:, options:, leaning:, cost-if-wrong:",
            },
            attach: format!("git crew attach {} --session <ID>", record.run),
            deliver: format!("git crew deliver {} --reply-file <FILE>", record.run),
        }
    }
}

/// What `dispatch --dry-run` prints: the run that would start.
#[derive(Serialize, JsonSchema)]
pub struct DryRun<'a> {
    pub dry_run: bool,
    pub task: &'a str,
    pub role: Role,
    pub phase: Phase,
    pub fence: &'a Option<String>,
    pub branch: String,
    pub base: &'a str,
    pub backend: &'a str,
    pub model: &'a Option<String>,
    pub effort: &'a Option<String>,
    pub tier: &'a Option<String>,
    pub scope: &'a [String],
    pub budget_s: u64,
    pub verify: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub escalated_from: &'a Option<Escalation>,
    /// The run a retry retries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_of: &'a Option<String>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub warnings: &'a [String],
}

/// What `dispatch` prints (SPEC §2 `dispatch`).
#[derive(Serialize, JsonSchema)]
pub struct Dispatched<'a> {
    pub run: &'a str,
    pub task: &'a str,
    pub role: Role,
    pub phase: Phase,
    pub fence: &'a Option<String>,
    pub worktree: &'a str,
    pub branch: &'a str,
    pub base: &'a str,
    pub backend: &'a str,
    pub model: &'a Option<String>,
    pub effort: &'a Option<String>,
    pub tier: &'a Option<String>,
    pub scope: &'a [String],
    pub deadline: String,
    /// Days since the plan file changed, when it is stale.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stale_days: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_plan: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub split_advice: Option<String>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    pub warnings: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub escalated_from: &'a Option<Escalation>,
    /// The run a retry retries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retry_of: &'a Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub directive: Option<Directive>,
}

/// What `dispatch` and `retry` print: the run started, or with `--dry-run` the run that
/// would start.
#[derive(Serialize, JsonSchema)]
#[serde(untagged)]
pub enum DispatchOutput<'a> {
    DryRun(DryRun<'a>),
    Started(Box<Dispatched<'a>>),
}

impl<'a> DryRun<'a> {
    pub fn of(
        record: &'a RunRecord,
        escalated_from: &'a Option<Escalation>,
        warnings: &'a [String],
    ) -> DryRun<'a> {
        DryRun {
            dry_run: true,
            task: &record.task,
            role: record.role,
            phase: record.phase,
            fence: &record.fence,
            branch: format!("crew/{}/<run>", record.task),
            base: &record.base,
            backend: &record.backend,
            model: &record.model,
            effort: &record.effort,
            tier: &record.tier,
            scope: &record.scope,
            budget_s: record.budget_s,
            verify: &record.verify_command,
            escalated_from,
            retry_of: &record.retry_of,
            warnings,
        }
    }
}

impl<'a> Dispatched<'a> {
    /// The output of a started run; the caller adds what it found beside the record
    /// (staleness, the session plan, split advice, warnings).
    pub fn of(record: &'a RunRecord, escalated_from: &'a Option<Escalation>) -> Dispatched<'a> {
        Dispatched {
            run: &record.run,
            task: &record.task,
            role: record.role,
            phase: record.phase,
            fence: &record.fence,
            worktree: &record.worktree,
            branch: &record.branch,
            base: &record.base,
            backend: &record.backend,
            model: &record.model,
            effort: &record.effort,
            tier: &record.tier,
            scope: &record.scope,
            deadline: crate::core::stamp::format_seconds(record.deadline),
            stale_days: None,
            worker: &record.worker,
            session_plan: None,
            split_advice: None,
            warnings: &[],
            escalated_from,
            retry_of: &record.retry_of,
            directive: (record.adapter == AdapterKind::Native).then(|| Directive::of(record)),
        }
    }
}
