//! The schema table: every key of `flight.toml`, its type, its doc and its shipped
//! default. One table drives validation (`walker.rs`), the JSON Schema (`json_schema.rs`),
//! the did-you-mean suggestions and the defaults layer, so a key cannot be known to one
//! and unknown to another.
//!
//! # Defaults
//!
//! Each key's default is declared on its [`Field`] (`.defaults_to(...)`), the way
//! git-absorb keeps a key's default beside its name: adding a key and giving it a default
//! is one edit. Where a default belongs to a table entry rather than to a key, it sits on
//! the table's entry: each role's sandbox on its `roles.<role>` field, the shipped
//! backends on the `backends` field.
//!
//! The defaults layer ([`DEFAULTS`]) is rendered from those declarations and then goes
//! through the same walk as every other layer, so each default is checked against its
//! key's type like any other value. `defaults.toml` beside this file is that rendering,
//! kept for people to read (the README links it, and a diagnostic about a default points
//! at its `<shipped defaults>:line:col`); a test fails when it is not exactly what the
//! schema renders, so it cannot drift.
//!
//! Why not keep the TOML file as the source, with a test comparing it to the schema?
//! Then a default would be declared twice, and the schema's copy would be one more
//! thing to keep in step. Declared here, a default has one place, next to the key's type
//! and doc, and where the key takes an enum it is spelt through the enum (a misspelt
//! value does not compile).

use std::fmt::Write;
use std::sync::LazyLock;

use super::diagnostics::join_key;
use super::values::SummaryAt as At;
use super::values::{AdapterKind, Enforcement, OnFail, Reflex, SandboxMode, WorktreeCleanup};
use DefaultValue::{Bool, Entries, Int, List, Size, Str};

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
    /// A boolean, or one of these strings (a stronger `true`).
    BoolOrEnum(&'static [&'static str]),
    Int {
        min: i64,
        max: i64,
    },
    /// A finite number (integer or float), at least zero.
    Number,
    /// A duration such as `25m`, `90s`, `1h 30m`.
    Duration,
    /// A size such as `100MiB` (a string with a unit, or a number of bytes), more than
    /// zero.
    Size,
    StrArray,
    /// An array of gitignore patterns, one line each (`[worktree] ignore`).
    PatternArray,
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
            Kind::BoolOrEnum(_) => "a boolean or a string",
            Kind::Int { .. } => "an integer",
            Kind::Number => "a number",
            Kind::Duration => "a duration string such as \"25m\"",
            Kind::Size => "a size such as \"100MiB\"",
            Kind::StrArray | Kind::EnumArray(_) => "an array of strings",
            Kind::PatternArray => "an array of gitignore patterns",
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
    /// The shipped default, if the key has one.
    pub default: Option<DefaultValue>,
}

const fn field(name: &'static str, kind: Kind, doc: &'static str) -> Field {
    Field {
        name,
        kind,
        doc,
        default: None,
    }
}

impl Field {
    /// This key with a shipped default.
    const fn defaults_to(self, value: DefaultValue) -> Field {
        Field {
            default: Some(value),
            ..self
        }
    }
}

/// The default of `fences.max_attempts`, for the code that meets a run recorded without
/// one.
pub const DEFAULT_MAX_ATTEMPTS: u32 = 5;
/// The default of `fences.max_output` (bytes).
pub const DEFAULT_MAX_OUTPUT: u64 = 8 << 20;
/// The default of `fences.max_file_size` (bytes).
pub const DEFAULT_MAX_FILE_SIZE: u64 = 100 << 20;

/// A shipped default, as declared on a [`Field`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DefaultValue {
    Str(&'static str),
    Int(i64),
    Bool(bool),
    /// A size in bytes, written with a binary unit (`100MiB`).
    Size(u64),
    List(&'static [&'static str]),
    /// The entries of a table (the shipped backends, a role's routing): keys with their
    /// defaults.
    Entries(&'static [(&'static str, DefaultValue)]),
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
    field(
        "env",
        Kind::StrMap,
        "Extra environment for the worker. CODEX_HOME or CLAUDE_CONFIG_DIR here names the lead's CLI state to seed from; a worker always gets its own.",
    ),
    field(
        "seed",
        Kind::StrArray,
        "codex and claude: files of the lead's CLI state folder copied into each worker's own home at every run start, besides the credentials (e.g. config.toml, settings.json, CLAUDE.md); the lead's hooks, MCP servers and instructions reach a worker only this way.",
    ),
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
    field("implement", Kind::Table(ROLE), "Produce commits.").defaults_to(Entries(&[(
        "sandbox",
        Str(SandboxMode::WorktreeFull.as_str()),
    )])),
    field(
        "review",
        Kind::Table(ROLE),
        "Produce a findings manifest, no commits.",
    )
    .defaults_to(Entries(&[("sandbox", Str(SandboxMode::ReadOnly.as_str()))])),
    field(
        "investigate",
        Kind::Table(ROLE),
        "Produce a findings manifest, no commits.",
    )
    .defaults_to(Entries(&[("sandbox", Str(SandboxMode::ReadOnly.as_str()))])),
    field("cleanup", Kind::Table(ROLE), "Produce commits.").defaults_to(Entries(&[(
        "sandbox",
        Str(SandboxMode::WorktreeFull.as_str()),
    )])),
];

const GATES: &[Field] = &[
    field(
        "enforce",
        Kind::Enum(Enforcement::NAMES),
        "strict refuses blocked work; warn proceeds and says so.",
    )
    .defaults_to(Str(Enforcement::Strict.as_str())),
    field(
        "require_evidence",
        Kind::Bool,
        "Whether a gate verdict needs --evidence.",
    )
    .defaults_to(Bool(true)),
    field(
        "on_fail",
        Kind::Enum(OnFail::NAMES),
        "hold keeps downstream work blocked after a failing verdict.",
    )
    .defaults_to(Str(OnFail::Hold.as_str())),
];

const FENCES: &[Field] = &[
    field(
        "time_budget",
        Kind::Duration,
        "Default time budget of a run.",
    )
    .defaults_to(Str("25m")),
    field(
        "needs_help_after_failures",
        Kind::Int { min: 1, max: 100 },
        "Failures per (task, model) — or (task, backend) for a backend without a model — before escalation.",
    )
    .defaults_to(Int(2)),
    field(
        "max_attempts",
        Kind::Int { min: 1, max: 100 },
        "The most attempts one run makes (continuation and corrective retries included), whatever the ledger says.",
    )
    .defaults_to(Int(DEFAULT_MAX_ATTEMPTS as i64)),
    field(
        "max_output",
        Kind::Int {
            min: 4096,
            max: 1 << 40,
        },
        "Bytes of stdout (and of stderr) kept per attempt: the first part and the latest, the cut marked.",
    )
    .defaults_to(Int(DEFAULT_MAX_OUTPUT as i64)),
    field(
        "max_file_size",
        Kind::Size,
        "The largest file a run may leave for git-crew to commit, and the largest object it may bring into the repository: a run over it is a scope-reject, and nothing of it is hashed.",
    )
    .defaults_to(Size(DEFAULT_MAX_FILE_SIZE)),
    field(
        "manifest_required",
        Kind::Bool,
        "Whether a reply must be delivered as a manifest.",
    )
    .defaults_to(Bool(true)),
    field(
        "max_cost_usd",
        Kind::Number,
        "The spend fence in dollars: a run that has spent this much ends (unset: no limit). A run whose cost is unknown (unpriced) is held by max_tokens only.",
    ),
    field(
        "max_tokens",
        Kind::Int {
            min: 1,
            max: 1 << 50,
        },
        "The spend fence in tokens (input and output, every attempt of the run): a run that has spent this many ends (unset: no limit).",
    ),
];

const PRICE: &[Field] = &[
    field(
        "input",
        Kind::Number,
        "Dollars per million input tokens (those not read from a cache).",
    ),
    field(
        "cached_input",
        Kind::Number,
        "Dollars per million input tokens read from a cache (unset: priced as input).",
    ),
    field(
        "output",
        Kind::Number,
        "Dollars per million output tokens (reasoning included).",
    ),
];

const WORKTREE: &[Field] = &[
    field(
        "cleanup",
        Kind::Enum(WorktreeCleanup::NAMES),
        "When integrated worktrees are removed; work is never lost.",
    )
    .defaults_to(Str(WorktreeCleanup::Conservative.as_str())),
    field(
        "port_range",
        Kind::Str,
        "Ports handed to workers as CREW_PORT, e.g. \"4100-4199\": one per live run.",
    )
    .defaults_to(Str("4100-4199")),
    field(
        "setup",
        Kind::Str,
        "A shell command (`sh -c`) run once in each new run worktree, inside the run's fence and with the worker's environment, before the worker starts (e.g. \"npm ci\"); its failure is an infrastructure error, never the worker's. Unset: none.",
    ),
    field(
        "setup_timeout",
        Kind::Duration,
        "How long the setup may take; it does not count against the run's time budget.",
    )
    .defaults_to(Str("10m")),
    field(
        "ignore",
        Kind::PatternArray,
        "More gitignore patterns git ignores in every run's worktree, beside the tool state always ignored there (__pycache__/, *.pyc, .pytest_cache/, .mypy_cache/, .ruff_cache/, .aider*): what a worker or verify leaves there that matches is never committed as work. `!pattern` takes one back.",
    )
    .defaults_to(List(&[])),
];

const PLANS: &[Field] = &[field(
    "stale_after_days",
    Kind::Int { min: 1, max: 3650 },
    "Dispatch from a plan file unchanged for longer than this warns that its assumptions may have expired.",
)
.defaults_to(Int(30))];

const SUMMARY: &[Field] = &[
    field("reflex", Kind::Enum(Reflex::NAMES), "The summary shape.")
        .defaults_to(Str(Reflex::WhatWhyHowWhen.as_str())),
    field(
        "at",
        Kind::EnumArray(At::NAMES),
        "When the summary is printed.",
    )
    .defaults_to(List(&[
        At::Dispatch.as_str(),
        At::Completion.as_str(),
        At::MicroPlan.as_str(),
    ])),
];

const SANDBOX: &[Field] = &[
    field(
        "enabled",
        Kind::Bool,
        "Whether every worker runs inside git-crew's kernel write fence (Landlock) where the kernel has it.",
    )
    .defaults_to(Bool(true)),
    field(
        "require",
        Kind::BoolOrEnum(&["landlock+ns"]),
        "Refuse to dispatch where the write fence cannot be put up (`true`), or where a worker cannot also get a private /tmp in its own namespaces (`\"landlock+ns\"`).",
    )
    .defaults_to(Bool(false)),
    field(
        "writable",
        Kind::StrArray,
        "More paths fenced workers may write (caches, tool state); `~/` is the home folder. None may hold the repository.",
    )
    .defaults_to(List(&[])),
];

const NOTIFY: &[Field] = &[
    field(
        "command",
        Kind::StrArray,
        "The argv run (in the repository, with the run result as JSON on stdin) when a run turns needs-help, done, failed, rejected or timed-out; [] runs nothing.",
    ),
    field(
        "timeout",
        Kind::Duration,
        "How long the notify command may take before its process group is killed.",
    )
    .defaults_to(Str("10s")),
];

const FLEET: &[Field] = &[
    field(
        "remote",
        Kind::Str,
        "The git remote whose refs coordinate a fleet of machines: dispatch claims the task there first; none: this machine alone.",
    ),
    field(
        "machine",
        Kind::Str,
        "This machine's name in the fleet's claims; the host's name when unset.",
    ),
    field(
        "lease",
        Kind::Duration,
        "How long a claim on the remote holds after its last renewal; a live run renews it every third of that.",
    )
    .defaults_to(Str("2m")),
];

/// The root of `flight.toml`.
pub const ROOT: &[Field] = &[
    field(
        "version",
        Kind::Int { min: 1, max: 1 },
        "Config format version; always 1.",
    )
    .defaults_to(Int(1)),
    field(
        "default_backend",
        Kind::Str,
        "The backend dispatch uses when none is named.",
    )
    .defaults_to(Str("codex")),
    field("tiers", Kind::StrArray, "Escalation order, weakest first.")
        .defaults_to(List(&["low", "mid", "high"])),
    field("backends", Kind::Named(BACKEND), "Backends by name.").defaults_to(Entries(&[
        (
            "codex",
            Entries(&[
                ("adapter", Str(AdapterKind::Codex.as_str())),
                ("command", Str("codex")),
                ("model", Str("gpt-5.6-sol")),
                ("effort", Str("high")),
                ("sandbox", Str(SandboxMode::WorktreeFull.as_str())),
                ("session_reuse", Bool(true)),
                ("concurrency", Int(3)),
                ("time_budget", Str("25m")),
                ("idle_timeout", Str("5m")),
                ("tier", Str("mid")),
            ]),
        ),
        (
            "claude",
            Entries(&[
                ("adapter", Str(AdapterKind::Claude.as_str())),
                ("command", Str("claude")),
                ("model", Str("claude-sonnet-5")),
                ("effort", Str("medium")),
                ("sandbox", Str(SandboxMode::WorktreeFull.as_str())),
                ("session_reuse", Bool(true)),
                ("concurrency", Int(3)),
                ("time_budget", Str("25m")),
                ("idle_timeout", Str("5m")),
                ("tier", Str("mid")),
            ]),
        ),
        (
            "native",
            Entries(&[
                ("adapter", Str(AdapterKind::Native.as_str())),
                ("concurrency", Int(4)),
                ("time_budget", Str("25m")),
                ("session_reuse", Bool(false)),
            ]),
        ),
    ])),
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
    field(
        "prices",
        Kind::Named(PRICE),
        "Prices by model name, for streams that report tokens only; none is shipped.",
    ),
    field("worktree", Kind::Table(WORKTREE), "Worktree lifecycle."),
    field("plans", Kind::Table(PLANS), "Plans in .crew/plans."),
    field("summary", Kind::Table(SUMMARY), "The summary reflex."),
    field(
        "sandbox",
        Kind::Table(SANDBOX),
        "The kernel write fence around every worker.",
    ),
    field(
        "notify",
        Kind::Table(NOTIFY),
        "A command told of every run that needs the lead or has ended.",
    ),
    field(
        "fleet",
        Kind::Table(FLEET),
        "Machines that share one plan through their git remote.",
    ),
];

// ---------------------------------------------------------------------------------------
// The defaults layer, rendered from the schema
// ---------------------------------------------------------------------------------------

/// The first lines of the rendered defaults.
const DEFAULTS_HEADER: &str = "\
# The shipped defaults, the lowest flight-control layer: every other layer overrides them
# key by key. Rendered from src/core/flight/schema.rs, where each default sits by its key.
";

/// The shipped defaults layer: the defaults declared in the schema, as `flight.toml` text.
pub static DEFAULTS: LazyLock<String> = LazyLock::new(|| {
    let mut out = String::from(DEFAULTS_HEADER);
    render(&mut out, "", &defaults_of(ROOT));
    out
});

/// A default value, or a table of them.
enum Node {
    Value(DefaultValue),
    Table(Vec<(&'static str, Node)>),
}

fn node(value: DefaultValue) -> Node {
    match value {
        Entries(entries) => Node::Table(entries.iter().map(|&(k, v)| (k, node(v))).collect()),
        other => Node::Value(other),
    }
}

/// The defaults of a table's keys, in schema order; a table key's own entries come
/// before the defaults of the keys below it.
fn defaults_of(fields: &[Field]) -> Vec<(&'static str, Node)> {
    let mut out = Vec::new();
    for f in fields {
        let mut entry = f.default.map(node);
        if let Kind::Table(inner) = f.kind {
            let below = defaults_of(inner);
            match &mut entry {
                _ if below.is_empty() => {}
                Some(Node::Table(entries)) => entries.extend(below),
                _ => entry = Some(Node::Table(below)),
            }
        }
        if let Some(entry) = entry {
            out.push((f.name, entry));
        }
    }
    out
}

/// Writes a table's values, then each of its tables under its `[header]` (a table that
/// holds only tables needs none).
fn render(out: &mut String, path: &str, entries: &[(&str, Node)]) {
    for (key, entry) in entries {
        if let Node::Value(value) = entry {
            let _ = writeln!(out, "{key} = {}", toml_value(*value));
        }
    }
    for (key, entry) in entries {
        if let Node::Table(inner) = entry {
            let path = join_key(path, key);
            if inner.iter().any(|(_, e)| matches!(e, Node::Value(_))) {
                let _ = write!(out, "\n[{path}]\n");
            }
            render(out, &path, inner);
        }
    }
}

fn toml_value(value: DefaultValue) -> String {
    let string = |s: &str| toml::Value::String(s.to_string()).to_string();
    match value {
        Str(s) => string(s),
        Int(n) => n.to_string(),
        Bool(b) => b.to_string(),
        Size(bytes) => string(&crate::core::size::show(bytes).replace(' ', "")),
        List(items) => format!(
            "[{}]",
            items
                .iter()
                .map(|s| string(s))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Entries(_) => unreachable!("a table is rendered under its header"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_file_is_what_the_schema_renders() {
        let file = include_str!("defaults.toml");
        assert!(
            file == DEFAULTS.as_str(),
            "src/core/flight/defaults.toml is not the defaults the schema declares; \
             replace it with:\n{}",
            *DEFAULTS
        );
    }

    /// The keys of a user-named table (`[backends.<name>]`) have no default of their own:
    /// a default there belongs to an entry, declared on the table's key.
    #[test]
    fn no_default_hides_below_a_named_table() {
        fn check(fields: &[Field], named: bool) {
            for f in fields {
                assert!(
                    !(named && f.default.is_some()),
                    "`{}` has a default below a named table: it would never be rendered",
                    f.name
                );
                match f.kind {
                    Kind::Table(inner) => check(inner, named),
                    Kind::Named(inner) => check(inner, true),
                    _ => {}
                }
            }
        }
        check(ROOT, false);
    }
}
