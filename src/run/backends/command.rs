//! The generic adapter: any command (aider, gemini, opencode, a shell script). Its argv
//! comes from flight (`argv`, `resume_argv`) with placeholders; stdout is the reply when
//! it wrote no manifest; a resumable worker writes its session id to `CREW_SESSION_FILE`.

use crate::run::error::{Result, bail};

use super::{Adapter, Attempt, Launch};
use crate::core::flight::Backend as BackendConfig;

pub struct CommandAdapter;

fn expand(template: &[String], attempt: &Attempt, session: Option<&str>) -> Result<Launch> {
    let record = attempt.record;
    let vars = [
        (
            "{prompt_file}",
            attempt.prompt_file.to_string_lossy().into_owned(),
        ),
        ("{prompt}", attempt.prompt.to_string()),
        ("{worktree}", record.worktree.clone()),
        ("{model}", record.model.clone().unwrap_or_default()),
        ("{effort}", record.effort.clone().unwrap_or_default()),
        ("{session}", session.unwrap_or_default().to_string()),
        ("{run}", record.run.clone()),
    ];
    let mut words: Vec<String> = template
        .iter()
        .map(|word| {
            vars.iter()
                .fold(word.clone(), |acc, (key, value)| acc.replace(key, value))
        })
        .collect();
    words.extend(attempt.config.extra_args.clone().unwrap_or_default());
    if words.is_empty() {
        bail!("the command backend has an empty argv");
    }
    let program = words.remove(0);
    Ok(Launch {
        program,
        args: words,
    })
}

impl Adapter for CommandAdapter {
    fn program(&self, config: &BackendConfig) -> Option<(String, &'static str)> {
        let first = config.argv.as_deref()?.first()?;
        // A placeholder, or a path relative to the worktree, is known only at launch.
        let known = !first.contains('{') && (first.starts_with('/') || !first.contains('/'));
        known.then(|| (first.clone(), "argv"))
    }

    fn launch(&self, attempt: &Attempt) -> Result<Launch> {
        expand(
            attempt.config.argv.as_deref().unwrap_or_default(),
            attempt,
            None,
        )
    }

    fn resume(&self, attempt: &Attempt, session: &str) -> Option<Result<Launch>> {
        let template = attempt.config.resume_argv.as_deref()?;
        Some(expand(template, attempt, Some(session)))
    }

    fn session(&self, _stdout: &[u8], session_file: Option<&str>) -> Option<String> {
        let id = session_file?.trim();
        (!id.is_empty()).then(|| id.to_string())
    }

    fn reply(&self, stdout: &[u8]) -> Option<String> {
        (!stdout.is_empty()).then(|| String::from_utf8_lossy(stdout).into_owned())
    }
}
