//! `git crew install-man-pages [DIR]`: the manual pages, generated from the clap
//! definitions themselves, so they can never disagree with `--help`.

use std::path::{Path, PathBuf};

use clap::{Args, CommandFactory};
use serde::Serialize;

use super::context::CommandContext;
use super::error::{CrewError, ErrorCode, Result};
use super::ui::Report;

/// Install the manual pages.
///
/// git-crew(1) and one page per command.
///
/// With the pages installed, `git crew --help`, `git help crew` and `man git-crew` work
/// as they do for git's own commands. The default folder is `share/man` beside the
/// folder that holds git-crew (`~/.cargo/share/man` for `cargo install`), which `man`
/// searches for every `bin` folder on PATH.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  git crew install-man-pages\n  git crew install-man-pages ~/.local/share/man"
)]
pub struct InstallManPagesArgs {
    /// The manual folder to install into (the pages go to DIR/man1).
    pub dir: Option<PathBuf>,
}

/// What `install-man-pages` prints.
#[derive(Serialize)]
struct Installed {
    dir: PathBuf,
    pages: Vec<String>,
}

/// Every manual page: `git-crew.1`, then `git-crew-<command>.1` for each command that is
/// not hidden (and `git-crew-<command>-<sub>.1` for their subcommands), as (file name,
/// roff text).
pub fn pages() -> Vec<(String, Vec<u8>)> {
    let root = super::Cli::command();
    let mut out = Vec::new();
    render(&root, "git-crew", &mut out);
    out
}

fn render(cmd: &clap::Command, name: &str, out: &mut Vec<(String, Vec<u8>)>) {
    let page = cmd
        .clone()
        .name(name.to_string())
        .bin_name(name.replace('-', " "));
    let mut text = Vec::new();
    // Writing into a Vec cannot fail.
    let _ = clap_mangen::Man::new(page).render(&mut text);
    out.push((format!("{name}.1"), text));
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        if sub.get_name() == "help" {
            continue;
        }
        render(sub, &format!("{name}-{}", sub.get_name()), out);
    }
}

/// `share/man` beside the folder that holds this binary.
fn default_dir() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    Some(exe.parent()?.parent()?.join("share").join("man"))
}

pub fn install(_ctx: &CommandContext, args: InstallManPagesArgs) -> Result<Report> {
    let dir = match args.dir.or_else(default_dir) {
        Some(dir) => dir,
        None => {
            return Err(CrewError::new(
                ErrorCode::NoManDir,
                "cannot tell where git-crew is installed",
            ));
        }
    };
    let man1 = dir.join("man1");
    std::fs::create_dir_all(&man1).map_err(|e| cannot_write(&man1, e))?;
    let mut names = Vec::new();
    for (name, text) in pages() {
        let path = man1.join(&name);
        std::fs::write(&path, text).map_err(|e| cannot_write(&path, e))?;
        names.push(name);
    }
    let human = format!(
        "installed {} manual pages in {}",
        names.len(),
        man1.display()
    );
    Ok(Report::of(&Installed { dir, pages: names }, human))
}

fn cannot_write(path: &Path, e: std::io::Error) -> CrewError {
    CrewError::new(
        ErrorCode::CannotWrite,
        format!("cannot write {}: {e}", path.display()),
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_visible_command_has_a_page_and_hidden_ones_none() {
        let pages = super::pages();
        let names: Vec<&str> = pages.iter().map(|(n, _)| n.as_str()).collect();
        for page in [
            "git-crew.1",
            "git-crew-dispatch.1",
            "git-crew-retry.1",
            "git-crew-integrate.1",
            "git-crew-prune.1",
            "git-crew-wave-dispatch.1",
            "git-crew-install-man-pages.1",
        ] {
            assert!(names.contains(&page), "{page} missing from {names:?}");
        }
        assert!(
            !names
                .iter()
                .any(|n| n.contains("supervise") || n.contains("hook"))
        );
        let dispatch = &pages
            .iter()
            .find(|(n, _)| n == "git-crew-dispatch.1")
            .unwrap()
            .1;
        let text = String::from_utf8_lossy(dispatch);
        assert!(text.contains("git\\-crew\\-dispatch"), "{text}");
        assert!(text.contains("\\-\\-scope"), "{text}");
    }
}
