//! Readying a run's worktree: its `[worktree] setup`, once, before the first attempt.

use super::*;
use crate::core::toolchain::{SetupEnd, setup_problem};

/// How long checking the worktree after its setup may take.
const CHECK_BOUND: Duration = Duration::from_secs(60);

impl Supervisor<'_> {
    /// Runs the run's `[worktree] setup` in its worktree, inside the run's fence (the
    /// worktree writable whatever the role: the setup is the project's, not the worker's)
    /// and with the worker's environment, bounded by `[worktree] setup_timeout`. Its time
    /// is its own: once it passed, the run's time budget starts. Returns why it did not
    /// ready the worktree, if it did not: it failed, or it changed what git tracks.
    pub(super) fn ready_worktree(&mut self) -> anyhow::Result<Option<String>> {
        let Some(mut setup) = self.record.setup.clone() else {
            return Ok(None);
        };
        let started = now_millis();
        setup.started_at = Some(stamp::whole_second(stamp::from_millis(started)));
        self.record.setup = Some(setup.clone());
        self.save()?;
        let wt = PathBuf::from(&self.record.worktree);
        let main = crate::run::fence::main_worktree(self.repo.common_dir());
        let fence = match crate::run::fence::fenced(&self.record, &self.run_dir, &self.workenv)? {
            Some(base) => {
                let (fence, _) = crate::run::fence::for_run(
                    &crate::run::fence::RunPaths {
                        common_dir: self.repo.common_dir(),
                        worktree: &wt,
                        task: &self.record.task,
                        run_dir: &self.run_dir,
                        may_commit: true,
                    },
                    base,
                    &[],
                )?;
                Some(fence)
            }
            None => None,
        };
        let env = crate::core::attempt::setup_env(
            &self.record,
            self.tmp.as_ref().map(|t| t.to_string_lossy()).as_deref(),
            main.as_ref().map(|m| m.to_string_lossy()).as_deref(),
            &self.workenv.env,
            &self.backend_env(),
        );
        let output = (
            crate::core::layout::setup_output(&self.run_dir, "out"),
            crate::core::layout::setup_output(&self.run_dir, "err"),
        );
        let (store, run) = (self.store, self.record.run.clone());
        let end = crate::run::setup::run(
            &crate::run::setup::Setup {
                run: &self.record.run,
                task: &self.record.task,
                command: &setup.command,
                worktree: &wt,
                output: output.clone(),
                transcript: &self.transcript,
                env,
                fence: fence.clone(),
                timeout: Duration::from_secs(setup.timeout_s),
                max_output: self
                    .record
                    .max_output
                    .unwrap_or(crate::run::output::DEFAULT_CAP),
            },
            // Ended from outside (abandoned): the setup stops with it.
            &mut || !matches!(store.load_live(&run), Ok(Some(_))),
        )?;
        let _ = std::fs::remove_file(&output.0);
        let _ = std::fs::remove_file(&output.1);
        let elapsed = now_millis().saturating_sub(started);
        // What the setup changed that git tracks (or does not ignore) would pass for the
        // worker's work. Looked at with the administration as dispatch made it: the
        // setup ran code that could write it.
        let changed = if end == SetupEnd::Exited(Some(0)) {
            let identity = self.record.identity();
            let tree = worktree::RunTree::restore(self.repo.common_dir(), &wt, &identity)?;
            let bound = worktree::Bound {
                fence,
                until: Instant::now() + CHECK_BOUND,
            };
            tree.uncommitted_within(&bound)?
                .context("checking the worktree after its setup ran past its bound")?
        } else {
            Vec::new()
        };
        let problem = setup_problem(&setup.command, &end, &changed);
        setup.elapsed_ms = Some(elapsed);
        setup.exit_code = match end {
            SetupEnd::Exited(code) => code,
            _ => None,
        };
        setup.passed = Some(problem.is_none());
        setup.problem.clone_from(&problem);
        self.record.setup = Some(setup);
        if problem.is_none() {
            // The time budget (and the deadline the worker is told) starts now.
            let now = now_millis();
            self.record.started_at = stamp::whole_second(stamp::from_millis(now));
            self.record.deadline = stamp::whole_second(stamp::from_millis(
                now.saturating_add(self.record.budget_s.saturating_mul(1000)),
            ));
            self.deadline = Instant::now() + Duration::from_secs(self.record.budget_s);
            if let Ok(task_prompt) = crate::state::run_files::task_prompt(&self.run_dir) {
                std::fs::write(
                    &self.record.prompt_file,
                    crate::run::prompt::worker(&self.record, &task_prompt),
                )
                .context("cannot write the worker prompt")?;
            }
        }
        self.save()?;
        Ok(problem)
    }
}
