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

/// `refs/notes/crew` as the pattern `notes.displayRef` and `notes.rewriteRef` name it: a
/// glob that matches that one ref. git warns `notes ref refs/notes/crew is invalid` on
/// every `git log` and rebase for a plain ref that does not exist yet (no run has been
/// recorded), and says nothing for a glob that matches no ref.
pub const NOTES_PATTERN: &str = "refs/notes/cre[w]";

/// How init sets one config value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// One value, git-crew's, set whatever the key held.
    Single,
    /// One value among others of a multi-valued key, added when missing.
    Multi,
    /// One value, set only when no config file sets the key: a choice of the user's,
    /// either way, is theirs.
    Default,
}

/// Config git-crew needs: (key, value, how it is set).
///
/// `index.recordEndOfIndexEntries` makes git write where the index entries end (the
/// `EOIE` extension), so that the pre-commit hook reads the tree a commit is about to make
/// from the end of the index rather than passing over every entry (`git::index_map`).
pub const CONFIG: &[(&str, &str, Setting)] = &[
    ("extensions.worktreeConfig", "true", Setting::Single),
    ("notes.displayRef", NOTES_PATTERN, Setting::Multi),
    ("notes.rewriteRef", NOTES_PATTERN, Setting::Multi),
    ("index.recordEndOfIndexEntries", "true", Setting::Default),
];

/// Values an earlier init set that this one replaces, when its record says they were
/// init's: the plain notes ref, which made git warn until the first note existed.
pub const REPLACED_CONFIG: &[(&str, &str)] = &[
    ("notes.displayRef", NOTES_REF),
    ("notes.rewriteRef", NOTES_REF),
];

/// Settings of the shared config that `extensions.worktreeConfig` would apply to every
/// worktree, and that git's documentation has moved to the main worktree's own
/// `config.worktree` when the extension goes on (as `git sparse-checkout` does):
/// `core.bare` when true (a bare repository with linked worktrees), `core.worktree` always.
/// `bare` and `worktree` are the values the shared config holds, in order; returns the
/// keys to move.
pub fn shared_worktree_settings(bare: &[String], worktree: &[String]) -> Vec<&'static str> {
    let mut keys = Vec::new();
    if bare.last().is_some_and(|v| git_bool(v) == Some(true)) {
        keys.push("core.bare");
    }
    if !worktree.is_empty() {
        keys.push("core.worktree");
    }
    keys
}

/// A config value as git reads a boolean (`None`: not one).
pub fn git_bool(value: &str) -> Option<bool> {
    match value.to_ascii_lowercase().as_str() {
        "" | "true" | "yes" | "on" => Some(true),
        "false" | "no" | "off" => Some(false),
        number => number.parse::<i64>().ok().map(|n| n != 0),
    }
}

/// The hook names git runs on the client side. The hooks directories git-crew writes
/// (the run worktrees', and this repository's own when `core.hooksPath` is shared) have a
/// shim for each, so the hooks they chain keep running.
pub const CLIENT_HOOKS: &[&str] = &[
    "applypatch-msg",
    "pre-applypatch",
    "post-applypatch",
    "pre-commit",
    "pre-merge-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-rebase",
    "post-checkout",
    "post-merge",
    "pre-push",
    "post-rewrite",
    "reference-transaction",
    "push-to-checkout",
    "pre-auto-gc",
];

/// The second line of every hook of this repository's own hooks directory.
const REPO_HOOK_HEADER: &str = "# git-crew: this repository's hook; runs the one of the shared core.hooksPath (`git crew init --uninstall` removes it)";

/// A hook of this repository's own hooks directory (when `core.hooksPath` names a folder
/// other repositories share): it runs the hook of the same name in `shared`, if git would
/// run it there. init adds git-crew's block after the shebang of the three it needs.
pub fn repo_hook(name: &str, shared: &str) -> String {
    let hook = sh_quote(&format!("{shared}/{name}"));
    format!(
        "{SHEBANG}\n{REPO_HOOK_HEADER}\nif [ -x {hook} ]; then exec {hook} \"$@\"; fi\n",
        SHEBANG = crate::core::hookblock::SHEBANG
    )
}

/// The config key init keeps on uninstall while worktrees still use their own config.
pub const WORKTREE_CONFIG: &str = "extensions.worktreeConfig";

/// What init did to one config value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConfigAction {
    Kept,
    Set,
    Unset,
    Absent,
    /// Moved from the shared config to the main worktree's `config.worktree`.
    Moved,
    /// Moved back to the shared config.
    MovedBack,
}

impl ConfigAction {
    pub fn as_str(self) -> &'static str {
        match self {
            ConfigAction::Kept => "kept",
            ConfigAction::Set => "set",
            ConfigAction::Unset => "unset",
            ConfigAction::Absent => "absent",
            ConfigAction::Moved => "moved",
            ConfigAction::MovedBack => "moved-back",
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
/// Whether init leaves a key as it is: `current` holds its values in this repository's
/// config, `anywhere` whether any config file (system, global, local) sets it.
pub fn config_present(current: &[String], value: &str, setting: Setting, anywhere: bool) -> bool {
    match setting {
        Setting::Multi => current.iter().any(|v| v == value),
        Setting::Single => current
            .last()
            .is_some_and(|v| v.eq_ignore_ascii_case(value)),
        Setting::Default => anywhere,
    }
}

/// Whether a value init sets is init's to unset later: a single-valued key that held
/// something else is not.
pub fn config_is_ours(current: &[String], setting: Setting) -> bool {
    setting == Setting::Multi || current.is_empty()
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

/// Whether `text` is the `hook` shim init writes when the hook had nothing else: the
/// shebang and git-crew's block, with whatever binary path init put in it; nothing the
/// user added, nothing chained.
pub fn is_bare_shim(hook: &str, text: &str) -> bool {
    use crate::core::hookblock::{SHEBANG, block_of};
    let Some(shipped) = SHIMS
        .iter()
        .find(|(name, _)| *name == hook)
        .and_then(|(_, shim)| block_of(shim))
    else {
        return false;
    };
    let Some(block) = block_of(text) else {
        return false;
    };
    if text != format!("{SHEBANG}\n{block}\n") {
        return false;
    }
    // The path init quoted into the block, read back from its `[ -x PATH ]` test.
    let (Some((before, _)), Some(start)) =
        (shipped.split_once("@GIT_CREW_EXE@"), block.find("[ -x '"))
    else {
        return false;
    };
    let from = start + "[ -x ".len();
    let Some(len) = block[from..].find(" ]; then") else {
        return false;
    };
    let quoted = &block[from..from + len];
    before.ends_with("[ -x ") && block == shipped.replace("@GIT_CREW_EXE@", quoted)
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

    /// Only the post-merge shim exactly as init writes it — whatever the binary's path —
    /// is bare: a line of the user's, a chained hook, another hook's block are not.
    #[test]
    fn a_bare_shim_is_the_shebang_and_the_block_init_writes() {
        let block = |exe: &str| {
            let shipped = hookblock::block_of(SHIMS[1].1).unwrap();
            with_exe(shipped, exe)
        };
        let bare = |exe: &str| format!("#!/bin/sh\n{}\n", block(exe));
        assert!(is_bare_shim("post-merge", &bare("/usr/local/bin/git-crew")));
        assert!(is_bare_shim("post-merge", &bare("/opt/it's here/git-crew")));
        assert!(is_bare_shim("post-merge", &bare("")));
        // As init writes it into a repository without a post-merge of its own.
        let hookblock::Install::Create(created) = hookblock::install(None, &block("/x/git-crew"))
        else {
            panic!("a new hook is created");
        };
        assert!(is_bare_shim("post-merge", &created));
        let hookblock::Install::Update(with_user) =
            hookblock::install(Some("#!/bin/sh\necho mine\n"), &block("/x/git-crew"))
        else {
            panic!("the user's hook takes the block");
        };
        assert!(!is_bare_shim("post-merge", &with_user));
        assert!(!is_bare_shim(
            "post-merge",
            &format!("{}echo mine\n", bare("/x"))
        ));
        assert!(!is_bare_shim(
            "post-merge",
            &bare("/x").replace("#!/bin/sh", "#!/bin/bash")
        ));
        let chained = format!(
            "#!/bin/sh\n{}\n",
            hookblock::chain_block(&block("/x"), "post-merge.pre-crew")
        );
        assert!(!is_bare_shim("post-merge", &chained));
        let shim = block("/x").replace("|| true", "|| true; touch /tmp/owned");
        assert!(!is_bare_shim("post-merge", &format!("#!/bin/sh\n{shim}\n")));
        let pre_commit = with_exe(hookblock::block_of(SHIMS[0].1).unwrap(), "/x");
        assert!(!is_bare_shim(
            "post-merge",
            &format!("#!/bin/sh\n{pre_commit}\n")
        ));
        assert!(!is_bare_shim("pre-push", &bare("/x")));
        assert!(!is_bare_shim("post-merge", ""));
    }

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
        let single = Setting::Single;
        assert!(config_present(
            &values(&["false", "TRUE"]),
            "true",
            single,
            true
        ));
        assert!(!config_present(
            &values(&["true", "false"]),
            "true",
            single,
            true
        ));
        assert!(!config_present(&[], "true", single, false));
        assert!(config_is_ours(&[], single));
        assert!(!config_is_ours(&values(&["false"]), single));
    }

    #[test]
    fn a_default_is_set_only_where_no_config_file_sets_the_key() {
        let default = Setting::Default;
        assert!(!config_present(&[], "true", default, false));
        // false in the user's global config, or here: theirs, kept.
        assert!(config_present(&[], "true", default, true));
        assert!(config_present(&values(&["false"]), "true", default, true));
        assert!(config_is_ours(&[], default));
        assert!(CONFIG.iter().any(|(key, value, setting)| {
            *key == "index.recordEndOfIndexEntries" && *value == "true" && *setting == default
        }));
    }

    #[test]
    fn a_multi_valued_key_is_present_by_any_exact_value_and_always_ours() {
        let current = values(&["refs/notes/commits", NOTES_REF]);
        assert!(config_present(&current, NOTES_REF, Setting::Multi, true));
        assert!(!config_present(
            &values(&["REFS/NOTES/CREW"]),
            NOTES_REF,
            Setting::Multi,
            true
        ));
        assert!(config_is_ours(&current, Setting::Multi));
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
    fn a_shared_bare_true_and_any_core_worktree_move_to_the_main_worktree() {
        assert_eq!(
            shared_worktree_settings(&values(&["true"]), &[]),
            ["core.bare"]
        );
        // A false core.bare may negate a global true: it stays, as git leaves it.
        assert!(shared_worktree_settings(&values(&["false"]), &[]).is_empty());
        assert!(shared_worktree_settings(&values(&["true", "no"]), &[]).is_empty());
        assert_eq!(
            shared_worktree_settings(&values(&["1"]), &values(&["../src"])),
            ["core.bare", "core.worktree"]
        );
        assert!(shared_worktree_settings(&[], &[]).is_empty());
        assert_eq!(git_bool("Yes"), Some(true));
        assert_eq!(git_bool(""), Some(true));
        assert_eq!(git_bool("0"), Some(false));
        assert_eq!(git_bool("maybe"), None);
    }

    #[test]
    fn a_repository_hook_runs_the_shared_one_and_takes_a_block() {
        let hook = repo_hook("commit-msg", "/home/me/it's hooks");
        assert_eq!(
            hook,
            "#!/bin/sh\n# git-crew: this repository's hook; runs the one of the shared core.hooksPath (`git crew init --uninstall` removes it)\n\
             if [ -x '/home/me/it'\\''s hooks/commit-msg' ]; then exec '/home/me/it'\\''s hooks/commit-msg' \"$@\"; fi\n"
        );
        let block = hookblock::block_of(SHIMS[0].1).unwrap();
        let hookblock::Install::Update(with_block) = hookblock::install(Some(&hook), block) else {
            panic!("a repository hook is a shell script")
        };
        assert_eq!(hookblock::remove(&with_block).unwrap(), hook);
        assert_eq!(CLIENT_HOOKS.len(), 16);
    }

    #[test]
    fn the_notes_pattern_names_the_notes_ref_alone() {
        // git reads a value with `[` as a glob (no warning when nothing matches).
        assert!(NOTES_PATTERN.contains('['));
        assert_eq!(NOTES_PATTERN.replace(['[', ']'], ""), NOTES_REF);
        assert!(REPLACED_CONFIG.iter().all(|(key, value)| {
            *value == NOTES_REF
                && CONFIG
                    .iter()
                    .any(|(k, v, _)| k == key && *v == NOTES_PATTERN)
        }));
    }

    #[test]
    fn only_an_unedited_starter_is_taken_back() {
        assert_eq!(starter_undo(None, Some("x")), StarterUndo::NotOurs);
        assert_eq!(starter_undo(Some("x"), Some("x")), StarterUndo::Remove);
        assert_eq!(starter_undo(Some("x"), Some("y")), StarterUndo::Edited);
        assert_eq!(starter_undo(Some("x"), None), StarterUndo::Absent);
    }
}
