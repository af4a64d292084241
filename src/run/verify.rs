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
    fence: Option<&super::fence::Fence>,
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
        fence: fence.map(|f| {
            let mut f = f.clone();
            f.add(verifier_dir);
            f
        }),
    };
    let code = match start(&spec)?.watch(deadline, None, &mut |_| {})? {
        Ended::Exited(code) => code,
        Ended::Deadline | Ended::Idle => return Ok(Verified::Timeout),
    };
    let reward = read_reward(verifier_dir).unwrap_or(if code == Some(0) { 1.0 } else { 0.0 });
    Ok(Verified::Done(Verify {
        command: command.to_string(),
        reward,
        passed: reward >= 1.0,
    }))
}

#[allow(clippy::too_many_arguments)]
/// Runs `command` on `commit` checked out clean in a throwaway worktree at `wt` (no
/// hooks run there), removed again afterwards.
pub fn in_throwaway(
    run_id: &str,
    repo_dir: &Path,
    wt: &Path,
    commit: gix::ObjectId,
    command: &str,
    verifier_dir: &Path,
    transcript: &Path,
    deadline: Instant,
    fenced: Option<super::fence::Fence>,
) -> anyhow::Result<Verified> {
    let runner = crate::git::run::GitRunner::new(repo_dir);
    let path = wt.to_string_lossy();
    if wt.exists() {
        let _ = runner.raw(&["worktree", "remove", "--force", &path]);
        let _ = std::fs::remove_dir_all(wt);
    }
    runner
        .output(&[
            "-c",
            "core.hooksPath=/dev/null",
            "worktree",
            "add",
            "--detach",
            "--quiet",
            &path,
            &commit.to_string(),
        ])
        .context("cannot check out the commit to verify it")?;
    let _ = crate::run::dispatch::copy_worktree_includes(repo_dir, wt);
    // Whatever happens from here, the throwaway checkout goes again.
    let result = (|| {
        let common_dir = gix::open(repo_dir)?.common_dir().to_path_buf();
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
    let _ = runner.raw(&["worktree", "remove", "--force", &path]);
    result
}

fn read_reward(dir: &Path) -> Option<f64> {
    if let Ok(bytes) = std::fs::read(dir.join("reward.json"))
        && let Ok(value) = serde_json::from_slice::<serde_json::Value>(&bytes)
        && let Some(reward) = value.get("reward").and_then(serde_json::Value::as_f64)
    {
        return Some(reward);
    }
    std::fs::read_to_string(dir.join("reward.txt"))
        .ok()
        .and_then(|t| t.trim().parse().ok())
}
