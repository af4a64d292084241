//! What `git crew init` added, so `init --uninstall` removes exactly that and nothing the
//! user had before: `<git-common-dir>/crew/init.json`.

use std::path::{Path, PathBuf};

use super::error::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::sys::fs::write_atomic;

const FILE: &str = "init.json";

/// One config value init added.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigValue {
    pub key: String,
    pub value: String,
}

/// A setting init moved from one config file to another, so uninstall can move it back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigMove {
    pub key: String,
    /// The values the key held in `from`, in order; the last one was written to `to`.
    pub values: Vec<String>,
    pub from: PathBuf,
    pub to: PathBuf,
    /// `to` did not exist before init wrote it.
    #[serde(default)]
    pub created: bool,
}

/// This repository's own hooks directory, made by init when `core.hooksPath` names a
/// folder other repositories share: its hooks run the shared folder's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepoHooks {
    pub dir: PathBuf,
    /// The shared folder its hooks run.
    pub shared: PathBuf,
}

/// Everything init added over all its runs (a second init adds nothing new).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InitRecord {
    /// The hooks directory the hooks went into.
    #[serde(default)]
    pub hooks_dir: Option<PathBuf>,
    /// Hooks that did not exist before init created them.
    #[serde(default)]
    pub hooks_created: Vec<String>,
    #[serde(default)]
    pub config_added: Vec<ConfigValue>,
    /// Settings moved out of the shared config (`core.bare` of a bare repository with
    /// linked worktrees) when `extensions.worktreeConfig` went on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub config_moved: Vec<ConfigMove>,
    /// The hooks directory init made for this repository alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repo_hooks: Option<RepoHooks>,
    /// The starter `.crew/flight.toml` as written, when init created it.
    #[serde(default)]
    pub flight_created: Option<String>,
    /// The agent files `init --agents` wrote to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<AgentFile>,
}

/// One agent file `init --agents` wrote git-crew's part into.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentFile {
    pub kind: crate::core::agents::Kind,
    /// The file did not exist before init made it.
    pub created: bool,
    /// The whole file as init last wrote it, for a file that is git-crew's alone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written: Option<String>,
    /// The folders init made on the way to it, innermost first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dirs_created: Vec<PathBuf>,
}

impl InitRecord {
    pub fn load(state_dir: &Path) -> Result<Option<InitRecord>> {
        let path = state_dir.join(FILE);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .with_context(|| format!("cannot parse {}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
        }
    }

    pub fn save(&self, state_dir: &Path) -> Result<()> {
        std::fs::create_dir_all(state_dir)
            .with_context(|| format!("cannot create {}", state_dir.display()))?;
        let text = serde_json::to_string_pretty(self)?;
        Ok(write_atomic(&state_dir.join(FILE), &text, 0o644)?)
    }

    pub fn delete(state_dir: &Path) -> Result<()> {
        let path = state_dir.join(FILE);
        match std::fs::remove_file(&path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                Err(e).with_context(|| format!("cannot remove {}", path.display()))
            }
            _ => Ok(()),
        }
    }
}
