//! The run record: everything known about one run, as the live pointer and the finished
//! run record store it and as `status`, `show` and `wait` print it (SPEC §2 "run result").
//! Pure data; `state::runs` reads and writes it.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::footer::NeedsHelp;

/// Where a run is in its life (SPEC §5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    Queued,
    Preparing,
    Working,
    NeedsHelp,
    Verifying,
    Done,
    Failed,
    TimedOut,
    Rejected,
    Abandoned,
    AwaitingAttach,
}

impl Phase {
    /// Whether the run has ended (its live pointer becomes a run record).
    pub fn is_final(self) -> bool {
        matches!(
            self,
            Phase::Done | Phase::Failed | Phase::TimedOut | Phase::Rejected | Phase::Abandoned
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Queued => "queued",
            Phase::Preparing => "preparing",
            Phase::Working => "working",
            Phase::NeedsHelp => "needs-help",
            Phase::Verifying => "verifying",
            Phase::Done => "done",
            Phase::Failed => "failed",
            Phase::TimedOut => "timed-out",
            Phase::Rejected => "rejected",
            Phase::Abandoned => "abandoned",
            Phase::AwaitingAttach => "awaiting-attach",
        }
    }
}

/// What a finished run measured (SPEC §2 `outcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Pass,
    Fail,
    FooterReject,
    ScopeReject,
    Timeout,
    NeedsHelp,
    Abandoned,
    /// The infrastructure failed, not the worker: its command could not be started, or
    /// the supervisor itself hit an error. Never counted against a model.
    Error,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Pass => "pass",
            Outcome::Fail => "fail",
            Outcome::FooterReject => "footer-reject",
            Outcome::ScopeReject => "scope-reject",
            Outcome::Timeout => "timeout",
            Outcome::NeedsHelp => "needs-help",
            Outcome::Abandoned => "abandoned",
            Outcome::Error => "error",
        }
    }

    /// The phase a run ends in with this outcome.
    pub fn final_phase(self) -> Phase {
        match self {
            Outcome::Pass => Phase::Done,
            Outcome::Fail => Phase::Failed,
            Outcome::FooterReject | Outcome::ScopeReject => Phase::Rejected,
            Outcome::Timeout => Phase::TimedOut,
            Outcome::NeedsHelp => Phase::NeedsHelp,
            Outcome::Abandoned => Phase::Abandoned,
            Outcome::Error => Phase::Failed,
        }
    }
}

/// The footer that crossed back.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Footer {
    pub result: String,
    pub how_to_verify: String,
    pub deferred: String,
    pub truncated: bool,
}

/// The verify command's result (`core::verify::verdict` decides it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Verify {
    pub command: String,
    pub reward: f64,
    pub passed: bool,
    /// Why the verifier's own verdict was not taken (a reward that is not a finite
    /// number): the verify failed on that.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// What decided `passed`: the command's exit code, or — it exited 0 and its verifier
    /// wrote one — the reward. `None` on a record from before it was kept.
    #[serde(default)]
    pub decided_by: Option<DecidedBy>,
    /// The verify command's exit code; `None` when a signal ended it, or on a record
    /// from before it was kept.
    #[serde(default)]
    pub exit_code: Option<i32>,
}

/// What decided a verify's verdict.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum DecidedBy {
    /// The exit code: a non-zero exit (or a signal) failed it whatever reward file
    /// appeared, or it exited 0 and wrote no reward.
    Exit,
    /// It exited 0 and its verifier wrote a reward: the reward said pass or fail.
    Reward,
}

impl Verify {
    /// What decided the verdict, in words: `exit 1`, `ended by a signal`, `exit 0, reward
    /// 0.5`; for a record from before the exit code was kept, its reward.
    pub fn grounds(&self) -> String {
        verify_grounds(self.decided_by, self.exit_code, self.reward)
    }
}

/// [`Verify::grounds`] from the parts a ledger row keeps.
pub fn verify_grounds(
    decided_by: Option<DecidedBy>,
    exit_code: Option<i32>,
    reward: f64,
) -> String {
    match (decided_by, exit_code) {
        (Some(DecidedBy::Exit), Some(code)) => format!("exit {code}"),
        (Some(DecidedBy::Exit), None) => "ended by a signal".to_string(),
        (Some(DecidedBy::Reward), _) => format!("exit 0, reward {reward}"),
        (None, _) => format!("reward {reward}"),
    }
}

/// What the run's branch changed since its base.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DiffStat {
    pub files: Vec<String>,
    pub insertions: u64,
    pub deletions: u64,
}

/// Whether `text` is a run id as dispatch makes them (`20261202-101500-1a2b`: the UTC
/// date, the time, four hex digits). Nothing builds a path from a run id that is not one.
pub fn is_run_id(text: &str) -> bool {
    let b = text.as_bytes();
    b.len() == 20
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[8] == b'-'
        && b[9..15].iter().all(u8::is_ascii_digit)
        && b[15] == b'-'
        && b[16..]
            .iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c))
}

/// One run, live or finished.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub run: String,
    pub task: String,
    pub role: crate::core::scope::Role,
    pub phase: Phase,
    pub outcome: Option<Outcome>,
    pub backend: String,
    pub adapter: crate::core::flight::AdapterKind,
    pub model: Option<String>,
    pub effort: Option<String>,
    pub tier: Option<String>,
    pub session: Option<String>,
    pub attempts: u32,
    pub worktree: String,
    pub branch: String,
    pub base: String,
    pub scope: Vec<String>,
    #[serde(with = "crate::core::stamp::seconds")]
    pub started_at: Timestamp,
    #[serde(default, with = "crate::core::stamp::seconds::option")]
    pub finished_at: Option<Timestamp>,
    #[serde(with = "crate::core::stamp::seconds")]
    pub deadline: Timestamp,
    pub budget_s: u64,
    pub idle_timeout_s: Option<u64>,
    pub elapsed_s: u64,
    #[serde(default, with = "crate::core::stamp::seconds::option")]
    pub last_activity_at: Option<Timestamp>,
    pub footer: Option<Footer>,
    pub needs_help: Option<NeedsHelp>,
    pub verify: Option<Verify>,
    pub verify_command: Option<String>,
    pub decision: Option<String>,
    pub diff: DiffStat,
    pub discrepancies: Vec<String>,
    /// The worker's process group while it runs.
    pub pid: Option<u32>,
    pub supervisor_pid: Option<u32>,
    pub port: Option<u16>,
    pub prompt_file: String,
    pub manifest: String,
    /// Where the raw output is archived; `None` when transcripts are disabled.
    #[serde(default)]
    pub transcript: Option<String>,
    /// When the run parked in `needs-help` (its budget does not run while the lead thinks).
    #[serde(default, with = "crate::core::stamp::seconds::option")]
    pub parked_at: Option<Timestamp>,
    /// `dispatch --continue-until-pass`: a failed verify is tried again while the budget
    /// and the two-failure rule allow.
    #[serde(default)]
    pub continue_until_pass: bool,
    /// The branch the run was cut from, when it was cut from one: integrate's default
    /// target.
    #[serde(default)]
    pub base_ref: Option<String>,
    /// Where and how the run was integrated, once it is.
    #[serde(default)]
    pub integration: Option<Integration>,
    /// The plan the task came from.
    #[serde(default)]
    pub plan: Option<String>,
    /// The task's size in worker-hours (`--size`, or the plan's).
    #[serde(default)]
    pub size_h: Option<f64>,
    /// The standing worker of the roster the run went to.
    #[serde(default)]
    pub worker: Option<String>,
    /// The commit verify ran on: integrate takes the verdict for that commit only.
    #[serde(default)]
    pub verified_tip: Option<String>,
    /// The run's scope differs from the one its plan task declares (the task was
    /// re-scoped): its numbers say nothing about the planned task, so the ledger's two
    /// loops leave it out.
    #[serde(default)]
    pub scope_changed: bool,
    /// The write fence in force around the run's processes: `landlock-v<ABI>`, or `none`.
    #[serde(default)]
    pub fence: Option<String>,
    /// `fences.max_attempts` at dispatch: the most attempts this run makes.
    #[serde(default)]
    pub max_attempts: Option<u32>,
    /// `fences.needs_help_after_failures` at dispatch: continuation stops at this many
    /// failures of the task under the run's key.
    #[serde(default)]
    pub failure_threshold: Option<u32>,
    /// `fences.max_output` at dispatch: bytes of each stream kept per attempt.
    #[serde(default)]
    pub max_output: Option<u64>,
    /// `fences.max_file_size` at dispatch, in bytes: the largest file the run may leave for
    /// the supervisor to commit, and the largest object it may bring into the repository
    /// (a record from before the key: the shipped default).
    #[serde(default)]
    pub max_file_size: Option<u64>,
    /// `fences.manifest_required` at dispatch: the reply is kept as the run's manifest
    /// even when the worker did not write it.
    #[serde(default)]
    pub manifest_required: Option<bool>,
    /// `fences.max_cost_usd` at dispatch (`--max-cost`): the run ends once it has spent
    /// this many dollars.
    #[serde(default)]
    pub max_cost_usd: Option<f64>,
    /// `fences.max_tokens` at dispatch (`--max-tokens`): the run ends once it has spent
    /// this many tokens, in and out.
    #[serde(default)]
    pub max_tokens: Option<u64>,
    /// The price of the run's model at dispatch (`[prices."<model>"]`), per million
    /// tokens: what prices a stream that reports tokens only.
    #[serde(default)]
    pub price: Option<crate::core::usage::Price>,
    /// What each attempt spent and the total, as the worker reported it; none until it
    /// reports anything.
    #[serde(default)]
    pub usage: Option<crate::core::usage::RunUsage>,
    /// The run this one retries (`git crew retry`).
    #[serde(default)]
    pub retry_of: Option<String>,
    /// What `prune` (or integrate's cleanup) removed of the finished run, once it did.
    #[serde(default)]
    pub pruned: Option<Pruning>,
    /// `[worktree] setup` at dispatch, and what it came to once it ran.
    #[serde(default)]
    pub setup: Option<Setup>,
    /// Set on a stand-in for a live run whose pointer cannot be read: why. Never stored.
    #[serde(skip)]
    pub unreadable: Option<String>,
}

impl RunRecord {
    /// A record of run `run` with nothing known yet: the start for a stand-in (and for
    /// tests). Its times are the epoch, which sorts before every run's.
    pub fn blank(run: &str) -> RunRecord {
        RunRecord {
            run: run.to_string(),
            task: String::new(),
            role: super::scope::Role::Implement,
            phase: Phase::Working,
            outcome: None,
            backend: String::new(),
            adapter: crate::core::flight::AdapterKind::Command,
            model: None,
            effort: None,
            tier: None,
            session: None,
            attempts: 0,
            worktree: String::new(),
            branch: String::new(),
            base: String::new(),
            scope: Vec::new(),
            started_at: Timestamp::UNIX_EPOCH,
            finished_at: None,
            deadline: Timestamp::UNIX_EPOCH,
            budget_s: 0,
            idle_timeout_s: None,
            elapsed_s: 0,
            last_activity_at: None,
            footer: None,
            needs_help: None,
            verify: None,
            verify_command: None,
            decision: None,
            diff: DiffStat::default(),
            discrepancies: Vec::new(),
            pid: None,
            supervisor_pid: None,
            port: None,
            prompt_file: String::new(),
            manifest: String::new(),
            transcript: None,
            parked_at: None,
            continue_until_pass: false,
            base_ref: None,
            integration: None,
            plan: None,
            size_h: None,
            worker: None,
            verified_tip: None,
            scope_changed: false,
            fence: None,
            max_attempts: None,
            failure_threshold: None,
            manifest_required: None,
            max_output: None,
            max_file_size: None,
            max_cost_usd: None,
            max_tokens: None,
            price: None,
            usage: None,
            retry_of: None,
            pruned: None,
            setup: None,
            unreadable: None,
        }
    }

    /// The run's `fences.max_file_size` in bytes.
    pub fn file_size_cap(&self) -> u64 {
        self.max_file_size
            .unwrap_or(crate::core::flight::DEFAULT_MAX_FILE_SIZE)
    }

    /// Who the run is, for a scope check.
    pub fn identity(&self) -> super::scope::RunIdentity {
        super::scope::RunIdentity {
            run: self.run.clone(),
            task: self.task.clone(),
            role: self.role.to_string(),
            scope: self.scope.clone(),
        }
    }
}

/// What was removed of a finished run: its worktree, its branch, and the files git
/// ignored that went with the worktree (named, never removed silently).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Pruning {
    pub at: String,
    pub worktree: bool,
    pub branch: bool,
    pub ignored: Vec<String>,
}

/// A run's `[worktree] setup`: the command, its bound, and — once it ran, before the
/// worker started — how it ended and how long it took. Its time is its own: the run's
/// time budget starts when it ends.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Setup {
    pub command: String,
    /// `[worktree] setup_timeout` at dispatch.
    pub timeout_s: u64,
    #[serde(default, with = "crate::core::stamp::seconds::option")]
    #[schemars(with = "Option<String>")]
    pub started_at: Option<Timestamp>,
    /// How long it ran, in milliseconds; `None` until it has.
    #[serde(default)]
    pub elapsed_ms: Option<u64>,
    /// Its exit code; `None` until it ends, or when it timed out or a signal ended it.
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// Whether it readied the worktree; `None` until it has run.
    #[serde(default)]
    pub passed: Option<bool>,
    /// Why it did not pass, in words (the decision names it too).
    #[serde(default)]
    pub problem: Option<String>,
}

impl Setup {
    /// A setup that has not run yet.
    pub fn pending(command: &str, timeout_s: u64) -> Setup {
        Setup {
            command: command.to_string(),
            timeout_s,
            started_at: None,
            elapsed_ms: None,
            exit_code: None,
            passed: None,
            problem: None,
        }
    }

    /// Whether it has run (whatever it came to).
    pub fn ran(&self) -> bool {
        self.passed.is_some()
    }
}

/// An integrated run: the commit that brought it in, and on what terms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Integration {
    pub commit: String,
    pub into: String,
    pub at: String,
    pub by: String,
    pub squash: bool,
    /// Integrated without a passing verify (`--force-unverified`).
    pub forced_unverified: bool,
}

impl RunRecord {
    /// Whether the worker said it was done (`claimed` in the ledger): a footer, a request
    /// for help, or nothing.
    pub fn claimed(&self) -> &'static str {
        if self.needs_help.is_some() {
            "help"
        } else if self.footer.is_some() {
            "done"
        } else {
            "none"
        }
    }

    /// Compares the worker's claims with cheap objective facts.
    pub fn find_discrepancies(&self) -> Vec<String> {
        let mut out = Vec::new();
        let read_only = matches!(self.role.as_str(), "review" | "investigate");
        if self.footer.is_some() && !read_only && self.diff.files.is_empty() {
            out.push("the footer reports work, but the branch has no change".to_string());
        }
        if read_only && !self.diff.files.is_empty() {
            out.push(format!(
                "a {} run left changes ({} files)",
                self.role,
                self.diff.files.len()
            ));
        }
        if let (Some(footer), Some(verify)) = (&self.footer, &self.verify)
            && !verify.passed
            && claims_pass(&footer.result)
        {
            out.push(format!(
                "the footer claims success, but verify failed ({})",
                verify.grounds()
            ));
        }
        out
    }
}

impl crate::core::usage::SpendFence {
    /// The fence the lead set on `record`'s run at dispatch. (Beside the record, so
    /// that `usage` knows nothing of it.)
    pub fn of(record: &RunRecord) -> crate::core::usage::SpendFence {
        crate::core::usage::SpendFence {
            max_cost_usd: record.max_cost_usd,
            max_tokens: record.max_tokens,
        }
    }
}

/// Whether a result section claims a pass in so many words.
fn claims_pass(result: &str) -> bool {
    let lower = result.to_lowercase();
    ["pass", "green", "all tests", "succeed", "works"]
        .iter()
        .any(|w| lower.contains(w))
}

#[cfg(test)]
impl RunRecord {
    /// A record with every field set, so that a test sees none left out.
    pub(crate) fn full() -> RunRecord {
        let mut r = RunRecord::example();
        r.model = Some("m".into());
        r.effort = Some("high".into());
        r.tier = Some("mid".into());
        r.session = Some("s".into());
        r.finished_at = Some("2026-01-01T00:10:00Z".parse().unwrap());
        r.idle_timeout_s = Some(300);
        r.elapsed_s = 600;
        r.last_activity_at = Some("2026-01-01T00:09:00Z".parse().unwrap());
        r.footer = Some(Footer {
            result: "r".into(),
            how_to_verify: "h".into(),
            deferred: "d".into(),
            truncated: true,
        });
        r.needs_help = Some(NeedsHelp {
            question: "q".into(),
            tried: "t".into(),
            options: "o".into(),
            leaning: "l".into(),
            cost_if_wrong: "c".into(),
        });
        r.verify = Some(Verify {
            command: "c".into(),
            reward: 0.25,
            passed: false,
            problem: Some("p".into()),
            decided_by: Some(crate::core::record::DecidedBy::Exit),
            exit_code: Some(1),
        });
        r.verify_command = Some("c".into());
        r.decision = Some("x".into());
        r.diff.files = vec!["a".into()];
        r.discrepancies = vec!["d".into()];
        r.pid = Some(1);
        r.supervisor_pid = Some(2);
        r.port = Some(4100);
        r.transcript = Some("t".into());
        r.parked_at = Some("2026-01-01T00:05:00Z".parse().unwrap());
        r.continue_until_pass = true;
        r.base_ref = Some("main".into());
        r.integration = Some(Integration {
            commit: "c".into(),
            into: "main".into(),
            at: "2026-01-01T00:11:00Z".into(),
            by: "b".into(),
            squash: false,
            forced_unverified: false,
        });
        r.plan = Some("p".into());
        r.size_h = Some(1.5);
        r.worker = Some("w".into());
        r.verified_tip = Some("abc".into());
        r.scope_changed = true;
        r.fence = Some("landlock-v7".into());
        r.max_attempts = Some(5);
        r.failure_threshold = Some(2);
        r.max_output = Some(1 << 20);
        r.max_file_size = Some(100 << 20);
        r.manifest_required = Some(true);
        r.max_cost_usd = Some(2.5);
        r.max_tokens = Some(100_000);
        r.price = Some(crate::core::usage::Price {
            input: 1.25,
            cached_input: 0.125,
            output: 10.0,
        });
        let mut usage = crate::core::usage::RunUsage::default();
        usage.set(
            1,
            crate::core::usage::Usage {
                input_tokens: 100,
                cached_input_tokens: 10,
                output_tokens: 5,
                reasoning_tokens: 1,
                cost_usd: Some(0.01),
            },
        );
        r.usage = Some(usage);
        r.retry_of = Some("20260101-000000-0000".into());
        r.pruned = Some(Pruning {
            at: "2026-01-02T00:00:00Z".into(),
            worktree: true,
            branch: false,
            ignored: vec!["target/".into()],
        });
        r.setup = Some(Setup {
            command: "npm ci".into(),
            timeout_s: 600,
            started_at: Some("2026-01-01T00:00:00Z".parse().unwrap()),
            elapsed_ms: Some(2300),
            exit_code: Some(1),
            passed: Some(false),
            problem: Some("the worktree setup `npm ci` exited 1".into()),
        });
        r
    }

    /// A plain record for tests to adjust.
    pub(crate) fn example() -> RunRecord {
        RunRecord {
            task: "t".into(),
            phase: Phase::Done,
            outcome: Some(Outcome::Pass),
            backend: "script".into(),
            adapter: crate::core::flight::AdapterKind::Command,
            attempts: 1,
            worktree: "/w".into(),
            branch: "crew/t/r".into(),
            base: "abc".into(),
            scope: vec!["src/**".into()],
            started_at: "2026-01-01T00:00:00Z".parse().unwrap(),
            deadline: "2026-01-01T00:25:00Z".parse().unwrap(),
            budget_s: 1500,
            ..RunRecord::blank("r")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_field_of_a_record_round_trips() {
        let r = RunRecord::full();
        let text = serde_json::to_string(&r).unwrap();
        let back: RunRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn run_ids_are_recognised_and_paths_are_not() {
        assert!(is_run_id("20261202-101500-1a2b"));
        for bad in [
            "",
            "nope",
            "../../x",
            "20261202-101500-1a2B",
            "20261202-101500-1a2b/",
            "2026120a-101500-1a2b",
        ] {
            assert!(!is_run_id(bad), "{bad}");
        }
    }

    #[test]
    fn phases_serialise_in_kebab_case_and_know_when_they_are_final() {
        assert_eq!(
            serde_json::to_string(&Phase::TimedOut).unwrap(),
            "\"timed-out\""
        );
        assert_eq!(
            serde_json::to_string(&Outcome::ScopeReject).unwrap(),
            "\"scope-reject\""
        );
        assert!(Phase::Rejected.is_final());
        assert!(!Phase::NeedsHelp.is_final());
        assert_eq!(Outcome::FooterReject.final_phase(), Phase::Rejected);
    }

    #[test]
    fn discrepancies_compare_claims_with_facts() {
        let mut r = RunRecord::example();
        r.footer = Some(Footer {
            result: "All tests pass".into(),
            ..Footer::default()
        });
        assert_eq!(
            r.find_discrepancies(),
            ["the footer reports work, but the branch has no change"]
        );
        r.diff.files = vec!["src/a.rs".into()];
        r.verify = Some(Verify {
            command: "false".into(),
            reward: 0.0,
            passed: false,
            problem: None,
            decided_by: Some(crate::core::record::DecidedBy::Exit),
            exit_code: Some(1),
        });
        assert_eq!(
            r.find_discrepancies(),
            ["the footer claims success, but verify failed (exit 1)"]
        );
        r.role = crate::core::scope::Role::Review;
        r.verify = None;
        assert_eq!(
            r.find_discrepancies(),
            ["a review run left changes (1 files)"]
        );
        assert_eq!(r.claimed(), "done");
    }
}
