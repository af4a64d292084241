//! What `git crew init` installs and the decisions it takes, as values: the hook shims and
//! the starter `.crew/flight.toml` it ships, the config git-crew needs, when a config
//! value counts as present and when it is init's to take back, the shim's block with this
//! binary's path in it, and what becomes of the starter flight file on uninstall.
//! `run::install` reads the repository, writes and records; no files, no git here.

use serde::Serialize;

/// The hook shims, as shipped in `hooks/`.
pub const SHIMS: &[(&str, &str)] = &[
    ("pre-commit", include_str!("../../hooks/pre-commit")),
    ("post-merge", include_str!("../../hooks/post-merge")),
    ("post-commit", include_str!("../../hooks/post-commit")),
];

/// The commented starter written to `.crew/flight.toml` when there is none.
pub const STARTER_FLIGHT: &str = include_str!("../../templates/flight.toml");

/// The line of the starter that names the default backend.
const DEFAULT_BACKEND_LINE: &str =
    "# default_backend = \"codex\"          # codex | claude | native | any [backends.X] name";

/// The starter flight file for a machine where the `codex` and `claude` CLIs are (or are
/// not) installed: `default_backend` names one that exists (codex, else claude), so the
/// first dispatch works without an edit; with neither, it stays a commented choice.
pub fn starter_flight(codex: bool, claude: bool) -> String {
    let line = match (codex, claude) {
        (true, _) => "default_backend = \"codex\"            # found on this machine; codex | claude | native | any [backends.X] name".to_string(),
        (false, true) => "default_backend = \"claude\"           # found on this machine (codex was not); codex | claude | native | any [backends.X] name".to_string(),
        (false, false) => format!(
            "{DEFAULT_BACKEND_LINE}\n# (neither codex nor claude was found on PATH at init: install one, or route to a [backends.X] of your own)"
        ),
    };
    STARTER_FLIGHT.replacen(DEFAULT_BACKEND_LINE, &line, 1)
}

/// The notes ref that carries run records.
pub const NOTES_REF: &str = "refs/notes/crew";

/// Config git-crew needs: (key, value, multi-valued).
pub const CONFIG: &[(&str, &str, bool)] = &[
    ("extensions.worktreeConfig", "true", false),
    ("notes.displayRef", NOTES_REF, true),
    ("notes.rewriteRef", NOTES_REF, true),
];

/// The config key init keeps on uninstall while worktrees still use their own config.
pub const WORKTREE_CONFIG: &str = "extensions.worktreeConfig";

/// What init did to one config value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ConfigAction {
    Kept,
    Set,
    Unset,
    Absent,
}

impl ConfigAction {
    pub fn as_str(self) -> &'static str {
        match self {
            ConfigAction::Kept => "kept",
            ConfigAction::Set => "set",
            ConfigAction::Unset => "unset",
            ConfigAction::Absent => "absent",
        }
    }
}

/// What init did to `.crew/flight.toml`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FlightAction {
    Kept,
    Created,
    Removed,
    Absent,
}

impl FlightAction {
    pub fn as_str(self) -> &'static str {
        match self {
            FlightAction::Kept => "kept",
            FlightAction::Created => "created",
            FlightAction::Removed => "removed",
            FlightAction::Absent => "absent",
        }
    }
}

/// Whether the local values of a key (`current`, in order) already hold `value`: any of
/// them for a multi-valued key, the last one (case aside) for a single-valued one.
pub fn config_present(current: &[String], value: &str, multi: bool) -> bool {
    if multi {
        current.iter().any(|v| v == value)
    } else {
        current
            .last()
            .is_some_and(|v| v.eq_ignore_ascii_case(value))
    }
}

/// Whether a value init sets is init's to unset later: a single-valued key that held
/// something else is not.
pub fn config_is_ours(current: &[String], multi: bool) -> bool {
    multi || current.is_empty()
}

/// Whether uninstall finds a value init added among the key's local values (case aside).
pub fn config_holds(current: &[String], value: &str) -> bool {
    current.iter().any(|v| v.eq_ignore_ascii_case(value))
}

/// Whether uninstall keeps a config value init added: `extensions.worktreeConfig` stays
/// while anything still relies on it.
pub fn kept_on_uninstall(key: &str, worktree_config_in_use: bool) -> bool {
    key == WORKTREE_CONFIG && worktree_config_in_use
}

/// A shim's block with `exe` (quoted for the shell; empty for none) as the fallback for
/// when `git-crew` is not on PATH at commit time.
pub fn with_exe(block: &str, exe: &str) -> String {
    block.replace("@GIT_CREW_EXE@", &sh_quote(exe))
}

fn sh_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// What uninstall does with `.crew/flight.toml`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StarterUndo {
    /// Init did not write it: it stays.
    NotOurs,
    /// It is the starter init wrote, unedited: it goes.
    Remove,
    /// It was edited after init: it stays, with a warning.
    Edited,
    /// Init wrote it, but it is gone (or cannot be read).
    Absent,
}

/// What uninstall does with the flight file, from the starter init wrote (`written`) and
/// the file as it is now (`current`).
pub fn starter_undo(written: Option<&str>, current: Option<&str>) -> StarterUndo {
    match (written, current) {
        (None, _) => StarterUndo::NotOurs,
        (Some(written), Some(current)) if current == written => StarterUndo::Remove,
        (Some(_), Some(_)) => StarterUndo::Edited,
        (Some(_), None) => StarterUndo::Absent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::flight::{Layer, LayerSource, parse_layer};
    use crate::core::hookblock;

    fn values(list: &[&str]) -> Vec<String> {
        list.iter().map(|v| v.to_string()).collect()
    }

    #[test]
    fn the_starter_names_a_default_backend_that_exists_here() {
        let parse = |text: String| {
            parse_layer(&LayerSource {
                layer: Layer::Project,
                origin: "starter".into(),
                text,
                has_lines: true,
            })
            .unwrap()
            .table
        };
        assert_eq!(
            parse(starter_flight(true, true))["default_backend"].as_str(),
            Some("codex")
        );
        assert_eq!(
            parse(starter_flight(false, true))["default_backend"].as_str(),
            Some("claude")
        );
        let neither = starter_flight(false, false);
        assert!(parse(neither.clone()).get("default_backend").is_none());
        assert!(neither.contains("neither codex nor claude"), "{neither}");
        assert!(STARTER_FLIGHT.contains(DEFAULT_BACKEND_LINE));
    }

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
            assert!(block.contains("@GIT_CREW_EXE@"));
        }
    }

    #[test]
    fn quoting_survives_quotes() {
        assert_eq!(sh_quote("/a b/it's"), r"'/a b/it'\''s'");
        assert_eq!(with_exe("x=@GIT_CREW_EXE@", ""), "x=''");
    }

    #[test]
    fn a_single_valued_key_is_present_by_its_last_value_and_ours_only_when_unset() {
        assert!(config_present(&values(&["false", "TRUE"]), "true", false));
        assert!(!config_present(&values(&["true", "false"]), "true", false));
        assert!(!config_present(&[], "true", false));
        assert!(config_is_ours(&[], false));
        assert!(!config_is_ours(&values(&["false"]), false));
    }

    #[test]
    fn a_multi_valued_key_is_present_by_any_exact_value_and_always_ours() {
        let current = values(&["refs/notes/commits", NOTES_REF]);
        assert!(config_present(&current, NOTES_REF, true));
        assert!(!config_present(
            &values(&["REFS/NOTES/CREW"]),
            NOTES_REF,
            true
        ));
        assert!(config_is_ours(&current, true));
    }

    #[test]
    fn uninstall_unsets_only_what_is_there_and_keeps_a_worktree_config_in_use() {
        assert!(config_holds(&values(&["TRUE"]), "true"));
        assert!(!config_holds(&[], "true"));
        assert!(kept_on_uninstall(WORKTREE_CONFIG, true));
        assert!(!kept_on_uninstall(WORKTREE_CONFIG, false));
        assert!(!kept_on_uninstall("notes.displayRef", true));
    }

    #[test]
    fn only_an_unedited_starter_is_taken_back() {
        assert_eq!(starter_undo(None, Some("x")), StarterUndo::NotOurs);
        assert_eq!(starter_undo(Some("x"), Some("x")), StarterUndo::Remove);
        assert_eq!(starter_undo(Some("x"), Some("y")), StarterUndo::Edited);
        assert_eq!(starter_undo(Some("x"), None), StarterUndo::Absent);
    }
}
