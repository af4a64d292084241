//! Rendering: stdout carries the data (JSON or a human rendering), stderr carries status,
//! warnings and errors. Nothing else in the crate writes to stdout.

use std::io::{IsTerminal, Write};

use serde_json::{Map, Value};

use super::error::CrewError;
use crate::view::human::sanitize;

/// How a command's data is printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Json,
    Human,
}

impl Format {
    /// `--json` / `--human` win; then `GIT_CREW_FORMAT`; then JSON unless stdout is a
    /// terminal. `human_by_default` is for hook entry points, whose stdout git sends to
    /// the user's terminal.
    pub fn detect(json: bool, human: bool, human_by_default: bool) -> Format {
        if let Some(asked) = Format::explicit(json, human) {
            return asked;
        }
        if human_by_default || std::io::stdout().is_terminal() {
            Format::Human
        } else {
            Format::Json
        }
    }
}

/// Whether a human rendering on stdout is coloured: never with `NO_COLOR`, always with
/// `CLICOLOR_FORCE`, else on a terminal that takes colour (`CLICOLOR=0` turns it off).
pub fn colour() -> bool {
    anstream::AutoStream::choice(&std::io::stdout()) != anstream::ColorChoice::Never
}

impl Format {
    /// The format asked for by `--json`, `--human` or `GIT_CREW_FORMAT`, if any.
    fn explicit(json: bool, human: bool) -> Option<Format> {
        if json {
            return Some(Format::Json);
        }
        if human {
            return Some(Format::Human);
        }
        match std::env::var("GIT_CREW_FORMAT").ok().as_deref() {
            Some("json") => Some(Format::Json),
            Some("human") => Some(Format::Human),
            _ => None,
        }
    }

    /// Whether the format was asked for rather than taken from what stdout is.
    pub fn asked(json: bool, human: bool) -> bool {
        Format::explicit(json, human).is_some()
    }
}

pub use crate::ops::answer::Status;

/// What a command produced: its data, a human rendering of it, and its status.
#[derive(Debug, Default)]
pub struct Report {
    pub fields: Map<String, Value>,
    pub human: String,
    pub status: Status,
    /// Put before every line of a human-rendered verdict (`crew: ` for hooks).
    pub prefix: &'static str,
    /// The rendering is the data itself (a completion script): printed as it is unless
    /// `--json` asks for the envelope.
    pub raw: bool,
    /// The rendering carries its own colours and made what others wrote printable
    /// itself (a [table](super::table)'s cells): printed as it is. Every other human
    /// rendering is [sanitized](crate::view::human::sanitize) on its way out.
    pub styled: bool,
}

impl Report {
    pub fn new(fields: Value, human: impl Into<String>) -> Report {
        let fields = match fields {
            Value::Object(map) => map,
            other => {
                let mut map = Map::new();
                map.insert("value".into(), other);
                map
            }
        };
        Report {
            fields,
            human: human.into(),
            status: Status::Ok,
            prefix: "",
            raw: false,
            styled: false,
        }
    }

    /// A report whose data is `text` itself; under `--json`, `{"text": ...}`.
    pub fn raw(text: String) -> Report {
        Report {
            raw: true,
            ..Report::new(serde_json::json!({ "text": text }), text)
        }
    }

    /// A report whose data is a typed output struct: its fields are the JSON object the
    /// struct serializes to (a struct that is not an object is a bug, caught in tests).
    pub fn of<T: serde::Serialize>(data: &T, human: impl Into<String>) -> Report {
        match crate::ops::answer::fields(data) {
            Ok(fields) => Report::new(Value::Object(fields), human),
            // An output that cannot be rendered is git-crew's bug (exit 70).
            Err(error) => Report {
                status: Status::Failed(error),
                ..Report::new(Value::Object(Map::new()), "")
            },
        }
    }

    /// [`Report::of`] with the status the operation came to.
    pub fn with_status<T: serde::Serialize>(
        data: &T,
        human: impl Into<String>,
        status: Status,
    ) -> Report {
        let mut report = Report::of(data, human);
        if report.status.failure().is_none() {
            report.status = status;
        }
        report
    }

    pub fn exit_code(&self) -> u8 {
        self.status.exit_code()
    }

    /// The error of a failed report.
    fn failure(&self) -> Option<&CrewError> {
        self.status.failure()
    }
}

/// Prints a successful or check-failed report; returns the exit code.
pub fn emit(format: Format, report: Report) -> u8 {
    let code = report.exit_code();
    match format {
        Format::Json => {
            print_json(&crate::ops::answer::envelope(report.fields, &report.status));
        }
        Format::Human => {
            // What a worker wrote reaches a terminal as text only, whichever command
            // shows it; a raw report is the data itself, a styled one did it already.
            let human = if report.raw || report.styled {
                report.human.clone()
            } else {
                sanitize(&report.human)
            };
            if !human.is_empty() {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(human.as_bytes());
                if !human.ends_with('\n') {
                    let _ = out.write_all(b"\n");
                }
            }
            if let Some(verdict) = report.failure() {
                eprint!("{}", sanitize(&verdict.render_human(report.prefix)));
            }
        }
    }
    code
}

/// Prints an error; returns its exit code.
pub fn emit_error(format: Format, err: &CrewError) -> u8 {
    match format {
        Format::Json => print_json(&crate::ops::answer::refusal(err)),
        Format::Human => eprint!("{}", sanitize(&err.render_human(""))),
    }
    err.exit_code()
}

fn print_json(value: &Value) {
    let mut out = std::io::stdout().lock();
    // A closed stdout (a pipe whose reader went away) is not worth a panic.
    let _ = serde_json::to_writer(&mut out, value);
    let _ = out.write_all(b"\n");
}

/// A warning on stderr, git style.
pub fn warn(message: &str) {
    eprintln!("warning: {}", sanitize(message));
}
