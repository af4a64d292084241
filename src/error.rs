//! Errors that reach the user: a kind (which is the exit code, decided here and nowhere
//! else), a stable kebab-case code for JSON, a message, and hints on what to do next.

use std::fmt;

/// The exit codes of every command (SPEC §2).
pub mod exit {
    /// Success; for queries, the positive/continue answer.
    pub const OK: u8 = 0;
    /// A check said no: scope violation, verify failed, footer rejected, gate failed.
    pub const CHECK: u8 = 1;
    /// Usage or configuration error.
    pub const USAGE: u8 = 2;
    /// Not found: run, task, gate, plan.
    pub const NOT_FOUND: u8 = 3;
    /// Refused by state.
    pub const REFUSED: u8 = 4;
    /// Needs attention: a worker asked for help, an escalation or a human report.
    pub const ATTENTION: u8 = 5;
    /// Internal error (a bug).
    pub const INTERNAL: u8 = 70;
    /// Stopped by SIGINT or SIGTERM (128 + SIGINT, as shells report it), after its
    /// cleanup ran.
    pub const INTERRUPTED: u8 = 130;
}

/// What went wrong, as far as the exit code is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A check said no.
    Check,
    /// Bad flag, malformed config, not a git repository.
    Usage,
    NotFound,
    Refused,
    Attention,
    Internal,
    Interrupted,
}

impl ErrorKind {
    /// The one mapping from error kind to exit code.
    pub fn exit_code(self) -> u8 {
        match self {
            ErrorKind::Check => exit::CHECK,
            ErrorKind::Usage => exit::USAGE,
            ErrorKind::NotFound => exit::NOT_FOUND,
            ErrorKind::Refused => exit::REFUSED,
            ErrorKind::Attention => exit::ATTENTION,
            ErrorKind::Internal => exit::INTERNAL,
            ErrorKind::Interrupted => exit::INTERRUPTED,
        }
    }
}

/// An error with everything needed to render it in JSON or for a human.
#[derive(Debug, Clone)]
pub struct CrewError {
    pub kind: ErrorKind,
    /// Stable, kebab-case (`not-a-repository`, `config-invalid`, ...).
    pub code: &'static str,
    pub message: String,
    /// Further lines of the message (one per diagnostic, for instance).
    pub details: Vec<String>,
    pub hints: Vec<String>,
}

impl CrewError {
    pub fn new(kind: ErrorKind, code: &'static str, message: impl Into<String>) -> CrewError {
        CrewError {
            kind,
            code,
            message: message.into(),
            details: Vec::new(),
            hints: Vec::new(),
        }
    }

    pub fn usage(code: &'static str, message: impl Into<String>) -> CrewError {
        CrewError::new(ErrorKind::Usage, code, message)
    }

    pub fn check(code: &'static str, message: impl Into<String>) -> CrewError {
        CrewError::new(ErrorKind::Check, code, message)
    }

    /// A bug or an unexpected failure underneath (I/O, git).
    pub fn internal(err: impl fmt::Display) -> CrewError {
        CrewError::new(ErrorKind::Internal, "internal", format!("{err:#}"))
    }

    /// An error from running a run's processes: an interrupt (SIGINT, SIGTERM) is its own
    /// kind, anything else is internal.
    pub fn from_run(err: anyhow::Error) -> CrewError {
        if err
            .downcast_ref::<crate::run::process::Interrupted>()
            .is_some()
        {
            CrewError::new(
                ErrorKind::Interrupted,
                "interrupted",
                "interrupted: the verify command and everything it started were stopped",
            )
            .hinted("nothing was recorded; run the command again")
        } else {
            CrewError::internal(err)
        }
    }

    pub fn hinted(mut self, hint: impl Into<String>) -> CrewError {
        self.hints.push(hint.into());
        self
    }

    pub fn with_details(mut self, details: Vec<String>) -> CrewError {
        self.details = details;
        self
    }

    pub fn exit_code(&self) -> u8 {
        self.kind.exit_code()
    }

    /// The SPEC §2 error envelope's `error` object.
    pub fn to_json(&self) -> serde_json::Value {
        let mut message = self.message.clone();
        for detail in &self.details {
            message.push('\n');
            message.push_str(detail);
        }
        let mut value = serde_json::json!({
            "code": self.code,
            "message": message,
            "hint": self.all_hints().join("\n"),
        });
        if !self.details.is_empty() {
            value["details"] = self.details.clone().into();
        }
        value
    }

    /// git-style rendering: `error: ...`, indented details, `hint: ...`.
    pub fn render_human(&self, prefix: &str) -> String {
        let mut out = format!("{prefix}error: {}\n", self.message);
        for detail in &self.details {
            out.push_str(&format!("{prefix}  {detail}\n"));
        }
        for hint in self.all_hints() {
            out.push_str(&format!("{prefix}hint: {hint}\n"));
        }
        out
    }

    /// The hints given, or — so that no error leaves the reader without a next step —
    /// the one its kind always has.
    fn all_hints(&self) -> Vec<String> {
        if !self.hints.is_empty() {
            return self.hints.clone();
        }
        vec![
            match self.kind {
                ErrorKind::Check => {
                    "`git crew show RUN` shows what was measured; `git crew transcript RUN` what was printed"
                }
                ErrorKind::Usage => "`git crew help COMMAND` shows its flags",
                ErrorKind::NotFound => "`git crew status` lists the runs",
                ErrorKind::Refused => "`git crew status` shows what is in flight",
                ErrorKind::Attention => {
                    "`git crew status` shows the runs that need you; `git crew advise RUN --text ...` answers one"
                }
                ErrorKind::Internal => {
                    "this is a bug in git-crew: report it with the command that printed it"
                }
                ErrorKind::Interrupted => "nothing was recorded; run the command again",
            }
            .to_string(),
        ]
    }
}

impl fmt::Display for CrewError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CrewError {}

impl From<anyhow::Error> for CrewError {
    fn from(err: anyhow::Error) -> CrewError {
        CrewError::internal(err)
    }
}

/// The result every command returns.
pub type Result<T, E = CrewError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_maps_to_the_spec_exit_code() {
        let table = [
            (ErrorKind::Check, 1),
            (ErrorKind::Usage, 2),
            (ErrorKind::NotFound, 3),
            (ErrorKind::Refused, 4),
            (ErrorKind::Attention, 5),
            (ErrorKind::Internal, 70),
        ];
        for (kind, code) in table {
            assert_eq!(kind.exit_code(), code);
        }
    }

    #[test]
    fn the_envelope_carries_code_message_and_hint() {
        let e = CrewError::usage("not-a-repository", "not a git repository")
            .hinted("run it inside a repository");
        assert_eq!(
            e.to_json(),
            serde_json::json!({"code": "not-a-repository", "message": "not a git repository", "hint": "run it inside a repository"})
        );
        assert_eq!(
            e.render_human(""),
            "error: not a git repository\nhint: run it inside a repository\n"
        );
    }
}
