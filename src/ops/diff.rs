//! `diff`: a run's change as integrate's audit sees it, from the run's own base to its
//! branch's tip, shown by git; a read, so nothing is settled or written.

use crate::error::{CrewError, ErrorCode, Result};
use crate::git::ObjectId;

pub use crate::git::diff::Shown;

use super::{Context, runs};

pub struct Request {
    /// A run address (see [`runs::resolve`]).
    pub run: String,
    /// The patch, a diffstat or each path with its status.
    pub shown: Shown,
    /// Show it through git's pager, with colour (stdout is a terminal for people).
    pub page: bool,
}

/// The change of a run.
pub struct Diff {
    pub run: String,
    /// The run's own base: its base, or where it last merged the target in.
    pub from: ObjectId,
    /// Its branch's tip.
    pub to: ObjectId,
    /// The change as git renders it; empty when git paged it itself.
    pub text: String,
}

impl Diff {
    /// What `diff` prints as data.
    pub fn output(&self) -> crate::view::output::DiffOutput<'_> {
        crate::view::output::DiffOutput {
            run: &self.run,
            from: self.from.to_string(),
            to: self.to.to_string(),
            text: &self.text,
        }
    }
}

/// The change integrate would apply and audit; `branch-gone` when the run's branch is
/// gone and nothing keeps its commits.
pub fn diff(ctx: &Context, req: &Request) -> Result<Diff> {
    let store = runs::open(ctx)?;
    let record = runs::load(&store, &runs::resolve(&store, &req.run)?)?;
    let repo = ctx.repo()?;
    let Some((from, to)) =
        crate::git::run_range::audit_range(repo, &record).map_err(CrewError::from)?
    else {
        return Err(CrewError::new(
            ErrorCode::BranchGone,
            format!("run {}'s branch {} is gone", record.run, record.branch),
        )
        .hinted("nothing keeps its commits: there is no change to show"));
    };
    let text = crate::git::diff::show(ctx.workdir()?, from, to, req.shown, req.page)
        .map_err(CrewError::from)?
        .unwrap_or_default();
    Ok(Diff {
        run: record.run,
        from,
        to,
        text,
    })
}
