//! The operations every front end calls: one typed operation per command, a request in
//! and a typed output or a [`CrewError`](crate::error::CrewError) out, with no argument
//! parsing and no rendering. `cli` parses arguments into requests and renders outputs;
//! the console (`cli::watch`) calls these directly; a new front end (an MCP server, a
//! fleet agent) plugs in here, beside `cli`.

pub mod abandon;
pub mod advise;
pub mod answer;
pub mod complete;
pub mod context;
pub mod diff;
pub mod dispatch;
pub mod doctor;
pub mod files;
pub mod fleet;
pub mod flight;
pub mod footer;
pub mod forecast;
pub mod gate;
pub mod hook;
pub mod init;
pub mod integrate;
pub mod integrate_all;
pub mod ledger;
pub mod native;
pub mod plan;
pub mod plans;
pub mod prune;
pub mod refusals;
pub mod retry;
pub mod runs;
pub mod schema;
pub mod show;
pub mod status;
pub mod summary;
pub mod supervise;
pub mod sync;
pub mod verify;
pub mod wait;
pub mod watch;
pub mod wave;
pub mod work;
pub mod workers;

pub use context::Context;
