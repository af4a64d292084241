//! The names of git-crew's files: a run's folder (`<git-common-dir>/crew/runs/<run>/`),
//! the state folder's shared files (run hooks, human reports, the ledger cache) and a
//! plan's file. `RunStore` (`state::runs`) owns the rest of the state folder's layout
//! (live pointers, records, worktrees, transcripts, locks).

use std::path::{Path, PathBuf};

/// A plan's file, relative to the work tree (`.crew/plans/<plan>.toml`).
pub fn plan_file(plan: &str) -> String {
    format!(".crew/plans/{plan}.toml")
}
/// The worker prompt dispatch renders.
pub fn prompt(dir: &Path) -> PathBuf {
    dir.join("prompt.md")
}
/// The task's own prompt (without the worker preamble), kept to render the worker
/// prompt again when a queued run starts.
pub fn task_prompt(dir: &Path) -> PathBuf {
    dir.join("task-prompt.md")
}
/// Where `git crew verify` archives a verify's output when the run keeps no transcript.
pub fn verify_log(dir: &Path) -> PathBuf {
    dir.join("verify.log")
}
/// Where integrate archives the verify of a merged tree when the run keeps no transcript.
pub fn verify_merged_log(dir: &Path) -> PathBuf {
    dir.join("verify-merged.log")
}
/// A verify's stdout and stderr while it runs, beside its `$CREW_VERIFIER_DIR`.
pub fn verifier_output(verifier_dir: &Path, stream: &str) -> PathBuf {
    verifier_dir.with_extension(stream)
}
/// A run's folder, under `<git-common-dir>/crew/` (`RunStore::run_dir`).
pub fn run_dir(state_dir: &Path, run: &str) -> PathBuf {
    state_dir.join("runs").join(run)
}
/// The run's excludes file (`core.excludesFile` of its worktree's config): what git
/// ignores in its worktree besides the project's own rules. Written at dispatch, outside
/// the run's write fence.
pub fn run_excludes(dir: &Path) -> PathBuf {
    dir.join("exclude")
}
/// The hooks of run worktrees, under `<git-common-dir>/crew/` (`core.hooksPath` of every
/// run's worktree config).
pub fn run_hooks(state_dir: &Path) -> PathBuf {
    state_dir.join("hooks")
}
/// This repository's own hooks directory, under `<git-common-dir>/crew/`: init makes it
/// (and points the repository's `core.hooksPath` at it) when `core.hooksPath` names a
/// folder other repositories share; its hooks run that folder's.
pub fn repo_hooks(state_dir: &Path) -> PathBuf {
    state_dir.join("repo-hooks")
}
/// The ledger's stats and estimates, cached by the notes tip they were learnt at.
pub fn ledger_cache(state_dir: &Path) -> PathBuf {
    state_dir.join("cache").join("ledger-learnt.json")
}
/// This clone's name as a ledger writer (a random id, made by its first append).
pub fn ledger_writer(state_dir: &Path) -> PathBuf {
    state_dir.join("ledger-writer")
}
/// A task's human report, under `<git-common-dir>/crew/`.
pub fn human_report(state_dir: &Path, task: &str) -> PathBuf {
    state_dir
        .join("reports")
        .join(format!("{}.md", task.replace('/', "_")))
}
/// The reply (`$CREW_MANIFEST`).
pub fn manifest(dir: &Path) -> PathBuf {
    dir.join("manifest.md")
}
/// An earlier attempt's manifest, set aside.
pub fn manifest_of_attempt(dir: &Path, attempt: u32) -> PathBuf {
    dir.join(format!("manifest.attempt-{attempt}.md"))
}
/// The backend config resolved at dispatch.
pub fn backend_config(dir: &Path) -> PathBuf {
    dir.join("backend.json")
}
/// Left by `advise`: the prompt the next supervisor resumes the session with.
pub fn next_prompt(dir: &Path) -> PathBuf {
    dir.join("next-prompt")
}
/// Where a resumable `command` worker writes its session id.
pub fn session(dir: &Path) -> PathBuf {
    dir.join("session")
}
/// Where a `command` worker may write what its attempt has spent (`CREW_USAGE_FILE`).
pub fn usage(dir: &Path) -> PathBuf {
    dir.join("usage.json")
}

// What the supervisor reads of the files a run's own processes write, at most: a file
// over its cap is named in the run's discrepancies (or decision) and none of it is read.
// The manifest's cap is the run's `fences.max_output`, the same as its output's.

/// The session file (`CREW_SESSION_FILE`): it holds one id.
pub const SESSION_FILE_CAP: u64 = 4 << 10;
/// The usage file (`CREW_USAGE_FILE`): a few numbers.
pub const USAGE_FILE_CAP: u64 = 64 << 10;
/// Each of a verifier's files in `$CREW_VERIFIER_DIR`: a reward (`reward.json`,
/// `reward.txt`) over it is not read; of its report (`failure.txt` too) as feedback, the
/// first this many bytes are.
pub const VERIFIER_FILE_CAP: u64 = 64 << 10;
/// A prompt file (`--prompt-file`, a plan task's `prompt_file`).
pub const PROMPT_FILE_CAP: u64 = 1 << 20;
/// The run's `TMPDIR`.
pub fn tmp(dir: &Path) -> PathBuf {
    dir.join("tmp")
}
/// The run's object quarantine: where the objects its processes write into the
/// repository's store land (the upper layer of the store in their git view, or
/// `GIT_OBJECT_DIRECTORY` where they have none).
pub fn quarantine(dir: &Path) -> PathBuf {
    dir.join("objects")
}
/// A fleet run's objects copied out of its quarantine while an attempt runs, each hashed
/// again, for the heartbeat to push its commits (git-crew's, outside the fence; gone
/// when the run ends).
pub fn attempt_objects(dir: &Path) -> PathBuf {
    dir.join("attempt-objects")
}
/// The worktree setup's stdout and stderr while it runs.
pub fn setup_output(dir: &Path, stream: &str) -> PathBuf {
    dir.join(format!("setup.{stream}"))
}
/// overlayfs's work folder for the quarantine (same filesystem, kept empty).
pub fn quarantine_work(dir: &Path) -> PathBuf {
    dir.join("objects.work")
}
/// The run's git LFS store: where the LFS objects its processes write land (the upper
/// layer of the repository's LFS store in their git view, or `lfs.storage` where they
/// have none), imported into the repository's when an attempt ends.
pub fn lfs_store(dir: &Path) -> PathBuf {
    dir.join("lfs")
}
/// overlayfs's work folder for the LFS store (same filesystem, kept empty).
pub fn lfs_work(dir: &Path) -> PathBuf {
    dir.join("lfs.work")
}
/// The empty folder a fenced process's git view mounts its private tmpfs on.
pub fn git_view_scratch(dir: &Path) -> PathBuf {
    dir.join("gitview")
}
/// An attempt's stdout and stderr while it runs.
pub fn attempt_output(dir: &Path, attempt: u32, stream: &str) -> PathBuf {
    dir.join(format!("attempt-{attempt}.{stream}"))
}
/// The prompts of the attempts after the first.
pub fn corrective(dir: &Path, attempt: u32) -> PathBuf {
    dir.join(format!("corrective-{attempt}.md"))
}
pub fn restart(dir: &Path, attempt: u32) -> PathBuf {
    dir.join(format!("restart-{attempt}.md"))
}
pub fn continuation(dir: &Path, attempt: u32) -> PathBuf {
    dir.join(format!("continue-{attempt}.md"))
}
pub fn advice(dir: &Path, attempt: u32) -> PathBuf {
    dir.join(format!("advice-{attempt}.md"))
}
/// `$CREW_VERIFIER_DIR` of a verify: the supervisor's per attempt, `git crew
/// verify`'s, integrate's of the merged tree.
pub fn verifier(dir: &Path, attempt: u32) -> PathBuf {
    dir.join(format!("verifier-{attempt}"))
}
pub fn verifier_again(dir: &Path) -> PathBuf {
    dir.join("verifier-again")
}
pub fn verifier_merged(dir: &Path) -> PathBuf {
    dir.join("verifier-merged")
}
/// Where a removed run worktree and its administration wait, moved out of the way, for
/// a detached process to delete them (`<git-common-dir>/crew/trash`).
pub fn trash(state_dir: &Path) -> PathBuf {
    state_dir.join("trash")
}

/// The throwaway checkouts of `git crew verify` and of integrate's verify.
pub const VERIFY_CHECKOUT: &str = "verify-checkout";
pub const MERGED_CHECKOUT: &str = "merged";

/// Whether a worktree administration entry is one git named after a throwaway
/// checkout (`merged`, `verify-checkout`, or either with git's numeric suffix).
pub fn is_throwaway_name(name: &str) -> bool {
    [MERGED_CHECKOUT, VERIFY_CHECKOUT].iter().any(|base| {
        name.strip_prefix(base)
            .is_some_and(|rest| rest.bytes().all(|b| b.is_ascii_digit()))
    })
}
/// An integrate's journal, while its landing is under way.
pub fn integrating(dir: &Path) -> PathBuf {
    dir.join("integrating.json")
}
/// The `[notify]` command resolved at dispatch (`null` for none).
pub fn notifier(dir: &Path) -> PathBuf {
    dir.join("notify.json")
}
/// The run's claim on the fleet's remote, when it was dispatched with one.
pub fn fleet_ticket(dir: &Path) -> PathBuf {
    dir.join("fleet.json")
}
/// The `[sandbox] writable` paths resolved at dispatch.
pub fn fence_extra(dir: &Path) -> PathBuf {
    dir.join("fence.json")
}
/// What the run's task ref folder (`refs/heads/crew/<task>/`) held at dispatch: anything
/// new there when an attempt ends, but the run's branch, is a stray of the run's.
pub fn task_refs(dir: &Path) -> PathBuf {
    dir.join("task-refs.json")
}
/// The detached supervisor's own output.
pub fn supervisor_log(dir: &Path) -> PathBuf {
    dir.join("supervisor.log")
}

#[cfg(test)]
mod tests {
    use super::is_throwaway_name;

    #[test]
    fn throwaway_names_are_git_crews_and_nothing_like_them() {
        for name in ["merged", "merged1", "verify-checkout", "verify-checkout12"] {
            assert!(is_throwaway_name(name), "{name}");
        }
        for name in ["merged-ui", "mergedx", "verify-checkouts", "main"] {
            assert!(!is_throwaway_name(name), "{name}");
        }
    }
}
