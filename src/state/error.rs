//! The one error of the state layer (`<git-common-dir>/crew/`): a wait for a lock that
//! ran out, a file that could not be read or written, a record that does not parse.
//! Every variant keeps its source, so the boundary finds an I/O error underneath.

use std::fmt::Display;

use std::path::PathBuf;
use std::time::Duration;

use crate::fault::Source;
use crate::sys::lock::{Held, NotTaken};

/// Why a state-layer call did not give what was asked of it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A wait for a lock ran out: what it waited for, and who holds it.
    #[error(transparent)]
    Busy(#[from] Busy),
    /// The system refused a call underneath.
    #[error(transparent)]
    Sys(#[from] crate::sys::error::Error),
    /// git refused, or the repository could not be read.
    #[error(transparent)]
    Git(#[from] crate::git::error::Error),
    /// The system refused, with nothing to add to its own words.
    #[error(transparent)]
    Os(#[from] std::io::Error),
    /// A file or folder could not be read or written.
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A lock could not be taken for a reason other than its holder.
    #[error(transparent)]
    Lock(#[from] NotTaken),
    /// A file of a run's folder that cannot be read.
    #[error(transparent)]
    Unread(#[from] Unread),
    /// A run record that cannot be read.
    #[error(transparent)]
    Unreadable(#[from] Unreadable),
    /// A record that cannot be written or read as JSON.
    #[error("{what}")]
    Data {
        what: String,
        #[source]
        source: Source,
    },
    /// A record that JSON cannot hold or that does not parse.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// Something that is not there or cannot be used, said in words.
    #[error("{0}")]
    Invalid(String),
}

/// A wait for a lock that ran out.
#[derive(Debug, thiserror::Error)]
#[error("waited {}s for {what}: {held}", waited.as_secs())]
pub struct Busy {
    /// What it waited for ([`Turn::what`]).
    pub what: String,
    pub waited: Duration,
    pub held: Held,
}

/// Why a run's backend config was not read.
#[derive(Debug, thiserror::Error)]
pub enum Unread {
    /// It is not there (or cannot be opened).
    #[error("cannot read the run's backend config: {0}")]
    Missing(std::io::Error),
    /// It is there and is not a backend config.
    #[error("{0}")]
    Bad(serde_json::Error),
}

/// A run's pointer or record that exists but cannot be read back.
#[derive(Debug, thiserror::Error)]
#[error("the record of run {run} ({}) cannot be read: {why}", path.display())]
pub struct Unreadable {
    pub run: String,
    pub path: PathBuf,
    pub why: String,
}

/// What a state-layer call gives.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// `what`, failed because of `source`.
    pub fn within(what: impl Display, source: impl Into<Source>) -> Error {
        let what = what.to_string();
        let boxed: Source = source.into();
        match boxed.downcast::<std::io::Error>() {
            Ok(io) => Error::Io { what, source: *io },
            Err(source) => Error::Data { what, source },
        }
    }
}

crate::fault::layer_context!(Error);
