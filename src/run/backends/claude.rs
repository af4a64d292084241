//! Anthropic `claude -p --output-format stream-json --verbose`, run in the worktree (it
//! has no cwd flag), with a permission mode that never prompts, `--model`, `--effort`.
//! The mode is `bypassPermissions` (`plan` for read-only roles): `acceptEdits` refuses
//! every edit under a `.git/` path as "sensitive", and run worktrees live in
//! `<git-common-dir>/crew/worktrees/`; the fence is the worktree, its pre-commit hook and
//! the branch audit. (As root, claude allows that mode only with `IS_SANDBOX=1`; dispatch
//! says so rather than start a worker that cannot run.) The session id is chosen up front with
//! `--session-id` and read back from the stream; the reply is the `result` line unless it
//! is an error; a resume (`--resume`, same cwd) repeats every flag, since claude does not
//! remember them.

use super::{Adapter, Attempt, Launch, jsonl};
use crate::core::flight::{Backend as BackendConfig, SandboxMode};
use crate::run::error::Result;

pub struct ClaudeAdapter;

fn flags(attempt: &Attempt) -> Vec<String> {
    let config = attempt.config;
    let record = attempt.record;
    let mut args = vec![
        "--output-format".to_string(),
        "stream-json".into(),
        "--verbose".into(),
        "--permission-mode".into(),
        match config.sandbox {
            Some(SandboxMode::ReadOnly) => "plan".into(),
            _ => "bypassPermissions".into(),
        },
    ];
    if let Some(model) = &record.model {
        args.extend(["--model".into(), model.clone()]);
    }
    if let Some(effort) = &record.effort {
        args.extend(["--effort".into(), effort.clone()]);
    }
    args.extend(config.extra_args.clone().unwrap_or_default());
    args
}

fn program(attempt: &Attempt) -> String {
    attempt
        .config
        .command
        .clone()
        .unwrap_or_else(|| "claude".into())
}

impl Adapter for ClaudeAdapter {
    fn program(&self, config: &BackendConfig) -> Option<(String, &'static str)> {
        Some((
            config.command.clone().unwrap_or_else(|| "claude".into()),
            "command",
        ))
    }

    fn launch(&self, attempt: &Attempt) -> Result<Launch> {
        let mut args = vec!["-p".to_string(), attempt.prompt.to_string()];
        args.extend(["--session-id".into(), uuid::Uuid::new_v4().to_string()]);
        args.extend(flags(attempt));
        Ok(Launch {
            program: program(attempt),
            args,
        })
    }

    fn resume(&self, attempt: &Attempt, session: &str) -> Option<Result<Launch>> {
        let mut args = vec!["-p".to_string(), attempt.prompt.to_string()];
        args.extend(["--resume".into(), session.to_string()]);
        args.extend(flags(attempt));
        Some(Ok(Launch {
            program: program(attempt),
            args,
        }))
    }

    fn session(&self, stdout: &[u8], _session_file: Option<&str>) -> Option<String> {
        jsonl(stdout).find_map(|e| e["session_id"].as_str().map(String::from))
    }

    fn reply(&self, stdout: &[u8]) -> Option<String> {
        let result = jsonl(stdout).filter(|e| e["type"] == "result").last()?;
        if result["is_error"].as_bool() == Some(true) {
            return None;
        }
        result["result"].as_str().map(String::from)
    }

    fn warnings(&self, stdout: &[u8]) -> Vec<String> {
        let Some(result) = jsonl(stdout).filter(|e| e["type"] == "result").last() else {
            return Vec::new();
        };
        let denied: Vec<String> = result["permission_denials"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|d| d["tool_name"].as_str().unwrap_or("a tool").to_string())
            .collect();
        if denied.is_empty() {
            Vec::new()
        } else {
            vec![format!(
                "claude denied {} tool call(s): {}",
                denied.len(),
                denied.join(", ")
            )]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::backends::tests::{attempt_for, stream};

    #[test]
    fn the_session_and_the_reply_come_from_the_stream() {
        let out = stream("claude-print.jsonl");
        assert_eq!(
            ClaudeAdapter.session(&out, None).as_deref(),
            Some("06b6f460-11a6-43b2-a186-fc592c01133a")
        );
        let reply = ClaudeAdapter.reply(&out).unwrap();
        assert!(reply.ends_with("## Deferred / concerns\nnone"), "{reply}");
    }

    #[test]
    fn permission_denials_are_reported() {
        let out = br#"{"type":"result","is_error":false,"result":"x","permission_denials":[{"tool_name":"Write","tool_use_id":"t"}]}"#;
        assert_eq!(
            ClaudeAdapter.warnings(out),
            ["claude denied 1 tool call(s): Write"]
        );
        assert!(
            ClaudeAdapter
                .warnings(&stream("claude-print.jsonl"))
                .is_empty()
        );
    }

    #[test]
    fn an_error_result_has_no_reply() {
        assert_eq!(ClaudeAdapter.reply(&stream("claude-error.jsonl")), None);
    }

    #[test]
    fn every_flag_is_repeated_on_resume() {
        attempt_for("claude", |attempt| {
            let fresh = ClaudeAdapter.launch(attempt).unwrap();
            assert_eq!(
                fresh.args[..2],
                ["-p".to_string(), "the prompt".to_string()]
            );
            assert_eq!(fresh.args[2], "--session-id");
            assert_eq!(fresh.args[3].len(), 36);
            let resumed = ClaudeAdapter.resume(attempt, "S1").unwrap().unwrap();
            assert_eq!(
                resumed.args.join(" "),
                "-p the prompt --resume S1 --output-format stream-json --verbose --permission-mode plan --model m1 --effort high -c x=1"
            );
        });
    }
}
