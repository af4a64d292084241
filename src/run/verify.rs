//! The verify command (SPEC §5.6): run in the worktree with a fresh, empty
//! `$CREW_VERIFIER_DIR`; reward from `reward.json`'s `reward` or `reward.txt` there, else
//! 1.0 for exit 0 and 0.0 otherwise; pass is reward >= 1.0.

use std::path::Path;
use std::time::Instant;

use anyhow::Context;

use super::process::{Ended, Spec, start};
use crate::core::record::Verify;

/// How verification ended.
pub enum Verified {
    Done(Verify),
    /// The verifier ran out of time: a timeout, never a failed solution.
    Timeout,
}

/// Runs `command` of run `run_id` with `sh -c` in `worktree`; its output is archived to
/// `transcript`. Its processes carry `CREW_RUN`, so a reaper finds them even when the
/// process that started them died.
pub fn run(
    run_id: &str,
    command: &str,
    worktree: &Path,
    verifier_dir: &Path,
    transcript: &Path,
    deadline: Instant,
    fence: Option<&crate::sys::fence::Fence>,
) -> anyhow::Result<Verified> {
    if verifier_dir.exists() {
        std::fs::remove_dir_all(verifier_dir).context("cannot clear the verifier folder")?;
    }
    std::fs::create_dir_all(verifier_dir).context("cannot create the verifier folder")?;
    let spec = Spec {
        program: "sh".into(),
        args: vec!["-c".into(), command.into()],
        cwd: worktree.to_path_buf(),
        env: vec![
            (
                "CREW_VERIFIER_DIR".into(),
                verifier_dir.to_string_lossy().into_owned(),
            ),
            ("CREW_RUN".into(), run_id.to_string()),
        ],
        transcript: transcript.to_path_buf(),
        stdout_file: verifier_dir.with_extension("out"),
        stderr_file: verifier_dir.with_extension("err"),
        max_output: super::output::DEFAULT_CAP,
        fence: fence.map(|f| {
            let mut f = f.clone();
            f.add(verifier_dir);
            f
        }),
    };
    // While the verify runs, Ctrl-C stops it (and what it started) and lets the caller
    // clean up; before and after, it interrupts as usual.
    crate::sys::process::catch_interrupts();
    let watched = start(&spec).and_then(|running| running.watch(deadline, None, &mut |_| {}));
    crate::sys::process::default_interrupts();
    if crate::sys::process::interrupted() {
        anyhow::bail!(super::process::Interrupted);
    }
    let code = match watched? {
        Ended::Exited(code) => code,
        Ended::Deadline | Ended::Idle => return Ok(Verified::Timeout),
    };
    let by_exit = if code == Some(0) { 1.0 } else { 0.0 };
    Ok(Verified::Done(match read_reward(verifier_dir) {
        Ok(reward) => {
            let reward = reward.unwrap_or(by_exit);
            Verify {
                command: command.to_string(),
                reward,
                passed: reward >= 1.0,
                problem: None,
            }
        }
        // A reward that is no number fails the verify, named; it is never stored.
        Err(problem) => Verify {
            command: command.to_string(),
            reward: 0.0,
            passed: false,
            problem: Some(problem),
        },
    }))
}

#[allow(clippy::too_many_arguments)]
/// Runs `command` on `commit` checked out clean in a throwaway worktree at `wt` (no
/// hooks run there), removed again afterwards.
pub fn in_throwaway(
    run_id: &str,
    repo_dir: &Path,
    wt: &Path,
    commit: crate::git::ObjectId,
    command: &str,
    verifier_dir: &Path,
    transcript: &Path,
    deadline: Instant,
    fenced: Option<crate::sys::fence::Fence>,
) -> anyhow::Result<Verified> {
    if wt.exists() {
        crate::git::worktree::force_remove(repo_dir, wt);
        let _ = std::fs::remove_dir_all(wt);
    }
    crate::git::worktree::add_detached(repo_dir, wt, &commit.to_string())
        .context("cannot check out the commit to verify it")?;
    let _ = crate::run::dispatch::copy_worktree_includes(repo_dir, wt);
    // Whatever happens from here, the throwaway checkout goes again.
    let result = (|| {
        let common_dir = crate::git::repo::open(repo_dir)?.common_dir().to_path_buf();
        let fence = fenced
            .map(|base| super::fence::for_checkout(&common_dir, wt, verifier_dir, base))
            .transpose()?;
        run(
            run_id,
            command,
            wt,
            verifier_dir,
            transcript,
            deadline,
            fence.as_ref(),
        )
    })();
    crate::git::worktree::force_remove(repo_dir, wt);
    result
}

/// The verifier's reward: `reward.json`'s `reward`, else `reward.txt`, else none. One
/// that is not a finite number (`NaN`, `inf`, `1e999`) is an error naming it.
fn read_reward(dir: &Path) -> Result<Option<f64>, String> {
    let finite = |reward: f64, from: &str, raw: &str| {
        if reward.is_finite() {
            Ok(Some(reward))
        } else {
            Err(format!(
                "the verifier's {from} holds a reward that is not a finite number: {raw}"
            ))
        }
    };
    if let Ok(bytes) = std::fs::read(dir.join("reward.json")) {
        let raw = String::from_utf8_lossy(&bytes)
            .trim()
            .chars()
            .take(200)
            .collect::<String>();
        match serde_json::from_slice::<serde_json::Value>(&bytes) {
            Ok(value) => {
                if let Some(reward) = value.get("reward") {
                    return match reward.as_f64() {
                        Some(r) => finite(r, "reward.json", &raw),
                        None => Err(format!(
                            "the verifier's reward.json holds a reward that is not a number: {reward}"
                        )),
                    };
                }
            }
            // serde_json refuses `1e999` and `NaN` outright.
            Err(e) => {
                return Err(format!(
                    "the verifier's reward.json cannot be read ({e}): {raw}"
                ));
            }
        }
    }
    match std::fs::read_to_string(dir.join("reward.txt")) {
        Ok(text) => {
            let raw = text.trim().chars().take(200).collect::<String>();
            match raw.parse::<f64>() {
                Ok(r) => finite(r, "reward.txt", &raw),
                Err(_) => Err(format!("the verifier's reward.txt is not a number: {raw}")),
            }
        }
        Err(_) => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reward_that_is_no_finite_number_is_named_and_never_taken() {
        let dir = tempfile::tempdir().unwrap();
        for text in ["inf", "NaN", "1e999", "-inf", "lots"] {
            std::fs::write(dir.path().join("reward.txt"), text).unwrap();
            let err = read_reward(dir.path()).unwrap_err();
            assert!(err.contains(text), "{err}");
        }
        std::fs::write(dir.path().join("reward.txt"), "0.5\n").unwrap();
        assert_eq!(read_reward(dir.path()), Ok(Some(0.5)));
        for json in [
            r#"{"reward": 1e999}"#,
            r#"{"reward": NaN}"#,
            r#"{"reward": "x"}"#,
        ] {
            std::fs::write(dir.path().join("reward.json"), json).unwrap();
            assert!(read_reward(dir.path()).is_err(), "{json}");
        }
        std::fs::write(dir.path().join("reward.json"), r#"{"reward": 1}"#).unwrap();
        assert_eq!(read_reward(dir.path()), Ok(Some(1.0)));
    }
}
