//! What the console's keys do, through the operations themselves (`crate::ops`), in
//! this process. `advise`, `integrate` and `abandon` run on a thread of their own, and
//! what came of each is summed up on the status line; `show` and `diff` print on the
//! terminal, which the console hands over to them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::Sender;

use crate::cli::context::CommandContext;
use crate::cli::error::CrewError;
use crate::cli::ui::{self, Format, Report};
use crate::ops::Context;
use crate::view::console::Action;

/// The verb and the run of `action` (none for quitting).
fn named(action: &Action) -> Option<(&'static str, &str)> {
    Some(match action {
        Action::Quit => return None,
        Action::Show(run) => ("show", run),
        Action::Diff(run) => ("diff", run),
        Action::Advise { run, .. } => ("advise", run),
        Action::Integrate(run) => ("integrate", run),
        Action::Abandon(run) => ("abandon", run),
    })
}

/// Starts `action` on a thread of its own; its summary comes back on `done`. Returns
/// what the status line says meanwhile.
pub fn start(dir: &Path, action: &Action, done: Sender<String>) -> String {
    let Some((verb, run)) = named(action) else {
        return String::new();
    };
    let status = format!("{verb} {run}…");
    let (dir, action) = (dir.to_path_buf(), action.clone());
    std::thread::spawn(move || {
        let outcome = act(dir, &action);
        let line = match outcome {
            Ok(report) => summary(verb, Some(0), &report.human, ""),
            Err(err) => summary(
                verb,
                Some(i32::from(err.exit_code())),
                "",
                &err.render_human(""),
            ),
        };
        let _ = done.send(line);
    });
    status
}

/// Carries out one of the acting keys.
fn act(dir: PathBuf, action: &Action) -> Result<Report, CrewError> {
    let ctx = Context::new(dir);
    match action {
        Action::Advise { run, text } => {
            let request = crate::ops::advise::Request {
                run: run.clone(),
                text: text.clone(),
            };
            crate::ops::advise::advise(&ctx, &request).map(|a| crate::cli::advise::report(&a))
        }
        Action::Integrate(run) => {
            let request = crate::ops::integrate::Request {
                run: run.clone(),
                into: None,
                squash: false,
                force_unverified: false,
                invocation: Default::default(),
                dry_run: false,
                remote: None,
            };
            crate::ops::integrate::integrate(&ctx, &request, &|_| {})
                .map(|done| crate::cli::integrate::report(&done))
        }
        Action::Abandon(run) => {
            let request = crate::ops::abandon::Request {
                run: run.clone(),
                remote: None,
            };
            crate::ops::abandon::abandon(&ctx, &request).map(|a| crate::cli::abandon::report(&a))
        }
        Action::Quit | Action::Show(_) | Action::Diff(_) => {
            Ok(Report::new(serde_json::json!({}), String::new()))
        }
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

/// Prints `show` or `diff` on the terminal (the console has handed it over) and asks
/// for a key (which the console waits for, so what it printed can be read). Returns what
/// the status line says.
pub fn on_terminal(dir: &Path, action: &Action) -> String {
    let Some((verb, run)) = named(action) else {
        return String::new();
    };
    let ctx = CommandContext {
        ops: Context::new(dir.to_path_buf()),
        format: Format::Human,
        format_asked: true,
    };
    let result = match action {
        Action::Show(run) => {
            crate::cli::show::run(&ctx, crate::cli::show::ShowArgs { run: run.clone() })
        }
        Action::Diff(run) => crate::cli::diff::run(
            &ctx,
            crate::cli::diff::DiffArgs {
                run: run.clone(),
                stat: false,
                name_status: false,
                patch: false,
            },
        ),
        _ => return String::new(),
    };
    let code = match result {
        Ok(report) => ui::emit(Format::Human, report),
        Err(err) => ui::emit_error(Format::Human, &err),
    };
    let mut out = std::io::stdout();
    let _ = writeln!(out, "\n[press any key to return to git crew watch]");
    let _ = out.flush();
    match code {
        0 => String::new(),
        code => format!("{verb} {run} ended with exit {code}"),
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
