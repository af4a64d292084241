//! The supervisor: `git crew` itself, detached, one per run. It starts the worker, keeps
//! the live pointer current, enforces the time budget and the idle watchdog, commits what
//! the worker left behind through the hooks, audits the branch against the scope,
//! extracts the footer (with one corrective retry), verifies, and files the run record.
//! It never trusts an exit code alone.
//!
//! By job: `launch` starts an attempt (its prompt, session and fenced worker process),
//! `capture` watches it and takes in what it left, `settle` gathers the facts of an ended
//! attempt and applies what `core::attempt::settled` makes of them. Ending a run from
//! outside is `run::reap`'s; filing is `run::filing`'s. The supervisor starts no other
//! run: it reports a freed slot in its [`Report`] and the scheduler (`run::queue`), which
//! calls it, starts the queued runs.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::run::error::{Context, Result, bail};

use super::backends::{self, Adapter, Attempt};
use super::filing::{self, NotFiled, measure, seal};
use super::process::{self, Ended, Spec};
use super::reap::end_outside;
use super::{prompt, verify};
use crate::core::attempt::{AfterIncomplete, Bound};
use crate::core::flight::Backend as BackendConfig;
use crate::core::record::{Outcome, Phase, RunRecord};
use crate::core::scope;
use crate::core::stamp;
use crate::git::{self, worktree};
use crate::state::runs::RunStore;
use crate::sys::clock::now_millis;

mod capture;
mod launch;
mod settle;
mod setup;
mod spend;

/// What driving a run (or taking a delivery) leaves for the layer above to do.
#[derive(Debug, Default)]
pub struct Report {
    /// The run let go of its backend's slot (it ended, or parked waiting for help): a
    /// queued run may start.
    pub freed_slot: bool,
    /// The run as it was when it moved to a phase the lead's notify command is told of.
    pub notice: Option<RunRecord>,
    /// Ledger rows that could not be written.
    pub not_filed: Vec<NotFiled>,
}

/// Drives run `run` to its end (or to `needs-help`), under the run's lock. Any failure of
/// the supervisor itself ends the run as `failed` with the reason, so no run is left
/// hanging. What the layer above does next (promote the queue, tell the lead) is in
/// `report`, filled whether or not the drive failed.
pub fn drive(
    repo: &crate::git::Repository,
    store: &RunStore,
    run: &str,
    report: &mut Report,
) -> Result<()> {
    // One supervisor per run, ever: held until it has driven the run.
    let _only = store
        .supervisor_lock(run)
        .with_context(|| format!("another supervisor drives run {run}"))?;
    let record = store
        .load(run)?
        .with_context(|| format!("no live run {run}"))?;
    if record.phase.is_final() {
        bail!("run {run} has already ended ({})", record.phase.as_str());
    }
    let mut sup = match Supervisor::new(repo, store, record.clone()) {
        Ok(sup) => sup,
        Err(err) => {
            // Nothing ran: the run ends as an infrastructure error, not left hanging.
            if let Some(ended) = end_outside(
                store,
                &repo_dir(repo),
                record,
                Outcome::Error,
                &format!("supervisor error: {}", crate::fault::chain(&err)),
            )? {
                report.notice = Some(ended.record);
                report.not_filed.extend(ended.not_filed);
            }
            return Err(err);
        }
    };
    // In a fleet, the run's claim on the remote is renewed while it is driven.
    let heartbeat =
        crate::run::fleet::Heartbeat::start(&repo_dir(repo), &store.run_dir(run), &record);
    let driven = sup.drive();
    drop(heartbeat);
    if let Err(err) = driven {
        let DriveError::Failed(err) = err else {
            // Abandoned (or reaped) while it ran: the record is already filed.
            if let Some(pid) = sup.record.pid {
                crate::sys::process::kill_group(pid);
            }
            sup.hand_over(report);
            return Ok(());
        };
        if let Some(pid) = sup.record.pid {
            crate::sys::process::kill_group(pid);
        }
        // The infrastructure failed, not the worker: its own outcome, never charged to
        // the model.
        sup.record.decision = Some(format!("supervisor error: {}", crate::fault::chain(&err)));
        let finished = sup.finish(Outcome::Error);
        sup.hand_over(report);
        finished?;
        return Err(err);
    }
    sup.hand_over(report);
    Ok(())
}

/// The repository's work tree (its git dir when it has none).
pub fn repo_dir(repo: &crate::git::Repository) -> PathBuf {
    repo.workdir()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| repo.common_dir().to_path_buf())
}

/// Why driving a run stopped before the supervisor brought it to its end.
#[derive(Debug, thiserror::Error)]
enum DriveError {
    /// The run's live pointer went away while the supervisor drove it: someone else ended
    /// it (abandon, the reaper), and filed its record.
    #[error("the run was ended from outside its supervisor")]
    EndedOutside,
    /// The supervisor itself failed.
    #[error(transparent)]
    Failed(#[from] crate::run::error::Error),
}

crate::run::error::failed_underneath!(DriveError);

/// Where a drive's error is the layer's: the supervisor failed, or the run was ended
/// from outside, said in words.
impl From<DriveError> for crate::run::error::Error {
    fn from(err: DriveError) -> crate::run::error::Error {
        match err {
            DriveError::Failed(err) => err,
            outside @ DriveError::EndedOutside => crate::run::error::Error::invalid(outside),
        }
    }
}

impl From<process::RunError> for DriveError {
    fn from(err: process::RunError) -> DriveError {
        DriveError::Failed(err.into())
    }
}

/// What a step of driving a run comes to.
type Driven<T = ()> = Result<T, DriveError>;

/// What a reply came to.
enum Judgement {
    /// Finished, or parked waiting for help: nothing more for this attempt.
    Settled,
    /// The footer is incomplete: the problem, for a corrective retry.
    Incomplete(String),
}

/// How a delivered reply (a native run) was taken.
#[derive(Debug, Clone, PartialEq)]
pub enum Delivered {
    /// The run ended or waits for help; see its record.
    Settled(Box<RunRecord>),
    /// The footer is incomplete; one more delivery is allowed.
    Incomplete(String),
}

/// Takes the reply of a `native` run (the lead's own sub-task) through the same path as
/// any worker's: settle the work, read the footer, verify. The first incomplete footer
/// leaves the run live for one corrected delivery; the second is a `footer-reject`.
pub fn deliver(
    repo: &crate::git::Repository,
    store: &RunStore,
    run: &str,
    reply: &str,
    report: &mut Report,
) -> Result<Delivered> {
    let record = store
        .load(run)?
        .with_context(|| format!("no live run {run}"))?;
    let mut sup = Supervisor::new(repo, store, record)?;
    sup.record.supervisor_pid = None;
    sup.record.attempts += 1;
    sup.record.phase = Phase::Working;
    std::fs::write(&sup.record.manifest, reply).context("cannot write the manifest")?;
    sup.attempt_ended();
    let delivered = match sup.judge(Ok(Some(reply.to_string())))? {
        Judgement::Settled => Delivered::Settled(Box::new(sup.record.clone())),
        Judgement::Incomplete(problem) => {
            match crate::core::attempt::after_incomplete_delivery(&problem, sup.record.attempts) {
                AfterIncomplete::Reject(decision) => {
                    sup.record.decision = Some(decision);
                    sup.finish(Outcome::FooterReject)?;
                    Delivered::Settled(Box::new(sup.record.clone()))
                }
                AfterIncomplete::Correct => {
                    sup.record.decision = Some(format!("footer incomplete: {problem}"));
                    sup.save()?;
                    Delivered::Incomplete(problem)
                }
            }
        }
    };
    sup.hand_over(report);
    Ok(delivered)
}

enum Next {
    Fresh(PathBuf),
    Resume(String, PathBuf),
}

struct Supervisor<'a> {
    repo: &'a crate::git::Repository,
    store: &'a RunStore,
    record: RunRecord,
    config: BackendConfig,
    adapter: Box<dyn Adapter>,
    deadline: Instant,
    run_dir: PathBuf,
    transcript: PathBuf,
    repo_dir: PathBuf,
    /// What the adapters noticed in the streams, kept for the run's discrepancies.
    warnings: Vec<String>,
    /// Set by a failed verify that continuation will try again.
    retry: Option<Next>,
    /// Whether an attempt of this run reported its session id (only then is it worth
    /// keeping for the run's standing worker).
    session_confirmed: bool,
    /// The worker's own environment (home, caches, variables).
    workenv: crate::run::workenv::WorkerEnv,
    /// The write fence of the run's processes, and their `TMPDIR`.
    fence: Option<crate::sys::fence::Fence>,
    tmp: Option<PathBuf>,
    /// Objects the run's processes wrote that were left out of the store (under false
    /// names, over `fences.max_file_size`, or past the time), and why.
    rejected_objects: Vec<crate::core::oversize::Refused>,
    /// When the work after the last attempt must be done (see `attempt_ended`).
    settle_by: Option<Instant>,
    /// The last attempt's stdout, as kept (capped at `fences.max_output`).
    last_stdout: Vec<u8>,
    /// What the layer above is to do once this supervisor is done: promote the queue,
    /// tell the lead, say which ledger rows were not written.
    report: Report,
    /// What this supervisor took out of the task's ref folder, for the discrepancies.
    strays: crate::run::strays::Swept,
}

impl<'a> Supervisor<'a> {
    /// The `env` of the run's backend, as the lead configured it.
    fn backend_env(&self) -> Vec<(String, String)> {
        self.config
            .env
            .clone()
            .unwrap_or_default()
            .into_iter()
            .collect()
    }

    fn new(
        repo: &'a crate::git::Repository,
        store: &'a RunStore,
        mut record: RunRecord,
    ) -> Result<Self> {
        let run_dir = store.run_dir(&record.run);
        let config: BackendConfig = crate::state::run_files::backend(&run_dir)?;
        // The live pointer must still say what dispatch sealed.
        if let Some(sealed) = git::seal::read(repo, &record.run)? {
            let mut facts = record.clone();
            facts.outcome = None;
            facts.verify = None;
            facts.verified_tip = None;
            let differs = sealed.differences(&facts);
            if !differs.is_empty() {
                bail!(
                    "the run's live pointer disagrees with its seal ({}): it was tampered with",
                    differs.join(", ")
                );
            }
        }
        // Whatever a worker starts — double-forked, `setsid`, its environment dropped —
        // comes back to this process when its parent dies, and ends with the attempt.
        crate::sys::process::become_subreaper();
        let adapter = backends::driver(record.adapter);
        let deadline_ms = crate::core::stamp::millis(record.deadline);
        let deadline =
            Instant::now() + Duration::from_millis(deadline_ms.saturating_sub(now_millis()));
        record.supervisor_pid = Some(std::process::id());
        // Transcripts disabled (`--transcripts ""`): the output still has to go somewhere.
        let transcript = record
            .transcript
            .as_ref()
            .map_or_else(|| PathBuf::from("/dev/null"), PathBuf::from);
        let repo_dir = repo_dir(repo);
        // The worker's own environment: its home, the workers' caches, its variables.
        let workenv = crate::run::workenv::prepare(&run_dir, &record, &config)?;
        let (fence, tmp) = match crate::run::fence::fenced(&record, &run_dir, &workenv)? {
            Some(base) => {
                let (fence, tmp) = crate::run::fence::for_run(
                    &crate::run::fence::RunPaths {
                        common_dir: repo.common_dir(),
                        worktree: Path::new(&record.worktree),
                        task: &record.task,
                        run_dir: &run_dir,
                        may_commit: record.role.may_commit(),
                    },
                    base,
                    &[
                        Path::new(&record.manifest),
                        &crate::core::layout::session(&run_dir),
                        &crate::core::layout::usage(&run_dir),
                    ],
                )?;
                (Some(fence), Some(tmp))
            }
            None => {
                // Unfenced, a run still gets its own temp folder.
                let tmp = crate::core::layout::tmp(&run_dir);
                std::fs::create_dir_all(&tmp).context("cannot create the run's temp folder")?;
                (None, Some(tmp))
            }
        };
        Ok(Supervisor {
            workenv,
            fence,
            tmp,
            repo,
            store,
            record,
            config,
            adapter,
            deadline,
            run_dir,
            transcript,
            repo_dir,
            warnings: Vec::new(),
            retry: None,
            session_confirmed: false,
            rejected_objects: Vec::new(),
            settle_by: None,
            last_stdout: Vec::new(),
            report: Report::default(),
            strays: Default::default(),
        })
    }

    /// Moves what this supervisor has for the layer above into `report`.
    fn hand_over(&mut self, report: &mut Report) {
        let mine = std::mem::take(&mut self.report);
        report.freed_slot |= mine.freed_slot;
        if mine.notice.is_some() {
            report.notice = mine.notice;
        }
        report.not_filed.extend(mine.not_filed);
    }

    fn save(&self) -> Driven {
        if self.store.update_live(&self.record)? {
            Ok(())
        } else {
            Err(DriveError::EndedOutside)
        }
    }

    /// Marks the end of an attempt (its worker gone, or a native run's reply handed in):
    /// what git-crew does about it must be done by the deadline plus the grace
    /// (`core::oversize::GRACE`) — or the grace from now, for a reply that came after the
    /// deadline.
    fn attempt_ended(&mut self) {
        self.settle_by = Some(self.deadline.max(Instant::now()) + crate::core::oversize::GRACE);
    }

    /// How git-crew's own git runs in the run's worktree after an attempt: inside the
    /// run's write fence, and done by the time [`Supervisor::attempt_ended`] set.
    fn bound(&self) -> worktree::Bound {
        worktree::Bound {
            fence: self.fence.clone(),
            until: self
                .settle_by
                .unwrap_or(self.deadline + crate::core::oversize::GRACE),
        }
    }

    /// Why the run is past its spend fence, if it is.
    fn spent(&self) -> Option<String> {
        let total = self.record.usage.as_ref()?.total;
        crate::core::usage::SpendFence::of(&self.record).breached(&total)
    }

    /// Ends a run that ran out of `bound`: the work it left is kept if it can be, and a
    /// scope rejection found on the way outranks the timeout (`core::attempt::out_of_bounds`).
    fn out_of_bounds(&mut self, bound: Bound) -> Driven {
        let work = self.settle_work().ok().flatten();
        let (outcome, decision) = crate::core::attempt::out_of_bounds(&bound, work.as_ref());
        self.record.decision = Some(decision);
        self.finish(outcome)
    }

    fn drive(&mut self) -> Driven {
        // The worktree is readied once per run, before its first attempt: an `advise`
        // or a continuation finds it ready.
        if self.record.setup.as_ref().is_some_and(|s| !s.ran())
            && let Some(problem) = self.ready_worktree()?
        {
            self.record.decision = Some(crate::core::toolchain::setup_decision(&problem));
            return self.finish(Outcome::Error);
        }
        self.record.phase = Phase::Working;
        self.save()?;
        let mut next = self.first_prompt()?;
        let mut corrected = false;
        loop {
            // A run past its spend fence starts no other attempt: no continuation, no
            // corrective retry, no resume.
            if let Some(reason) = self.spent() {
                return self.out_of_bounds(Bound::Spent(Some(reason)));
            }
            let ended = self.attempt(&next)?;
            match ended {
                Ended::Deadline => return self.out_of_bounds(Bound::Deadline),
                Ended::Idle => {
                    return self.out_of_bounds(Bound::Idle {
                        silent_s: self.record.idle_timeout_s.unwrap_or_default(),
                    });
                }
                Ended::Stopped => return self.out_of_bounds(Bound::Spent(self.spent())),
                Ended::Exited(_) => {}
            }
            let reply = self.reply();
            let problem = match self.judge(reply)? {
                Judgement::Settled => match self.retry.take() {
                    Some(again) => {
                        next = again;
                        corrected = false;
                        continue;
                    }
                    None => return Ok(()),
                },
                Judgement::Incomplete(problem) => problem,
            };
            if let AfterIncomplete::Reject(decision) = crate::core::attempt::after_incomplete(
                &problem,
                corrected,
                self.record.attempts,
                self.record.max_attempts,
            ) {
                self.record.decision = Some(decision);
                return self.finish(Outcome::FooterReject);
            }
            corrected = true;
            let file = crate::core::layout::corrective(&self.run_dir, self.record.attempts);
            std::fs::write(&file, prompt::corrective(&self.record, &problem))
                .context("cannot write the corrective prompt")?;
            next = self.continue_with(file)?;
        }
    }
}
