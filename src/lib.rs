//! git-crew: a git extension that turns a repository into a dispatch floor for coding
//! agents.
//!
//! Every command gathers facts (`git`, `state`), decides in pure code (`core`), then
//! applies and renders the decision (`git`, `cli::ui`).

pub mod cli;
pub mod core;
pub mod git;
pub mod run;
pub mod state;
pub mod sys;
