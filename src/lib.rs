//! git-crew: a git extension that turns a repository into a dispatch floor for coding
//! agents.
//!
//! Every command gathers facts (`git`, `state`, `sys`), decides in pure code (`core`),
//! then applies the decision (`git`, `run`); `ops` holds one operation per command, which
//! a front end calls (`cli`, through the presentation models of `view`; `mcp`, the MCP
//! server). The modules are layers, lowest first — `fault` (what the layers' error types
//! share), `core`, `view`, `sys`, `git`, `state`, `run`, `error`, `ops`, then the front
//! ends `mcp` and `cli` — and each imports only the ones below it (`mcp` never imports
//! `cli`); each of `sys`, `git`, `state` and `run` returns its own error enum. Only a front
//! end speaks on a terminal: below `cli` nothing prints; what an operation has to say
//! comes back as a value.
#![deny(clippy::print_stdout, clippy::print_stderr)]

#[allow(clippy::print_stdout, clippy::print_stderr)]
pub mod cli;
pub mod core;
pub mod error;
mod fault;
pub mod git;
pub mod mcp;
pub mod ops;
pub mod run;
pub mod state;
pub mod sys;
pub mod view;
