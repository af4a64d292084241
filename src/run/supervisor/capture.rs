//! What an attempt leaves: its reply (the manifest, else what the adapter reads from its
//! output) and the objects its processes wrote, hashed again into the store.

use super::*;

impl Supervisor<'_> {
    /// Watches a started attempt to its end (deadline, idle watchdog, an end from
    /// outside), then takes in what it left: its objects, its session id, its warnings and
    /// its output.
    pub(super) fn capture(&mut self, launched: super::launch::Launched) -> anyhow::Result<Ended> {
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
        if let Ok(mut s) = spend.lock() {
            s.look();
            super::spend::file(&mut self.record, &s);
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
    pub(super) fn reply(&self) -> Option<String> {
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

    /// Brings what the run's processes wrote into its object quarantine into the
    /// repository's store, each object hashed again, within the run's bounds (no object
    /// over `fences.max_file_size`, nothing past the deadline and its grace); what is kept
    /// out is noted.
    pub(super) fn import_objects(&mut self) -> anyhow::Result<()> {
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
        Ok(())
    }
}
