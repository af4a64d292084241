//! `init` carried out: installs git-crew's hook blocks, the config it needs and the
//! starter `.crew/flight.toml`, recording each addition in `init.json` as it goes, and
//! takes back exactly what that record names on uninstall. What to install and when a
//! value is init's is `core::install`'s; the hook file work is `git::hooks_dir`'s, config
//! goes through `GitRunner`, the record is `state::init_record`'s. Returns what it did as
//! values; rendering and warnings on stderr are `cli::init`'s.

use std::path::{Path, PathBuf};

use anyhow::anyhow;
use serde::Serialize;

use crate::core::hookblock;
use crate::core::install::{self, CONFIG, ConfigAction, FlightAction, SHIMS, StarterUndo};
use crate::git::hooks_dir::{self, ChainTargetTaken, HookAction};
use crate::git::repo::state_dir;
use crate::git::run::GitRunner;
use crate::state::init_record::{ConfigValue, InitRecord};
use crate::state::live;
use crate::state::runs::RunStore;

/// Why init does nothing.
#[derive(Debug)]
pub enum Refusal {
    /// `workdir` is the worktree of a run; `main` is the main checkout.
    InsideRunWorktree { workdir: PathBuf, main: PathBuf },
    /// A hook cannot be chained: the name it would be moved to is taken.
    HookInTheWay(ChainTargetTaken),
}

/// What init (or its uninstall) did, as `git crew init` prints it.
#[derive(Debug, Serialize)]
pub struct Setup {
    pub hooks_dir: PathBuf,
    pub hooks: Vec<HookStep>,
    pub config: Vec<ConfigStep>,
    pub flight: FlightStep,
    /// The local state folder (install only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_dir: Option<PathBuf>,
    pub warnings: Vec<String>,
}

#[derive(Debug, Serialize)]
pub struct HookStep {
    pub name: &'static str,
    pub path: PathBuf,
    pub action: HookAction,
}

#[derive(Debug, Serialize)]
pub struct ConfigStep {
    pub key: String,
    pub value: String,
    pub action: ConfigAction,
}

#[derive(Debug, Serialize)]
pub struct FlightStep {
    pub path: PathBuf,
    pub action: FlightAction,
}

/// Why init would refuse to work from `workdir`, before it does anything: a run's
/// worktree is git-crew's, not a place to set it up (or take it down) from — its records
/// are the main checkout's.
pub fn refusal(repo: &crate::git::Repository, workdir: &Path) -> Option<Refusal> {
    let crew_worktrees = RunStore::new(&state_dir(repo)).worktrees_dir();
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    canon(workdir)
        .starts_with(canon(&crew_worktrees))
        .then(|| Refusal::InsideRunWorktree {
            workdir: workdir.to_path_buf(),
            main: repo
                .common_dir()
                .parent()
                .unwrap_or(repo.common_dir())
                .to_path_buf(),
        })
}

/// Sets git-crew up in the repository of `workdir` (`uninstall`: takes it down); refused
/// from a run's worktree ([`refusal`]).
pub fn init(
    repo: &crate::git::Repository,
    workdir: &Path,
    uninstall: bool,
) -> anyhow::Result<Result<Setup, Refusal>> {
    let state = state_dir(repo);
    if let Some(refused) = refusal(repo, workdir) {
        return Ok(Err(refused));
    }
    let git = GitRunner::new(workdir);
    if uninstall {
        self::uninstall(repo, workdir, &state, &git).map(Ok)
    } else {
        install(repo, workdir, &state, &git)
    }
}

/// The shim's block, with the absolute path of this binary as the fallback for when
/// `git-crew` is not on PATH at commit time — unless the hooks live in the work tree
/// (husky's `.husky`), where they are committed and a path of this machine has no place.
fn shim_block(shim: &str, embed_exe: bool) -> anyhow::Result<String> {
    let block = hookblock::block_of(shim)
        .ok_or_else(|| anyhow!("a shipped hook shim has no marker block"))?;
    let exe = if embed_exe {
        std::env::current_exe()?.to_string_lossy().into_owned()
    } else {
        String::new()
    };
    Ok(install::with_exe(block, &exe))
}

/// Whether `dir` lies inside the work tree (its hooks are then usually committed), and
/// not inside the git dir.
fn inside_work_tree(dir: &Path, workdir: &Path, git_dir: &Path) -> bool {
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let dir = canon(dir);
    dir.starts_with(canon(workdir)) && !dir.starts_with(canon(git_dir))
}

fn install(
    repo: &crate::git::Repository,
    workdir: &Path,
    state: &Path,
    git: &GitRunner,
) -> anyhow::Result<Result<Setup, Refusal>> {
    let mut record = InitRecord::load(state)?.unwrap_or_default();
    // Saved after each step, so a failure half-way never leaves an addition that
    // uninstall does not know about.
    let checkpoint = |record: &InitRecord| record.save(state);
    let dir = hooks_dir::hooks_dir(repo);
    let mut warnings = Vec::new();
    let shared_hooks_path =
        crate::git::config::hooks_path_set(repo) && git.local_values("core.hooksPath")?.is_empty();
    if shared_hooks_path {
        warnings.push(format!(
            "core.hooksPath is set outside this repository: the hooks in {} serve every repository that uses it",
            dir.display()
        ));
    }
    std::fs::create_dir_all(&dir)?;
    let embed_exe = !inside_work_tree(&dir, workdir, repo.common_dir());
    if !embed_exe {
        warnings.push(format!(
            "the hooks in {} are part of the work tree: they call git-crew from PATH",
            dir.display()
        ));
    }
    record.hooks_dir = Some(dir.clone());
    let mut hooks = Vec::new();
    for (name, shim) in SHIMS {
        let block = shim_block(shim, embed_exe)?;
        let action = match hooks_dir::install(&dir, name, &block) {
            Ok(action) => action,
            Err(e) => {
                return match e.downcast::<ChainTargetTaken>() {
                    Ok(taken) => Ok(Err(Refusal::HookInTheWay(taken))),
                    Err(e) => Err(e),
                };
            }
        };
        if action == HookAction::Created && !record.hooks_created.iter().any(|h| h == name) {
            record.hooks_created.push(name.to_string());
        }
        checkpoint(&record)?;
        hooks.push(HookStep {
            name,
            path: dir.join(name),
            action,
        });
    }

    let mut config = Vec::new();
    for (key, value, multi) in CONFIG {
        let current = git.local_values(key)?;
        let action = if install::config_present(&current, value, *multi) {
            ConfigAction::Kept
        } else {
            if *multi {
                git.add_local(key, value)
            } else {
                git.set_local(key, value)
            }?;
            let added = ConfigValue {
                key: key.to_string(),
                value: value.to_string(),
            };
            if install::config_is_ours(&current, *multi) && !record.config_added.contains(&added) {
                record.config_added.push(added);
                checkpoint(&record)?;
            }
            ConfigAction::Set
        };
        config.push(ConfigStep {
            key: key.to_string(),
            value: value.to_string(),
            action,
        });
    }

    let flight_path = workdir.join(".crew").join("flight.toml");
    let flight_action = if flight_path.exists() {
        FlightAction::Kept
    } else {
        std::fs::create_dir_all(flight_path.parent().expect("has a parent"))?;
        let path = std::env::var_os("PATH");
        let found = |program| super::backends::program_exists(program, path.as_deref());
        let starter = install::starter_flight(found("codex"), found("claude"));
        record.flight_created = Some(starter.clone());
        checkpoint(&record)?;
        crate::sys::fs::write_atomic(&flight_path, &starter, 0o644)?;
        FlightAction::Created
    };

    // Local state lives in <git-common-dir>/crew/, inside the git dir: git never tracks
    // it, so nothing needs ignoring in the work tree.
    Ok(Ok(Setup {
        hooks_dir: dir,
        hooks,
        config,
        flight: FlightStep {
            path: flight_path,
            action: flight_action,
        },
        state_dir: Some(state.to_path_buf()),
        warnings,
    }))
}

fn uninstall(
    repo: &crate::git::Repository,
    workdir: &Path,
    state: &Path,
    git: &GitRunner,
) -> anyhow::Result<Setup> {
    let record = InitRecord::load(state)?;
    let known = record.is_some();
    let record = record.unwrap_or_default();
    let dir = record
        .hooks_dir
        .clone()
        .unwrap_or_else(|| hooks_dir::hooks_dir(repo));
    let mut warnings = Vec::new();
    let mut hooks = Vec::new();
    for (name, _) in SHIMS {
        let created = record.hooks_created.iter().any(|h| h == name);
        let action = hooks_dir::uninstall(&dir, name, created)?;
        hooks.push(HookStep {
            name,
            path: dir.join(name),
            action,
        });
    }

    let in_use = worktree_config_in_use(repo);
    let mut config = Vec::new();
    for added in &record.config_added {
        let action = if install::kept_on_uninstall(&added.key, in_use) {
            warnings.push(
                "kept extensions.worktreeConfig: worktrees still use their own config".to_string(),
            );
            ConfigAction::Kept
        } else if install::config_holds(&git.local_values(&added.key)?, &added.value) {
            git.unset_local(&added.key, &added.value)?;
            ConfigAction::Unset
        } else {
            ConfigAction::Absent
        };
        config.push(ConfigStep {
            key: added.key.clone(),
            value: added.value.clone(),
            action,
        });
    }
    if !known {
        warnings
            .push("no record of what init added here: only hook blocks were removed".to_string());
    }

    let flight_path = workdir.join(".crew").join("flight.toml");
    let current = record
        .flight_created
        .as_ref()
        .and_then(|_| std::fs::read_to_string(&flight_path).ok());
    let flight_action =
        match install::starter_undo(record.flight_created.as_deref(), current.as_deref()) {
            StarterUndo::Remove => {
                std::fs::remove_file(&flight_path)?;
                // Only an empty .crew goes; plans or anything else keep it.
                let _ = std::fs::remove_dir(flight_path.parent().expect("has a parent"));
                FlightAction::Removed
            }
            StarterUndo::Edited => {
                warnings.push(format!(
                    "kept {}: it was edited after init",
                    flight_path.display()
                ));
                FlightAction::Kept
            }
            StarterUndo::Absent => FlightAction::Absent,
            StarterUndo::NotOurs => FlightAction::Kept,
        };

    InitRecord::delete(state)?;
    Ok(Setup {
        hooks_dir: dir,
        hooks,
        config,
        flight: FlightStep {
            path: flight_path,
            action: flight_action,
        },
        state_dir: None,
        warnings,
    })
}

/// Whether anything still relies on `extensions.worktreeConfig`: a live run, or any
/// worktree (the main one included) with a non-empty `config.worktree`.
fn worktree_config_in_use(repo: &crate::git::Repository) -> bool {
    let live = !live::list(&state_dir(repo), &mut |_, _| {}).is_empty();
    live || crate::git::identity::worktree_git_dirs(repo.common_dir())
        .iter()
        .any(|dir| {
            std::fs::read(dir.join("config.worktree")).is_ok_and(|b| !b.trim_ascii().is_empty())
        })
}
