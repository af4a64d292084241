//! The verify command (SPEC §5.6): run in the worktree with a fresh, empty
//! `$CREW_VERIFIER_DIR`. Its exit code decides; a reward in `reward.json` or `reward.txt`
//! there can only lower a pass (`core::verify::verdict`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::run::error::{Context, Result};

use super::process::{Ended, RunError, Spec, start};
use crate::core::record::{Outcome, Verify};

/// How verification ended.
pub enum Verified {
    Done(Verify),
    /// The verifier ran out of time: a timeout, never a failed solution.
    Timeout,
    /// The run's `[worktree] setup` did not ready the throwaway checkout (why): nothing
    /// was verified, and it says nothing of the solution.
    SetupFailed(String),
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
) -> Result<Verified, RunError> {
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
        stdout_file: crate::core::layout::verifier_output(verifier_dir, "out"),
        stderr_file: crate::core::layout::verifier_output(verifier_dir, "err"),
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
    let watched = start(&spec, None)
        .map_err(RunError::from)
        .and_then(|running| running.watch(deadline, None, &mut |_| false));
    crate::sys::process::default_interrupts();
    if crate::sys::process::interrupted() {
        return Err(super::process::Interrupted.into());
    }
    let code = match watched? {
        Ended::Exited(code) => code,
        Ended::Deadline | Ended::Idle | Ended::Stopped => return Ok(Verified::Timeout),
    };
    // The exit code decides first; the reward file (written by code the worker wrote)
    // can only lower a pass.
    Ok(Verified::Done(crate::core::verify::verdict(
        command,
        code,
        read_reward(verifier_dir),
    )))
}

/// After a verify in a run's own worktree (clean when it started): what it left there
/// untracked — a report, a cache no default names — is added to the run's excludes file,
/// so that it never makes the worktree dirty for `verify`, cleanup or prune. The
/// worktree's administration is put back first (the verify ran the worker's code).
/// Returns what was added.
pub fn exclude_leftovers(
    common_dir: &Path,
    worktree: &Path,
    identity: &crate::core::scope::RunIdentity,
    run_dir: &Path,
) -> Result<Vec<String>> {
    let tree = crate::git::worktree::RunTree::restore(common_dir, worktree, identity)?;
    let left = tree.untracked()?;
    let lines = crate::core::worktree_files::verify_leftovers(&left);
    if !lines.is_empty() {
        let path = crate::core::layout::run_excludes(run_dir);
        let mut text = std::fs::read_to_string(&path).unwrap_or_default();
        text.push_str(&lines);
        crate::sys::fs::write_atomic(&path, &text, 0o644)?;
    }
    Ok(left)
}

#[allow(clippy::too_many_arguments)]
/// Runs `command` on `commit` checked out clean in a throwaway worktree at `wt` (no
/// hooks run there), readied first by the run's `[worktree] setup` when it has one,
/// removed again afterwards.
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
    setup: Option<&crate::core::record::Setup>,
) -> Result<Verified, RunError> {
    if wt.exists() {
        crate::git::worktree::force_remove(repo_dir, wt);
        let _ = std::fs::remove_dir_all(wt);
    }
    crate::git::worktree::add_detached(repo_dir, wt, &commit.to_string())
        .context("cannot check out the commit to verify it")?;
    // The lead's ignored files the verify may need (`.env`), copied as at dispatch: never
    // through a symlink the commit holds, nor over anything it holds. What was passed
    // over is the dispatch's to say.
    let _ = super::worktree_files::copy_includes(repo_dir, wt);
    // Whatever happens from here, the throwaway checkout goes again.
    let result = (|| -> Result<Verified, RunError> {
        let common_dir = crate::git::repo::open(repo_dir)?.common_dir().to_path_buf();
        let fence = fenced
            .map(|base| super::fence::for_checkout(&common_dir, wt, verifier_dir, base))
            .transpose()?;
        if let Some(setup) = setup {
            let mut env = vec![
                ("CREW_RUN".to_string(), run_id.to_string()),
                (
                    "CREW_WORKTREE".to_string(),
                    wt.to_string_lossy().into_owned(),
                ),
            ];
            if let Some(main) = super::fence::main_worktree(&common_dir) {
                env.push((
                    "CREW_MAIN_WORKTREE".to_string(),
                    main.to_string_lossy().into_owned(),
                ));
            }
            let output = (
                crate::core::layout::verifier_output(verifier_dir, "setup-out"),
                crate::core::layout::verifier_output(verifier_dir, "setup-err"),
            );
            let end = super::setup::run(
                &super::setup::Setup {
                    run: run_id,
                    task: "-",
                    command: &setup.command,
                    worktree: wt,
                    output: output.clone(),
                    transcript,
                    env,
                    fence: fence.clone(),
                    timeout: Duration::from_secs(setup.timeout_s),
                    max_output: super::output::DEFAULT_CAP,
                },
                &mut || false,
            )?;
            let _ = std::fs::remove_file(&output.0);
            let _ = std::fs::remove_file(&output.1);
            if let Some(problem) = crate::core::toolchain::setup_problem(&setup.command, &end, &[])
            {
                return Ok(Verified::SetupFailed(problem));
            }
        }
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
/// that is not a finite number (`NaN`, `inf`, `1e999`), and a file that cannot be taken
/// (over its cap, no regular file), is an error naming it.
fn read_reward(dir: &Path) -> Result<Option<f64>, String> {
    use crate::sys::fs::{Links, Unread, read_capped};
    let finite = |reward: f64, from: &str, raw: &str| {
        if reward.is_finite() {
            Ok(Some(reward))
        } else {
            Err(format!(
                "the verifier's {from} holds a reward that is not a finite number: {raw}"
            ))
        }
    };
    // Written by code the worker wrote: read within a cap, a regular file only.
    let read = |name: &str| match read_capped(
        &dir.join(name),
        crate::core::layout::VERIFIER_FILE_CAP,
        Links::Refuse,
    ) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(Unread::Missing) => Ok(None),
        Err(why) => Err(format!("the verifier's {name} {why}")),
    };
    if let Some(bytes) = read("reward.json")? {
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
    match read("reward.txt")? {
        Some(bytes) => {
            let raw = String::from_utf8_lossy(&bytes)
                .trim()
                .chars()
                .take(200)
                .collect::<String>();
            match raw.parse::<f64>() {
                Ok(r) => finite(r, "reward.txt", &raw),
                Err(_) => Err(format!("the verifier's reward.txt is not a number: {raw}")),
            }
        }
        None => Ok(None),
    }
}

/// Why `git crew verify` cannot verify a run; nothing was run.
#[derive(Debug)]
pub enum Refusal {
    NoSeal(String),
    /// The record disagrees with the seal on these fields.
    Tampered {
        run: String,
        differs: Vec<String>,
    },
    BranchGone {
        run: String,
        branch: String,
    },
    /// The worktree's administration cannot be put back.
    Administration {
        run: String,
        why: String,
    },
    /// git cannot read the worktree.
    Unreadable {
        run: String,
        why: String,
    },
    /// The worktree holds uncommitted changes: they are not the commit.
    Dirty {
        run: String,
        worktree: PathBuf,
    },
}

/// `git crew verify`: runs `command` again on the commit recorded for a finished run —
/// in its worktree when it is there, clean, at that commit, else in a throwaway checkout
/// — and records the verdict (sealed first). Returns the verdict and the updated record.
pub fn again(
    repo: &crate::git::Repository,
    repo_dir: &Path,
    store: &crate::state::runs::RunStore,
    mut record: crate::core::record::RunRecord,
    command: &str,
) -> Result<Result<(Verified, crate::core::record::RunRecord), Refusal>, RunError> {
    let id = record.run.clone();
    // The facts come from the seal: a record changed after dispatch is not verified.
    let Some(sealed) = crate::git::seal::read(repo, &id)? else {
        return Ok(Err(Refusal::NoSeal(id)));
    };
    let differs = sealed.differences(&record);
    if !differs.is_empty() {
        return Ok(Err(Refusal::Tampered {
            run: id,
            differs: differs.iter().map(ToString::to_string).collect(),
        }));
    }
    // What is verified is the commit that is recorded: the branch's tip, checked out
    // clean — in the worktree when it is there at that commit, else in a throwaway one.
    let Some(tip) = crate::git::merge::branch_tip(repo, &sealed.branch)? else {
        return Ok(Err(Refusal::BranchGone {
            run: id,
            branch: sealed.branch.clone(),
        }));
    };
    let worktree = PathBuf::from(&sealed.worktree);
    let in_worktree = if worktree.exists() {
        // The administration is put back as dispatch wrote it before git runs there.
        let identity = sealed.identity();
        let tree =
            match crate::git::worktree::RunTree::restore(repo.common_dir(), &worktree, &identity) {
                Ok(tree) => tree,
                Err(e) => {
                    return Ok(Err(Refusal::Administration {
                        run: id,
                        why: crate::fault::chain(&e),
                    }));
                }
            };
        match tree.is_dirty() {
            Ok(false) => {}
            Ok(true) => return Ok(Err(Refusal::Dirty { run: id, worktree })),
            Err(e) => {
                return Ok(Err(Refusal::Unreadable {
                    run: id,
                    why: crate::fault::chain(&e),
                }));
            }
        }
        tree.head(repo) == Some(tip)
    } else {
        false
    };
    let dir = store.run_dir(&record.run);
    let transcript = record
        .transcript
        .clone()
        .map_or_else(|| crate::core::layout::verify_log(&dir), PathBuf::from);
    let deadline = Instant::now() + Duration::from_secs(record.budget_s.max(60));
    let verifier_dir = crate::core::layout::verifier_again(&dir);
    let fence = super::fence::base_for(&record, &dir)?;
    // What the verify command starts comes back to this process and goes when it ends;
    // Ctrl-C stops it (and removes a throwaway checkout) before this exits.
    let _subreaper = crate::sys::process::subreaper();
    let verdict = if in_worktree {
        let common = repo.common_dir().to_path_buf();
        let fence = fence
            .map(|base| super::fence::for_checkout(&common, &worktree, &verifier_dir, base))
            .transpose()?;
        let verdict = run(
            &record.run,
            command,
            &worktree,
            &verifier_dir,
            &transcript,
            deadline,
            fence.as_ref(),
        );
        // Best effort: a worktree left dirty is named by the next verify.
        let _ = exclude_leftovers(&common, &worktree, &sealed.identity(), &dir);
        verdict
    } else {
        in_throwaway(
            &record.run,
            repo_dir,
            &dir.join(crate::core::layout::VERIFY_CHECKOUT),
            tip,
            command,
            &verifier_dir,
            &transcript,
            deadline,
            fence,
            record.setup.as_ref(),
        )
    }?;
    match &verdict {
        Verified::Done(result) => {
            let earlier_claims = record.find_discrepancies();
            record.verify_command = Some(command.to_string());
            record.verify = Some(result.clone());
            record.verified_tip = Some(tip.to_string());
            let was = record.outcome;
            if matches!(was, Some(Outcome::Pass) | Some(Outcome::Fail)) {
                let outcome = if result.passed {
                    Outcome::Pass
                } else {
                    Outcome::Fail
                };
                record.outcome = Some(outcome);
                record.phase = outcome.final_phase();
            }
            record.decision = Some(format!(
                "verify run again by git crew verify: {} ({})",
                if result.passed { "passed" } else { "failed" },
                result.grounds()
            ));
            // The claims are compared again; what else the run's filing named (the
            // streams' warnings, its strays) stays.
            let others: Vec<String> = record
                .discrepancies
                .iter()
                .filter(|d| !earlier_claims.contains(d))
                .cloned()
                .collect();
            record.discrepancies = record.find_discrepancies();
            record.discrepancies.extend(others);
            // The new verdict (and a verify command the lead gave) is sealed first.
            let mut resealed = sealed.clone();
            resealed.verify_command = record.verify_command.clone();
            crate::git::seal::write(repo, &resealed.with_verdict(&record))?;
            store.update_record(&record)?;
        }
        Verified::Timeout | Verified::SetupFailed(_) => {}
    }
    Ok(Ok((verdict, record)))
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
        // A file the verifier made something else, or too large, is named.
        std::fs::remove_file(dir.path().join("reward.json")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", dir.path().join("reward.json")).unwrap();
        let err = read_reward(dir.path()).unwrap_err();
        assert!(err.contains("reward.json is a symbolic link"), "{err}");
        std::fs::remove_file(dir.path().join("reward.json")).unwrap();
        std::fs::write(dir.path().join("reward.txt"), "1".repeat(70_000)).unwrap();
        let err = read_reward(dir.path()).unwrap_err();
        assert!(
            err.contains("reward.txt holds more than 65536 bytes"),
            "{err}"
        );
    }
}
