//! The locks of the state folder, each named for what it guards: one taker at a time
//! across processes, and a wait that runs out says what it waited for and how long
//! (`sys::lock` keeps them: the kernel lets go of a lock when its holder dies).

pub use super::error::Busy;
use super::error::Result;
use std::path::Path;
use std::time::Duration;

use crate::sys::lock::{Lock, NotTaken};

/// What a lock guards, which names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn<'a> {
    /// A dispatch or a queue promotion: their check-then-act on slots, claims and scopes.
    Dispatch,
    /// An integration (and what else moves a target or a run's work: prune, doctor).
    Integrate,
    /// A change to the live pointers.
    Pointers,
    /// A change of hands of one run (advise, attach, deliver).
    Run(&'a str),
    /// The one supervisor driving one run.
    Supervisor(&'a str),
    /// The standing workers' sessions.
    Sessions,
}

impl Turn<'_> {
    /// Its file: the folder under the state folder, and the lock's name.
    fn file(&self) -> (Option<&'static str>, String) {
        match self {
            Turn::Dispatch => (None, "dispatch".into()),
            Turn::Integrate => (None, "integrate".into()),
            Turn::Pointers => (None, "pointers".into()),
            Turn::Sessions => (None, "sessions".into()),
            Turn::Run(run) => (Some("locks"), format!("run-{run}")),
            Turn::Supervisor(run) => (Some("locks"), format!("supervisor-{run}")),
        }
    }

    /// What a wait for it waits for, in words.
    pub fn what(&self) -> String {
        match self {
            Turn::Dispatch => "the dispatch turn (a dispatch or a queue promotion)".into(),
            Turn::Integrate => "the integrate turn (an integrate, prune or doctor)".into(),
            Turn::Pointers => "the live pointers".into(),
            Turn::Sessions => "the workers' sessions".into(),
            Turn::Run(run) => format!("run {run} (an advise, attach or deliver)"),
            Turn::Supervisor(run) => format!("the supervisor of run {run}"),
        }
    }
}

/// Takes the lock of `turn` in the state folder `state_dir`, waiting up to `wait`; a wait
/// that runs out is [`Busy`], naming what it waited for.
pub fn take(state_dir: &Path, turn: Turn<'_>, wait: Duration) -> Result<Lock> {
    taken(state_dir, turn, wait, Lock::take)
}

/// Takes the lock of `turn` with `how` (making its file, or only when it is there), a
/// holder that outlasts `wait` said as [`Busy`].
fn taken<T>(
    state_dir: &Path,
    turn: Turn<'_>,
    wait: Duration,
    how: impl FnOnce(&Path, &str, Duration) -> std::result::Result<T, NotTaken>,
) -> Result<T> {
    let (folder, name) = turn.file();
    let dir = match folder {
        Some(folder) => state_dir.join(folder),
        None => state_dir.to_path_buf(),
    };
    how(&dir, &name, wait).map_err(|err| match err {
        NotTaken::Held(held) => Busy {
            what: turn.what(),
            waited: wait,
            held,
        }
        .into(),
        other => other.into(),
    })
}

/// Takes the lock of `turn` as [`take`] does when its file is there; `None` when it is
/// not, and nothing is made.
pub fn take_if_there(state_dir: &Path, turn: Turn<'_>, wait: Duration) -> Result<Option<Lock>> {
    taken(state_dir, turn, wait, Lock::take_if_there)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_that_runs_out_says_what_it_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let _first = take(dir.path(), Turn::Supervisor("r1"), Duration::ZERO).unwrap();
        let err = take(
            dir.path(),
            Turn::Supervisor("r1"),
            Duration::from_millis(20),
        )
        .err()
        .unwrap();
        let crate::state::error::Error::Busy(busy) = &err else {
            panic!("{err:?}")
        };
        assert_eq!(busy.what, "the supervisor of run r1");
        assert!(
            busy.held.path.ends_with("locks/supervisor-r1.lock"),
            "{}",
            busy.held.path.display()
        );
        assert!(
            err.to_string()
                .starts_with("waited 0s for the supervisor of run r1: "),
            "{err}"
        );
        // Another run's supervisor is another lock.
        assert!(take(dir.path(), Turn::Supervisor("r2"), Duration::ZERO).is_ok());
    }

    #[test]
    fn each_turn_keeps_the_file_it_always_had() {
        let dir = tempfile::tempdir().unwrap();
        for (turn, file) in [
            (Turn::Dispatch, "dispatch.lock"),
            (Turn::Integrate, "integrate.lock"),
            (Turn::Pointers, "pointers.lock"),
            (Turn::Sessions, "sessions.lock"),
            (Turn::Run("r"), "locks/run-r.lock"),
            (Turn::Supervisor("r"), "locks/supervisor-r.lock"),
        ] {
            drop(take(dir.path(), turn, Duration::ZERO).unwrap());
            assert!(dir.path().join(file).is_file(), "{file}");
        }
    }
}
