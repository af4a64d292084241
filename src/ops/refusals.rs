//! How the refusals that several commands meet render as errors (a dispatch's, also met
//! by a wave; an integrate's; a gate's hold; a plan's task; an interrupt of what verify
//! and integrate run): each with its error code (whose kind gives its exit code, SPEC §2)
//! and a hint that says what to do next. A refusal only one command meets renders beside
//! it (verify's, init's).

use crate::core::dispatch;
use crate::core::integrate;
use crate::error::{CrewError, ErrorCode};

/// A dispatch refusal as the error SPEC §2 names for it.
impl From<dispatch::Refusal> for CrewError {
    fn from(r: dispatch::Refusal) -> CrewError {
        use dispatch::Refusal;
        match r {
            Refusal::Usage(m) => CrewError::new(ErrorCode::DispatchInvalid, m),
            Refusal::Scope(e) => CrewError::new(ErrorCode::ScopeInvalid, e.to_string()),
            Refusal::Config { message, hint } => {
                CrewError::new(ErrorCode::BackendUnavailable, message).hinted(hint)
            }
            Refusal::State(m) => CrewError::new(ErrorCode::DispatchRefused, m),
            Refusal::HumanReport {
                task, model, filed, ..
            } => {
                let err = CrewError::new(
                    ErrorCode::HumanReport,
                    format!(
                        "task {task} reached its failure limit with {model} at the top tier: no further try"
                    ),
                );
                match filed {
                    Some(path) => {
                        err.hinted(format!("read the human report at {}", path.display()))
                    }
                    None => err,
                }
            }
            Refusal::Busy(m) => CrewError::new(ErrorCode::DispatchBusy, m),
            Refusal::Nests { task, other } => CrewError::new(
                ErrorCode::TaskNests,
                format!(
                    "task `{task}` and task `{other}` nest (crew/{task}/ and crew/{other}/): a worker of one could write the other's branches"
                ),
            ),
            Refusal::Sandbox(m) => CrewError::new(ErrorCode::SandboxInvalid, m),
            Refusal::NoRemote(remote) => CrewError::new(
                ErrorCode::RemoteNotFound,
                format!(
                    "no remote {remote}: the fleet's claims live on a remote of this repository"
                ),
            )
            .hinted("`git remote -v` lists them; --remote NAME or fleet.remote names one"),
            Refusal::RemoteUnreachable(m) => CrewError::new(ErrorCode::FetchFailed, m),
            Refusal::RemoteRefused(m) => CrewError::new(ErrorCode::RemoteRefused, m),
            Refusal::NotInitialised => CrewError::new(
                ErrorCode::NotInitialised,
                "extensions.worktreeConfig is off: a run worktree could not carry its own identity and hooks",
            ),
            Refusal::NoIdentity => CrewError::new(
                ErrorCode::NoIdentity,
                "git has no committer identity here (user.name and user.email): a run's branch and its commits need one",
            ),
        }
    }
}

impl From<integrate::Refusal> for CrewError {
    fn from(r: integrate::Refusal) -> CrewError {
        use integrate::Refusal;
        match r {
        Refusal::NotFound(m) => CrewError::new(ErrorCode::RunNotFound, m),
        Refusal::Live(m) => CrewError::new(ErrorCode::RunInFlight, m)
            .hinted("`git crew wait RUN` first"),
        Refusal::Unverified(m) => CrewError::new(ErrorCode::Unverified, m),
        Refusal::Scope(paths) => CrewError::new(ErrorCode::ScopeViolation,
            "the run's branch changed paths outside its scope; nothing was integrated",
        )
        .with_details(paths)
        .hinted("the outcome is recorded as scope-reject in the ledger"),
        Refusal::HandScope { run, commit, violations } => CrewError::new(ErrorCode::ScopeViolation,
            format!("run {run} was merged by hand in {commit}, which changed paths outside its scope: it is not recorded as integrated"),
        )
        .with_details(violations)
        .hinted(format!("the run record note on {commit} names them (`git notes --ref=crew show {commit}`); the ledger counts a scope-reject")),
        Refusal::AlreadyIntegrated(m) => CrewError::new(ErrorCode::AlreadyIntegrated, m)
            .hinted("`git crew show RUN` has its integration; `git notes --ref=crew show <commit>` its record"),
        Refusal::Tampered(m) => CrewError::new(ErrorCode::RecordTampered, m)
            .hinted("nothing was integrated; `git cat-file -p refs/crew/sealed/RUN` shows what dispatch sealed"),
        Refusal::Rewritten(m) => CrewError::new(ErrorCode::RunRewritten, m),
        Refusal::Nothing(m) => CrewError::new(ErrorCode::NothingToIntegrate, m),
        Refusal::NoTarget(m) => CrewError::new(ErrorCode::TargetNotFound, m),
        Refusal::Dirty(wt) => CrewError::new(ErrorCode::DirtyCheckout,
            format!(
                "the target is checked out in {} with uncommitted changes; nothing was integrated",
                wt.display()
            ),
        ),
        Refusal::Checkout(wt, why) => CrewError::new(ErrorCode::CheckoutRefused,
            format!(
                "the target is checked out in {} and git would not fast-forward it; nothing was integrated",
                wt.display()
            ),
        )
        .with_details(vec![why]),
        Refusal::Conflict { into, branch, paths } => CrewError::new(ErrorCode::MergeConflict,
            format!("the run does not merge cleanly onto {into}; {into}, your checkout and the run's branch are untouched"),
        )
        .with_details(paths)
        .hinted(format!("merge it by hand on {into} (`git merge {branch}`, resolve, `git commit`): the post-commit hook audits and records it; or dispatch a follow-up run with --base {into}")),
        Refusal::MergedVerify(m) => CrewError::new(ErrorCode::VerifyFailed, m),
        Refusal::KeptMoving(m) => CrewError::new(ErrorCode::TargetKeptMoving, m),
        Refusal::BadState(m) => CrewError::new(ErrorCode::StateFileInvalid, m),
        Refusal::RemoteRefused(m) => CrewError::new(ErrorCode::RemoteRefused, m),
        Refusal::Unreachable(m) => CrewError::new(ErrorCode::FetchFailed, m),
        Refusal::ClaimTakenOver(m) => CrewError::new(ErrorCode::ClaimTakenOver, m),
    }
    }
}

/// A task a gate holds under `strict`, as the error SPEC §2 names for it.
impl From<crate::core::plan::Held> for CrewError {
    fn from(held: crate::core::plan::Held) -> CrewError {
        CrewError::new(
            ErrorCode::BlockedByGate,
            format!(
                "task {} is held by a gate on wave {}: nothing was {}",
                held.task, held.wave, held.doing
            ),
        )
        .with_details(held.gates)
    }
}

impl From<crate::run::plans::TaskRefusal> for CrewError {
    fn from(r: crate::run::plans::TaskRefusal) -> CrewError {
        use crate::run::plans::TaskRefusal;
        match r {
            TaskRefusal::Held(held) => held.into(),
            TaskRefusal::NotFound {
                plan,
                id,
                suggestion,
            } => {
                let err = CrewError::new(
                    ErrorCode::TaskNotFound,
                    format!("plan {plan} has no task {id}"),
                );
                match suggestion {
                    Some(s) => err.hinted(format!("did you mean `{s}`?")),
                    None => err.hinted(format!(
                        "`git crew plan status --plan {plan}` lists its tasks"
                    )),
                }
            }
        }
    }
}

/// What verify and integrate ran: an interrupt (SIGINT, SIGTERM) stopped it and everything
/// it started, or it failed underneath.
impl From<crate::run::process::RunError> for CrewError {
    fn from(err: crate::run::process::RunError) -> CrewError {
        use crate::run::process::RunError;
        match err {
            RunError::Interrupted(_) => CrewError::new(
                ErrorCode::Interrupted,
                "interrupted: the verify command and everything it started were stopped",
            )
            .hinted("nothing was recorded; run the command again"),
            RunError::Failed(err) => CrewError::from(err),
        }
    }
}

/// The layers' own errors: the system's refusal is an `io-error`, anything else a bug.
macro_rules! from_layer {
    ($($ty:ty),+) => {
        $(impl From<$ty> for CrewError {
            fn from(err: $ty) -> CrewError {
                CrewError::underneath(&err)
            }
        })+
    };
}

from_layer!(
    crate::sys::error::Error,
    crate::git::error::Error,
    crate::state::error::Error,
    crate::run::error::Error
);
