//! Notes, in-process: read a note, append JSON Lines rows to one. Every append is a
//! compare-and-swap update of the notes ref (gix refuses the update when the ref moved),
//! retried on a lost race, so two writers at once never lose a row; a process killed
//! mid-write leaves the ref at its old or its new commit, never broken.

use anyhow::{Context, bail};
use gix::ObjectId;
use gix::bstr::ByteSlice;

/// Run records on integrated commits.
pub const CREW: &str = "refs/notes/crew";
/// The outcome ledger: one note per task, JSON Lines.
pub const LEDGER: &str = "refs/notes/crew-ledger";

/// The blob that stands for a key such as `crew-task:<task>` (written, so that
/// `git notes show` can resolve it).
pub fn key_blob(repo: &gix::Repository, key: &str) -> anyhow::Result<ObjectId> {
    Ok(repo
        .write_blob(key.as_bytes())
        .context("cannot write a key blob")?
        .detach())
}

/// The note on `object` in `notes_ref`, if any.
pub fn read(
    repo: &gix::Repository,
    notes_ref: &str,
    object: ObjectId,
) -> anyhow::Result<Option<String>> {
    let mut platform = repo
        .notes()
        .context("cannot open the notes")?
        .with_refs([notes_ref])
        .context("bad notes ref")?;
    let notes = platform.get(object).context("cannot read the note")?;
    Ok(notes
        .first()
        .map(|note| String::from_utf8_lossy(&note.blob.data).into_owned()))
}

/// Appends one line to the note on `object`, retrying when another writer moved the ref.
pub fn append_line(
    repo: &gix::Repository,
    notes_ref: &str,
    object: ObjectId,
    line: &str,
) -> anyhow::Result<()> {
    update(repo, notes_ref, object, |current| {
        let mut text = current.unwrap_or_default();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        text.push_str(line.trim_end());
        text.push('\n');
        text
    })
}

/// Sets the note on `object` to `text` (replacing any), retrying on a lost race.
pub fn replace(
    repo: &gix::Repository,
    notes_ref: &str,
    object: ObjectId,
    text: &str,
) -> anyhow::Result<()> {
    update(repo, notes_ref, object, |_| text.to_string())
}

/// Writes `edit(current note)` as the note on `object`: a compare-and-swap update of the
/// notes ref, re-reading and retrying when another writer moved it.
fn update(
    repo: &gix::Repository,
    notes_ref: &str,
    object: ObjectId,
    edit: impl Fn(Option<String>) -> String,
) -> anyhow::Result<()> {
    let name: gix::refs::FullName = notes_ref.try_into().context("bad notes ref")?;
    let mut last_error = None;
    for attempt in 0..64u64 {
        let text = edit(read(repo, notes_ref, object)?);
        let mut platform = repo.notes().context("cannot open the notes")?;
        match platform.replace_at_ref(name.as_ref(), object, text.as_bytes()) {
            Ok(_) => return Ok(()),
            Err(err) => {
                last_error = Some(err.to_string());
                // Lost the race (or a ref lock held by the winner): back off and retry.
                std::thread::sleep(std::time::Duration::from_millis(5 + attempt * 3));
            }
        }
    }
    bail!(
        "cannot update {notes_ref}: {}",
        last_error.unwrap_or_default()
    )
}

/// The commits `base..tip` (reachable from `tip`, not from `base`).
pub fn commits_between(
    repo: &gix::Repository,
    base: ObjectId,
    tip: ObjectId,
) -> anyhow::Result<Vec<ObjectId>> {
    let walk = repo.rev_walk([tip]).with_hidden([base]).all()?;
    let mut out = Vec::new();
    for info in walk {
        out.push(info?.id);
    }
    Ok(out)
}

/// Every note in `notes_ref`: (annotated object, text). Flat and fanned-out note trees
/// are both read.
pub fn all(repo: &gix::Repository, notes_ref: &str) -> anyhow::Result<Vec<(ObjectId, String)>> {
    let Some(mut reference) = repo.try_find_reference(notes_ref)? else {
        return Ok(Vec::new());
    };
    let commit = reference
        .peel_to_commit()
        .context("the notes ref is not a commit")?;
    let mut out = Vec::new();
    walk(repo, commit.tree_id()?.detach(), String::new(), &mut out)?;
    Ok(out)
}

fn walk(
    repo: &gix::Repository,
    tree: ObjectId,
    prefix: String,
    out: &mut Vec<(ObjectId, String)>,
) -> anyhow::Result<()> {
    let tree = repo.find_tree(tree)?;
    for entry in tree.decode()?.entries {
        let name = format!("{prefix}{}", entry.filename.to_str_lossy());
        if entry.mode.is_tree() {
            walk(repo, entry.oid.to_owned(), name, out)?;
        } else if let Ok(id) = ObjectId::from_hex(name.as_bytes()) {
            let blob = repo.find_blob(entry.oid.to_owned())?;
            out.push((id, String::from_utf8_lossy(&blob.data).into_owned()));
        }
    }
    Ok(())
}
