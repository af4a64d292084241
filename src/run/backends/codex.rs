//! OpenAI `codex exec --json`: prompt as the last argument with stdin closed, cwd via
//! `-C`, model via `-m`, effort via `-c model_reasoning_effort=`, sandbox per role
//! (`worktree-full` → `workspace-write`, `read-only` → `read-only`); `exec` never asks for
//! approval. The session is the `thread_id` of `thread.started`; the reply is the last
//! `agent_message`; a resume repeats every flag before the word `resume` (the `resume`
//! subcommand has no `-C` or `--sandbox` of its own).

use super::{Adapter, Attempt, Launch, jsonl};
use crate::core::flight::{Backend as BackendConfig, SandboxMode};
use crate::run::error::Result;

pub struct CodexAdapter;

fn flags(attempt: &Attempt) -> Vec<String> {
    let config = attempt.config;
    let record = attempt.record;
    let mut args = vec![
        "exec".to_string(),
        "--json".into(),
        "-C".into(),
        record.worktree.clone(),
        "--sandbox".into(),
        match config.sandbox {
            Some(SandboxMode::ReadOnly) => "read-only".into(),
            // Inside git-crew's kernel fence, codex's own sandbox would only get in the
            // way: its workspace-write mode cannot write the worktree's git dir (outside
            // the cwd), so the worker could not commit. Without the fence it is the best
            // there is.
            _ if record
                .fence
                .as_deref()
                .is_some_and(|f| f.starts_with("landlock")) =>
            {
                "danger-full-access".into()
            }
            _ => "workspace-write".into(),
        },
    ];
    if let Some(model) = &record.model {
        args.extend(["-m".into(), model.clone()]);
    }
    if let Some(effort) = &record.effort {
        args.extend(["-c".into(), format!("model_reasoning_effort={effort}")]);
    }
    args.extend(config.extra_args.clone().unwrap_or_default());
    args
}

fn program(attempt: &Attempt) -> String {
    attempt
        .config
        .command
        .clone()
        .unwrap_or_else(|| "codex".into())
}

impl Adapter for CodexAdapter {
    fn program(&self, config: &BackendConfig) -> Option<(String, &'static str)> {
        Some((
            config.command.clone().unwrap_or_else(|| "codex".into()),
            "command",
        ))
    }

    fn launch(&self, attempt: &Attempt) -> Result<Launch> {
        let mut args = flags(attempt);
        args.push(attempt.prompt.to_string());
        Ok(Launch {
            program: program(attempt),
            args,
        })
    }

    fn resume(&self, attempt: &Attempt, session: &str) -> Option<Result<Launch>> {
        let mut args = flags(attempt);
        args.extend([
            "resume".into(),
            session.to_string(),
            attempt.prompt.to_string(),
        ]);
        Some(Ok(Launch {
            program: program(attempt),
            args,
        }))
    }

    fn session(&self, stdout: &[u8], _session_file: Option<&str>) -> Option<String> {
        jsonl(stdout)
            .find(|e| e["type"] == "thread.started")
            .and_then(|e| e["thread_id"].as_str().map(String::from))
    }

    fn reply(&self, stdout: &[u8]) -> Option<String> {
        let mut reply = None;
        for event in jsonl(stdout) {
            if event["type"] == "turn.failed" {
                return None;
            }
            if event["type"] == "item.completed" && event["item"]["type"] == "agent_message" {
                reply = event["item"]["text"].as_str().map(String::from);
            }
        }
        reply
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::backends::tests::{attempt_for, stream};

    #[test]
    fn the_session_and_the_reply_come_from_the_stream() {
        let out = stream("codex-exec.jsonl");
        assert_eq!(
            CodexAdapter.session(&out, None).as_deref(),
            Some("01a23623-cd5a-7f72-ba34-0ed40f3b336c")
        );
        let reply = CodexAdapter.reply(&out).unwrap();
        assert!(reply.ends_with("## Deferred / concerns\nnone"), "{reply}");
        let resumed = stream("codex-resume.jsonl");
        assert_eq!(
            CodexAdapter.session(&resumed, None).as_deref(),
            Some("01a23623-cd5a-7f72-ba34-0ed40f3b336c")
        );
    }

    #[test]
    fn a_failed_turn_has_no_reply() {
        assert_eq!(CodexAdapter.reply(&stream("codex-error.jsonl")), None);
    }

    #[test]
    fn resume_repeats_the_flags_before_the_word_resume() {
        attempt_for("codex", |attempt| {
            let launch = CodexAdapter.resume(attempt, "T1").unwrap().unwrap();
            assert_eq!(launch.program, "codex");
            let args = launch.args.join(" ");
            assert!(args.starts_with("exec --json -C /w --sandbox read-only -m m1 -c model_reasoning_effort=high -c x=1 resume T1 "), "{args}");
            let fresh = CodexAdapter.launch(attempt).unwrap();
            assert_eq!(fresh.args.last().map(String::as_str), Some("the prompt"));
        });
    }
}
