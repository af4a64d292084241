//! Starting an attempt: which prompt it sends (fresh, resumed, continued), the worker's
//! session, and the worker process itself, inside the run's fence.

use super::*;
use crate::run::error::Result;

/// A started attempt, for [`Supervisor::capture`].
pub(super) struct Launched {
    pub running: process::Running,
    pub session_file: PathBuf,
    pub stdout_file: PathBuf,
    pub stderr_file: PathBuf,
    pub spend: super::spend::Shared,
}

impl Supervisor<'_> {
    /// What the first attempt of this supervisor sends: the worker prompt, or — after
    /// `advise` — the advice, resuming the same session where the backend can (else a
    /// fresh session with the original prompt and the advice).
    pub(super) fn first_prompt(&mut self) -> Driven<Next> {
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
        Ok(self.continue_with(PathBuf::from(path.trim()))?)
    }

    /// The next attempt with `file` as its prompt: the same session where the backend can
    /// resume it, else a fresh session given the original prompt with `file` appended (a
    /// fresh session knows nothing of the task).
    pub(super) fn continue_with(&self, file: PathBuf) -> Result<Next> {
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

    /// The last session of the run's standing worker, when it can be resumed here: the
    /// same backend, sessions reused, and resumable from another worktree.
    pub(super) fn worker_session(&self) -> Option<String> {
        let worker = self.record.worker.as_ref()?;
        if self.record.session.is_some()
            || !self.config.session_reuse.unwrap_or(true)
            || !self.record.adapter.resumes_across_worktrees()
            || !self.adapter_resumes()
        {
            return None;
        }
        let sessions = crate::state::sessions::load(self.store.root());
        let last = sessions.workers.get(worker)?;
        (last.backend == self.record.backend).then(|| last.session.clone())
    }

    pub(super) fn adapter_resumes(&self) -> bool {
        let probe = Attempt {
            record: &self.record,
            config: &self.config,
            prompt_file: Path::new(""),
            prompt: "",
        };
        self.adapter.resume(&probe, "probe").is_some()
    }

    /// Runs one attempt to its end.
    pub(super) fn attempt(&mut self, next: &Next) -> Driven<Ended> {
        let launched = self.launch(next)?;
        self.capture(launched)
    }

    /// Starts an attempt's worker: its prompt, its transcript header, its environment,
    /// inside the run's fence.
    fn launch(&mut self, next: &Next) -> Driven<Launched> {
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
        let usage_file = crate::core::layout::usage(&self.run_dir);
        let spend = super::spend::Spend::start(
            &self.record,
            usage_file.clone(),
            session.as_deref(),
            session
                .as_deref()
                .and_then(|s| self.thread_usage_elsewhere(s)),
        );
        let mut header = crate::run::output::open_append(&self.transcript)?;
        std::io::Write::write_all(
            &mut header,
            format!(
                "\n===== git-crew run {} task {} attempt {n} backend {} model {} at {}{} =====\n",
                self.record.run,
                self.record.task,
                self.record.backend,
                self.record.model.as_deref().unwrap_or("-"),
                stamp::seconds_of_millis(now_millis()),
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
                usage_file: usage_file.to_string_lossy().into_owned(),
                tmp: self.tmp.as_ref().map(|t| t.to_string_lossy().into_owned()),
            },
            session.as_deref(),
            &self.workenv.env,
            &self.backend_env(),
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
            max_output: self
                .record
                .max_output
                .unwrap_or(crate::run::output::DEFAULT_CAP),
            fence: self.fence.clone(),
        };
        let observed = spend.clone();
        let observer: process::Observer = Box::new(move |bytes: &[u8]| {
            observed.lock().map(|mut s| s.feed(bytes)).unwrap_or(false)
        });
        let running = process::start(&spec, Some(observer))?;
        self.record.pid = Some(running.pid);
        self.record.last_activity_at = Some(stamp::whole_second(stamp::from_millis(
            running.last_activity(),
        )));
        self.save()?;
        Ok(Launched {
            running,
            session_file,
            stdout_file,
            stderr_file,
            spend,
        })
    }

    /// The last total a standing worker's earlier run saw for codex thread `session`.
    fn thread_usage_elsewhere(&self, session: &str) -> Option<crate::core::usage::Usage> {
        crate::state::sessions::load(self.store.root())
            .workers
            .values()
            .find(|w| w.session == session)
            .and_then(|w| w.thread_usage)
    }
}
