//! `git crew init [--uninstall]`: hooks, notes config, worktree config, the starter
//! `.crew/flight.toml`. Idempotent; the uninstall removes exactly what init added, as
//! recorded in `<git-common-dir>/crew/init.json`.

use std::path::Path;

use clap::Args;
use serde_json::json;

use super::context::CommandContext;
use super::error::{CrewError, ErrorKind, Result};
use super::ui::Report;
use crate::core::hookblock;
use crate::git::hooks_dir::{self, HookAction};
use crate::git::repo::state_dir;
use crate::git::run::GitRunner;
use crate::state::init_record::{ConfigValue, InitRecord};
use crate::state::live;

/// The hook shims, as shipped in `hooks/`.
const SHIMS: &[(&str, &str)] = &[
    ("pre-commit", include_str!("../../hooks/pre-commit")),
    ("post-merge", include_str!("../../hooks/post-merge")),
];

/// The commented starter written to `.crew/flight.toml` when there is none.
pub const STARTER_FLIGHT: &str = include_str!("../../templates/flight.toml");

/// The notes ref that carries run records.
pub const NOTES_REF: &str = "refs/notes/crew";

/// Config git-crew needs: (key, value, multi-valued).
const CONFIG: &[(&str, &str, bool)] = &[
    ("extensions.worktreeConfig", "true", false),
    ("notes.displayRef", NOTES_REF, true),
    ("notes.rewriteRef", NOTES_REF, true),
];

const INIT_EXAMPLES: &str = "Examples:\n  git crew init\n  git crew init --uninstall";

/// Set up git-crew in this repository.
///
/// Installs the pre-commit and post-merge hook shims into the hooks directory git really
/// uses (`core.hooksPath` when set, e.g. husky's, else .git/hooks), as marker blocks
/// inside any existing hook; enables `extensions.worktreeConfig`; sets
/// `notes.displayRef` and `notes.rewriteRef` to refs/notes/crew so `git log` shows run
/// records and rebases keep them; writes a commented `.crew/flight.toml` if there is none.
/// Running it twice changes nothing the second time.
#[derive(Debug, Args)]
#[command(after_help = INIT_EXAMPLES)]
pub struct InitArgs {
    /// Remove exactly what init added (hook blocks, config values, an unedited starter
    /// flight.toml), and nothing else.
    #[arg(long)]
    pub uninstall: bool,
}

pub fn run(ctx: &CommandContext, args: InitArgs) -> Result<Report> {
    let repo = ctx.repo()?;
    let workdir = ctx.workdir()?.to_path_buf();
    let state = state_dir(repo);
    // A run's worktree is git-crew's, not a place to set it up (or take it down) from:
    // its records are the main checkout's.
    let crew_worktrees = state.join("worktrees");
    let canon = |p: &std::path::Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    if canon(&workdir).starts_with(canon(&crew_worktrees)) {
        return Err(CrewError::new(
            ErrorKind::Refused,
            "inside-run-worktree",
            format!(
                "{} is the worktree of a git-crew run: init works on the repository, not on a run",
                workdir.display()
            ),
        )
        .hinted(format!(
            "run it in the main checkout: git -C {} crew init",
            repo.common_dir()
                .parent()
                .unwrap_or(repo.common_dir())
                .display()
        )));
    }
    let git = GitRunner::new(&workdir);
    if args.uninstall {
        uninstall(repo, &workdir, &state, &git)
    } else {
        install(repo, &workdir, &state, &git)
    }
}

/// The shim's block, with the absolute path of this binary as the fallback for when
/// `git-crew` is not on PATH at commit time — unless the hooks live in the work tree
/// (husky's `.husky`), where they are committed and a path of this machine has no place.
fn shim_block(shim: &str, embed_exe: bool) -> Result<String> {
    let block = hookblock::block_of(shim)
        .ok_or_else(|| CrewError::internal("a shipped hook shim has no marker block"))?;
    let exe = if embed_exe {
        std::env::current_exe()
            .map_err(CrewError::internal)?
            .to_string_lossy()
            .into_owned()
    } else {
        String::new()
    };
    Ok(block.replace("@GIT_CREW_EXE@", &sh_quote(&exe)))
}

/// Whether `dir` lies inside the work tree (its hooks are then usually committed), and
/// not inside the git dir.
fn inside_work_tree(dir: &Path, workdir: &Path, git_dir: &Path) -> bool {
    let canon = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let dir = canon(dir);
    dir.starts_with(canon(workdir)) && !dir.starts_with(canon(git_dir))
}

/// Saves the record after each step, so a failure half-way never leaves an addition
/// that uninstall does not know about.
fn checkpoint(record: &InitRecord, state: &Path) -> Result<()> {
    record.save(state).map_err(CrewError::internal)
}

fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn install(
    repo: &crate::git::Repository,
    workdir: &Path,
    state: &Path,
    git: &GitRunner,
) -> Result<Report> {
    let mut record = InitRecord::load(state)
        .map_err(CrewError::internal)?
        .unwrap_or_default();
    let dir = hooks_dir::hooks_dir(repo);
    let mut warnings = Vec::new();
    let shared_hooks_path = crate::git::config::hooks_path_set(repo)
        && git
            .local_values("core.hooksPath")
            .map_err(CrewError::internal)?
            .is_empty();
    if shared_hooks_path {
        warnings.push(format!(
            "core.hooksPath is set outside this repository: the hooks in {} serve every repository that uses it",
            dir.display()
        ));
    }
    std::fs::create_dir_all(&dir).map_err(CrewError::internal)?;
    let embed_exe = !inside_work_tree(&dir, workdir, repo.common_dir());
    if !embed_exe {
        warnings.push(format!(
            "the hooks in {} are part of the work tree: they call git-crew from PATH",
            dir.display()
        ));
    }
    record.hooks_dir = Some(dir.clone());
    let mut hooks = Vec::new();
    let mut human = Vec::new();
    for (name, shim) in SHIMS {
        let block = shim_block(shim, embed_exe)?;
        let action =
            hooks_dir::install(&dir, name, &block).map_err(|e| match e
                .downcast_ref::<hooks_dir::ChainTargetTaken>()
            {
                Some(taken) => {
                    CrewError::new(ErrorKind::Refused, "hook-in-the-way", taken.to_string()).hinted(
                        format!(
                            "move or remove {} by hand, then run git crew init again",
                            taken.moved.display()
                        ),
                    )
                }
                None => CrewError::internal(e),
            })?;
        if action == HookAction::Created && !record.hooks_created.iter().any(|h| h == name) {
            record.hooks_created.push(name.to_string());
        }
        checkpoint(&record, state)?;
        let path = dir.join(name);
        human.push(format!("hook {}: {}", path.display(), action_word(action)));
        hooks.push(json!({"name": name, "path": path, "action": action}));
    }

    let mut config = Vec::new();
    for (key, value, multi) in CONFIG {
        let current = git.local_values(key).map_err(CrewError::internal)?;
        let present = if *multi {
            current.iter().any(|v| v == value)
        } else {
            current
                .last()
                .is_some_and(|v| v.eq_ignore_ascii_case(value))
        };
        let action = if present {
            "kept"
        } else {
            if *multi {
                git.add_local(key, value)
            } else {
                git.set_local(key, value)
            }
            .map_err(CrewError::internal)?;
            let added = ConfigValue {
                key: key.to_string(),
                value: value.to_string(),
            };
            // A single-valued key that held something else is not ours to unset later.
            if (*multi || current.is_empty()) && !record.config_added.contains(&added) {
                record.config_added.push(added);
                checkpoint(&record, state)?;
            }
            "set"
        };
        human.push(format!("config {key} = {value}: {action}"));
        config.push(json!({"key": key, "value": value, "action": action}));
    }

    let flight_path = workdir.join(".crew").join("flight.toml");
    let flight_action = if flight_path.exists() {
        "kept"
    } else {
        std::fs::create_dir_all(flight_path.parent().expect("has a parent"))
            .map_err(CrewError::internal)?;
        record.flight_created = Some(STARTER_FLIGHT.to_string());
        checkpoint(&record, state)?;
        crate::sys::fs::write_atomic(&flight_path, STARTER_FLIGHT, 0o644)
            .map_err(CrewError::internal)?;
        "created"
    };
    human.push(format!("{}: {flight_action}", flight_path.display()));

    // Local state lives in <git-common-dir>/crew/, inside the git dir: git never tracks
    // it, so nothing needs ignoring in the work tree.
    for warning in &warnings {
        super::ui::warn(warning);
    }
    let fields = json!({
        "hooks_dir": dir,
        "hooks": hooks,
        "config": config,
        "flight": {"path": flight_path, "action": flight_action},
        "state_dir": state,
        "warnings": warnings,
    });
    Ok(Report::new(fields, human.join("\n")))
}

fn uninstall(
    repo: &crate::git::Repository,
    workdir: &Path,
    state: &Path,
    git: &GitRunner,
) -> Result<Report> {
    let record = InitRecord::load(state).map_err(CrewError::internal)?;
    let known = record.is_some();
    let record = record.unwrap_or_default();
    let dir = record
        .hooks_dir
        .clone()
        .unwrap_or_else(|| hooks_dir::hooks_dir(repo));
    let mut human = Vec::new();
    let mut warnings = Vec::new();
    let mut hooks = Vec::new();
    for (name, _) in SHIMS {
        let created = record.hooks_created.iter().any(|h| h == name);
        let action = hooks_dir::uninstall(&dir, name, created).map_err(CrewError::internal)?;
        let path = dir.join(name);
        human.push(format!("hook {}: {}", path.display(), action_word(action)));
        hooks.push(json!({"name": name, "path": path, "action": action}));
    }

    let crew_worktrees = worktree_config_in_use(repo);
    let mut config = Vec::new();
    for added in &record.config_added {
        let action = if added.key == "extensions.worktreeConfig" && crew_worktrees {
            warnings.push(
                "kept extensions.worktreeConfig: worktrees still use their own config".to_string(),
            );
            "kept"
        } else {
            let present = git.local_values(&added.key).map_err(CrewError::internal)?;
            if present.iter().any(|v| v.eq_ignore_ascii_case(&added.value)) {
                git.unset_local(&added.key, &added.value)
                    .map_err(CrewError::internal)?;
                "unset"
            } else {
                "absent"
            }
        };
        human.push(format!("config {} = {}: {action}", added.key, added.value));
        config.push(json!({"key": added.key, "value": added.value, "action": action}));
    }
    if !known {
        warnings
            .push("no record of what init added here: only hook blocks were removed".to_string());
    }

    let flight_path = workdir.join(".crew").join("flight.toml");
    let flight_action = match &record.flight_created {
        Some(written) => match std::fs::read_to_string(&flight_path) {
            Ok(current) if &current == written => {
                std::fs::remove_file(&flight_path).map_err(CrewError::internal)?;
                // Only an empty .crew goes; plans or anything else keep it.
                let _ = std::fs::remove_dir(flight_path.parent().expect("has a parent"));
                "removed"
            }
            Ok(_) => {
                warnings.push(format!(
                    "kept {}: it was edited after init",
                    flight_path.display()
                ));
                "kept"
            }
            Err(_) => "absent",
        },
        None => "kept",
    };
    human.push(format!("{}: {flight_action}", flight_path.display()));

    InitRecord::delete(state).map_err(CrewError::internal)?;
    for warning in &warnings {
        super::ui::warn(warning);
    }
    let fields = json!({
        "hooks_dir": dir,
        "hooks": hooks,
        "config": config,
        "flight": {"path": flight_path, "action": flight_action},
        "warnings": warnings,
    });
    Ok(Report::new(fields, human.join("\n")))
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

fn action_word(action: HookAction) -> &'static str {
    match action {
        HookAction::Created => "created",
        HookAction::Updated => "git-crew block added",
        HookAction::Unchanged => "already installed",
        HookAction::Chained => "moved aside and chained",
        HookAction::Removed => "git-crew block removed",
        HookAction::Deleted => "removed (git-crew had created it)",
        HookAction::Restored => "original hook restored",
        HookAction::Absent => "nothing of git-crew's",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::flight::{Layer, LayerSource, parse_layer};

    #[test]
    fn the_starter_flight_is_valid_and_changes_nothing() {
        let parsed = parse_layer(&LayerSource {
            layer: Layer::Project,
            origin: "starter".into(),
            text: STARTER_FLIGHT.into(),
            has_lines: true,
        })
        .unwrap();
        assert_eq!(parsed.table.keys().collect::<Vec<_>>(), ["version"]);
    }

    #[test]
    fn the_starter_shows_the_shipped_defaults() {
        // The keys the starter shows commented out: those with a shipped default show it.
        let shown: String = STARTER_FLIGHT
            .lines()
            .filter_map(|line| line.strip_prefix("# "))
            .filter(|line| {
                line.starts_with('[')
                    || line.split_once(" = ").is_some_and(|(key, _)| {
                        key.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
                    })
            })
            .map(|line| format!("{line}\n"))
            .collect();
        let shown: toml::Table = shown.parse().unwrap();
        let defaults: toml::Table = crate::core::flight::DEFAULTS.parse().unwrap();
        let default_of = |key: &str| {
            let (parent, name) = key.rsplit_once('.').unwrap_or(("", key));
            parent
                .split('.')
                .filter(|part| !part.is_empty())
                .try_fold(&defaults, |table, part| table.get(part)?.as_table())
                .and_then(|table| table.get(name))
        };
        let mut compared = 0;
        crate::core::flight::leaves("", &shown, &mut |key, value| {
            if let Some(default) = default_of(key) {
                assert_eq!(value, default, "the starter shows `{key}` as {value}");
                compared += 1;
            }
        });
        assert!(compared >= 10, "{compared}");
    }

    #[test]
    fn every_shim_has_a_block_and_calls_its_hook() {
        for (name, shim) in SHIMS {
            let block = hookblock::block_of(shim).unwrap();
            assert!(block.contains(&format!("git-crew hook {name}")));
            assert!(shim.starts_with(hookblock::SHEBANG));
        }
    }

    #[test]
    fn quoting_survives_quotes() {
        assert_eq!(sh_quote("/a b/it's"), r"'/a b/it'\''s'");
    }
}
