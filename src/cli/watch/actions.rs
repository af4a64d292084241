//! What the console's keys do, through the commands themselves: the current executable
//! is started with `-C <dir> --human`. `advise`, `integrate` and `abandon` run in the
//! background, their output kept in files (so that quitting the console never leaves one
//! writing to a closed pipe) and summed up on the status line; `show` and `diff` run on
//! the terminal, which the console hands over to them.

use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc::Sender;

use crate::view::console::Action;

/// The command line of `action` (none for quitting).
fn args(action: &Action) -> Option<Vec<&str>> {
    Some(match action {
        Action::Quit => return None,
        Action::Show(run) => vec!["show", run],
        Action::Diff(run) => vec!["diff", run],
        Action::Advise { run, text } => vec!["advise", run, "--text", text],
        Action::Integrate(run) => vec!["integrate", run],
        Action::Abandon(run) => vec!["abandon", run],
    })
}

fn command(dir: &Path, args: &[&str]) -> Command {
    let exe = std::env::current_exe().unwrap_or_else(|_| PathBuf::from("git-crew"));
    let mut command = Command::new(exe);
    command.arg("-C").arg(dir).arg("--human").args(args);
    command
}

/// Starts `action` in the background; its summary comes back on `done`. Returns what the
/// status line says meanwhile.
pub fn start(dir: &Path, action: &Action, done: Sender<String>) -> String {
    let Some(args) = args(action) else {
        return String::new();
    };
    let mut command = command(dir, &args);
    let verb = args[0].to_string();
    let status = format!("{verb} {}…", args[1]);
    std::thread::spawn(move || {
        let _ = done.send(captured(&mut command, &verb));
    });
    status
}

fn captured(command: &mut Command, verb: &str) -> String {
    let files = (tempfile::tempfile(), tempfile::tempfile());
    let (Ok(mut out), Ok(mut err)) = files else {
        return format!("error: {verb}: cannot make a file for its output");
    };
    let status = match (out.try_clone(), err.try_clone()) {
        (Ok(o), Ok(e)) => command.stdin(Stdio::null()).stdout(o).stderr(e).status(),
        _ => return format!("error: {verb}: cannot make a file for its output"),
    };
    let read = |file: &mut std::fs::File| {
        let mut text = String::new();
        let _ = file.rewind();
        let _ = file.read_to_string(&mut text);
        text
    };
    match status {
        Ok(status) => summary(verb, status.code(), &read(&mut out), &read(&mut err)),
        Err(e) => format!("error: cannot run {verb}: {e}"),
    }
}

/// One line for the status line from what a command printed: its error and first hint,
/// else the first line of its output.
pub fn summary(verb: &str, code: Option<i32>, stdout: &str, stderr: &str) -> String {
    let lines = |prefix: &str| {
        stderr
            .lines()
            .find_map(|l| l.strip_prefix(prefix))
            .map(str::trim)
    };
    if let Some(error) = lines("error:") {
        return match lines("hint:") {
            Some(hint) => format!("error: {error} ({hint})"),
            None => format!("error: {error}"),
        };
    }
    let first = stdout.lines().map(str::trim).find(|l| !l.is_empty());
    match (first, code) {
        (Some(line), _) => line.to_string(),
        (None, Some(0)) => format!("{verb} done"),
        (None, Some(code)) => format!("error: {verb} ended with exit {code}"),
        (None, None) => format!("error: {verb} was killed by a signal"),
    }
}

/// Runs `show` or `diff` on the terminal (the console has handed it over) and asks for a
/// key (which the console waits for, so what it printed can be read). Returns what the
/// status line says.
pub fn on_terminal(dir: &Path, action: &Action) -> String {
    let Some(args) = args(action) else {
        return String::new();
    };
    let status = command(dir, &args).status();
    let mut out = std::io::stdout();
    let _ = writeln!(out, "\n[press any key to return to git crew watch]");
    let _ = out.flush();
    match status {
        Ok(s) if s.success() => String::new(),
        Ok(s) => format!(
            "{} {} ended with exit {}",
            args[0],
            args[1],
            s.code().unwrap_or(-1)
        ),
        Err(e) => format!("error: cannot run {}: {e}", args[0]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_line_sums_up_an_action() {
        assert_eq!(
            summary("advise", Some(0), "advised r1; its session S resumes\n", ""),
            "advised r1; its session S resumes"
        );
        assert_eq!(
            summary(
                "integrate",
                Some(4),
                "",
                "warning: x\nerror: run r1 is working\nhint: wait for it\nhint: other\n"
            ),
            "error: run r1 is working (wait for it)"
        );
        assert_eq!(summary("abandon", Some(0), "", ""), "abandon done");
        assert_eq!(
            summary("abandon", Some(70), "", "boom"),
            "error: abandon ended with exit 70"
        );
        assert_eq!(
            summary("abandon", None, "", ""),
            "error: abandon was killed by a signal"
        );
    }
}
