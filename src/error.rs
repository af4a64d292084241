//! Errors that reach the user: a code from a closed set (which gives the kind, and the
//! kind the exit code, decided here and nowhere else), a message, the causes underneath,
//! and hints on what to do next. Below `cli` so that every front end's operations
//! (`ops`) return it; it imports nothing of the crate.

use std::fmt;

/// The exit codes of every command (SPEC §2).
pub mod exit {
    /// Success; for queries, the positive/continue answer.
    pub const OK: u8 = 0;
    /// A check said no: scope violation, verify failed, footer rejected, gate failed.
    pub const CHECK: u8 = 1;
    /// Usage or configuration error.
    pub const USAGE: u8 = 2;
    /// Not found: run, task, gate, plan.
    pub const NOT_FOUND: u8 = 3;
    /// Refused by state.
    pub const REFUSED: u8 = 4;
    /// Needs attention: a worker asked for help, an escalation or a human report.
    pub const ATTENTION: u8 = 5;
    /// Internal error (a bug).
    pub const INTERNAL: u8 = 70;
    /// An I/O or environment failure underneath (EX_IOERR in sysexits.h): permission
    /// denied, a full disk, a program that is not there. Not a bug in git-crew.
    pub const IO: u8 = 74;
    /// Stopped by SIGINT or SIGTERM (128 + SIGINT, as shells report it), after its
    /// cleanup ran.
    pub const INTERRUPTED: u8 = 130;
}

/// What went wrong, as far as the exit code is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// A check said no.
    Check,
    /// Bad flag, malformed config, not a git repository.
    Usage,
    NotFound,
    Refused,
    Attention,
    /// A bug in git-crew.
    Internal,
    /// The system underneath failed: I/O, permissions, space, a missing program.
    Io,
    Interrupted,
}

impl ErrorKind {
    /// The one mapping from error kind to exit code.
    pub fn exit_code(self) -> u8 {
        match self {
            ErrorKind::Check => exit::CHECK,
            ErrorKind::Usage => exit::USAGE,
            ErrorKind::NotFound => exit::NOT_FOUND,
            ErrorKind::Refused => exit::REFUSED,
            ErrorKind::Attention => exit::ATTENTION,
            ErrorKind::Internal => exit::INTERNAL,
            ErrorKind::Io => exit::IO,
            ErrorKind::Interrupted => exit::INTERRUPTED,
        }
    }

    /// The next step an error of this kind always has, when neither it nor its code
    /// gives one.
    fn hint(self) -> &'static str {
        match self {
            ErrorKind::Check => {
                "`git crew show RUN` shows what was measured; `git crew transcript RUN` what was printed"
            }
            ErrorKind::Usage => "`git crew help COMMAND` shows its flags",
            ErrorKind::NotFound => "`git crew status` lists the runs",
            ErrorKind::Refused => "`git crew status` shows what is in flight",
            ErrorKind::Attention => {
                "`git crew status` shows the runs that need you; `git crew advise RUN --text ...` answers one"
            }
            ErrorKind::Internal => {
                "this is a bug in git-crew: report it with the command that printed it"
            }
            ErrorKind::Io => {
                "the system refused git-crew (permissions, free space, a missing program): fix what the causes name, then run the command again"
            }
            ErrorKind::Interrupted => "nothing was recorded; run the command again",
        }
    }
}

/// Declares [`ErrorCode`] from one table: each code's variant, its kebab-case string
/// (what `error.code` says in JSON), its kind, its meaning (the doc comment, which the
/// README's table shows) and the hint it gives when its caller gives none.
macro_rules! error_codes {
    ($(
        $(#[doc = $doc:literal])+
        $variant:ident = $code:literal, $kind:ident $(, hint: $hint:literal)?;
    )+) => {
        /// Every error code a command returns: a closed set a caller can branch on.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
        #[serde(rename_all = "kebab-case")]
        pub enum ErrorCode {
            $($(#[doc = $doc])+ $variant,)+
        }

        impl ErrorCode {
            /// Every code, in the order of the table.
            pub const ALL: &[ErrorCode] = &[$(ErrorCode::$variant),+];

            /// The code as JSON's `error.code` spells it.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => $code,)+
                }
            }

            /// Its kind, and so its exit code.
            pub fn kind(self) -> ErrorKind {
                match self {
                    $(ErrorCode::$variant => ErrorKind::$kind,)+
                }
            }

            /// What it means, in one line (the README's table).
            pub fn meaning(self) -> &'static str {
                match self {
                    $(ErrorCode::$variant => concat!($($doc),+).trim(),)+
                }
            }

            /// The hint it gives when its caller gives none.
            pub fn default_hint(self) -> Option<&'static str> {
                match self {
                    $(ErrorCode::$variant => error_codes!(@hint $($hint)?),)+
                }
            }
        }
    };
    (@hint) => { None };
    (@hint $hint:literal) => { Some($hint) };
}

error_codes! {
    // exit 1: a check said no.
    /// The reply's footer lacks a section (`## Result`, `## How to verify`, `## Deferred / concerns`).
    FooterRejected = "footer-rejected", Check;
    /// A NEEDS-HELP block lacks one of its fields.
    NeedsHelpIncomplete = "needs-help-incomplete", Check,
        hint: "a NEEDS-HELP reply carries tried:, options:, leaning: and cost-if-wrong:";
    /// `doctor` found problems it did not repair.
    ProblemsFound = "problems-found", Check;
    /// A run's record disagrees with what dispatch sealed, or nothing sealed it.
    RecordTampered = "record-tampered", Check;
    /// A run did not pass (`wait`, `deliver`).
    RunFailed = "run-failed", Check;
    /// A commit or a run's branch changed paths outside the run's write scope.
    ScopeViolation = "scope-violation", Check;
    /// Integrate met a run whose verify did not pass on what would land.
    Unverified = "unverified", Check,
        hint: "`git crew verify RUN` runs its verify command again (`--command CMD` gives one to a run that has none); --force-unverified integrates anyway, and the note says so";
    /// The verify command failed, on the run or on the merged tree.
    VerifyFailed = "verify-failed", Check;
    /// The worktree setup failed, so the verify did not run.
    VerifySetupFailed = "verify-setup-failed", Check;
    /// The verify command ran out of time.
    VerifyTimedOut = "verify-timed-out", Check;
    /// A run's worktree administration cannot be put back, or git cannot read its worktree.
    WorktreeTampered = "worktree-tampered", Check;

    // exit 2: usage or configuration.
    /// The backend a dispatch would use is not configured, or its CLI is not there.
    BackendUnavailable = "backend-unavailable", Usage;
    /// `--base` names no commit.
    BadBase = "bad-base", Usage;
    /// `--into` is not a valid branch name.
    BadBranch = "bad-branch", Usage,
        hint: "--into takes a local branch name, such as main";
    /// `-C` names a folder git-crew cannot change to.
    BadDirectory = "bad-directory", Usage;
    /// A duration (`--timeout`, `--interval`, `--older-than`) cannot be read.
    BadDuration = "bad-duration", Usage;
    /// `--measured-at` names no commit.
    BadRevision = "bad-revision", Usage,
        hint: "--measured-at takes a commit, branch or tag";
    /// The command needs a work tree, and the repository is bare.
    BareRepository = "bare-repository", Usage,
        hint: "run it in a clone with a checkout";
    /// The flight config is malformed (each problem at `path:line:col`).
    ConfigInvalid = "config-invalid", Usage;
    /// The flight config cannot be read.
    ConfigUnreadable = "config-unreadable", Usage;
    /// The dispatch asks for something that cannot be (its flags, its plan task, its routing).
    DispatchInvalid = "dispatch-invalid", Usage;
    /// A gate's verdict came without evidence where `gates.require_evidence` asks for it.
    EvidenceRequired = "evidence-required", Usage,
        hint: "pass --evidence 'what was measured, and the number'";
    /// A file given to read holds more than the most it may hold.
    FileTooLarge = "file-too-large", Usage;
    /// A file given to read cannot be read.
    FileUnreadable = "file-unreadable", Usage,
        hint: "give the path of a regular file you can read";
    /// git has no committer identity (`user.name`, `user.email`).
    NoIdentity = "no-identity", Usage,
        hint: "set them: `git config --global user.name \"Your Name\"` and `git config --global user.email you@example.com`";
    /// `install-man-pages` cannot tell where git-crew is installed.
    NoManDir = "no-man-dir", Usage,
        hint: "name the manual folder: git crew install-man-pages DIR";
    /// The plan's task has no prompt or prompt_file, and none was given.
    NoPrompt = "no-prompt", Usage,
        hint: "add one to the plan, or pass --prompt / --prompt-file";
    /// `watch` needs a terminal (`--once` prints one frame).
    NoTerminal = "no-terminal", Usage;
    /// The run has no verify command, and none was given.
    NoVerifyCommand = "no-verify-command", Usage,
        hint: "pass one with --command CMD";
    /// A path given to read is a folder, FIFO, device or socket.
    NotAFile = "not-a-file", Usage,
        hint: "give the path of a regular file";
    /// Not inside a git repository.
    NotARepository = "not-a-repository", Usage,
        hint: "run git crew inside a git repository, or pass -C <path>";
    /// `git crew init` has not prepared this repository.
    NotInitialised = "not-initialised", Usage,
        hint: "run `git crew init` once in this repository";
    /// A plan file is malformed.
    PlanInvalid = "plan-invalid", Usage;
    /// There is no plan, or several and none was named.
    PlanRequired = "plan-required", Usage;
    /// A notes ref fetched from the remote names something other than a notes commit.
    RemoteNotesInvalid = "remote-notes-invalid", Usage,
        hint: "the remote's notes ref is broken; fix or delete it there";
    /// `sync` needs the remote named.
    RemoteRequired = "remote-required", Usage;
    /// A RUN address names several runs.
    RunAmbiguous = "run-ambiguous", Usage,
        hint: "give more of the run id, or the whole id";
    /// The sandbox settings cannot be met here (the write fence, the namespaces, a writable path).
    SandboxInvalid = "sandbox-invalid", Usage;
    /// A scope glob is malformed or reaches outside the repository.
    ScopeInvalid = "scope-invalid", Usage,
        hint: "a scope glob is one path or pattern inside the repository, on one line \
             (`src/routes/**`); repeat --scope for more";
    /// The target's `docs/state/crew.json` cannot be read.
    StateFileInvalid = "state-file-invalid", Usage;
    /// `completions` for a shell git-crew does not know.
    UnknownShell = "unknown-shell", Usage,
        hint: "give bash, zsh or fish";
    /// A mistyped command, flag or value (the argument parser's error).
    Usage = "usage", Usage;

    // exit 3: not found.
    /// The run's branch is gone.
    BranchGone = "branch-gone", NotFound;
    /// A file given to read does not exist.
    FileNotFound = "file-not-found", NotFound,
        hint: "check the path";
    /// The plan has no such gate.
    GateNotFound = "gate-not-found", NotFound;
    /// There is no such plan.
    PlanNotFound = "plan-not-found", NotFound,
        hint: "plans live in .crew/plans/<plan>.toml";
    /// The prompt of the run to retry cannot be read.
    PromptNotFound = "prompt-not-found", NotFound,
        hint: "dispatch the task afresh with `git crew dispatch --prompt ...`";
    /// There is no such remote.
    RemoteNotFound = "remote-not-found", NotFound;
    /// No run matches the RUN given.
    RunNotFound = "run-not-found", NotFound,
        hint: "`git crew status` lists the runs";
    /// Integrate's target branch does not exist.
    TargetNotFound = "target-not-found", NotFound,
        hint: "`git branch` lists the branches; --into BRANCH names one";
    /// The plan has no such task.
    TaskNotFound = "task-not-found", NotFound;
    /// The run was dispatched with transcripts disabled.
    TranscriptDisabled = "transcript-disabled", NotFound;
    /// The run's transcript is not there.
    TranscriptNotFound = "transcript-not-found", NotFound;
    /// The plan has no such wave.
    WaveNotFound = "wave-not-found", NotFound;

    // exit 4: refused by state.
    /// The run is integrated already.
    AlreadyIntegrated = "already-integrated", Refused;
    /// A gate holds the task or the wave (`gates.enforce = "strict"`).
    BlockedByGate = "blocked-by-gate", Refused,
        hint: "record the gate's verdict with `git crew gate record G --verdict pass --evidence ...`";
    /// `install-man-pages` cannot write a page.
    CannotWrite = "cannot-write", Refused,
        hint: "name a manual folder you can write: git crew install-man-pages DIR";
    /// git would not fast-forward the checked-out target.
    CheckoutRefused = "checkout-refused", Refused,
        hint: "move the files in its way, then integrate again";
    /// `abandon --remote` of a run whose claim on the fleet's remote is renewed by its live run.
    ClaimLive = "claim-live", Refused,
        hint: "abandon the run on its own machine, or wait until its lease runs out";
    /// Integrate through a fleet's remote found the task's claim held by another run, or gone.
    ClaimTakenOver = "claim-taken-over", Refused,
        hint: "the run's lease ran out and another machine took the task over, or its claim was abandoned on the remote: abandon one of the two runs, then integrate the other, or dispatch the task again";
    /// The target's checkout has uncommitted changes to tracked files.
    DirtyCheckout = "dirty-checkout", Refused,
        hint: "commit or stash them, then integrate again";
    /// Another dispatch is under way.
    DispatchBusy = "dispatch-busy", Refused,
        hint: "another dispatch is under way; try again";
    /// The dispatch is refused: a live run of the task, an overlapping scope, a backend at its limit, a busy worker.
    DispatchRefused = "dispatch-refused", Refused,
        hint: "`git crew status` shows the in-flight runs";
    /// The remote's notes cannot be fetched.
    FetchFailed = "fetch-failed", Refused,
        hint: "check that the remote is reachable: git fetch REMOTE";
    /// `init` would move a hook aside onto a name that is taken.
    HookInTheWay = "hook-in-the-way", Refused;
    /// `init` was run inside a run's worktree.
    InsideRunWorktree = "inside-run-worktree", Refused;
    /// The run does not merge cleanly onto the target.
    MergeConflict = "merge-conflict", Refused;
    /// `attach` to a run that is not awaiting attach.
    NotAwaitingAttach = "not-awaiting-attach", Refused;
    /// `deliver` to a run that takes no delivery.
    NotDeliverable = "not-deliverable", Refused,
        hint: "deliver is for native runs that are working or awaiting attach";
    /// `advise` to a run that is not waiting for help.
    NotWaitingForHelp = "not-waiting-for-help", Refused;
    /// The run's branch has nothing to integrate.
    NothingToIntegrate = "nothing-to-integrate", Refused,
        hint: "`git crew show RUN` has its footer; its manifest is beside its record";
    /// `work` stopped with tasks of the plan not done: blocked (a gate, a dependency not done) or left by Ctrl-C.
    PlanUnfinished = "plan-unfinished", Refused,
        hint: "`git crew plan status` shows what blocks each task";
    /// The remote refused a push of the fleet's refs (a hook, a protected ref); nothing moved there.
    RemoteRefused = "remote-refused", Refused,
        hint: "the remote's hooks or rules refuse refs/crew/*: ask its keeper to allow them";
    /// Another command holds the run's lock.
    RunBusy = "run-busy", Refused;
    /// The run has ended.
    RunEnded = "run-ended", Refused;
    /// The run is still live.
    RunInFlight = "run-in-flight", Refused;
    /// The run's branch no longer descends from its base.
    RunRewritten = "run-rewritten", Refused,
        hint: "its commits stay on the branch and in refs/crew/attempts; dispatch the task again from the current base";
    /// A run's live pointer or record exists but cannot be read.
    RunUnreadable = "run-unreadable", Refused,
        hint: "`git crew doctor` reports it; restore or remove the file by hand";
    /// The write scopes of a wave's tasks overlap.
    ScopeOverlap = "scope-overlap", Refused,
        hint: "give the tasks disjoint scopes, or move one to a later wave";
    /// The remote kept refusing the notes.
    SyncRejected = "sync-rejected", Refused,
        hint: "someone is pushing notes continuously; run `git crew sync` again";
    /// Commits kept landing on the target under every attempt to integrate.
    TargetKeptMoving = "target-kept-moving", Refused,
        hint: "commits keep landing on the target; integrate again when it is quiet";
    /// The task's id and another task's id nest as branch folders (`crew/a/`, `crew/a/b/`).
    TaskNests = "task-nests", Refused,
        hint: "give the task an id that is not a folder of another task's id, nor under one";
    /// The run's worktree holds uncommitted changes.
    WorktreeDirty = "worktree-dirty", Refused,
        hint: "commit them to the run's branch or discard them, then verify again";
    /// An ended run's worktree cannot be read, so its work cannot be kept.
    WorktreeUnreadable = "worktree-unreadable", Refused,
        hint: "inspect its worktree by hand; `git crew prune` leaves it alone meanwhile";

    // exit 5: needs attention.
    /// The task reached its failure limit at the top tier: a human report was written.
    HumanReport = "human-report", Attention;

    // exit 70: a bug.
    /// A bug in git-crew.
    Internal = "internal", Internal;

    // exit 74: the system underneath.
    /// An I/O or environment failure underneath (permission denied, a full disk, a missing program); the causes name it.
    IoError = "io-error", Io;

    // exit 130: interrupted.
    /// Stopped by SIGINT or SIGTERM, after its cleanup ran.
    Interrupted = "interrupted", Interrupted;
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error with everything needed to render it in JSON or for a human.
#[derive(Debug, Clone)]
pub struct CrewError {
    pub code: ErrorCode,
    pub message: String,
    /// Further lines of the message (one per diagnostic, for instance).
    pub details: Vec<String>,
    pub hints: Vec<String>,
    /// What caused it, the nearest first, down to the failure at the bottom (`caused
    /// by: ...`).
    pub causes: Vec<String>,
}

impl CrewError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> CrewError {
        CrewError {
            code,
            message: message.into(),
            details: Vec::new(),
            hints: Vec::new(),
            causes: Vec::new(),
        }
    }

    /// A bug in git-crew, said in words. A failure that carries its error goes through
    /// `CrewError::from`, which tells an I/O failure from a bug.
    pub fn internal(message: impl Into<String>) -> CrewError {
        CrewError::new(ErrorCode::Internal, message)
    }

    /// The kind of its code.
    pub fn kind(&self) -> ErrorKind {
        self.code.kind()
    }

    pub fn hinted(mut self, hint: impl Into<String>) -> CrewError {
        self.hints.push(hint.into());
        self
    }

    pub fn with_details(mut self, details: Vec<String>) -> CrewError {
        self.details = details;
        self
    }

    /// Adds `err` and everything under it as the causes.
    pub fn caused_by(mut self, err: &(dyn std::error::Error + 'static)) -> CrewError {
        let mut next = Some(err);
        while let Some(cause) = next {
            self.causes.push(cause.to_string());
            next = cause.source();
        }
        self
    }

    pub fn exit_code(&self) -> u8 {
        self.kind().exit_code()
    }

    /// The SPEC §2 error envelope's `error` object.
    pub fn to_json(&self) -> serde_json::Value {
        let mut message = self.message.clone();
        for detail in &self.details {
            message.push('\n');
            message.push_str(detail);
        }
        let mut value = serde_json::json!({
            "code": self.code,
            "message": message,
            "hint": self.all_hints().join("\n"),
        });
        if !self.details.is_empty() {
            value["details"] = self.details.clone().into();
        }
        if !self.causes.is_empty() {
            value["causes"] = self.causes.clone().into();
        }
        value
    }

    /// git-style rendering: `error: ...`, indented details, `caused by: ...`, `hint: ...`.
    pub fn render_human(&self, prefix: &str) -> String {
        let mut out = format!("{prefix}error: {}\n", self.message);
        for detail in &self.details {
            out.push_str(&format!("{prefix}  {detail}\n"));
        }
        for cause in &self.causes {
            out.push_str(&format!("{prefix}caused by: {cause}\n"));
        }
        for hint in self.all_hints() {
            out.push_str(&format!("{prefix}hint: {hint}\n"));
        }
        out
    }

    /// The hints given, or — so that no error leaves the reader without a next step —
    /// its code's, else the one its kind always has.
    fn all_hints(&self) -> Vec<String> {
        if !self.hints.is_empty() {
            return self.hints.clone();
        }
        vec![
            self.code
                .default_hint()
                .unwrap_or_else(|| self.kind().hint())
                .to_string(),
        ]
    }
}

impl fmt::Display for CrewError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CrewError {}

/// A failure from underneath (git, the filesystem, a process): an I/O error anywhere in
/// its chain makes it an `io-error` (exit 74) whose message is the outermost context and
/// whose causes are the rest; anything else is a bug (`internal`, exit 70), its whole
/// chain on one line.
impl CrewError {
    pub fn underneath(err: &(dyn std::error::Error + 'static)) -> CrewError {
        // The one type test left at the boundary: std's I/O error may sit anywhere under
        // a layer's errors and gix's, and only its presence tells the system's failure
        // from git-crew's.
        let chain = || std::iter::successors(Some(err), |e| e.source());
        if chain().any(|e| e.is::<std::io::Error>()) {
            let io = CrewError::new(ErrorCode::IoError, err.to_string());
            match err.source() {
                Some(cause) => io.caused_by(cause),
                None => io,
            }
        } else {
            let words: Vec<String> = chain().map(|e| e.to_string()).collect();
            CrewError::internal(words.join(": "))
        }
    }
}

/// An I/O failure with no context of git-crew's: its message is the error's.
impl From<std::io::Error> for CrewError {
    fn from(err: std::io::Error) -> CrewError {
        CrewError::underneath(&err)
    }
}

/// The result every command returns.
pub type Result<T, E = CrewError> = std::result::Result<T, E>;

/// The README's table of error codes, as [`ErrorCode::ALL`] gives it: by exit code,
/// then code.
pub fn readme_table() -> String {
    let mut codes = ErrorCode::ALL.to_vec();
    codes.sort_by_key(|c| (c.kind().exit_code(), c.as_str()));
    let mut out = String::from("| code | exit | meaning |\n|---|---|---|\n");
    for code in codes {
        out.push_str(&format!(
            "| `{}` | {} | {} |\n",
            code.as_str(),
            code.kind().exit_code(),
            code.meaning().replace('|', "\\|")
        ));
    }
    out
}

/// The markers around the generated table in README.md.
pub const README_START: &str =
    "<!-- error codes: generated from src/error.rs (UPDATE_README=1 cargo test --lib error) -->";
pub const README_END: &str = "<!-- end of error codes -->";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_maps_to_the_spec_exit_code() {
        let table = [
            (ErrorKind::Check, 1),
            (ErrorKind::Usage, 2),
            (ErrorKind::NotFound, 3),
            (ErrorKind::Refused, 4),
            (ErrorKind::Attention, 5),
            (ErrorKind::Internal, 70),
            (ErrorKind::Io, 74),
            (ErrorKind::Interrupted, 130),
        ];
        for (kind, code) in table {
            assert_eq!(kind.exit_code(), code);
        }
    }

    /// Each code's exit, written out by hand: a code that changes its kind (and so the
    /// exit a caller branches on) fails here.
    #[test]
    fn every_code_has_its_exit() {
        let table: &[(&str, u8)] = &[
            ("footer-rejected", 1),
            ("needs-help-incomplete", 1),
            ("problems-found", 1),
            ("record-tampered", 1),
            ("run-failed", 1),
            ("scope-violation", 1),
            ("unverified", 1),
            ("verify-failed", 1),
            ("verify-setup-failed", 1),
            ("verify-timed-out", 1),
            ("worktree-tampered", 1),
            ("backend-unavailable", 2),
            ("bad-base", 2),
            ("bad-branch", 2),
            ("bad-directory", 2),
            ("bad-duration", 2),
            ("bad-revision", 2),
            ("bare-repository", 2),
            ("config-invalid", 2),
            ("config-unreadable", 2),
            ("dispatch-invalid", 2),
            ("evidence-required", 2),
            ("file-too-large", 2),
            ("file-unreadable", 2),
            ("no-identity", 2),
            ("no-man-dir", 2),
            ("no-prompt", 2),
            ("no-terminal", 2),
            ("no-verify-command", 2),
            ("not-a-file", 2),
            ("not-a-repository", 2),
            ("not-initialised", 2),
            ("plan-invalid", 2),
            ("plan-required", 2),
            ("remote-notes-invalid", 2),
            ("remote-required", 2),
            ("run-ambiguous", 2),
            ("sandbox-invalid", 2),
            ("scope-invalid", 2),
            ("state-file-invalid", 2),
            ("unknown-shell", 2),
            ("usage", 2),
            ("branch-gone", 3),
            ("file-not-found", 3),
            ("gate-not-found", 3),
            ("plan-not-found", 3),
            ("prompt-not-found", 3),
            ("remote-not-found", 3),
            ("run-not-found", 3),
            ("target-not-found", 3),
            ("task-not-found", 3),
            ("transcript-disabled", 3),
            ("transcript-not-found", 3),
            ("wave-not-found", 3),
            ("already-integrated", 4),
            ("blocked-by-gate", 4),
            ("cannot-write", 4),
            ("checkout-refused", 4),
            ("claim-live", 4),
            ("claim-taken-over", 4),
            ("dirty-checkout", 4),
            ("dispatch-busy", 4),
            ("dispatch-refused", 4),
            ("fetch-failed", 4),
            ("hook-in-the-way", 4),
            ("inside-run-worktree", 4),
            ("merge-conflict", 4),
            ("not-awaiting-attach", 4),
            ("not-deliverable", 4),
            ("not-waiting-for-help", 4),
            ("nothing-to-integrate", 4),
            ("plan-unfinished", 4),
            ("remote-refused", 4),
            ("run-busy", 4),
            ("run-ended", 4),
            ("run-in-flight", 4),
            ("run-rewritten", 4),
            ("run-unreadable", 4),
            ("scope-overlap", 4),
            ("sync-rejected", 4),
            ("target-kept-moving", 4),
            ("task-nests", 4),
            ("worktree-dirty", 4),
            ("worktree-unreadable", 4),
            ("human-report", 5),
            ("internal", 70),
            ("io-error", 74),
            ("interrupted", 130),
        ];
        let actual: Vec<(&str, u8)> = ErrorCode::ALL
            .iter()
            .map(|c| (c.as_str(), c.kind().exit_code()))
            .collect();
        assert_eq!(actual, table);
        for code in ErrorCode::ALL {
            assert_eq!(
                CrewError::new(*code, "x").exit_code(),
                code.kind().exit_code()
            );
        }
    }

    /// JSON's `error.code` is serde's rendering of the variant: it must be the string
    /// the table spells (what every caller saw before the codes were an enum).
    #[test]
    fn serde_spells_each_code_as_the_table_does() {
        let mut seen = std::collections::HashSet::new();
        for code in ErrorCode::ALL {
            assert_eq!(
                serde_json::to_value(code).unwrap(),
                serde_json::Value::String(code.as_str().to_string())
            );
            assert_eq!(code.to_string(), code.as_str());
            assert!(seen.insert(code.as_str()), "{code} twice");
            assert!(!code.meaning().is_empty() && !code.meaning().contains('\n'));
        }
    }

    #[test]
    fn the_envelope_carries_code_message_and_hint() {
        let e = CrewError::new(ErrorCode::NotARepository, "not a git repository")
            .hinted("run it inside a repository");
        assert_eq!(
            e.to_json(),
            serde_json::json!({"code": "not-a-repository", "message": "not a git repository", "hint": "run it inside a repository"})
        );
        assert_eq!(
            e.render_human(""),
            "error: not a git repository\nhint: run it inside a repository\n"
        );
    }

    #[test]
    fn a_hint_given_beats_the_codes_and_the_codes_beats_the_kinds() {
        let given = CrewError::new(ErrorCode::RunBusy, "busy").hinted("wait");
        assert_eq!(given.to_json()["hint"], "wait");
        let with_default = ErrorCode::ALL
            .iter()
            .find_map(|c| Some((*c, c.default_hint()?)));
        if let Some((code, hint)) = with_default {
            assert_eq!(CrewError::new(code, "m").to_json()["hint"], hint);
        }
        let plain = ErrorCode::ALL
            .iter()
            .find(|c| c.default_hint().is_none() && c.kind() == ErrorKind::Refused)
            .unwrap();
        assert_eq!(
            CrewError::new(*plain, "m").to_json()["hint"],
            "`git crew status` shows what is in flight"
        );
    }

    #[test]
    fn the_causes_follow_the_message_in_both_renderings() {
        let e = CrewError::new(ErrorCode::IoError, "cannot write the pointer")
            .with_details(vec!["a detail".into()])
            .hinted("fix it");
        let e = CrewError {
            causes: vec![
                "cannot create .git/crew/live".into(),
                "Permission denied".into(),
            ],
            ..e
        };
        assert_eq!(
            e.render_human("crew: "),
            "crew: error: cannot write the pointer\n\
             crew:   a detail\n\
             crew: caused by: cannot create .git/crew/live\n\
             crew: caused by: Permission denied\n\
             crew: hint: fix it\n"
        );
        assert_eq!(
            e.to_json(),
            serde_json::json!({
                "code": "io-error",
                "message": "cannot write the pointer\na detail",
                "hint": "fix it",
                "details": ["a detail"],
                "causes": ["cannot create .git/crew/live", "Permission denied"],
            })
        );
        // No causes: no key, no line.
        let bare = CrewError::new(ErrorCode::RunEnded, "ended");
        assert!(bare.to_json().get("causes").is_none());
        assert!(!bare.render_human("").contains("caused by"));
    }

    #[test]
    fn an_io_error_underneath_is_its_own_kind_with_its_causes() {
        let io = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let shown = io.to_string();
        let err = crate::state::error::Error::within(
            "cannot write the live pointer",
            crate::sys::error::Error::within("cannot create .git/crew/live", io),
        );
        let e = CrewError::from(err);
        assert_eq!((e.code, e.exit_code()), (ErrorCode::IoError, 74));
        assert_eq!(e.message, "cannot write the live pointer");
        assert_eq!(e.causes, ["cannot create .git/crew/live", shown.as_str()]);
        assert_eq!(
            e.to_json()["hint"],
            "the system refused git-crew (permissions, free space, a missing program): fix what the causes name, then run the command again"
        );
        // Straight from std, with nothing around it.
        let e = CrewError::from(std::io::Error::from(std::io::ErrorKind::StorageFull));
        assert_eq!((e.code, e.exit_code()), (ErrorCode::IoError, 74));
        assert!(e.causes.is_empty());
    }

    /// What is not I/O stays a bug, rendered exactly as before: the chain on one line,
    /// no causes.
    #[test]
    fn a_git_that_cannot_start_is_an_io_error_and_a_git_that_refuses_is_not() {
        let absent = crate::git::run::GitError::Spawn {
            args: "status".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        let err = CrewError::from(crate::git::error::Error::within(
            "cannot list the changes",
            absent,
        ));
        assert_eq!((err.code, err.exit_code()), (ErrorCode::IoError, 74));
        let refused = crate::git::run::GitError::Failed {
            args: "status".into(),
            code: Some(128),
            stderr: "fatal: bad".into(),
        };
        let err = CrewError::from(crate::git::error::Error::from(refused));
        assert_eq!(err.exit_code(), 70);
    }

    #[test]
    fn a_failure_with_no_io_underneath_stays_internal_and_unchanged() {
        let err = crate::run::error::Error::within(
            "cannot read the seal",
            crate::git::error::Error::invalid("gix said no"),
        );
        let e = CrewError::from(err);
        assert_eq!((e.code, e.exit_code()), (ErrorCode::Internal, 70));
        assert_eq!(
            e.to_json(),
            serde_json::json!({
                "code": "internal",
                "message": "cannot read the seal: gix said no",
                "hint": "this is a bug in git-crew: report it with the command that printed it",
            })
        );
    }

    /// The README's table of error codes is the enum's: `UPDATE_README=1 cargo test
    /// --lib error` writes it again.
    #[test]
    fn the_readme_lists_every_error_code() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md");
        let readme = std::fs::read_to_string(&path).unwrap();
        let (before, rest) = readme
            .split_once(README_START)
            .expect("README.md has the error codes' start marker");
        let (_, after) = rest
            .split_once(README_END)
            .expect("README.md has the error codes' end marker");
        let expected = format!(
            "{before}{README_START}\n{}{README_END}{after}",
            readme_table()
        );
        if std::env::var_os("UPDATE_README").is_some() {
            std::fs::write(&path, &expected).unwrap();
            return;
        }
        assert!(
            readme == expected,
            "README.md's table of error codes is not the enum's: run `UPDATE_README=1 cargo test --lib error` to write it again"
        );
        for code in ErrorCode::ALL {
            assert!(readme.contains(&format!("| `{}` |", code.as_str())));
        }
    }
}
