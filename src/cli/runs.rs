//! What the run commands share on the command line: the parsers of RUN arguments, the
//! run result measured now, and (re-exported) the store and RUN resolution of
//! [`crate::ops::runs`].

use crate::core::record::RunRecord;
use crate::view::result::{RunOutput, RunResult};

pub use crate::ops::runs::{found, load, open, resolve, run_address, settled, snapshot};

/// The parser of the hidden entry points' RUN: a whole run id only.
pub fn run_id(text: &str) -> std::result::Result<String, String> {
    if crate::core::record::is_run_id(text) {
        Ok(text.to_string())
    } else {
        Err(format!(
            "`{text}` is not a run id (they look like 20261202-101500-1a2b; `git crew status` lists them)"
        ))
    }
}

/// The run result of `record` now.
pub fn result(record: &RunRecord) -> RunResult<'_> {
    RunResult::at(record, crate::sys::clock::now_millis())
}

/// `{"run": run result}` of `record` now.
pub fn output(record: &RunRecord) -> RunOutput<'_> {
    RunOutput::at(record, crate::sys::clock::now_millis())
}

/// A run in full for people, as of now.
pub fn result_block(record: &RunRecord) -> String {
    crate::view::result::result_block(record, crate::sys::clock::now_millis())
}

/// One line per run for people, measured now.
pub fn result_line(record: &RunRecord) -> String {
    crate::view::result::result_line(record, crate::sys::clock::now_millis())
}
