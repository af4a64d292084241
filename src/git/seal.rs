//! Where a run's sealed facts are kept: a blob holding their JSON, named by
//! `refs/crew/sealed/<run>`. Under the write fence a worker can write neither the ref nor
//! `packed-refs`; without one, integrate still compares the local run record with it.

use super::error::{Context, Result};

use crate::core::seal::Sealed;

/// The ref that names a run's seal.
pub fn ref_name(run: &str) -> String {
    format!("refs/crew/sealed/{run}")
}

/// Writes (or replaces) a run's seal.
pub fn write(repo: &gix::Repository, sealed: &Sealed) -> Result<()> {
    use gix::refs::transaction::PreviousValue;
    let json = serde_json::to_vec(sealed).context("cannot serialise the seal")?;
    let blob = repo.write_blob(json)?.detach();
    repo.reference(
        ref_name(&sealed.run).as_str(),
        blob,
        PreviousValue::Any,
        "crew: seal the run's facts",
    )
    .with_context(|| format!("cannot seal run {}", sealed.run))?;
    Ok(())
}

/// A run's seal, if it has one.
pub fn read(repo: &gix::Repository, run: &str) -> Result<Option<Sealed>> {
    let Some(mut reference) = repo.try_find_reference(ref_name(run).as_str())? else {
        return Ok(None);
    };
    let id = reference.peel_to_id()?.detach();
    let object = repo.find_object(id)?;
    let sealed = serde_json::from_slice(&object.data)
        .with_context(|| format!("the seal of run {run} ({id}) is not one"))?;
    Ok(Some(sealed))
}

/// Removes a run's seal (a dispatch that failed half-way).
pub fn remove(repo: &gix::Repository, run: &str) -> Result<()> {
    if let Some(reference) = repo.try_find_reference(ref_name(run).as_str())? {
        reference.delete()?;
    }
    Ok(())
}

/// Seals a finished run's verdict next to its facts (a run dispatched before seals
/// existed gets its facts sealed now).
pub fn seal_verdict(repo: &gix::Repository, record: &crate::core::record::RunRecord) -> Result<()> {
    let facts = read(repo, &record.run)?.unwrap_or_else(|| Sealed::of(record));
    write(repo, &facts.with_verdict(record))
}

/// Puts a run's sealed facts back into `record` (read from a live pointer or a local
/// record, which a worker without a fence could have written); returns the fields that
/// differed. A run without a seal (dispatched before seals existed) is left as it is.
pub fn restore(
    repo: &gix::Repository,
    record: &mut crate::core::record::RunRecord,
) -> Result<Vec<&'static str>> {
    Ok(match read(repo, &record.run)? {
        Some(sealed) => sealed.restore(record),
        None => Vec::new(),
    })
}
