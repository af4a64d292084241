//! The files of a run's worktree that are not the run's work: what it gets from the
//! lead's checkout before the worker starts (`.worktreeinclude`), and what git ignores
//! in it so that tool state is never committed as work (the run's excludes file).
//! Decisions only: the walk and git's matching are `git::include`'s, the copy and the
//! file are `run::dispatch`'s.

/// The file of patterns, at the root of the lead's checkout.
pub const INCLUDE_FILE: &str = ".worktreeinclude";

/// What tools leave in a worktree that is never work, ignored in every run's worktree:
/// Python's bytecode and the caches of pytest, mypy and ruff, and aider's state files
/// (`.aider.chat.history.md`, `.aider.input.history`, `.aider.tags.cache.v4/`; the
/// pattern is the one aider itself offers to add to `.gitignore`). A file a project
/// tracks stays tracked: ignoring only keeps new files out.
pub const TOOL_STATE: &[&str] = &[
    "__pycache__/",
    "*.pyc",
    ".pytest_cache/",
    ".mypy_cache/",
    ".ruff_cache/",
    ".aider*",
];

/// The text of a run's excludes file (`core.excludesFile` of its worktree's
/// `config.worktree`). That key takes the place of the lead's own excludes file, so its
/// content comes first (`user`: where it was read, and what it held at dispatch), then
/// the tool state, then `[worktree] ignore`: later lines win, so an entry there can take
/// a default back (`!.aider.conf.yml`).
pub fn excludes_text(user: Option<(&str, &str)>, ignore: &[String]) -> String {
    let mut text = String::from(
        "# git-crew: what git ignores in this run's worktree besides the project's own\n\
         # .gitignore files and info/exclude (written at dispatch)\n",
    );
    if let Some((path, content)) = user {
        text.push_str(&format!("\n# the lead's excludes file, {path}\n"));
        text.push_str(content);
        if !content.ends_with('\n') {
            text.push('\n');
        }
    }
    text.push_str("\n# tool state, never work\n");
    for pattern in TOOL_STATE {
        text.push_str(pattern);
        text.push('\n');
    }
    if !ignore.is_empty() {
        text.push_str("\n# [worktree] ignore\n");
        for pattern in ignore {
            text.push_str(pattern);
            text.push('\n');
        }
    }
    text
}

/// The lines that add what a verify left untracked in a run's worktree (`paths` as git
/// lists them, a folder with its `/`) to the run's excludes file: each path anchored at
/// the root and matched literally, so that a verify's own output (a coverage report, a
/// cache no default names) never makes the worktree dirty for `verify`, cleanup or
/// prune. Empty when there is none.
pub fn verify_leftovers(paths: &[String]) -> String {
    if paths.is_empty() {
        return String::new();
    }
    let mut text = String::from("\n# left untracked by a verify\n");
    for path in paths {
        if path.contains(['\n', '\r']) {
            continue;
        }
        text.push('/');
        let last = path.trim_end_matches(' ').len();
        for (i, c) in path.char_indices() {
            if matches!(c, '*' | '?' | '[' | '\\') || (c == ' ' && i >= last) {
                text.push('\\');
            }
            text.push(c);
        }
        text.push('\n');
    }
    text
}

/// Why a `[worktree] ignore` entry is not one gitignore pattern, if it is not.
pub fn pattern_problem(pattern: &str) -> Option<&'static str> {
    if pattern.contains(['\n', '\r', '\0']) {
        Some("a pattern is one line")
    } else if pattern.trim().is_empty() {
        Some("a pattern cannot be empty")
    } else if pattern.starts_with('#') {
        Some("a pattern cannot start with `#` (a comment); write `\\#` for a name that does")
    } else {
        None
    }
}

/// Whether a symlink at `link` (a path relative to the checkout's root) with `target`
/// stays inside the checkout: a relative target that never climbs above the root. Such
/// a link means the same in a copy of the checkout; any other would point the copy at
/// the lead's files, or anywhere.
pub fn link_stays_inside(link: &str, target: &str) -> bool {
    if target.is_empty() || target.starts_with('/') {
        return false;
    }
    let mut depth: Vec<&str> = link.split('/').filter(|p| !p.is_empty()).collect();
    depth.pop();
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if depth.pop().is_none() {
                    return false;
                }
            }
            other => depth.push(other),
        }
    }
    // A link to the root itself, or to `.git`, is no file of the checkout.
    !depth.is_empty() && depth[0] != ".git"
}

/// What one pattern of `.worktreeinclude` came to in the walk.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PatternUse {
    /// Its line in the file.
    pub line: usize,
    pub text: String,
    /// It matched a file or folder of the checkout.
    pub matched: bool,
    /// ... one that git ignores and does not track (one that is copied).
    pub matched_ignored: bool,
}

/// The warnings for patterns that copy nothing: one that matches nothing, and one that
/// matches only what git tracks or does not ignore (a run's worktree gets those from its
/// commit, or they would be committed as its work).
pub fn unused_patterns(uses: &[PatternUse]) -> Vec<String> {
    uses.iter()
        .filter(|u| !u.matched_ignored)
        .map(|u| {
            let what = if u.matched {
                "matches only files git tracks or does not ignore: nothing copied (only ignored files are)"
            } else {
                "matches nothing in the checkout: nothing copied"
            };
            format!("{INCLUDE_FILE}:{}: `{}` {what}", u.line, u.text)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_excludes_keep_the_leads_own_then_the_tool_state_then_the_flights() {
        let text = excludes_text(
            Some(("/home/me/.config/git/ignore", "*.swp")),
            &["*.log".into(), "!.aider.conf.yml".into()],
        );
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .collect();
        assert_eq!(
            lines,
            [
                "*.swp",
                "__pycache__/",
                "*.pyc",
                ".pytest_cache/",
                ".mypy_cache/",
                ".ruff_cache/",
                ".aider*",
                "*.log",
                "!.aider.conf.yml"
            ]
        );
        assert!(text.contains("# the lead's excludes file, /home/me/.config/git/ignore\n"));
        let bare = excludes_text(None, &[]);
        assert!(!bare.contains("lead's") && !bare.contains("[worktree] ignore"));
        assert!(bare.contains("__pycache__/\n"));
    }

    #[test]
    fn a_verify_leftover_is_excluded_by_its_literal_path_from_the_root() {
        assert_eq!(verify_leftovers(&[]), "");
        assert_eq!(
            verify_leftovers(&[
                "htmlcov/".into(),
                "report.xml".into(),
                "#odd[1]*?.txt".into(),
                "!bang".into(),
                "sp ".into(),
                "bad\nname".into(),
            ]),
            "\n# left untracked by a verify\n/htmlcov/\n/report.xml\n/#odd\\[1]\\*\\?.txt\n/!bang\n/sp\\ \n"
        );
    }

    #[test]
    fn an_ignore_entry_is_one_gitignore_pattern() {
        assert_eq!(pattern_problem("*.log"), None);
        assert_eq!(pattern_problem("!keep.log"), None);
        assert_eq!(pattern_problem("\\#weird"), None);
        assert!(pattern_problem("a\nb").is_some());
        assert!(pattern_problem("  ").is_some());
        assert!(pattern_problem("# note").is_some());
    }

    #[test]
    fn a_link_stays_inside_only_when_it_never_climbs_out() {
        assert!(link_stays_inside(".env", ".env.shared"));
        assert!(link_stays_inside("config/.env", "../.env"));
        assert!(link_stays_inside("a/b/c", "../../x/./y"));
        assert!(!link_stays_inside(".env", "../.env"));
        assert!(!link_stays_inside("config/.env", "../../x"));
        assert!(!link_stays_inside(".env", "/home/me/.env"));
        assert!(!link_stays_inside(".env", ""));
        assert!(!link_stays_inside("a/link", ".."));
        assert!(!link_stays_inside("link", ".git/config"));
    }

    #[test]
    fn a_pattern_that_copies_nothing_is_named_with_its_line() {
        let uses = [
            PatternUse {
                line: 1,
                text: ".env*".into(),
                matched: true,
                matched_ignored: true,
            },
            PatternUse {
                line: 3,
                text: "notes.txt".into(),
                matched: true,
                matched_ignored: false,
            },
            PatternUse {
                line: 4,
                text: "secrets/".into(),
                matched: false,
                matched_ignored: false,
            },
        ];
        assert_eq!(
            unused_patterns(&uses),
            [
                ".worktreeinclude:3: `notes.txt` matches only files git tracks or does not ignore: nothing copied (only ignored files are)",
                ".worktreeinclude:4: `secrets/` matches nothing in the checkout: nothing copied",
            ]
        );
    }
}
