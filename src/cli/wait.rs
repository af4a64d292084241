//! `git crew wait RUN... [--any] [--timeout D]`.

use std::time::{Duration, Instant};

use clap::Args;
use serde::Serialize;

use super::context::CommandContext;
use super::error::{CrewError, Result, exit};
use super::progress::{Progress, elapsed};
use super::runs;
use super::ui::{Format, Report};
use crate::core::record::{Phase, RunRecord};
use crate::state::runs::RunStore;
use crate::sys::clock::now_millis;

const EXAMPLES: &str = "Examples:\n  git crew wait 20261202-101500-1a2b\n  git crew wait RUN1 RUN2 --any --timeout 10m";

/// Block until runs finish; print their results.
///
/// Footer only, never the transcript.
///
/// Exits 0 when every run passed, 5 when any needs help (and none failed), 1 otherwise;
/// 5 as well when --timeout expires first (the JSON says `"timed_out": true` and lists
/// the runs still working in `"still_working"`). On a terminal, stderr shows the runs
/// left and their phases while it waits.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct WaitArgs {
    /// The runs to wait for.
    #[arg(required = true, value_parser = super::runs::run_address, add = super::complete::runs())]
    pub runs: Vec<String>,
    /// Return as soon as one of them finishes.
    #[arg(long)]
    pub any: bool,
    /// Give up after this long (e.g. 90s, 10m).
    #[arg(long, value_name = "DURATION")]
    pub timeout: Option<String>,
}

pub fn run(ctx: &CommandContext, args: WaitArgs) -> Result<Report> {
    let timeout = args
        .timeout
        .as_deref()
        .map(|t| {
            humantime::parse_duration(t)
                .map_err(|e| CrewError::usage("bad-duration", format!("--timeout {t}: {e}")))
        })
        .transpose()?;
    let store = runs::settled(ctx)?;
    let mut resolved = Vec::new();
    for run in &args.runs {
        let run = runs::resolve(&store, run)?;
        runs::load(&store, &run)?;
        resolved.push(run);
    }
    wait_for(
        &store,
        ctx.workdir().ok(),
        ctx.format,
        &resolved,
        args.any,
        timeout,
    )
}

/// `wait` (and `dispatch --wait`): every run waited for, settled or not, and whether the
/// timeout came first (SPEC §2, `wait`'s `"runs"`).
#[derive(Debug, Serialize)]
pub struct WaitOutput<'a> {
    pub runs: Vec<crate::view::result::RunResult<'a>>,
    pub timed_out: bool,
    /// The runs waited for that have not settled (empty unless the timeout came first,
    /// or `--any` returned with others still going).
    pub still_working: Vec<StillWorking<'a>>,
}

/// A run `wait` stopped waiting for before it settled.
#[derive(Debug, Serialize)]
pub struct StillWorking<'a> {
    pub run: &'a str,
    pub task: &'a str,
    pub phase: Phase,
    pub elapsed_s: u64,
}

/// Whether `wait` stops waiting for a run: it ended, or it needs the lead.
fn settled(record: &RunRecord) -> bool {
    record.phase.is_final() || record.phase == Phase::NeedsHelp
}

/// Polls the runs until they settle (or one does, with `any`), then reports them; on a
/// terminal, a status line on stderr names the runs left meanwhile.
pub fn wait_for(
    store: &RunStore,
    repo_dir: Option<&std::path::Path>,
    format: Format,
    runs: &[String],
    any: bool,
    timeout: Option<Duration>,
) -> Result<Report> {
    let start = Instant::now();
    let mut last_check = Instant::now();
    let progress = Progress::for_runs();
    let (records, timed_out) = loop {
        let mut records = Vec::new();
        for run in runs {
            records.push(runs::load(store, run)?);
        }
        let done = records.iter().filter(|r| settled(r)).count();
        if (any && done > 0) || done == records.len() {
            break (records, false);
        }
        if timeout.is_some_and(|t| start.elapsed() >= t) {
            break (records, true);
        }
        let left: Vec<&RunRecord> = records.iter().filter(|r| !settled(r)).collect();
        progress.runs(&left, now_millis());
        std::thread::sleep(Duration::from_millis(100));
        // A supervisor may die, or a slot free up, while we wait: look about once a second.
        if last_check.elapsed() >= Duration::from_secs(1) {
            last_check = Instant::now();
            if let Some(repo_dir) = repo_dir {
                progress.suspend(|| {
                    let not_filed = crate::run::queue::settle(store, repo_dir).unwrap_or_default();
                    for row in not_filed {
                        super::ui::warn(&row.to_string());
                    }
                });
            }
        }
    };
    drop(progress);
    // With --any, the runs that settled are the answer; the others are still going.
    let judged: Vec<&RunRecord> = records.iter().filter(|r| !any || settled(r)).collect();
    let code = match crate::view::result::awaited(&judged, timed_out) {
        crate::view::result::Awaited::Passed => exit::OK,
        crate::view::result::Awaited::NeedsLead => exit::ATTENTION,
        crate::view::result::Awaited::Failed => exit::CHECK,
    };
    let now = now_millis();
    let still_working: Vec<StillWorking> = records
        .iter()
        .filter(|r| !settled(r))
        .map(|r| StillWorking {
            run: &r.run,
            task: &r.task,
            phase: r.phase,
            elapsed_s: crate::core::stamp::elapsed_s(r.started_at, now),
        })
        .collect();
    if timed_out && format == Format::Human {
        eprint!("{}", timed_out_note(timeout, &still_working));
    }
    let output = WaitOutput {
        runs: records.iter().map(runs::result).collect(),
        timed_out,
        still_working,
    };
    let human = records
        .iter()
        .map(runs::result_block)
        .collect::<Vec<_>>()
        .join("\n\n");
    let mut report = Report::of(&output, human);
    report.status = match code {
        exit::OK => super::ui::Status::Ok,
        exit::ATTENTION => super::ui::Status::Attention,
        _ => super::ui::Status::Failed(CrewError::check("run-failed", "not every run passed")),
    };
    Ok(report)
}

/// For people, on stderr: the wait gave up, on which runs, and what to do next.
fn timed_out_note(timeout: Option<Duration>, left: &[StillWorking]) -> String {
    let after = timeout.map_or(String::new(), |t| {
        format!(" after {}", elapsed(t.as_secs()))
    });
    let mut out = format!(
        "wait: timed out{after}; still working: {}\n",
        left.iter()
            .map(|r| format!(
                "{} ({} {} {})",
                r.task,
                r.run,
                r.phase.as_str(),
                elapsed(r.elapsed_s)
            ))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let runs: Vec<&str> = left.iter().map(|r| r.run).collect();
    out.push_str(&format!(
        "hint: git crew wait {} waits again; git crew status shows what they are doing\n",
        runs.join(" ")
    ));
    out
}
