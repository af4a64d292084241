//! What a run's worktree takes from the lead's checkout, and what git ignores in it:
//! the files `.worktreeinclude` names (read as gitignore patterns, as Claude Code reads
//! it) that git ignores and does not track, found with git's own matching through gix;
//! and the lead's own excludes file, which a run's excludes file takes the place of.
//! Nothing here writes: copying is `run::dispatch`'s.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::error::{Context, Result};
use gix::bstr::{BStr, ByteSlice};
use gix::index::entry::Mode;
use gix::worktree::stack::state::ignore::Source;

use crate::core::worktree_files::{INCLUDE_FILE, PatternUse, link_stays_inside, unused_patterns};

/// What `.worktreeinclude` asks to be copied, as the lead's checkout has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Item {
    /// A regular file.
    File(PathBuf),
    /// A symlink whose target stays inside the checkout (the target as it reads).
    Link(PathBuf, PathBuf),
}

/// The walk's findings: what to copy, and what the lead should hear (patterns that copy
/// nothing, entries passed over).
#[derive(Debug, Default)]
pub struct Included {
    pub items: Vec<Item>,
    pub warnings: Vec<String>,
}

/// The most `.worktreeinclude` may hold.
const INCLUDE_FILE_CAP: u64 = 1 << 20;

/// The files and symlinks of the checkout at `repo_dir` that a pattern of its
/// `.worktreeinclude` matches — the pattern's own match or a matched folder above, the
/// last matching line deciding, as in a `.gitignore` — and that git ignores there and
/// does not track. Walked with `walkdir`, never following a symlink; `.git` and nested
/// repositories are not entered, nor any folder no pattern can match beneath. A symlink
/// is kept only when its target stays inside the checkout: one to anywhere else is
/// passed over and named. No file, no items.
pub fn included(repo_dir: &Path) -> Result<Included> {
    use crate::sys::fs::{Links, Unread, read_capped};
    let mut found = Included::default();
    let bytes = match read_capped(
        &repo_dir.join(INCLUDE_FILE),
        INCLUDE_FILE_CAP,
        Links::Follow,
    ) {
        Ok(bytes) => bytes,
        Err(Unread::Missing) => return Ok(found),
        Err(why) => {
            found
                .warnings
                .push(format!("{INCLUDE_FILE} {why}: nothing copied"));
            return Ok(found);
        }
    };
    let parse = gix::ignore::search::Ignore::default();
    let lines: Vec<&[u8]> = bytes
        .split(|b| *b == b'\n')
        .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
        .collect();
    // One entry per line, so a pattern's sequence number is its line.
    let search = gix::ignore::Search::from_overrides(
        lines
            .iter()
            .map(|line| std::ffi::OsStr::from_bytes(line).to_os_string()),
        parse,
    );
    let patterns: Vec<(usize, gix::glob::Pattern)> = search
        .patterns
        .iter()
        .flat_map(|list| list.patterns.iter())
        .map(|m| (m.sequence_number, m.pattern.clone()))
        .collect();
    if patterns.is_empty() {
        return Ok(found);
    }
    let adding: Vec<&(usize, gix::glob::Pattern)> =
        patterns.iter().filter(|(_, p)| !p.is_negative()).collect();
    let mut uses: Vec<PatternUse> = adding
        .iter()
        .map(|(line, _)| PatternUse {
            line: *line,
            text: lines
                .get(line.saturating_sub(1))
                .map(|l| String::from_utf8_lossy(l).trim().to_string())
                .unwrap_or_default(),
            ..PatternUse::default()
        })
        .collect();

    let repo = super::repo::open(repo_dir)?;
    let index = repo.index_or_empty().context("cannot read the index")?;
    let mut ignored = repo
        .excludes(&index, None, Source::WorktreeThenIdMappingIfNotSkipped)
        .context("cannot read git's ignore rules")?;
    let case = if repo.config_snapshot().boolean("core.ignoreCase") == Some(true) {
        gix::glob::pattern::Case::Fold
    } else {
        gix::glob::pattern::Case::Sensitive
    };
    // The patterns as an ignore list of their own: git's matching, folders and negations
    // included, with no `.gitignore` read on the way (no index mappings to read from).
    let mut includes = gix::worktree::Stack::new(
        repo_dir,
        gix::worktree::stack::State::IgnoreStack(gix::worktree::stack::state::Ignore::new(
            search,
            Default::default(),
            None,
            Source::IdMapping,
            parse,
        )),
        case,
        Vec::new(),
        Vec::new(),
    );

    let mut walk = walkdir::WalkDir::new(repo_dir)
        .follow_links(false)
        .sort_by_file_name()
        .min_depth(1)
        .into_iter();
    while let Some(entry) = walk.next() {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                found.warnings.push(format!(
                    "{INCLUDE_FILE}: part of the checkout cannot be read: {e}"
                ));
                continue;
            }
        };
        let Ok(rel) = entry.path().strip_prefix(repo_dir) else {
            continue;
        };
        let rel = rel.to_path_buf();
        let rel_b: &BStr = rel.as_os_str().as_bytes().as_bstr();
        let kind = entry.file_type();
        if entry.file_name() == ".git" {
            if kind.is_dir() {
                walk.skip_current_dir();
            }
            continue;
        }
        let mode = if kind.is_dir() {
            Mode::DIR
        } else if kind.is_symlink() {
            Mode::SYMLINK
        } else {
            Mode::FILE
        };
        let is_dir = kind.is_dir();
        // The line that decides, as in a `.gitignore`: the last that matches this entry
        // or a folder above it; whether it adds (or takes away: `!`).
        let decided = includes
            .at_path(rel.as_path(), Some(mode), &repo.objects)
            .context("cannot match .worktreeinclude")?
            .matching_exclude_pattern()
            .map(|m| (!m.pattern.is_negative(), m.sequence_number));
        let adds = decided.is_some_and(|(adds, _)| adds);
        // A repository nested here is its own: git does not look into it, nor does this.
        if is_dir && std::fs::symlink_metadata(entry.path().join(".git")).is_ok() {
            if adds {
                found.warnings.push(format!(
                    "{INCLUDE_FILE}: {} is a repository of its own: not copied",
                    rel.display()
                ));
            }
            walk.skip_current_dir();
            continue;
        }
        let tracked = !is_dir && index.entry_by_path(rel_b).is_some();
        // Copied only when git ignores it and does not track it; asked at most once.
        let mut copyable: Option<bool> = None;
        let mut is_copyable = |known: &mut Option<bool>| -> Result<bool> {
            if let Some(known) = *known {
                return Ok(known);
            }
            let answer = !tracked
                && ignored
                    .at_path(rel.as_path(), Some(mode))
                    .context("cannot match git's ignore rules")?
                    .is_excluded();
            *known = Some(answer);
            Ok(answer)
        };
        // Each pattern that matches this entry itself is told what it matched.
        let basename = rel_b.rfind_byte(b'/').map(|p| p + 1);
        for (tally, (_, pattern)) in uses.iter_mut().zip(&adding) {
            if pattern.matches_repo_relative_path(
                rel_b,
                basename,
                Some(is_dir),
                case,
                gix::glob::wildmatch::Mode::NO_MATCH_SLASH_LITERAL,
            ) {
                tally.matched = true;
                tally.matched_ignored |= is_copyable(&mut copyable)?;
            }
        }
        if is_dir {
            if !adds && !may_match_beneath(&adding, rel_b, case) {
                walk.skip_current_dir();
            }
            continue;
        }
        if !adds || !is_copyable(&mut copyable)? {
            continue;
        }
        // A file taken through its folder counts for the folder's pattern.
        if let Some((_, line)) = decided
            && let Some(tally) = uses.iter_mut().find(|u| u.line == line)
        {
            tally.matched = true;
            tally.matched_ignored = true;
        }
        let shown = rel.display();
        if kind.is_symlink() {
            let target = crate::sys::fs::read_link_beneath(repo_dir, &rel)?;
            let inside = match (rel.to_str(), target.to_str()) {
                (Some(link), Some(to)) => link_stays_inside(link, to),
                _ => false,
            };
            if inside {
                found.items.push(Item::Link(rel.clone(), target));
            } else {
                found.warnings.push(format!(
                    "{INCLUDE_FILE}: {shown} is a symbolic link to {}, outside the checkout: not copied",
                    target.display()
                ));
            }
        } else if kind.is_file() {
            found.items.push(Item::File(rel.clone()));
        } else {
            found.warnings.push(format!(
                "{INCLUDE_FILE}: {shown} is not a regular file: not copied"
            ));
        }
    }
    found.warnings.extend(unused_patterns(&uses));
    Ok(found)
}

/// Whether a pattern that adds (not a negation) could match a path beneath the folder
/// `dir`: one with no slash matches a name at any depth; one anchored by a slash matches
/// only paths that start with its literal part, up to its first wildcard.
fn may_match_beneath(
    patterns: &[&(usize, gix::glob::Pattern)],
    dir: &BStr,
    case: gix::glob::pattern::Case,
) -> bool {
    use gix::glob::pattern::Mode as P;
    let fold = |b: &[u8]| -> Vec<u8> {
        match case {
            gix::glob::pattern::Case::Fold => b.to_ascii_lowercase(),
            gix::glob::pattern::Case::Sensitive => b.to_vec(),
        }
    };
    let mut beneath = fold(dir);
    beneath.push(b'/');
    patterns.iter().map(|(_, p)| p).any(|p| {
        if p.mode.contains(P::NO_SUB_DIR) && !p.mode.contains(P::ABSOLUTE) {
            return true;
        }
        let text: &[u8] = p.text.as_ref();
        let literal = fold(&text[..p.first_wildcard_pos.unwrap_or(text.len())]);
        literal.starts_with(&beneath) || beneath.starts_with(&literal)
    })
}

/// The lead's own excludes file — `core.excludesFile` as the repository at `repo` reads
/// it, else git's default `$XDG_CONFIG_HOME/git/ignore` (`~/.config/git/ignore`) — and
/// what it holds, when there is one to read.
pub fn lead_excludes(repo: &gix::Repository) -> Option<(PathBuf, String)> {
    use crate::sys::fs::{Links, read_capped};
    let configured = repo
        .config_snapshot()
        .trusted_path("core.excludesFile")
        .ok()
        .flatten();
    let path = configured.or_else(|| {
        let xdg = std::env::var_os("XDG_CONFIG_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("HOME")
                    .filter(|v| !v.is_empty())
                    .map(|home| PathBuf::from(home).join(".config"))
            })?;
        Some(xdg.join("git").join("ignore"))
    })?;
    let bytes = read_capped(&path, INCLUDE_FILE_CAP, Links::Follow).ok()?;
    Some((path, String::from_utf8_lossy(&bytes).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patterns(lines: &[&str]) -> Vec<(usize, gix::glob::Pattern)> {
        lines
            .iter()
            .enumerate()
            .filter_map(|(i, l)| Some((i + 1, gix::glob::Pattern::from_bytes(l.as_bytes())?)))
            .collect()
    }

    #[test]
    fn a_folder_no_pattern_can_match_beneath_is_not_entered() {
        use gix::glob::pattern::Case::{Fold, Sensitive};
        let beneath = |lines: &[&str], dir: &str, case| {
            let all = patterns(lines);
            let adding: Vec<_> = all.iter().filter(|(_, p)| !p.is_negative()).collect();
            may_match_beneath(&adding, dir.as_bytes().as_bstr(), case)
        };
        // Anchored patterns reach only beneath their literal start.
        assert!(beneath(&["config/secrets/"], "config", Sensitive));
        assert!(beneath(&["config/secrets/"], "config/secrets", Sensitive));
        assert!(!beneath(&["config/secrets/"], "node_modules", Sensitive));
        assert!(!beneath(&["config/secrets/"], "configs", Sensitive));
        assert!(!beneath(&["/.env"], "node_modules", Sensitive));
        assert!(beneath(&["services/*/.env"], "services/api", Sensitive));
        assert!(!beneath(&["services/*/.env"], "target", Sensitive));
        // A name, or a leading `**`, matches at any depth.
        assert!(beneath(&[".env*"], "node_modules/pkg", Sensitive));
        assert!(beneath(&["**/.env*"], "target/debug", Sensitive));
        // A negation adds nothing to look for.
        assert!(!beneath(&["!*.txt", "config/secrets/"], "docs", Sensitive));
        assert!(beneath(&["Config/"], "config", Fold));
        assert!(!beneath(&["Config/x"], "config", Sensitive));
    }
}
