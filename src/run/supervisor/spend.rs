//! The spend fence: what an attempt spends, read off its stream as it arrives (and, for a
//! `command` worker, from the usage file it keeps), priced from the lead's configuration
//! and held against the run's `fences.max_cost_usd` and `fences.max_tokens`.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::core::flight::AdapterKind;
use crate::core::record::RunRecord;
use crate::core::usage::{Meter, Price, Reading, RunUsage, SpendFence, ThreadTotal, Usage};

/// One attempt's spend as it runs.
pub(super) struct Spend {
    meter: Meter,
    adapter: AdapterKind,
    usage_file: PathBuf,
    /// What the usage file said at the last look.
    reported: Option<Usage>,
    /// The codex thread's total before this attempt (none for a fresh thread).
    thread_before: Usage,
    /// What the run spent before this attempt.
    run_before: Usage,
    price: Option<Price>,
    fence: SpendFence,
    /// Why the usage file was not read at the last look, when it was there.
    unread: Option<String>,
}

/// A spend shared by the stream's reader and the supervisor's watch.
pub(super) type Shared = Arc<Mutex<Spend>>;

impl Spend {
    /// The spend of attempt `record.attempts` (already counted), resuming `session` if
    /// it does; `thread` is that session's total as last known elsewhere (a standing
    /// worker's previous run).
    pub(super) fn start(
        record: &RunRecord,
        usage_file: PathBuf,
        session: Option<&str>,
        thread: Option<Usage>,
    ) -> Shared {
        // The file holds this attempt's spend only: what an earlier one wrote goes.
        let _ = std::fs::write(&usage_file, "");
        let run = record.usage.clone().unwrap_or_default();
        let thread_before = match run.thread_before(session) {
            known if known != Usage::default() => known,
            _ => thread.filter(|_| session.is_some()).unwrap_or_default(),
        };
        Arc::new(Mutex::new(Spend {
            meter: Meter::new(record.adapter),
            adapter: record.adapter,
            usage_file,
            reported: None,
            thread_before,
            run_before: run.total,
            price: record.price,
            fence: SpendFence::of(record),
            unread: None,
        }))
    }

    /// Takes in a piece of the stream; whether to stop the worker now.
    pub(super) fn feed(&mut self, bytes: &[u8]) -> bool {
        self.meter.feed(bytes);
        self.stop()
    }

    /// Looks at the usage file again (a `command` worker's); whether to stop the worker
    /// now.
    pub(super) fn look(&mut self) -> bool {
        if self.adapter == AdapterKind::Command {
            use crate::sys::fs::{Links, Unread, read_capped};
            // The worker's file, which may be anything: a regular file within its cap.
            let cap = crate::core::layout::USAGE_FILE_CAP;
            self.unread = None;
            self.reported = match read_capped(&self.usage_file, cap, Links::Refuse) {
                Ok(bytes) => Usage::from_file(&String::from_utf8_lossy(&bytes)),
                Err(Unread::Missing) => None,
                Err(why) => {
                    self.unread = Some(format!("the usage file (CREW_USAGE_FILE) {why}: not read"));
                    None
                }
            };
        }
        self.stop()
    }

    /// Why the usage file was not read at the last look, if it was there and unfit.
    pub(super) fn unread(&self) -> Option<&str> {
        self.unread.as_deref()
    }

    /// Whether the run is past its fence while the worker is still at work. A stream that
    /// has said its last word (codex's `turn.completed`, claude's `result`) belongs to a
    /// worker ending by itself: stopping it then would only race its exit, and make the
    /// same attempt a timeout or a judged one by chance. It is judged, and no attempt
    /// follows it.
    fn stop(&self) -> bool {
        self.fence.is_set()
            && !self.meter.reading().is_some_and(|r| r.is_final())
            && self.breached().is_some()
    }

    /// What the attempt has spent so far, priced; none when nothing was reported.
    pub(super) fn attempt(&self) -> Option<Usage> {
        let streamed = self
            .meter
            .reading()
            .map(|reading| reading.attempt(&self.thread_before));
        streamed
            .or(self.reported)
            .filter(|u| !u.is_empty())
            .map(|u| u.priced(self.price.as_ref()))
    }

    /// The thread's total as the stream last reported it (codex).
    pub(super) fn thread_total(&self) -> Option<Usage> {
        match self.meter.reading() {
            Some(Reading::ThreadTotal(total)) => Some(total),
            _ => None,
        }
    }

    /// Why the run is past its fence, counting this attempt, if it is.
    pub(super) fn breached(&self) -> Option<String> {
        let attempt = self.attempt().unwrap_or_default();
        self.fence.breached(&self.run_before.plus(&attempt))
    }
}

/// Files what attempt `record.attempts` spent in the record, with the thread's total
/// for the session it ran in.
pub(super) fn file(record: &mut RunRecord, spend: &Spend) {
    let Some(usage) = spend.attempt() else {
        return;
    };
    let attempt = record.attempts;
    let mut run: RunUsage = record.usage.take().unwrap_or_default();
    run.set(attempt, usage);
    if let (Some(total), Some(session)) = (spend.thread_total(), &record.session) {
        run.thread = Some(ThreadTotal {
            session: session.clone(),
            usage: total,
        });
    }
    record.usage = Some(run);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spend(adapter: AdapterKind, dir: &std::path::Path) -> Shared {
        let mut record = RunRecord::blank("r");
        record.adapter = adapter;
        record.max_tokens = Some(1000);
        Spend::start(&record, dir.join("usage"), None, None)
    }

    #[test]
    fn the_fence_stops_a_worker_at_work_and_lets_one_that_is_ending_end() {
        let dir = tempfile::tempdir().unwrap();
        // claude: a message that began past the fence stops the worker there, once its
        // line is whole.
        let claude = spend(AdapterKind::Claude, dir.path());
        let mut claude = claude.lock().unwrap();
        assert!(!claude.feed(
            br#"{"type":"assistant","message":{"id":"m1","usage":{"input_tokens":1500,"output_tokens":1}}}"#
        ));
        assert!(claude.feed(b"\n"));
        // Its result, the last line, is past the fence too: that worker is ending.
        assert!(!claude.feed(
            b"{\"type\":\"result\",\"usage\":{\"input_tokens\":1600,\"output_tokens\":9},\"total_cost_usd\":0.1}\n"
        ));
        assert!(!claude.look());
        assert!(claude.breached().unwrap().contains("1609 tokens of 1000"));
        // codex: the thread's total comes with the end of the turn, and only then.
        let codex = spend(AdapterKind::Codex, dir.path());
        let mut codex = codex.lock().unwrap();
        assert!(!codex.feed(
            b"{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":5000,\"output_tokens\":9}}\n"
        ));
        assert!(!codex.look());
        assert!(codex.breached().is_some());
        // A command worker's file says nothing of an ending: past the fence is stopped.
        let command = spend(AdapterKind::Command, dir.path());
        let mut command = command.lock().unwrap();
        std::fs::write(dir.path().join("usage"), r#"{"input_tokens": 2000}"#).unwrap();
        assert!(command.look());
        assert_eq!(command.unread(), None);
        // A file over its cap is not read, and says so.
        let big = " ".repeat(70 << 10) + r#"{"input_tokens": 2000}"#;
        std::fs::write(dir.path().join("usage"), big).unwrap();
        assert!(!command.look());
        assert!(
            command
                .unread()
                .unwrap()
                .contains("holds more than 65536 bytes")
        );
    }
}
