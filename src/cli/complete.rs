//! `git crew completions SHELL` and what a TAB asks: the printed script calls git-crew
//! back (clap_complete's dynamic engine, through `GIT_CREW_COMPLETE`), so commands,
//! flags, run ids and task ids are always the current ones. The script also serves
//! `git crew <TAB>` under git's own completion: bash calls `_git_crew`, zsh `_git-crew`;
//! fish hands `git crew ...` to the `git-crew` completion by itself.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::{Args, CommandFactory};
use clap_complete::engine::{ArgValueCompleter, CompletionCandidate};
use clap_complete::env::{CompleteEnv, Shells};

use super::error::{CrewError, ErrorCode, Result};
use super::ui::Report;
use crate::core::complete::Candidate;
use crate::ops::complete::{Of, Request};

/// The variable that makes git-crew answer a completion request instead of running.
const VAR: &str = "GIT_CREW_COMPLETE";

/// Print the shell completion script for git-crew.
///
/// The script asks git-crew what to offer on each TAB: commands, flags, and the run ids
/// and task ids of the repository at hand. It completes `git-crew ...`, and `git crew ...`
/// where the shell's git completion is loaded (bash, zsh; fish where its git completion
/// hands `git-*` commands on). Load it from the shell's start-up file.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  echo 'source <(git crew completions bash)' >> ~/.bashrc\n  echo 'source <(git crew completions zsh)' >> ~/.zshrc   # after compinit\n  git crew completions fish > ~/.config/fish/completions/git-crew.fish"
)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// `git crew <TAB>` in bash: git's completion calls `_git_crew` with its own `words`,
/// `cword` and `cur`; complete the words after `crew` (with git's `-C` options, which
/// git-crew honours as git does) as if `git-crew` had been typed.
const BASH_GIT: &str = r#"
_git_crew() {
    local i=${__git_cmd_idx:-}
    if [[ -z $i ]]; then
        for ((i = 1; i < cword; i++)); do
            [[ ${words[i]} == crew ]] && break
        done
    fi
    local -a C_args=(${__git_C_args[@]+"${__git_C_args[@]}"})
    local COMP_WORDS=(git-crew "${C_args[@]}" "${words[@]:i+1}")
    local COMP_CWORD=$((cword - i + ${#C_args[@]}))
    compopt -o nosort 2>/dev/null
    _clap_complete_git_crew git-crew "$cur" "$prev"
}
"#;

/// `git crew <TAB>` in zsh: `_git` calls `_git-crew` with `words` starting at `crew`.
const ZSH_GIT: &str = r#"
_git-crew() { _clap_dynamic_completer_git_crew "$@"; }
"#;

/// Prints the completion script on stdout, as it is (not wrapped in JSON).
pub fn completions(args: CompletionsArgs) -> Result<Report> {
    let name = args.shell.to_string();
    let shells = Shells::builtins();
    let Some(shell) = shells.completer(&name) else {
        return Err(CrewError::new(
            ErrorCode::UnknownShell,
            format!("no completion for {name}"),
        ));
    };
    let mut script = Vec::new();
    shell
        .write_registration(VAR, "git-crew", "git-crew", &completer(), &mut script)
        .map_err(CrewError::from)?;
    let mut script = String::from_utf8_lossy(&script).into_owned();
    match args.shell {
        clap_complete::Shell::Bash => script.push_str(BASH_GIT),
        clap_complete::Shell::Zsh => script.push_str(ZSH_GIT),
        _ => {}
    }
    Ok(Report::raw(script))
}

/// The program the script calls back: `git-crew` when that is what PATH finds (so the
/// script outlives an upgrade in place), else this binary by its full path.
fn completer() -> String {
    let Ok(exe) = std::env::current_exe() else {
        return "git-crew".into();
    };
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|dir| dir.join("git-crew"))
        .find(|p| p.is_file());
    let same = |a: &Path, b: &Path| matches!((a.canonicalize(), b.canonicalize()), (Ok(a), Ok(b)) if a == b);
    match on_path {
        Some(found) if same(&found, &exe) => "git-crew".into(),
        _ => exe.to_string_lossy().into_owned(),
    }
}

/// Set when a `-C` directory on the line being completed does not exist: nothing is
/// offered from any repository then.
static LOST: AtomicBool = AtomicBool::new(false);

/// Answers a completion request (`GIT_CREW_COMPLETE=<shell> git-crew -- <words>`), with
/// nothing on stderr whatever happens; `None` when this run is not one.
pub fn serve() -> Option<ExitCode> {
    let shell = std::env::var_os(VAR)?;
    let args: Vec<OsString> = std::env::args_os().collect();
    if shell.is_empty() || shell == "0" || args.get(1).is_none_or(|a| a != "--") {
        return None;
    }
    // A TAB never prints a panic into the prompt.
    std::panic::set_hook(Box::new(|_| {}));
    enter_directories(&args[2..]);
    let cwd = std::env::current_dir().ok();
    let done = CompleteEnv::with_factory(super::Cli::command)
        .var(VAR)
        .bin("git-crew")
        .try_complete(args, cwd.as_deref());
    Some(match done {
        Ok(_) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    })
}

/// Applies the `-C` directories of the line being completed (its words, the program
/// first), as running it would; the word under the cursor (the last) is not one yet.
fn enter_directories(words: &[OsString]) {
    let words = &words[..words.len().saturating_sub(1)];
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut i = 1;
    while i < words.len() {
        let word = words[i].as_encoded_bytes();
        if word == b"--" {
            break;
        } else if word == b"-C" {
            if let Some(dir) = words.get(i + 1) {
                dirs.push(PathBuf::from(dir));
            }
            i += 1;
        } else if let Some(dir) = words[i].to_str().and_then(|w| w.strip_prefix("-C")) {
            dirs.push(PathBuf::from(dir));
        }
        i += 1;
    }
    for dir in dirs.iter().filter(|d| !d.as_os_str().is_empty()) {
        if std::env::set_current_dir(dir).is_err() {
            LOST.store(true, Ordering::Relaxed);
            return;
        }
    }
}

/// What a RUN argument completes: `@last`, task ids and run ids.
pub fn runs() -> ArgValueCompleter {
    ArgValueCompleter::new(|current: &OsStr| offered(current, Of::Runs))
}

/// What a task argument completes: the plans' task ids and those of past runs.
pub fn tasks() -> ArgValueCompleter {
    ArgValueCompleter::new(|current: &OsStr| offered(current, Of::Tasks))
}

/// What `ops::complete` offers in the repository a TAB is pressed in; nothing outside
/// one, or when a `-C` directory of the line is lost.
fn offered(current: &OsStr, of: Of) -> Vec<CompletionCandidate> {
    if LOST.load(Ordering::Relaxed) {
        return Vec::new();
    }
    let (Some(current), Ok(cwd)) = (current.to_str(), std::env::current_dir()) else {
        return Vec::new();
    };
    let request = Request {
        current: current.to_string(),
        of,
    };
    crate::ops::complete::complete(&crate::ops::Context::new(cwd), &request)
        .map(shell)
        .unwrap_or_default()
}

fn shell(candidates: Vec<Candidate>) -> Vec<CompletionCandidate> {
    candidates
        .into_iter()
        .map(|c| {
            let help = (!c.help.is_empty()).then(|| c.help.into());
            CompletionCandidate::new(c.value).help(help)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;
    use clap_complete::engine::ArgValueCompleter;

    /// Every RUN and task argument of every visible command has its completer.
    #[test]
    fn every_run_and_task_argument_completes() {
        let root = super::super::Cli::command();
        let mut missing = Vec::new();
        let mut found = 0;
        let mut stack: Vec<(String, &clap::Command)> = vec![("git crew".into(), &root)];
        while let Some((path, cmd)) = stack.pop() {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                let takes = matches!(id, "run" | "runs" | "task");
                if takes && !cmd.is_hide_set() {
                    found += 1;
                    if arg.get::<ArgValueCompleter>().is_none() {
                        missing.push(format!("{path} {id}"));
                    }
                }
            }
            for sub in cmd.get_subcommands() {
                stack.push((format!("{path} {}", sub.get_name()), sub));
            }
        }
        assert!(missing.is_empty(), "no completer: {missing:?}");
        assert!(found >= 14, "only {found} run and task arguments found");
    }
}
