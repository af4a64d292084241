//! The files a lead agent loads to learn git-crew (`git crew init --agents`): a Claude
//! Code skill, a section of `AGENTS.md`, and the MCP server's registration for Claude
//! Code (`.mcp.json`) and codex (`.codex/config.toml`). What each holds, and how adding
//! or removing git-crew's part changes a file's text: pure text edits, planned here and
//! carried out by `run::install`.

use serde::{Deserialize, Serialize};

/// The text both the skill and the `AGENTS.md` section teach: the loop, not the flags.
pub const LEAD: &str = include_str!("../../templates/agents/lead.md");

/// The first line of git-crew's block in a Markdown file.
const MD_BEGIN: &str = "<!-- >>> git-crew >>> (git crew init --uninstall removes this block) -->";
const MD_END: &str = "<!-- <<< git-crew <<< -->";
/// The first line of git-crew's block in a TOML file.
const TOML_BEGIN: &str = "# >>> git-crew >>> (git crew init --uninstall removes this block)";
const TOML_END: &str = "# <<< git-crew <<<";
/// The server's name in both registrations.
pub const SERVER: &str = "git-crew";

/// One of the agent files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// `.claude/skills/git-crew/SKILL.md`: a file of git-crew's own.
    Skill,
    /// `AGENTS.md`: a marked section, read by codex and the other CLIs that read it.
    AgentsMd,
    /// `.mcp.json`: the server under `mcpServers`, for Claude Code.
    McpJson,
    /// `.codex/config.toml`: `[mcp_servers.git-crew]` in a marked block, for codex (in a
    /// project it trusts).
    CodexConfig,
}

impl Kind {
    pub const ALL: [Kind; 4] = [
        Kind::Skill,
        Kind::AgentsMd,
        Kind::McpJson,
        Kind::CodexConfig,
    ];

    /// Where the file lies, relative to the work tree's root.
    pub fn path(self) -> &'static str {
        match self {
            Kind::Skill => ".claude/skills/git-crew/SKILL.md",
            Kind::AgentsMd => "AGENTS.md",
            Kind::McpJson => ".mcp.json",
            Kind::CodexConfig => ".codex/config.toml",
        }
    }
}

/// The skill: Claude Code's front matter (its name, and when to load it), then the loop.
pub fn skill() -> String {
    format!(
        "---\nname: git-crew\ndescription: Lead coding workers with git-crew. Split a job into tasks with disjoint write scopes, dispatch each to a worker in its own fenced worktree, wait in the background, read the footers, answer NEEDS-HELP and integrate. Use when work splits into parts other agents can do at once, or when asked to dispatch, delegate or run workers.\n---\n\n{LEAD}"
    )
}

/// The `AGENTS.md` section: the loop one heading level down, between markers.
pub fn agents_block() -> String {
    let mut body = String::new();
    for line in LEAD.lines() {
        if line.starts_with('#') {
            body.push('#');
        }
        body.push_str(line);
        body.push('\n');
    }
    format!("{MD_BEGIN}\n{body}{MD_END}")
}

/// The `.mcp.json` entry: Claude Code starts `git crew mcp` over stdio.
pub fn mcp_json_entry() -> serde_json::Value {
    serde_json::json!({"type": "stdio", "command": "git", "args": ["crew", "mcp"]})
}

/// The `.codex/config.toml` block.
pub fn codex_block() -> String {
    format!(
        "{TOML_BEGIN}\n[mcp_servers.{SERVER}]\ncommand = \"git\"\nargs = [\"crew\", \"mcp\"]\n{TOML_END}"
    )
}

/// What adding git-crew's part to a file amounts to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Add {
    /// No file yet: create it with this text.
    Create(String),
    /// Rewrite the file with this text.
    Update(String),
    /// It already holds git-crew's part as it is now.
    Unchanged,
    /// Left as it is, for this reason (a warning).
    Keep(String),
}

/// What taking git-crew's part out of a file amounts to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Remove {
    /// Nothing is left but what init made: remove the file.
    Delete,
    /// Rewrite the file with this text.
    Update(String),
    /// The file is not there, or git-crew's part is not in it.
    Absent,
    /// Left as it is, for this reason (a warning).
    Keep(String),
}

/// Plans adding git-crew's part to the file `kind` whose text is `current`; `written` is
/// the whole file as init last wrote it, for the one file that is git-crew's alone (the
/// skill), so a newer git-crew refreshes it and never overwrites an edit.
pub fn add(kind: Kind, current: Option<&str>, written: Option<&str>) -> Add {
    match kind {
        Kind::Skill => add_whole(current, written, &skill()),
        Kind::AgentsMd => add_block(current, &agents_block(), MD_BEGIN, MD_END, |_| None),
        Kind::CodexConfig => add_block(current, &codex_block(), TOML_BEGIN, TOML_END, |text| {
            codex_conflict(text)
        }),
        Kind::McpJson => add_json(current),
    }
}

/// Plans taking git-crew's part out of the file `kind` whose text is `current`;
/// `created`: init made the file; `written`: the skill as init wrote it.
pub fn remove(kind: Kind, current: Option<&str>, created: bool, written: Option<&str>) -> Remove {
    let Some(text) = current else {
        return Remove::Absent;
    };
    match kind {
        Kind::Skill => match written {
            Some(written) if text == written => Remove::Delete,
            Some(_) => Remove::Keep("it was edited after init".into()),
            None => Remove::Absent,
        },
        Kind::AgentsMd => remove_block(text, created, MD_BEGIN, MD_END),
        Kind::CodexConfig => remove_block(text, created, TOML_BEGIN, TOML_END),
        Kind::McpJson => remove_json(text, created),
    }
}

fn add_whole(current: Option<&str>, written: Option<&str>, new: &str) -> Add {
    match current {
        None => Add::Create(new.to_string()),
        Some(text) if text == new => Add::Unchanged,
        Some(text) if Some(text) == written => Add::Update(new.to_string()),
        Some(_) => Add::Keep("it holds text init did not write".into()),
    }
}

/// The byte range of the block (markers included).
fn span(text: &str, begin: &str, end: &str) -> Option<std::ops::Range<usize>> {
    let start = text.find(begin)?;
    let stop = text[start..].find(end)? + start + end.len();
    Some(start..stop)
}

fn add_block(
    current: Option<&str>,
    block: &str,
    begin: &str,
    end: &str,
    conflict: impl Fn(&str) -> Option<String>,
) -> Add {
    let Some(text) = current else {
        return Add::Create(format!("{block}\n"));
    };
    if let Some(range) = span(text, begin, end) {
        if &text[range.clone()] == block {
            return Add::Unchanged;
        }
        return Add::Update(format!(
            "{}{block}{}",
            &text[..range.start],
            &text[range.end..]
        ));
    }
    if let Some(why) = conflict(text) {
        return Add::Keep(why);
    }
    let gap = match text {
        "" => "",
        t if t.ends_with("\n\n") => "",
        t if t.ends_with('\n') => "\n",
        _ => "\n\n",
    };
    Add::Update(format!("{text}{gap}{block}\n"))
}

fn remove_block(text: &str, created: bool, begin: &str, end: &str) -> Remove {
    let Some(range) = span(text, begin, end) else {
        return Remove::Absent;
    };
    let before = text[..range.start].trim_end_matches('\n');
    let after = text[range.end..].trim_start_matches('\n');
    let rest = match (before.is_empty(), after.is_empty()) {
        (true, _) => after.to_string(),
        (false, true) => format!("{before}\n"),
        (false, false) => format!("{before}\n\n{after}"),
    };
    if created && rest.trim().is_empty() {
        Remove::Delete
    } else {
        Remove::Update(rest)
    }
}

/// Why a codex config cannot take git-crew's block: it is not TOML, or it already names a
/// server of that name.
fn codex_conflict(text: &str) -> Option<String> {
    match toml::from_str::<toml::Table>(text) {
        Err(_) => Some("it is not valid TOML".into()),
        Ok(table) => table
            .get("mcp_servers")
            .and_then(|s| s.as_table())
            .and_then(|s| s.get(SERVER))
            .map(|_| format!("it already names an MCP server `{SERVER}`")),
    }
}

fn pretty(value: &serde_json::Value) -> String {
    let mut text = serde_json::to_string_pretty(value).unwrap_or_default();
    text.push('\n');
    text
}

fn add_json(current: Option<&str>) -> Add {
    let entry = mcp_json_entry();
    let Some(text) = current else {
        return Add::Create(pretty(&serde_json::json!({"mcpServers": {SERVER: entry}})));
    };
    let Ok(serde_json::Value::Object(mut root)) = serde_json::from_str(text) else {
        return Add::Keep("it is not a JSON object".into());
    };
    let servers = root
        .entry("mcpServers")
        .or_insert_with(|| serde_json::json!({}));
    let Some(servers) = servers.as_object_mut() else {
        return Add::Keep("its `mcpServers` is not an object".into());
    };
    match servers.get(SERVER) {
        Some(found) if *found == entry => Add::Unchanged,
        Some(_) => Add::Keep(format!("it already names an MCP server `{SERVER}`")),
        None => {
            servers.insert(SERVER.to_string(), entry);
            Add::Update(pretty(&serde_json::Value::Object(root)))
        }
    }
}

fn remove_json(text: &str, created: bool) -> Remove {
    let Ok(serde_json::Value::Object(mut root)) = serde_json::from_str(text) else {
        return Remove::Keep("it is not a JSON object any more".into());
    };
    let Some(servers) = root.get_mut("mcpServers").and_then(|s| s.as_object_mut()) else {
        return Remove::Absent;
    };
    match servers.get(SERVER) {
        None => return Remove::Absent,
        Some(found) if *found != mcp_json_entry() => {
            return Remove::Keep(format!("its `{SERVER}` server was changed after init"));
        }
        Some(_) => {}
    }
    servers.remove(SERVER);
    if servers.is_empty() {
        root.remove("mcpServers");
    }
    if created && root.is_empty() {
        Remove::Delete
    } else {
        Remove::Update(pretty(&serde_json::Value::Object(root)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_block_goes_into_a_file_and_comes_out_leaving_it_as_it_was() {
        for kind in [Kind::AgentsMd, Kind::CodexConfig] {
            for before in ["", "# Notes\n", "# Notes", "a = 1\n\n"] {
                if kind == Kind::AgentsMd && before.contains('=') {
                    continue;
                }
                let Add::Update(added) = add(kind, Some(before), None) else {
                    panic!("{kind:?} {before:?}");
                };
                assert_eq!(add(kind, Some(&added), None), Add::Unchanged);
                let Remove::Update(left) = remove(kind, Some(&added), false, None) else {
                    panic!("{kind:?} {before:?}");
                };
                assert_eq!(left.trim_end(), before.trim_end(), "{kind:?}");
            }
            // A file init made goes when nothing else is in it; one the user wrote to stays.
            let Add::Create(made) = add(kind, None, None) else {
                panic!()
            };
            assert_eq!(remove(kind, Some(&made), true, None), Remove::Delete);
            let grown = format!("{made}\nmine\n");
            assert!(
                matches!(remove(kind, Some(&grown), true, None), Remove::Update(t) if t.trim() == "mine")
            );
            assert_eq!(remove(kind, Some("no block\n"), true, None), Remove::Absent);
        }
    }

    #[test]
    fn a_stale_block_is_refreshed_in_place() {
        let old = format!("top\n\n{MD_BEGIN}\nold words\n{MD_END}\n\nbottom\n");
        let Add::Update(new) = add(Kind::AgentsMd, Some(&old), None) else {
            panic!()
        };
        assert!(
            new.starts_with("top\n\n") && new.ends_with("\n\nbottom\n"),
            "{new}"
        );
        assert!(new.contains(&agents_block()) && !new.contains("old words"));
    }

    #[test]
    fn the_codex_block_is_toml_codex_reads_and_a_clash_is_left_alone() {
        let Add::Update(text) = add(Kind::CodexConfig, Some("model = \"m\"\n"), None) else {
            panic!()
        };
        let table: toml::Table = toml::from_str(&text).unwrap();
        let server = &table["mcp_servers"][SERVER];
        assert_eq!(server["command"].as_str(), Some("git"));
        assert_eq!(server["args"].as_array().unwrap().len(), 2);
        let taken = "[mcp_servers.git-crew]\ncommand = \"other\"\n";
        assert!(matches!(
            add(Kind::CodexConfig, Some(taken), None),
            Add::Keep(_)
        ));
        assert!(matches!(
            add(Kind::CodexConfig, Some("not [toml"), None),
            Add::Keep(_)
        ));
    }

    #[test]
    fn the_mcp_json_keeps_the_other_servers_and_gives_back_what_it_found() {
        let before = "{\n  \"mcpServers\": {\n    \"other\": {\n      \"command\": \"x\"\n    }\n  },\n  \"z\": 1\n}\n";
        let Add::Update(added) = add(Kind::McpJson, Some(before), None) else {
            panic!()
        };
        let value: serde_json::Value = serde_json::from_str(&added).unwrap();
        assert_eq!(value["mcpServers"][SERVER], mcp_json_entry());
        assert_eq!(value["mcpServers"]["other"]["command"], "x");
        assert_eq!(add(Kind::McpJson, Some(&added), None), Add::Unchanged);
        assert_eq!(
            remove(Kind::McpJson, Some(&added), false, None),
            Remove::Update(before.into())
        );
        // Made by init, and nothing added since: it goes.
        let Add::Create(made) = add(Kind::McpJson, None, None) else {
            panic!()
        };
        assert_eq!(
            remove(Kind::McpJson, Some(&made), true, None),
            Remove::Delete
        );
        // Someone changed the entry: it stays, and so does a file that is not JSON.
        let changed = made.replace("\"mcp\"", "\"mcp\", \"--x\"");
        assert!(matches!(
            remove(Kind::McpJson, Some(&changed), true, None),
            Remove::Keep(_)
        ));
        assert!(matches!(
            add(Kind::McpJson, Some("[1]"), None),
            Add::Keep(_)
        ));
    }

    #[test]
    fn the_skill_is_refreshed_only_while_nobody_edited_it() {
        let now = skill();
        assert!(now.starts_with("---\nname: git-crew\ndescription: "));
        assert_eq!(add(Kind::Skill, None, None), Add::Create(now.clone()));
        assert_eq!(add(Kind::Skill, Some(&now), Some(&now)), Add::Unchanged);
        assert_eq!(
            add(Kind::Skill, Some("old"), Some("old")),
            Add::Update(now.clone())
        );
        assert!(matches!(
            add(Kind::Skill, Some("mine"), Some("old")),
            Add::Keep(_)
        ));
        assert!(matches!(add(Kind::Skill, Some("mine"), None), Add::Keep(_)));
        assert_eq!(
            remove(Kind::Skill, Some(&now), true, Some(&now)),
            Remove::Delete
        );
        assert!(matches!(
            remove(Kind::Skill, Some("edited"), true, Some(&now)),
            Remove::Keep(_)
        ));
        assert_eq!(remove(Kind::Skill, None, true, Some(&now)), Remove::Absent);
    }
}
