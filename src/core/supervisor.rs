//! Whether a live run's supervisor is alive, judged from the facts the store gathers
//! (`state::runs`): the one rule the reaper files a run as abandoned by and a snapshot
//! reports a dead supervisor by.

use std::time::Duration;

use serde::Serialize;

use crate::core::flight::AdapterKind;
use crate::core::record::{Phase, RunRecord};

/// How long a run may be live without a supervisor pid: dispatch and advise write the
/// pointer just before they start its supervisor, which then writes its pid.
pub const START_GRACE: Duration = Duration::from_secs(30);

/// A live run's supervisor as found: `"alive"` or `"dead"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Supervisor {
    Alive,
    Dead,
}

impl Supervisor {
    pub fn as_str(self) -> &'static str {
        match self {
            Supervisor::Alive => "alive",
            Supervisor::Dead => "dead",
        }
    }
}

/// What the process table says of the pid a live pointer names as its supervisor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Process {
    /// Its command line, as `/proc` gives it (empty for a zombie).
    Listed { cmdline: Vec<u8> },
    /// Its command line cannot be read: whether a process of that pid exists at all.
    Unlisted { exists: bool },
}

/// The facts a live run's supervisor is judged by.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Facts {
    /// The process the pointer names as its supervisor (`None`: it names none yet).
    pub process: Option<Process>,
    /// How long ago the live pointer was last written (`None`: unknown).
    pub pointer_age: Option<Duration>,
}

/// Whether live run `record` has a supervisor to lose. Runs waiting on the lead
/// (`needs-help`, `awaiting-attach`) or in the queue have none, nor native runs (the lead
/// works them) once their dispatch has prepared them; a pointer that cannot be read is
/// never judged, for nothing says which processes are its. A run whose dispatch is still
/// preparing it (`preparing`, no supervisor yet, whatever it is to become) is judged as
/// one whose supervisor has not written its pid yet: its dispatch keeps the pointer fresh.
pub fn expected(record: &RunRecord) -> bool {
    let being_prepared = record.phase == Phase::Preparing && record.supervisor_pid.is_none();
    !matches!(
        record.phase,
        Phase::NeedsHelp | Phase::AwaitingAttach | Phase::Queued
    ) && (record.adapter != AdapterKind::Native || being_prepared)
        && record.unreadable.is_none()
}

/// Whether `process` is run `run`'s supervisor: a listed process whose command line names
/// the run (so a recycled pid is not taken for it; a zombie's is empty), or, where the
/// command line cannot be read, any process of that pid.
pub fn is_supervisor_of(process: &Process, run: &str) -> bool {
    match process {
        Process::Listed { cmdline } => {
            let text = String::from_utf8_lossy(cmdline);
            !text.is_empty() && text.contains(run)
        }
        Process::Unlisted { exists } => *exists,
    }
}

/// The supervisor of live run `record`, judged from `facts`; `None` when the run has
/// none to lose ([`expected`]). One with no pid yet is alive while its pointer is fresh
/// (younger than [`START_GRACE`]).
pub fn judge(record: &RunRecord, facts: &Facts) -> Option<Supervisor> {
    if !expected(record) {
        return None;
    }
    let alive = match &facts.process {
        Some(process) => is_supervisor_of(process, &record.run),
        None => facts.pointer_age.is_some_and(|age| age < START_GRACE),
    };
    Some(if alive {
        Supervisor::Alive
    } else {
        Supervisor::Dead
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUN: &str = "20261202-101500-1a2b";

    fn working() -> RunRecord {
        let mut record = RunRecord::blank(RUN);
        record.phase = Phase::Working;
        record.supervisor_pid = Some(4242);
        record
    }

    fn listed(cmdline: &str) -> Facts {
        Facts {
            process: Some(Process::Listed {
                cmdline: cmdline.as_bytes().to_vec(),
            }),
            pointer_age: Some(Duration::from_secs(600)),
        }
    }

    #[test]
    fn a_supervisor_whose_command_line_names_the_run_is_alive() {
        let facts = listed(&format!("git-crew\0-C\0/repo\0supervise\0{RUN}\0"));
        assert_eq!(judge(&working(), &facts), Some(Supervisor::Alive));
    }

    #[test]
    fn a_recycled_pid_a_zombie_or_a_gone_process_is_a_dead_supervisor() {
        // The pid now belongs to another program.
        assert_eq!(
            judge(&working(), &listed("vim\0notes.txt\0")),
            Some(Supervisor::Dead)
        );
        // A zombie has an empty command line.
        assert_eq!(judge(&working(), &listed("")), Some(Supervisor::Dead));
        let gone = Facts {
            process: Some(Process::Unlisted { exists: false }),
            pointer_age: Some(Duration::from_secs(1)),
        };
        assert_eq!(judge(&working(), &gone), Some(Supervisor::Dead));
    }

    #[test]
    fn a_process_whose_command_line_cannot_be_read_is_alive_while_it_exists() {
        let hidden = Facts {
            process: Some(Process::Unlisted { exists: true }),
            pointer_age: None,
        };
        assert_eq!(judge(&working(), &hidden), Some(Supervisor::Alive));
    }

    #[test]
    fn without_a_pid_the_supervisor_is_alive_only_while_the_pointer_is_fresh() {
        let mut record = working();
        record.supervisor_pid = None;
        let at = |age: Option<Duration>| Facts {
            process: None,
            pointer_age: age,
        };
        assert_eq!(
            judge(&record, &at(Some(Duration::from_secs(5)))),
            Some(Supervisor::Alive)
        );
        assert_eq!(
            judge(&record, &at(Some(START_GRACE))),
            Some(Supervisor::Dead)
        );
        // A pointer whose age cannot be read gets no grace.
        assert_eq!(judge(&record, &at(None)), Some(Supervisor::Dead));
    }

    #[test]
    fn runs_with_no_supervisor_to_lose_are_not_judged() {
        let dead = listed("");
        for phase in [Phase::NeedsHelp, Phase::AwaitingAttach, Phase::Queued] {
            let mut record = working();
            record.phase = phase;
            assert_eq!(judge(&record, &dead), None, "{phase:?}");
        }
        let mut native = working();
        native.adapter = AdapterKind::Native;
        assert_eq!(judge(&native, &dead), None);
        // A native run its dispatch is still preparing has no supervisor yet, and is
        // judged as such: alive while its pointer is fresh.
        native.phase = Phase::Preparing;
        native.supervisor_pid = None;
        assert_eq!(judge(&native, &dead), Some(Supervisor::Dead));
        let fresh = Facts {
            process: None,
            pointer_age: Some(Duration::from_secs(1)),
        };
        assert_eq!(judge(&native, &fresh), Some(Supervisor::Alive));
        let mut unreadable = working();
        unreadable.unreadable = Some("not JSON".into());
        assert_eq!(judge(&unreadable, &dead), None);
        // Every other phase a pointer holds has one.
        for phase in [Phase::Preparing, Phase::Working, Phase::Verifying] {
            let mut record = working();
            record.phase = phase;
            assert_eq!(judge(&record, &dead), Some(Supervisor::Dead), "{phase:?}");
        }
    }

    #[test]
    fn it_reads_alive_or_dead() {
        assert_eq!(
            serde_json::to_value([Supervisor::Alive, Supervisor::Dead]).ok(),
            Some(serde_json::json!(["alive", "dead"]))
        );
        assert_eq!(Supervisor::Dead.as_str(), "dead");
    }
}
