//! The one error of the system layer: what was being done, and why the system said no.
//! An errno is an I/O error here, so the boundary tells the system's refusal (exit 74)
//! from a bug.

use std::fmt::Display;

use crate::fault::Source;

/// Why a system call did not give what was asked of it.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The system refused, with nothing to add to its own words.
    #[error(transparent)]
    Os(#[from] std::io::Error),
    /// The system refused: a file, folder, mount or process call failed.
    #[error("{what}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// A step failed for a reason of its own (the kernel fence's rules, a nested step).
    #[error("{what}")]
    Other {
        what: String,
        #[source]
        source: Source,
    },
    /// What was asked for cannot be done safely or at all: a path that is not plain, a
    /// file that is not a regular one, a path with a NUL byte.
    #[error("{0}")]
    Invalid(String),
}

/// What a system-layer call gives.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// `what`, failed because of `source`: an I/O error or an errno is the system's.
    pub fn within(what: impl Display, source: impl Into<Source>) -> Error {
        let what = what.to_string();
        let boxed: Source = source.into();
        let boxed = match boxed.downcast::<std::io::Error>() {
            Ok(io) => return Error::Io { what, source: *io },
            Err(other) => other,
        };
        let boxed = match boxed.downcast::<rustix::io::Errno>() {
            Ok(errno) => {
                return Error::Io {
                    what,
                    source: (*errno).into(),
                };
            }
            Err(other) => other,
        };
        match boxed.downcast::<tempfile::PersistError>() {
            Ok(persist) => Error::Io {
                what,
                source: persist.error,
            },
            Err(source) => Error::Other { what, source },
        }
    }
}

crate::fault::layer_context!(Error);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_errno_and_a_failed_persist_are_io_errors() {
        let errno = Error::within("cannot create x", rustix::io::Errno::ACCESS);
        assert!(
            matches!(&errno, Error::Io { what, source } if what == "cannot create x"
            && source.kind() == std::io::ErrorKind::PermissionDenied)
        );
        let dir = tempfile::tempdir().unwrap();
        let tmp = tempfile::NamedTempFile::new_in(dir.path()).unwrap();
        let persisted = tmp
            .persist(dir.path().join("missing/x"))
            .context("cannot write x");
        assert!(matches!(persisted, Err(Error::Io { source, .. })
            if source.kind() == std::io::ErrorKind::NotFound));
        let other = Error::within("cannot strip", Error::invalid("no"));
        assert!(matches!(other, Error::Other { .. }));
    }
}
