//! Strays taken out of a task's ref folder (`core::strays` decides which, and where each
//! is kept): dispatch notes what the folder holds in the run's folder; the supervisor
//! takes out what is new when an attempt ends and when the run is filed; `doctor` and
//! `prune` take what no run git-crew knows owns ([`settle`]). What a stray points at is
//! kept under `refs/crew/strays/<run>/<name>` before the stray goes: nothing is lost.

use std::path::Path;

use crate::core::strays::{self, Found, Known, Moved, Stray, Taken};
use crate::run::error::{Context, Result};
use crate::state::runs::RunStore;

/// Notes what `task`'s ref folder holds at dispatch, in the run's folder.
pub fn note(repo: &crate::git::Repository, task: &str, run_dir: &Path) -> Result<()> {
    let found = crate::git::refs::folder(repo, &strays::folder(task))?;
    std::fs::write(
        crate::core::layout::task_refs(run_dir),
        serde_json::to_vec(&found)?,
    )
    .context("cannot note the task's ref folder")
}

/// What a sweep of a run's task folder did.
#[derive(Debug, Default)]
pub struct Swept {
    pub taken: Vec<Taken>,
    pub moved: Vec<Moved>,
}

/// Takes out of `task`'s ref folder what run `run` left there: what is new since dispatch
/// noted the folder and is not the run's branch. `None` for a run dispatched before
/// dispatch noted its folder (`doctor` and `prune` find its strays).
pub fn sweep(
    repo: &crate::git::Repository,
    task: &str,
    run: &str,
    run_dir: &Path,
) -> Result<Option<Swept>> {
    let Ok(bytes) = std::fs::read(crate::core::layout::task_refs(run_dir)) else {
        return Ok(None);
    };
    let before: Vec<Found> =
        serde_json::from_slice(&bytes).context("cannot read what the task's folder held")?;
    let now = crate::git::refs::folder(repo, &strays::folder(task))?;
    let sweep = strays::sweep(task, run, &before, &now);
    Ok(Some(Swept {
        taken: take(repo, run, task, &sweep.strays, true),
        moved: sweep.moved,
    }))
}

/// The refs kept under `refs/crew/strays/<run>/`.
pub fn kept(repo: &crate::git::Repository, run: &str) -> Vec<String> {
    crate::git::refs::under(repo, &strays::kept_folder(run))
        .map(|refs| refs.into_iter().map(|(name, _)| name).collect())
        .unwrap_or_default()
}

/// The lines run `run`'s discrepancies get for what was taken out of its task's folder
/// (`swept`, by this process) and for everything kept for it.
pub fn discrepancies(
    repo: &crate::git::Repository,
    task: &str,
    run: &str,
    swept: &Swept,
) -> Vec<String> {
    strays::discrepancies(task, run, &swept.taken, &swept.moved, &kept(repo, run))
}

/// Takes `found` (strays of `task`'s folder) out for `run`: what each points at is kept
/// under `refs/crew/strays/<run>/` (names from `core::strays::keep_names`), then it is
/// removed — or, without `apply`, only where each would be kept is said.
fn take(
    repo: &crate::git::Repository,
    run: &str,
    task: &str,
    found: &[Found],
    apply: bool,
) -> Vec<Taken> {
    let names: Vec<&str> = found.iter().map(|f| f.name.as_str()).collect();
    let kept_as = strays::keep_names(run, task, &names, &kept(repo, run));
    let folder = strays::folder(task);
    found
        .iter()
        .zip(kept_as)
        .map(|(f, kept_as)| {
            let mut taken = Taken {
                name: f.name.clone(),
                target: f.target.clone(),
                kept_as: f.target.as_ref().map(|_| kept_as),
                removed: false,
                error: None,
            };
            if !apply {
                return taken;
            }
            let done = (|| -> Result<()> {
                if let (Some(target), Some(kept_as)) = (&f.target, &taken.kept_as) {
                    let message =
                        format!("crew: kept {}, a stray of task {task}'s ref folder", f.name);
                    crate::git::refs::create(
                        repo,
                        kept_as,
                        crate::git::refs::oid(target)?,
                        &message,
                    )?;
                }
                Ok(crate::git::refs::remove_found(repo, &folder, f)?)
            })();
            match done {
                Ok(()) => taken.removed = true,
                Err(err) => {
                    if taken
                        .kept_as
                        .as_deref()
                        .is_some_and(|k| !crate::git::refs::exists(repo, k))
                    {
                        taken.kept_as = None;
                    }
                    taken.error = Some(crate::fault::chain(&err));
                }
            }
            taken
        })
        .collect()
}

/// Every stray in the ref folders of the tasks git-crew knows (`core::strays::leftovers`)
/// — and, with `apply`, each taken out, its target kept, save those of a task with a live
/// run. Holds the dispatch turn meanwhile: no dispatch has a branch made and its run not
/// yet known.
pub fn settle(repo: &crate::git::Repository, store: &RunStore, apply: bool) -> Result<Vec<Stray>> {
    let _turn = store.dispatch_lock(std::time::Duration::from_secs(60))?;
    let mut known: Vec<Known> = Vec::new();
    for mut record in store.live()? {
        let _ = crate::git::seal::restore(repo, &mut record);
        known.push(Known {
            run: record.run,
            task: record.task,
            live: true,
        });
    }
    for record in store.finished()? {
        if !known.iter().any(|k| k.run == record.run) {
            known.push(Known {
                run: record.run,
                task: record.task,
                live: false,
            });
        }
    }
    let found = crate::git::refs::folder(repo, strays::HEADS)?;
    let leftovers = strays::leftovers(&found, &known);
    // By run (and task): where each is kept is decided against what that run keeps.
    let mut out = Vec::new();
    let mut groups: Vec<(&str, &str, bool)> = Vec::new();
    for l in &leftovers {
        let key = (l.run.as_str(), l.task.as_str(), l.live);
        if !groups.contains(&key) {
            groups.push(key);
        }
    }
    for (run, task, live) in groups {
        let found: Vec<Found> = leftovers
            .iter()
            .filter(|l| l.run == run && l.task == task)
            .map(|l| l.found.clone())
            .collect();
        for taken in take(repo, run, task, &found, apply && !live) {
            let git_reads = found
                .iter()
                .find(|f| f.name == taken.name)
                .is_some_and(|f| f.git_reads);
            out.push(Stray {
                name: taken.name,
                task: task.to_string(),
                target: taken.target,
                git_reads,
                kept_as: taken.kept_as,
                removed: taken.removed,
                left: taken.error,
                live,
            });
        }
    }
    Ok(out)
}
