//! The supervisor: `git crew` itself, detached, one per run. It starts the worker, keeps
//! the live pointer current, enforces the time budget and the idle watchdog, commits what
//! the worker left behind through the hooks, audits the branch against the scope,
//! extracts the footer (with one corrective retry), verifies, and files the run record.
//! It never trusts an exit code alone.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use super::backends::{self, Adapter, Attempt};
use super::process::{self, Ended, Spec};
use super::{prompt, verify};
use crate::core::attempt::{AfterIncomplete, Continuation};
use crate::core::flight::Backend as BackendConfig;
use crate::core::record::{DiffStat, Outcome, Phase, RunRecord};
use crate::core::scope::{self, RunIdentity};
use crate::git::{self, worktree};
use crate::state::runs::RunStore;
use crate::sys::clock::{now_millis, rfc3339};

/// Drives run `run` to its end (or to `needs-help`). Any failure of the supervisor itself
/// ends the run as `failed` with the reason, so no run is left hanging.
pub fn supervise(repo: &crate::git::Repository, store: &RunStore, run: &str) -> anyhow::Result<()> {
    // One supervisor per run, ever: held until this process is gone.
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
            let repo_dir = repo
                .workdir()
                .map(Path::to_path_buf)
                .unwrap_or_else(|| repo.common_dir().to_path_buf());
            end_outside(
                store,
                &repo_dir,
                record,
                Outcome::Error,
                &format!("supervisor error: {err:#}"),
            )?;
            return Err(err);
        }
    };
    if let Err(err) = sup.drive() {
        if err.downcast_ref::<EndedOutside>().is_some() {
            // Abandoned (or reaped) while it ran: the record is already filed.
            if let Some(pid) = sup.record.pid {
                crate::sys::process::kill_group(pid);
            }
            return Ok(());
        }
        if let Some(pid) = sup.record.pid {
            crate::sys::process::kill_group(pid);
        }
        // The infrastructure failed, not the worker: its own outcome, never charged to
        // the model.
        sup.record.decision = Some(format!("supervisor error: {err:#}"));
        sup.finish(Outcome::Error)?;
        return Err(err);
    }
    Ok(())
}

/// The run's live pointer went away while the supervisor drove it: someone else ended it.
#[derive(Debug, thiserror::Error)]
#[error("the run was ended from outside its supervisor")]
struct EndedOutside;

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
) -> anyhow::Result<Delivered> {
    let record = store
        .load(run)?
        .with_context(|| format!("no live run {run}"))?;
    let mut sup = Supervisor::new(repo, store, record)?;
    sup.record.supervisor_pid = None;
    sup.record.attempts += 1;
    sup.record.phase = Phase::Working;
    std::fs::write(&sup.record.manifest, reply).context("cannot write the manifest")?;
    match sup.judge(Some(reply.to_string()))? {
        Judgement::Settled => Ok(Delivered::Settled(Box::new(sup.record))),
        Judgement::Incomplete(problem) if sup.record.attempts >= 2 => {
            sup.record.decision = Some(format!(
                "footer rejected after one corrective delivery: {problem}"
            ));
            sup.finish(Outcome::FooterReject)?;
            Ok(Delivered::Settled(Box::new(sup.record)))
        }
        Judgement::Incomplete(problem) => {
            sup.record.decision = Some(format!("footer incomplete: {problem}"));
            sup.save()?;
            Ok(Delivered::Incomplete(problem))
        }
    }
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
    /// The write fence of the run's processes, and their `TMPDIR`.
    fence: Option<crate::sys::fence::Fence>,
    tmp: Option<PathBuf>,
    /// Objects the run's processes wrote under false names (left out of the store).
    rejected_objects: Vec<String>,
    /// The last attempt's stdout, as kept (capped at `fences.max_output`).
    last_stdout: Vec<u8>,
}

impl<'a> Supervisor<'a> {
    fn new(
        repo: &'a crate::git::Repository,
        store: &'a RunStore,
        mut record: RunRecord,
    ) -> anyhow::Result<Self> {
        let run_dir = store.run_dir(&record.run);
        let config: BackendConfig = serde_json::from_slice(
            &std::fs::read(crate::core::layout::backend_config(&run_dir))
                .context("cannot read the run's backend config")?,
        )?;
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
        let adapter = backends::adapter(&record.adapter).map_err(anyhow::Error::msg)?;
        let deadline_ms = humantime::parse_rfc3339(&record.deadline)
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(now_millis(), |d| d.as_millis() as u64);
        let deadline =
            Instant::now() + Duration::from_millis(deadline_ms.saturating_sub(now_millis()));
        record.supervisor_pid = Some(std::process::id());
        // Transcripts disabled (`--transcripts ""`): the output still has to go somewhere.
        let transcript = record
            .transcript
            .as_ref()
            .map_or_else(|| PathBuf::from("/dev/null"), PathBuf::from);
        let repo_dir = repo
            .workdir()
            .map(Path::to_path_buf)
            .unwrap_or_else(|| repo.common_dir().to_path_buf());
        let (fence, tmp) = match super::fence::base_for(&record, &run_dir)? {
            Some(base) => {
                let (fence, tmp) = super::fence::for_run(
                    &super::fence::RunPaths {
                        common_dir: repo.common_dir(),
                        worktree: Path::new(&record.worktree),
                        task: &record.task,
                        run_dir: &run_dir,
                        may_commit: scope::Role::parse(&record.role)
                            .is_some_and(scope::Role::may_commit),
                    },
                    base,
                    Path::new(&record.manifest),
                    &crate::core::layout::session(&run_dir),
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
            last_stdout: Vec::new(),
        })
    }

    /// Brings what the run's processes wrote into its object quarantine into the
    /// repository's store, each object hashed again; a false one is kept out and noted.
    fn import_objects(&mut self) -> anyhow::Result<()> {
        if self.fence.is_none() {
            return Ok(());
        }
        let imported = git::objects::import(self.repo, &super::fence::quarantine(&self.run_dir))?;
        self.rejected_objects.extend(imported.rejected);
        Ok(())
    }

    fn save(&self) -> anyhow::Result<()> {
        if self.store.update_live(&self.record)? {
            Ok(())
        } else {
            Err(EndedOutside.into())
        }
    }

    fn drive(&mut self) -> anyhow::Result<()> {
        self.record.phase = Phase::Working;
        self.save()?;
        let mut next = self.first_prompt()?;
        let mut corrected = false;
        loop {
            let ended = self.attempt(&next)?;
            match ended {
                Ended::Deadline => {
                    // The work is kept if it can be; the outcome stays a timeout.
                    let _ = self.settle_work();
                    self.record.decision = Some("the time budget was spent".into());
                    return self.finish(Outcome::Timeout);
                }
                Ended::Idle => {
                    let _ = self.settle_work();
                    let idle = self.record.idle_timeout_s.unwrap_or_default();
                    self.record.decision =
                        Some(format!("the worker was silent for {idle}s (idle watchdog)"));
                    return self.finish(Outcome::Timeout);
                }
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

    /// The next attempt with `file` as its prompt: the same session where the backend can
    /// resume it, else a fresh session given the original prompt with `file` appended (a
    /// fresh session knows nothing of the task).
    fn continue_with(&self, file: PathBuf) -> anyhow::Result<Next> {
        let resumable = self.config.session_reuse.unwrap_or(true) && self.adapter_resumes();
        match (&self.record.session, resumable) {
            (Some(session), true) => Ok(Next::Resume(session.clone(), file)),
            _ => {
                let combined =
                    crate::core::layout::restart(&self.run_dir, self.record.attempts + 1);
                let mut text = std::fs::read_to_string(&self.record.prompt_file)?;
                text.push_str("\n\n");
                text.push_str(&std::fs::read_to_string(&file)?);
                std::fs::write(&combined, text)?;
                Ok(Next::Fresh(combined))
            }
        }
    }

    /// Judges a reply: the work is settled against the scope, then the footer is read.
    /// A request for help parks the run; a complete footer goes on to verify; an
    /// incomplete one is handed back to the caller, which owns the corrective retry.
    fn judge(&mut self, reply: Option<String>) -> anyhow::Result<Judgement> {
        let reading = crate::core::attempt::read_reply(reply.as_deref());
        // What the worker claimed is recorded before the facts are checked: the ledger
        // keeps the claim next to the measured outcome.
        if reading.footer.is_some() {
            self.record.footer = reading.footer;
        }
        if let Some((outcome, reason)) = self.settle_work()? {
            self.record.decision = Some(reason);
            self.finish(outcome)?;
            return Ok(Judgement::Settled);
        }
        if let Some(help) = reading.help {
            // A handoff is not a failure: the run waits for `advise`.
            self.record.needs_help = Some(help);
            self.record.phase = Phase::NeedsHelp;
            self.record.pid = None;
            // This supervisor exits now: a pid kept here could be recycled by the time
            // someone abandons the run.
            self.record.supervisor_pid = None;
            self.record.parked_at = Some(rfc3339(now_millis()));
            self.record.decision = Some("the worker asked for help".into());
            self.save()?;
            // Parked, it holds no slot: a queued run may start.
            let _ = super::queue::promote(self.store, &self.repo_dir);
            return Ok(Judgement::Settled);
        }
        if let Some(problem) = reading.problem {
            return Ok(Judgement::Incomplete(problem));
        }
        self.verify()?;
        Ok(Judgement::Settled)
    }

    /// What the first attempt of this supervisor sends: the worker prompt, or — after
    /// `advise` — the advice, resuming the same session where the backend can (else a
    /// fresh session with the original prompt and the advice).
    fn first_prompt(&mut self) -> anyhow::Result<Next> {
        let next_file = crate::core::layout::next_prompt(&self.run_dir);
        let Ok(path) = std::fs::read_to_string(&next_file) else {
            let prompt = PathBuf::from(&self.record.prompt_file);
            // A standing worker keeps its memory: its last session is resumed in this
            // worktree where the backend allows it.
            if let Some(session) = self.worker_session() {
                self.record.session = Some(session.clone());
                self.save()?;
                return Ok(Next::Resume(session, prompt));
            }
            return Ok(Next::Fresh(prompt));
        };
        std::fs::remove_file(&next_file)?;
        self.continue_with(PathBuf::from(path.trim()))
    }

    /// The last session of the run's standing worker, when it can be resumed here: the
    /// same backend, sessions reused, and resumable from another worktree.
    fn worker_session(&self) -> Option<String> {
        let worker = self.record.worker.as_ref()?;
        if self.record.session.is_some()
            || !self.config.session_reuse.unwrap_or(true)
            || !crate::state::sessions::resumable_across_worktrees(&self.record.adapter)
            || !self.adapter_resumes()
        {
            return None;
        }
        let sessions = crate::state::sessions::load(self.store.root());
        let last = sessions.workers.get(worker)?;
        (last.backend == self.record.backend).then(|| last.session.clone())
    }

    fn adapter_resumes(&self) -> bool {
        let probe = Attempt {
            record: &self.record,
            config: &self.config,
            prompt_file: Path::new(""),
            prompt: "",
        };
        self.adapter.resume(&probe, "probe").is_some()
    }

    /// Runs one attempt to its end.
    fn attempt(&mut self, next: &Next) -> anyhow::Result<Ended> {
        self.record.attempts += 1;
        let n = self.record.attempts;
        let manifest = PathBuf::from(&self.record.manifest);
        if std::fs::metadata(&manifest).is_ok_and(|m| m.len() > 0) {
            // A manifest from an earlier attempt must never be read as this one's reply.
            let _ = std::fs::rename(
                &manifest,
                crate::core::layout::manifest_of_attempt(&self.run_dir, n - 1),
            );
        }
        if self.fence.is_some() && !manifest.exists() {
            // The fence lets the worker write its manifest, not create files beside it.
            std::fs::write(&manifest, "").context("cannot create the manifest")?;
        }
        let (prompt_file, session) = match next {
            Next::Fresh(file) => (file.clone(), None),
            Next::Resume(session, file) => (file.clone(), Some(session.clone())),
        };
        let prompt_text =
            std::fs::read_to_string(&prompt_file).context("cannot read the prompt")?;
        let attempt = Attempt {
            record: &self.record,
            config: &self.config,
            prompt_file: &prompt_file,
            prompt: &prompt_text,
        };
        let launch = match &session {
            Some(id) => self
                .adapter
                .resume(&attempt, id)
                .unwrap_or_else(|| self.adapter.launch(&attempt))?,
            None => self.adapter.launch(&attempt)?,
        };
        let session_file = crate::core::layout::session(&self.run_dir);
        let mut header = process::open_append(&self.transcript)?;
        std::io::Write::write_all(
            &mut header,
            format!(
                "\n===== git-crew run {} task {} attempt {n} backend {} model {} at {}{} =====\n",
                self.record.run,
                self.record.task,
                self.record.backend,
                self.record.model.as_deref().unwrap_or("-"),
                rfc3339(now_millis()),
                session
                    .as_deref()
                    .map(|s| format!(" resuming {s}"))
                    .unwrap_or_default(),
            )
            .as_bytes(),
        )?;
        let env = crate::core::attempt::worker_env(
            &self.record,
            n,
            &crate::core::attempt::WorkerPaths {
                session_file: session_file.to_string_lossy().into_owned(),
                tmp: self.tmp.as_ref().map(|t| t.to_string_lossy().into_owned()),
            },
            session.as_deref(),
            &self
                .config
                .env
                .clone()
                .unwrap_or_default()
                .into_iter()
                .collect::<Vec<_>>(),
        );
        let stdout_file = crate::core::layout::attempt_output(&self.run_dir, n, "out");
        let stderr_file = crate::core::layout::attempt_output(&self.run_dir, n, "err");
        let spec = Spec {
            program: launch.program,
            args: launch.args,
            cwd: PathBuf::from(&self.record.worktree),
            env,
            transcript: self.transcript.clone(),
            stdout_file: stdout_file.clone(),
            stderr_file: stderr_file.clone(),
            max_output: self.record.max_output.unwrap_or(super::output::DEFAULT_CAP),
            fence: self.fence.clone(),
        };
        let running = process::start(&spec)?;
        self.record.pid = Some(running.pid);
        self.record.last_activity_at = Some(rfc3339(running.last_activity()));
        self.save()?;
        let idle = self.record.idle_timeout_s.map(Duration::from_secs);
        let store = self.store;
        let record = &mut self.record;
        let pid = running.pid;
        let ended = running.watch(self.deadline, idle, &mut |activity| {
            record.last_activity_at = Some(rfc3339(activity));
            if let Ok(false) = store.update_live(record) {
                // Ended from outside: stop the worker; the next save reports it.
                crate::sys::process::kill_group(pid);
            }
        })?;
        self.record.pid = None;
        self.import_objects()?;
        // A worker killed in the middle of `git add` or `git commit` leaves the index lock
        // behind; nothing else can hold it now.
        worktree::clear_index_lock(
            &self
                .repo
                .common_dir()
                .join("worktrees")
                .join(&self.record.run),
        );
        // Capped at `fences.max_output`, so this never holds more than that.
        let stdout = std::fs::read(&stdout_file).unwrap_or_default();
        if let Some(id) = self.adapter.session(&stdout, &session_file) {
            self.record.session = Some(id);
            self.session_confirmed = true;
        }
        self.warnings.extend(self.adapter.warnings(&stdout));
        self.last_stdout = stdout;
        // The output is in the transcript now: stored once. Without a transcript the
        // attempt's files are its only copy, and stay.
        if self.record.transcript.is_some() {
            let _ = std::fs::remove_file(&stdout_file);
            let _ = std::fs::remove_file(&stderr_file);
        }
        self.save()?;
        Ok(ended)
    }

    /// The attempt's reply: the manifest when the worker wrote one, else what the adapter
    /// reads from its output.
    fn reply(&self) -> Option<String> {
        if let Ok(text) = std::fs::read_to_string(&self.record.manifest)
            && !text.trim().is_empty()
        {
            return Some(text);
        }
        let reply = self
            .adapter
            .reply(&self.last_stdout)
            .filter(|r| !r.trim().is_empty())?;
        // The manifest is the reply (SPEC §2): written from the final message when the
        // worker did not write it itself — unless `fences.manifest_required` is off.
        if self.record.manifest_required != Some(false) {
            let _ = std::fs::write(&self.record.manifest, &reply);
        }
        Some(reply)
    }

    /// Commits what the worker left uncommitted (through the hooks) and audits the whole
    /// branch against the scope; the reason for a scope rejection, if any.
    fn settle_work(&mut self) -> anyhow::Result<Option<(Outcome, String)>> {
        let wt = PathBuf::from(&self.record.worktree);
        // The worker is gone (its whole tree reaped): what it wrote into the worktree's
        // administration is put back before git-crew runs git there.
        let identity = self.record.identity();
        // What the worker did to the administration is its doing: a scope rejection, never
        // an infrastructure error that would spare it the two-failure rule.
        let tampered = |why: String| {
            Ok(Some((
                Outcome::ScopeReject,
                format!("the worktree's administration was tampered with: {why}"),
            )))
        };
        // The administration as dispatch made it, or why the worker's doing prevents it.
        let restore = || match worktree::RunTree::restore(self.repo.common_dir(), &wt, &identity) {
            Ok(tree) if tree.replaced.is_empty() => Ok(tree),
            Ok(tree) => Err(format!("{} replaced", tree.replaced.join(", "))),
            Err(e) => Err(format!("{e:#}")),
        };
        let mut tree = match restore() {
            Ok(tree) => tree,
            Err(why) => return tampered(why),
        };
        let read_only = !scope::Role::parse(&self.record.role).is_some_and(scope::Role::may_commit);
        if read_only {
            let dirty = match tree.is_dirty() {
                Ok(dirty) => dirty,
                Err(e) => return tampered(format!("git cannot read the worktree: {e:#}")),
            };
            if dirty {
                return Ok(Some((
                    Outcome::ScopeReject,
                    format!("a {} run left changes in its worktree", self.record.role),
                )));
            }
        } else {
            let message = format!(
                "crew: work left uncommitted by run {} (task {})",
                self.record.run, self.record.task
            );
            // What is left of the budget, and ten seconds more for a run that ran out of it.
            let limit = self
                .deadline
                .saturating_duration_since(std::time::Instant::now())
                + Duration::from_secs(10);
            let committed = tree.commit_all(&message, limit, self.fence.clone());
            // The commit's hooks ran the worker's code too: nothing they started stays,
            // and what they wrote into the administration is put back.
            process::reap_orphans();
            self.import_objects()?;
            tree = match restore() {
                Ok(tree) => tree,
                Err(why) => return tampered(why),
            };
            let committed = match committed {
                Ok(committed) => committed,
                Err(e) => return tampered(format!("git cannot read the worktree: {e:#}")),
            };
            if let worktree::Commit::Refused(output) = committed {
                // Whether the scope refused it is decided here, by the same check the hook
                // runs, on what is staged — never read from the hook's words. Any other
                // refusal (a lint hook, a missing identity) is a failure.
                let violations = match tree.staged() {
                    Ok(changes) => scope::check_commit(&identity, &changes),
                    Err(e) => return tampered(format!("git cannot read the worktree: {e:#}")),
                };
                let scope_lines: Vec<String> = violations.iter().map(ToString::to_string).collect();
                return Ok(Some(if scope_lines.is_empty() {
                    (
                        Outcome::Fail,
                        format!(
                            "a hook refused the commit of the work left behind: {}",
                            output.trim()
                        ),
                    )
                } else {
                    (
                        Outcome::ScopeReject,
                        format!(
                            "the commit of the work left behind was refused: {}",
                            scope_lines.join("; ")
                        ),
                    )
                }));
            }
        }
        if !self.rejected_objects.is_empty() {
            return Ok(Some((
                Outcome::ScopeReject,
                format!(
                    "the run wrote objects whose content does not match their names: {}",
                    self.rejected_objects.join(", ")
                ),
            )));
        }
        // The run's branch, read from the repository's refs (not through the worktree's
        // own `.git` link, which the worker can rewrite), is what gets audited and verified.
        let base = crate::git::refs::oid(&self.record.base)?;
        let Some(tip) = git::merge::branch_tip(self.repo, &self.record.branch)? else {
            return Ok(Some((
                Outcome::ScopeReject,
                format!("the run's branch {} is gone", self.record.branch),
            )));
        };
        let head = tree.head(self.repo);
        if head != Some(tip) {
            return Ok(Some((
                Outcome::ScopeReject,
                format!(
                    "the worktree is not at its run's branch {} ({}): work elsewhere is not the run's",
                    self.record.branch,
                    head.map_or("no HEAD".to_string(), |h| h.to_string())
                ),
            )));
        }
        if base == tip {
            return Ok(None);
        }
        if !git::merge::is_ancestor(self.repo, base, tip) {
            return Ok(Some((
                Outcome::ScopeReject,
                format!(
                    "the branch {} no longer descends from its base {base}: it was rewritten",
                    self.record.branch
                ),
            )));
        }
        // The target's commits a worker merged in are not its own: the same start as
        // integrate's audit.
        let target = match &self.record.base_ref {
            Some(target) => git::merge::branch_tip(self.repo, target)?,
            None => None,
        };
        let own = super::integrate::own_base(self.repo, base, tip, target);
        let changes = git::diff::changed_paths(self.repo, own, tip)?;
        if changes.is_empty() {
            return Ok(None);
        }
        let identity = RunIdentity {
            run: self.record.run.clone(),
            task: self.record.task.clone(),
            role: self.record.role.clone(),
            scope: self.record.scope.clone(),
        };
        let violations = scope::check_commit(&identity, &changes);
        if violations.is_empty() {
            return Ok(None);
        }
        let text: Vec<String> = violations.iter().map(ToString::to_string).collect();
        Ok(Some((
            Outcome::ScopeReject,
            format!("the branch breaks its fences: {}", text.join("; ")),
        )))
    }

    fn verify(&mut self) -> anyhow::Result<()> {
        let Some(command) = self.record.verify_command.clone() else {
            // The lead asked for no verify: the footer is the acceptance, for this commit.
            self.record.verified_tip =
                git::merge::branch_tip(self.repo, &self.record.branch)?.map(|t| t.to_string());
            self.record.decision = Some("accepted on its footer (no verify command)".into());
            return self.finish(Outcome::Pass);
        };
        self.record.phase = Phase::Verifying;
        self.save()?;
        let dir = crate::core::layout::verifier(&self.run_dir, self.record.attempts);
        let wt = PathBuf::from(&self.record.worktree);
        // The verdict is for the branch's tip as it was checked out when verify started
        // (settle_work made sure the worktree is there, clean); a verify command that
        // moves the branch leaves the new tip unverified.
        let tested = git::merge::branch_tip(self.repo, &self.record.branch)?;
        match verify::run(
            &self.record.run,
            &command,
            &wt,
            &dir,
            &self.transcript,
            self.deadline,
            self.fence.as_ref(),
        )? {
            verify::Verified::Timeout => {
                self.record.decision = Some("the verifier ran out of the time budget".into());
                self.finish(Outcome::Timeout)
            }
            verify::Verified::Done(result) => {
                let passed = result.passed;
                self.record.verified_tip = tested.map(|t| t.to_string());
                self.record.decision = Some(crate::core::attempt::verify_decision(&result));
                self.record.verify = Some(result);
                if !passed
                    && self.record.continue_until_pass
                    && self.record.adapter != "native"
                    && let Some(next) = self.continuation(&dir)?
                {
                    self.retry = Some(next);
                    self.record.phase = Phase::Working;
                    return self.save();
                }
                self.finish(if passed { Outcome::Pass } else { Outcome::Fail })
            }
        }
    }

    /// After a failed verify under `--continue-until-pass`: asks the two-failure rule
    /// (counting this attempt) and the run's attempt limit, and — while both say go on and
    /// budget remains — files this attempt's row and gives the next attempt: the same
    /// session with a plain rejection (no verifier details) where the backend resumes,
    /// else a fresh session with the verifier's feedback. When it stops, the run's finish
    /// files the last attempt's row: one row per attempt, whichever path files it.
    fn continuation(&mut self, verifier_dir: &Path) -> anyhow::Result<Option<Next>> {
        let key =
            crate::core::ledger::failure_key(self.record.model.as_deref(), &self.record.backend);
        let earlier = {
            let repo = crate::git::repo::open(&self.repo_dir)?;
            let rows = super::ledger::rows(&repo, Some(&self.record.task))?;
            crate::core::policy::failures(&rows, &self.record.task, &key)
        };
        let resumable = self.record.session.is_some()
            && self.config.session_reuse.unwrap_or(true)
            && self.adapter_resumes();
        let decided =
            crate::core::attempt::continuation(&crate::core::attempt::ContinuationFacts {
                earlier_failures: earlier,
                key: &key,
                threshold: self.record.failure_threshold,
                attempts: self.record.attempts,
                max_attempts: self.record.max_attempts,
                budget_left: self
                    .deadline
                    .saturating_duration_since(std::time::Instant::now()),
                resumable,
            });
        let resume = match decided {
            Continuation::Go { resume } => resume,
            Continuation::Stop(decision) => {
                if decision.is_some() {
                    self.record.decision = decision;
                }
                return Ok(None);
            }
        };
        let mut attempt_row = self.record.clone();
        attempt_row.outcome = Some(Outcome::Fail);
        measure(&mut attempt_row, &self.repo_dir, now_millis());
        file_ledger_row(&self.repo_dir, &attempt_row);
        let read = |name: &str| std::fs::read_to_string(verifier_dir.join(name)).ok();
        let feedback = crate::core::attempt::verifier_feedback(
            read("failure.txt").as_deref(),
            read("reward.json").as_deref(),
            read("reward.txt").as_deref(),
        );
        let text = crate::core::attempt::continuation_prompt(resume, &feedback);
        let file = crate::core::layout::continuation(&self.run_dir, self.record.attempts);
        std::fs::write(&file, text)?;
        self.continue_with(file).map(Some)
    }

    /// Files the run record: outcome, diff, discrepancies; unlocks the worktree.
    fn finish(&mut self, outcome: Outcome) -> anyhow::Result<()> {
        // What a verify wrote, too: the store holds everything the branch needs.
        let _ = self.import_objects();
        seal(&mut self.record, outcome, &self.repo_dir);
        self.record
            .discrepancies
            .extend(self.warnings.iter().cloned());
        // The worker's session is filed before the run shows as finished, so the next run
        // of the worker (promoted the moment this one ends) resumes this session; and only
        // when this run confirmed it, so a dead session is not carried on.
        if let (Some(worker), Some(session), true) = (
            &self.record.worker,
            &self.record.session,
            self.session_confirmed,
        ) {
            let _ = crate::state::sessions::record(
                self.store.root(),
                worker,
                crate::state::sessions::WorkerSession {
                    backend: self.record.backend.clone(),
                    session: session.clone(),
                    run: self.record.run.clone(),
                    updated_at: rfc3339(now_millis()),
                },
            );
        }
        // The verdict is sealed before the run shows as finished.
        git::seal::seal_verdict(self.repo, &self.record)?;
        let (record, repo_dir) = (&self.record, &self.repo_dir);
        if !self
            .store
            .finish(record, || file_ledger_row(repo_dir, record))?
        {
            return Err(EndedOutside.into());
        }
        // A slot is free: a queued run of this backend (or of this worker) may start.
        let _ = super::queue::promote(self.store, &self.repo_dir);
        Ok(())
    }
}

/// Appends a finished run's ledger row; a failure is reported, never fatal to the run.
fn file_ledger_row(repo_dir: &Path, record: &RunRecord) {
    if let Err(err) = super::ledger::append(repo_dir, record) {
        eprintln!(
            "warning: the ledger row of run {} was not written: {err:#}",
            record.run
        );
    }
}

/// Completes a record for filing: outcome, final phase, times, the branch's diff,
/// discrepancies; and unlocks the worktree (kept, with its branch).
fn seal(record: &mut RunRecord, outcome: Outcome, repo_dir: &Path) {
    record.outcome = Some(outcome);
    record.phase = outcome.final_phase();
    record.pid = None;
    measure(record, repo_dir, now_millis());
    record.discrepancies = record.find_discrepancies();
    let _ = worktree::unlock(repo_dir, Path::new(&record.worktree));
}

/// What an attempt's row reports when it ends at `now`: the time, the wall clock and the
/// branch's diff since its base. The same for every path that files a row.
fn measure(record: &mut RunRecord, repo_dir: &Path, now: u64) {
    record.finished_at = Some(rfc3339(now));
    record.elapsed_s = elapsed_s(&record.started_at, now);
    if let Ok((files, insertions, deletions)) =
        worktree::numstat(repo_dir, &record.base, &record.branch)
    {
        record.diff = DiffStat {
            files,
            insertions,
            deletions,
        };
    }
}

/// Whole seconds between an RFC 3339 time and `now` (milliseconds since the epoch).
pub fn elapsed_s(started_at: &str, now: u64) -> u64 {
    humantime::parse_rfc3339(started_at)
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| now.saturating_sub(d.as_millis() as u64) / 1000)
}

/// Ends a live run as `abandoned`: its supervisor and every process working for it are
/// killed; its branch, commits and worktree are kept. `None` when the run had already
/// ended (its supervisor or another process got there first).
pub fn abandon(
    store: &RunStore,
    repo_dir: &Path,
    record: RunRecord,
    why: &str,
) -> anyhow::Result<Option<RunRecord>> {
    end_outside(store, repo_dir, record, Outcome::Abandoned, why)
}

/// Ends a live run from outside its attempt loop with `outcome`: kills whatever still
/// works for it, files it under its sealed facts, keeps its branch and worktree. `None`
/// when the run had already ended.
fn end_outside(
    store: &RunStore,
    repo_dir: &Path,
    mut record: RunRecord,
    outcome: Outcome,
    why: &str,
) -> anyhow::Result<Option<RunRecord>> {
    process::kill_run(&record.run, record.supervisor_pid);
    // Its supervisor died while it filed the run: that filing is completed, never
    // overwritten — when the seal holds the same verdict.
    if let Some(done) = complete_filed(store, repo_dir, &record.run)? {
        return Ok(Some(done));
    }
    // What is filed (task, scope, branch) comes from the seal, not from the pointer.
    let repo = crate::git::repo::open(repo_dir).ok();
    let differed = match &repo {
        Some(repo) => git::seal::restore(repo, &mut record).unwrap_or_default(),
        None => Vec::new(),
    };
    record.decision = Some(if differed.is_empty() {
        why.to_string()
    } else {
        format!(
            "{why}; its live pointer disagreed with its seal ({}), the seal was kept",
            differed.join(", ")
        )
    });
    if let Some(repo) = &repo {
        // What its processes wrote (its commits) comes into the store, each object
        // hashed again.
        let _ = git::objects::import(repo, &super::fence::quarantine(&store.run_dir(&record.run)));
        // Its processes are gone: what it wrote into its worktree's administration goes
        // too, so no later git command there runs it or chokes on it.
        let _ = worktree::RunTree::restore(
            repo.common_dir(),
            Path::new(&record.worktree),
            &record.identity(),
        );
    }
    seal(&mut record, outcome, repo_dir);
    if let Some(repo) = &repo {
        let _ = git::seal::seal_verdict(repo, &record);
    }
    if store.finish(&record, || file_ledger_row(repo_dir, &record))? {
        Ok(Some(record))
    } else {
        Ok(None)
    }
}

/// Completes the ending of run `run` whose record was filed before its supervisor died
/// (the ledger row when it is missing, the pointer removed), when the seal holds the
/// verdict the record claims.
fn complete_filed(
    store: &RunStore,
    repo_dir: &Path,
    run: &str,
) -> anyhow::Result<Option<RunRecord>> {
    let Some(filed) = store.load_record(run)? else {
        return Ok(None);
    };
    let repo = crate::git::repo::open(repo_dir)?;
    let sealed = git::seal::read(&repo, run)?;
    if !filed.phase.is_final()
        || !sealed.is_some_and(|s| s.verdict.is_some() && s.differences(&filed).is_empty())
    {
        return Ok(None);
    }
    store.complete_finish(run, |record| {
        let filed_row = super::ledger::rows(&repo, Some(&record.task))
            .map(|rows| {
                rows.iter().any(|r| {
                    r.run == record.run && r.attempt == record.attempts && r.integrated.is_none()
                })
            })
            .unwrap_or(false);
        if !filed_row {
            file_ledger_row(repo_dir, record);
        }
    })
}

/// Marks every live run whose supervisor died (kill -9, a reboot) as `abandoned`, ending
/// its worker's process group and keeping its commits. Runs waiting on the lead
/// (`needs-help`) have no supervisor and are left alone; a run whose supervisor has not
/// reported yet gets a grace period.
pub fn reap_dead(
    store: &RunStore,
    repo_dir: &Path,
    live: &[RunRecord],
) -> anyhow::Result<Vec<RunRecord>> {
    let mut reaped = Vec::new();
    for record in live.iter().cloned() {
        // Runs waiting on the lead, and native runs (the lead works them), have no
        // supervisor to lose.
        if matches!(
            record.phase,
            Phase::NeedsHelp | Phase::AwaitingAttach | Phase::Queued
        ) || record.adapter == "native"
            // A run whose pointer cannot be read is never judged, nor its processes
            // killed: nothing says which they are.
            || record.unreadable.is_some()
        {
            continue;
        }
        let alive = match record.supervisor_pid {
            Some(pid) => process::is_alive(pid, &record.run),
            // Dispatch and advise write the pointer just before the supervisor starts.
            None => std::fs::metadata(store.live_path(&record.run))
                .and_then(|m| m.modified())
                .is_ok_and(|t| t.elapsed().unwrap_or_default() < Duration::from_secs(30)),
        };
        if !alive
            && let Some(record) =
                abandon(store, repo_dir, record, "the supervisor died; commits kept")?
        {
            reaped.push(record);
        }
    }
    Ok(reaped)
}
