//! `init` carried out: installs git-crew's hook blocks, the config it needs and the
//! starter `.crew/flight.toml`, recording each addition in `init.json` as it goes, and
//! takes back exactly what that record names on uninstall. What to install and when a
//! value is init's is `core::install`'s; the hook file work is `git::hooks_dir`'s, config
//! goes through `GitRunner`, the record is `state::init_record`'s. Returns what it did as
//! values; rendering and warnings on stderr are `cli::init`'s.

use crate::run::error::Result;
use std::path::{Path, PathBuf};

use crate::run::error::Context;
use serde::Serialize;

use crate::core::hookblock;
use crate::core::install::{self, CONFIG, ConfigAction, FlightAction, SHIMS, StarterUndo};
use crate::git::hooks_dir::{self, ChainTargetTaken, HookAction, InstallError};
use crate::git::repo::state_dir;
use crate::git::run::GitRunner;
use crate::state::init_record::{ConfigMove, ConfigValue, InitRecord, RepoHooks};
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
    /// The folder `core.hooksPath` names outside this repository, shared with other
    /// repositories: left as it is, and run by the hooks of `hooks_dir`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared_hooks_dir: Option<PathBuf>,
    pub hooks: Vec<HookStep>,
    pub config: Vec<ConfigStep>,
    pub flight: FlightStep,
    /// The agent files (`--agents`, and the uninstall of what it added).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<crate::run::agents::AgentStep>,
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
    /// The config file the value was moved to (`moved`, `kept`) or back to
    /// (`moved-back`); none for the repository's own config.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
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
    agents: bool,
) -> Result<Result<Setup, Refusal>> {
    let state = state_dir(repo);
    if let Some(refused) = refusal(repo, workdir) {
        return Ok(Err(refused));
    }
    let git = GitRunner::new(workdir);
    if uninstall {
        self::uninstall(repo, workdir, &state, &git).map(Ok)
    } else {
        install(repo, workdir, &state, &git, agents)
    }
}

/// The shim's block, with the absolute path of this binary as the fallback for when
/// `git-crew` is not on PATH at commit time — unless the hooks live in the work tree
/// (husky's `.husky`), where they are committed and a path of this machine has no place.
fn shim_block(shim: &str, embed_exe: bool) -> Result<String> {
    let block = hookblock::block_of(shim).context("a shipped hook shim has no marker block")?;
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
    with_agents: bool,
) -> Result<Result<Setup, Refusal>> {
    let mut record = InitRecord::load(state)?.unwrap_or_default();
    // Saved after each step, so a failure half-way never leaves an addition that
    // uninstall does not know about.
    let checkpoint = |record: &InitRecord| record.save(state);
    let mut warnings = Vec::new();
    let mut config = Vec::new();

    // A core.hooksPath other repositories share is never written to: the hooks go into a
    // folder of this repository's own, whose hooks run the shared folder's.
    let shared_hooks_dir = shared_hooks_dir(repo, workdir, git, &record)?;
    let dir = match &shared_hooks_dir {
        Some(shared) => {
            let own = crate::core::layout::repo_hooks(state);
            std::fs::create_dir_all(&own)?;
            // The value git reads in every worktree: named as a person would.
            let own = own.canonicalize().unwrap_or(own);
            record.repo_hooks = Some(RepoHooks {
                dir: own.clone(),
                shared: shared.clone(),
            });
            checkpoint(&record)?;
            hooks_dir::write_repo_hooks(&own, shared)?;
            config.push(set_config(
                git,
                &mut record,
                state,
                "core.hooksPath",
                &own.to_string_lossy(),
            )?);
            own
        }
        None => hooks_dir::hooks_dir(repo),
    };
    std::fs::create_dir_all(&dir)?;
    // Named as a person would (a linked worktree's common dir is `<git-dir>/../..`).
    let dir = dir.canonicalize().unwrap_or(dir);
    let embed_exe = !inside_work_tree(&dir, workdir, repo.common_dir());
    if !embed_exe {
        warnings.push(format!(
            "the hooks in {} are part of the work tree: they call git-crew from PATH",
            dir.display()
        ));
    }
    if let Some(old) = record.hooks_dir.as_ref().filter(|old| **old != dir)
        && SHIMS
            .iter()
            .any(|(name, _)| hooks_dir::has_block(old, name).unwrap_or(false))
    {
        warnings.push(format!(
            "the hooks in {} still carry git-crew's block from an earlier init; git-crew's hooks are in {} now: take the block out of {} by hand if nothing else needs it",
            old.display(),
            dir.display(),
            old.display()
        ));
    }
    record.hooks_dir = Some(dir.clone());
    let mut hooks = Vec::new();
    for (name, shim) in SHIMS {
        let action = match install_hook(&dir, name, shim, embed_exe)? {
            Ok(action) => action,
            Err(taken) => return Ok(Err(Refusal::HookInTheWay(taken))),
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

    for (key, value, setting) in CONFIG {
        let current = git.local_values(key)?;
        let action = if install::config_present(
            &current,
            value,
            *setting,
            set_anywhere(git, key, *setting)?,
        ) {
            ConfigAction::Kept
        } else {
            if *setting == install::Setting::Multi {
                git.add_local(key, value)
            } else {
                git.set_local(key, value)
            }?;
            let added = ConfigValue {
                key: key.to_string(),
                value: value.to_string(),
            };
            if install::config_is_ours(&current, *setting) && !record.config_added.contains(&added)
            {
                record.config_added.push(added);
                checkpoint(&record)?;
            }
            ConfigAction::Set
        };
        config.push(ConfigStep {
            key: key.to_string(),
            value: value.to_string(),
            action,
            file: None,
        });
    }
    // What an earlier init set and this one replaces.
    for (key, value) in install::REPLACED_CONFIG {
        let old = ConfigValue {
            key: key.to_string(),
            value: value.to_string(),
        };
        if !record.config_added.contains(&old) {
            continue;
        }
        if install::config_holds(&git.local_values(key)?, value) {
            git.unset_local(key, value)?;
            config.push(ConfigStep {
                key: key.to_string(),
                value: value.to_string(),
                action: ConfigAction::Unset,
                file: None,
            });
        }
        record.config_added.retain(|added| *added != old);
        checkpoint(&record)?;
    }
    config.extend(move_shared_worktree_settings(
        repo,
        git,
        &mut record,
        state,
    )?);

    let flight_path = workdir.join(".crew").join("flight.toml");
    let flight_action = if flight_path.exists() {
        FlightAction::Kept
    } else {
        std::fs::create_dir_all(flight_path.parent().expect("has a parent"))?;
        let starter = starter_flight();
        record.flight_created = Some(starter.clone());
        checkpoint(&record)?;
        crate::sys::fs::write_atomic(&flight_path, &starter, 0o644)?;
        FlightAction::Created
    };
    let agents = if with_agents {
        crate::run::agents::install(workdir, &mut record, &checkpoint, &mut warnings)?
    } else {
        Vec::new()
    };

    // Local state lives in <git-common-dir>/crew/, inside the git dir: git never tracks
    // it, so nothing needs ignoring in the work tree.
    Ok(Ok(Setup {
        hooks_dir: dir,
        shared_hooks_dir,
        hooks,
        config,
        flight: FlightStep {
            path: flight_path,
            action: flight_action,
        },
        agents,
        state_dir: Some(state.to_path_buf()),
        warnings,
    }))
}

/// Whether any config file sets `key`, for a value init sets only by default (asked of
/// git only then).
fn set_anywhere(git: &GitRunner, key: &str, setting: install::Setting) -> Result<bool> {
    Ok(setting == install::Setting::Default && !git.scoped_values(key)?.is_empty())
}

/// What `init` would do, and the text of each file it would write, with nothing written:
/// `init --dry-run`. Built from the same plans the install carries out (the hooks'
/// [`hooks_dir::plan`], the config rules of `core::install`, the starter flight file).
#[derive(Debug, Serialize)]
pub struct Preview {
    pub hooks_dir: PathBuf,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared_hooks_dir: Option<PathBuf>,
    pub hooks: Vec<FilePreview<HookAction>>,
    pub config: Vec<ConfigStep>,
    pub flight: FilePreview<FlightAction>,
    /// The agent files (`--agents`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<FilePreview<crate::run::agents::AgentAction>>,
    /// Why a file would be left as it is.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// One file init would write: what it would do, and the change as a unified diff (empty
/// when nothing changes).
#[derive(Debug, Serialize)]
pub struct FilePreview<A> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<&'static str>,
    pub path: PathBuf,
    pub action: A,
    /// Where a hook that cannot take a shell block would be moved aside to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moved_to: Option<PathBuf>,
    pub diff: String,
}

/// [`Preview`] of an install in the repository of `workdir`; refused as init is.
pub fn preview(
    repo: &crate::git::Repository,
    workdir: &Path,
    with_agents: bool,
) -> Result<Result<Preview, Refusal>> {
    if let Some(refused) = refusal(repo, workdir) {
        return Ok(Err(refused));
    }
    let state = state_dir(repo);
    let git = GitRunner::new(workdir);
    let record = InitRecord::load(&state)?.unwrap_or_default();
    let shared_hooks_dir = shared_hooks_dir(repo, workdir, &git, &record)?;
    let mut config = Vec::new();
    let dir = match &shared_hooks_dir {
        Some(_) => {
            let own = crate::core::layout::repo_hooks(&state);
            let own = own.canonicalize().unwrap_or(own);
            let current = git.local_values("core.hooksPath")?;
            let value = own.to_string_lossy().into_owned();
            let action = if current.last() == Some(&value) {
                ConfigAction::Kept
            } else {
                ConfigAction::Set
            };
            config.push(ConfigStep {
                key: "core.hooksPath".to_string(),
                value,
                action,
                file: None,
            });
            own
        }
        None => hooks_dir::hooks_dir(repo),
    };
    let dir = dir.canonicalize().unwrap_or(dir);
    let embed_exe = !inside_work_tree(&dir, workdir, repo.common_dir());
    let mut hooks = Vec::new();
    for (name, shim) in SHIMS {
        let plan = match hooks_dir::plan(&dir, name, &shim_block(shim, embed_exe)?) {
            Ok(plan) => plan,
            Err(InstallError::Taken(taken)) => return Ok(Err(Refusal::HookInTheWay(taken))),
            Err(InstallError::Failed(e)) => return Err(e.into()),
        };
        let diff = crate::core::text::unified_diff(
            plan.before.as_deref().unwrap_or(""),
            &plan.after,
            &plan.path.to_string_lossy(),
        );
        hooks.push(FilePreview {
            name: Some(name),
            path: plan.path,
            action: plan.action,
            moved_to: plan.moved_to,
            diff,
        });
    }
    // The install turns the extension on before it moves the settings it would spread.
    let worktree_config_on = CONFIG.iter().any(|(key, value, _)| {
        *key == install::WORKTREE_CONFIG && install::git_bool(value) == Some(true)
    });
    for (key, value, setting) in CONFIG {
        let current = git.local_values(key)?;
        let present = install::config_present(
            &current,
            value,
            *setting,
            set_anywhere(&git, key, *setting)?,
        );
        config.push(ConfigStep {
            key: key.to_string(),
            value: value.to_string(),
            action: if present {
                ConfigAction::Kept
            } else {
                ConfigAction::Set
            },
            file: None,
        });
    }
    for (key, value) in install::REPLACED_CONFIG {
        let ours = record
            .config_added
            .iter()
            .any(|a| a.key == *key && a.value == *value);
        if ours && install::config_holds(&git.local_values(key)?, value) {
            config.push(ConfigStep {
                key: key.to_string(),
                value: value.to_string(),
                action: ConfigAction::Unset,
                file: None,
            });
        }
    }
    if worktree_config_on {
        let (from, to) = shared_config_files(repo);
        let keys = install::shared_worktree_settings(
            &git.file_values(&from, "core.bare")?,
            &git.file_values(&from, "core.worktree")?,
        );
        for key in keys {
            if let Some(value) = git.file_values(&from, key)?.last().cloned() {
                config.push(ConfigStep {
                    key: key.to_string(),
                    value,
                    action: ConfigAction::Moved,
                    file: Some(to.clone()),
                });
            }
        }
    }
    let flight_path = workdir.join(".crew").join("flight.toml");
    let flight = if flight_path.exists() {
        FilePreview {
            name: None,
            path: flight_path,
            action: FlightAction::Kept,
            moved_to: None,
            diff: String::new(),
        }
    } else {
        let starter = starter_flight();
        FilePreview {
            name: None,
            diff: crate::core::text::unified_diff("", &starter, &flight_path.to_string_lossy()),
            path: flight_path,
            action: FlightAction::Created,
            moved_to: None,
        }
    };
    let mut agents = Vec::new();
    let mut warnings = Vec::new();
    if with_agents {
        for (planned, why) in crate::run::agents::plan(workdir, &record)? {
            warnings.extend(why);
            let before = planned.before.as_deref().unwrap_or("");
            let after = planned.after.as_deref().unwrap_or("");
            agents.push(FilePreview {
                name: None,
                diff: crate::core::text::unified_diff(
                    before,
                    after,
                    &planned.path.to_string_lossy(),
                ),
                path: planned.path,
                action: planned.action,
                moved_to: None,
            });
        }
    }
    Ok(Ok(Preview {
        hooks_dir: dir,
        shared_hooks_dir,
        hooks,
        config,
        flight,
        agents,
        warnings,
    }))
}

/// The starter flight file for the worker CLIs found on PATH.
fn starter_flight() -> String {
    let path = std::env::var_os("PATH");
    let found = |program| super::backends::program_exists(program, path.as_deref());
    install::starter_flight(found("codex"), found("claude"))
}

/// Adds git-crew's block of the shim `shim` to the hook `name` in `dir`.
fn install_hook(
    dir: &Path,
    name: &str,
    shim: &str,
    embed_exe: bool,
) -> Result<Result<HookAction, ChainTargetTaken>> {
    match hooks_dir::install(dir, name, &shim_block(shim, embed_exe)?) {
        Ok(action) => Ok(Ok(action)),
        Err(InstallError::Taken(taken)) => Ok(Err(taken)),
        Err(InstallError::Failed(e)) => Err(e.into()),
    }
}

/// Puts git-crew's block back into the hooks init installed that lost it (a hook manager
/// such as husky wrote its hooks again): what `doctor --fix` does for `hook-missing`.
/// Returns the hooks repaired.
pub fn restore_hooks(
    repo: &crate::git::Repository,
    workdir: &Path,
) -> Result<Vec<(&'static str, HookAction)>> {
    let state = state_dir(repo);
    let Some(mut record) = InitRecord::load(&state)? else {
        return Ok(Vec::new());
    };
    let dir = record
        .hooks_dir
        .clone()
        .unwrap_or_else(|| hooks_dir::hooks_dir(repo));
    let embed_exe = !inside_work_tree(&dir, workdir, repo.common_dir());
    let mut restored = Vec::new();
    for (name, shim) in SHIMS {
        if hooks_dir::has_block(&dir, name)? {
            continue;
        }
        let action = match install_hook(&dir, name, shim, embed_exe)? {
            Ok(action) => action,
            Err(taken) => return Err(crate::run::error::Error::invalid(taken)),
        };
        if action == HookAction::Created && !record.hooks_created.iter().any(|h| h == name) {
            record.hooks_created.push(name.to_string());
            record.save(&state)?;
        }
        restored.push((*name, action));
    }
    Ok(restored)
}

/// The folder `core.hooksPath` names when that is set outside this repository (the
/// user's global config, the system's) and lies outside it: a folder every repository of
/// the user runs. Also when an earlier init already pointed this repository at a folder
/// of its own for that reason (the local value is then init's).
fn shared_hooks_dir(
    repo: &crate::git::Repository,
    workdir: &Path,
    git: &GitRunner,
    record: &InitRecord,
) -> Result<Option<PathBuf>> {
    let values = git.scoped_values("core.hooksPath")?;
    let ours = |value: &str| {
        record
            .repo_hooks
            .as_ref()
            .is_some_and(|own| own.dir == Path::new(value))
    };
    let Some((scope, value)) = values
        .iter()
        .rev()
        .find(|(scope, value)| !(scope == "local" && ours(value)))
    else {
        return Ok(None);
    };
    if !matches!(scope.as_str(), "global" | "system") || value.is_empty() {
        return Ok(None);
    }
    let path = hooks_dir::resolve(repo, value);
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let inside = canon(&path).starts_with(canon(workdir))
        || canon(&path).starts_with(canon(repo.common_dir()));
    Ok((!inside).then_some(path))
}

/// Sets a single-valued key of the repository's config to `value`, recording it as
/// init's when the key held nothing before.
fn set_config(
    git: &GitRunner,
    record: &mut InitRecord,
    state: &Path,
    key: &str,
    value: &str,
) -> Result<ConfigStep> {
    let current = git.local_values(key)?;
    let action = if current.last().map(String::as_str) == Some(value) {
        ConfigAction::Kept
    } else {
        let added = ConfigValue {
            key: key.to_string(),
            value: value.to_string(),
        };
        if install::config_is_ours(&current, install::Setting::Single)
            && !record.config_added.contains(&added)
        {
            record.config_added.push(added);
            record.save(state)?;
        }
        git.set_local(key, value)?;
        ConfigAction::Set
    };
    Ok(ConfigStep {
        key: key.to_string(),
        value: value.to_string(),
        action,
        file: None,
    })
}

/// The shared config and the main worktree's own (`config.worktree` in the common dir).
fn shared_config_files(repo: &crate::git::Repository) -> (PathBuf, PathBuf) {
    let common = repo
        .common_dir()
        .canonicalize()
        .unwrap_or_else(|_| repo.common_dir().to_path_buf());
    (common.join("config"), common.join("config.worktree"))
}

/// With `extensions.worktreeConfig` on, the shared config's `core.bare = true` (a bare
/// repository with linked worktrees) and `core.worktree` would apply to every worktree:
/// they move to the main worktree's `config.worktree`, as git's documentation of the
/// extension prescribes, and the move is recorded for uninstall.
fn move_shared_worktree_settings(
    repo: &crate::git::Repository,
    git: &GitRunner,
    record: &mut InitRecord,
    state: &Path,
) -> Result<Vec<ConfigStep>> {
    let on = git
        .local_values(install::WORKTREE_CONFIG)?
        .last()
        .and_then(|v| install::git_bool(v))
        .unwrap_or(false);
    if !on {
        return Ok(Vec::new());
    }
    let (from, to) = shared_config_files(repo);
    let keys = install::shared_worktree_settings(
        &git.file_values(&from, "core.bare")?,
        &git.file_values(&from, "core.worktree")?,
    );
    let mut steps = Vec::new();
    for key in keys {
        let values = git.file_values(&from, key)?;
        let Some(value) = values.last().cloned() else {
            continue;
        };
        record.config_moved.push(ConfigMove {
            key: key.to_string(),
            values: values.clone(),
            from: from.clone(),
            to: to.clone(),
            created: !to.exists(),
        });
        record.save(state)?;
        git.set_in_file(&to, key, &value)?;
        for old in &values {
            git.unset_in_file(&from, key, old)?;
        }
        steps.push(ConfigStep {
            key: key.to_string(),
            value,
            action: ConfigAction::Moved,
            file: Some(to.clone()),
        });
    }
    Ok(steps)
}

/// Moves a setting init moved back to the shared config, as it was; what is already
/// back (an uninstall that stopped half-way) is left as it is.
fn move_back(git: &GitRunner, moved: &ConfigMove) -> Result<ConfigAction> {
    let Some(value) = moved.values.last() else {
        return Ok(ConfigAction::Absent);
    };
    let there = install::config_holds(&git.file_values(&moved.to, &moved.key)?, value);
    let back = !git.file_values(&moved.from, &moved.key)?.is_empty();
    if !back {
        for old in &moved.values {
            git.add_in_file(&moved.from, &moved.key, old)?;
        }
    }
    if there {
        git.unset_in_file(&moved.to, &moved.key, value)?;
    }
    if moved.created && git.file_entries(&moved.to)?.is_empty() {
        match std::fs::remove_file(&moved.to) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(e).with_context(|| format!("cannot remove {}", moved.to.display()));
            }
            _ => {}
        }
    }
    Ok(if there || !back {
        ConfigAction::MovedBack
    } else {
        ConfigAction::Absent
    })
}

fn uninstall(
    repo: &crate::git::Repository,
    workdir: &Path,
    state: &Path,
    git: &GitRunner,
) -> Result<Setup> {
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

    let in_use = worktree_config_in_use(repo, git, &record.config_moved)?;
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
            file: None,
        });
    }
    // Moved settings go back once the extension that needed them moved is off (the
    // shared config's `core.bare = true` would otherwise apply to every worktree again).
    let still_on = git
        .local_values(install::WORKTREE_CONFIG)?
        .last()
        .and_then(|v| install::git_bool(v))
        .unwrap_or(false);
    for moved in record.config_moved.iter().rev() {
        let value = moved.values.last().cloned().unwrap_or_default();
        let (action, file) = if still_on {
            warnings.push(format!(
                "kept {} = {value} in {}: extensions.worktreeConfig stays on",
                moved.key,
                moved.to.display()
            ));
            (ConfigAction::Kept, moved.to.clone())
        } else {
            (move_back(git, moved)?, moved.from.clone())
        };
        config.push(ConfigStep {
            key: moved.key.clone(),
            value,
            action,
            file: Some(file),
        });
    }
    if let Some(own) = &record.repo_hooks {
        let (removed, kept) = hooks_dir::remove_repo_hooks(&own.dir, &own.shared)?;
        for step in hooks.iter_mut().filter(|s| removed.contains(&s.name)) {
            step.action = HookAction::Deleted;
        }
        if kept {
            warnings.push(format!(
                "kept {}: it holds files init did not write",
                own.dir.display()
            ));
        }
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

    let agents = crate::run::agents::uninstall(workdir, &record, &mut warnings)?;

    InitRecord::delete(state)?;
    Ok(Setup {
        hooks_dir: dir,
        shared_hooks_dir: None,
        hooks,
        config,
        flight: FlightStep {
            path: flight_path,
            action: flight_action,
        },
        agents,
        state_dir: None,
        warnings,
    })
}

/// Whether anything still relies on `extensions.worktreeConfig`: a live run, or any
/// worktree (the main one included) with a `config.worktree` that holds something — the
/// main worktree's beyond the settings init moved there (`moved`).
fn worktree_config_in_use(
    repo: &crate::git::Repository,
    git: &GitRunner,
    moved: &[ConfigMove],
) -> Result<bool> {
    if !live::list(&state_dir(repo), &mut |_, _| {}).is_empty() {
        return Ok(true);
    }
    let (_, main) = shared_config_files(repo);
    let main_in_use = git.file_entries(&main)?.iter().any(|(key, value)| {
        !moved
            .iter()
            .any(|m| m.key.eq_ignore_ascii_case(key) && m.values.last().is_some_and(|v| v == value))
    });
    Ok(main_in_use
        || crate::git::identity::worktree_git_dirs(repo.common_dir())
            .iter()
            .skip(1)
            .any(|dir| {
                std::fs::read(dir.join("config.worktree")).is_ok_and(|b| !b.trim_ascii().is_empty())
            }))
}
