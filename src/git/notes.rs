//! Notes, in-process: read a note, append JSON Lines rows to one. Every append is a
//! compare-and-swap update of the notes ref (gix refuses the update when the ref moved),
//! retried on a lost race, so two writers at once never lose a row; a process killed
//! mid-write leaves the ref at its old or its new commit, never broken.

use super::error::{Context, Result, bail};
use gix::ObjectId;
use gix::bstr::ByteSlice;

/// Run records on integrated commits.
pub const CREW: &str = "refs/notes/crew";
/// The outcome ledger: one note per task, JSON Lines.
pub const LEDGER: &str = "refs/notes/crew-ledger";
/// Gate verdicts.
pub const GATES: &str = "refs/notes/crew-gates";
/// Every notes ref git-crew writes (what `sync` exchanges).
pub const ALL: [&str; 3] = [CREW, LEDGER, GATES];

/// The id of the blob that stands for a key such as `crew-task:<task>`, computed without
/// writing it (for reading: the note hangs on the id whether the blob exists or not).
pub fn key_id(repo: &gix::Repository, key: &str) -> Result<ObjectId> {
    gix::objs::compute_hash(repo.object_hash(), gix::objs::Kind::Blob, key.as_bytes())
        .with_context(|| format!("cannot hash {key}"))
}

/// The blob that stands for a key such as `crew-task:<task>` (written, so that
/// `git notes show` can resolve it).
pub fn key_blob(repo: &gix::Repository, key: &str) -> Result<ObjectId> {
    Ok(repo
        .write_blob(key.as_bytes())
        .context("cannot write a key blob")?
        .detach())
}

/// The note on `object` in `notes_ref`, if any: looked up in the ref's notes tree alone.
/// (gix's notes platform first expands `notes.displayRef` — a glob, `refs/notes/cre[w]`,
/// since `init` — against every ref of the repository, three a run.)
pub fn read(repo: &gix::Repository, notes_ref: &str, object: ObjectId) -> Result<Option<String>> {
    Ok(read_many(repo, notes_ref, &[object])?.pop().flatten())
}

/// The notes on each of `objects` in `notes_ref` (`None` where there is none), found in
/// one notes tree: only the fan-out subtrees on their paths are read.
pub fn read_many(
    repo: &gix::Repository,
    notes_ref: &str,
    objects: &[ObjectId],
) -> Result<Vec<Option<String>>> {
    let Some(commit) = tip(repo, notes_ref)? else {
        return Ok(vec![None; objects.len()]);
    };
    let root = repo
        .find_commit(commit)
        .context("not a notes commit")?
        .tree_id()?
        .detach();
    let state = gix::note::plumbing::State::new(root, repo)
        .with_context(|| format!("cannot read {notes_ref}"))?;
    let mut notes = Notes { repo, state };
    objects.iter().map(|object| notes.get(*object)).collect()
}

/// Appends one line to the note on `object`, retrying when another writer moved the ref.
pub fn append_line(
    repo: &gix::Repository,
    notes_ref: &str,
    object: ObjectId,
    line: &str,
) -> Result<()> {
    edit(repo, notes_ref, "crew: append a row", |notes| {
        let mut text = notes.get(object)?.unwrap_or_default();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        // After every row the note holds, so a union keeps this writer's order.
        let line = crate::core::stamp::after(&text, line.trim_end());
        text.push_str(&line);
        text.push('\n');
        Ok(vec![(object, text)])
    })
    .map(|_| ())
}

/// Sets the same note on every object in `objects`, in one commit of the notes ref: all
/// of them or none. Returns the notes commit before and after.
pub fn set_many(
    repo: &gix::Repository,
    notes_ref: &str,
    objects: &[ObjectId],
    text: &str,
) -> Result<(Option<ObjectId>, ObjectId)> {
    edit(repo, notes_ref, "crew: record a run", |_| {
        Ok(objects.iter().map(|o| (*o, text.to_string())).collect())
    })
}

/// The notes as one edit sees them: read from the very notes commit the edit will replace.
pub struct Notes<'a> {
    repo: &'a gix::Repository,
    state: gix::note::plumbing::State,
}

impl Notes<'_> {
    /// The note on `object`, if any.
    pub fn get(&mut self, object: ObjectId) -> Result<Option<String>> {
        match self.blob(object)? {
            Some(blob) => self.text(blob).map(Some),
            None => Ok(None),
        }
    }

    /// The blob of the note on `object`, if any (its text unread).
    pub fn blob(&mut self, object: ObjectId) -> Result<Option<ObjectId>> {
        self.state
            .get(&object, self.repo)
            .with_context(|| format!("cannot read the note on {object}"))
    }

    /// The text of a note's blob.
    pub fn text(&self, blob: ObjectId) -> Result<String> {
        let blob = self.repo.find_blob(blob).context("cannot read a note")?;
        Ok(String::from_utf8_lossy(&blob.data).into_owned())
    }
}

/// What an edit sets a note to: a text, or a blob that is already written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    Text(String),
    Blob(ObjectId),
}

/// One read-modify-write of a notes ref: `change` reads the current notes and returns the
/// notes to set; they are written as one commit and the ref is moved with a
/// compare-and-swap against the commit that was read. When another writer moved the ref
/// first, everything is read again and `change` runs again, so no writer's notes are lost.
/// A process killed at any point leaves the ref at the old or at the new commit (objects
/// written before the ref moved are unreachable and harmless).
/// Returns the notes commit before (if the ref existed) and after.
pub fn edit(
    repo: &gix::Repository,
    notes_ref: &str,
    message: &str,
    mut change: impl FnMut(&mut Notes<'_>) -> Result<Vec<(ObjectId, String)>>,
) -> Result<(Option<ObjectId>, ObjectId)> {
    edit_merging(repo, notes_ref, message, None, |notes| {
        Ok(change(notes)?
            .into_iter()
            .map(|(object, text)| (object, Note::Text(text)))
            .collect())
    })
}

/// [`edit`], with `other` as a second parent of the notes commit: the result of merging
/// another notes history (sync), so that history is contained and pushing it on is a
/// fast-forward.
pub fn edit_merging(
    repo: &gix::Repository,
    notes_ref: &str,
    message: &str,
    other: Option<ObjectId>,
    mut change: impl FnMut(&mut Notes<'_>) -> Result<Vec<(ObjectId, Note)>>,
) -> Result<(Option<ObjectId>, ObjectId)> {
    use gix::refs::transaction::PreviousValue;
    let name: gix::refs::FullName = notes_ref.try_into().context("bad notes ref")?;
    let mut last_error = String::new();
    for attempt in 0..64u64 {
        let parent = match repo.try_find_reference(notes_ref)? {
            Some(mut reference) => Some(
                reference
                    .peel_to_commit()
                    .with_context(|| format!("{notes_ref} does not point to a commit"))?,
            ),
            None => None,
        };
        let parent_id = parent.as_ref().map(|c| c.id);
        let root = match &parent {
            Some(commit) => commit.tree_id()?.detach(),
            None => ObjectId::empty_tree(repo.object_hash()),
        };
        let state = gix::note::plumbing::State::new(root, repo)
            .with_context(|| format!("cannot read {notes_ref}"))?;
        let mut notes = Notes { repo, state };
        let edits = change(&mut notes)?;
        let mut state = notes.state;
        for (object, note) in &edits {
            let blob = match note {
                Note::Text(text) => repo.write_blob(text.as_bytes())?.detach(),
                Note::Blob(blob) => *blob,
            };
            state
                .edit(*object, Some(blob), repo)
                .with_context(|| format!("cannot set the note on {object}"))?;
        }
        let tree = state.write(repo).context("cannot write the notes tree")?;
        let parents: Vec<ObjectId> = parent_id.into_iter().chain(other).collect();
        let commit = repo
            .new_commit(message, tree, parents)
            .context("cannot write the notes commit")?
            .id;
        crate::sys::failpoint::crash("notes-before-ref");
        let expected = match parent_id {
            Some(id) => PreviousValue::MustExistAndMatch(gix::refs::Target::Object(id)),
            None => PreviousValue::MustNotExist,
        };
        match repo.reference(name.as_ref(), commit, expected, format!("notes: {message}")) {
            Ok(_) => return Ok((parent_id, commit)),
            Err(err) => {
                last_error = err.to_string();
                // Lost the race (or the winner holds the ref lock): back off, read again.
                std::thread::sleep(std::time::Duration::from_millis(5 + attempt * 3));
            }
        }
    }
    bail!("cannot update {notes_ref}: {last_error}")
}

/// Creates `notes_ref` at `to`, only if it does not exist yet.
pub fn create(repo: &gix::Repository, notes_ref: &str, to: ObjectId) -> Result<bool> {
    use gix::refs::transaction::PreviousValue;
    Ok(repo
        .reference(
            notes_ref,
            to,
            PreviousValue::MustNotExist,
            "notes: the remote's notes",
        )
        .is_ok())
}

/// Moves `notes_ref` from `from` on to `to` (a descendant), only if it still points at
/// `from`; `false` when another writer moved it first.
pub fn fast_forward(
    repo: &gix::Repository,
    notes_ref: &str,
    from: ObjectId,
    to: ObjectId,
) -> Result<bool> {
    use gix::refs::transaction::PreviousValue;
    Ok(repo
        .reference(
            notes_ref,
            to,
            PreviousValue::MustExistAndMatch(gix::refs::Target::Object(from)),
            "notes: fast-forward to the remote's notes",
        )
        .is_ok())
}

/// Moves `notes_ref` back from `from` to `to` (undoing an edit), only if nobody wrote
/// after it; `false` when the ref has moved on and the notes stay.
pub fn undo(
    repo: &gix::Repository,
    notes_ref: &str,
    from: ObjectId,
    to: Option<ObjectId>,
) -> Result<bool> {
    use gix::refs::transaction::{Change, LogChange, PreviousValue, RefEdit, RefLog};
    let name: gix::refs::FullName = notes_ref.try_into().context("bad notes ref")?;
    let expected = PreviousValue::MustExistAndMatch(gix::refs::Target::Object(from));
    let change = match to {
        Some(to) => Change::Update {
            log: LogChange {
                mode: RefLog::AndReference,
                force_create_reflog: false,
                message: "notes: crew: undo an unfinished integration".into(),
            },
            expected,
            new: gix::refs::Target::Object(to),
        },
        None => Change::Delete {
            expected,
            log: RefLog::AndReference,
        },
    };
    Ok(repo
        .edit_reference(RefEdit {
            change,
            name,
            deref: false,
        })
        .is_ok())
}

/// The commits reachable from `tip` and from none of `hidden` (`base..tip`).
pub fn commits_between(
    repo: &gix::Repository,
    hidden: &[ObjectId],
    tip: ObjectId,
) -> Result<Vec<ObjectId>> {
    let walk = repo
        .rev_walk([tip])
        .with_hidden(hidden.iter().copied())
        .all()?;
    let mut out = Vec::new();
    for info in walk {
        out.push(info?.id);
    }
    Ok(out)
}

/// Every note in `notes_ref`: (annotated object, text). Flat and fanned-out note trees
/// are both read.
pub fn all(repo: &gix::Repository, notes_ref: &str) -> Result<Vec<(ObjectId, String)>> {
    match tip(repo, notes_ref)? {
        Some(commit) => all_at(repo, commit),
        None => Ok(Vec::new()),
    }
}

/// The commit a notes ref points at, if it exists.
pub fn tip(repo: &gix::Repository, notes_ref: &str) -> Result<Option<ObjectId>> {
    match repo.try_find_reference(notes_ref)? {
        Some(mut reference) => Ok(Some(
            reference
                .peel_to_commit()
                .with_context(|| format!("{notes_ref} is not a commit"))?
                .id,
        )),
        None => Ok(None),
    }
}

/// Every note in the notes commit `commit`.
pub fn all_at(repo: &gix::Repository, commit: ObjectId) -> Result<Vec<(ObjectId, String)>> {
    let commit = repo.find_commit(commit).context("not a notes commit")?;
    let root = repo.find_tree(commit.tree_id()?.detach())?;
    let entries: Vec<(String, bool, ObjectId)> = root
        .decode()?
        .entries
        .iter()
        .map(|e| (e.filename.to_string(), e.mode.is_tree(), e.oid.to_owned()))
        .collect();
    // A large ledger is hundreds of small blobs, each decoded on its own: the fan-out
    // subtrees are read on two threads.
    let threads = if entries.len() >= 64 { 2 } else { 1 };
    let chunk = entries.len().div_ceil(threads).max(1);
    let parts: Vec<Result<Vec<(ObjectId, String)>>> = std::thread::scope(|scope| {
        let handles: Vec<_> = entries
            .chunks(chunk)
            .map(|part| {
                let repo = repo.clone();
                scope.spawn(move || {
                    let mut out = Vec::new();
                    for (name, is_tree, oid) in part {
                        visit(&repo, name.clone(), *is_tree, *oid, &mut out)?;
                    }
                    Ok(out)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(super::error::Error::invalid("a notes reader panicked"))
                })
            })
            .collect()
    });
    let mut out = Vec::new();
    for part in parts {
        out.extend(part?);
    }
    Ok(out)
}

/// One entry of a notes tree: a note (its path spells the annotated id) or a fan-out
/// subtree.
fn visit(
    repo: &gix::Repository,
    name: String,
    is_tree: bool,
    oid: ObjectId,
    out: &mut Vec<(ObjectId, String)>,
) -> Result<()> {
    if is_tree {
        walk(repo, oid, name, out)
    } else {
        if let Ok(id) = ObjectId::from_hex(name.as_bytes()) {
            let blob = repo.find_blob(oid)?;
            out.push((id, String::from_utf8_lossy(&blob.data).into_owned()));
        }
        Ok(())
    }
}

/// A note `tip` has in another version than `base` (or that `base` lacks).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    pub object: ObjectId,
    /// Its blob in the tip.
    pub blob: ObjectId,
    /// Its blob in the base, if the base had it.
    pub base: Option<ObjectId>,
}

/// The notes of the notes commit `tip` that the notes commit `base` does not have as they
/// are (every note of `tip` without a base). The two trees are walked side by side and a
/// subtree both hold unchanged is never opened, so the cost follows what changed, not
/// how many notes there are; no note's text is read.
pub fn changed(
    repo: &gix::Repository,
    base: Option<ObjectId>,
    tip: ObjectId,
) -> Result<Vec<Changed>> {
    let tree_of = |commit: ObjectId| -> Result<ObjectId> {
        Ok(repo
            .find_commit(commit)
            .context("not a notes commit")?
            .tree_id()?
            .detach())
    };
    let base = base.map(tree_of).transpose()?;
    let mut out = Vec::new();
    changed_in(repo, "", base, tree_of(tip)?, &mut out)?;
    Ok(out)
}

/// The entries of a tree: (name, is a tree, id).
fn entries(repo: &gix::Repository, tree: ObjectId) -> Result<Vec<(String, bool, ObjectId)>> {
    let tree = repo.find_tree(tree)?;
    Ok(tree
        .decode()?
        .entries
        .iter()
        .map(|e| (e.filename.to_string(), e.mode.is_tree(), e.oid.to_owned()))
        .collect())
}

/// Every note under a tree entry: (annotated object, blob), no text read.
fn flatten(
    repo: &gix::Repository,
    path: String,
    is_tree: bool,
    oid: ObjectId,
    out: &mut std::collections::HashMap<ObjectId, ObjectId>,
) -> Result<()> {
    if is_tree {
        for (name, is_tree, oid) in entries(repo, oid)? {
            flatten(repo, format!("{path}{name}"), is_tree, oid, out)?;
        }
    } else if let Ok(id) = ObjectId::from_hex(path.as_bytes()) {
        out.insert(id, oid);
    }
    Ok(())
}

/// One level of [`changed`]: entries of the same name are compared (the same id: skipped;
/// two subtrees: walked; two notes: compared); anything else — a note new here, or a
/// fan-out that differs between the two — is compared note by note against the whole of
/// this level of the base.
fn changed_in(
    repo: &gix::Repository,
    prefix: &str,
    base: Option<ObjectId>,
    tip: ObjectId,
    out: &mut Vec<Changed>,
) -> Result<()> {
    let base_entries = match base {
        Some(base) => entries(repo, base)?,
        None => Vec::new(),
    };
    let by_name: std::collections::HashMap<&str, (bool, ObjectId)> = base_entries
        .iter()
        .map(|(name, is_tree, oid)| (name.as_str(), (*is_tree, *oid)))
        .collect();
    let mut base_notes: Option<std::collections::HashMap<ObjectId, ObjectId>> = None;
    for (name, is_tree, oid) in entries(repo, tip)? {
        let path = format!("{prefix}{name}");
        match by_name.get(name.as_str()) {
            Some((was_tree, was)) if *was_tree == is_tree && *was == oid => {}
            Some((true, was)) if is_tree => changed_in(repo, &path, Some(*was), oid, out)?,
            Some((false, was)) if !is_tree => {
                if let Ok(object) = ObjectId::from_hex(path.as_bytes()) {
                    out.push(Changed {
                        object,
                        blob: oid,
                        base: Some(*was),
                    });
                }
            }
            _ => {
                if base_notes.is_none() {
                    let mut all = std::collections::HashMap::new();
                    for (name, is_tree, oid) in &base_entries {
                        flatten(repo, format!("{prefix}{name}"), *is_tree, *oid, &mut all)?;
                    }
                    base_notes = Some(all);
                }
                let mut here = std::collections::HashMap::new();
                flatten(repo, path, is_tree, oid, &mut here)?;
                for (object, blob) in here {
                    let was = base_notes
                        .as_ref()
                        .and_then(|all| all.get(&object))
                        .copied();
                    if was != Some(blob) {
                        out.push(Changed {
                            object,
                            blob,
                            base: was,
                        });
                    }
                }
            }
        }
    }
    Ok(())
}

/// Two versions of one note, merged as git's `cat_sort_uniq` strategy does: every line
/// of both, sorted, each once. Rows start with their timestamp, so the union is in time
/// order, and no two rows ever merge into one.
pub fn union_lines(ours: &str, theirs: &str) -> String {
    let mut lines: Vec<&str> = ours
        .lines()
        .chain(theirs.lines())
        .filter(|l| !l.trim().is_empty())
        .collect();
    lines.sort_unstable();
    lines.dedup();
    let mut text = lines.join("\n");
    text.push('\n');
    text
}

fn walk(
    repo: &gix::Repository,
    tree: ObjectId,
    prefix: String,
    out: &mut Vec<(ObjectId, String)>,
) -> Result<()> {
    let tree = repo.find_tree(tree)?;
    for entry in tree.decode()?.entries {
        let name = format!("{prefix}{}", entry.filename.to_str_lossy());
        visit(repo, name, entry.mode.is_tree(), entry.oid.to_owned(), out)?;
    }
    Ok(())
}
