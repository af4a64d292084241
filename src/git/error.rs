//! The one error of the git layer: what was being done, and the failure underneath it,
//! told apart by where it came from: the `git` binary, the filesystem, gix reading or
//! writing the repository, or something in the repository git-crew cannot use.
//! Callers match on it; the boundary (`CrewError::from`) tells the system's failure
//! (an I/O error anywhere in the chain: exit 74) from a bug (exit 70).

use std::fmt::Display;

use crate::fault::Source;

pub use super::run::GitError;

/// Why a git-layer call did not give what was asked of it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The `git` binary could not start, said no, or could not be fenced.
    #[error(transparent)]
    Git(#[from] GitError),
    /// The system refused a call underneath (a file written, a folder opened).
    #[error(transparent)]
    Sys(#[from] crate::sys::error::Error),
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
    /// gix could not open, read or write the repository.
    #[error("{what}")]
    Repo {
        what: String,
        #[source]
        source: Source,
    },
    /// gix failed on the repository, in words of its own.
    #[error(transparent)]
    Gix(Source),
    /// The repository holds, or the caller named, something git-crew cannot use: a name
    /// that is not a commit, a record that does not parse, a ref that moved.
    #[error("{0}")]
    Invalid(String),
    /// A step of a larger operation failed: the operation, and the step's error.
    #[error("{what}")]
    Within {
        what: String,
        #[source]
        source: Box<Error>,
    },
}

/// What a git-layer call gives.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// `what`, failed because of `source`: an I/O error stays one, a git-layer error is
    /// nested, anything else is gix's (or a parser's) failure on the repository.
    pub fn within(what: impl Display, source: impl Into<Source>) -> Error {
        let what = what.to_string();
        let boxed: Source = source.into();
        let boxed = match boxed.downcast::<std::io::Error>() {
            Ok(io) => return Error::Io { what, source: *io },
            Err(other) => other,
        };
        let boxed = match boxed.downcast::<GitError>() {
            Ok(git) => {
                return Error::Within {
                    what,
                    source: Box::new(Error::Git(*git)),
                };
            }
            Err(other) => other,
        };
        match boxed.downcast::<Error>() {
            Ok(inner) => Error::Within {
                what,
                source: inner,
            },
            Err(source) => Error::Repo { what, source },
        }
    }
}

/// gix's error, and the name check it does not wrap: gix failed on the repository.
macro_rules! from_gix {
    ($($ty:ty),+ $(,)?) => {
        $(impl From<$ty> for Error {
            fn from(err: $ty) -> Error {
                Error::Gix(Box::new(err))
            }
        })+
    };
}

from_gix!(gix::Error, gix::validate::reference::name::Error);

crate::fault::layer_context!(Error);

/// Returns early with [`Error::Invalid`], said as `format!` says it.
macro_rules! bail {
    ($($arg:tt)*) => {
        crate::fault::bail!($crate::git::error::Error, $($arg)*)
    };
}
pub(crate) use bail;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_io_failure_stays_one_and_a_git_layer_error_nests() {
        let io = Error::within(
            "cannot read x",
            std::io::Error::from(std::io::ErrorKind::PermissionDenied),
        );
        assert!(
            matches!(&io, Error::Io { what, source } if what == "cannot read x"
            && source.kind() == std::io::ErrorKind::PermissionDenied)
        );

        let nested = Error::within("cannot seal run r", Error::invalid("bad"));
        match &nested {
            Error::Within { what, source } => {
                assert_eq!(what, "cannot seal run r");
                assert!(matches!(**source, Error::Invalid(ref w) if w == "bad"));
            }
            other => panic!("{other:?}"),
        }

        let git = Error::within(
            "cannot fetch",
            GitError::Failed {
                args: "fetch o".into(),
                code: Some(128),
                stderr: "no".into(),
            },
        );
        assert!(matches!(&git, Error::Within { source, .. }
            if matches!(**source, Error::Git(GitError::Failed { code: Some(128), .. }))));
    }

    #[test]
    fn anything_else_is_the_repositorys_and_keeps_its_chain() {
        let parse = serde_json::from_str::<u8>("x").context("the seal is not one");
        let err = parse.unwrap_err();
        assert!(matches!(&err, Error::Repo { what, .. } if what == "the seal is not one"));
        assert!(std::error::Error::source(&err).is_some());
        let none: Option<u8> = None;
        assert!(matches!(none.context("no name"), Err(Error::Invalid(w)) if w == "no name"));
    }
}
