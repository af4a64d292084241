//! A fleet's claims, decided as values. Machines that share a git remote coordinate
//! through it: a run's claim on its task is a ref on the remote
//! (`refs/crew/claims/<task>`) naming the blob of a [`FleetClaim`], created with a
//! create-only lease and renewed, taken over or let go with a compare-and-swap on its
//! old value. Every new claim also moves one serial ref (`refs/crew/fleet`) in the same
//! atomic push, with a lease on the value the claimer read: two machines that claim at
//! once cannot both have checked the other's scope, so one of them reads again.
//!
//! The rule is `core::claim`'s, over the claims whose lease runs; a claim whose lease ran
//! out holds nothing and may be taken over.

use serde::{Deserialize, Serialize};

use crate::core::claim::{Claim, Clash, Wanted, clash};
use crate::core::record::Phase;

/// Where the claims live on the remote: one ref a task.
pub const CLAIMS_PREFIX: &str = "refs/crew/claims/";
/// Where runs keep their commits on the remote as they go: one ref a run.
pub const ATTEMPTS_PREFIX: &str = "refs/crew/attempts/";
/// The serial ref every new claim moves, so that claims are decided one at a time.
pub const SERIAL: &str = "refs/crew/fleet";

/// The ref of `task`'s claim.
pub fn claim_ref(task: &str) -> String {
    format!("{CLAIMS_PREFIX}{task}")
}

/// The task a claim ref stands for.
pub fn task_of(reference: &str) -> Option<&str> {
    reference
        .strip_prefix(CLAIMS_PREFIX)
        .filter(|task| !task.is_empty())
}

/// One claim as the remote keeps it (the blob a claim ref names), in JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FleetClaim {
    /// The machine whose run holds it (`fleet.machine`, else the host's name).
    pub machine: String,
    pub run: String,
    pub task: String,
    /// Its role may commit: only then does its scope hold paths.
    pub writes: bool,
    pub scope: Vec<String>,
    /// When it was first taken, and last renewed (ms since the epoch, the holder's clock).
    pub since_ms: u64,
    pub renewed_ms: u64,
    /// How long after its last renewal it holds.
    pub lease_ms: u64,
    /// The ref on the remote that keeps the run's commits as it goes
    /// (`refs/crew/attempts/<run>`), for whoever takes the task over.
    pub attempt_ref: String,
    /// When the run passed (the holder's clock): it holds its task until it is
    /// integrated. Absent while the run works.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passed_ms: Option<u64>,
    /// The run whose claim, its lease run out, this one took over: where that run's
    /// commits are kept on the remote. The taking-over run starts afresh from its own
    /// base; the commits stay there, for a person or a later retry to look at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub took_over: Option<TookOver>,
}

/// A claim taken over: whose it was, and where that run's commits are on the remote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TookOver {
    pub run: String,
    pub machine: String,
    pub attempt_ref: String,
}

impl TookOver {
    /// What a claim that replaces `old` says of it: nothing when `old` is the same run's
    /// (a renewal), or no claim git-crew can read.
    pub fn of(old: Option<&FleetClaim>, run: &str) -> Option<TookOver> {
        old.filter(|c| c.run != run).map(|c| TookOver {
            run: c.run.clone(),
            machine: c.machine.clone(),
            attempt_ref: c.attempt_ref.clone(),
        })
    }
}

/// Where a claim's run stands, as far as the claim tells (`status --fleet`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum FleetPhase {
    /// Its run works, and renews its lease.
    Running,
    /// Its run passed and awaits integration: it holds its task, with no lease, until it
    /// is integrated or abandoned (`abandon RUN --remote`, from any machine).
    Passed,
    /// Its run worked and its lease ran out: the run or its machine is gone, and another
    /// machine may take the task over.
    Expired,
    /// The claim's blob is no claim git-crew can read: it holds its task until someone
    /// removes it.
    Unreadable,
}

impl FleetPhase {
    /// The phase of `claim` (`None`: unreadable) at `now_ms`.
    pub fn of(claim: Option<&FleetClaim>, now_ms: u64) -> FleetPhase {
        match claim {
            None => FleetPhase::Unreadable,
            Some(c) if c.passed_ms.is_some() => FleetPhase::Passed,
            Some(c) if c.expired(now_ms) => FleetPhase::Expired,
            Some(_) => FleetPhase::Running,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            FleetPhase::Running => "running",
            FleetPhase::Passed => "passed",
            FleetPhase::Expired => "expired",
            FleetPhase::Unreadable => "unreadable",
        }
    }
}

impl FleetClaim {
    /// When the lease runs out; `None` once the run passed: a pass holds its task until
    /// it is integrated or abandoned, whatever time its machine keeps.
    pub fn expires_ms(&self) -> Option<u64> {
        match self.passed_ms {
            Some(_) => None,
            None => Some(self.renewed_ms.saturating_add(self.lease_ms)),
        }
    }

    /// Whether the claim holds nothing any more at `now_ms`: its run works and its lease
    /// ran out. A pass never expires.
    pub fn expired(&self, now_ms: u64) -> bool {
        self.expires_ms().is_some_and(|end| now_ms >= end)
    }

    /// Whether a runner waits for the claim's run at `now_ms` (it may end, or land, and
    /// unblock what depends on its task): while it works and renews its lease, and for
    /// one lease after it passed, while its machine lands it. A pass older than that
    /// awaits a person (to integrate or abandon it): it still holds its task, but nothing
    /// comes of waiting for it.
    pub fn waited_for(&self, now_ms: u64) -> bool {
        now_ms < self.renewed_ms.saturating_add(self.lease_ms)
    }

    /// The claim as the local rule sees it.
    pub fn as_claim(&self) -> Claim {
        Claim {
            run: self.run.clone(),
            task: self.task.clone(),
            phase: Phase::Working,
            writes: self.writes,
            scope: self.scope.clone(),
        }
    }

    /// The claim renewed at `now_ms`.
    pub fn renewed(&self, now_ms: u64) -> FleetClaim {
        FleetClaim {
            renewed_ms: now_ms.max(self.renewed_ms),
            ..self.clone()
        }
    }

    /// The claim renewed at `now_ms`, its run passed then.
    pub fn passed(&self, now_ms: u64) -> FleetClaim {
        let renewed = self.renewed(now_ms);
        FleetClaim {
            passed_ms: Some(renewed.renewed_ms),
            ..renewed
        }
    }

    /// The claim as the blob's text.
    pub fn to_text(&self) -> String {
        // A struct of strings and numbers always serialises.
        serde_json::to_string(self).unwrap_or_default() + "\n"
    }

    /// A claim read back from a blob; `None` when the text is not one.
    pub fn parse(text: &str) -> Option<FleetClaim> {
        serde_json::from_str(text.trim()).ok()
    }
}

/// A claim found on the remote: its ref's value and what it says (`None` when the blob
/// is not a claim git-crew can read: it holds its task, with no scope known, until
/// someone removes it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub task: String,
    /// The object the claim ref names (hex), the lease for a compare-and-swap.
    pub id: String,
    pub claim: Option<FleetClaim>,
}

/// Why a fleet claim is refused: a run elsewhere (or here) holds what it wants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    pub machine: String,
    pub clash: Clash,
    /// When the holder's lease runs out (ms since the epoch), when known.
    pub until_ms: Option<u64>,
    /// The holder passed: it holds until it is integrated or abandoned.
    pub passed: bool,
}

impl std::fmt::Display for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} on machine {}", self.clash, self.machine)?;
        if self.passed {
            write!(
                f,
                " (it passed and holds until it is integrated, or abandoned with `git crew abandon RUN --remote`)"
            )?;
        } else if let Some(until) = self.until_ms {
            write!(
                f,
                " (its lease runs until {})",
                crate::core::stamp::seconds_of_millis(until)
            )?;
        }
        Ok(())
    }
}

/// What a claimer does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Nobody holds the task: create its claim ref (create-only).
    Create,
    /// The task's claim ran out (or is this very run's): replace it, with a
    /// compare-and-swap on the value read.
    Replace { old: Seen },
    /// Refused.
    Refuse(Held),
}

/// What `wanted` (run `run`) may do among the claims `seen` on the remote at `now_ms`.
/// A claim whose lease ran out holds nothing; an unreadable claim holds its task.
pub fn decide(run: &str, wanted: &Wanted, seen: &[Seen], now_ms: u64) -> Decision {
    let mut replace = None;
    let mut live: Vec<(&Seen, &FleetClaim)> = Vec::new();
    for s in seen {
        match &s.claim {
            None if s.task == wanted.task => {
                return Decision::Refuse(Held {
                    machine: "unknown (the claim cannot be read)".to_string(),
                    clash: Clash::Task(Claim {
                        run: format!("claim {}", s.id),
                        task: s.task.clone(),
                        phase: Phase::Working,
                        writes: false,
                        scope: Vec::new(),
                    }),
                    until_ms: None,
                    passed: false,
                });
            }
            None => {}
            Some(c) if s.task == wanted.task && (c.run == run || c.expired(now_ms)) => {
                replace = Some(s.clone());
            }
            Some(c) if c.run == run => {}
            Some(c) if c.expired(now_ms) => {}
            Some(c) => live.push((s, c)),
        }
    }
    let held: Vec<Claim> = live.iter().map(|(_, c)| c.as_claim()).collect();
    if let Some(found) = clash(wanted, &held) {
        let holder_run = match &found {
            Clash::Task(h) | Clash::Scope { holder: h, .. } => h.run.clone(),
        };
        let holder = live.iter().map(|(_, c)| *c).find(|c| c.run == holder_run);
        return Decision::Refuse(Held {
            machine: holder.map_or_else(|| "unknown".to_string(), |c| c.machine.clone()),
            clash: found,
            until_ms: holder.and_then(FleetClaim::expires_ms),
            passed: holder.is_some_and(|c| c.passed_ms.is_some()),
        });
    }
    match replace {
        Some(old) => Decision::Replace { old },
        None => Decision::Create,
    }
}

/// The serial ref's next text: which claim moved it, so each value is new.
pub fn serial_text(claim: &FleetClaim, previous: Option<&str>) -> String {
    format!(
        "claim {} by {} (run {}) at {}; after {}\n",
        claim.task,
        claim.machine,
        claim.run,
        claim.renewed_ms,
        previous.unwrap_or("none")
    )
}

/// How often an integrate through the remote builds its merge again on a fresh tip after
/// another machine landed first, before it gives up (`target-kept-moving`).
pub const LAND_TRIES: usize = 16;

/// Where a target's landing turn lives on the remote: one ref a branch.
pub const TURNS_PREFIX: &str = "refs/crew/landing/";

/// The ref of the landing turn on `branch`.
pub fn turn_ref(branch: &str) -> String {
    format!("{TURNS_PREFIX}{branch}")
}

/// A landing turn: a machine whose landing lost the race to another machine's takes the
/// next turn on the target, so that machines whose landings are quicker (a verify of the
/// merged tree is not quick) cannot beat it forever. The others wait while it holds the
/// turn; its landing's push lets the turn go, and a turn whose time ran out holds nothing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LandingTurn {
    pub machine: String,
    pub run: String,
    pub since_ms: u64,
    /// When it holds nothing any more (ms since the epoch, the holder's clock).
    pub until_ms: u64,
}

impl LandingTurn {
    /// The turn as the blob's text.
    pub fn to_text(&self) -> String {
        // A struct of strings and numbers always serialises.
        serde_json::to_string(self).unwrap_or_default() + "\n"
    }

    /// A turn read back from a blob; `None` when the text is not one.
    pub fn parse(text: &str) -> Option<LandingTurn> {
        serde_json::from_str(text.trim()).ok()
    }
}

/// Whether a landing of `run` may go on with the turn as the remote holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Turn {
    /// Nobody holds the turn, it is this run's, or its time ran out: go on.
    Go,
    /// Another run holds it: wait, then look again.
    Wait(LandingTurn),
}

/// What a landing of `run` does at `now_ms` with `held`, the turn on its target (`None`:
/// nobody holds it; an unreadable turn holds nothing).
pub fn turn(run: &str, held: Option<&LandingTurn>, now_ms: u64) -> Turn {
    match held {
        Some(t) if t.run != run && now_ms < t.until_ms => Turn::Wait(t.clone()),
        _ => Turn::Go,
    }
}

/// What a landing does with the task's claim, as the remote holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AtLanding {
    /// The claim is still the one this run pushed: let it go in the landing's push, with
    /// a lease on its value.
    Release,
    /// Nothing to let go: the run holds no claim there.
    Nothing,
    /// The run's claim is not its own any more: another run holds the task now (this
    /// run's lease ran out while it worked, and it was taken over), or its claim was
    /// dropped there (`abandon RUN --remote`). What to say.
    TakenOver(String),
}

/// What landing run `run` does with its task's claim: `ours` is the value of the claim
/// this machine pushed (`None`: it holds none), `seen` the claims on the remote.
pub fn at_landing(run: &str, task: &str, ours: Option<&str>, seen: &[Seen]) -> AtLanding {
    let Some(ours) = ours else {
        return AtLanding::Nothing;
    };
    match seen.iter().find(|s| s.task == task) {
        // It held one: only `abandon --remote` (or a hand) deletes another machine's claim.
        None => AtLanding::TakenOver(format!(
            "run {run}'s claim on task {task} is gone from the remote: it was abandoned there; nothing was landed"
        )),
        Some(s) if s.id == ours => AtLanding::Release,
        Some(s) => match &s.claim {
            // A renewal of this run's own claim this machine did not see.
            Some(c) if c.run == run => AtLanding::Release,
            Some(c) => AtLanding::TakenOver(format!(
                "task {task} is held on the remote by run {} on machine {}: run {run}'s lease ran out and the task was taken over; nothing was landed",
                c.run, c.machine
            )),
            None => AtLanding::TakenOver(format!(
                "task {task}'s claim on the remote ({}) is not run {run}'s and cannot be read; nothing was landed",
                s.id
            )),
        },
    }
}

/// What `abandon RUN --remote` does with the claims `seen` on the remote at `now_ms`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dropping {
    /// The run's claim may go: it passed (and its machine never integrated it), or its
    /// lease ran out. Delete it with a lease on its value.
    Delete(Box<Seen>),
    /// Its run works and renews its lease: it is abandoned on its own machine, or its
    /// lease is left to run out. Why.
    Live(String),
    /// No claim on the remote is the run's.
    Absent,
}

/// Whether run `run`'s claim may be dropped from the remote by any machine: a pass that
/// waits for a machine that is gone, or a claim whose lease ran out. A working run's
/// live claim is its machine's: dropping it would let two runs work on one task.
pub fn dropping(run: &str, seen: &[Seen], now_ms: u64) -> Dropping {
    let Some((s, c)) = seen
        .iter()
        .find_map(|s| s.claim.as_ref().filter(|c| c.run == run).map(|c| (s, c)))
    else {
        return Dropping::Absent;
    };
    match c.expires_ms() {
        Some(until) if now_ms < until => Dropping::Live(format!(
            "run {run} on machine {} works on task {} and renews its claim (its lease runs until {}): abandon it on that machine, or wait until its lease runs out",
            c.machine,
            c.task,
            crate::core::stamp::seconds_of_millis(until)
        )),
        _ => Dropping::Delete(Box::new(s.clone())),
    }
}

/// What a landing through the remote does with the target's branch here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalTarget {
    /// There is no such branch here: left so (the remote-tracking ref has the landing).
    Absent,
    /// It is at the landed commit already.
    UpToDate,
    /// It is behind the landed commit and may move: fast-forward it (with `merge
    /// --ff-only` where it is checked out).
    FastForward,
    /// It stays where it is, for this reason.
    Left(String),
}

/// Where the target's branch here goes once the run landed on the remote: a branch behind
/// the landed commit is fast-forwarded unless its checkout holds uncommitted changes; one
/// with commits of its own is left alone (the user merges the remote's when they wish).
pub fn local_target(exists: bool, at_landing: bool, behind: bool, dirty: bool) -> LocalTarget {
    match (exists, at_landing, behind, dirty) {
        (false, ..) => LocalTarget::Absent,
        (true, true, ..) => LocalTarget::UpToDate,
        (true, false, false, _) => LocalTarget::Left(
            "it has commits the remote's target does not: merge or rebase it yourself".into(),
        ),
        (true, false, true, true) => LocalTarget::Left(
            "its checkout has uncommitted changes: `git merge --ff-only` it when they are done"
                .into(),
        ),
        (true, false, true, false) => LocalTarget::FastForward,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claim(machine: &str, run: &str, task: &str, scope: &[&str], renewed: u64) -> FleetClaim {
        FleetClaim {
            machine: machine.into(),
            run: run.into(),
            task: task.into(),
            writes: true,
            scope: scope.iter().map(|s| s.to_string()).collect(),
            since_ms: renewed,
            renewed_ms: renewed,
            lease_ms: 1_000,
            attempt_ref: format!("refs/crew/attempts/{run}"),
            passed_ms: None,
            took_over: None,
        }
    }

    fn seen(c: FleetClaim) -> Seen {
        Seen {
            task: c.task.clone(),
            id: format!("id-{}", c.run),
            claim: Some(c),
        }
    }

    fn wanted<'a>(task: &'a str, scope: &'a [String]) -> Wanted<'a> {
        Wanted {
            task,
            writes: true,
            scope,
        }
    }

    #[test]
    fn a_free_task_is_created_and_a_held_one_names_its_machine() {
        let scope = vec!["src/a/**".to_string()];
        assert_eq!(decide("r2", &wanted("a", &scope), &[], 0), Decision::Create);
        let held = [seen(claim("box-1", "r1", "a", &["docs/**"], 10_000))];
        let Decision::Refuse(refused) = decide("r2", &wanted("a", &scope), &held, 10_500) else {
            panic!("a live claim on the task must refuse");
        };
        assert_eq!(refused.machine, "box-1");
        assert_eq!(refused.until_ms, Some(11_000));
        let text = refused.to_string();
        assert!(
            text.contains("task a already has an in-flight run: r1"),
            "{text}"
        );
        assert!(text.contains("on machine box-1"), "{text}");
    }

    #[test]
    fn a_scope_held_elsewhere_is_refused_until_its_lease_runs_out() {
        let scope = vec!["src/**".to_string()];
        let held = [seen(claim("box-1", "r1", "b", &["src/b/**"], 10_000))];
        assert!(matches!(
            decide("r2", &wanted("a", &scope), &held, 10_999),
            Decision::Refuse(Held {
                clash: Clash::Scope { .. },
                ..
            })
        ));
        // Expired: it holds nothing.
        assert_eq!(
            decide("r2", &wanted("a", &scope), &held, 11_000),
            Decision::Create
        );
        // A reader's scope holds no paths.
        let mut reader = claim("box-1", "r1", "b", &["src/b/**"], 10_000);
        reader.writes = false;
        assert_eq!(
            decide("r2", &wanted("a", &scope), &[seen(reader)], 10_000),
            Decision::Create
        );
    }

    #[test]
    fn an_expired_claim_on_the_task_is_taken_over_with_a_swap_on_its_value() {
        let scope = vec!["src/a/**".to_string()];
        let old = seen(claim("box-1", "r1", "a", &["src/a/**"], 10_000));
        assert_eq!(
            decide(
                "r2",
                &wanted("a", &scope),
                std::slice::from_ref(&old),
                12_000
            ),
            Decision::Replace { old: old.clone() }
        );
        // The run's own claim is replaced (renewed), never a clash with itself.
        assert_eq!(
            decide(
                "r1",
                &wanted("a", &scope),
                std::slice::from_ref(&old),
                10_100
            ),
            Decision::Replace { old }
        );
    }

    #[test]
    fn an_unreadable_claim_holds_its_task_and_nothing_else() {
        let scope = vec!["src/**".to_string()];
        let junk = Seen {
            task: "a".into(),
            id: "abc".into(),
            claim: None,
        };
        assert!(matches!(
            decide("r2", &wanted("a", &scope), std::slice::from_ref(&junk), 0),
            Decision::Refuse(_)
        ));
        assert_eq!(
            decide("r2", &wanted("b", &scope), &[junk], 0),
            Decision::Create
        );
    }

    #[test]
    fn a_landing_waits_only_for_another_runs_turn_while_it_lasts() {
        let t = LandingTurn {
            machine: "box-1".into(),
            run: "r1".into(),
            since_ms: 0,
            until_ms: 100,
        };
        assert_eq!(turn("r2", None, 50), Turn::Go);
        assert_eq!(turn("r2", Some(&t), 50), Turn::Wait(t.clone()));
        assert_eq!(turn("r1", Some(&t), 50), Turn::Go);
        assert_eq!(turn("r2", Some(&t), 100), Turn::Go);
        assert_eq!(LandingTurn::parse(&t.to_text()), Some(t));
        assert_eq!(turn_ref("main"), "refs/crew/landing/main");
    }

    #[test]
    fn a_landing_lets_go_of_its_own_claim_only() {
        let mine = seen(claim("box-1", "r1", "a", &["src/**"], 10));
        assert_eq!(
            at_landing("r1", "a", Some("id-r1"), std::slice::from_ref(&mine)),
            AtLanding::Release
        );
        // Renewed since this machine last looked: still its own.
        let renewed = Seen {
            id: "other".into(),
            ..mine.clone()
        };
        assert_eq!(
            at_landing("r1", "a", Some("id-r1"), &[renewed]),
            AtLanding::Release
        );
        // Its claim was dropped from the remote (abandoned there): nothing lands.
        let AtLanding::TakenOver(why) = at_landing("r1", "a", Some("id-r1"), &[]) else {
            panic!("a claim gone from the remote is not this run's to land");
        };
        assert!(why.contains("gone from the remote"), "{why}");
        assert_eq!(at_landing("r1", "a", None, &[mine]), AtLanding::Nothing);
        let theirs = seen(claim("box-2", "r2", "a", &["src/**"], 20));
        let AtLanding::TakenOver(why) = at_landing("r1", "a", Some("id-r1"), &[theirs]) else {
            panic!("another run's claim is a takeover");
        };
        assert!(why.contains("run r2 on machine box-2"), "{why}");
    }

    #[test]
    fn the_local_target_is_fast_forwarded_only_when_behind_and_clean() {
        assert_eq!(
            local_target(false, false, false, false),
            LocalTarget::Absent
        );
        assert_eq!(local_target(true, true, true, true), LocalTarget::UpToDate);
        assert_eq!(
            local_target(true, false, true, false),
            LocalTarget::FastForward
        );
        assert!(matches!(
            local_target(true, false, true, true),
            LocalTarget::Left(why) if why.contains("uncommitted")
        ));
        assert!(matches!(
            local_target(true, false, false, false),
            LocalTarget::Left(why) if why.contains("commits")
        ));
    }

    #[test]
    fn claims_round_trip_through_their_text_and_refs() {
        let c = claim("box-1", "r1", "api/users", &["src/**"], 5);
        assert_eq!(FleetClaim::parse(&c.to_text()), Some(c.clone()));
        assert_eq!(FleetClaim::parse("not json"), None);
        assert_eq!(claim_ref("api/users"), "refs/crew/claims/api/users");
        assert_eq!(task_of("refs/crew/claims/api/users"), Some("api/users"));
        assert_eq!(task_of("refs/crew/claims/"), None);
        assert_eq!(c.renewed(3).renewed_ms, 5);
        assert_eq!(c.renewed(9).renewed_ms, 9);
        assert!(serial_text(&c, Some("x")).contains("after x"));
        // A working claim's text has no `passed_ms`: claims written before it read the same.
        assert!(!c.to_text().contains("passed_ms"), "{}", c.to_text());
        let passed = c.passed(9);
        assert_eq!(passed.passed_ms, Some(9));
        assert_eq!(FleetClaim::parse(&passed.to_text()), Some(passed));
    }

    #[test]
    fn a_claims_phase_is_what_its_lease_and_its_pass_say() {
        let c = claim("box-1", "r1", "a", &["src/**"], 10_000);
        assert_eq!(FleetPhase::of(Some(&c), 10_500), FleetPhase::Running);
        assert_eq!(
            FleetPhase::of(Some(&c.passed(10_200)), 10_500),
            FleetPhase::Passed
        );
        // A pass holds its task with no lease: long after its lease would have run out,
        // it is still passed, and it refuses the task and its scope to other runs.
        let passed = c.passed(10_200);
        assert_eq!(passed.expires_ms(), None);
        assert!(!passed.expired(u64::MAX));
        assert_eq!(FleetPhase::of(Some(&passed), 1_000_000), FleetPhase::Passed);
        let scope = vec!["src/b/**".to_string()];
        let Decision::Refuse(held) = decide(
            "r2",
            &wanted("b", &scope),
            &[seen(passed.clone())],
            1_000_000,
        ) else {
            panic!("a pass holds its scope however old");
        };
        assert!(held.passed);
        assert_eq!(held.until_ms, None);
        assert!(held.to_string().contains("abandon RUN --remote"), "{held}");
        // A runner waits for it while its machine lands it (one lease from the pass),
        // and no longer after: it awaits a person.
        assert!(passed.waited_for(11_199));
        assert!(!passed.waited_for(11_200));
        assert!(c.waited_for(10_999));
        assert!(!c.waited_for(11_000));
        assert_eq!(FleetPhase::of(Some(&c), 11_000), FleetPhase::Expired);
        assert_eq!(FleetPhase::of(None, 0), FleetPhase::Unreadable);
        assert_eq!(FleetPhase::Expired.as_str(), "expired");
    }

    #[test]
    fn only_a_pass_or_a_claim_whose_lease_ran_out_may_be_dropped() {
        let working = seen(claim("box-1", "r1", "a", &["src/**"], 10_000));
        let Dropping::Live(why) = dropping("r1", std::slice::from_ref(&working), 10_500) else {
            panic!("a live working claim is its machine's");
        };
        assert!(why.contains("machine box-1"), "{why}");
        assert_eq!(
            dropping("r1", std::slice::from_ref(&working), 11_000),
            Dropping::Delete(Box::new(working.clone()))
        );
        let passed = seen(claim("box-1", "r1", "a", &["src/**"], 10_000).passed(10_100));
        assert_eq!(
            dropping("r1", std::slice::from_ref(&passed), 10_200),
            Dropping::Delete(Box::new(passed.clone()))
        );
        assert_eq!(dropping("r9", &[working, passed], 10_200), Dropping::Absent);
        let junk = Seen {
            task: "a".into(),
            id: "abc".into(),
            claim: None,
        };
        assert_eq!(dropping("r1", &[junk], 0), Dropping::Absent);
    }

    #[test]
    fn a_takeover_names_the_run_it_took_over_and_a_renewal_names_none() {
        let old = claim("box-1", "r1", "a", &["src/**"], 10_000);
        assert_eq!(
            TookOver::of(Some(&old), "r2"),
            Some(TookOver {
                run: "r1".into(),
                machine: "box-1".into(),
                attempt_ref: "refs/crew/attempts/r1".into(),
            })
        );
        assert_eq!(TookOver::of(Some(&old), "r1"), None);
        assert_eq!(TookOver::of(None, "r2"), None);
        let mut taken = claim("box-2", "r2", "a", &["src/**"], 12_000);
        taken.took_over = TookOver::of(Some(&old), "r2");
        assert_eq!(FleetClaim::parse(&taken.to_text()), Some(taken));
    }
}
