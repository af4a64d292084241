//! `git crew init [--uninstall]`: hooks, notes config, worktree config, the starter
//! `.crew/flight.toml`. Idempotent; the uninstall removes exactly what init added, as
//! recorded in `<git-common-dir>/crew/init.json`.

use clap::Args;

use super::context::CommandContext;
use super::error::{CrewError, Result};
use super::ui::Report;
use crate::core::install::{ConfigAction, FlightAction};
use crate::git::hooks_dir::HookAction;
use crate::ops::init::Inited;
use crate::run::agents::AgentAction;
use crate::run::install::{Preview, Setup};

const INIT_EXAMPLES: &str = "Examples:\n  git crew init\n  git crew init --dry-run\n  git crew init --agents\n  git crew init --uninstall\n  git crew init --uninstall --purge";

/// Set up git-crew in this repository.
///
/// Installs the pre-commit, post-merge and post-commit hook shims into the hooks directory
/// git really uses (`core.hooksPath` when set, e.g. husky's, else .git/hooks), as marker
/// blocks inside any existing hook. A `core.hooksPath` set outside this repository (your
/// global config) names a folder other repositories share: it is left as it is, and the
/// hooks go into a folder of this repository's own (.git/crew/repo-hooks, made its
/// `core.hooksPath`) whose hooks run the shared folder's. Enables
/// `extensions.worktreeConfig`, moving a shared `core.bare = true` (a bare repository with
/// linked worktrees) and `core.worktree` to the main worktree's `config.worktree`, as git
/// prescribes; sets `notes.displayRef` and `notes.rewriteRef` to refs/notes/crew so `git
/// log` shows run records and rebases keep them; writes a commented `.crew/flight.toml`
/// if there is none. Running it twice changes nothing the second time.
#[derive(Debug, Args)]
#[command(after_help = INIT_EXAMPLES)]
pub struct InitArgs {
    /// Remove exactly what init added (hook blocks, config values, an unedited starter
    /// flight.toml) and move back what it moved, and nothing else.
    #[arg(long)]
    pub uninstall: bool,
    /// With --uninstall: also remove what every finished run left behind, as
    /// `git crew prune --all` does — never anything unkept (that is listed as stranded
    /// work); live runs are left alone.
    #[arg(long, requires = "uninstall")]
    pub purge: bool,
    /// Show what init would do — each hook and the starter flight file as a unified diff,
    /// each config value — and change nothing.
    #[arg(long, conflicts_with = "uninstall")]
    pub dry_run: bool,
    /// Also write the files a lead agent loads to learn git-crew: a Claude Code skill
    /// (.claude/skills/git-crew/SKILL.md), a section of AGENTS.md, and the `git crew mcp`
    /// server's registration in .mcp.json (Claude Code) and .codex/config.toml (codex).
    /// Each is git-crew's own file or a marked part of yours; --uninstall takes out
    /// exactly that.
    #[arg(long, conflicts_with = "uninstall")]
    pub agents: bool,
}

pub fn run(ctx: &CommandContext, args: InitArgs) -> Result<Report> {
    let request = crate::ops::init::Request {
        uninstall: args.uninstall,
        purge: args.purge,
        dry_run: args.dry_run,
        agents: args.agents,
    };
    let (setup, pruned) = match crate::ops::init::init(ctx, &request)? {
        Inited::Preview(preview) => {
            let mut fields =
                serde_json::to_value(&preview).map_err(|e| CrewError::internal(e.to_string()))?;
            fields["dry_run"] = serde_json::Value::Bool(true);
            return Ok(Report::new(fields, preview_human(&preview)));
        }
        Inited::Done { setup, pruned } => (setup, pruned),
    };
    if let Some(pruned) = &pruned {
        super::prune::warn(pruned);
    }
    for warning in &setup.warnings {
        super::ui::warn(warning);
    }
    let mut human = human(&setup);
    let mut report_fields =
        serde_json::to_value(&setup).map_err(|e| CrewError::internal(e.to_string()))?;
    if let Some(pruned) = &pruned {
        human.push('\n');
        human.push_str(&super::prune::human(pruned));
        report_fields["pruned"] =
            serde_json::to_value(pruned).map_err(|e| CrewError::internal(e.to_string()))?;
    }
    Ok(Report::new(report_fields, human))
}

/// One line per hook, config value and the flight file, after a line on a shared hooks
/// folder left alone.
fn human(setup: &Setup) -> String {
    let shared = setup.shared_hooks_dir.iter().map(|shared| {
        format!(
            "hooks: {} (core.hooksPath, set outside this repository) serves other repositories too and is left as it is; this repository's hooks are in {}, and run its hooks",
            shared.display(),
            setup.hooks_dir.display()
        )
    });
    let hooks = setup
        .hooks
        .iter()
        .map(|h| format!("hook {}: {}", h.path.display(), action_word(h.action)));
    let config = setup.config.iter().map(|c| {
        let file = match (c.action, &c.file) {
            (ConfigAction::Moved, Some(file)) => format!(
                " to {} (with extensions.worktreeConfig on, the shared config's would apply to every worktree)",
                file.display()
            ),
            (ConfigAction::MovedBack, Some(file)) => format!(" to {}", file.display()),
            (_, Some(file)) => format!(" in {}", file.display()),
            (_, None) => String::new(),
        };
        format!(
            "config {} = {}: {}{file}",
            c.key,
            c.value,
            c.action.as_str().replace('-', " ")
        )
    });
    let flight = format!(
        "{}: {}",
        setup.flight.path.display(),
        setup.flight.action.as_str()
    );
    let agents = setup
        .agents
        .iter()
        .map(|a| format!("{}: {}", a.path.display(), agent_word(a.action)));
    shared
        .chain(hooks)
        .chain(config)
        .chain(std::iter::once(flight))
        .chain(agents)
        .collect::<Vec<_>>()
        .join("\n")
}

fn agent_word(action: AgentAction) -> &'static str {
    match action {
        AgentAction::Created => "created",
        AgentAction::Updated => "git-crew's part written",
        AgentAction::Unchanged => "already up to date",
        AgentAction::Kept => "kept as it is",
        AgentAction::Removed => "git-crew's part removed",
        AgentAction::Absent => "nothing of git-crew's in it",
    }
}

/// The dry run: each file init would write, with its diff, then each config value.
fn preview_human(preview: &Preview) -> String {
    let mut out = Vec::new();
    if let Some(shared) = &preview.shared_hooks_dir {
        out.push(format!(
            "hooks: {} (core.hooksPath, set outside this repository) would be left as it is; this repository's hooks would go into {}",
            shared.display(),
            preview.hooks_dir.display()
        ));
    }
    for hook in &preview.hooks {
        let moved = hook
            .moved_to
            .as_ref()
            .map(|m| format!(" (the hook moved to {})", m.display()))
            .unwrap_or_default();
        out.push(format!(
            "would {}: hook {}{moved}",
            would_word(hook.action),
            hook.path.display()
        ));
        if !hook.diff.is_empty() {
            out.push(hook.diff.trim_end().to_string());
        }
    }
    for c in &preview.config {
        let where_to = match (&c.file, c.action) {
            (Some(file), ConfigAction::Moved) => format!(" to {}", file.display()),
            _ => String::new(),
        };
        let verb = match c.action {
            ConfigAction::Kept => "keep",
            ConfigAction::Set => "set",
            ConfigAction::Unset => "unset",
            ConfigAction::Moved => "move",
            _ => c.action.as_str(),
        };
        out.push(format!(
            "would {verb}: config {} = {}{where_to}",
            c.key, c.value
        ));
    }
    match preview.flight.action {
        FlightAction::Created => {
            out.push(format!("would create: {}", preview.flight.path.display()));
            out.push(preview.flight.diff.trim_end().to_string());
        }
        _ => out.push(format!("would keep: {}", preview.flight.path.display())),
    }
    for agent in &preview.agents {
        let verb = match agent.action {
            AgentAction::Created => "create",
            AgentAction::Updated => "write git-crew's part into",
            _ => "keep",
        };
        out.push(format!("would {verb}: {}", agent.path.display()));
        if !agent.diff.is_empty() {
            out.push(agent.diff.trim_end().to_string());
        }
    }
    out.extend(preview.warnings.iter().map(|w| format!("warning: {w}")));
    out.push("nothing was changed (--dry-run)".to_string());
    out.join("\n")
}

fn would_word(action: HookAction) -> &'static str {
    match action {
        HookAction::Created => "create",
        HookAction::Updated => "add git-crew's block to",
        HookAction::Chained => "move aside and chain",
        _ => "keep",
    }
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
mod agent_file_tests {
    use crate::core::agents;
    use clap::CommandFactory;

    /// Every `git crew ...` in a text's code spans, with its line breaks closed up.
    fn commands(text: &str) -> Vec<String> {
        text.split('`')
            .skip(1)
            .step_by(2)
            .map(|span| span.split_whitespace().collect::<Vec<_>>().join(" "))
            .filter(|span| span.starts_with("git crew "))
            .collect()
    }

    /// What is wrong with one command line, checked against the CLI's own definition:
    /// each word is a subcommand where the command has them, and each `--flag` is one the
    /// command (or the whole CLI) takes.
    fn problems(line: &str, root: &clap::Command) -> Vec<String> {
        let mut out = Vec::new();
        let mut cmd = root;
        let mut words = line.split_whitespace().skip(2).peekable();
        let Some(first) = words.peek() else {
            return vec![format!("{line}: no command")];
        };
        if root.find_subcommand(first).is_none() {
            return vec![format!("{line}: `{first}` is no command")];
        }
        for word in words {
            if let Some(flag) = word.strip_prefix("--") {
                let flag = flag.split('=').next().unwrap_or(flag);
                let known = |c: &clap::Command| {
                    c.get_arguments().any(|a| {
                        a.get_long() == Some(flag)
                            || a.get_all_aliases().is_some_and(|al| al.contains(&flag))
                    })
                };
                if !known(cmd) && !known(root) {
                    out.push(format!("{line}: `{}` takes no --{flag}", cmd.get_name()));
                }
            } else if let Some(sub) = cmd.find_subcommand(word) {
                cmd = sub;
            } else if cmd.has_subcommands() && cmd.get_positionals().next().is_none() {
                out.push(format!(
                    "{line}: `{word}` is no subcommand of `{}`",
                    cmd.get_name()
                ));
            }
        }
        out
    }

    #[test]
    fn the_agent_files_name_only_commands_and_flags_that_exist() {
        let root = crate::cli::Cli::command();
        for text in [agents::skill(), agents::agents_block()] {
            let lines = commands(&text);
            assert!(lines.len() >= 10, "{lines:?}");
            let wrong: Vec<String> = lines.iter().flat_map(|l| problems(l, &root)).collect();
            assert!(wrong.is_empty(), "{}", wrong.join("\n"));
        }
        // And each command it names is one the README's table of commands documents.
        let readme = std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"),
        )
        .unwrap();
        let table = readme
            .split_once("## Commands")
            .and_then(|(_, rest)| rest.split_once("\n## "))
            .map(|(table, _)| table)
            .expect("README.md has a Commands section");
        for line in commands(&agents::skill()) {
            let name = line.split_whitespace().nth(2).unwrap_or_default();
            assert!(
                table.contains(&format!("`{name} ")) || table.contains(&format!("`{name}`")),
                "the README's Commands table lacks `{name}`"
            );
        }
        // The check itself catches what it is for.
        assert!(!problems("git crew dispach --task T", &root).is_empty());
        assert!(!problems("git crew dispatch --tasks T", &root).is_empty());
        assert!(!problems("git crew wave dispach 2", &root).is_empty());
        assert!(problems("git crew wave dispatch 2", &root).is_empty());
    }
}
