//! The one error of the run layer: a step of dispatching, supervising, verifying,
//! integrating or pruning a run failed, with the failure of the layer underneath as its
//! source, so the boundary finds an I/O error wherever it sits.

use std::fmt::Display;

use crate::fault::Source;

/// Why a run-layer call did not give what was asked of it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// git refused, or the repository could not be read or written.
    #[error(transparent)]
    Git(#[from] crate::git::error::Error),
    /// The state folder: a lock, a record, a file of the run's folder.
    #[error(transparent)]
    State(#[from] crate::state::error::Error),
    /// The system refused a call underneath.
    #[error(transparent)]
    Sys(#[from] crate::sys::error::Error),
    /// The system refused, with nothing to add to its own words.
    #[error(transparent)]
    Os(#[from] std::io::Error),
    /// A file or folder could not be read or written, or a process started.
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A step failed: what it was, and why.
    #[error("{what}")]
    Within {
        what: String,
        #[source]
        source: Source,
    },
    /// A record or report that JSON cannot hold or that does not parse.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// What the run, its worker or its caller gave cannot be used, said in words.
    #[error("{0}")]
    Invalid(String),
}

/// What a run-layer call gives.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// `what`, failed because of `source`.
    pub fn within(what: impl Display, source: impl Into<Source>) -> Error {
        let what = what.to_string();
        let boxed: Source = source.into();
        match boxed.downcast::<std::io::Error>() {
            Ok(io) => Error::Io { what, source: *io },
            Err(source) => Error::Within { what, source },
        }
    }
}

/// The `git` binary, called from this layer.
impl From<crate::git::run::GitError> for Error {
    fn from(err: crate::git::run::GitError) -> Error {
        Error::Git(err.into())
    }
}

/// A run record that cannot be read.
impl From<crate::state::runs::Unreadable> for Error {
    fn from(err: crate::state::runs::Unreadable) -> Error {
        Error::State(err.into())
    }
}

/// A file of a run's folder that cannot be read.
impl From<crate::state::run_files::Unread> for Error {
    fn from(err: crate::state::run_files::Unread) -> Error {
        Error::State(err.into())
    }
}

/// A path that does not lie where it was found.
impl From<std::path::StripPrefixError> for Error {
    fn from(err: std::path::StripPrefixError) -> Error {
        Error::within("a path does not lie where it was looked for", err)
    }
}

/// gix, where this layer reads an object it was handed.
impl From<gix::Error> for Error {
    fn from(err: gix::Error) -> Error {
        Error::Git(err.into())
    }
}

crate::fault::layer_context!(Error);

/// Returns early with [`Error::Invalid`], said as `format!` says it.
macro_rules! bail {
    ($($arg:tt)*) => {
        crate::fault::bail!($crate::run::error::Error, $($arg)*)
    };
}
pub(crate) use bail;

/// For an error of an operation that wraps this layer's as `Failed`: every layer's
/// failure underneath converts, through [`Error`].
macro_rules! failed_underneath {
    ($ty:ident) => {
        impl From<$crate::git::error::Error> for $ty {
            fn from(err: $crate::git::error::Error) -> $ty {
                $ty::Failed(err.into())
            }
        }
        impl From<$crate::git::run::GitError> for $ty {
            fn from(err: $crate::git::run::GitError) -> $ty {
                $ty::Failed(err.into())
            }
        }
        impl From<$crate::state::error::Error> for $ty {
            fn from(err: $crate::state::error::Error) -> $ty {
                $ty::Failed(err.into())
            }
        }
        impl From<std::io::Error> for $ty {
            fn from(err: std::io::Error) -> $ty {
                $ty::Failed(err.into())
            }
        }
        impl From<$crate::sys::error::Error> for $ty {
            fn from(err: $crate::sys::error::Error) -> $ty {
                $ty::Failed(err.into())
            }
        }
    };
}
pub(crate) use failed_underneath;
