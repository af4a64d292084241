//! Plans (SPEC §7): tasks in waves and the gates between them, parsed and validated with
//! every problem located (`path:line:col`), and the derived status of every task —
//! `done`, `in-flight`, `ready` or `blocked` with its blockers — computed from facts the
//! caller gathers. A status is never stored: a plan that stores one is rejected.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

use serde::Serialize;
use toml::de::{DeTable, DeValue};

use super::flight::{Diagnostic, Enforcement, OnFail, did_you_mean};

/// One task of a plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Task {
    pub id: String,
    pub wave: u32,
    pub role: crate::core::scope::Role,
    pub scope: Vec<String>,
    pub prompt: Option<String>,
    pub prompt_file: Option<String>,
    pub verify: Option<String>,
    /// Worker-hours.
    pub size: Option<f64>,
    pub depends_on: Vec<String>,
    pub worker: Option<String>,
}

/// One gate: evidence measured before the waves it gates may start.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Gate {
    pub id: String,
    pub measure: Option<String>,
    pub required_evidence: Option<String>,
    pub closes_wave: Option<u32>,
    pub gates_waves: Vec<u32>,
}

/// A parsed, validated plan.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Plan {
    /// The plan's name: its file name without `.toml`.
    pub id: String,
    pub north_star: Option<String>,
    pub tasks: Vec<Task>,
    pub gates: Vec<Gate>,
}

impl Plan {
    pub fn task(&self, id: &str) -> Option<&Task> {
        self.tasks.iter().find(|t| t.id == id)
    }

    pub fn gate(&self, id: &str) -> Option<&Gate> {
        self.gates.iter().find(|g| g.id == id)
    }

    /// The waves, in order.
    pub fn waves(&self) -> Vec<u32> {
        let set: BTreeSet<u32> = self.tasks.iter().map(|t| t.wave).collect();
        set.into_iter().collect()
    }

    /// The gate that closes wave `n`, if one does.
    pub fn closing_gate(&self, wave: u32) -> Option<&Gate> {
        self.gates.iter().find(|g| g.closes_wave == Some(wave))
    }
}

const PLAN_KEYS: &[&str] = &["id", "north_star"];
const TASK_KEYS: &[&str] = &[
    "id",
    "wave",
    "role",
    "scope",
    "prompt",
    "prompt_file",
    "verify",
    "size",
    "depends_on",
    "worker",
];
const GATE_KEYS: &[&str] = &[
    "id",
    "measure",
    "required_evidence",
    "closes_wave",
    "gates_waves",
];
const ROLES: &[&str] = &["implement", "review", "investigate", "cleanup"];
/// A task id becomes part of a branch name (`crew/<task>/<run>`): letters, digits, `-`,
/// `_`, `.` and `/`, and nothing git refuses in a ref (`..`, `.lock`, a leading `.`).
pub fn check_task_id(task: &str) -> Result<(), String> {
    let ok = !task.is_empty()
        && task.len() <= 100
        && task
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
        && !task.starts_with(['-', '.', '/'])
        && !task.ends_with(['/', '.'])
        && !task.contains("..")
        && !task.contains("//")
        && !task
            .split('/')
            .any(|part| part.starts_with('.') || part.ends_with(".lock"));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{task}` cannot be a task id: use letters, digits, `-`, `_`, `.` and `/` (it becomes part of a branch name)"
        ))
    }
}

/// Keys that would store what is derived.
const STATUS_KEYS: &[&str] = &["status", "state", "blocked", "done"];

/// Reads a plan, reporting through the same located diagnostics as the flight layers.
struct Reader<'a> {
    located: super::flight::Located<'a>,
}

type Item<'a> = toml::Spanned<DeValue<'a>>;

impl Reader<'_> {
    fn report(&mut self, offset: usize, key: &str, message: String, suggestion: Option<String>) {
        self.located.report(offset, key, message, suggestion);
    }

    /// Reports unknown and stored-status keys of one table.
    fn keys(&mut self, prefix: &str, table: &DeTable<'_>, known: &[&str]) {
        for (key, _) in table.iter() {
            let name = key.get_ref().as_ref();
            if known.contains(&name) {
                continue;
            }
            let dotted = format!("{prefix}.{name}");
            if STATUS_KEYS.contains(&name) {
                self.report(
                    key.span().start,
                    &dotted,
                    "a status is derived (done, in-flight, ready, blocked), never stored: \
                     `blocked` comes from unfinished dependencies and gates without a passing \
                     verdict; remove this key"
                        .into(),
                    None,
                );
            } else {
                self.located.unknown_key(
                    key.span().start,
                    &dotted,
                    name,
                    known,
                    "",
                    "unknown key".into(),
                );
            }
        }
    }

    fn string(&mut self, key: &str, item: Option<&Item<'_>>) -> Option<String> {
        let item = item?;
        match item.get_ref() {
            DeValue::String(s) => Some(s.to_string()),
            other => {
                self.report(
                    item.span().start,
                    key,
                    format!("expected a string, found {}", other.type_str()),
                    None,
                );
                None
            }
        }
    }

    fn strings(&mut self, key: &str, item: Option<&Item<'_>>) -> Vec<(String, usize)> {
        let Some(item) = item else {
            return Vec::new();
        };
        let DeValue::Array(items) = item.get_ref() else {
            self.report(
                item.span().start,
                key,
                format!(
                    "expected an array of strings, found {}",
                    item.get_ref().type_str()
                ),
                None,
            );
            return Vec::new();
        };
        let mut out = Vec::new();
        for (i, entry) in items.iter().enumerate() {
            match entry.get_ref() {
                DeValue::String(s) => out.push((s.to_string(), entry.span().start)),
                other => self.report(
                    entry.span().start,
                    &format!("{key}[{i}]"),
                    format!("expected a string, found {}", other.type_str()),
                    None,
                ),
            }
        }
        out
    }

    fn wave(&mut self, key: &str, item: &Item<'_>) -> Option<u32> {
        match item.get_ref() {
            DeValue::Integer(i) => match u32::from_str_radix(i.as_str(), i.radix()) {
                Ok(n) if n >= 1 => Some(n),
                _ => {
                    self.report(
                        item.span().start,
                        key,
                        "a wave is a number from 1".into(),
                        None,
                    );
                    None
                }
            },
            other => {
                self.report(
                    item.span().start,
                    key,
                    format!("expected a wave number, found {}", other.type_str()),
                    None,
                );
                None
            }
        }
    }

    fn size(&mut self, key: &str, item: Option<&Item<'_>>) -> Option<f64> {
        let item = item?;
        let value = match item.get_ref() {
            DeValue::Float(f) => f.as_str().parse::<f64>().ok(),
            DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix())
                .ok()
                .map(|n| n as f64),
            _ => None,
        };
        match value {
            Some(v) if v.is_finite() && v > 0.0 => Some(v),
            _ => {
                self.report(
                    item.span().start,
                    key,
                    "a size is a positive number of worker-hours".into(),
                    None,
                );
                None
            }
        }
    }

    /// The array of tables `[[name]]`, each with its span.
    fn tables<'t>(&mut self, doc: &'t DeTable<'t>, name: &str) -> Vec<(&'t DeTable<'t>, usize)> {
        let Some(item) = doc.get(name) else {
            return Vec::new();
        };
        match item.get_ref() {
            DeValue::Array(items) => items
                .iter()
                .filter_map(|entry| match entry.get_ref() {
                    DeValue::Table(t) => Some((t, entry.span().start)),
                    other => {
                        self.report(
                            entry.span().start,
                            name,
                            format!("expected a table ([[{name}]]), found {}", other.type_str()),
                            None,
                        );
                        None
                    }
                })
                .collect(),
            other => {
                self.report(
                    item.span().start,
                    name,
                    format!("expected [[{name}]] tables, found {}", other.type_str()),
                    None,
                );
                Vec::new()
            }
        }
    }
}

/// Parses and validates a plan file; `name` is the file name without `.toml`. Every
/// problem is reported: syntax, unknown keys (with did-you-mean), wrong types, stored
/// status, duplicate ids, unknown task or wave references, dependency cycles.
pub fn parse(name: &str, origin: &str, text: &str) -> Result<Plan, Vec<Diagnostic>> {
    let mut r = Reader {
        located: super::flight::Located::new(origin, text, true),
    };
    let doc = match DeTable::parse(text) {
        Ok(doc) => doc,
        Err(e) => {
            let offset = e.span().map_or(0, |s| s.start);
            r.report(
                offset,
                "",
                format!("malformed TOML: {}", e.message().trim()),
                None,
            );
            return Err(r.located.diagnostics);
        }
    };
    let doc = doc.get_ref();
    for (key, _) in doc.iter() {
        let k = key.get_ref().as_ref();
        if !["plan", "tasks", "gates"].contains(&k) {
            let suggestion = did_you_mean(k, ["plan", "tasks", "gates"]);
            let message = if STATUS_KEYS.contains(&k) {
                "a status is derived, never stored; remove this key"
            } else {
                "unknown key"
            };
            r.report(key.span().start, k, message.into(), suggestion);
        }
    }
    let mut plan = Plan {
        id: name.to_string(),
        north_star: None,
        tasks: Vec::new(),
        gates: Vec::new(),
    };
    if let Some(item) = doc.get("plan") {
        match item.get_ref() {
            DeValue::Table(t) => {
                r.keys("plan", t, PLAN_KEYS);
                if let Some(id) = r.string("plan.id", t.get("id"))
                    && id != name
                {
                    let at = t.get("id").map_or(0, |i| i.span().start);
                    r.report(
                        at,
                        "plan.id",
                        format!("the plan id `{id}` does not match its file name {name}.toml"),
                        None,
                    );
                }
                plan.north_star = r.string("plan.north_star", t.get("north_star"));
            }
            other => r.report(
                item.span().start,
                "plan",
                format!("expected a table, found {}", other.type_str()),
                None,
            ),
        }
    }

    // Tasks, with where each id and dependency was written (for the checks below).
    let mut task_at: HashMap<String, usize> = HashMap::new();
    let mut dep_at: Vec<Vec<usize>> = Vec::new();
    // Dependencies of duplicate tasks: checked for unknown references only.
    let mut orphan_deps: Vec<(String, String, usize)> = Vec::new();
    for (i, (t, at)) in r.tables(doc, "tasks").into_iter().enumerate() {
        let prefix = format!("tasks[{i}]");
        r.keys(&prefix, t, TASK_KEYS);
        let Some(id) = r.string(&format!("{prefix}.id"), t.get("id")) else {
            if t.get("id").is_none() {
                r.report(
                    at,
                    &format!("{prefix}.id"),
                    "a task needs an id".into(),
                    None,
                );
            }
            continue;
        };
        let id_at = t.get("id").map_or(at, |i| i.span().start);
        if task_at.contains_key(&id) {
            let (line, _) = r.located.locate(task_at[&id]).unwrap_or_default();
            r.report(
                id_at,
                &format!("{prefix}.id"),
                format!("duplicate task id `{id}` (first declared on line {line})"),
                None,
            );
            // Its dependencies are still checked, with the others below.
            for (j, (dep, dep_offset)) in r
                .strings(&format!("{prefix}.depends_on"), t.get("depends_on"))
                .into_iter()
                .enumerate()
            {
                orphan_deps.push((format!("{prefix}.depends_on[{j}]"), dep, dep_offset));
            }
            continue;
        }
        task_at.insert(id.clone(), id_at);
        if let Err(problem) = check_task_id(&id) {
            r.report(id_at, &format!("{prefix}.id"), problem, None);
        }
        let wave = match t.get("wave") {
            Some(item) => r.wave(&format!("{prefix}.wave"), item).unwrap_or(1),
            None => 1,
        };
        let role_text = r
            .string(&format!("{prefix}.role"), t.get("role"))
            .unwrap_or_else(|| "implement".into());
        let role = super::scope::Role::parse(&role_text).unwrap_or_default();
        if super::scope::Role::parse(&role_text).is_none() {
            let role = &role_text;
            let at = t.get("role").map_or(at, |i| i.span().start);
            let suggestion = did_you_mean(role, ROLES.iter().copied());
            r.report(
                at,
                &format!("{prefix}.role"),
                format!("`{role}` is not one of {}", ROLES.join(", ")),
                suggestion,
            );
        }
        let scope_at = t.get("scope").map_or(at, |i| i.span().start);
        let scope: Vec<String> = r
            .strings(&format!("{prefix}.scope"), t.get("scope"))
            .into_iter()
            .map(|(s, _)| s)
            .collect();
        if role.may_commit() && scope.is_empty() {
            r.report(
                scope_at,
                &format!("{prefix}.scope"),
                format!("this {role} task needs a write scope: at least one glob"),
                None,
            );
        }
        if let Err(e) = super::scope::check_globs(&scope) {
            r.report(scope_at, &format!("{prefix}.scope"), e.to_string(), None);
        }
        let deps = r.strings(&format!("{prefix}.depends_on"), t.get("depends_on"));
        dep_at.push(deps.iter().map(|(_, at)| *at).collect());
        let prompt = r.string(&format!("{prefix}.prompt"), t.get("prompt"));
        let prompt_file = r.string(&format!("{prefix}.prompt_file"), t.get("prompt_file"));
        if prompt.is_some() && prompt_file.is_some() {
            r.report(
                at,
                &prefix,
                "give either `prompt` or `prompt_file`, not both".into(),
                None,
            );
        }
        if prompt.is_none() && prompt_file.is_none() {
            r.report(
                at,
                &prefix,
                "a task needs `prompt` or `prompt_file`".into(),
                None,
            );
        }
        if let Some(file) = &prompt_file
            && (file.starts_with('/') || super::scope::normalize_path(file).is_err())
        {
            let file_at = t.get("prompt_file").map_or(at, |i| i.span().start);
            r.report(
                file_at,
                &format!("{prefix}.prompt_file"),
                format!("`{file}` lies outside the repository: give a path inside it"),
                None,
            );
        }
        plan.tasks.push(Task {
            id,
            wave,
            role,
            scope,
            prompt,
            prompt_file,
            verify: r.string(&format!("{prefix}.verify"), t.get("verify")),
            size: r.size(&format!("{prefix}.size"), t.get("size")),
            depends_on: deps.into_iter().map(|(d, _)| d).collect(),
            worker: r.string(&format!("{prefix}.worker"), t.get("worker")),
        });
    }

    let waves: BTreeSet<u32> = plan.tasks.iter().map(|t| t.wave).collect();
    let mut gate_ids: HashMap<String, usize> = HashMap::new();
    for (i, (g, at)) in r.tables(doc, "gates").into_iter().enumerate() {
        let prefix = format!("gates[{i}]");
        r.keys(&prefix, g, GATE_KEYS);
        let Some(id) = r.string(&format!("{prefix}.id"), g.get("id")) else {
            if g.get("id").is_none() {
                r.report(
                    at,
                    &format!("{prefix}.id"),
                    "a gate needs an id".into(),
                    None,
                );
            }
            continue;
        };
        let id_at = g.get("id").map_or(at, |i| i.span().start);
        if let Some(first) = gate_ids.get(&id) {
            let (line, _) = r.located.locate(*first).unwrap_or_default();
            r.report(
                id_at,
                &format!("{prefix}.id"),
                format!("duplicate gate id `{id}` (first declared on line {line})"),
                None,
            );
            continue;
        }
        gate_ids.insert(id.clone(), id_at);
        let check_wave = |r: &mut Reader<'_>, key: &str, item: &Item<'_>| -> Option<u32> {
            let n = r.wave(key, item)?;
            if !waves.contains(&n) {
                r.report(
                    item.span().start,
                    key,
                    format!("no task is in wave {n}"),
                    None,
                );
                return None;
            }
            Some(n)
        };
        let closes_wave = g
            .get("closes_wave")
            .and_then(|item| check_wave(&mut r, &format!("{prefix}.closes_wave"), item));
        let mut gates_waves = Vec::new();
        if let Some(item) = g.get("gates_waves") {
            match item.get_ref() {
                DeValue::Array(items) => {
                    for (j, entry) in items.iter().enumerate() {
                        if let Some(n) =
                            check_wave(&mut r, &format!("{prefix}.gates_waves[{j}]"), entry)
                        {
                            gates_waves.push(n);
                        }
                    }
                }
                other => r.report(
                    item.span().start,
                    &format!("{prefix}.gates_waves"),
                    format!(
                        "expected an array of wave numbers, found {}",
                        other.type_str()
                    ),
                    None,
                ),
            }
        }
        if let Some(closes) = closes_wave
            && let Some(held) = gates_waves.iter().find(|w| **w <= closes)
        {
            r.report(
                g.get("gates_waves").map_or(at, |i| i.span().start),
                &format!("{prefix}.gates_waves"),
                format!(
                    "gate `{id}` closes wave {closes}, so it cannot hold wave {held}: that wave could never start"
                ),
                None,
            );
        }
        plan.gates.push(Gate {
            id,
            measure: r.string(&format!("{prefix}.measure"), g.get("measure")),
            required_evidence: r.string(
                &format!("{prefix}.required_evidence"),
                g.get("required_evidence"),
            ),
            closes_wave,
            gates_waves,
        });
    }

    // References and cycles.
    let ids: Vec<String> = plan.tasks.iter().map(|t| t.id.clone()).collect();
    for (i, task) in plan.tasks.iter().enumerate() {
        for (j, dep) in task.depends_on.iter().enumerate() {
            if !task_at.contains_key(dep) {
                let suggestion = did_you_mean(dep, ids.iter().map(String::as_str));
                r.report(
                    dep_at[i][j],
                    &format!("tasks[{i}].depends_on[{j}]"),
                    format!("unknown task `{dep}`"),
                    suggestion,
                );
            } else if *dep == task.id {
                r.report(
                    dep_at[i][j],
                    &format!("tasks[{i}].depends_on[{j}]"),
                    format!("task `{dep}` depends on itself"),
                    None,
                );
            }
        }
    }
    for (key, dep, offset) in &orphan_deps {
        if !task_at.contains_key(dep) {
            let suggestion = did_you_mean(dep, ids.iter().map(String::as_str));
            r.report(*offset, key, format!("unknown task `{dep}`"), suggestion);
        }
    }
    if let Some(cycle) = find_cycle(&plan.tasks) {
        let at = task_at.get(&cycle[0]).copied().unwrap_or(0);
        r.report(
            at,
            "depends_on",
            format!("dependency cycle: {}", cycle.join(" → ")),
            None,
        );
    }
    if r.located.diagnostics.is_empty() {
        Ok(plan)
    } else {
        Err(r.located.diagnostics)
    }
}

/// A dependency cycle (longer than a self-reference), as the ids around it with the
/// first repeated at the end.
fn find_cycle(tasks: &[Task]) -> Option<Vec<String>> {
    let deps: HashMap<&str, Vec<&str>> = tasks
        .iter()
        .map(|t| {
            (
                t.id.as_str(),
                t.depends_on
                    .iter()
                    .map(String::as_str)
                    .filter(|d| *d != t.id)
                    .collect(),
            )
        })
        .collect();
    // 0 = unvisited, 1 = on the path, 2 = done.
    let mut mark: HashMap<&str, u8> = HashMap::new();
    let mut path: Vec<&str> = Vec::new();
    fn visit<'a>(
        node: &'a str,
        deps: &HashMap<&'a str, Vec<&'a str>>,
        mark: &mut HashMap<&'a str, u8>,
        path: &mut Vec<&'a str>,
    ) -> Option<Vec<String>> {
        match mark.get(node).copied().unwrap_or(0) {
            1 => {
                let start = path.iter().position(|n| *n == node).unwrap_or(0);
                let mut cycle: Vec<String> = path[start..].iter().map(|s| s.to_string()).collect();
                cycle.push(node.to_string());
                return Some(cycle);
            }
            2 => return None,
            _ => {}
        }
        mark.insert(node, 1);
        path.push(node);
        for dep in deps.get(node).into_iter().flatten() {
            if deps.contains_key(dep)
                && let Some(cycle) = visit(dep, deps, mark, path)
            {
                return Some(cycle);
            }
        }
        path.pop();
        mark.insert(node, 2);
        None
    }
    for task in tasks {
        if let Some(cycle) = visit(&task.id, &deps, &mut mark, &mut path) {
            return Some(cycle);
        }
    }
    None
}

// ---------------------------------------------------------------------------------------
// Derived status
// ---------------------------------------------------------------------------------------

/// A gate's latest verdict.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize, schemars::JsonSchema)]
pub struct Verdict {
    pub at: String,
    pub plan: String,
    pub gate: String,
    pub verdict: GateVerdict,
    pub evidence: String,
    #[serde(default)]
    pub link: Option<String>,
    #[serde(default)]
    pub measured_at: Option<String>,
    #[serde(default)]
    pub by: Option<String>,
}

impl Verdict {
    pub fn passed(&self) -> bool {
        self.verdict == GateVerdict::Pass
    }
}

/// What the caller gathered: runs in flight and integrated runs, by task; the latest
/// verdict of each gate; the `[gates]` policy.
#[derive(Debug, Default)]
pub struct Facts {
    pub live: HashMap<String, String>,
    pub done: HashMap<String, String>,
    pub verdicts: HashMap<String, Verdict>,
    /// `gates.enforce`.
    pub enforce: Enforcement,
    /// `gates.on_fail`.
    pub on_fail: OnFail,
}

/// Why a task cannot start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Blocker {
    /// A dependency that is not done.
    Dependency { task: String, status: String },
    /// A gate on the task's wave without a passing verdict.
    Gate {
        gate: String,
        verdict: Option<GateVerdict>,
    },
}

impl std::fmt::Display for Blocker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Blocker::Dependency { task, status } => write!(f, "depends on {task} ({status})"),
            Blocker::Gate {
                gate,
                verdict: None,
            } => write!(f, "gate {gate} has no verdict"),
            Blocker::Gate {
                gate,
                verdict: Some(v),
            } => write!(f, "gate {gate} last said {v}"),
        }
    }
}

/// What a gate's measurement came to.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Serialize,
    serde::Deserialize,
    clap::ValueEnum,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum GateVerdict {
    Pass,
    /// Also what a recorded verdict that is neither reads as: a gate it cannot read holds.
    #[serde(other)]
    Fail,
}

impl GateVerdict {
    pub fn as_str(self) -> &'static str {
        match self {
            GateVerdict::Pass => "pass",
            GateVerdict::Fail => "fail",
        }
    }
}

impl fmt::Display for GateVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Where a task stands, derived: never stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TaskState {
    /// Its run is integrated into HEAD.
    Done,
    /// It has a live run.
    InFlight,
    /// Nothing holds it.
    Ready,
    /// An unfinished dependency or a gate holds it.
    Blocked,
}

impl TaskState {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Done => "done",
            TaskState::InFlight => "in-flight",
            TaskState::Ready => "ready",
            TaskState::Blocked => "blocked",
        }
    }
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for TaskState {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// A task's derived status.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TaskStatus {
    pub task: String,
    pub wave: u32,
    pub status: TaskState,
    pub blockers: Vec<Blocker>,
    /// The live or the integrated run.
    pub run: Option<String>,
}

impl TaskStatus {
    /// The blockers, for people: `depends on a (in-flight); gate g1 has no verdict`.
    pub fn blockers_text(&self) -> String {
        self.blockers
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    }
}

/// Whether `gate` lets the waves it gates go: a pass does; with `on_fail = "continue"`
/// any verdict does; with `gates.enforce = "off"` gates never block.
fn gate_blocks(facts: &Facts, gate: &Gate) -> Option<Blocker> {
    if facts.enforce == Enforcement::Off {
        return None;
    }
    let verdict = facts.verdicts.get(&gate.id);
    let open = match verdict {
        Some(v) if v.passed() => true,
        Some(_) => facts.on_fail == OnFail::Continue,
        None => false,
    };
    (!open).then(|| Blocker::Gate {
        gate: gate.id.clone(),
        verdict: verdict.map(|v| v.verdict),
    })
}

/// A task a gate holds under `gates.enforce = "strict"`: nothing is done to it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub task: String,
    pub wave: u32,
    /// What was held: "dispatched", "integrated".
    pub doing: String,
    /// The gates that hold it, for people.
    pub gates: Vec<String>,
}

/// The gates that hold `task` under the `[gates]` policy: `Err` under `strict`, a warning
/// under `warn`, nothing under `off` or when no gate holds it. `doing` names what is held
/// ("dispatched", "integrated"). `facts` needs the verdicts and the policy only.
pub fn gate_hold(
    plan: &Plan,
    task: &Task,
    facts: &Facts,
    doing: &str,
) -> Result<Option<String>, Held> {
    let held: Vec<String> = gate_blockers(plan, facts, task)
        .iter()
        .map(ToString::to_string)
        .collect();
    if held.is_empty() {
        return Ok(None);
    }
    if facts.enforce == crate::core::flight::Enforcement::Strict {
        return Err(Held {
            task: task.id.clone(),
            wave: task.wave,
            doing: doing.to_string(),
            gates: held,
        });
    }
    Ok(Some(format!(
        "task {} is held by a gate (gates.enforce = \"warn\"), {doing} anyway: {}",
        task.id,
        held.join("; ")
    )))
}

/// The gate blockers of one task.
pub fn gate_blockers(plan: &Plan, facts: &Facts, task: &Task) -> Vec<Blocker> {
    plan.gates
        .iter()
        .filter(|g| g.gates_waves.contains(&task.wave))
        .filter_map(|g| gate_blocks(facts, g))
        .collect()
}

/// Every task's status, in plan order.
pub fn status(plan: &Plan, facts: &Facts) -> Vec<TaskStatus> {
    let base = |t: &Task| -> Option<(TaskState, String)> {
        if let Some(run) = facts.done.get(&t.id) {
            Some((TaskState::Done, run.clone()))
        } else {
            facts
                .live
                .get(&t.id)
                .map(|run| (TaskState::InFlight, run.clone()))
        }
    };
    let mut out = Vec::with_capacity(plan.tasks.len());
    let settled: BTreeMap<&str, TaskState> = plan
        .tasks
        .iter()
        .filter_map(|t| base(t).map(|(s, _)| (t.id.as_str(), s)))
        .collect();
    for task in &plan.tasks {
        if let Some((status, run)) = base(task) {
            out.push(TaskStatus {
                task: task.id.clone(),
                wave: task.wave,
                status,
                blockers: Vec::new(),
                run: Some(run),
            });
            continue;
        }
        let mut blockers: Vec<Blocker> = task
            .depends_on
            .iter()
            .filter(|d| settled.get(d.as_str()) != Some(&TaskState::Done))
            .map(|d| Blocker::Dependency {
                task: d.clone(),
                status: settled
                    .get(d.as_str())
                    .map_or("not done", |s| s.as_str())
                    .to_string(),
            })
            .collect();
        blockers.extend(gate_blockers(plan, facts, task));
        out.push(TaskStatus {
            task: task.id.clone(),
            wave: task.wave,
            status: if blockers.is_empty() {
                TaskState::Ready
            } else {
                TaskState::Blocked
            },
            blockers,
            run: None,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const PLAN: &str = r#"[plan]
id = "v1"
north_star = "five workers, no babysitting"

[[tasks]]
id = "routes"
wave = 1
scope = ["src/routes/**"]
prompt = "Add the routes."
size = 2.0

[[tasks]]
id = "docs"
wave = 1
scope = ["docs/**"]
prompt = "Document."
size = 1

[[tasks]]
id = "ui"
wave = 2
depends_on = ["routes"]
scope = ["ui/**"]
prompt = "The UI."

[[gates]]
id = "g1"
measure = "routes answer"
required_evidence = "under 3 s"
closes_wave = 1
gates_waves = [2]
"#;

    fn messages(text: &str) -> Vec<String> {
        parse("v1", "p.toml", text)
            .unwrap_err()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_plan_parses_with_its_defaults() {
        let plan = parse("v1", "p.toml", PLAN).unwrap();
        assert_eq!(plan.tasks.len(), 3);
        assert_eq!(plan.tasks[0].role, "implement");
        assert_eq!(plan.tasks[1].size, Some(1.0));
        assert_eq!(plan.waves(), [1, 2]);
        assert_eq!(plan.closing_gate(1).unwrap().id, "g1");
        assert_eq!(
            plan.north_star.as_deref(),
            Some("five workers, no babysitting")
        );
    }

    #[test]
    fn every_validation_error_is_located() {
        let text = PLAN
            .replace("size = 1\n", "size = 1\nstatus = \"blocked\"\n")
            .replace("depends_on = [\"routes\"]", "depends_on = [\"route\"]")
            .replace("gates_waves = [2]", "gates_waves = [3]\nclose_wave = 1")
            + "\n[[tasks]]\nid = \"docs\"\nprompt = \"again\"\ndepends_on = [\"zz\"]\n";
        let m = messages(&text);
        assert!(
            m.iter()
                .any(|e| e.starts_with("p.toml:18:1: `tasks[1].status`: a status is derived")),
            "{m:#?}"
        );
        assert!(
            m.iter().any(|e| e.contains(
                "`tasks[2].depends_on[0]`: unknown task `route` (did you mean `routes`?)"
            )),
            "{m:#?}"
        );
        assert!(
            m.iter()
                .any(|e| e.contains("`gates[0].gates_waves[0]`: no task is in wave 3")),
            "{m:#?}"
        );
        assert!(
            m.iter()
                .any(|e| e
                    .contains("`gates[0].close_wave`: unknown key (did you mean `closes_wave`?)")),
            "{m:#?}"
        );
        assert!(
            m.iter()
                .any(|e| e.contains("duplicate task id `docs` (first declared on line 13)")),
            "{m:#?}"
        );
        assert!(
            m.iter()
                .any(|e| e.contains("`tasks[3].depends_on[0]`: unknown task `zz`")),
            "{m:#?}"
        );
    }

    #[test]
    fn a_cycle_is_named() {
        let task = "scope = [\"x/**\"]\nprompt = \"x\"\n";
        let text = format!(
            "[[tasks]]\nid = \"a\"\ndepends_on = [\"c\"]\n{task}[[tasks]]\nid = \"b\"\ndepends_on = [\"a\"]\n{task}[[tasks]]\nid = \"c\"\ndepends_on = [\"b\"]\n{task}"
        );
        let m = messages(&text);
        assert_eq!(m.len(), 1, "{m:#?}");
        assert!(
            m[0].starts_with("p.toml:2:6: `depends_on`: dependency cycle: a → c → b → a"),
            "{m:#?}"
        );
        let m = messages(
            "[plan]\nid = \"other\"\n[[tasks]]\nid = \"a\"\nrole = \"implment\"\nsize = -1\n",
        );
        assert!(
            m.iter()
                .any(|e| e.contains("does not match its file name v1.toml"))
        );
        assert!(m.iter().any(|e| e.contains("(did you mean `implement`?)")));
        assert!(m.iter().any(|e| e.contains("a size is a positive number")));
        assert!(
            messages("[[tasks]\n")
                .iter()
                .any(|e| e.contains("malformed TOML"))
        );
    }

    fn facts() -> Facts {
        Facts {
            enforce: Enforcement::Strict,
            on_fail: OnFail::Hold,
            ..Facts::default()
        }
    }

    fn verdict(v: GateVerdict) -> Verdict {
        Verdict {
            at: "t".into(),
            plan: "v1".into(),
            gate: "g1".into(),
            verdict: v,
            evidence: "measured".into(),
            link: None,
            measured_at: None,
            by: None,
        }
    }

    #[test]
    fn status_is_derived_from_runs_dependencies_and_gates() {
        let plan = parse("v1", "p.toml", PLAN).unwrap();
        let mut facts = facts();
        let s = status(&plan, &facts);
        assert_eq!(
            s.iter().map(|t| t.status).collect::<Vec<_>>(),
            ["ready", "ready", "blocked"]
        );
        assert_eq!(
            s[2].blockers
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            ["depends on routes (not done)", "gate g1 has no verdict"]
        );
        facts.live.insert("routes".into(), "r1".into());
        facts.done.insert("docs".into(), "r0".into());
        let s = status(&plan, &facts);
        assert_eq!(s[0].status, "in-flight");
        assert_eq!(s[1].status, "done");
        facts.live.clear();
        facts.done.insert("routes".into(), "r1".into());
        facts
            .verdicts
            .insert("g1".into(), verdict(GateVerdict::Fail));
        let s = status(&plan, &facts);
        assert_eq!(s[2].blockers[0].to_string(), "gate g1 last said fail");
        // on_fail = continue: a recorded verdict, even a failing one, lets the wave go.
        facts.on_fail = OnFail::Continue;
        assert_eq!(status(&plan, &facts)[2].status, "ready");
        facts.on_fail = OnFail::Hold;
        facts
            .verdicts
            .insert("g1".into(), verdict(GateVerdict::Pass));
        assert_eq!(status(&plan, &facts)[2].status, "ready");
        facts.verdicts.clear();
        facts.enforce = Enforcement::Off;
        assert_eq!(status(&plan, &facts)[2].status, "ready");
    }

    #[test]
    fn a_verdict_that_is_neither_pass_nor_fail_reads_as_fail() {
        let v: GateVerdict = serde_json::from_str("\"maybe\"").unwrap();
        assert_eq!(v, GateVerdict::Fail);
        let v: GateVerdict = serde_json::from_str("\"pass\"").unwrap();
        assert_eq!(v, GateVerdict::Pass);
    }
}
