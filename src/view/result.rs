//! The run result (SPEC §2, Stable JSON fields) as a type, and a run for people: one
//! line, or a block. Pure: the caller gives the time a live run is measured at.

use serde::Serialize;

use super::human::{self, IntegrationState};
use crate::core::footer::NeedsHelp;
use crate::core::forecast::Forecast;
use crate::core::record::{
    DiffStat, Footer, Integration, Outcome, Phase, Pruning, RunRecord, Setup, Verify,
};
use crate::core::scope::Role;
use crate::core::supervisor::Supervisor;

/// A run result: `status` and `wait` (`"runs"`), `show`, `attach`, `deliver` and
/// `abandon` (`"run"`), `watch` (each frame's `"runs"`) — SPEC §2, Stable JSON fields.
///
/// The SPEC's keys come in its order (`run` … `discrepancies`), among the keys the SPEC
/// allows commands to add: every field the run record stores, in the record's order, never
/// the transcript itself (`transcript` is its path). Optional fields are `null`, never
/// absent; `elapsed_s` is counted up to now while the run is live.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct RunResult<'a> {
    pub run: &'a str,
    pub task: &'a str,
    pub role: Role,
    pub phase: Phase,
    pub outcome: Option<Outcome>,
    pub backend: &'a str,
    pub adapter: crate::core::flight::AdapterKind,
    pub model: Option<&'a str>,
    pub effort: Option<&'a str>,
    pub tier: Option<&'a str>,
    pub session: Option<&'a str>,
    pub attempts: u32,
    pub worktree: &'a str,
    pub branch: &'a str,
    pub base: &'a str,
    pub scope: &'a [String],
    pub started_at: String,
    pub finished_at: Option<String>,
    pub deadline: String,
    pub budget_s: u64,
    pub idle_timeout_s: Option<u64>,
    pub elapsed_s: u64,
    pub last_activity_at: Option<String>,
    pub footer: Option<&'a Footer>,
    pub needs_help: Option<&'a NeedsHelp>,
    pub verify: Option<&'a Verify>,
    pub verify_command: Option<&'a str>,
    pub decision: Option<&'a str>,
    pub diff: &'a DiffStat,
    pub discrepancies: &'a [String],
    /// The worker's process group while it runs.
    pub pid: Option<u32>,
    pub supervisor_pid: Option<u32>,
    pub port: Option<u16>,
    pub prompt_file: &'a str,
    pub manifest: &'a str,
    /// Where the raw output is archived (`null` when transcripts are disabled).
    pub transcript: Option<&'a str>,
    pub parked_at: Option<String>,
    pub continue_until_pass: bool,
    pub base_ref: Option<&'a str>,
    pub integration: Option<&'a Integration>,
    pub plan: Option<&'a str>,
    pub size_h: Option<f64>,
    pub worker: Option<&'a str>,
    pub verified_tip: Option<&'a str>,
    pub scope_changed: bool,
    pub fence: Option<&'a str>,
    pub max_attempts: Option<u32>,
    pub failure_threshold: Option<u32>,
    pub max_output: Option<u64>,
    /// `fences.max_file_size` in bytes.
    pub max_file_size: Option<u64>,
    pub manifest_required: Option<bool>,
    pub max_cost_usd: Option<f64>,
    pub max_tokens: Option<u64>,
    pub price: Option<&'a crate::core::usage::Price>,
    /// What each attempt spent and the total (`null` until the worker reports any).
    pub usage: Option<&'a crate::core::usage::RunUsage>,
    /// The run this one retries.
    pub retry_of: Option<&'a str>,
    /// What prune or integrate's cleanup removed (`null` while nothing was).
    pub pruned: Option<&'a Pruning>,
    /// The run's `[worktree] setup` and what it came to (`null` without one).
    pub setup: Option<&'a Setup>,
}

impl<'a> RunResult<'a> {
    /// The run result of `record` as of `now` (Unix milliseconds).
    pub fn at(record: &'a RunRecord, now: u64) -> RunResult<'a> {
        RunResult {
            run: &record.run,
            task: &record.task,
            role: record.role,
            phase: record.phase,
            outcome: record.outcome,
            backend: &record.backend,
            adapter: record.adapter,
            model: record.model.as_deref(),
            effort: record.effort.as_deref(),
            tier: record.tier.as_deref(),
            session: record.session.as_deref(),
            attempts: record.attempts,
            worktree: &record.worktree,
            branch: &record.branch,
            base: &record.base,
            scope: &record.scope,
            started_at: shown(record, record.started_at),
            finished_at: record.finished_at.map(|at| shown(record, at)),
            deadline: shown(record, record.deadline),
            budget_s: record.budget_s,
            idle_timeout_s: record.idle_timeout_s,
            elapsed_s: elapsed_at(record, now),
            last_activity_at: record.last_activity_at.map(|at| shown(record, at)),
            footer: record.footer.as_ref(),
            needs_help: record.needs_help.as_ref(),
            verify: record.verify.as_ref(),
            verify_command: record.verify_command.as_deref(),
            decision: record.decision.as_deref(),
            diff: &record.diff,
            discrepancies: &record.discrepancies,
            pid: record.pid,
            supervisor_pid: record.supervisor_pid,
            port: record.port,
            prompt_file: &record.prompt_file,
            manifest: &record.manifest,
            transcript: record.transcript.as_deref(),
            parked_at: record.parked_at.map(|at| shown(record, at)),
            continue_until_pass: record.continue_until_pass,
            base_ref: record.base_ref.as_deref(),
            integration: record.integration.as_ref(),
            plan: record.plan.as_deref(),
            size_h: record.size_h,
            worker: record.worker.as_deref(),
            verified_tip: record.verified_tip.as_deref(),
            scope_changed: record.scope_changed,
            fence: record.fence.as_deref(),
            max_attempts: record.max_attempts,
            failure_threshold: record.failure_threshold,
            max_output: record.max_output,
            max_file_size: record.max_file_size,
            manifest_required: record.manifest_required,
            max_cost_usd: record.max_cost_usd,
            max_tokens: record.max_tokens,
            price: record.price.as_ref(),
            usage: record.usage.as_ref(),
            retry_of: record.retry_of.as_deref(),
            pruned: record.pruned.as_ref(),
            setup: record.setup.as_ref(),
        }
    }
}

/// `show`, `attach`, `deliver` and `abandon`: `{"run": run result}` (SPEC §2, `show`'s
/// `"run"`).
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct RunOutput<'a> {
    pub run: RunResult<'a>,
}

impl<'a> RunOutput<'a> {
    pub fn at(record: &'a RunRecord, now: u64) -> RunOutput<'a> {
        RunOutput {
            run: RunResult::at(record, now),
        }
    }
}

/// A run as a command that only reads found it (`status`'s `"runs"`, `show`'s `"run"`):
/// its run result, then `"supervisor"` — `"alive"` or `"dead"` while the run is live
/// with a supervisor to lose, `null` otherwise — then `"forecast"`: the conflict
/// forecast of a pass awaiting integration or a live run with commits, `null` for any
/// other run. A dead supervisor is reported, not acted on: the next command that acts
/// files the run as abandoned.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct FoundResult<'a> {
    #[serde(flatten)]
    pub result: RunResult<'a>,
    pub supervisor: Option<Supervisor>,
    pub forecast: Option<&'a Forecast>,
}

impl<'a> FoundResult<'a> {
    /// `record` as found, with its supervisor, as of `now` (Unix milliseconds).
    pub fn at(record: &'a RunRecord, supervisor: Option<Supervisor>, now: u64) -> FoundResult<'a> {
        FoundResult {
            result: RunResult::at(record, now),
            supervisor,
            forecast: None,
        }
    }

    /// The same, with its conflict forecast.
    pub fn with_forecast(mut self, forecast: Option<&'a Forecast>) -> FoundResult<'a> {
        self.forecast = forecast;
        self
    }
}

/// `show`: `{"run": run result as found}`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct FoundOutput<'a> {
    pub run: FoundResult<'a>,
}

/// What people read of a live run whose supervisor died, before a command that acts
/// files it.
pub const DEAD_SUPERVISOR: &str =
    "supervisor dead: the next command that acts (`git crew doctor --fix`) files it as abandoned";

/// A time of `record` as it is shown: RFC 3339 to the second, and nothing for a
/// stand-in, which knows no times.
pub fn shown(record: &RunRecord, at: jiff::Timestamp) -> String {
    if record.unreadable.is_some() {
        String::new()
    } else {
        crate::core::stamp::format_seconds(at)
    }
}

/// The seconds a run has taken: its own count once finished, up to the moment it parked
/// while it waits for the lead (its budget does not run then), else up to `now` (none
/// for a stand-in, which knows no start).
fn elapsed_at(record: &RunRecord, now: u64) -> u64 {
    if record.unreadable.is_some() {
        0
    } else if record.finished_at.is_some() {
        record.elapsed_s
    } else if let Some(parked) = record.parked_at {
        crate::core::stamp::elapsed_s(record.started_at, super::human::millis(parked))
    } else {
        crate::core::stamp::elapsed_s(record.started_at, now)
    }
}

/// One line per run for people; what others wrote (the decision) on it is
/// [printable](human::printable).
pub fn result_line(record: &RunRecord, now: u64) -> String {
    let elapsed = elapsed_at(record, now);
    human::sanitize(&format!(
        "{}  {:<10} {:<14} {:<12} {}s/{}s  {}",
        record.run,
        record.task,
        record.phase.as_str(),
        record.backend,
        elapsed,
        record.budget_s,
        human::printable(record.decision.as_deref().unwrap_or(""))
    ))
}

/// A run in full for people, as of `now` (Unix milliseconds): fences, phase, attempts,
/// times, diff stat, footer, verify, decision, integration and the next command. What
/// the worker wrote (its footer, its question, its session id, the names of the files
/// it changed) is [sanitized](human::sanitize): it reaches the terminal as text only.
pub fn result_block(record: &RunRecord, now: u64) -> String {
    found_block(record, None, now)
}

/// A run in full for people as a command that only reads found it: [`result_block`],
/// saying so under its phase when its supervisor is dead.
pub fn found_block(record: &RunRecord, supervisor: Option<Supervisor>, now: u64) -> String {
    shown_block(record, supervisor, None, now)
}

/// [`found_block`] with the run's conflict forecast, on a line of its own after its
/// integration state.
pub fn shown_block(
    record: &RunRecord,
    supervisor: Option<Supervisor>,
    forecast: Option<&Forecast>,
    now: u64,
) -> String {
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
    ];
    if supervisor == Some(Supervisor::Dead) {
        out.push(DEAD_SUPERVISOR.to_string());
    }
    out.extend([
        format!(
            "backend {} model {} session {}",
            record.backend,
            record.model.as_deref().unwrap_or("-"),
            record.session.as_deref().unwrap_or("-")
        ),
        match &record.pruned {
            Some(p) => format!(
                "branch {} ({}) in {} ({}, {})",
                record.branch,
                if p.branch { "deleted" } else { "kept" },
                record.worktree,
                if p.worktree { "pruned" } else { "kept" },
                p.at
            ),
            None => format!("branch {} in {}", record.branch, record.worktree),
        },
        format!("scope {}", record.scope.join(", ")),
        times(record, now),
        match record.diff.files.is_empty() {
            true => "diff: no change".to_string(),
            false => format!(
                "diff: {} (git crew diff {})",
                human::diff_stat(&record.diff),
                record.run
            ),
        },
    ]);
    if let Some(setup) = &record.setup {
        out.push(setup_line(setup));
    }
    if let Some(spend) = spend(record) {
        out.push(spend);
    }
    if let Some(of) = &record.retry_of {
        out.push(format!("retry of run {of}"));
    }
    if let Some(decision) = &record.decision {
        out.push(format!("decision: {decision}"));
    }
    if let Some(verify) = &record.verify {
        let verdict = if verify.passed { "pass" } else { "fail" };
        let by = verify.decided_by.map(|by| match by {
            crate::core::record::DecidedBy::Exit => "the exit code",
            crate::core::record::DecidedBy::Reward => "the reward",
        });
        out.push(match by {
            Some(by) => format!(
                "verify `{}`: {verdict}, decided by {by} ({})",
                verify.command,
                verify.grounds()
            ),
            // Recorded before what decided was kept: its reward, as it was shown then.
            None => format!(
                "verify `{}`: reward {} ({verdict})",
                verify.command, verify.reward
            ),
        });
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
    match (&record.integration, IntegrationState::of(record)) {
        (Some(i), _) => out.push(format!(
            "integrated into {} as {} ({})",
            i.into,
            short(&i.commit),
            i.at
        )),
        (None, Some(state)) => out.push(state.as_str().to_string()),
        (None, None) if record.phase.is_final() => out.push("not integrated".to_string()),
        (None, None) => {}
    }
    if let Some(forecast) = forecast {
        out.push(super::forecast::line(forecast));
    }
    if let Some(next) = next_step(record) {
        out.push(format!("next: {next}"));
    }
    human::sanitize(&out.join("\n"))
}

/// When the run started and finished, relative to `now`, and the time it took (or has
/// taken) of its budget; a live run's deadline.
fn times(record: &RunRecord, now: u64) -> String {
    if record.unreadable.is_some() {
        return format!("budget {}", human::duration(record.budget_s));
    }
    let when = |at: jiff::Timestamp| {
        format!(
            "{} ({})",
            shown(record, at),
            human::ago(human::millis(at), now)
        )
    };
    let took = human::elapsed_of_budget(elapsed_at(record, now), record.budget_s);
    match record.finished_at {
        Some(finished) => format!(
            "started {}, finished {}, took {took}",
            when(record.started_at),
            when(finished)
        ),
        None => format!(
            "started {}, {took} so far, deadline {}",
            when(record.started_at),
            shown(record, record.deadline)
        ),
    }
}

/// The run's setup for people: its command, how it ended and the time it took, apart
/// from the worker's.
fn setup_line(setup: &Setup) -> String {
    let took = |ms: u64| match ms {
        0..1000 => format!("{ms}ms"),
        1000..60_000 => format!("{}.{}s", ms / 1000, (ms % 1000) / 100),
        _ => human::duration(ms / 1000),
    };
    let how = match (setup.passed, setup.elapsed_ms) {
        (None, _) => format!("not run yet (bound {})", human::duration(setup.timeout_s)),
        (Some(true), ms) => format!("passed in {}", took(ms.unwrap_or(0))),
        (Some(false), ms) => format!(
            "failed after {}: {}",
            took(ms.unwrap_or(0)),
            setup.problem.as_deref().unwrap_or("it did not pass")
        ),
    };
    format!("setup `{}`: {how}", human::printable(&setup.command))
}

/// What the run spent, in total and (for more than one) per attempt, and its spend
/// fence; nothing when there is neither.
fn spend(record: &RunRecord) -> Option<String> {
    use crate::core::usage;
    let fence = usage::SpendFence::of(record);
    let limits: Vec<String> = [
        record.max_cost_usd.map(usage::dollars),
        record.max_tokens.map(|t| format!("{t} tokens")),
    ]
    .into_iter()
    .flatten()
    .collect();
    let fenced = match fence.is_set() {
        true => format!(" (fence: {})", limits.join(" or ")),
        false => String::new(),
    };
    let Some(run) = &record.usage else {
        return fence
            .is_set()
            .then(|| format!("spend: none reported{fenced}"));
    };
    let mut text = format!("spend: {}{fenced}", usage::shown(&run.total));
    if run.attempts.len() > 1 {
        for a in &run.attempts {
            text.push_str(&format!(
                "\n  attempt {}: {}",
                a.attempt,
                usage::shown(&a.usage)
            ));
        }
    }
    Some(text)
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

/// The command a lead runs next for a run, if any: wait for it, answer it, integrate a
/// pass, or look at why it did not pass.
pub fn next_step(record: &RunRecord) -> Option<String> {
    let run = &record.run;
    match record.phase {
        Phase::NeedsHelp => Some(format!("git crew advise {run} --text '...'")),
        Phase::AwaitingAttach => Some(format!("git crew attach {run} --session ID")),
        Phase::Queued | Phase::Preparing | Phase::Working | Phase::Verifying => {
            Some(format!("git crew wait {run}"))
        }
        Phase::Done if record.integration.is_none() => Some(format!("git crew integrate {run}")),
        Phase::Done | Phase::Abandoned => None,
        // What it did, before the task is dispatched again.
        Phase::Failed | Phase::TimedOut | Phase::Rejected => Some(format!("git crew diff {run}")),
    }
}

/// What a set of awaited runs came to (`wait`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Awaited {
    /// Every run passed.
    Passed,
    /// One needs the lead (and none failed), or the wait timed out.
    NeedsLead,
    /// One failed.
    Failed,
}

/// `wait`'s verdict on the runs it judged.
pub fn awaited(judged: &[&RunRecord], timed_out: bool) -> Awaited {
    let failed = judged
        .iter()
        .any(|r| r.phase.is_final() && r.outcome != Some(Outcome::Pass));
    let help = judged.iter().any(|r| r.phase == Phase::NeedsHelp);
    if timed_out {
        Awaited::NeedsLead
    } else if judged.iter().all(|r| r.outcome == Some(Outcome::Pass)) {
        Awaited::Passed
    } else if help && !failed {
        Awaited::NeedsLead
    } else {
        Awaited::Failed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The keys of a serialized object, in order.
    fn keys(value: &serde_json::Value) -> Vec<String> {
        value.as_object().unwrap().keys().cloned().collect()
    }

    #[test]
    fn a_setup_is_told_with_its_own_time() {
        let mut setup = Setup::pending("npm ci", 600);
        assert_eq!(
            setup_line(&setup),
            "setup `npm ci`: not run yet (bound 10m)"
        );
        setup.passed = Some(true);
        setup.elapsed_ms = Some(340);
        assert_eq!(setup_line(&setup), "setup `npm ci`: passed in 340ms");
        setup.elapsed_ms = Some(2345);
        assert_eq!(setup_line(&setup), "setup `npm ci`: passed in 2.3s");
        setup.passed = Some(false);
        setup.elapsed_ms = Some(125_000);
        setup.problem = Some("the worktree setup `npm ci` exited 1".into());
        assert_eq!(
            setup_line(&setup),
            "setup `npm ci`: failed after 2m05s: the worktree setup `npm ci` exited 1"
        );
        let r = RunRecord::full();
        assert!(result_block(&r, 0).contains("setup `npm ci`: failed after 2.3s"));
    }

    #[test]
    fn a_finished_run_result_is_the_record_as_stored_key_for_key() {
        // Every field set, so that none is left out or out of place.
        let r = RunRecord::full();
        // The stored record and the printed result agree, order included.
        assert_eq!(
            serde_json::to_string(&RunResult::at(&r, u64::MAX)).unwrap(),
            serde_json::to_string(&r).unwrap()
        );
    }

    #[test]
    fn a_run_result_has_the_spec_keys_in_spec_order_and_null_for_what_is_not_known() {
        let mut r = RunRecord::example();
        r.phase = Phase::Working;
        r.outcome = None;
        r.started_at = "2026-01-01T00:00:00Z".parse().unwrap();
        r.elapsed_s = 1;
        // Ten minutes after the start, as a live run counts it.
        let now = 1_767_225_600_000 + 600_000;
        let value = serde_json::to_value(RunResult::at(&r, now)).unwrap();
        let spec = [
            "run",
            "task",
            "role",
            "phase",
            "outcome",
            "backend",
            "model",
            "tier",
            "session",
            "attempts",
            "worktree",
            "branch",
            "base",
            "scope",
            "started_at",
            "finished_at",
            "footer",
            "needs_help",
            "verify",
            "decision",
            "diff",
            "discrepancies",
        ];
        let order = keys(&value);
        let positions: Vec<usize> = spec
            .iter()
            .map(|k| order.iter().position(|x| x == k).expect(k))
            .collect();
        assert!(positions.is_sorted(), "{order:?}");
        for key in [
            "outcome",
            "finished_at",
            "footer",
            "needs_help",
            "verify",
            "decision",
        ] {
            assert!(value[key].is_null(), "{key}");
        }
        assert_eq!(value["elapsed_s"], 600);
        assert_eq!(keys(&value["diff"]), ["files", "insertions", "deletions"]);
    }

    #[test]
    fn a_run_as_found_is_its_run_result_then_its_supervisor() {
        let mut r = RunRecord::example();
        r.phase = Phase::Working;
        r.outcome = None;
        let plain = serde_json::to_value(RunResult::at(&r, 0)).unwrap();
        for (supervisor, said) in [
            (Some(Supervisor::Alive), serde_json::json!("alive")),
            (Some(Supervisor::Dead), serde_json::json!("dead")),
            (None, serde_json::Value::Null),
        ] {
            let found = serde_json::to_value(FoundResult::at(&r, supervisor, 0)).unwrap();
            let mut keys = keys(&found);
            assert_eq!(keys.pop().as_deref(), Some("forecast"));
            assert_eq!(keys.pop().as_deref(), Some("supervisor"));
            assert_eq!(keys, self::keys(&plain));
            assert_eq!(found["supervisor"], said);
            assert_eq!(found["forecast"], serde_json::Value::Null);
        }
    }

    #[test]
    fn a_forecast_is_the_last_key_of_a_run_as_found_and_a_line_of_its_block() {
        let r = RunRecord::example();
        let forecast = Forecast {
            into: "main".into(),
            tip: "0123456789abcdef0123456789abcdef01234567".into(),
            merges_cleanly: false,
            conflicting_paths: vec!["src/a.rs".into()],
            conflicts_with: vec!["20260101-000000-0002".into()],
        };
        let found = FoundResult::at(&r, None, 0).with_forecast(Some(&forecast));
        let json = serde_json::to_value(found).unwrap();
        assert_eq!(keys(&json).last().map(String::as_str), Some("forecast"));
        assert_eq!(json["forecast"]["merges_cleanly"], false);
        assert_eq!(
            json["forecast"]["conflicts_with"],
            serde_json::json!(["20260101-000000-0002"])
        );
        let plain = found_block(&r, None, 0);
        let shown = shown_block(&r, None, Some(&forecast), 0);
        assert_eq!(shown.lines().count(), plain.lines().count() + 1);
        let line = shown
            .lines()
            .find(|l| l.starts_with("forecast onto main @ 0123456789ab"))
            .unwrap_or_else(|| panic!("{shown}"));
        assert!(line.contains("conflicts in src/a.rs"), "{line}");
        assert!(line.contains("20260101-000000-0002"), "{line}");
    }

    #[test]
    fn a_dead_supervisor_is_told_under_the_phase_and_an_alive_one_not_at_all() {
        let mut r = RunRecord::example();
        r.phase = Phase::Working;
        r.outcome = None;
        let plain = result_block(&r, 0);
        assert_eq!(found_block(&r, Some(Supervisor::Alive), 0), plain);
        assert_eq!(found_block(&r, None, 0), plain);
        let dead = found_block(&r, Some(Supervisor::Dead), 0);
        let lines: Vec<&str> = dead.lines().collect();
        assert_eq!(lines[2], DEAD_SUPERVISOR, "{dead}");
        assert!(lines[1].starts_with("phase working"), "{dead}");
        assert_eq!(dead.lines().count(), plain.lines().count() + 1);
    }

    #[test]
    fn a_parked_run_counts_its_time_up_to_when_it_parked() {
        let mut r = RunRecord::example();
        r.phase = Phase::NeedsHelp;
        r.outcome = None;
        r.finished_at = None;
        r.started_at = "2026-01-01T00:00:00Z".parse().unwrap();
        r.parked_at = Some("2026-01-01T00:05:00Z".parse().unwrap());
        // An hour after the start, the run has still taken the five minutes it worked.
        let later = 1_767_225_600_000 + 3_600_000;
        assert_eq!(RunResult::at(&r, later).elapsed_s, 300);
        r.parked_at = None;
        assert_eq!(RunResult::at(&r, later).elapsed_s, 3600);
    }

    #[test]
    fn wait_passes_only_when_every_run_did_and_help_is_attention_unless_one_failed() {
        let pass = RunRecord::example();
        let mut fail = RunRecord::example();
        fail.outcome = Some(Outcome::Fail);
        fail.phase = Phase::Failed;
        let mut help = RunRecord::example();
        help.outcome = None;
        help.phase = Phase::NeedsHelp;
        assert_eq!(awaited(&[&pass], false), Awaited::Passed);
        assert_eq!(awaited(&[&pass, &help], false), Awaited::NeedsLead);
        assert_eq!(awaited(&[&fail, &help], false), Awaited::Failed);
        assert_eq!(awaited(&[&pass], true), Awaited::NeedsLead);
    }

    #[test]
    fn the_next_step_follows_the_phase_and_the_integration() {
        let mut r = RunRecord::example();
        assert_eq!(
            next_step(&r).unwrap(),
            format!("git crew integrate {}", r.run)
        );
        r.integration = RunRecord::full().integration;
        assert_eq!(next_step(&r), None);
        r.phase = Phase::NeedsHelp;
        assert!(next_step(&r).unwrap().starts_with("git crew advise"));
        r.phase = Phase::Working;
        assert!(next_step(&r).unwrap().starts_with("git crew wait"));
        r.phase = Phase::Rejected;
        assert!(next_step(&r).unwrap().starts_with("git crew diff"));
    }
}
