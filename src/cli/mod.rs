//! The command line: clap definitions and orchestration only, one file per command.
//! Every command returns a [`ui::Report`] or a [`error::CrewError`]; `main` renders either
//! and turns it into the exit code.

pub mod abandon;
pub mod advise;
pub mod complete;
pub mod context;
pub mod diff;
pub mod dispatch;
pub mod doctor;
pub use crate::error;
pub mod flight;
pub mod footer;
pub mod gate;
pub mod hook;
pub mod init;
pub mod integrate;
pub mod ledger;
pub mod manpages;
pub mod mcp;
pub mod native;
pub mod plan;
pub mod progress;
pub mod prune;
pub mod retry;
pub mod runs;
pub mod show;
pub mod status;
pub mod summary;
pub mod supervise;
pub mod sync;
pub mod table;
pub mod ui;
pub mod verify;
pub mod wait;
pub mod watch;
pub mod wave;
pub mod work;
pub mod workers;

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use context::CommandContext;
use error::{CrewError, ErrorCode};
use ui::Format;

const EXAMPLES: &str = "\
Examples:
  git crew init                      install hooks, notes config and .crew/flight.toml
  git crew flight --explain          show the routing config and where each value comes from
  git crew flight --backend claude --set fences.time_budget=40m
  git crew footer reply.md           extract the footer a worker handed back
  git crew -C ../other-repo init --uninstall

Output is JSON when stdout is not a terminal (or with --json / GIT_CREW_FORMAT=json).
Exit codes: 0 ok, 1 a check said no, 2 usage or config error, 3 not found,
4 refused by state, 5 needs attention, 70 internal error (a bug), 74 I/O or environment
failure.";

/// Dispatch coding agents into fenced worktrees and keep their record in git.
///
/// git-crew turns a repository into a dispatch floor for coding agents: workers run in
/// their own worktrees, fenced by a write scope that git hooks enforce, and their
/// outcomes are kept in git notes.
#[derive(Debug, Parser)]
#[command(name = "git-crew", bin_name = "git crew", version, after_help = EXAMPLES)]
pub struct Cli {
    /// Run as if started in PATH (repeatable, like git's -C).
    #[arg(
        short = 'C',
        value_name = "PATH",
        global = true,
        action = clap::ArgAction::Append,
        help_heading = "Global options"
    )]
    pub directories: Vec<PathBuf>,

    /// Print JSON on stdout, whatever stdout is.
    #[arg(
        long,
        global = true,
        conflicts_with = "human",
        help_heading = "Global options"
    )]
    pub json: bool,

    /// Print a human rendering on stdout, whatever stdout is.
    #[arg(long, global = true, help_heading = "Global options")]
    pub human: bool,

    #[command(subcommand)]
    pub command: Command,
}

/// Every registered command.
#[derive(Debug, Subcommand)]
pub enum Command {
    Init(init::InitArgs),
    Flight(flight::FlightArgs),
    Dispatch(Box<dispatch::DispatchArgs>),
    Retry(Box<retry::RetryArgs>),
    Wait(wait::WaitArgs),
    #[command(visible_alias = "ls")]
    Status(status::StatusArgs),
    Show(show::ShowArgs),
    Diff(diff::DiffArgs),
    Transcript(show::TranscriptArgs),
    Abandon(abandon::AbandonArgs),
    Advise(advise::AdviseArgs),
    Verify(verify::VerifyArgs),
    Integrate(integrate::IntegrateArgs),
    Prune(prune::PruneArgs),
    Attach(native::AttachArgs),
    Deliver(native::DeliverArgs),
    Watch(watch::WatchArgs),
    Ledger(ledger::LedgerArgs),
    ShouldStop(ledger::ShouldStopArgs),
    Plan(plan::PlanArgs),
    Gate(gate::GateArgs),
    Wave(wave::WaveArgs),
    Work(Box<work::WorkArgs>),
    Workers(workers::WorkersArgs),
    Summary(summary::SummaryArgs),
    Sync(sync::SyncArgs),
    Doctor(doctor::DoctorArgs),
    InstallManPages(manpages::InstallManPagesArgs),
    Completions(complete::CompletionsArgs),
    Footer(footer::FooterArgs),
    Mcp(mcp::McpArgs),
    #[command(hide = true)]
    Hook(hook::HookArgs),
    #[command(hide = true)]
    Supervise(supervise::SuperviseArgs),
}

impl Command {
    /// Hook entry points print for a person by default: git shows their output in the
    /// terminal of whoever runs `git commit`. So does the MCP server, whose stdout is the
    /// protocol: an error starting it is said on stderr.
    fn human_by_default(&self) -> bool {
        matches!(
            self,
            Command::Hook(_) | Command::Supervise(_) | Command::Mcp(_)
        )
    }
}

/// Parses the arguments, runs the command, renders its result.
pub fn main() -> ExitCode {
    if let Some(code) = complete::serve() {
        return code;
    }
    ExitCode::from(run(std::env::args_os()))
}

/// Like [`main`], for a given argument list; returns the exit code.
pub fn run(args: impl IntoIterator<Item = OsString>) -> u8 {
    let args: Vec<OsString> = args.into_iter().collect();
    let cli = match hook_line(&args) {
        Some(cli) => cli,
        None => match Cli::try_parse_from(&args) {
            Ok(cli) => cli,
            Err(err) => return usage_error(&args, err),
        },
    };
    execute(cli)
}

/// The command lines the installed hook shims run on every commit and merge (`hook
/// pre-commit`, `hook post-merge [0|1]`, `hook post-commit`), read without building
/// clap's tree of every command: the same [`Cli`] clap would give for them. Any other
/// line, or one with a flag in it, is left to clap.
fn hook_line(args: &[OsString]) -> Option<Cli> {
    let words: Vec<&str> = args
        .get(1..)?
        .iter()
        .map(|a| a.to_str())
        .collect::<Option<_>>()?;
    let hook = match words.as_slice() {
        ["hook", "pre-commit"] => hook::Hook::PreCommit,
        ["hook", "post-commit"] => hook::Hook::PostCommit,
        ["hook", "post-merge"] => hook::Hook::PostMerge {
            squash: "0".to_string(),
        },
        ["hook", "post-merge", squash] if !squash.starts_with('-') => hook::Hook::PostMerge {
            squash: (*squash).to_string(),
        },
        _ => return None,
    };
    Some(Cli {
        directories: Vec::new(),
        json: false,
        human: false,
        command: Command::Hook(hook::HookArgs { hook }),
    })
}

/// Runs a parsed command line and renders its result; returns the exit code.
fn execute(cli: Cli) -> u8 {
    let format = match cli.command {
        // git runs a hook for a person: it speaks on stderr, and only when it has
        // something to say, whatever GIT_CREW_FORMAT the shell exports. JSON on stdout
        // only for a caller that asks the entry point itself with --json.
        Command::Hook(_) if !cli.json => Format::Human,
        _ => Format::detect(cli.json, cli.human, cli.command.human_by_default()),
    };
    let mut ctx = match CommandContext::new(&cli.directories, format) {
        Ok(ctx) => ctx,
        Err(err) => return ui::emit_error(format, &err),
    };
    ctx.format_asked = Format::asked(cli.json, cli.human);
    let result = match cli.command {
        Command::Init(args) => init::run(&ctx, args),
        Command::Flight(args) => flight::run(&ctx, args),
        Command::Dispatch(args) => dispatch::run(&ctx, *args),
        Command::Retry(args) => retry::run(&ctx, *args),
        Command::Wait(args) => wait::run(&ctx, args),
        Command::Status(args) => status::run(&ctx, args),
        Command::Show(args) => show::run(&ctx, args),
        Command::Diff(args) => diff::run(&ctx, args),
        Command::Transcript(args) => show::transcript(&ctx, args),
        Command::Abandon(args) => abandon::abandon(&ctx, args),
        Command::Advise(args) => advise::run(&ctx, args),
        Command::Verify(args) => verify::run(&ctx, args),
        Command::Integrate(args) => integrate::run(&ctx, args),
        Command::Prune(args) => prune::run(&ctx, args),
        Command::Plan(args) => plan::run(&ctx, args),
        Command::Gate(args) => gate::run(&ctx, args),
        Command::Wave(args) => wave::run(&ctx, args),
        Command::Work(args) => work::run(&ctx, *args),
        Command::Workers(args) => workers::run(&ctx, args),
        Command::Summary(args) => summary::run(&ctx, args),
        Command::Sync(args) => sync::run(&ctx, args),
        Command::Attach(args) => native::attach(&ctx, args),
        Command::Deliver(args) => native::deliver(&ctx, args),
        Command::Watch(args) => watch::run(&ctx, args),
        Command::Ledger(args) => ledger::ledger(&ctx, args),
        Command::ShouldStop(args) => ledger::should_stop(&ctx, args),
        Command::Doctor(args) => doctor::run(&ctx, args),
        Command::InstallManPages(args) => manpages::install(&ctx, args),
        Command::Completions(args) => complete::completions(args),
        Command::Footer(args) => footer::run(&ctx, args),
        Command::Mcp(args) => mcp::run(&ctx, args),
        Command::Hook(args) => hook::run(&ctx, args),
        Command::Supervise(args) => supervise::supervise(&ctx, args),
    };
    // What the operations met on the side, said before their result.
    for warning in ctx.take_warnings() {
        ui::warn(&warning);
    }
    match result {
        // A raw report's data is its text: JSON only when asked for by name.
        Ok(report) if report.raw && !cli.json => ui::emit(Format::Human, report),
        Ok(report) => ui::emit(format, report),
        Err(err) => ui::emit_error(format, &err),
    }
}

/// Renders a clap error: help and version go to stdout with exit 0; anything else is a
/// usage error (exit 2), in the JSON envelope when JSON was asked for.
fn usage_error(args: &[OsString], err: clap::Error) -> u8 {
    use clap::error::ErrorKind as Clap;
    if matches!(err.kind(), Clap::DisplayHelp | Clap::DisplayVersion) {
        let _ = err.print();
        return error::exit::OK;
    }
    let json = args.iter().any(|a| a == "--json");
    let human = args.iter().any(|a| a == "--human");
    let format = Format::detect(json, human, false);
    match format {
        Format::Human => {
            let _ = err.print();
            error::exit::USAGE
        }
        Format::Json => {
            let message = if err.kind() == Clap::DisplayHelpOnMissingArgumentOrSubcommand {
                "a subcommand is required".to_string()
            } else {
                let rendered = err.render().to_string();
                rendered
                    .lines()
                    .next()
                    .unwrap_or("invalid arguments")
                    .trim_start_matches("error: ")
                    .to_string()
            };
            // clap's own suggestion ("a similar subcommand exists: 'status'") first.
            let mut usage = CrewError::new(ErrorCode::Usage, message);
            for tip in err.render().to_string().lines().filter_map(|l| {
                l.trim()
                    .strip_prefix("tip: a similar ")?
                    .split_once(" exists: ")
            }) {
                usage = usage.hinted(format!("did you mean {}?", tip.1.replace('\'', "`")));
            }
            let usage = usage.hinted("run `git crew --help` for the commands and their flags");
            ui::emit_error(format, &usage)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// The hook lines read without clap give the command line clap gives; any other
    /// line (a flag, another hook, a word more) is left to clap.
    #[test]
    fn hook_lines_read_without_clap_are_those_clap_reads() {
        let line = |words: &[&str]| -> Vec<OsString> {
            std::iter::once("git-crew")
                .chain(words.iter().copied())
                .map(OsString::from)
                .collect()
        };
        for words in [
            &["hook", "pre-commit"][..],
            &["hook", "post-commit"],
            &["hook", "post-merge"],
            &["hook", "post-merge", "0"],
            &["hook", "post-merge", "1"],
            &["hook", "post-merge", ""],
        ] {
            let args = line(words);
            let fast = hook_line(&args).expect("a hook line");
            let clap = Cli::try_parse_from(&args).expect("clap reads it");
            assert_eq!(format!("{fast:?}"), format!("{clap:?}"), "{words:?}");
        }
        for words in [
            &["hook", "pre-commit", "--json"][..],
            &["--json", "hook", "pre-commit"],
            &["-C", ".", "hook", "pre-commit"],
            &["hook", "pre-commit", "extra"],
            &["hook", "post-merge", "--help"],
            &["hook", "post-merge", "1", "2"],
            &["hook", "pre-push"],
            &["hook"],
            &["status"],
            &[],
        ] {
            assert!(hook_line(&line(words)).is_none(), "{words:?}");
        }
    }

    #[test]
    fn verify_app() {
        Cli::command().debug_assert();
    }

    /// `-h` lists each command on one line of an 80-column terminal: every visible
    /// command's summary is one short line (the rest of its text is in `--help`).
    #[test]
    fn every_summary_is_one_short_line() {
        let root = Cli::command();
        let mut long = Vec::new();
        let mut stack: Vec<(String, &clap::Command)> = vec![("git crew".into(), &root)];
        while let Some((path, cmd)) = stack.pop() {
            for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
                let name = format!("{path} {}", sub.get_name());
                let about = sub.get_about().map(|a| a.to_string()).unwrap_or_default();
                if about.is_empty() || about.contains('\n') || about.chars().count() > 58 {
                    long.push(format!("{name}: {about}"));
                }
                stack.push((name, sub));
            }
        }
        assert!(
            long.is_empty(),
            "summaries longer than a line:\n{}",
            long.join("\n")
        );
    }

    /// A command's own flags come first in its help; the global ones after them, under
    /// their own heading.
    #[test]
    fn global_flags_come_after_a_commands_own() {
        let mut root = Cli::command();
        root.build();
        let help = root
            .find_subcommand_mut("prune")
            .unwrap()
            .render_help()
            .to_string();
        let own = help.find("--dry-run").unwrap();
        let global = help.find("Global options:").expect(&help);
        assert!(
            own < global && global < help.find("--json").unwrap(),
            "{help}"
        );
    }
}
