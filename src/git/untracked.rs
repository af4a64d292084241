//! What a run's worktree holds beside its tracked files — the untracked files that are
//! work, and what git ignores — as `git status --untracked-files=all --ignored=matching`
//! names them, found in-process: gix's directory walk with git's ignore rules (the
//! worktree's `.gitignore` files, the repository's `info/exclude` and the run's own
//! excludes file, its `core.excludesFile`). Only where that answer is certain; anything
//! gix and git might see differently — a nested repository, a FIFO, a `.gitignore` that is
//! not a plain file, a path the index knows as something else, a folder that cannot be
//! read, config that changes how paths match — makes it `None`, and git is asked
//! ([`super::worktree::RunTree::held_by_git`]).

use std::path::{Path, PathBuf};

use gix::bstr::{BStr, ByteSlice};
use gix::dir::entry::{Kind, Property, Status};
use gix::dir::walk;

/// What a worktree holds beside its commit, as `git status --porcelain -z
/// --untracked-files=all --ignored=matching --ignore-submodules=all` names it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Held {
    /// The paths with uncommitted changes, untracked files included (each file on its
    /// own; a repository inside as its folder, `dir/`), in git's order.
    pub uncommitted: Vec<String>,
    /// What git ignores: each path an ignore pattern matches, a matched folder named once
    /// (`target/`) and never looked into; in git's order.
    pub ignored: Vec<String>,
}

impl Held {
    /// From `git status --porcelain -z --ignored=matching` output: `!!` entries are the
    /// ignored paths, every other entry (`??` untracked, a change to a tracked file) is
    /// uncommitted.
    pub fn from_porcelain(status: &str) -> Held {
        let mut held = Held::default();
        let mut fields = status.split('\0').filter(|f| !f.is_empty());
        while let Some(entry) = fields.next() {
            let (code, path) = entry.split_at(entry.len().min(3));
            if code == "!! " {
                held.ignored.push(path.to_string());
                continue;
            }
            held.uncommitted.push(path.to_string());
            if code.starts_with(['R', 'C']) {
                fields.next();
            }
        }
        held
    }
}

/// The untracked and ignored paths of the worktree at `worktree` (administration `admin`,
/// index `index`), found in-process — for a worktree whose tracked files the caller found
/// certainly unchanged (so `git status` would list nothing else). `None` where the answer
/// is not certain: git must be asked.
pub fn beside_tracked(
    repo: &gix::Repository,
    worktree: &Path,
    admin: &Path,
    index: &gix::index::File,
) -> Option<Held> {
    if !plain_config(repo) {
        return None;
    }
    let excludes = run_excludes_file(admin)?;
    let parse = gix::ignore::search::Ignore {
        support_precious: false,
    };
    let mut buf = Vec::with_capacity(512);
    // git's order: the worktree's `.gitignore` files win over `info/exclude`, which wins
    // over `core.excludesFile` (gix searches the lists it is given last to first).
    let globals =
        gix::ignore::Search::from_git_dir(repo.common_dir(), Some(excludes), &mut buf, parse)
            .ok()?;
    let state = gix::worktree::stack::State::IgnoreStack(gix::worktree::stack::state::Ignore::new(
        Default::default(),
        globals,
        None,
        gix::worktree::stack::state::ignore::Source::WorktreeThenIdMappingIfNotSkipped,
        parse,
    ));
    let mut excludes = gix::worktree::Stack::from_state_and_ignore_case(
        worktree,
        false,
        state,
        index,
        index.path_backing(),
    );
    let mut pathspec = gix::pathspec::Search::from_specs(
        std::iter::empty::<gix::pathspec::Pattern>(),
        None,
        worktree,
    )
    .ok()?;
    let git_dir = admin.canonicalize().ok()?;
    let options = walk::Options {
        emit_untracked: walk::EmissionMode::Matching,
        emit_ignored: Some(walk::EmissionMode::Matching),
        // `.git` entries and what else is pruned are seen too: a nested one is a doubt.
        emit_pruned: true,
        ..Default::default()
    };
    let context = walk::Context {
        should_interrupt: None,
        git_dir_realpath: &git_dir,
        current_dir: worktree,
        index,
        ignore_case_index_lookup: None,
        pathspec: &mut pathspec,
        pathspec_attributes: &mut |_, _, _, _| false,
        excludes: Some(&mut excludes),
        objects: &repo.objects,
        explicit_traversal_root: None,
    };
    let mut seen = Seen::default();
    let (outcome, _) = gix::dir::walk(worktree, context, options, &mut seen).ok()?;
    if seen.doubt || outcome.read_dir_errors != 0 {
        return None;
    }
    // git sorts each list by its bytes (a folder with its `/`).
    seen.untracked.sort_unstable();
    seen.ignored.sort_unstable();
    let text = |paths: Vec<Vec<u8>>| -> Vec<String> {
        paths
            .into_iter()
            .map(|p| String::from_utf8_lossy(&p).into_owned())
            .collect()
    };
    Some(Held {
        uncommitted: text(seen.untracked),
        ignored: text(seen.ignored),
    })
}

/// Whether nothing in the repository's config changes how git matches paths here the way
/// the walk does not: the worktree's own config is read (`extensions.worktreeConfig`, so
/// its `core.excludesFile` is the run's), names match case by case and as they are
/// stored, and no config comes from the environment (`git -c`, `GIT_CONFIG_COUNT`).
fn plain_config(repo: &gix::Repository) -> bool {
    let config = repo.config_snapshot();
    let from_env = ["GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT"]
        .iter()
        .any(|name| std::env::var_os(name).is_some_and(|v| !v.is_empty()));
    super::config::worktree_config_on(repo)
        && config.boolean("core.ignoreCase") != Some(true)
        && config.boolean("core.precomposeUnicode") != Some(true)
        && !from_env
}

/// The `core.excludesFile` the worktree's own config names — the run's excludes file — when
/// it is an absolute path and that config includes nothing else.
fn run_excludes_file(admin: &Path) -> Option<PathBuf> {
    use std::os::unix::ffi::OsStrExt;
    let config = gix::config::File::from_path_no_includes(
        admin.join("config.worktree"),
        gix::config::Source::Worktree,
    )
    .ok()?;
    let includes = ["include", "includeIf"].iter().any(|name| {
        config
            .sections_by_name(name)
            .is_some_and(|mut s| s.next().is_some())
    });
    if includes {
        return None;
    }
    let value = config.string("core.excludesFile")?;
    let path = Path::new(std::ffi::OsStr::from_bytes(value.as_ref()));
    path.is_absolute().then(|| path.to_path_buf())
}

/// What the walk emitted, and whether anything in it is a doubt.
#[derive(Default)]
struct Seen {
    untracked: Vec<Vec<u8>>,
    ignored: Vec<Vec<u8>>,
    doubt: bool,
}

impl walk::Delegate for Seen {
    fn emit(&mut self, entry: gix::dir::EntryRef<'_>, _: Option<Status>) -> walk::Action {
        let path: &BStr = entry.rela_path.as_ref();
        let name = path.rsplit_str("/").next().unwrap_or_default();
        let doubt = match entry.status {
            // The worktree's own `.git` link: no other `.git` is expected.
            Status::Pruned => !(entry.property == Some(Property::DotGit) && path == ".git"),
            Status::Tracked => false,
            Status::Untracked | Status::Ignored(_) => {
                // A repository inside (git and gix may tell one apart differently), what is
                // neither file, link nor folder (git passes over it), a path the index knows
                // as something else, a `.gitignore` that is not a plain file (git does not
                // follow a link to one).
                matches!(
                    entry.disk_kind,
                    None | Some(Kind::Repository | Kind::Untrackable)
                ) || entry.index_kind.is_some()
                    || entry.property.is_some()
                    || (name == b".gitignore" && entry.disk_kind != Some(Kind::File))
                    || matches!(entry.status, Status::Ignored(gix::ignore::Kind::Precious))
            }
        };
        if doubt {
            self.doubt = true;
            return std::ops::ControlFlow::Break(());
        }
        let mut path = path.to_vec();
        match entry.status {
            Status::Untracked if entry.disk_kind == Some(Kind::Directory) => {
                // Folders are walked into, one file at a time: a folder here is a doubt.
                self.doubt = true;
                return std::ops::ControlFlow::Break(());
            }
            Status::Untracked => self.untracked.push(path),
            Status::Ignored(_) => {
                if entry.disk_kind == Some(Kind::Directory) {
                    path.push(b'/');
                }
                self.ignored.push(path);
            }
            Status::Tracked | Status::Pruned => {}
        }
        std::ops::ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::Held;

    #[test]
    fn porcelain_entries_split_into_uncommitted_and_ignored() {
        // A change, a rename (its old path follows as a field of its own), an untracked
        // file, an untracked folder holding a repository, ignored paths.
        let status = " M src/a.rs\0R  new.rs\0old.rs\0?? work/x.txt\0?? inner/\0\
                      !! target/\0!! logs/a.log\0";
        assert_eq!(
            Held::from_porcelain(status),
            Held {
                uncommitted: vec![
                    "src/a.rs".into(),
                    "new.rs".into(),
                    "work/x.txt".into(),
                    "inner/".into()
                ],
                ignored: vec!["target/".into(), "logs/a.log".into()],
            }
        );
        assert_eq!(Held::from_porcelain(""), Held::default());
    }
}
