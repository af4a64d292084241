//! Settling an attempt: gathering the facts `core::attempt::settled` decides on — the
//! work committed and audited against the scope, the reply, the verify, the continuation's
//! facts after a failed verify — and applying what it decides; then filing the run record.

use super::*;
use crate::core::attempt::{AttemptFacts, End, Fault, Settled, VerifyEnd};
use crate::core::oversize::Step;
use crate::run::error::Result;

impl Supervisor<'_> {
    /// Judges a reply: the work is settled against the scope, the footer is read, and
    /// what `core::attempt::settled` makes of them is applied — the verify and the
    /// continuation's facts gathered as it asks for them. A request for help parks the
    /// run; an incomplete footer is handed back to the caller, which owns the corrective
    /// retry. `reply` is `Err` with why when the worker wrote a reply that could not be
    /// read.
    pub(super) fn judge(&mut self, reply: Result<Option<String>, String>) -> Driven<Judgement> {
        let reading = match &reply {
            Ok(reply) => crate::core::attempt::read_reply(reply.as_deref()),
            Err(problem) => crate::core::attempt::Reading::unread(problem),
        };
        // What the worker claimed is recorded before the facts are checked: the ledger
        // keeps the claim next to the measured outcome.
        if reading.footer.is_some() {
            self.record.footer = reading.footer.clone();
        }
        let work = self.settle_work()?;
        let key =
            crate::core::ledger::failure_key(self.record.model.as_deref(), &self.record.backend);
        let mut facts = AttemptFacts {
            end: End::Replied(&reading),
            work,
            verify: None,
            continues_until_pass: self.record.continue_until_pass
                && self.record.adapter != crate::core::flight::AdapterKind::Native,
            continuation: None,
        };
        loop {
            match crate::core::attempt::settled(&facts) {
                Settled::Ends(outcome, decision) => {
                    self.record.decision = Some(decision);
                    self.finish(outcome)?;
                    return Ok(Judgement::Settled);
                }
                Settled::Parks(decision) => {
                    self.park(reading.help.clone(), decision)?;
                    return Ok(Judgement::Settled);
                }
                Settled::Incomplete(problem) => return Ok(Judgement::Incomplete(problem)),
                Settled::Verify => facts.verify = Some(self.verify()?),
                Settled::AskContinuation => {
                    facts.continuation = Some(self.continuation_facts(&key)?);
                }
                Settled::TriesAgain { resume, decision } => {
                    self.record.decision = Some(decision);
                    let next = self.try_again(resume)?;
                    self.retry = Some(next);
                    self.record.phase = Phase::Working;
                    self.save()?;
                    return Ok(Judgement::Settled);
                }
            }
        }
    }

    /// Parks the run waiting for help: a handoff, not a failure; the run waits for
    /// `advise`, holding no slot.
    fn park(&mut self, help: Option<crate::core::footer::NeedsHelp>, decision: String) -> Driven {
        self.record.needs_help = help;
        self.record.phase = Phase::NeedsHelp;
        self.record.pid = None;
        // This supervisor exits now: a pid kept here could be recycled by the time
        // someone abandons the run.
        self.record.supervisor_pid = None;
        self.record.parked_at = Some(crate::sys::clock::now_s());
        self.record.decision = Some(decision);
        // Nothing it left in the task's ref folder waits with it (the run's filing
        // names what is kept).
        self.take_strays();
        self.save()?;
        self.report.notice = Some(self.record.clone());
        // Parked, it holds no slot: a queued run may start.
        self.report.freed_slot = true;
        Ok(())
    }

    /// Commits what the worker left uncommitted (through the hooks) and audits the whole
    /// branch against the scope; what it found wrong, if anything. Each step runs only
    /// when the ones before it found nothing (see `core::attempt::Fault`).
    pub(super) fn settle_work(&mut self) -> Result<Option<Fault>> {
        let wt = PathBuf::from(&self.record.worktree);
        // The worker is gone (its whole tree reaped): what it wrote into the worktree's
        // administration is put back before git-crew runs git there.
        let identity = self.record.identity();
        // The administration as dispatch made it, or why the worker's doing prevents it.
        let restore = || match worktree::RunTree::restore(self.repo.common_dir(), &wt, &identity) {
            Ok(tree) if tree.replaced.is_empty() => Ok(tree),
            Ok(tree) => Err(Fault::Tampered(format!(
                "{} replaced",
                tree.replaced.join(", ")
            ))),
            Err(e) => Err(Fault::Tampered(crate::fault::chain(&e))),
        };
        let unreadable = |e: &(dyn std::error::Error + 'static)| {
            Some(Fault::Tampered(format!(
                "git cannot read the worktree: {}",
                crate::fault::chain(e)
            )))
        };
        let mut tree = match restore() {
            Ok(tree) => tree,
            Err(fault) => return Ok(Some(fault)),
        };
        // Objects the attempt wrote were taken in (or kept out) when it ended: a run that
        // wrote false or oversized ones is decided, and nothing more of it is hashed.
        if let Some(fault) = self.refused_objects() {
            return Ok(Some(fault));
        }
        // Everything git-crew runs in the worktree from here is the run's: inside its
        // write fence, and done by the deadline plus the grace.
        let bound = self.bound();
        let cap = self.record.file_size_cap();
        // Measured, never read, before git hashes anything: a file over the cap (a sparse
        // 30 GiB one costs the worker one `truncate`) ends the run, unhashed.
        match tree.files_larger_than(self.repo, cap, &bound) {
            Ok(Some(files)) => {
                if let Some((outcome, decision)) = crate::core::oversize::left_over(&files, cap) {
                    return Ok(Some(Fault::Judged(outcome, decision)));
                }
            }
            Ok(None) => return Ok(Some(judged(crate::core::oversize::out_of_time(Step::List)))),
            Err(e) => return Ok(unreadable(&e)),
        }
        let read_only = !self.record.role.may_commit();
        if read_only {
            let dirty = match tree.status(&bound) {
                Ok(worktree::Looked::Dirty) => true,
                Ok(worktree::Looked::Clean) => false,
                Ok(worktree::Looked::OutOfTime) => {
                    return Ok(Some(judged(crate::core::oversize::out_of_time(
                        Step::Status,
                    ))));
                }
                Ok(worktree::Looked::Failed(failure)) => {
                    let b = crate::core::toolchain::blame(&failure);
                    return Ok(Some(Fault::Judged(b.outcome, b.decision)));
                }
                Err(e) => return Ok(unreadable(&e)),
            };
            if dirty {
                return Ok(Some(Fault::ReadOnlyLeftChanges(self.record.role)));
            }
        } else {
            let message = format!(
                "crew: work left uncommitted by run {} (task {})",
                self.record.run, self.record.task
            );
            // Within what is left of the budget, and the grace for a run that ran out of
            // it: `git status`, `git add`, the hook and the commit alike. Each is its own
            // step, so a failure is known by the step that failed, never by its words.
            let committed = self.commit_left_over(&tree, &message, &bound, &identity);
            // The commit's hooks ran the worker's code too: nothing they started stays,
            // and what they wrote into the administration is put back.
            process::reap_orphans();
            self.import_objects()?;
            tree = match restore() {
                Ok(tree) => tree,
                Err(fault) => return Ok(Some(fault)),
            };
            match committed {
                Ok(None) => {}
                Ok(Some(fault)) => return Ok(Some(fault)),
                Err(e) => return Ok(unreadable(&e)),
            }
        }
        if let Some(fault) = self.refused_objects() {
            return Ok(Some(fault));
        }
        // The run's branch, read from the repository's refs (not through the worktree's
        // own `.git` link, which the worker can rewrite), is what gets audited and verified.
        let base = crate::git::refs::oid(&self.record.base)?;
        let Some(tip) = git::merge::branch_tip(self.repo, &self.record.branch)? else {
            return Ok(Some(Fault::BranchGone {
                branch: self.record.branch.clone(),
            }));
        };
        let head = tree.head(self.repo);
        if head != Some(tip) {
            return Ok(Some(Fault::NotAtBranch {
                branch: self.record.branch.clone(),
                head: head.map(|h| h.to_string()),
            }));
        }
        if base == tip {
            return Ok(None);
        }
        if !git::merge::is_ancestor(self.repo, base, tip) {
            return Ok(Some(Fault::Rewritten {
                branch: self.record.branch.clone(),
                base: base.to_string(),
            }));
        }
        // The target's commits a worker merged in are not its own: the same start as
        // integrate's audit.
        let target = match &self.record.base_ref {
            Some(target) => git::merge::branch_tip(self.repo, target)?,
            None => None,
        };
        let own = crate::git::run_range::own_base(self.repo, base, tip, target);
        let changes = git::diff::changed_paths(self.repo, own, tip)?;
        if changes.is_empty() {
            return Ok(None);
        }
        let violations = scope::check_commit(&self.record.identity(), &changes);
        if violations.is_empty() {
            return Ok(None);
        }
        Ok(Some(Fault::OutOfScope(violations)))
    }

    /// Commits the work left behind, step by step: `git add` (the filters), git-crew's
    /// scope check on what is staged, then `git commit` through every hook. When the
    /// commit is refused, its pre-commit hook is run again on its own for its exit code.
    /// Whose failure a refusal is, is told by which step failed and its facts
    /// (`core::toolchain::blame`), never by the words a tool printed.
    fn commit_left_over(
        &self,
        tree: &worktree::RunTree,
        message: &str,
        bound: &worktree::Bound,
        identity: &scope::RunIdentity,
    ) -> Result<Option<Fault>> {
        use crate::core::toolchain::{Failure, blame};
        let decided = |failure: Failure| {
            let b = blame(&failure);
            Some(Fault::Judged(b.outcome, b.decision))
        };
        match tree.stage_all(bound)? {
            worktree::Staged::Clean => return Ok(None),
            worktree::Staged::OutOfTime(step) => {
                return Ok(Some(judged(crate::core::oversize::out_of_time(step))));
            }
            worktree::Staged::Failed(failure) => return Ok(decided(failure)),
            worktree::Staged::Staged => {}
        }
        // Whether the scope refuses it is decided here, by the same check the hook runs,
        // on what is staged — never read from the hook's words. (What a hook stages
        // beyond it is caught by the audit of the branch.)
        let violations = scope::check_commit(identity, &tree.staged()?);
        if !violations.is_empty() {
            return Ok(Some(Fault::CommitOutOfScope(violations)));
        }
        let ran_past = || {
            Some(Fault::HooksRanPast {
                secs: bound.left().as_secs(),
            })
        };
        let output = match tree.commit_staged(message, bound)? {
            Some(worktree::Commit::Committed) => return Ok(None),
            Some(worktree::Commit::Refused(output)) => output,
            None => return Ok(ran_past()),
        };
        let Some(hook) = tree.pre_commit(bound)? else {
            return Ok(ran_past());
        };
        if hook.exit_code == Some(0) {
            return Ok(decided(Failure::Commit { output }));
        }
        // The repository's own hook, which git-crew's run hook chains.
        let program = crate::git::hooks_dir::hooks_dir(self.repo).join("pre-commit");
        let runnable = std::fs::metadata(&program).is_ok_and(|m| {
            use std::os::unix::fs::PermissionsExt;
            m.is_file() && m.permissions().mode() & 0o111 != 0
        });
        Ok(decided(Failure::Hook {
            hook: runnable.then(|| program.to_string_lossy().into_owned()),
            exit_code: hook.exit_code,
            output: hook.output,
        }))
    }

    /// The objects the run's processes wrote that were kept out of the store, as a
    /// finding, if any were.
    fn refused_objects(&self) -> Option<Fault> {
        crate::core::oversize::refused_objects(&self.rejected_objects, self.record.file_size_cap())
            .map(judged)
    }

    /// Runs the verify (none when the lead asked for none) and records what it measured:
    /// the tip it verified, its result.
    pub(super) fn verify(&mut self) -> Driven<VerifyEnd> {
        let Some(command) = self.record.verify_command.clone() else {
            // The lead asked for no verify: the footer is the acceptance, for this commit.
            self.record.verified_tip =
                git::merge::branch_tip(self.repo, &self.record.branch)?.map(|t| t.to_string());
            return Ok(VerifyEnd::NotAsked);
        };
        self.record.phase = Phase::Verifying;
        self.save()?;
        let dir = crate::core::layout::verifier(&self.run_dir, self.record.attempts);
        let wt = PathBuf::from(&self.record.worktree);
        // The verdict is for the branch's tip as it was checked out when verify started
        // (settle_work made sure the worktree is there, clean); a verify command that
        // moves the branch leaves the new tip unverified.
        let tested = git::merge::branch_tip(self.repo, &self.record.branch)?;
        let verified = verify::run(
            &self.record.run,
            &command,
            &wt,
            &dir,
            &self.transcript,
            self.deadline,
            self.fence.as_ref(),
        )?;
        // What the verify left is its own, never the run's work; a next attempt's settle
        // would otherwise commit it. Best effort: settle names a worktree it cannot read.
        let _ = verify::exclude_leftovers(
            self.repo.common_dir(),
            &wt,
            &self.record.identity(),
            &self.run_dir,
        );
        Ok(match verified {
            verify::Verified::Timeout => VerifyEnd::TimedOut,
            // The run's own worktree was readied before its first attempt: only a
            // throwaway checkout is set up by verify.
            verify::Verified::SetupFailed(problem) => VerifyEnd::SetupFailed(problem),
            verify::Verified::Done(result) => {
                self.record.verified_tip = tested.map(|t| t.to_string());
                self.record.verify = Some(result.clone());
                VerifyEnd::Done(result)
            }
        })
    }

    /// What the continuation after a failed verify is decided on: the task's earlier
    /// failures under `key` in the ledger, the run's attempts and limits, the budget left,
    /// whether its session can be resumed.
    pub(super) fn continuation_facts<'k>(
        &self,
        key: &'k str,
    ) -> Result<crate::core::attempt::ContinuationFacts<'k>> {
        let earlier = {
            let repo = crate::git::repo::open(&self.repo_dir)?;
            crate::run::ledger::tally(&repo, &self.record.task)?.failures(key)
        };
        let resumable = self.record.session.is_some()
            && self.config.session_reuse.unwrap_or(true)
            && self.adapter_resumes();
        Ok(crate::core::attempt::ContinuationFacts {
            earlier_failures: earlier,
            key,
            threshold: self.record.failure_threshold,
            attempts: self.record.attempts,
            max_attempts: self.record.max_attempts,
            budget_left: self
                .deadline
                .saturating_duration_since(std::time::Instant::now()),
            resumable,
        })
    }

    /// Another attempt after a failed verify: this attempt's row is filed (the run's
    /// finish files the last attempt's: one row per attempt, whichever path files it),
    /// and the next attempt gets the same session with a plain rejection (no verifier
    /// details) where `resume`, else a fresh session with the verifier's feedback.
    pub(super) fn try_again(&mut self, resume: bool) -> Result<Next> {
        let verifier_dir = crate::core::layout::verifier(&self.run_dir, self.record.attempts);
        let mut attempt_row = self.record.clone();
        attempt_row.outcome = Some(Outcome::Fail);
        measure(&mut attempt_row, &self.repo_dir, now_millis());
        if let Err(not_filed) = filing::ledger_row(&self.repo_dir, &attempt_row) {
            self.report.not_filed.push(not_filed);
        }
        // The verifier's files are written by code the worker wrote: at most the first
        // 64 KiB of each is read, a regular file only, never through a symlink.
        let read = |name: &str| {
            crate::sys::fs::read_head(
                &verifier_dir.join(name),
                crate::core::layout::VERIFIER_FILE_CAP,
                crate::sys::fs::Links::Refuse,
            )
            .ok()
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        };
        let feedback = crate::core::attempt::verifier_feedback(
            read("failure.txt").as_deref(),
            read("reward.json").as_deref(),
            read("reward.txt").as_deref(),
        );
        let text = crate::core::attempt::continuation_prompt(resume, &feedback);
        let file = crate::core::layout::continuation(&self.run_dir, self.record.attempts);
        std::fs::write(&file, text)?;
        self.continue_with(file)
    }

    /// Files the run record: outcome, diff, discrepancies; unlocks the worktree.
    pub(super) fn finish(&mut self, outcome: Outcome) -> Driven {
        // What a verify wrote, too: the store holds everything the branch needs.
        let _ = self.import_objects();
        // What the commit's hooks and the verify left in the task's ref folder, too.
        self.take_strays();
        seal(&mut self.record, outcome, &self.repo_dir);
        self.record
            .discrepancies
            .extend(self.warnings.iter().cloned());
        let strays = crate::run::strays::discrepancies(
            self.repo,
            &self.record.task,
            &self.record.run,
            &self.strays,
        );
        self.record.discrepancies.extend(strays);
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
                    updated_at: crate::sys::clock::now_s(),
                    thread_usage: self
                        .record
                        .usage
                        .as_ref()
                        .and_then(|u| u.thread.as_ref())
                        .filter(|t| &t.session == session)
                        .map(|t| t.usage),
                },
            );
        }
        // The verdict is sealed before the run shows as finished.
        git::seal::seal_verdict(self.repo, &self.record)?;
        let (record, repo_dir) = (&self.record, &self.repo_dir);
        let mut not_filed = None;
        let finished = self.store.finish(record, || {
            not_filed = filing::ledger_row(repo_dir, record).err();
        })?;
        self.report.not_filed.extend(not_filed);
        if !finished {
            return Err(DriveError::EndedOutside);
        }
        crate::run::fleet::at_end(&self.repo_dir, &self.run_dir, &self.record, outcome);
        self.report.notice = Some(self.record.clone());
        // A slot is free: a queued run of this backend (or of this worker) may start.
        self.report.freed_slot = true;
        Ok(())
    }
}

/// A finding a step's own rule decided.
fn judged((outcome, decision): (Outcome, String)) -> Fault {
    Fault::Judged(outcome, decision)
}
