//! A run's claim on the fleet's remote, carried out (the rule is `core::fleet`'s, the
//! refs `git::fleet`'s): taken before dispatch makes anything, renewed while the run
//! lives, let go when it ends. What the run holds there is kept in its folder (its
//! ticket), written by the lead's side only, so that renewing and letting go swap the
//! very value this machine pushed.

use std::path::Path;

use crate::core::claim::Wanted;
use crate::core::fleet::{self, Decision, FleetClaim, Held};
use crate::core::flight::Flight;
use crate::core::record::RunRecord;
use crate::git::fleet::{Pushed, Update};
use crate::run::error::{Context, Result};

/// How this machine takes part in a fleet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fleet {
    pub remote: String,
    pub machine: String,
    pub lease_ms: u64,
}

impl Fleet {
    /// The fleet a dispatch takes part in: `remote` (the flag) or `fleet.remote`; none
    /// when neither names one.
    pub fn of(flight: &Flight, remote: Option<&str>) -> Option<Fleet> {
        let remote = remote
            .map(str::to_string)
            .or_else(|| flight.fleet.remote.clone())
            .filter(|r| !r.is_empty())?;
        let machine = flight
            .fleet
            .machine
            .clone()
            .filter(|m| !m.trim().is_empty())
            .unwrap_or_else(crate::sys::host::name);
        // The walker has checked the duration.
        let lease_ms = humantime::parse_duration(&flight.fleet.lease)
            .map_or(120_000, |d| d.as_millis().max(1) as u64);
        Some(Fleet {
            remote,
            machine,
            lease_ms,
        })
    }
}

/// What a run holds on the remote: kept in its folder.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Ticket {
    pub remote: String,
    pub claim: FleetClaim,
    /// The run's commits as last pushed to the remote (`claim.attempt_ref`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_pushed: Option<String>,
}

impl Ticket {
    /// The value of the claim ref this machine last pushed.
    fn id(&self) -> Result<crate::git::ObjectId> {
        Ok(crate::git::objects::blob_id(
            self.claim.to_text().as_bytes(),
        )?)
    }
}

/// One ticket change at a time in this process: the heartbeat's renewal and the run's
/// end never swap the claim from the same old value.
static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// How a claim ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claimed {
    /// The run holds its task on the remote.
    Held(Ticket),
    /// A run on some machine holds the task, or a scope that may overlap.
    Refused(Held),
    /// The remote refused the push (a hook, a protected ref): what it said.
    RemoteRefused(String),
}

/// Rounds of read-decide-push before a claimer gives up on a remote that keeps moving.
const ROUNDS: u32 = 32;

/// Claims `record`'s task and scope on the fleet's remote: reads the claims, decides,
/// and pushes the claim with the serial ref in one atomic push; when another machine
/// moved either first, reads again and decides again.
pub fn claim(repo_dir: &Path, fleet: &Fleet, record: &RunRecord, now_ms: u64) -> Result<Claimed> {
    let wanted = Wanted {
        task: &record.task,
        writes: record.role.may_commit(),
        scope: &record.scope,
    };
    for round in 0..ROUNDS {
        crate::git::fleet::fetch(repo_dir, &fleet.remote)?;
        let repo = crate::git::repo::open(repo_dir)?;
        let (seen, serial) = crate::git::fleet::seen(&repo, &fleet.remote)?;
        let now = now_ms.max(crate::sys::clock::now_millis());
        let (old, took_over) = match fleet::decide(&record.run, &wanted, &seen, now) {
            Decision::Refuse(held) => return Ok(Claimed::Refused(held)),
            Decision::Create => (None, None),
            Decision::Replace { old } => (
                Some(crate::git::refs::oid(&old.id)?),
                fleet::TookOver::of(old.claim.as_ref(), &record.run),
            ),
        };
        let claim = FleetClaim {
            machine: fleet.machine.clone(),
            run: record.run.clone(),
            task: record.task.clone(),
            writes: wanted.writes,
            scope: record.scope.clone(),
            since_ms: now,
            renewed_ms: now,
            lease_ms: fleet.lease_ms,
            attempt_ref: format!("{}{}", fleet::ATTEMPTS_PREFIX, record.run),
            passed_ms: None,
            took_over,
        };
        let blob = crate::git::fleet::write_text(&repo, &claim.to_text())?;
        let serial_text = fleet::serial_text(&claim, serial.map(|s| s.to_string()).as_deref());
        let serial_blob = crate::git::fleet::write_text(&repo, &serial_text)?;
        let updates = [
            Update {
                reference: fleet::claim_ref(&record.task),
                old,
                new: Some(blob),
            },
            Update {
                reference: fleet::SERIAL.to_string(),
                old: serial,
                new: Some(serial_blob),
            },
        ];
        match crate::git::fleet::push(repo_dir, &fleet.remote, &updates)? {
            Pushed::Done => {
                return Ok(Claimed::Held(Ticket {
                    remote: fleet.remote.clone(),
                    claim,
                    attempt_pushed: None,
                }));
            }
            Pushed::Refused(why) => return Ok(Claimed::RemoteRefused(why)),
            Pushed::Lost => {
                // Another machine claimed first: read again, after a pause that grows
                // and differs from machine to machine.
                let jitter = u64::from(std::process::id() % 37);
                std::thread::sleep(std::time::Duration::from_millis(
                    20 * u64::from(round.min(10)) + jitter,
                ));
            }
        }
    }
    Err(crate::run::error::Error::Invalid(format!(
        "the claims on {} kept moving: {ROUNDS} tries to claim task {} lost the race",
        fleet.remote, record.task
    )))
}

/// Renews the ticket's lease at `now_ms` with a swap on the value this machine pushed
/// last; `None` when the claim is no longer its own (its lease ran out and another
/// machine took the task over, or it was let go).
pub fn renew(repo_dir: &Path, ticket: &Ticket, now_ms: u64) -> Result<Option<Ticket>> {
    swap(repo_dir, ticket, ticket.claim.renewed(now_ms))
}

/// Says on the remote that the ticket's run passed (and renews its lease then), with a
/// swap on the value this machine pushed last: the claim holds its task until the run is
/// integrated. `None` when the claim is no longer its own.
pub fn passed(repo_dir: &Path, ticket: &Ticket, now_ms: u64) -> Result<Option<Ticket>> {
    swap(repo_dir, ticket, ticket.claim.passed(now_ms))
}

/// Replaces the ticket's claim on the remote with `claim`, leased on the value pushed last.
fn swap(repo_dir: &Path, ticket: &Ticket, claim: FleetClaim) -> Result<Option<Ticket>> {
    let repo = crate::git::repo::open(repo_dir)?;
    let renewed = Ticket {
        claim,
        ..ticket.clone()
    };
    let blob = crate::git::fleet::write_text(&repo, &renewed.claim.to_text())?;
    let update = Update {
        reference: fleet::claim_ref(&ticket.claim.task),
        old: Some(ticket.id()?),
        new: Some(blob),
    };
    match crate::git::fleet::push(repo_dir, &ticket.remote, &[update])? {
        Pushed::Done => Ok(Some(renewed)),
        Pushed::Lost => Ok(None),
        Pushed::Refused(why) => Err(crate::run::error::Error::Invalid(format!(
            "{} refused the renewal of the claim on task {}: {why}",
            ticket.remote, ticket.claim.task
        ))),
    }
}

/// The update that lets the ticket's claim go (a delete with a lease on its value), for
/// a push of its own or one that carries more.
pub fn release_update(ticket: &Ticket) -> Result<Update> {
    Ok(Update {
        reference: fleet::claim_ref(&ticket.claim.task),
        old: Some(ticket.id()?),
        new: None,
    })
}

/// Lets the ticket's claim go; `false` when it was no longer this machine's to let go.
///
/// The claim may have moved since the ticket was kept: the run's supervisor, another
/// process, renews it and marks it passed. A claim that is still the ticket's run's is let
/// go with a lease on the value the remote holds now.
pub fn release(repo_dir: &Path, ticket: &Ticket) -> Result<bool> {
    let mut update = release_update(ticket)?;
    for _ in 0..3 {
        match crate::git::fleet::push(repo_dir, &ticket.remote, std::slice::from_ref(&update))? {
            Pushed::Done => return Ok(true),
            Pushed::Lost => {}
            Pushed::Refused(why) => {
                return Err(crate::run::error::Error::Invalid(format!(
                    "{} refused to let go of the claim on task {}: {why}",
                    ticket.remote, ticket.claim.task
                )));
            }
        }
        crate::git::fleet::fetch(repo_dir, &ticket.remote)?;
        let repo = crate::git::repo::open(repo_dir)?;
        let (seen, _) = crate::git::fleet::seen(&repo, &ticket.remote)?;
        let same_run = |claim: &FleetClaim| {
            claim.run == ticket.claim.run && claim.machine == ticket.claim.machine
        };
        match seen.into_iter().find(|s| s.task == ticket.claim.task) {
            Some(now) if now.claim.as_ref().is_some_and(same_run) => {
                update.old = Some(crate::git::refs::oid(&now.id)?);
            }
            // Gone, or another run's now.
            _ => return Ok(false),
        }
    }
    Ok(false)
}

/// What `abandon RUN --remote` did with the run's claim on the remote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dropped {
    /// The claim is gone from the remote (deleted with a lease on the value read): as
    /// it was.
    Gone(Box<fleet::Seen>),
    /// The run works and renews its claim: why it was left alone.
    Live(String),
    /// No claim on the remote is the run's.
    Absent,
    /// The remote refused the deletion: what it said.
    RemoteRefused(String),
}

/// Drops run `run`'s claim from `remote` when the rule allows it (`core::fleet::dropping`:
/// a pass, or a claim whose lease ran out), with a lease on the value read; when the
/// claim moved meanwhile, reads it again.
pub fn drop_claim(repo_dir: &Path, remote: &str, run: &str) -> Result<Dropped> {
    for _ in 0..ROUNDS {
        crate::git::fleet::fetch(repo_dir, remote)?;
        let repo = crate::git::repo::open(repo_dir)?;
        let (seen, _) = crate::git::fleet::seen(&repo, remote)?;
        let old = match fleet::dropping(run, &seen, crate::sys::clock::now_millis()) {
            fleet::Dropping::Delete(old) => old,
            fleet::Dropping::Live(why) => return Ok(Dropped::Live(why)),
            fleet::Dropping::Absent => return Ok(Dropped::Absent),
        };
        let update = Update {
            reference: fleet::claim_ref(&old.task),
            old: Some(crate::git::refs::oid(&old.id)?),
            new: None,
        };
        match crate::git::fleet::push(repo_dir, remote, &[update])? {
            Pushed::Done => return Ok(Dropped::Gone(old)),
            Pushed::Refused(why) => return Ok(Dropped::RemoteRefused(why)),
            // Renewed or replaced meanwhile: read it again.
            Pushed::Lost => {}
        }
    }
    Err(crate::run::error::Error::Invalid(format!(
        "the claims on {remote} kept moving: {ROUNDS} tries to drop run {run}'s claim lost the race"
    )))
}

/// Merges the remote's crew notes, as last fetched (`refs/notes/remotes/<remote>/crew*`),
/// into the local ones by line union: the ledger and the gates' verdicts of every machine.
/// Returns, for each notes ref that could not be merged, why.
pub fn merge_fetched_notes(repo: &crate::git::Repository, remote: &str) -> Vec<String> {
    let mut unmerged = Vec::new();
    for local in crate::git::notes::ALL {
        let tracking = crate::git::sync::tracking_ref(remote, local);
        if let Err(e) = crate::git::sync::merge_into(repo, local, &tracking) {
            unmerged.push(format!("{local}: {}", crate::fault::chain(&e)));
        }
    }
    unmerged
}

/// Before a claim: fetches the remote's crew notes and merges them here (what `sync`
/// does, without its push), so that the dispatch decision that follows counts every
/// machine's runs. Returns what could not be merged.
pub fn pull_notes(repo_dir: &Path, remote: &str) -> Result<Vec<String>> {
    crate::git::sync::fetch(repo_dir, remote)?;
    let repo = crate::git::repo::open(repo_dir)?;
    Ok(merge_fetched_notes(&repo, remote))
}

/// Keeps the run's ticket in its folder.
pub fn save(run_dir: &Path, ticket: &Ticket) -> Result<()> {
    let text = serde_json::to_string_pretty(ticket)?;
    crate::sys::fs::write_atomic(&crate::core::layout::fleet_ticket(run_dir), &text, 0o644)
        .context("cannot keep the run's fleet claim")?;
    Ok(())
}

/// The run's ticket, when it holds a claim on a fleet's remote.
pub fn load(run_dir: &Path) -> Result<Option<Ticket>> {
    match std::fs::read(crate::core::layout::fleet_ticket(run_dir)) {
        Ok(bytes) => Ok(Some(serde_json::from_slice(&bytes)?)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Lets go of the run's claim when it holds one, and forgets the ticket; what went
/// wrong is returned for the caller to report, never left to hold the run.
pub fn let_go(repo_dir: &Path, run_dir: &Path) -> Result<Option<bool>> {
    let _turn = TURN.lock();
    let Some(ticket) = load(run_dir)? else {
        return Ok(None);
    };
    let released = release(repo_dir, &ticket)?;
    let _ = std::fs::remove_file(crate::core::layout::fleet_ticket(run_dir));
    Ok(Some(released))
}

/// At a run's end: its commits are pushed to the remote (`refs/crew/attempts/<run>`),
/// then a run that did not pass lets its claim go; a pass marks its claim passed
/// (`passed_ms`) and keeps it until it is integrated. What fails here, the lease's end
/// takes care of.
pub fn at_end(
    repo_dir: &Path,
    run_dir: &Path,
    record: &RunRecord,
    outcome: crate::core::record::Outcome,
) {
    {
        let _turn = TURN.lock();
        if let Ok(Some(mut ticket)) = load(run_dir) {
            // Its objects are in the repository's store now.
            let live = Live::of(repo_dir, run_dir, record);
            if let Ok(pushed) = push_attempt(repo_dir, &ticket, &live) {
                ticket.attempt_pushed = pushed.map(|id| id.to_string());
                let _ = save(run_dir, &ticket);
            }
        }
        let _ = std::fs::remove_dir_all(crate::core::layout::attempt_objects(run_dir));
        // A pass says so on the remote: every machine sees it awaits integration.
        if outcome == crate::core::record::Outcome::Pass
            && let Ok(Some(ticket)) = load(run_dir)
            && let Ok(Some(marked)) = passed(repo_dir, &ticket, crate::sys::clock::now_millis())
        {
            let _ = save(run_dir, &marked);
        }
    }
    if outcome != crate::core::record::Outcome::Pass {
        let _ = let_go(repo_dir, run_dir);
    }
}

/// What a run's heartbeat reads of it to push its commits as they are made.
#[derive(Debug, Clone)]
struct Live {
    /// The repository's common git dir, where the run's branch lives.
    common_dir: std::path::PathBuf,
    /// The run's branch, as a full ref name, and the commit it was cut from.
    branch: String,
    base: Option<crate::git::ObjectId>,
    /// The attempt's object quarantine and where its objects are copied for a push.
    quarantine: std::path::PathBuf,
    store: std::path::PathBuf,
    max_object_size: u64,
}

impl Live {
    fn of(repo_dir: &Path, run_dir: &Path, record: &RunRecord) -> Live {
        let common_dir = crate::git::repo::open(repo_dir)
            .map(|r| r.common_dir().to_path_buf())
            .unwrap_or_else(|_| repo_dir.join(".git"));
        Live {
            common_dir,
            branch: format!("refs/heads/{}", record.branch),
            base: crate::git::refs::oid(&record.base).ok(),
            quarantine: crate::core::layout::quarantine(run_dir),
            store: crate::core::layout::attempt_objects(run_dir),
            max_object_size: record.file_size_cap(),
        }
    }
}

/// A live run's heartbeat: every third of its lease, its claim is renewed and its commits
/// are pushed to the remote (`refs/crew/attempts/<run>`), so another machine can take the
/// task over from them if this one dies. A fenced worker's commits are in its attempt's
/// quarantine until the attempt ends: the beat copies them out (each hashed again, into
/// the run's own folder, never the repository's store) and pushes the run's branch when
/// it names a commit that descends from the run's base. Stops when dropped, or when the
/// claim is no longer the run's.
pub struct Heartbeat {
    stop: Option<std::sync::mpsc::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Heartbeat {
    /// Starts the heartbeat of `record`'s run, whose folder is `run_dir`, when it holds a
    /// claim.
    pub fn start(repo_dir: &Path, run_dir: &Path, record: &RunRecord) -> Option<Heartbeat> {
        let ticket = load(run_dir).ok().flatten()?;
        let every = std::time::Duration::from_millis((ticket.claim.lease_ms / 3).max(200));
        let (stop, stopped) = std::sync::mpsc::channel::<()>();
        let live = Live::of(repo_dir, run_dir, record);
        let (repo_dir, run_dir) = (repo_dir.to_path_buf(), run_dir.to_path_buf());
        let thread = std::thread::spawn(move || {
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(every)
            {
                if !beat(&repo_dir, &run_dir, &live, every) {
                    break;
                }
            }
        });
        Some(Heartbeat {
            stop: Some(stop),
            thread: Some(thread),
        })
    }
}

impl Drop for Heartbeat {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// One beat: renews the claim and pushes the run's commits; `false` when the run holds
/// no claim any more (let go, or taken over once its lease ran out).
fn beat(repo_dir: &Path, run_dir: &Path, live: &Live, every: std::time::Duration) -> bool {
    let _turn = TURN.lock();
    let Ok(Some(ticket)) = load(run_dir) else {
        return false;
    };
    let mut ticket = match renew(repo_dir, &ticket, crate::sys::clock::now_millis()) {
        Ok(Some(renewed)) => renewed,
        Ok(None) => {
            // Taken over: the claim is another run's now; nothing of it is this run's.
            let _ = std::fs::remove_file(crate::core::layout::fleet_ticket(run_dir));
            return false;
        }
        // The remote is out of reach for now: the next beat tries again.
        Err(_) => return true,
    };
    // The attempt's new objects, copied out of its quarantine within this beat's time.
    if let Ok(repo) = crate::git::repo::open(repo_dir) {
        let limits = crate::git::objects::Limits {
            max_object_size: live.max_object_size,
            until: std::time::Instant::now() + every,
        };
        let _ = crate::git::objects::copy_live(&repo, &live.quarantine, &live.store, limits);
    }
    if let Ok(pushed) = push_attempt(repo_dir, &ticket, live) {
        ticket.attempt_pushed = pushed.map(|id| id.to_string());
    }
    let _ = save(run_dir, &ticket);
    true
}

/// Pushes the commit the run's branch names to its attempt ref on the remote, with a
/// lease on what was pushed last, when it is a commit of the run's (see
/// `git::fleet::push_attempt`); the value the remote holds after.
fn push_attempt(
    repo_dir: &Path,
    ticket: &Ticket,
    live: &Live,
) -> Result<Option<crate::git::ObjectId>> {
    let last = match &ticket.attempt_pushed {
        Some(id) => Some(crate::git::refs::oid(id)?),
        None => None,
    };
    let Some(base) = live.base else {
        return Ok(last);
    };
    let tip = crate::git::fleet::branch_tip(&live.common_dir, &live.branch);
    // Nothing of the run's yet (or nothing new): nothing to push.
    if tip.is_none() || tip == last || tip == Some(base) {
        return Ok(last);
    }
    let update = Update {
        reference: ticket.claim.attempt_ref.clone(),
        old: last,
        new: tip,
    };
    match crate::git::fleet::push_attempt(repo_dir, &ticket.remote, &update, base, &live.store)? {
        Pushed::Done => Ok(tip),
        Pushed::Lost | Pushed::Refused(_) => Ok(last),
    }
}
