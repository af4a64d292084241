//! Integration through a fleet's remote: a merge queue whose lock is the remote's ref
//! update. The run is merged onto the *remote's* tip of its target with the same audit
//! and re-verify as a local integrate (`core::integrate` decides both), then the target,
//! the crew notes (the run record notes and the ledger's row, merged by union with the
//! remote's first) and the release of the task's claim go to the remote in one atomic
//! push, each with a lease on the value fetched: all of them move, or none. A push that
//! loses the race (another machine landed first) fetches, merges again and tries again,
//! [`LAND_TRIES`] times at most. Once it landed, the target's branch here follows as
//! [`fleet::local_target`] says.

use std::path::Path;
use std::time::Duration;

use super::{Done, Request, Step};
use crate::core::fleet::{self, AtLanding, LAND_TRIES, LocalTarget};
use crate::core::integrate::{self, Built, Plan, Refusal, STATE_FILE};
use crate::git::fleet::{Pushed, Update};
use crate::git::{self, ObjectId, merge, notes, sync};
use crate::run::error::Result;
use crate::run::landing::{self, Journal};
use crate::run::process::RunError;
use crate::run::verify;
use crate::state::runs::RunStore;

/// How a run landed through a fleet's remote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Through {
    pub remote: String,
    /// How many merges were built (one more after each push another machine beat).
    pub tries: usize,
    /// The refs the landing's push moved on the remote.
    pub pushed: Vec<String>,
    /// The task's claim was let go in the same push.
    pub released: bool,
    /// What became of the target's branch here.
    pub local: LocalTarget,
}

/// Fetches the remote's tip of the run's target (and the notes and claims) before the
/// run is audited against it; what git said when the remote cannot be reached.
pub fn prefetch(
    repo_dir: &Path,
    repo: &crate::git::Repository,
    store: &RunStore,
    request: &Request,
    remote: &str,
) -> std::result::Result<(), String> {
    let record = store.load(&request.run).ok().flatten();
    let head = crate::git::refs::head_branch(repo);
    let into = (request.into.clone())
        .or_else(|| record.as_ref().and_then(|r| r.base_ref.clone()))
        .or(head);
    let Some(into) = into else {
        return Ok(());
    };
    crate::git::fleet::fetch_landing(repo_dir, remote, &into).map_err(|e| crate::fault::chain(&e))
}

/// The remote's tip of `branch` as last fetched.
pub fn fetched_tip(repo_dir: &Path, remote: &str, branch: &str) -> Result<Option<ObjectId>> {
    // A fresh view of the refs the fetch moved.
    let repo = crate::git::repo::open(repo_dir)?;
    Ok(crate::git::refs::tip(
        &repo,
        &crate::git::fleet::tracking_branch(remote, branch),
    )?)
}

/// What one try pushed, for undoing here when the push did not land.
struct Written {
    notes: Vec<(&'static str, Option<ObjectId>, ObjectId)>,
}

impl Written {
    /// Takes back the notes this try wrote here (the remote's merged in stay).
    fn undo(&self, repo: &crate::git::Repository) -> Result<()> {
        for (reference, before, after) in self.notes.iter().rev() {
            notes::undo(repo, reference, *after, *before)?;
        }
        Ok(())
    }
}

/// Builds the merge onto the remote's tip, verifies it again when the target moved since
/// the run's base, and pushes it with the notes and the claim's release in one atomic
/// push; built again on the new tip when another machine landed first.
pub fn merge_in(
    repo_dir: &Path,
    store: &RunStore,
    request: &Request,
    remote: &str,
    plan: Plan,
    observe: &dyn Fn(Step),
) -> std::result::Result<std::result::Result<Done, Refusal>, RunError> {
    let run = &request.run;
    let into = plan.into.clone();
    // One integration at a time on this machine; between machines, the remote's leases.
    observe(Step::WaitingTurn);
    let _turn = store.integrate_lock(Duration::from_secs(1800))?;
    {
        let repo = crate::git::repo::open(repo_dir)?;
        if let Err(refusal) =
            integrate::turn(&plan, super::standing_now(&repo, store, run)?.as_ref())
        {
            return Ok(Err(refusal));
        }
    }
    let ticket = crate::run::fleet::load(&store.run_dir(run))?.filter(|t| t.remote == remote);
    let release = match &ticket {
        Some(ticket) => Some(crate::run::fleet::release_update(ticket)?),
        None => None,
    };
    let machine = ticket
        .as_ref()
        .map_or_else(crate::sys::host::name, |t| t.claim.machine.clone());
    let attempts = Attempts {
        repo_dir,
        store,
        request,
        remote,
        plan: &plan,
        observe,
        machine,
        release,
        ticket: ticket.is_some(),
    };
    let mut turn = None;
    let landed = attempts.run(&mut turn);
    if let Some(id) = turn {
        // A turn taken and not let go by a landing: let go now (its time runs out anyway).
        let _ = crate::git::fleet::push(
            repo_dir,
            remote,
            &[Update {
                reference: fleet::turn_ref(&into),
                old: Some(id),
                new: None,
            }],
        );
    }
    landed
}

/// A landing through the remote, as it goes.
struct Attempts<'a> {
    repo_dir: &'a Path,
    store: &'a RunStore,
    request: &'a Request,
    remote: &'a str,
    plan: &'a Plan,
    observe: &'a dyn Fn(Step),
    /// This machine, as a turn names it.
    machine: String,
    /// The release of the claim this machine pushed, when the run holds one there.
    release: Option<Update>,
    /// The run holds a ticket for this remote.
    ticket: bool,
}

/// How long a landing waits for other machines' turns, in all.
const WAIT_AT_MOST: Duration = Duration::from_secs(1800);

/// How long a landing turn holds: long enough for a verify of the merged tree.
fn turn_length(record: &crate::core::record::RunRecord) -> u64 {
    (record.budget_s.max(60) + 60) * 1000
}

impl Attempts<'_> {
    /// Builds and pushes until it lands, is refused, or lost [`LAND_TRIES`] races; `turn`:
    /// the landing turn this machine holds on the remote, when it took one.
    fn run(
        &self,
        turn: &mut Option<ObjectId>,
    ) -> std::result::Result<std::result::Result<Done, Refusal>, RunError> {
        let (repo_dir, store, request, remote, plan, observe) = (
            self.repo_dir,
            self.store,
            self.request,
            self.remote,
            self.plan,
            self.observe,
        );
        let run = &request.run;
        let into = plan.into.clone();
        let base = crate::git::refs::oid(&plan.base)?;
        let run_tip = crate::git::refs::oid(&plan.tip)?;
        let run_dir = store.run_dir(run);
        let release = &self.release;
        let ours = release
            .as_ref()
            .and_then(|u| u.old)
            .map(|id| id.to_string());
        let mut record = plan.record.clone();
        let at = crate::sys::clock::stamp_now();
        let note = plan.note(&at, &request.by, request.gates.clone());
        let waiting_since = std::time::Instant::now();
        let mut fetched = true;
        let mut tries = 0;
        while tries < LAND_TRIES {
            if !fetched && let Err(e) = crate::git::fleet::fetch_landing(repo_dir, remote, &into) {
                return Ok(Err(Refusal::Unreachable(crate::fault::chain(&e))));
            }
            fetched = false;
            let repo = crate::git::repo::open(repo_dir)?;
            // Another machine's turn: wait for its landing (or for its time to run out).
            let seen_turn = crate::git::fleet::seen_turn(&repo, remote, &into)?;
            if seen_turn.as_ref().map(|(id, _)| *id) != *turn {
                // Let go, or taken over once its time ran out: not this machine's.
                *turn = None;
            }
            let now = crate::sys::clock::now_millis();
            if let fleet::Turn::Wait(_) =
                fleet::turn(run, seen_turn.as_ref().and_then(|(_, t)| t.as_ref()), now)
            {
                observe(Step::WaitingTurn);
                if waiting_since.elapsed() > WAIT_AT_MOST {
                    break;
                }
                std::thread::sleep(Duration::from_millis(
                    100 + u64::from(std::process::id() % 50),
                ));
                continue;
            }
            tries += 1;
            // A landing that lost a race takes the next turn.
            if tries > 1 && turn.is_none() && !request.dry_run {
                let taken = fleet::LandingTurn {
                    machine: self.machine.clone(),
                    run: run.clone(),
                    since_ms: now,
                    until_ms: now + turn_length(&record),
                };
                let blob = crate::git::fleet::write_text(&repo, &taken.to_text())?;
                let update = Update {
                    reference: fleet::turn_ref(&into),
                    old: seen_turn.as_ref().map(|(id, _)| *id),
                    new: Some(blob),
                };
                match crate::git::fleet::push(repo_dir, remote, &[update]) {
                    Ok(Pushed::Done) => *turn = Some(blob),
                    // Another machine took it first: wait for it.
                    Ok(Pushed::Lost) => continue,
                    // A remote that refuses turns still takes landings: race on.
                    Ok(Pushed::Refused(_)) | Err(_) => {}
                }
            }
            observe(Step::Merging);
            // The remote's notes merged into ours first: what is pushed descends from them.
            if !request.dry_run {
                for local in notes::ALL {
                    let tracking = sync::tracking_ref(remote, local);
                    if let Err(e) = sync::merge_into(&repo, local, &tracking) {
                        return Err(match e {
                            sync::MergeError::NotNotes(bad) => {
                                crate::run::error::Error::invalid(bad.to_string())
                            }
                            sync::MergeError::Failed(e) => e.into(),
                        }
                        .into());
                    }
                }
            }
            let tracking_target = crate::git::fleet::tracking_branch(remote, &into);
            let target_tip = crate::git::refs::tip(&repo, &tracking_target)?;
            let target = match target_tip {
                None => None,
                Some(tip) => Some(integrate::Target {
                    tip: tip.to_string(),
                    contains_run: merge::is_ancestor(&repo, run_tip, tip),
                    contains_base: merge::is_ancestor(&repo, base, tip),
                    // The remote's branch is nobody's checkout.
                    dirty_checkout: None,
                    state_file: merge::read_path(&repo, tip, STATE_FILE)?,
                }),
            };
            let onto = match integrate::onto(plan, &note, target.as_ref()) {
                Ok(onto) => onto,
                Err(refusal) => return Ok(Err(refusal)),
            };
            let Some(target_tip) = target_tip else {
                return Ok(Err(Refusal::NoTarget(format!(
                    "no branch {into} on {remote}"
                ))));
            };
            let built = match merge::merge(
                &repo,
                target_tip,
                run_tip,
                onto.range_from.is_some().then_some(base),
                &[(STATE_FILE, onto.state_file.clone().into_bytes())],
            )? {
                // The audited diff is the applied diff, from the remote's tip.
                merge::Merged::Clean(tree) => Built::Clean {
                    applied: git::diff::changed_between_trees(
                        &repo,
                        merge::tree_of(&repo, target_tip)?,
                        tree,
                    )?
                    .into_iter()
                    .filter(|c| c.path != STATE_FILE)
                    .collect(),
                    tree,
                },
                merge::Merged::Conflicts(paths) => Built::Conflicts(paths),
            };
            let (tree, landing) = match integrate::after_merge(plan, &onto, built) {
                Ok(decided) => decided,
                Err(refusal) => {
                    if refusal.counts_as_scope_reject() && !request.dry_run {
                        landing::record_scope_reject(repo_dir, &repo, &record)?;
                    }
                    return Ok(Err(refusal));
                }
            };
            let parents = (landing.parents.iter())
                .map(|p| crate::git::refs::oid(p))
                .collect::<crate::git::error::Result<Vec<_>>>()?;
            let commit = merge::commit(&repo, &landing.message, tree, &parents)?;
            if request.dry_run {
                return Ok(Ok(Done {
                    landing,
                    record,
                    commit,
                    merged_verify: None,
                    noted: Vec::new(),
                    cleanup: landing::Cleaned::kept(),
                    attempts_ref: git::run_range::attempts_ref(run),
                    completed: false,
                    dry_run: true,
                    remote: None,
                }));
            }

            let mut merged_verify = None;
            if let Some(command) = &landing.reverify {
                observe(Step::Reverifying);
                let outcome = match super::verify_merged(repo_dir, store, &record, command, commit)?
                {
                    verify::Verified::Done(result) => integrate::Reverified::Done(result),
                    verify::Verified::Timeout => integrate::Reverified::Timeout,
                    verify::Verified::SetupFailed(problem) => {
                        integrate::Reverified::SetupFailed(problem)
                    }
                };
                match integrate::reverified(plan, outcome) {
                    Ok(result) => merged_verify = Some(result),
                    Err(refusal) => return Ok(Err(refusal)),
                }
            }

            observe(Step::WritingNotes);
            let (seen_claims, _) = crate::git::fleet::seen(&repo, remote)?;
            let release = match fleet::at_landing(run, &record.task, ours.as_deref(), &seen_claims)
            {
                AtLanding::Release => release.clone(),
                AtLanding::Nothing => None,
                AtLanding::TakenOver(why) => return Ok(Err(Refusal::ClaimTakenOver(why))),
            };
            // The run record notes and the ledger's row, written here, then pushed.
            let mut noted = vec![commit];
            noted.extend(notes::commits_between(&repo, &[base, target_tip], run_tip)?);
            let (crew_before, crew_after) =
                notes::set_many(&repo, notes::CREW, &noted, &note.to_line())?;
            let mut written = Written {
                notes: vec![(notes::CREW, crew_before, crew_after)],
            };
            let mut journal = Journal {
                commit: commit.to_string(),
                into: into.clone(),
                at: at.clone(),
                by: request.by.clone(),
                squash: landing.squash,
                forced_unverified: landing.forced_unverified,
                run_tip: run_tip.to_string(),
                target_before: target_tip.to_string(),
                notes_before: crew_before.map(|n| n.to_string()),
                notes_after: crew_after.to_string(),
                merged_reward: merged_verify.as_ref().map(|v| v.reward),
                applied_as: landing.applied_as.to_string(),
                remote: Some(remote.to_string()),
                ledger_before: None,
                ledger_after: None,
            };
            let ledger_before = notes::tip(&repo, notes::LEDGER)?;
            let row = landing::landed_row(
                &record,
                &landing::Landed {
                    commit: &journal.commit,
                    into: &into,
                    at: &at,
                    by: &request.by,
                    squash: journal.squash,
                    forced_unverified: journal.forced_unverified,
                    run_tip,
                    merged_reward: journal.merged_reward,
                },
            );
            let appended = crate::run::ledger::append_row(repo_dir, &record.task, &row);
            let repo = crate::git::repo::open(repo_dir)?;
            if let Some(after) = notes::tip(&repo, notes::LEDGER)?
                && Some(after) != ledger_before
            {
                written.notes.push((notes::LEDGER, ledger_before, after));
            }
            if let Err(e) = appended {
                written.undo(&repo)?;
                return Err(e.into());
            }
            if let Some((_, before, after)) = written.notes.iter().find(|w| w.0 == notes::LEDGER) {
                journal.ledger_before = before.map(|b| b.to_string());
                journal.ledger_after = Some(after.to_string());
            }

            let mut updates = vec![Update {
                reference: format!("refs/heads/{into}"),
                old: Some(target_tip),
                new: Some(commit),
            }];
            for local in notes::ALL {
                let mine = notes::tip(&repo, local)?;
                let theirs = crate::git::refs::tip(&repo, &sync::tracking_ref(remote, local))?;
                if mine.is_some() && mine != theirs {
                    updates.push(Update {
                        reference: local.to_string(),
                        old: theirs,
                        new: mine,
                    });
                }
            }
            updates.extend(release.iter().cloned());
            if let Some(id) = *turn {
                updates.push(Update {
                    reference: fleet::turn_ref(&into),
                    old: Some(id),
                    new: None,
                });
            }
            // Written before the push: an integrate killed from here on is finished (or
            // taken back) by the next integrate of the run, or `doctor --fix`.
            if let Err(e) = landing::write_journal(store, run, &journal) {
                written.undo(&repo)?;
                return Err(e.into());
            }
            crate::sys::failpoint::crash("integrate-before-target");
            let pushed = match crate::git::fleet::push(repo_dir, remote, &updates) {
                Ok(pushed) => pushed,
                Err(e) => {
                    written.undo(&repo)?;
                    landing::drop_journal(store, run);
                    return Ok(Err(Refusal::Unreachable(crate::fault::chain(&e))));
                }
            };
            if !matches!(pushed, Pushed::Done) {
                written.undo(&repo)?;
                landing::drop_journal(store, run);
            }
            match pushed {
                Pushed::Done => *turn = None,
                Pushed::Refused(why) => {
                    return Ok(Err(Refusal::RemoteRefused(format!(
                        "{remote} refused the landing of run {run} on {into}: {why}; nothing moved there"
                    ))));
                }
                Pushed::Lost => {
                    // Another machine landed first: fetch, merge again on its tip.
                    let jitter = u64::from(std::process::id() % 29);
                    std::thread::sleep(Duration::from_millis(10 * (tries.min(10) as u64) + jitter));
                    continue;
                }
            }
            crate::sys::failpoint::crash("integrate-after-target");

            // Landed on the remote. What it holds now is what was fetched from it.
            for u in &updates {
                let tracking = match u.reference.as_str() {
                    r if r.starts_with("refs/heads/") => tracking_target.clone(),
                    r if r.starts_with("refs/notes/") => sync::tracking_ref(remote, r),
                    _ => continue,
                };
                if let Some(new) = u.new {
                    merge::set_ref(&repo, &tracking, new, "crew: landed through the remote")?;
                }
            }
            let released = release.is_some();
            if self.ticket {
                // Let go in the push (or gone already): nothing of it is this run's now.
                let _ = std::fs::remove_file(crate::core::layout::fleet_ticket(&run_dir));
            }
            let local = follow(&repo, &into, commit, run)?;
            let cleanup = landing::land(
                repo_dir,
                &repo,
                store,
                &mut record,
                &journal,
                request.cleanup,
            )?;
            return Ok(Ok(Done {
                landing,
                record,
                commit,
                merged_verify,
                noted,
                cleanup,
                attempts_ref: git::run_range::attempts_ref(run),
                completed: false,
                dry_run: false,
                remote: Some(Through {
                    remote: remote.to_string(),
                    tries,
                    pushed: updates.iter().map(|u| u.reference.clone()).collect(),
                    released,
                    local,
                }),
            }));
        }
        Ok(Err(Refusal::KeptMoving(format!(
            "{into} on {remote} kept moving while run {run} was being landed: {tries} pushes lost the race to other machines; nothing was pushed"
        ))))
    }
}

/// Moves the target's branch here to the landed commit where [`fleet::local_target`]
/// says so; what became of it.
fn follow(
    repo: &crate::git::Repository,
    into: &str,
    commit: ObjectId,
    run: &str,
) -> Result<LocalTarget> {
    let tip = merge::branch_tip(repo, into)?;
    let checkout = merge::checked_out_in(repo, into)?;
    let dirty = match (&checkout, tip) {
        (Some(wt), Some(tip)) => merge::has_tracked_changes(repo, wt, tip)?,
        _ => false,
    };
    let decided = fleet::local_target(
        tip.is_some(),
        tip == Some(commit),
        tip.is_some_and(|t| merge::is_ancestor(repo, t, commit)),
        dirty,
    );
    let (LocalTarget::FastForward, Some(tip)) = (&decided, tip) else {
        return Ok(decided);
    };
    let moved = match &checkout {
        // Seen without changes to tracked files just now.
        Some(wt) => merge::fast_forward(
            repo,
            wt,
            (tip, commit),
            true,
            (crate::run::post_merge::INTEGRATING_VAR, run),
        ),
        None => merge::advance(
            repo,
            into,
            tip,
            commit,
            &format!("crew: integrate run {run} (landed on the remote)"),
        ),
    };
    Ok(match moved {
        Ok(()) => decided,
        Err(e) => LocalTarget::Left(format!(
            "git would not fast-forward it: {}",
            crate::fault::chain(&e)
        )),
    })
}
