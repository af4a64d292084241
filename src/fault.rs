//! What the typed errors of the layers below `error` share: a failure's source, and the
//! `context` every layer adds to a failure underneath it. Each layer (`sys`, `git`,
//! `state`, `run`) has its own error enum; [`layer_context!`] gives it its `Context`
//! trait. Imports nothing of the crate.

/// A failure underneath, of whatever type: what a layer's error keeps as its source.
pub type Source = Box<dyn std::error::Error + Send + Sync>;

/// Declares `Context` for a layer's `Error`, which has `Error::within(what, source)` (a
/// step failed, and why) and a variant `Invalid(String)` (something is not there or not
/// usable, said in words: `Error::invalid(what)`): `result.context("cannot read x")?` and
/// `option.context("no name")?`.
macro_rules! layer_context {
    ($error:ty) => {
        impl $error {
            /// Something that is not there or cannot be used, said in words.
            pub fn invalid(what: impl std::fmt::Display) -> $error {
                <$error>::Invalid(what.to_string())
            }
        }

        /// Says what was being done when a call failed, as this layer's error.
        pub trait Context<T> {
            fn context(self, what: impl std::fmt::Display) -> std::result::Result<T, $error>;
            fn with_context<D: std::fmt::Display>(
                self,
                what: impl FnOnce() -> D,
            ) -> std::result::Result<T, $error>;
        }

        impl<T, E: std::error::Error + Send + Sync + 'static> Context<T>
            for std::result::Result<T, E>
        {
            fn context(self, what: impl std::fmt::Display) -> std::result::Result<T, $error> {
                self.map_err(|e| <$error>::within(what, e))
            }

            fn with_context<D: std::fmt::Display>(
                self,
                what: impl FnOnce() -> D,
            ) -> std::result::Result<T, $error> {
                self.map_err(|e| <$error>::within(what(), e))
            }
        }

        /// A value that is not there is something this layer lacks.
        impl<T> Context<T> for Option<T> {
            fn context(self, what: impl std::fmt::Display) -> std::result::Result<T, $error> {
                self.ok_or_else(|| <$error>::invalid(what))
            }

            fn with_context<D: std::fmt::Display>(
                self,
                what: impl FnOnce() -> D,
            ) -> std::result::Result<T, $error> {
                self.ok_or_else(|| <$error>::invalid(what()))
            }
        }
    };
}
pub(crate) use layer_context;

/// Returns early with the layer's `Error::invalid`, said as `format!` says it:
/// `bail!(Error, "{x} is not a commit")`.
macro_rules! bail {
    ($error:ty, $($arg:tt)*) => {
        return Err(<$error>::invalid(format!($($arg)*)))
    };
}
pub(crate) use bail;

/// An error and every cause under it, on one line: `what: why: the failure underneath`.
pub fn chain(err: &(dyn std::error::Error + 'static)) -> String {
    let words: Vec<String> = std::iter::successors(Some(err), |e| e.source())
        .map(|e| e.to_string())
        .collect();
    words.join(": ")
}
