//! What the commands print as data: the object of each one's JSON (`--json`), which the
//! MCP server returns as its tools' structured content. Every type here derives its JSON
//! Schema from the fields it serialises, so the MCP tools' output schemas are these types'
//! own. Pure: the caller gives the records, the decisions and the time.

use schemars::JsonSchema;
use serde::Serialize;

use super::result::{FoundResult, RunResult};
use crate::core::ledger::{ConfigStats, Row};
use crate::core::plan::{Blocker, Gate, TaskState, Verdict};
use crate::core::policy::{Decision, Next};
use crate::core::record::{Phase, RunRecord};
use crate::core::summary::Summary;
use crate::core::wave::{FollowOn, Skipped};

/// `status` / `ls`: the runs, oldest first (SPEC §2, `status`'s `"runs"`, each with its
/// `"supervisor"`), and how many older finished runs were left out (`--all` shows them).
#[derive(Debug, Serialize, JsonSchema)]
pub struct StatusOutput<'a> {
    pub runs: Vec<FoundResult<'a>>,
    pub hidden: usize,
}

/// `status --fleet`: the claims on the fleet's remote (SPEC-like, README "A fleet"), one
/// a task, each as its blob says with what follows from it at `now_ms`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FleetStatusOutput {
    /// The remote the claims were fetched from.
    pub remote: String,
    /// When they were read (ms since the epoch, this machine's clock).
    pub now_ms: u64,
    pub claims: Vec<FleetClaimOutput>,
}

/// One claim of `status --fleet`. The fields of an unreadable claim's blob are null.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FleetClaimOutput {
    pub task: String,
    pub machine: Option<String>,
    pub run: Option<String>,
    pub phase: crate::core::fleet::FleetPhase,
    pub writes: Option<bool>,
    pub scope: Vec<String>,
    pub since_ms: Option<u64>,
    pub renewed_ms: Option<u64>,
    pub lease_ms: Option<u64>,
    /// When the lease runs out (null for a pass: it holds until it is integrated or
    /// abandoned).
    pub expires_ms: Option<u64>,
    /// How long ago the lease was last renewed.
    pub age_ms: Option<u64>,
    /// How long the lease runs on (negative: how long ago it ran out; null for a pass).
    pub left_ms: Option<i64>,
    /// When the run passed (it awaits integration and holds its task), if it did.
    pub passed_ms: Option<u64>,
    /// Where the run keeps its commits on the remote, and the commit there now (null
    /// when it pushed none yet).
    pub attempt_ref: Option<String>,
    pub attempt: Option<String>,
    /// The run whose expired claim this one took over, and where its commits are.
    pub took_over: Option<crate::core::fleet::TookOver>,
    /// The object the claim ref names.
    pub claim: String,
}

/// What the MCP `status` tool returns: the runs, or with `fleet` the fleet's claims.
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum StatusAnswer<'a> {
    Runs(StatusOutput<'a>),
    Fleet(FleetStatusOutput),
}

/// What `diff` prints under `--json`: the run, the two commits and the text.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DiffOutput<'a> {
    pub run: &'a str,
    pub from: String,
    pub to: String,
    pub text: &'a str,
}

/// `ledger`: the outcome rows, oldest first (SPEC §2, `ledger`; a row is SPEC's ledger
/// row); `ledger stats`: what the ledger says of each agent configuration (SPEC §2
/// `ledger`, §8).
#[derive(Debug, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum LedgerOutput<'a> {
    Rows { rows: &'a [Row] },
    Stats { stats: &'a [ConfigStats] },
}

/// `should-stop`: the two-failure rule's decision for a (task, model) (SPEC §2
/// `should-stop`, §5.8). `next` is null unless the decision is `escalate-tier`, `report`
/// null unless it is `human-report`.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ShouldStopOutput<'a> {
    pub decision: &'a Decision,
    pub task: &'a str,
    pub model: &'a str,
    pub tier: &'a str,
    pub failures: usize,
    pub next: Option<&'a Next>,
    pub report: Option<&'a std::path::Path>,
}

/// `plan status`: the plan, every task's derived status and every gate with its latest
/// verdict (SPEC §2 `plan status`, §7).
#[derive(Debug, Serialize, JsonSchema)]
pub struct PlanStatusOutput<'a> {
    pub plan: &'a str,
    pub north_star: Option<&'a str>,
    pub tasks: Vec<PlanTaskOutput<'a>>,
    pub gates: Vec<GateOutput<'a>>,
}

/// A task of `plan status`: its derived status (`done`, `in-flight`, `ready`, `blocked`
/// with its blockers), its size and the ledger's estimate, in worker-hours (SPEC §7, §8).
#[derive(Debug, Serialize, JsonSchema)]
pub struct PlanTaskOutput<'a> {
    pub task: &'a str,
    pub wave: u32,
    pub status: TaskState,
    pub blockers: &'a [Blocker],
    /// The live or the integrated run.
    pub run: Option<&'a str>,
    pub size_h: Option<f64>,
    pub estimate_h: Option<f64>,
}

/// A gate and its latest verdict (null when none), as `plan status` and `gate ls` print
/// it (SPEC §2 `gate`, §7).
#[derive(Debug, Serialize, JsonSchema)]
pub struct GateOutput<'a> {
    pub gate: &'a str,
    pub measure: Option<&'a str>,
    pub required_evidence: Option<&'a str>,
    pub closes_wave: Option<u32>,
    pub gates_waves: &'a [u32],
    pub verdict: Option<&'a Verdict>,
}

impl<'a> GateOutput<'a> {
    pub fn of(gate: &'a Gate, verdict: Option<&'a Verdict>) -> GateOutput<'a> {
        GateOutput {
            gate: &gate.id,
            measure: gate.measure.as_deref(),
            required_evidence: gate.required_evidence.as_deref(),
            closes_wave: gate.closes_wave,
            gates_waves: &gate.gates_waves,
            verdict,
        }
    }
}

/// What `wave status` prints: whether the wave is complete, each task, the gate that
/// closes it, the follow-ons and (when `summary.at` asks for it) the completion summary.
#[derive(Debug, Serialize, JsonSchema)]
pub struct WaveStatusOutput<'a> {
    pub plan: &'a str,
    pub wave: u32,
    pub complete: bool,
    pub incomplete_because: Option<&'a str>,
    pub tasks: Vec<WaveTaskOutput<'a>>,
    pub gate: Option<WaveGateOutput<'a>>,
    pub follow_ons: &'a [FollowOn],
    pub summary: Option<&'a Summary>,
}

/// A task of the wave: its derived status, and its run's.
#[derive(Debug, Serialize, JsonSchema)]
pub struct WaveTaskOutput<'a> {
    pub task: &'a str,
    pub wave: u32,
    pub status: TaskState,
    pub blockers: &'a [Blocker],
    pub run: Option<&'a str>,
    pub run_status: &'a str,
}

/// The gate that closes the wave, with its latest verdict.
#[derive(Debug, Serialize, JsonSchema)]
pub struct WaveGateOutput<'a> {
    pub gate: &'a str,
    pub verdict: Option<&'a Verdict>,
}

/// `workers`: the roster, in the flight config's order (SPEC §2 `workers`, §3 "The
/// roster").
#[derive(Debug, Serialize, JsonSchema)]
pub struct WorkersOutput<'a> {
    pub workers: Vec<WorkerOutput<'a>>,
}

/// One standing worker of `workers`: its routing, its session (a local fact), the run it
/// is busy with, its queued runs, and its runs and pass rate from the ledger (SPEC §3).
#[derive(Debug, Serialize, JsonSchema)]
pub struct WorkerOutput<'a> {
    pub worker: &'a str,
    pub backend: &'a str,
    pub model: Option<String>,
    pub effort: Option<String>,
    pub note: Option<&'a str>,
    pub session: Option<&'a str>,
    pub busy_run: Option<&'a str>,
    pub queued: usize,
    pub runs: usize,
    pub passes: usize,
    pub pass_rate: Option<f64>,
}

/// `advise`: the run as it resumes — its phase (`working`, or `queued` when its backend is
/// full), session, new supervisor (null when none was started), deadline moved by the
/// time it waited, and the file the advice was written to (SPEC §2 `advise`, §5.5).
#[derive(Debug, Serialize, JsonSchema)]
pub struct AdviseOutput<'a> {
    pub run: &'a str,
    pub phase: Phase,
    pub session: Option<&'a str>,
    pub supervisor_pid: Option<u32>,
    pub deadline: String,
    pub advice_file: &'a std::path::Path,
}

impl<'a> AdviseOutput<'a> {
    /// `record` as it resumes, with the supervisor started for it and the advice's file.
    pub fn of(
        record: &'a RunRecord,
        supervisor_pid: Option<u32>,
        advice_file: &'a std::path::Path,
    ) -> AdviseOutput<'a> {
        AdviseOutput {
            run: &record.run,
            phase: record.phase,
            session: record.session.as_deref(),
            supervisor_pid,
            deadline: crate::core::stamp::format_seconds(record.deadline),
            advice_file,
        }
    }
}

/// `wait` (and `dispatch --wait`): every run waited for, settled or not, and whether the
/// timeout came first (SPEC §2, `wait`'s `"runs"`).
#[derive(Debug, Serialize, JsonSchema)]
pub struct WaitOutput<'a> {
    pub runs: Vec<RunResult<'a>>,
    pub timed_out: bool,
    /// The runs waited for that have not settled (empty unless the timeout came first,
    /// or `--any` returned with others still going).
    pub still_working: Vec<StillWorking<'a>>,
}

/// A run `wait` stopped waiting for before it settled.
#[derive(Debug, Serialize, JsonSchema)]
pub struct StillWorking<'a> {
    pub run: &'a str,
    pub task: &'a str,
    pub phase: Phase,
    pub elapsed_s: u64,
}

impl<'a> WaitOutput<'a> {
    /// The runs waited for as of `now` (Unix milliseconds), and those of them still going.
    pub fn at(
        runs: &'a [RunRecord],
        still_working: &[&'a RunRecord],
        timed_out: bool,
        now: u64,
    ) -> WaitOutput<'a> {
        WaitOutput {
            runs: runs.iter().map(|r| RunResult::at(r, now)).collect(),
            timed_out,
            still_working: still_working
                .iter()
                .map(|r| StillWorking {
                    run: &r.run,
                    task: &r.task,
                    phase: r.phase,
                    elapsed_s: crate::core::stamp::elapsed_s(r.started_at, now),
                })
                .collect(),
        }
    }
}

/// What `verify` prints: the verdict recorded (none when the verify timed out or its
/// setup failed), and the run's phase and outcome after it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct VerifyOutput<'a> {
    pub run: &'a str,
    pub verify: Option<&'a crate::core::record::Verify>,
    pub timed_out: bool,
    /// Why the run's `[worktree] setup` did not ready the throwaway checkout (nothing
    /// was verified); absent when it did, or had none to run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub setup_failed: Option<&'a str>,
    pub phase: Phase,
    pub outcome: Option<crate::core::record::Outcome>,
}

/// What `wave dispatch` prints: each started task's dispatch output, the tasks left out
/// and why, and the dispatch summary when `summary.at` asks for it; with `--dry-run`,
/// each task's dispatch decision, nothing started.
#[derive(Serialize, JsonSchema)]
#[serde(untagged)]
pub enum WaveDispatchOutput<'a> {
    Started {
        plan: &'a str,
        wave: u32,
        dispatched: Vec<super::dispatch::DispatchOutput<'a>>,
        skipped: &'a [Skipped],
        summary: Option<&'a Summary>,
    },
    Planned {
        plan: &'a str,
        wave: u32,
        dry_run: bool,
        planned: Vec<super::dispatch::DispatchOutput<'a>>,
        skipped: &'a [Skipped],
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gate_without_a_verdict_prints_null_for_it() {
        let gate = Gate {
            id: "g1".into(),
            measure: None,
            required_evidence: Some("under 3 s".into()),
            closes_wave: Some(1),
            gates_waves: vec![2],
        };
        assert_eq!(
            serde_json::to_string(&GateOutput::of(&gate, None)).unwrap(),
            r#"{"gate":"g1","measure":null,"required_evidence":"under 3 s","closes_wave":1,"gates_waves":[2],"verdict":null}"#
        );
    }

    #[test]
    fn should_stop_prints_the_spec_keys_in_order_with_null_for_no_next_and_no_report() {
        let output = ShouldStopOutput {
            decision: &Decision::Continue,
            task: "routes",
            model: "m",
            tier: "mid",
            failures: 1,
            next: None,
            report: None,
        };
        let value = serde_json::to_value(&output).unwrap();
        let keys: Vec<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "decision", "task", "model", "tier", "failures", "next", "report"
            ]
        );
        assert_eq!(value["decision"], "continue");
        assert!(value["next"].is_null() && value["report"].is_null());
    }

    #[test]
    fn a_ledger_prints_its_rows_or_its_stats_under_their_own_key() {
        let rows = serde_json::to_value(LedgerOutput::Rows { rows: &[] }).unwrap();
        assert_eq!(rows, serde_json::json!({"rows": []}));
        let stats = serde_json::to_value(LedgerOutput::Stats { stats: &[] }).unwrap();
        assert_eq!(stats, serde_json::json!({"stats": []}));
    }
}
