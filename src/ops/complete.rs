//! What a TAB offers: the run addresses (`@last`, task ids, run ids) a RUN argument
//! completes to, and the task ids (the plans', then past runs') a task argument does.
//! A read: the runs on file as they are, no lock taken.

use crate::core::complete::{Candidate, Runs};
use crate::error::Result;
use crate::state::runs::RunStore;

use super::{Context, runs};

/// At most this many of the newest runs have their record read (for their task ids);
/// older run ids are offered from their file names alone.
const RECORDS_READ: usize = 200;

/// What kind of argument is being completed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Of {
    /// A RUN argument.
    Runs,
    /// A task argument.
    Tasks,
}

pub struct Request {
    /// What has been typed of the argument so far.
    pub current: String,
    pub of: Of,
}

/// The candidates for the argument, in the order offered.
pub fn complete(ctx: &Context, req: &Request) -> Result<Vec<Candidate>> {
    let store = runs::open(ctx)?;
    let known = known(&store);
    Ok(match req.of {
        Of::Runs => crate::core::complete::runs(&req.current, &known),
        Of::Tasks => {
            let plans = ctx
                .workdir()
                .ok()
                .map(crate::run::plans::texts)
                .unwrap_or_default();
            crate::core::complete::tasks(&req.current, &plans, &known)
        }
    })
}

/// Every run id, and the tasks of the newest [`RECORDS_READ`] runs.
fn known(store: &RunStore) -> Runs {
    let ids = store.ids();
    let mut newest: Vec<&str> = ids.iter().map(String::as_str).collect();
    newest.sort_unstable_by(|a, b| b.cmp(a));
    newest.dedup();
    newest.truncate(RECORDS_READ);
    let tasks = store.tasks_of(&newest);
    Runs { ids, tasks }
}
