//! The agent files of `git crew init --agents`, written and taken out as
//! `core::agents` plans them, each recorded in the init record before it is written so
//! that `init --uninstall` removes exactly what was added.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::core::agents::{self, Add, Kind, Remove};
use crate::run::error::{Context, Result};
use crate::state::init_record::{AgentFile, InitRecord};

/// What init did to one agent file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AgentAction {
    Created,
    Updated,
    Unchanged,
    /// Left as it is (a warning says why).
    Kept,
    Removed,
    /// Nothing of git-crew's was there.
    Absent,
}

#[derive(Debug, Serialize)]
pub struct AgentStep {
    pub kind: Kind,
    pub path: PathBuf,
    pub action: AgentAction,
}

/// One agent file as an install would leave it: its text before and after (the same when
/// nothing changes), for `init --dry-run --agents`.
pub struct Planned {
    pub kind: Kind,
    pub path: PathBuf,
    pub action: AgentAction,
    pub before: Option<String>,
    pub after: Option<String>,
}

fn read(path: &Path) -> Result<Option<String>> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

fn recorded(record: &InitRecord, kind: Kind) -> Option<&AgentFile> {
    record.agents.iter().find(|a| a.kind == kind)
}

/// What adding git-crew's part to every agent file would do, written nowhere.
pub fn plan(workdir: &Path, record: &InitRecord) -> Result<Vec<(Planned, Option<String>)>> {
    let mut out = Vec::new();
    for kind in Kind::ALL {
        let path = workdir.join(kind.path());
        let before = read(&path)?;
        let written = recorded(record, kind).and_then(|a| a.written.as_deref());
        let (action, after, why) = match agents::add(kind, before.as_deref(), written) {
            Add::Create(text) => (AgentAction::Created, Some(text), None),
            Add::Update(text) => (AgentAction::Updated, Some(text), None),
            Add::Unchanged => (AgentAction::Unchanged, before.clone(), None),
            Add::Keep(why) => (AgentAction::Kept, before.clone(), Some(why)),
        };
        let why = why.map(|why| format!("kept {}: {why}", path.display()));
        out.push((
            Planned {
                kind,
                path,
                action,
                before,
                after,
            },
            why,
        ));
    }
    Ok(out)
}

/// Adds git-crew's part to every agent file, recording each in `record` (saved by
/// `checkpoint`) before it is written.
pub fn install(
    workdir: &Path,
    record: &mut InitRecord,
    checkpoint: &dyn Fn(&InitRecord) -> crate::state::error::Result<()>,
    warnings: &mut Vec<String>,
) -> Result<Vec<AgentStep>> {
    let mut steps = Vec::new();
    for (planned, why) in plan(workdir, record)? {
        warnings.extend(why);
        if let (AgentAction::Created | AgentAction::Updated, Some(text)) =
            (planned.action, &planned.after)
        {
            let dirs_created = missing_dirs(workdir, &planned.path);
            let entry = match record.agents.iter().position(|a| a.kind == planned.kind) {
                Some(i) => &mut record.agents[i],
                None => {
                    record.agents.push(AgentFile {
                        kind: planned.kind,
                        created: false,
                        written: None,
                        dirs_created: Vec::new(),
                    });
                    let last = record.agents.len() - 1;
                    &mut record.agents[last]
                }
            };
            if planned.action == AgentAction::Created {
                entry.created = true;
                entry.dirs_created = dirs_created;
            }
            entry.written = (planned.kind == Kind::Skill).then(|| text.clone());
            checkpoint(record)?;
            if let Some(dir) = planned.path.parent() {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("cannot create {}", dir.display()))?;
            }
            crate::sys::fs::write_atomic(&planned.path, text, mode_of(&planned.path))?;
        }
        steps.push(AgentStep {
            kind: planned.kind,
            path: planned.path,
            action: planned.action,
        });
    }
    Ok(steps)
}

/// The mode a file rewritten in place keeps: its own, or a new file's.
fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).map_or(0o644, |m| m.permissions().mode() & 0o7777)
}

/// The folders between `workdir` and `file` that do not exist yet, innermost first.
fn missing_dirs(workdir: &Path, file: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let mut at = file.parent();
    while let Some(dir) = at {
        if dir == workdir || dir.exists() {
            break;
        }
        dirs.push(dir.to_path_buf());
        at = dir.parent();
    }
    dirs
}

/// Takes git-crew's part out of every agent file init wrote to.
pub fn uninstall(
    workdir: &Path,
    record: &InitRecord,
    warnings: &mut Vec<String>,
) -> Result<Vec<AgentStep>> {
    let mut steps = Vec::new();
    for added in &record.agents {
        let path = workdir.join(added.kind.path());
        let current = read(&path)?;
        let plan = agents::remove(
            added.kind,
            current.as_deref(),
            added.created,
            added.written.as_deref(),
        );
        let action = match plan {
            Remove::Delete => {
                std::fs::remove_file(&path)
                    .with_context(|| format!("cannot remove {}", path.display()))?;
                // Only the folders init made, and only while they are empty.
                for dir in &added.dirs_created {
                    if std::fs::remove_dir(dir).is_err() {
                        break;
                    }
                }
                AgentAction::Removed
            }
            Remove::Update(text) => {
                crate::sys::fs::write_atomic(&path, &text, mode_of(&path))?;
                AgentAction::Removed
            }
            Remove::Absent => AgentAction::Absent,
            Remove::Keep(why) => {
                warnings.push(format!("kept {}: {why}", path.display()));
                AgentAction::Kept
            }
        };
        steps.push(AgentStep {
            kind: added.kind,
            path,
            action,
        });
    }
    Ok(steps)
}
