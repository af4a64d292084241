//! git-crew: a git extension that turns a repository into a dispatch floor for coding
//! agents.
//!
//! Every command gathers facts (`git`, `state`, `sys`), decides in pure code (`core`),
//! then applies the decision (`git`, `run`) and renders it (`cli`, through the
//! presentation models of `view`). The modules are layers, lowest first — `core`, `view`,
//! `sys`, `git`, `state`, `run`, `cli` — and each imports only the ones below it.

pub mod cli;
pub mod core;
pub mod error;
pub mod git;
pub mod ops;
pub mod run;
pub mod state;
pub mod sys;
pub mod view;
