//! What an attempt leaves: its reply (the manifest, else what the adapter reads from its
//! output) and the objects its processes wrote, hashed again into the store.

use super::*;
use crate::run::error::Result;

impl Supervisor<'_> {
    /// Watches a started attempt to its end (deadline, idle watchdog, an end from
    /// outside), then takes in what it left: its objects, its session id, its warnings and
    /// its output.
    pub(super) fn capture(&mut self, launched: super::launch::Launched) -> Driven<Ended> {
        let super::launch::Launched {
            running,
            session_file,
            stdout_file,
            stderr_file,
            spend,
        } = launched;
        let idle = self.record.idle_timeout_s.map(Duration::from_secs);
        let store = self.store;
        let record = &mut self.record;
        let pid = running.pid;
        let ended = running.watch(self.deadline, idle, &mut |activity| {
            record.last_activity_at = Some(stamp::whole_second(stamp::from_millis(activity)));
            // The spend so far shows on the live run; the fence may stop it.
            let spent = spend.lock().map(|mut s| {
                let spent = s.look();
                super::spend::file(record, &s);
                spent
            });
            if let Ok(false) = store.update_live(record) {
                // Ended from outside: stop the worker; the next save reports it.
                crate::sys::process::kill_group(pid);
            }
            spent.unwrap_or(false)
        })?;
        self.record.pid = None;
        self.attempt_ended();
        self.import_objects()?;
        // Its commits are in the store now: what it left in its task's ref folder can be
        // kept and taken out.
        self.take_strays();
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
        let session_text = self.worker_file(
            &session_file,
            crate::core::layout::SESSION_FILE_CAP,
            "the session file (CREW_SESSION_FILE)",
            "no session was taken from it",
        );
        if let Some(id) = self.adapter.session(&stdout, session_text.as_deref()) {
            self.record.session = Some(id);
            self.session_confirmed = true;
        }
        if let Ok(mut s) = spend.lock() {
            s.look();
            super::spend::file(&mut self.record, &s);
            if let Some(why) = s.unread() {
                self.note_unread(why.to_string());
            }
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
    /// reads from its output (`Ok(None)`: there is none). A manifest that cannot be taken
    /// — over the run's `fences.max_output`, or no regular file — is `Err` with why: the
    /// worker wrote a reply that is not read, which its corrective prompt names.
    pub(super) fn reply(&mut self) -> Result<Option<String>, String> {
        use crate::sys::fs::{Links, Unread, read_capped};
        let cap = self
            .record
            .max_output
            .unwrap_or(crate::run::output::DEFAULT_CAP);
        let manifest = PathBuf::from(&self.record.manifest);
        match read_capped(&manifest, cap, Links::Refuse) {
            Ok(bytes) if !bytes.trim_ascii().is_empty() => {
                return Ok(Some(String::from_utf8_lossy(&bytes).into_owned()));
            }
            Ok(_) | Err(Unread::Missing) => {}
            Err(why) => {
                let problem = format!(
                    "your manifest (CREW_MANIFEST) {why}{}; it was not read",
                    match why {
                        Unread::TooLarge { .. } => " (fences.max_output)",
                        _ => "",
                    }
                );
                self.note_unread(format!("the manifest (CREW_MANIFEST) {why}: not read"));
                return Err(problem);
            }
        }
        let Some(reply) = self
            .adapter
            .reply(&self.last_stdout)
            .filter(|r| !r.trim().is_empty())
        else {
            return Ok(None);
        };
        // The manifest is the reply (SPEC §2): written from the final message when the
        // worker did not write it itself — unless `fences.manifest_required` is off.
        if self.record.manifest_required != Some(false) {
            let _ = std::fs::write(&self.record.manifest, &reply);
        }
        Ok(Some(reply))
    }

    /// The text of a file the run's worker writes for the supervisor (`what` names it),
    /// read within `cap` bytes, a regular file only, never through a symlink: `None`
    /// when it is not there, or — named in the run's discrepancies, with `so` saying what
    /// follows — when it cannot be taken.
    fn worker_file(&mut self, path: &Path, cap: u64, what: &str, so: &str) -> Option<String> {
        use crate::sys::fs::{Links, Unread, read_capped};
        match read_capped(path, cap, Links::Refuse) {
            Ok(bytes) => Some(String::from_utf8_lossy(&bytes).into_owned()),
            Err(Unread::Missing) => None,
            Err(why) => {
                self.note_unread(format!("{what} {why}: not read, {so}"));
                None
            }
        }
    }

    /// Names a file of this attempt's that was not read in the run's discrepancies.
    fn note_unread(&mut self, what: String) {
        let warning = format!("attempt {}: {what}", self.record.attempts);
        if !self.warnings.contains(&warning) {
            self.warnings.push(warning);
        }
    }

    /// Takes out of the task's ref folder what the run's processes left there beside the
    /// run's branch (kept under `refs/crew/strays/<run>/`), for the run's discrepancies.
    /// The worker's processes are gone by now: nothing of the run's is at work there.
    pub(super) fn take_strays(&mut self) {
        let swept = crate::run::strays::sweep(
            self.repo,
            &self.record.task,
            &self.record.run,
            &self.run_dir,
        );
        match swept {
            Ok(Some(swept)) => {
                if !swept.taken.is_empty() && self.fence.is_some() && self.record.role.may_commit()
                {
                    let _ =
                        crate::run::fence::ref_folders(self.repo.common_dir(), &self.record.task);
                }
                self.strays.taken.extend(swept.taken);
                // Each sweep compares with dispatch's note: the last word on a ref counts.
                for moved in swept.moved {
                    self.strays.moved.retain(|m| m.name != moved.name);
                    self.strays.moved.push(moved);
                }
            }
            Ok(None) => {}
            Err(err) => {
                let line = format!(
                    "the task's ref folder could not be looked at: {}",
                    crate::fault::chain(&err)
                );
                if !self.warnings.contains(&line) {
                    self.warnings.push(line);
                }
            }
        }
    }

    /// Brings what the run's processes wrote into its object quarantine and its LFS store
    /// into the repository's stores, each object hashed again, within the run's bounds (no object
    /// over `fences.max_file_size`, nothing past the deadline and its grace); what is kept
    /// out is noted.
    pub(super) fn import_objects(&mut self) -> Result<()> {
        if self.fence.is_none() {
            return Ok(());
        }
        let limits = git::objects::Limits {
            max_object_size: self.record.file_size_cap(),
            until: self.bound().until,
        };
        let imported = git::objects::import(
            self.repo,
            &crate::core::layout::quarantine(&self.run_dir),
            limits,
        )?;
        self.rejected_objects.extend(imported.rejected);
        // A submodule the run's worktree has (cloned from the lead's own copy) keeps the
        // objects its commits made in the worktree's git dir: they go to the lead's copy,
        // hashed again the same way, where the integrated superproject will look for them.
        let admin = self
            .repo
            .common_dir()
            .join("worktrees")
            .join(&self.record.run);
        for (name, lead_module) in git::submodules::initialised(self.repo.common_dir()) {
            let Some(objects) = git::submodules::run_objects(&admin, &name) else {
                continue;
            };
            let Ok(module) = gix::open(&lead_module) else {
                continue;
            };
            let imported = git::objects::import(&module, &objects, limits)?;
            self.rejected_objects.extend(imported.rejected);
        }
        // Its LFS objects too, for a run that may commit; a read-only run's (what
        // `git status` cleaned) are never taken in.
        if self.record.role.may_commit() {
            let lfs = git::lfs::import(
                &crate::core::layout::lfs_store(&self.run_dir),
                self.repo.common_dir(),
                limits,
            )?;
            self.rejected_objects.extend(lfs.rejected);
        }
        Ok(())
    }
}
