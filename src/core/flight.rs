//! Flight control: the routing config model, its schema, the four-layer merge with
//! provenance, and validation diagnostics (`path:line:col`, the key, a did-you-mean).
//!
//! Pure: callers read the layer files and pass their text in. One schema table drives
//! validation, the JSON Schema (`git crew flight schema`) and the suggestions, so a key
//! cannot be known to one and unknown to another.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use toml::de::{DeTable, DeValue};
use toml::{Table, Value};

/// The longest duration a key may hold: a deadline past it is no deadline (and one far
/// enough out overflows the clock).
pub const MAX_DURATION: std::time::Duration = std::time::Duration::from_secs(30 * 24 * 3600);

/// The shipped defaults layer.
pub const DEFAULTS: &str = include_str!("flight_defaults.toml");

/// Where a value came from, lowest precedence first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Layer {
    Default,
    User,
    Project,
    Invocation,
}

impl Layer {
    pub fn as_str(self) -> &'static str {
        match self {
            Layer::Default => "default",
            Layer::User => "user",
            Layer::Project => "project",
            Layer::Invocation => "invocation",
        }
    }
}

// ---------------------------------------------------------------------------------------
// The schema
// ---------------------------------------------------------------------------------------

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
    fn describe(self) -> &'static str {
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

pub const ADAPTERS: &[&str] = &["codex", "claude", "command", "native"];
pub const SANDBOXES: &[&str] = &["worktree-full", "read-only"];

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
        Kind::Enum(&["strict", "warn", "off"]),
        "strict refuses blocked work; warn proceeds and says so.",
    ),
    field(
        "require_evidence",
        Kind::Bool,
        "Whether a gate verdict needs --evidence.",
    ),
    field(
        "on_fail",
        Kind::Enum(&["hold", "continue"]),
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
        Kind::Enum(&["conservative", "eager", "never"]),
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
    field(
        "reflex",
        Kind::Enum(&["what-why-how-when"]),
        "The summary shape.",
    ),
    field(
        "at",
        Kind::EnumArray(&["dispatch", "completion", "micro-plan"]),
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

// ---------------------------------------------------------------------------------------
// Diagnostics
// ---------------------------------------------------------------------------------------

/// A problem in one layer, located as precisely as the source allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file path, or the flag (`--set k=v`) for the invocation layer.
    pub origin: String,
    /// 1-based line and column, when the origin is a file.
    pub location: Option<(usize, usize)>,
    /// The dotted key concerned (empty for a syntax error).
    pub key: String,
    pub message: String,
    pub suggestion: Option<String>,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.origin)?;
        if let Some((line, col)) = self.location {
            write!(f, ":{line}:{col}")?;
        }
        write!(f, ": ")?;
        if !self.key.is_empty() {
            write!(f, "`{}`: ", self.key)?;
        }
        write!(f, "{}", self.message)?;
        if let Some(s) = &self.suggestion {
            write!(f, " (did you mean `{s}`?)")?;
        }
        Ok(())
    }
}

/// Where each line of a text starts, so any byte offset is located in O(log lines):
/// diagnostics and provenance for every key of a large file stay linear in its size.
#[derive(Debug, Clone)]
pub struct Lines<'a> {
    text: &'a str,
    starts: Vec<usize>,
}

impl<'a> Lines<'a> {
    pub fn new(text: &'a str) -> Lines<'a> {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        Lines { text, starts }
    }

    /// The 1-based line and column of a byte offset.
    pub fn locate(&self, offset: usize) -> (usize, usize) {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line = self.starts.partition_point(|&start| start <= offset);
        let start = self.starts[line - 1];
        (line, self.text[start..offset].chars().count() + 1)
    }
}

/// Diagnostics located in one file — `path:line:col`, the dotted key, the message and a
/// did-you-mean — for every reader of git-crew's TOML files (flight layers, plans).
pub struct Located<'a> {
    origin: String,
    /// `None` for text with no lines to point at (a `--set` flag).
    lines: Option<Lines<'a>>,
    pub diagnostics: Vec<Diagnostic>,
}

impl<'a> Located<'a> {
    pub fn new(origin: &str, text: &'a str, has_lines: bool) -> Located<'a> {
        Located {
            origin: origin.to_string(),
            lines: has_lines.then(|| Lines::new(text)),
            diagnostics: Vec::new(),
        }
    }

    /// The line and column of a byte offset, when the text has lines.
    pub fn locate(&self, offset: usize) -> Option<(usize, usize)> {
        self.lines.as_ref().map(|lines| lines.locate(offset))
    }

    pub fn report(
        &mut self,
        offset: usize,
        key: &str,
        message: String,
        suggestion: Option<String>,
    ) {
        let location = self.locate(offset);
        self.diagnostics.push(Diagnostic {
            origin: self.origin.clone(),
            location,
            key: key.to_string(),
            message,
            suggestion,
        });
    }

    /// Reports `name` (at `dotted`) as a key that is not one of `known`, with the closest
    /// known one as a did-you-mean (spelt with `prefix`).
    pub fn unknown_key(
        &mut self,
        offset: usize,
        dotted: &str,
        name: &str,
        known: &[&str],
        prefix: &str,
        message: String,
    ) {
        let suggestion = did_you_mean(name, known.iter().copied()).map(|s| join_key(prefix, &s));
        self.report(offset, dotted, message, suggestion);
    }
}

/// The 1-based line and column of a byte offset in `text` (one lookup; build [`Lines`]
/// for many).
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    Lines::new(text).locate(offset)
}

/// The closest candidate to a misspelt name, when one is close enough to suggest.
pub fn did_you_mean<'a>(
    name: &str,
    candidates: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(name, c), c))
        .filter(|(score, _)| *score >= 0.8)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, c)| c.to_string())
}

/// Where a value was set.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub layer: Layer,
    /// The layer's file or flag, shared by every key it set.
    pub origin: std::sync::Arc<str>,
    pub location: Option<(usize, usize)>,
}

// ---------------------------------------------------------------------------------------
// Parsing one layer
// ---------------------------------------------------------------------------------------

/// One layer's text and where it came from.
#[derive(Debug, Clone)]
pub struct LayerSource {
    pub layer: Layer,
    /// A file path, or the flag that produced the text.
    pub origin: String,
    pub text: String,
    /// Whether diagnostics point at lines of `text` (false for flags).
    pub has_lines: bool,
}

/// A validated layer: its values and where each key was set.
#[derive(Debug, Clone, Default)]
pub struct ParsedLayer {
    pub table: Table,
    pub origins: BTreeMap<String, Origin>,
}

struct Walker<'a> {
    source: &'a LayerSource,
    /// `source.origin`, allocated once for all the keys it sets.
    origin: std::sync::Arc<str>,
    located: Located<'a>,
    origins: BTreeMap<String, Origin>,
}

impl<'a> Walker<'a> {
    fn new(source: &'a LayerSource) -> Walker<'a> {
        Walker {
            source,
            origin: source.origin.as_str().into(),
            located: Located::new(&source.origin, &source.text, source.has_lines),
            origins: BTreeMap::new(),
        }
    }

    fn report(&mut self, offset: usize, key: &str, message: String, suggestion: Option<String>) {
        self.located.report(offset, key, message, suggestion);
    }

    fn record(&mut self, key: &str, offset: usize) {
        let origin = Origin {
            layer: self.source.layer,
            origin: self.origin.clone(),
            location: self.located.locate(offset),
        };
        self.origins.insert(key.to_string(), origin);
    }

    fn table(&mut self, prefix: &str, fields: &[Field], table: &DeTable<'_>) -> Table {
        let mut out = Table::new();
        for (key, value) in table.iter() {
            let name: &str = key.get_ref();
            let dotted = join_key(prefix, name);
            let Some(field) = fields.iter().find(|f| f.name == name) else {
                let known: Vec<&str> = fields.iter().map(|f| f.name).collect();
                let message = format!("unknown key (known here: {})", known.join(", "));
                self.located
                    .unknown_key(key.span().start, &dotted, name, &known, prefix, message);
                continue;
            };
            if let Some(v) = self.value(&dotted, field.kind, value) {
                self.record(&dotted, key.span().start);
                out.insert(name.to_string(), v);
            }
        }
        out
    }

    fn value(
        &mut self,
        dotted: &str,
        kind: Kind,
        value: &toml::Spanned<DeValue<'_>>,
    ) -> Option<Value> {
        let at = value.span().start;
        let wrong = |w: &mut Self| {
            w.report(
                at,
                dotted,
                format!(
                    "expected {}, found {}",
                    kind.describe(),
                    value.get_ref().type_str()
                ),
                None,
            );
            None
        };
        match (kind, value.get_ref()) {
            (Kind::Table(fields), DeValue::Table(t)) => {
                Some(Value::Table(self.table(dotted, fields, t)))
            }
            (Kind::Named(fields), DeValue::Table(t)) => {
                let mut out = Table::new();
                for (name, entry) in t.iter() {
                    let entry_key = join_key(dotted, name.get_ref());
                    match entry.get_ref() {
                        DeValue::Table(inner) => {
                            let v = self.table(&entry_key, fields, inner);
                            self.record(&entry_key, name.span().start);
                            out.insert(name.get_ref().to_string(), Value::Table(v));
                        }
                        other => self.report(
                            entry.span().start,
                            &entry_key,
                            format!("expected a table, found {}", other.type_str()),
                            None,
                        ),
                    }
                }
                Some(Value::Table(out))
            }
            (Kind::Str, DeValue::String(s)) => Some(Value::String(s.to_string())),
            (Kind::Enum(allowed), DeValue::String(s)) => {
                if allowed.contains(&s.as_ref()) {
                    Some(Value::String(s.to_string()))
                } else {
                    let suggestion = did_you_mean(s, allowed.iter().copied());
                    self.report(
                        at,
                        dotted,
                        format!("`{s}` is not one of {}", allowed.join(", ")),
                        suggestion,
                    );
                    None
                }
            }
            (Kind::Bool, DeValue::Boolean(b)) => Some(Value::Boolean(*b)),
            (Kind::Int { min, max }, DeValue::Integer(i)) => {
                match i64::from_str_radix(i.as_str(), i.radix()) {
                    Ok(n) if (min..=max).contains(&n) => Some(Value::Integer(n)),
                    _ => {
                        let range = if min == max {
                            format!("must be {min}")
                        } else {
                            format!("must be between {min} and {max}")
                        };
                        self.report(at, dotted, range, None);
                        None
                    }
                }
            }
            (Kind::Duration, DeValue::String(s)) => match humantime::parse_duration(s) {
                Ok(d) if d > MAX_DURATION => {
                    self.report(
                        at,
                        dotted,
                        format!("`{s}` is longer than the most a run may take (30 days)"),
                        None,
                    );
                    None
                }
                Ok(d) if !d.is_zero() => Some(Value::String(s.to_string())),
                Ok(_) => {
                    self.report(
                        at,
                        dotted,
                        "a duration must be longer than zero".into(),
                        None,
                    );
                    None
                }
                Err(e) => {
                    self.report(
                        at,
                        dotted,
                        format!("`{s}` is not a duration ({e}); write e.g. \"25m\" or \"1h 30m\""),
                        None,
                    );
                    None
                }
            },
            (Kind::StrArray | Kind::EnumArray(_), DeValue::Array(items)) => {
                let mut out = Vec::new();
                for (i, item) in items.iter().enumerate() {
                    let item_key = format!("{dotted}[{i}]");
                    match item.get_ref() {
                        DeValue::String(s) => {
                            if let Kind::EnumArray(allowed) = kind
                                && !allowed.contains(&s.as_ref())
                            {
                                let suggestion = did_you_mean(s, allowed.iter().copied());
                                self.report(
                                    item.span().start,
                                    &item_key,
                                    format!("`{s}` is not one of {}", allowed.join(", ")),
                                    suggestion,
                                );
                                continue;
                            }
                            out.push(Value::String(s.to_string()));
                        }
                        other => self.report(
                            item.span().start,
                            &item_key,
                            format!("expected a string, found {}", other.type_str()),
                            None,
                        ),
                    }
                }
                Some(Value::Array(out))
            }
            (Kind::StrMap, DeValue::Table(t)) => {
                let mut out = Table::new();
                for (name, item) in t.iter() {
                    match item.get_ref() {
                        DeValue::String(s) => {
                            self.record(&join_key(dotted, name.get_ref()), name.span().start);
                            out.insert(name.get_ref().to_string(), Value::String(s.to_string()));
                        }
                        other => self.report(
                            item.span().start,
                            &join_key(dotted, name.get_ref()),
                            format!("expected a string, found {}", other.type_str()),
                            None,
                        ),
                    }
                }
                Some(Value::Table(out))
            }
            _ => wrong(self),
        }
    }
}

fn join_key(prefix: &str, name: &str) -> String {
    if prefix.is_empty() {
        name.to_string()
    } else {
        format!("{prefix}.{name}")
    }
}

/// Parses and validates one layer against the schema; every problem is reported.
pub fn parse_layer(source: &LayerSource) -> Result<ParsedLayer, Vec<Diagnostic>> {
    let doc = match DeTable::parse(&source.text) {
        Ok(doc) => doc,
        Err(e) => {
            let mut walker = Walker::new(source);
            let offset = e.span().map_or(0, |s| s.start);
            let message = e.message().trim().to_string();
            walker.report(offset, "", format!("malformed TOML: {message}"), None);
            return Err(walker.located.diagnostics);
        }
    };
    let mut walker = Walker::new(source);
    let table = walker.table("", ROOT, doc.get_ref());
    if walker.located.diagnostics.is_empty() {
        Ok(ParsedLayer {
            table,
            origins: walker.origins,
        })
    } else {
        Err(walker.located.diagnostics)
    }
}

// ---------------------------------------------------------------------------------------
// Merging
// ---------------------------------------------------------------------------------------

/// Merges `overlay` into `base` key by key: tables merge, anything else replaces.
fn merge_tables(base: &mut Table, overlay: Table) {
    for (key, value) in overlay {
        match (base.get_mut(&key), value) {
            (Some(Value::Table(b)), Value::Table(o)) => merge_tables(b, o),
            (_, value) => {
                base.insert(key, value);
            }
        }
    }
}

/// The invocation layer as given on the command line.
#[derive(Debug, Clone, Default)]
pub struct Invocation {
    pub backend: Option<String>,
    pub model: Option<String>,
    pub effort: Option<String>,
    pub concurrency: Option<String>,
    pub time_budget: Option<String>,
    /// `dotted.key=value` pairs, applied in order.
    pub set: Vec<String>,
}

/// Renders one `--set` pair as a TOML document; the value is TOML when it parses as
/// such, else a plain string.
fn set_document(key: &str, raw: &str) -> String {
    let key = key
        .split('.')
        .map(|part| toml_string(part.trim()))
        .collect::<Vec<_>>()
        .join(".");
    let value = if DeValue::parse(raw).is_ok() {
        raw.to_string()
    } else {
        toml_string(raw)
    };
    format!("{key} = {value}\n")
}

fn toml_string(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

fn invocation_source(origin: String, text: String) -> LayerSource {
    LayerSource {
        layer: Layer::Invocation,
        origin,
        text,
        has_lines: false,
    }
}

/// The `--set` pairs as layer documents, in the order they apply.
fn set_sources(inv: &Invocation) -> Result<Vec<LayerSource>, Diagnostic> {
    inv.set
        .iter()
        .map(|pair| match pair.split_once('=') {
            Some((key, value)) => Ok(invocation_source(
                format!("--set {pair}"),
                set_document(key, value),
            )),
            None => Err(Diagnostic {
                origin: format!("--set {pair}"),
                location: None,
                key: pair.clone(),
                message: "expected dotted.key=value".into(),
                suggestion: None,
            }),
        })
        .collect()
}

/// The routing flags as layer documents: `--backend`, then the per-backend flags, which
/// go to `backend` (the chosen backend) when it exists.
fn flag_sources(inv: &Invocation, backend: Option<&str>) -> Vec<LayerSource> {
    let mut out = Vec::new();
    if let Some(b) = &inv.backend {
        out.push(invocation_source(
            format!("--backend {b}"),
            set_document("default_backend", &toml_string(b)),
        ));
    }
    let Some(backend) = backend else {
        return out;
    };
    let flags = [
        ("model", &inv.model, true),
        ("effort", &inv.effort, true),
        ("concurrency", &inv.concurrency, false),
        ("time_budget", &inv.time_budget, true),
    ];
    for (name, value, is_string) in flags {
        if let Some(v) = value {
            let raw = if is_string { toml_string(v) } else { v.clone() };
            let flag = format!("--{} {v}", name.replace('_', "-"));
            out.push(invocation_source(
                flag,
                set_document(&format!("backends.{backend}.{name}"), &raw),
            ));
        }
    }
    out
}

/// The resolved config, with every key's provenance.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub flight: Flight,
    pub table: Table,
    pub origins: BTreeMap<String, Origin>,
}

impl Resolved {
    /// `dotted.key` → layer for every leaf value (SPEC §2 `sources`).
    pub fn sources(&self) -> BTreeMap<String, Layer> {
        let mut out = BTreeMap::new();
        leaves("", &self.table, &mut |key, _| {
            let layer = self.origin_of(key).map_or(Layer::Default, |o| o.layer);
            out.insert(key.to_string(), layer);
        });
        out
    }

    /// The origin of a key, or of the closest enclosing key that has one.
    pub fn origin_of(&self, key: &str) -> Option<&Origin> {
        let mut key = key;
        loop {
            if let Some(o) = self.origins.get(key) {
                return Some(o);
            }
            key = &key[..key.rfind('.')?];
        }
    }
}

/// Calls `f` for every leaf (non-table value) with its dotted key.
pub fn leaves(prefix: &str, table: &Table, f: &mut dyn FnMut(&str, &Value)) {
    for (key, value) in table {
        let dotted = join_key(prefix, key);
        match value {
            Value::Table(t) => leaves(&dotted, t, f),
            other => f(&dotted, other),
        }
    }
}

/// Resolves the layers: shipped defaults, then `files` (user, project) in order, then the
/// invocation. Every layer is validated on its own; then the merged result is checked as
/// a whole (references between keys).
pub fn resolve(
    files: &[LayerSource],
    invocation: &Invocation,
) -> Result<Resolved, Vec<Diagnostic>> {
    let defaults = LayerSource {
        layer: Layer::Default,
        origin: "<shipped defaults>".into(),
        text: DEFAULTS.into(),
        has_lines: true,
    };
    let mut table = Table::new();
    let mut origins = BTreeMap::new();
    let mut diagnostics = Vec::new();
    let mut apply = |source: &LayerSource, table: &mut Table, diagnostics: &mut Vec<Diagnostic>| {
        match parse_layer(source) {
            Ok(parsed) => {
                merge_tables(table, parsed.table);
                origins.extend(parsed.origins);
            }
            Err(d) => diagnostics.extend(d),
        }
    };
    apply(&defaults, &mut table, &mut diagnostics);
    for file in files {
        apply(file, &mut table, &mut diagnostics);
    }
    if !diagnostics.is_empty() {
        return Err(diagnostics);
    }
    match set_sources(invocation) {
        Ok(sources) => {
            for source in &sources {
                apply(source, &mut table, &mut diagnostics);
            }
        }
        Err(d) => diagnostics.push(d),
    }
    // The per-backend flags follow the backend this invocation routes to; an unknown one
    // is reported by the reference check below, once.
    let chosen = invocation.backend.clone().or_else(|| {
        table
            .get("default_backend")
            .and_then(Value::as_str)
            .map(String::from)
    });
    let known = chosen.filter(|b| {
        table
            .get("backends")
            .and_then(Value::as_table)
            .is_some_and(|t| t.contains_key(b))
    });
    for source in &flag_sources(invocation, known.as_deref()) {
        apply(source, &mut table, &mut diagnostics);
    }
    if !diagnostics.is_empty() {
        return Err(diagnostics);
    }
    let flight: Flight = match Value::Table(table.clone()).try_into() {
        Ok(flight) => flight,
        Err(e) => {
            return Err(vec![Diagnostic {
                origin: "flight".into(),
                location: None,
                key: String::new(),
                message: format!("the merged config is incomplete: {e}"),
                suggestion: None,
            }]);
        }
    };
    let resolved = Resolved {
        flight,
        table,
        origins,
    };
    let problems = check_references(&resolved);
    if problems.is_empty() {
        Ok(resolved)
    } else {
        Err(problems)
    }
}

/// Checks what the schema alone cannot: keys that name other keys.
fn check_references(resolved: &Resolved) -> Vec<Diagnostic> {
    let flight = &resolved.flight;
    let mut out = Vec::new();
    let mut report = |key: &str, message: String, suggestion: Option<String>| {
        let origin = resolved.origin_of(key);
        out.push(Diagnostic {
            origin: origin.map_or_else(|| "flight".to_string(), |o| o.origin.to_string()),
            location: origin.and_then(|o| o.location),
            key: key.to_string(),
            message,
            suggestion,
        });
    };
    let backend_names = || flight.backends.keys().map(String::as_str);
    // The key is spelt out only for a name that is wrong (a roster can be long).
    let mut check_backend = |key: &dyn Fn() -> String, name: &str| {
        if !flight.backends.contains_key(name) {
            let known: Vec<&str> = backend_names().collect();
            report(
                &key(),
                format!("unknown backend `{name}` (known: {})", known.join(", ")),
                did_you_mean(name, backend_names()),
            );
        }
    };
    check_backend(&|| "default_backend".into(), &flight.default_backend);
    for (name, worker) in &flight.workers {
        check_backend(&|| format!("workers.{name}.backend"), &worker.backend);
    }
    for (name, role) in &flight.roles {
        if let Some(backend) = &role.backend {
            check_backend(&|| format!("roles.{name}.backend"), backend);
        }
    }
    let mut seen = Vec::new();
    if flight.tiers.is_empty() {
        report("tiers", "at least one tier is needed".into(), None);
    }
    for tier in &flight.tiers {
        if seen.contains(&tier) {
            report("tiers", format!("tier `{tier}` is listed twice"), None);
        }
        seen.push(tier);
    }
    for (name, backend) in &flight.backends {
        let key = format!("backends.{name}");
        match backend.adapter.as_deref() {
            None => report(
                &key,
                format!(
                    "backend `{name}` needs an `adapter` ({})",
                    ADAPTERS.join(", ")
                ),
                None,
            ),
            Some("command") if backend.argv.as_ref().is_none_or(Vec::is_empty) => report(
                &format!("{key}.argv"),
                format!("backend `{name}` uses the command adapter and needs a non-empty `argv`"),
                None,
            ),
            _ => {}
        }
        if let Some(tier) = &backend.tier
            && !flight.tiers.contains(tier)
        {
            report(
                &format!("{key}.tier"),
                format!(
                    "tier `{tier}` is not in `tiers` ({})",
                    flight.tiers.join(", ")
                ),
                did_you_mean(tier, flight.tiers.iter().map(String::as_str)),
            );
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// The typed, resolved config
// ---------------------------------------------------------------------------------------

/// The resolved routing config (every layer merged and validated).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flight {
    pub version: i64,
    pub default_backend: String,
    pub tiers: Vec<String>,
    #[serde(default)]
    pub backends: BTreeMap<String, Backend>,
    #[serde(default)]
    pub workers: BTreeMap<String, Worker>,
    #[serde(default)]
    pub roles: BTreeMap<String, RoleRouting>,
    pub gates: Gates,
    pub fences: Fences,
    pub worktree: WorktreePolicy,
    pub plans: PlansPolicy,
    pub summary: SummaryPolicy,
    pub sandbox: SandboxPolicy,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SandboxPolicy {
    pub enabled: bool,
    pub require: bool,
    pub writable: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Backend {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adapter: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_reuse: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_budget: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extra_args: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argv: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_argv: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Worker {
    pub backend: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RoleRouting {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_budget: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Gates {
    pub enforce: String,
    pub require_evidence: bool,
    pub on_fail: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Fences {
    pub time_budget: String,
    pub needs_help_after_failures: i64,
    pub max_attempts: i64,
    pub max_output: i64,
    pub manifest_required: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorktreePolicy {
    pub cleanup: String,
    pub port_range: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlansPolicy {
    pub stale_after_days: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SummaryPolicy {
    pub reflex: String,
    pub at: Vec<String>,
}

// ---------------------------------------------------------------------------------------
// JSON Schema
// ---------------------------------------------------------------------------------------

/// The JSON Schema of `flight.toml`, for editors (taplo, VS Code Even Better TOML).
pub fn json_schema() -> serde_json::Value {
    let mut root = table_schema(ROOT);
    root["$schema"] = "https://json-schema.org/draft-07/schema#".into();
    root["$id"] = "https://git-crew.dev/schema/flight.json".into();
    root["title"] = "git-crew flight control".into();
    root["description"] = "Routing config of git-crew: .crew/flight.toml (project) or ~/.config/git-crew/flight.toml (user).".into();
    root
}

fn table_schema(fields: &[Field]) -> serde_json::Value {
    let properties: serde_json::Map<String, serde_json::Value> = fields
        .iter()
        .map(|f| {
            let mut schema = kind_schema(f.kind);
            schema["description"] = f.doc.into();
            (f.name.to_string(), schema)
        })
        .collect();
    serde_json::json!({
        "type": "object",
        "properties": properties,
        "additionalProperties": false,
    })
}

fn kind_schema(kind: Kind) -> serde_json::Value {
    use serde_json::json;
    match kind {
        Kind::Table(fields) => table_schema(fields),
        Kind::Named(fields) => {
            json!({"type": "object", "additionalProperties": table_schema(fields)})
        }
        Kind::Str => json!({"type": "string"}),
        Kind::Enum(values) => json!({"type": "string", "enum": values}),
        Kind::Bool => json!({"type": "boolean"}),
        Kind::Int { min, max } => json!({"type": "integer", "minimum": min, "maximum": max}),
        Kind::Duration => {
            json!({"type": "string", "pattern": "^\\s*[0-9]+\\s*[a-zA-Zµ]+(\\s*[0-9]+\\s*[a-zA-Zµ]+)*\\s*$"})
        }
        Kind::StrArray => json!({"type": "array", "items": {"type": "string"}}),
        Kind::EnumArray(values) => {
            json!({"type": "array", "items": {"type": "string", "enum": values}})
        }
        Kind::StrMap => json!({"type": "object", "additionalProperties": {"type": "string"}}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_locate_every_offset_as_a_scan_would() {
        let text = "a = 1\n\n[b]\nc = \"é\"\nlast";
        for offset in 0..=text.len() + 2 {
            let mut o = offset.min(text.len());
            while !text.is_char_boundary(o) {
                o -= 1;
            }
            let before = &text[..o];
            let line = before.matches('\n').count() + 1;
            let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
            assert_eq!(Lines::new(text).locate(offset), (line, col), "{offset}");
        }
    }

    fn file(layer: Layer, origin: &str, text: &str) -> LayerSource {
        LayerSource {
            layer,
            origin: origin.into(),
            text: text.into(),
            has_lines: true,
        }
    }

    fn errors(files: &[LayerSource], inv: &Invocation) -> Vec<String> {
        resolve(files, inv)
            .unwrap_err()
            .iter()
            .map(|d| d.to_string())
            .collect()
    }

    #[test]
    fn the_shipped_defaults_resolve() {
        let r = resolve(&[], &Invocation::default()).unwrap();
        assert_eq!(r.flight.default_backend, "codex");
        assert_eq!(r.flight.tiers, ["low", "mid", "high"]);
        assert_eq!(
            r.flight.backends["claude"].adapter.as_deref(),
            Some("claude")
        );
        assert!(r.sources().values().all(|l| *l == Layer::Default));
    }

    #[test]
    fn layers_merge_key_by_key() {
        let user = file(
            Layer::User,
            "user.toml",
            "[backends.codex]\nmodel = \"user-model\"\neffort = \"low\"\nenv = { A = \"1\" }\n",
        );
        let project = file(
            Layer::Project,
            ".crew/flight.toml",
            "[backends.codex]\neffort = \"medium\"\nenv = { B = \"2\" }\n",
        );
        let r = resolve(&[user, project], &Invocation::default()).unwrap();
        let codex = &r.flight.backends["codex"];
        assert_eq!(codex.model.as_deref(), Some("user-model"));
        assert_eq!(codex.effort.as_deref(), Some("medium"));
        assert_eq!(codex.concurrency, Some(3));
        let sources = r.sources();
        assert_eq!(sources["backends.codex.env.A"], Layer::User);
        assert_eq!(sources["backends.codex.env.B"], Layer::Project);
        assert_eq!(sources["backends.codex.model"], Layer::User);
        assert_eq!(sources["backends.codex.effort"], Layer::Project);
        assert_eq!(sources["backends.codex.concurrency"], Layer::Default);
    }

    #[test]
    fn the_invocation_layer_wins_and_follows_the_chosen_backend() {
        let inv = Invocation {
            backend: Some("claude".into()),
            model: Some("claude-opus".into()),
            concurrency: Some("7".into()),
            time_budget: Some("10m".into()),
            set: vec![
                "gates.enforce=warn".into(),
                "backends.codex.extra_args=[\"-c\", \"x=1\"]".into(),
            ],
            ..Invocation::default()
        };
        let r = resolve(&[], &inv).unwrap();
        assert_eq!(r.flight.default_backend, "claude");
        assert_eq!(
            r.flight.backends["claude"].model.as_deref(),
            Some("claude-opus")
        );
        assert_eq!(r.flight.backends["claude"].concurrency, Some(7));
        assert_eq!(
            r.flight.backends["codex"].model.as_deref(),
            Some("gpt-5.6-sol")
        );
        assert_eq!(r.flight.gates.enforce, "warn");
        assert_eq!(
            r.flight.backends["codex"].extra_args.as_deref(),
            Some(&["-c".to_string(), "x=1".to_string()][..])
        );
        let sources = r.sources();
        assert_eq!(sources["default_backend"], Layer::Invocation);
        assert_eq!(sources["backends.claude.time_budget"], Layer::Invocation);
        assert_eq!(sources["gates.enforce"], Layer::Invocation);
    }

    #[test]
    fn set_default_backend_steers_the_routing_flags() {
        for value in ["claude", "'claude'", "\"claude\""] {
            let inv = Invocation {
                model: Some("m".into()),
                set: vec![format!("default_backend={value}")],
                ..Invocation::default()
            };
            let r = resolve(&[], &inv).unwrap();
            assert_eq!(
                r.flight.backends["claude"].model.as_deref(),
                Some("m"),
                "{value}"
            );
            assert_eq!(
                r.flight.backends["codex"].model.as_deref(),
                Some("gpt-5.6-sol")
            );
        }
    }

    #[test]
    fn an_unknown_backend_is_one_error_not_two() {
        let inv = Invocation {
            backend: Some("claud".into()),
            model: Some("m".into()),
            ..Invocation::default()
        };
        let errs = errors(&[], &inv);
        assert_eq!(errs.len(), 1, "{errs:#?}");
    }

    #[test]
    fn unknown_keys_are_located_and_suggested() {
        let project = file(
            Layer::Project,
            ".crew/flight.toml",
            "version = 1\n\n[backends.codex]\nmodle = \"x\"\n",
        );
        assert_eq!(
            errors(&[project], &Invocation::default()),
            [
                ".crew/flight.toml:4:1: `backends.codex.modle`: unknown key (known here: adapter, command, model, effort, sandbox, session_reuse, concurrency, time_budget, idle_timeout, tier, extra_args, env, argv, resume_argv, note) (did you mean `backends.codex.model`?)"
            ]
        );
    }

    #[test]
    fn wrong_types_and_values_are_reported_each() {
        let project = file(
            Layer::Project,
            "p.toml",
            "tiers = \"mid\"\n[backends.codex]\nconcurrency = \"3\"\nsandbox = \"read-onyl\"\ntime_budget = \"soon\"\n[roles.reviwe]\n",
        );
        let errs = errors(&[project], &Invocation::default());
        assert_eq!(errs.len(), 5, "{errs:#?}");
        assert_eq!(
            errs[0],
            "p.toml:3:15: `backends.codex.concurrency`: expected an integer, found string"
        );
        assert!(errs[1].starts_with("p.toml:4:11: `backends.codex.sandbox`: `read-onyl` is not one of worktree-full, read-only (did you mean `read-only`?)"));
        assert!(
            errs[2]
                .starts_with("p.toml:5:15: `backends.codex.time_budget`: `soon` is not a duration")
        );
        assert!(
            errs[3].contains("`roles.reviwe`: unknown key")
                && errs[3].contains("did you mean `roles.review`?")
        );
        assert_eq!(
            errs[4],
            "p.toml:1:9: `tiers`: expected an array of strings, found string"
        );
    }

    #[test]
    fn malformed_toml_gives_a_location() {
        let user = file(Layer::User, "u.toml", "version = 1\n[backends.codex\n");
        let errs = errors(&[user], &Invocation::default());
        assert_eq!(errs.len(), 1);
        assert!(errs[0].starts_with("u.toml:2:"), "{}", errs[0]);
        assert!(errs[0].contains("malformed TOML"));
    }

    #[test]
    fn references_between_keys_are_checked_against_the_layer_that_set_them() {
        let project = file(
            Layer::Project,
            "p.toml",
            "default_backend = \"codx\"\n[backends.script]\nadapter = \"command\"\ntier = \"top\"\n[backends.bare]\ncommand = \"x\"\n[workers.w1]\nbackend = \"nope\"\n",
        );
        let errs = errors(&[project], &Invocation::default());
        assert!(errs.contains(&"p.toml:1:1: `default_backend`: unknown backend `codx` (known: bare, claude, codex, native, script) (did you mean `codex`?)".to_string()), "{errs:#?}");
        assert!(
            errs.iter().any(|e| e
                .starts_with("p.toml:5:11: `backends.bare`: backend `bare` needs an `adapter`")),
            "{errs:#?}"
        );
        assert!(
            errs.iter()
                .any(|e| e.contains("`backends.script.argv`") && e.contains("command adapter"))
        );
        assert!(errs.iter().any(|e| {
            e.starts_with("p.toml:4:1: `backends.script.tier`: tier `top` is not in `tiers`")
        }));
        assert!(
            errs.iter()
                .any(|e| e.starts_with("p.toml:8:1: `workers.w1.backend`: unknown backend `nope`"))
        );
    }

    #[test]
    fn invocation_errors_name_the_flag() {
        let inv = Invocation {
            concurrency: Some("lots".into()),
            set: vec!["fences.time_budgte=5m".into(), "novalue".into()],
            ..Invocation::default()
        };
        let errs = errors(&[], &inv);
        assert_eq!(
            errs,
            [
                "--set novalue: `novalue`: expected dotted.key=value",
                "--concurrency lots: `backends.codex.concurrency`: expected an integer, found string"
            ]
        );
        let inv = Invocation {
            concurrency: Some("lots".into()),
            set: vec!["fences.time_budgte=5m".into()],
            ..Invocation::default()
        };
        let errs = errors(&[], &inv);
        assert!(
            errs[0].starts_with("--set fences.time_budgte=5m: `fences.time_budgte`: unknown key")
        );
        assert!(errs[0].ends_with("(did you mean `fences.time_budget`?)"));
        assert_eq!(
            errs[1],
            "--concurrency lots: `backends.codex.concurrency`: expected an integer, found string"
        );
        let inv = Invocation {
            backend: Some("claud".into()),
            ..Invocation::default()
        };
        let errs = errors(&[], &inv);
        assert!(errs[0].starts_with("--backend claud: `default_backend`: unknown backend `claud`"));
        assert!(errs[0].ends_with("(did you mean `claude`?)"));
    }

    #[test]
    fn the_schema_knows_every_key_of_the_defaults() {
        let schema = json_schema();
        let r = resolve(&[], &Invocation::default()).unwrap();
        leaves("", &r.table, &mut |key, _| {
            let mut node = &schema;
            for part in key.split('.') {
                node = node["properties"]
                    .get(part)
                    .unwrap_or(&node["additionalProperties"]);
                assert!(node.is_object(), "{key} not in schema");
            }
        });
        assert_eq!(
            schema["properties"]["backends"]["additionalProperties"]["additionalProperties"],
            false
        );
    }

    #[test]
    fn suggestions_need_a_close_match() {
        assert_eq!(
            did_you_mean("modle", ["model", "effort"]),
            Some("model".into())
        );
        assert_eq!(did_you_mean("zzz", ["model", "effort"]), None);
    }
}
