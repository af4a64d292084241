//! Write scopes: the globs a run may write, path normalisation, and the verdict on a set
//! of changed paths. Pure: callers gather the changed paths and the run identity first.
//!
//! Glob rules (documented in README.md): patterns are relative to the repository root;
//! `*` and `?` never cross `/`, `**` does; a pattern ending in `/` means everything under
//! that directory; a pattern without any glob character matches that path and everything
//! under it (as a git pathspec does). Matching is case-sensitive, so a path that differs
//! from an in-scope path only by case is outside the scope.

use std::fmt;

use globset::{GlobBuilder, GlobSet, GlobSetBuilder};

/// Paths no worker may ever commit, whatever its scope (compared case-insensitively).
pub const PROTECTED_PATHS: &[&str] = &[".crew/", "docs/state/crew.json"];

/// What a run is for; `review` and `investigate` runs produce a manifest, never commits.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    Default,
    serde::Serialize,
    serde::Deserialize,
    clap::ValueEnum,
    schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    #[default]
    Implement,
    Review,
    Investigate,
    Cleanup,
}

impl Role {
    /// Every role name, in the order the help text lists them.
    pub const NAMES: &'static [&'static str] = &["implement", "review", "investigate", "cleanup"];

    pub fn parse(name: &str) -> Option<Role> {
        match name {
            "implement" => Some(Role::Implement),
            "review" => Some(Role::Review),
            "investigate" => Some(Role::Investigate),
            "cleanup" => Some(Role::Cleanup),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Role::Implement => "implement",
            Role::Review => "review",
            Role::Investigate => "investigate",
            Role::Cleanup => "cleanup",
        }
    }

    /// Whether runs of this role may commit at all.
    pub fn may_commit(self) -> bool {
        matches!(self, Role::Implement | Role::Cleanup)
    }
}

/// A role read from metadata (a ledger row): one it does not know reads as `implement`, so
/// no row is lost to it.
pub fn role_or_implement<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Role, D::Error> {
    let text = <std::borrow::Cow<str> as serde::Deserialize>::deserialize(d)?;
    Ok(Role::parse(&text).unwrap_or_default())
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for Role {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

/// A glob that could not be used as a write scope.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid scope glob `{glob}`: {reason}")]
pub struct ScopeError {
    pub glob: String,
    pub reason: String,
}

/// A compiled write scope.
#[derive(Debug, Clone)]
pub struct Scope {
    globs: Vec<String>,
    set: GlobSet,
}

/// The globs of a scope, parsed as [`Scope::new`] parses them, without compiling their
/// matcher: what a scope refuses, at a fraction of the cost (a plan checks every task's).
pub fn check_globs<S: AsRef<str>>(globs: &[S]) -> Result<Vec<globset::Glob>, ScopeError> {
    let mut out = Vec::with_capacity(globs.len());
    for raw in globs {
        let raw = raw.as_ref();
        let err = |reason: &str| ScopeError {
            // A glob with a line break in it is shown on one line, its escapes spelt out.
            glob: if raw.contains(char::is_control) {
                raw.escape_debug().to_string()
            } else {
                raw.to_string()
            },
            reason: reason.to_string(),
        };
        let parsed = parse_glob(raw).map_err(|reason| err(&reason))?;
        for pattern in parsed.patterns() {
            out.push(
                GlobBuilder::new(&pattern)
                    .literal_separator(true)
                    .backslash_escape(true)
                    .build()
                    .map_err(|e| err(&e.kind().to_string()))?,
            );
        }
    }
    Ok(out)
}

impl Scope {
    /// Compiles the globs of a scope; an empty list is a scope that admits nothing.
    pub fn new<S: AsRef<str>>(globs: &[S]) -> Result<Scope, ScopeError> {
        let mut builder = GlobSetBuilder::new();
        for glob in check_globs(globs)? {
            builder.add(glob);
        }
        let kept: Vec<String> = globs.iter().map(|g| g.as_ref().to_string()).collect();
        let set = builder.build().map_err(|e| ScopeError {
            glob: kept.join(", "),
            reason: e.to_string(),
        })?;
        Ok(Scope { globs: kept, set })
    }

    /// The globs as given.
    pub fn globs(&self) -> &[String] {
        &self.globs
    }

    /// Whether an already normalised repository-relative path is inside the scope.
    pub fn contains(&self, normalized_path: &str) -> bool {
        self.set.is_match(normalized_path)
    }
}

/// A path that cannot be normalised inside the repository.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("`..` leads outside the repository")]
    EscapesRoot,
}

/// Normalises a repository-relative path: no leading `/` or `./`, no `.` or empty
/// components, `..` resolved; a path that climbs above the root is an error.
/// [`normalize_path`], borrowing a path that is already normal (no empty, `.` or `..`
/// component), as almost every path git lists is.
pub fn normalized(path: &str) -> Result<std::borrow::Cow<'_, str>, PathError> {
    if path.split('/').all(|part| !matches!(part, "" | "." | "..")) {
        return Ok(std::borrow::Cow::Borrowed(path));
    }
    normalize_path(path).map(std::borrow::Cow::Owned)
}

pub fn normalize_path(path: &str) -> Result<String, PathError> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return Err(PathError::EscapesRoot);
                }
            }
            other => parts.push(other),
        }
    }
    Ok(parts.join("/"))
}

/// Whether a normalised path is one no worker may commit. Compared the way a
/// case-insensitive or Unicode-folding filesystem would see it, so `.CREW/x` or
/// `.crew\u{200c}/x` are caught as well.
pub fn protected_rule(normalized_path: &str) -> Option<&'static str> {
    let folded: String = normalized_path
        .split('/')
        .map(fold_component)
        .collect::<Vec<_>>()
        .join("/");
    PROTECTED_PATHS
        .iter()
        .copied()
        .find(|rule| match rule.strip_suffix('/') {
            Some(dir) => folded == dir || folded.starts_with(rule),
            None => folded == *rule,
        })
}

/// Folds a path component as permissive filesystems do: ASCII case, code points that
/// HFS+ ignores, and the trailing dots and spaces that NTFS drops.
fn fold_component(component: &str) -> String {
    let kept: String = component
        .chars()
        .filter(|c| !is_ignorable(*c))
        .map(|c| c.to_ascii_lowercase())
        .collect();
    kept.trim_end_matches(['.', ' ']).to_string()
}

fn is_ignorable(c: char) -> bool {
    matches!(c as u32, 0x200c..=0x200f | 0x202a..=0x202e | 0x206a..=0x206f | 0xfeff)
}

/// A scope glob parsed once, for the matcher, the overlap check and the hook alike: its
/// normalised text (escapes kept, for the matcher), whether it has any glob character,
/// and its leading literal components with escapes resolved (for the overlap check).
#[derive(Debug, Clone, PartialEq, Eq)]
struct ParsedGlob {
    normal: String,
    is_dir: bool,
    literal: bool,
    prefix: Vec<String>,
}

impl ParsedGlob {
    /// The globset patterns: a directory or a literal path covers its subtree.
    fn patterns(&self) -> Vec<String> {
        if self.is_dir {
            vec![format!("{}/**", self.normal)]
        } else if self.literal {
            vec![self.normal.clone(), format!("{}/**", self.normal)]
        } else {
            vec![self.normal.clone()]
        }
    }
}

/// Parses a scope glob. `\` escapes the next character (as the matcher reads it); an
/// escape that would hide a `/` or end the glob, and a component that is `.` or `..` once
/// its escapes are resolved, are refused: the matcher and the overlap check would read
/// them differently.
fn parse_glob(raw: &str) -> Result<ParsedGlob, String> {
    // A glob is one line of a worktree's config and of `CREW_SCOPE` (newline-separated),
    // and text people read: no line break, no control character.
    match raw.chars().find(|c| c.is_control()) {
        Some('\n' | '\r') => return Err("it holds a line break; a glob is one line".into()),
        Some(c) => {
            return Err(format!(
                "it holds the control character U+{:04X}",
                u32::from(c)
            ));
        }
        None => {}
    }
    let trimmed = raw.trim();
    if trimmed.ends_with('\\') || trimmed.contains("\\/") {
        return Err("a `\\` must escape a character other than `/`".into());
    }
    let is_dir = trimmed.ends_with('/');
    let normal = normalize_path(trimmed).map_err(|e| e.to_string())?;
    if normal.is_empty() {
        return Err("it names the repository root; use `**` for everything".into());
    }
    let mut literal = true;
    let mut prefix = Vec::new();
    for component in normal.split('/') {
        let mut text = String::with_capacity(component.len());
        let mut meta = false;
        let mut chars = component.chars();
        while let Some(c) = chars.next() {
            match c {
                '\\' => text.extend(chars.next()),
                '*' | '?' | '[' | '{' => {
                    meta = true;
                    text.push(c);
                }
                _ => text.push(c),
            }
        }
        if !meta && matches!(text.as_str(), "" | "." | "..") {
            return Err(format!("the component `{component}` names no file"));
        }
        if meta {
            literal = false;
        }
        if literal {
            prefix.push(text);
        }
    }
    Ok(ParsedGlob {
        normal,
        is_dir,
        literal,
        prefix,
    })
}

/// Whether two write scopes may claim a common path, decided conservatively: two globs
/// are disjoint only when neither's literal directory prefix contains the other's
/// (`src/a/**` and `src/b/**` are; `src/**` and `src/a.rs` are not; `**/*.rs` overlaps
/// everything). Escapes are resolved as the matcher resolves them (`src/rout\es/**` is
/// `src/routes/**`); a glob that does not parse overlaps everything. Returns the first
/// pair of globs that may overlap.
pub fn scopes_overlap(a: &[String], b: &[String]) -> Option<(String, String)> {
    let prefix = |glob: &str| parse_glob(glob).map(|p| p.prefix).unwrap_or_default();
    for ga in a {
        let pa = prefix(ga);
        for gb in b {
            let pb = prefix(gb);
            let n = pa.len().min(pb.len());
            if pa[..n] == pb[..n] {
                return Some((ga.clone(), gb.clone()));
            }
        }
    }
    None
}

/// How a staged path differs from HEAD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    Added,
    Deleted,
    Modified,
    /// Same content, different mode (executable bit, symlink, gitlink).
    ModeChanged,
    /// An unmerged (conflicted) index entry.
    Unmerged,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Added => "added",
            ChangeKind::Deleted => "deleted",
            ChangeKind::Modified => "modified",
            ChangeKind::ModeChanged => "mode changed",
            ChangeKind::Unmerged => "unmerged",
        }
    }
}

/// One changed path, repository-relative as git stores it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub path: String,
    pub kind: ChangeKind,
    /// Why git would refuse to check this entry out (a `.git` component in any spelling
    /// git protects, `.` or `..`, a symlink that leaves the repository), as the caller
    /// found it.
    pub refused: Option<String>,
    /// Where a symlink points, resolved against the repository root.
    pub link_target: Option<String>,
}

impl Change {
    /// A change with nothing more known about it.
    pub fn new(path: impl Into<String>, kind: ChangeKind) -> Change {
        Change {
            path: path.into(),
            kind,
            refused: None,
            link_target: None,
        }
    }
}

/// Why a commit is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// The run's role may not commit at all.
    ReadOnlyRole { role: String },
    /// The run's identity is unusable (unknown role, broken glob): fail closed.
    BadIdentity { reason: String },
    /// A path outside the run's write scope.
    OutsideScope { change: Change, scope: Vec<String> },
    /// A path no worker may commit.
    Protected { change: Change, rule: &'static str },
    /// A path that climbs above the repository root.
    EscapesRoot { change: Change },
    /// A tree entry git would refuse to check out.
    Unsafe { change: Change, reason: String },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::ReadOnlyRole { role } => {
                write!(
                    f,
                    "a {role} run may not commit; its only output is its manifest"
                )
            }
            Violation::BadIdentity { reason } => write!(f, "{reason}"),
            Violation::OutsideScope { change, scope } => {
                let scope = if scope.is_empty() {
                    "(the run has none)".to_string()
                } else {
                    scope.join(", ")
                };
                write!(
                    f,
                    "{} ({}) is outside the write scope {scope}",
                    change.path,
                    change.kind.as_str()
                )
            }
            Violation::Protected { change, rule } => write!(
                f,
                "{} ({}) is protected: no worker may commit {rule}",
                change.path,
                change.kind.as_str()
            ),
            Violation::EscapesRoot { change } => {
                write!(f, "{} leads outside the repository", change.path)
            }
            Violation::Unsafe { change, reason } => write!(
                f,
                "{} ({}) is refused: {reason}",
                change.path,
                change.kind.as_str()
            ),
        }
    }
}

/// The identity a crew worktree carries in its own config.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RunIdentity {
    pub run: String,
    pub task: String,
    pub role: String,
    pub scope: Vec<String>,
}

/// The pre-commit verdict for a crew worktree: every reason the commit is refused, in
/// the order of the changes (empty means the commit may proceed).
pub fn check_commit(identity: &RunIdentity, changes: &[Change]) -> Vec<Violation> {
    let role = match Role::parse(&identity.role) {
        Some(role) => role,
        None => {
            return vec![Violation::BadIdentity {
                reason: format!(
                    "run {} has unknown role `{}` (expected one of {})",
                    identity.run,
                    identity.role,
                    Role::NAMES.join(", ")
                ),
            }];
        }
    };
    if !role.may_commit() {
        return vec![Violation::ReadOnlyRole {
            role: role.as_str().to_string(),
        }];
    }
    let scope = match Scope::new(&identity.scope) {
        Ok(scope) => scope,
        Err(e) => {
            return vec![Violation::BadIdentity {
                reason: format!("run {}: {e}", identity.run),
            }];
        }
    };
    audit_changes(&scope, changes)
}

/// Checks every changed path against a scope and the protected paths.
pub fn audit_changes(scope: &Scope, changes: &[Change]) -> Vec<Violation> {
    let mut violations = Vec::new();
    for change in changes {
        if let Some(reason) = &change.refused
            && change.kind != ChangeKind::Deleted
        {
            violations.push(Violation::Unsafe {
                change: change.clone(),
                reason: reason.clone(),
            });
            continue;
        }
        let normal = match normalize_path(&change.path) {
            Ok(normal) => normal,
            Err(PathError::EscapesRoot) => {
                violations.push(Violation::EscapesRoot {
                    change: change.clone(),
                });
                continue;
            }
        };
        if let Some(rule) = protected_rule(&normal) {
            violations.push(Violation::Protected {
                change: change.clone(),
                rule,
            });
        } else if !scope.contains(&normal) {
            violations.push(Violation::OutsideScope {
                change: change.clone(),
                scope: scope.globs().to_vec(),
            });
        }
    }
    violations
}

/// The symlinks among `changes` that point outside `scope` (inside the repository): not
/// refused, but named in the result.
pub fn links_leaving_scope(scope: &Scope, changes: &[Change]) -> Vec<String> {
    changes
        .iter()
        .filter(|c| c.kind != ChangeKind::Deleted)
        .filter_map(|c| {
            let target = c.link_target.as_deref()?;
            (!scope.contains(target)).then(|| format!("{} -> {target}", c.path))
        })
        .collect()
}

/// A live run, as far as the paths it holds go.
pub struct Holder<'a> {
    pub run: &'a str,
    pub task: &'a str,
    pub scope: &'a [String],
}

/// Where the staged paths [`held_paths`] could warn of lie: the literal folders and files
/// the live runs' globs start with (`src/api/**`: `src/api`; `README.md` itself), for a
/// caller that lists only what changed there. `None` when some glob could hold any path
/// (`**/*.rs`, or one that does not parse).
pub fn held_region(runs: &[Holder]) -> Option<Vec<String>> {
    let mut region = Vec::new();
    for glob in runs.iter().flat_map(|run| run.scope) {
        region.push(literal_prefix(glob)?.into_owned());
    }
    region.sort_unstable();
    region.dedup();
    Some(region)
}

/// One warning per staged path that a live run's scope holds, run by run, each run's in
/// the order of `changes`.
///
/// A glob can only match a path under its leading literal components (`src/api/**` only
/// paths under `src/api/`), so each run's candidates are found by binary search among the
/// paths sorted once, and a run's scope is compiled only when some staged path could
/// fall in it: one staged file and a hundred live runs compile none of their scopes but
/// those that could hold it.
pub fn held_paths(runs: &[Holder], changes: &[Change]) -> Vec<String> {
    let held = Held::find(runs, changes);
    held.pairs
        .iter()
        .map(|&(change, said)| [changes[change].path.as_str(), &held.said[said]].concat())
        .collect()
}

/// [`held_paths`] as lines appended to `text`: each `prefix`, the warning made safe for a
/// terminal (whole: an escape at a path's end is read with what follows it), and a line
/// feed, in room made once, with no string per warning.
pub fn held_path_lines(runs: &[Holder], changes: &[Change], prefix: &str, text: &mut String) {
    let held = Held::find(runs, changes);
    let room = |&(change, said): &(usize, usize)| {
        prefix.len() + changes[change].path.len() + held.said[said].len() + 1
    };
    text.reserve(held.pairs.iter().map(room).sum());
    let mut warning = String::new();
    for &(change, said) in &held.pairs {
        warning.clear();
        warning.push_str(&changes[change].path);
        warning.push_str(&held.said[said]);
        text.push_str(prefix);
        crate::core::text::sanitize_into(&warning, text);
        text.push('\n');
    }
}

/// The staged paths the live runs hold, run by run: (change, what is said) pairs, and
/// what is said of each run's paths (` is held by in-flight run ...`).
struct Held {
    pairs: Vec<(usize, usize)>,
    said: Vec<String>,
}

impl Held {
    fn find(runs: &[Holder], changes: &[Change]) -> Held {
        let normal: Vec<Option<std::borrow::Cow<'_, str>>> =
            changes.iter().map(|c| normalized(&c.path).ok()).collect();
        let mut sorted: Vec<(&str, usize)> = normal
            .iter()
            .enumerate()
            .filter_map(|(i, path)| Some((path.as_deref()?, i)))
            .collect();
        sorted.sort_unstable();
        let mut held = Held {
            pairs: Vec::new(),
            said: Vec::new(),
        };
        for run in runs {
            let Some(candidates) = candidates(run.scope, &sorted) else {
                continue;
            };
            let Some(scope) = ScopeMatcher::new(run.scope) else {
                continue;
            };
            let said = held.said.len();
            held.said.push(format!(
                " is held by in-flight run {} (task {}, scope {})",
                run.run,
                run.task,
                run.scope.join(", ")
            ));
            for i in candidates {
                if let Some(path) = &normal[i]
                    && scope.contains(path)
                {
                    held.pairs.push((i, said));
                }
            }
        }
        held
    }
}

/// A scope as [`held_paths`] matches it: a scope of plain folders and files (`src/api/**`,
/// `docs/`, `README.md`) by comparing paths, as its compiled globs would decide; any
/// other compiled. `None` for a scope that does not compile.
enum ScopeMatcher {
    /// Each folder or file covered, and whether the path itself is covered too (a
    /// literal path is; `dir/**` and `dir/` cover only what is under them).
    Plain(Vec<(String, bool)>),
    Compiled(Scope),
}

impl ScopeMatcher {
    fn new(globs: &[String]) -> Option<ScopeMatcher> {
        let plain: Option<Vec<(String, bool)>> = globs.iter().map(|g| plain_glob(g)).collect();
        match plain {
            Some(plain) => Some(ScopeMatcher::Plain(plain)),
            None => Scope::new(globs).ok().map(ScopeMatcher::Compiled),
        }
    }

    fn contains(&self, normalized_path: &str) -> bool {
        match self {
            ScopeMatcher::Plain(covered) => covered.iter().any(|(base, itself)| {
                (*itself && normalized_path == base)
                    || normalized_path
                        .strip_prefix(base.as_str())
                        .is_some_and(|rest| rest.len() > 1 && rest.starts_with('/'))
            }),
            ScopeMatcher::Compiled(scope) => scope.contains(normalized_path),
        }
    }
}

/// A glob that names a folder or a file with no pattern in it but a last `/**`: the
/// folder or file, and whether the path itself is covered.
fn plain_glob(glob: &str) -> Option<(String, bool)> {
    let parsed = parse_glob(glob).ok()?;
    let meta = |text: &str| text.contains(['*', '?', '[', '{', '\\']);
    if parsed.is_dir || parsed.literal {
        // `dir/` covers `dir/**`; a literal path covers itself and `path/**`.
        return (!meta(&parsed.normal)).then(|| (parsed.normal.clone(), !parsed.is_dir));
    }
    let base = parsed.normal.strip_suffix("/**")?;
    (!base.is_empty() && !meta(base)).then(|| (base.to_string(), false))
}

/// The positions (in `changes` order) of the paths some glob of `scope` could match,
/// from `sorted` (normalised paths, sorted, with their positions); `None` when there is
/// none. A glob that does not parse leaves every path a candidate: the scope's compiling
/// decides it.
/// The literal folders and file a glob starts with, joined (`src/api/**`: `src/api`), as
/// [`parse_glob`] finds them; `None` when there are none or the glob does not parse. A
/// glob with no escape, no space at its ends and only plain components is read as it is.
fn literal_prefix(glob: &str) -> Option<std::borrow::Cow<'_, str>> {
    let plain = !glob.contains('\\')
        && glob.trim() == glob
        && !glob.chars().any(char::is_control)
        && glob.split('/').all(|part| !matches!(part, "" | "." | ".."));
    if plain {
        let meta = |part: &str| part.contains(['*', '?', '[', '{']);
        let literal = glob.split('/').take_while(|part| !meta(part)).count();
        if literal == 0 {
            return None;
        }
        let end = glob.split('/').take(literal).map(str::len).sum::<usize>() + literal - 1;
        return Some(std::borrow::Cow::Borrowed(&glob[..end]));
    }
    match parse_glob(glob) {
        Ok(parsed) if !parsed.prefix.is_empty() => {
            Some(std::borrow::Cow::Owned(parsed.prefix.join("/")))
        }
        _ => None,
    }
}

fn candidates(scope: &[String], sorted: &[(&str, usize)]) -> Option<Vec<usize>> {
    let mut found: Vec<usize> = Vec::new();
    for glob in scope {
        let Some(prefix) = literal_prefix(glob) else {
            found = sorted.iter().map(|(_, i)| *i).collect();
            break;
        };
        // The path itself, and every path under it: between `prefix/` and `prefix0`
        // (`0` follows `/`).
        let under = format!("{prefix}/");
        let past = format!("{prefix}0");
        let exact = sorted.partition_point(|(p, _)| *p < prefix.as_ref());
        let start = sorted.partition_point(|(p, _)| *p < under.as_str());
        let end = sorted.partition_point(|(p, _)| *p < past.as_str());
        found.extend(
            sorted[exact..]
                .iter()
                .take_while(|(p, _)| *p == prefix.as_ref())
                .map(|(_, i)| *i),
        );
        found.extend(sorted[start..end].iter().map(|(_, i)| *i));
    }
    found.sort_unstable();
    found.dedup();
    (!found.is_empty()).then_some(found)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_held_region_is_where_the_globs_literal_paths_lead() {
        let holder = |scope: &'static [String]| Holder {
            run: "r",
            task: "t",
            scope,
        };
        let a: Vec<String> = ["src/api/**", "README.md", "d\\ocs/*.md", "src/api/x/**"]
            .iter()
            .map(|g| g.to_string())
            .collect();
        let a: &'static [String] = Box::leak(a.into_boxed_slice());
        assert_eq!(
            held_region(&[holder(a)]),
            Some(vec![
                "README.md".to_string(),
                "docs".to_string(),
                "src/api".to_string(),
                "src/api/x".to_string()
            ])
        );
        // Read as it is or parsed, the same literal start.
        for glob in [
            "src/api/**",
            "src/api/*.rs",
            "README.md",
            "a/b/c",
            "**/x",
            "*.md",
            "src/{a,b}/x",
            "d\\ocs/*.md",
            " src/x ",
            "src//x/**",
            "./src/x",
            "src/",
            "/src/x",
            "a/../b/**",
            "../x",
            "é/ü/**",
        ] {
            let parsed = parse_glob(glob)
                .ok()
                .filter(|p| !p.prefix.is_empty())
                .map(|p| p.prefix.join("/"));
            assert_eq!(
                literal_prefix(glob).map(|p| p.into_owned()),
                parsed,
                "{glob}"
            );
        }
        // A glob with no literal folder first, or one that does not parse.
        for anywhere in ["**/*.rs", "*.md", "../x"] {
            let b: &'static [String] = Box::leak(vec![anywhere.to_string()].into_boxed_slice());
            assert_eq!(held_region(&[holder(a), holder(b)]), None, "{anywhere}");
        }
    }

    use super::*;

    fn change(path: &str, kind: ChangeKind) -> Change {
        Change::new(path, kind)
    }

    fn identity(role: &str, scope: &[&str]) -> RunIdentity {
        RunIdentity {
            run: "r1".into(),
            task: "t1".into(),
            role: role.into(),
            scope: scope.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn normalisation_resolves_dots_and_refuses_escape() {
        assert_eq!(normalize_path("./src//a/./b.rs").unwrap(), "src/a/b.rs");
        assert_eq!(normalize_path("/src/x/../y.rs").unwrap(), "src/y.rs");
        assert_eq!(normalize_path("src/../../etc"), Err(PathError::EscapesRoot));
        assert_eq!(normalize_path("..").unwrap_err(), PathError::EscapesRoot);
    }

    #[test]
    fn star_does_not_cross_directories_but_double_star_does() {
        let scope = Scope::new(&["src/*.rs", "docs/**"]).unwrap();
        assert!(scope.contains("src/a.rs"));
        assert!(!scope.contains("src/deep/a.rs"));
        assert!(scope.contains("docs/a/b/c.md"));
        assert!(!scope.contains("docsx/a.md"));
    }

    #[test]
    fn literal_and_trailing_slash_patterns_cover_directories() {
        let scope = Scope::new(&["src/routes", "tests/"]).unwrap();
        assert!(scope.contains("src/routes"));
        assert!(scope.contains("src/routes/a/b.rs"));
        assert!(!scope.contains("src/routes2/a.rs"));
        assert!(scope.contains("tests/x.rs"));
        assert!(!scope.contains("tests"));
    }

    #[test]
    fn globs_are_normalised_and_root_or_escape_refused() {
        let scope = Scope::new(&["./src/**"]).unwrap();
        assert!(scope.contains("src/a.rs"));
        assert_eq!(scope.globs(), ["./src/**"]);
        assert!(Scope::new(&["."]).is_err());
        assert!(Scope::new(&["../x/**"]).is_err());
        assert!(Scope::new(&["src/[a"]).is_err());
    }

    #[test]
    fn matching_is_case_sensitive() {
        let scope = Scope::new(&["src/**"]).unwrap();
        assert!(!scope.contains("SRC/a.rs"));
        let v = audit_changes(&scope, &[change("Src/a.rs", ChangeKind::Added)]);
        assert_eq!(v.len(), 1);
    }

    #[test]
    fn protected_paths_resist_case_and_ignorable_characters() {
        assert_eq!(protected_rule(".crew/flight.toml"), Some(".crew/"));
        assert_eq!(protected_rule(".crew"), Some(".crew/"));
        assert_eq!(protected_rule(".CREW/flight.toml"), Some(".crew/"));
        assert_eq!(protected_rule(".cr\u{200c}ew/x"), Some(".crew/"));
        assert_eq!(protected_rule(".crew./x"), Some(".crew/"));
        assert_eq!(
            protected_rule("Docs/State/CREW.json"),
            Some("docs/state/crew.json")
        );
        assert_eq!(protected_rule(".crewmate/x"), None);
        assert_eq!(protected_rule("docs/state/crew.json.bak"), None);
    }

    #[test]
    fn verdict_names_each_violation_with_the_scope() {
        let id = identity("implement", &["src/routes/**"]);
        let changes = [
            change("src/routes/a.rs", ChangeKind::Modified),
            change("src/other.rs", ChangeKind::Added),
            change("src/../../etc/passwd", ChangeKind::Added),
            change(".crew/flight.toml", ChangeKind::Modified),
            change("src/routes/x/../../lib.rs", ChangeKind::Deleted),
        ];
        let v = check_commit(&id, &changes);
        let text: Vec<String> = v.iter().map(|v| v.to_string()).collect();
        assert_eq!(
            text,
            [
                "src/other.rs (added) is outside the write scope src/routes/**",
                "src/../../etc/passwd leads outside the repository",
                ".crew/flight.toml (modified) is protected: no worker may commit .crew/",
                "src/routes/x/../../lib.rs (deleted) is outside the write scope src/routes/**",
            ]
        );
    }

    #[test]
    fn protected_beats_a_scope_that_covers_it() {
        let id = identity("implement", &["**"]);
        let v = check_commit(&id, &[change("docs/state/crew.json", ChangeKind::Modified)]);
        assert!(matches!(v[0], Violation::Protected { .. }));
    }

    #[test]
    fn read_only_roles_may_not_commit_and_unknown_roles_fail_closed() {
        for role in ["review", "investigate"] {
            let v = check_commit(&identity(role, &["**"]), &[]);
            assert_eq!(v, [Violation::ReadOnlyRole { role: role.into() }]);
        }
        let v = check_commit(&identity("boss", &["**"]), &[]);
        assert!(matches!(&v[0], Violation::BadIdentity { reason } if reason.contains("boss")));
        assert!(
            check_commit(
                &identity("cleanup", &["**"]),
                &[change("a", ChangeKind::Deleted)]
            )
            .is_empty()
        );
    }

    #[test]
    fn overlap_is_decided_conservatively() {
        let v = |globs: &[&str]| globs.iter().map(|g| g.to_string()).collect::<Vec<_>>();
        assert_eq!(scopes_overlap(&v(&["src/a/**"]), &v(&["src/b/**"])), None);
        assert_eq!(scopes_overlap(&v(&["src/a.rs"]), &v(&["src/b.rs"])), None);
        assert_eq!(
            scopes_overlap(&v(&["docs/"]), &v(&["src/**", "tests/*.rs"])),
            None
        );
        assert_eq!(
            scopes_overlap(&v(&["src/**"]), &v(&["docs/x", "src/a.rs"])),
            Some(("src/**".into(), "src/a.rs".into()))
        );
        assert!(scopes_overlap(&v(&["src/routes"]), &v(&["src/routes/x.rs"])).is_some());
        assert!(scopes_overlap(&v(&["**/*.rs"]), &v(&["docs/a.md"])).is_some());
        assert!(scopes_overlap(&v(&["./src/*.rs"]), &v(&["src/*.md"])).is_some());
    }

    #[test]
    fn a_glob_with_a_line_break_or_a_control_character_is_refused_on_one_line() {
        let err = Scope::new(&["x\nb/**"]).unwrap_err();
        assert_eq!(err.glob, "x\\nb/**");
        assert!(err.reason.contains("line break"), "{err}");
        assert!(!err.to_string().contains('\n'), "{err}");
        for bad in ["src/\r**", "src/\u{1b}[2K**", "src/\t/**", "src/\u{85}"] {
            assert!(Scope::new(&[bad]).is_err(), "{bad:?}");
            assert!(check_globs(&[bad]).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_matcher_and_the_overlap_check_read_escapes_alike() {
        let v = |globs: &[&str]| globs.iter().map(|g| g.to_string()).collect::<Vec<_>>();
        let escaped = Scope::new(&["src/rout\\es/**"]).unwrap();
        assert!(escaped.contains("src/routes/a.rs"));
        assert!(scopes_overlap(&v(&["src/rout\\es/**"]), &v(&["src/routes/**"])).is_some());
        assert!(scopes_overlap(&v(&["src/routes/**"]), &v(&["src/rout\\es/x.rs"])).is_some());
        // An escaped glob character is a literal one, for both.
        let star = Scope::new(&["src/\\*/**"]).unwrap();
        assert!(star.contains("src/*/a.rs"));
        assert!(!star.contains("src/b/a.rs"));
        assert_eq!(scopes_overlap(&v(&["src/\\*/**"]), &v(&["src/b/**"])), None);
        assert!(scopes_overlap(&v(&["src/*/**"]), &v(&["src/b/**"])).is_some());
        // What the two could read differently is refused.
        for bad in ["src\\/a/**", "src/a\\", "src/\\.\\./x"] {
            assert!(Scope::new(&[bad]).is_err(), "{bad}");
        }
    }

    #[test]
    fn refused_entries_and_links_are_named() {
        let scope = Scope::new(&["src/**"]).unwrap();
        let mut bad = change("src/x/.git/config", ChangeKind::Added);
        bad.refused = Some("the .git name may never be used".into());
        let mut link = change("src/l", ChangeKind::Added);
        link.link_target = Some("docs/secret".into());
        let mut gone = change("src/.GIT/x", ChangeKind::Deleted);
        gone.refused = Some("the .git name may never be used".into());
        let v = audit_changes(&scope, &[bad.clone(), link.clone(), gone]);
        assert_eq!(
            v.iter().map(ToString::to_string).collect::<Vec<_>>(),
            ["src/x/.git/config (added) is refused: the .git name may never be used"]
        );
        assert_eq!(
            links_leaving_scope(&scope, &[bad, link]),
            ["src/l -> docs/secret"]
        );
    }

    #[test]
    fn an_empty_scope_admits_nothing() {
        let v = check_commit(
            &identity("implement", &[]),
            &[change("a.txt", ChangeKind::Added)],
        );
        assert_eq!(
            v[0].to_string(),
            "a.txt (added) is outside the write scope (the run has none)"
        );
    }

    #[test]
    fn a_staged_path_a_live_run_holds_is_named_once_per_holder() {
        let api = vec!["src/api/**".to_string()];
        let docs = vec!["docs/**".to_string()];
        let holders = [
            Holder {
                run: "r1",
                task: "api",
                scope: &api,
            },
            Holder {
                run: "r2",
                task: "docs",
                scope: &docs,
            },
        ];
        let changes = [
            change("src/api/x.rs", ChangeKind::Modified),
            change("README.md", ChangeKind::Modified),
        ];
        let held = held_paths(&holders, &changes);
        assert_eq!(held.len(), 1, "{held:?}");
        assert!(held[0].starts_with("src/api/x.rs is held by in-flight run r1 (task api"));
    }

    #[test]
    fn held_paths_finds_what_matching_every_path_against_every_scope_finds() {
        // Every staged path against every compiled scope, as the warning is defined.
        fn every_pair(runs: &[Holder], changes: &[Change]) -> Vec<String> {
            let mut out = Vec::new();
            for run in runs {
                let Ok(scope) = Scope::new(run.scope) else {
                    continue;
                };
                for change in changes {
                    if let Ok(path) = normalize_path(&change.path)
                        && scope.contains(&path)
                    {
                        out.push(format!(
                            "{} is held by in-flight run {} (task {}, scope {})",
                            change.path,
                            run.run,
                            run.task,
                            run.scope.join(", ")
                        ));
                    }
                }
            }
            out
        }
        let scopes: Vec<Vec<String>> = [
            &["src/api/**"][..],
            &["src/api"],
            &["src/api/"],
            &["**/*.rs"],
            &["docs/*.md", "src/rout\\es/**"],
            &["src/[a"],
            &["src/a?i/**"],
            &["src/../README.md"],
            &["src/api.rs", "src/api-x/**"],
            &["zzz/**"],
            &["src/{api,web}/**"],
            &[],
        ]
        .iter()
        .map(|globs| globs.iter().map(|g| g.to_string()).collect())
        .collect();
        let holders: Vec<Holder> = scopes
            .iter()
            .enumerate()
            .map(|(i, scope)| Holder {
                run: [
                    "r0", "r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "ra", "rb",
                ][i],
                task: "t",
                scope,
            })
            .collect();
        let changes: Vec<Change> = [
            "src/api/x.rs",
            "src/api",
            "src/api.rs",
            "src/api-x/y.txt",
            "src/apix/z.rs",
            "src/api0",
            "src/routes/a.rs",
            "src/web/w.txt",
            "./src/api/dot.rs",
            "src/../../escapes.rs",
            "README.md",
            "docs/guide.md",
            "docs/deep/guide.md",
            "lib.rs",
        ]
        .iter()
        .map(|p| change(p, ChangeKind::Modified))
        .collect();
        let expected = every_pair(&holders, &changes);
        assert_eq!(held_paths(&holders, &changes), expected);
        assert_eq!(expected.len(), 23, "{expected:#?}");
        assert!(held_paths(&holders, &[]).is_empty());
        // As lines, each made safe whole: an escape at a path's end is read with what
        // follows it, as in the warnings made one string each.
        let mut changes = changes;
        changes.push(change("src/api/esc\u{1b}", ChangeKind::Added));
        let lines = |prefix: &str| {
            let mut text = String::from("before\n");
            held_path_lines(&holders, &changes, prefix, &mut text);
            text
        };
        let each: String = held_paths(&holders, &changes)
            .iter()
            .map(|w| format!("> {}\n", crate::core::text::sanitize(w)))
            .collect();
        assert_eq!(lines("> "), format!("before\n{each}"));
        assert_eq!(each.lines().count(), 28, "{each}");
        assert!(each.contains("src/api/escs held by"), "{each}");
    }

    /// The plain folders and files a live run's scope names are matched by comparing
    /// paths; each decision is the compiled glob's, and a glob with a pattern in it is
    /// left to the compiled scope.
    #[test]
    fn plain_scopes_match_as_their_compiled_globs_do() {
        let globs = [
            "src/api/**",
            "src/api",
            "src/api/",
            "./src//api/**",
            "src/../docs/**",
            "d000/**",
            "a b/ü/**",
            "README.md",
            "src/api.rs",
            "src/a?i/**",
            "src/*/**",
            "src/rout\\es/**",
            "src/api/**/*.rs",
            "**",
            "src/**/",
        ];
        let paths = [
            "src/api",
            "src/api/x.rs",
            "src/api/deep/y.rs",
            "src/api.rs",
            "src/api0",
            "src/apix/z.rs",
            "src",
            "docs",
            "docs/a.md",
            "d000",
            "d000/f.txt",
            "d0000/f.txt",
            "a b/ü/c",
            "a b/ü",
            "README.md",
            "README.md/x",
            "src/routes/a.rs",
        ];
        let mut plain = 0;
        for glob in globs {
            let globs = vec![glob.to_string()];
            let compiled = Scope::new(&globs).unwrap();
            let held = ScopeMatcher::new(&globs).unwrap();
            if matches!(held, ScopeMatcher::Plain(_)) {
                plain += 1;
            }
            for path in paths {
                assert_eq!(
                    held.contains(path),
                    compiled.contains(path),
                    "{glob} against {path}"
                );
            }
        }
        assert!(plain_glob("src/a?i/**").is_none());
        assert!(plain_glob("src/rout\\es/**").is_none());
        assert!(plain_glob("src/**/").is_none());
        assert_eq!(plain_glob("src/api/**"), Some(("src/api".into(), false)));
        assert_eq!(plain_glob("README.md"), Some(("README.md".into(), true)));
        assert_eq!(plain, 9);
    }
}
