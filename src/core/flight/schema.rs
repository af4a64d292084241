//! The schema table: every key of `flight.toml`, its type and its doc. One table drives
//! validation (`walker.rs`), the JSON Schema (`json_schema.rs`) and the
//! did-you-mean suggestions, so a key cannot be known to one and unknown to another.

use super::values::{AdapterKind, Enforcement, OnFail, Reflex, SandboxMode, WorktreeCleanup};
use crate::core::summary::At;

/// The longest duration a key may hold: a deadline past it is no deadline (and one far
/// enough out overflows the clock).
pub const MAX_DURATION: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);

/// The type of a config value.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// A table with exactly these keys.
    Table(&'static [Field]),
    /// A table of user-named tables, each with these keys (`[backends.<name>]`).
    Named(&'static [Field]),
    Str,
    Enum(&'static [&'static str]),
    Bool,
    Int {
        min: i64,
        max: i64,
    },
    /// A duration such as `25m`, `90s`, `1h 30m`.
    Duration,
    StrArray,
    /// An array whose items are each one of these values.
    EnumArray(&'static [&'static str]),
    /// A table of string values (`env`).
    StrMap,
}

impl Kind {
    pub(super) fn describe(self) -> &'static str {
        match self {
            Kind::Table(_) | Kind::Named(_) => "a table",
            Kind::Str | Kind::Enum(_) => "a string",
            Kind::Bool => "a boolean",
            Kind::Int { .. } => "an integer",
            Kind::Duration => "a duration string such as \"25m\"",
            Kind::StrArray | Kind::EnumArray(_) => "an array of strings",
            Kind::StrMap => "a table of strings",
        }
    }
}

/// One key of a table.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub name: &'static str,
    pub kind: Kind,
    pub doc: &'static str,
}

const fn field(name: &'static str, kind: Kind, doc: &'static str) -> Field {
    Field { name, kind, doc }
}

/// The values of `adapter` (the strings of [`AdapterKind`]).
pub const ADAPTERS: &[&str] = AdapterKind::NAMES;
/// The values of `sandbox` (the strings of [`SandboxMode`]).
pub const SANDBOXES: &[&str] = SandboxMode::NAMES;

const BACKEND: &[Field] = &[
    field(
        "adapter",
        Kind::Enum(ADAPTERS),
        "Which adapter drives this backend.",
    ),
    field(
        "command",
        Kind::Str,
        "The executable the codex/claude adapter launches.",
    ),
    field("model", Kind::Str, "The concrete model passed to the CLI."),
    field("effort", Kind::Str, "Reasoning effort passed to the CLI."),
    field(
        "sandbox",
        Kind::Enum(SANDBOXES),
        "worktree-full: the worktree is the boundary; read-only: no writes.",
    ),
    field(
        "session_reuse",
        Kind::Bool,
        "Whether retries and standing workers resume the same session.",
    ),
    field(
        "concurrency",
        Kind::Int { min: 1, max: 1024 },
        "How many runs of this backend may be live at once.",
    ),
    field(
        "time_budget",
        Kind::Duration,
        "Wall-clock budget of one run.",
    ),
    field(
        "idle_timeout",
        Kind::Duration,
        "The watchdog: silence this long ends the attempt.",
    ),
    field(
        "tier",
        Kind::Str,
        "The escalation tier this backend serves (one of `tiers`).",
    ),
    field(
        "extra_args",
        Kind::StrArray,
        "Appended to every launch and resume.",
    ),
    field("env", Kind::StrMap, "Extra environment for the worker."),
    field(
        "argv",
        Kind::StrArray,
        "command adapter: the launch argv; placeholders {prompt} {prompt_file} {worktree} {model} {effort} {session} {run}.",
    ),
    field(
        "resume_argv",
        Kind::StrArray,
        "command adapter: the argv that resumes a session.",
    ),
    field("note", Kind::Str, "Free text shown in listings."),
];

const WORKER: &[Field] = &[
    field(
        "backend",
        Kind::Str,
        "The backend this standing worker runs on.",
    ),
    field(
        "model",
        Kind::Str,
        "Overrides the backend's model for this worker.",
    ),
    field(
        "effort",
        Kind::Str,
        "Overrides the backend's effort for this worker.",
    ),
    field("note", Kind::Str, "Free text shown by `git crew workers`."),
];

const ROLE: &[Field] = &[
    field(
        "sandbox",
        Kind::Enum(SANDBOXES),
        "The sandbox runs of this role get.",
    ),
    field(
        "backend",
        Kind::Str,
        "The backend runs of this role use unless dispatch says otherwise.",
    ),
    field("model", Kind::Str, "The model runs of this role use."),
    field("effort", Kind::Str, "The effort runs of this role use."),
    field(
        "time_budget",
        Kind::Duration,
        "The time budget runs of this role get.",
    ),
];

const ROLES: &[Field] = &[
    field("implement", Kind::Table(ROLE), "Produce commits."),
    field(
        "review",
        Kind::Table(ROLE),
        "Produce a findings manifest, no commits.",
    ),
    field(
        "investigate",
        Kind::Table(ROLE),
        "Produce a findings manifest, no commits.",
    ),
    field("cleanup", Kind::Table(ROLE), "Produce commits."),
];

const GATES: &[Field] = &[
    field(
        "enforce",
        Kind::Enum(Enforcement::NAMES),
        "strict refuses blocked work; warn proceeds and says so.",
    ),
    field(
        "require_evidence",
        Kind::Bool,
        "Whether a gate verdict needs --evidence.",
    ),
    field(
        "on_fail",
        Kind::Enum(OnFail::NAMES),
        "hold keeps downstream work blocked after a failing verdict.",
    ),
];

const FENCES: &[Field] = &[
    field(
        "time_budget",
        Kind::Duration,
        "Default time budget of a run.",
    ),
    field(
        "needs_help_after_failures",
        Kind::Int { min: 1, max: 100 },
        "Failures per (task, model) — or (task, backend) for a backend without a model — before escalation.",
    ),
    field(
        "max_attempts",
        Kind::Int { min: 1, max: 100 },
        "The most attempts one run makes (continuation and corrective retries included), whatever the ledger says.",
    ),
    field(
        "max_output",
        Kind::Int {
            min: 4096,
            max: 1 << 40,
        },
        "Bytes of stdout (and of stderr) kept per attempt: the first part and the latest, the cut marked.",
    ),
    field(
        "manifest_required",
        Kind::Bool,
        "Whether a reply must be delivered as a manifest.",
    ),
];

const WORKTREE: &[Field] = &[
    field(
        "cleanup",
        Kind::Enum(WorktreeCleanup::NAMES),
        "When integrated worktrees are removed; work is never lost.",
    ),
    field(
        "port_range",
        Kind::Str,
        "Ports handed to workers as CREW_PORT, e.g. \"4100-4199\": one per live run.",
    ),
];

const PLANS: &[Field] = &[field(
    "stale_after_days",
    Kind::Int { min: 1, max: 3650 },
    "Dispatch from a plan file unchanged for longer than this warns that its assumptions may have expired.",
)];

const SUMMARY: &[Field] = &[
    field("reflex", Kind::Enum(Reflex::NAMES), "The summary shape."),
    field(
        "at",
        Kind::EnumArray(At::NAMES),
        "When the summary is printed.",
    ),
];

const SANDBOX: &[Field] = &[
    field(
        "enabled",
        Kind::Bool,
        "Whether every worker runs inside git-crew's kernel write fence (Landlock) where the kernel has it.",
    ),
    field(
        "require",
        Kind::Bool,
        "Refuse to dispatch where the write fence cannot be put up.",
    ),
    field(
        "writable",
        Kind::StrArray,
        "More paths fenced workers may write (caches, tool state); `~/` is the home folder. None may hold the repository.",
    ),
];

/// The root of `flight.toml`.
pub const ROOT: &[Field] = &[
    field(
        "version",
        Kind::Int { min: 1, max: 1 },
        "Config format version; always 1.",
    ),
    field(
        "default_backend",
        Kind::Str,
        "The backend dispatch uses when none is named.",
    ),
    field("tiers", Kind::StrArray, "Escalation order, weakest first."),
    field("backends", Kind::Named(BACKEND), "Backends by name."),
    field(
        "workers",
        Kind::Named(WORKER),
        "The roster: standing workers by name.",
    ),
    field("roles", Kind::Table(ROLES), "Per-role routing."),
    field("gates", Kind::Table(GATES), "Gate enforcement."),
    field(
        "fences",
        Kind::Table(FENCES),
        "The fences every dispatch carries.",
    ),
    field("worktree", Kind::Table(WORKTREE), "Worktree lifecycle."),
    field("plans", Kind::Table(PLANS), "Plans in .crew/plans."),
    field("summary", Kind::Table(SUMMARY), "The summary reflex."),
    field(
        "sandbox",
        Kind::Table(SANDBOX),
        "The kernel write fence around every worker.",
    ),
];
