//! `git crew mcp`: the commands as an MCP server, for a lead agent.

use std::net::SocketAddr;

use clap::Args;

use super::context::CommandContext;
use super::error::Result;
use super::ui::Report;

const EXAMPLES: &str = "\
Examples:
  git crew mcp                          what .mcp.json runs: {\"command\": \"git\", \"args\": [\"crew\", \"mcp\"]}
  git crew -C ~/src/app mcp
  git crew mcp --http 127.0.0.1:0       Streamable HTTP; stderr names the URL";

/// Serve the commands to an agent over MCP.
///
/// The Model Context Protocol over stdin and stdout, for a client that starts it (Claude
/// Code's .mcp.json, codex's [mcp_servers]). Its tools are the commands — status, show,
/// diff, ledger, should_stop, plan_status, wave_status, workers, dispatch, wave_dispatch,
/// advise, verify, integrate, abandon, retry, wait — each returning the JSON its --json
/// prints, a refusal as a tool error with its code, message and hint. Runs are resources
/// (crew://runs, crew://runs/<run>); a subscriber hears when a run changes phase. wait
/// holds a call 50 s at most. Nothing but the protocol is written on stdout; runs
/// dispatched through it outlive it.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct McpArgs {
    /// Speak Streamable HTTP on this loopback address instead of stdio (port 0 picks a
    /// free one; stderr names the URL).
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,
}

pub fn run(ctx: &CommandContext, args: McpArgs) -> Result<Report> {
    let transport = match args.http {
        Some(addr) => crate::mcp::Transport::Http(addr),
        None => crate::mcp::Transport::Stdio,
    };
    crate::mcp::serve(ctx.cwd.clone(), transport, |addr| {
        eprintln!("git-crew: MCP server on http://{addr}/mcp");
    })?;
    // The session is over: nothing more to say.
    Ok(Report::raw(String::new()))
}
