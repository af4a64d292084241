//! `git crew watch [--once]`: the console you live in — the runs in flight and the
//! finished runs that wait to be integrated, refreshed until you quit, with keys to look
//! at a run, answer it, integrate it or abandon it.

mod actions;
mod app;
mod frame;
mod live;
mod render;
mod text;

use std::io::IsTerminal;

use clap::Args;

use super::context::CommandContext;
use super::error::{CrewError, ErrorCode, Result};
use super::ui::{Format, Report};

/// A live console of the runs.
///
/// With keys to answer, integrate or abandon them.
///
/// Each run in flight with its phase, elapsed/budget, last activity and the last line of
/// its output, the question of a run that asks for help, and the finished runs that wait
/// to be integrated. It stays open when nothing runs and picks up new runs as they start.
///
/// Keys: ↑/↓ select a run; Enter shows it (`git crew show`); d shows its diff (`git crew
/// diff`, through git's pager); a answers its NEEDS-HELP (a line of text, Enter sends it
/// with `git crew advise`, Esc cancels); i integrates it; x abandons it, after y confirms;
/// q or Esc quits.
///
/// Each pass awaiting integration and each run in flight with commits has its conflict
/// forecast in the FORECAST column: `clean` when it merges cleanly onto its target's
/// current tip and conflicts with no other such run, else what it conflicts with
/// (`conflicts: main, 1 run`). Its trial merges are made in memory and kept while the
/// console runs, so a frame merges again only what moved.
///
/// With --once it prints one frame and exits (as JSON when piped or with --json: the
/// in-flight runs under "runs", each with its "last_line", and the runs awaiting
/// integration under "awaiting_integration"; each with its "forecast"). Without a
/// terminal, and without --once or --json, it is a usage error (exit 2).
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  git crew watch\n  git crew watch --once\n  git crew watch --once --json"
)]
pub struct WatchArgs {
    /// Print one frame and exit.
    #[arg(long)]
    pub once: bool,
    /// Time between frames.
    #[arg(long, default_value = "1s", value_name = "DURATION")]
    pub interval: String,
}

/// The width of a printed frame when neither COLUMNS nor the terminal says.
const DEFAULT_WIDTH: u16 = 100;

pub fn run(ctx: &CommandContext, args: WatchArgs) -> Result<Report> {
    let interval = humantime::parse_duration(&args.interval).map_err(|e| {
        CrewError::new(
            ErrorCode::BadDuration,
            format!("--interval {}: {e}", args.interval),
        )
    })?;
    let terminal = std::io::stdout().is_terminal();
    let json_asked = ctx.format == Format::Json && ctx.format_asked;
    if !args.once && !json_asked {
        if !terminal || ctx.format != Format::Human {
            return Err(CrewError::new(
                ErrorCode::NoTerminal,
                "watch is a live console: stdout is not a terminal",
            )
            .hinted("`git crew watch --once` prints one frame; add --json for it as JSON"));
        }
        live::run(ctx, interval.max(std::time::Duration::from_millis(100)))?;
        return Ok(Report::new(serde_json::json!({}), ""));
    }
    let frame = crate::ops::watch::frame(ctx)?;
    let (rows, questions, header) = (
        frame::rows(&frame),
        frame::questions(&frame),
        frame::header(&frame),
    );
    let view = render::View {
        header: &header,
        rows: &rows,
        questions: &questions,
        selected: None,
        prompt: None,
        color: false,
    };
    let human = text::text(&view, width());
    Ok(Report::of(&frame::json(&frame), human))
}

/// The width of a printed frame: COLUMNS, else the terminal's, else 100; between 20
/// and 500.
fn width() -> u16 {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<u16>().ok())
        .or_else(|| ratatui::crossterm::terminal::size().ok().map(|(w, _)| w))
        .filter(|&w| w > 0)
        .unwrap_or(DEFAULT_WIDTH)
        .clamp(20, 500)
}
