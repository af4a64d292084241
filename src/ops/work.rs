//! `work`: a runner on one machine. Round after round it looks at the plan as the
//! state stands — with a fleet's remote, as the remote has it: its claims, its notes
//! (the gates' verdicts, the ledger) and its target — takes the ready tasks no one
//! holds, up to `max` runs at once, dispatches them (claiming each on the remote first),
//! integrates each pass, and stops once the plan has nothing ready for it and nothing
//! in flight anywhere. The rule is `core::work`'s.
//!
//! Ctrl-C once: it takes nothing new, finishes the runs it holds (each pass is
//! integrated), then stops. Ctrl-C again: it hands them back at once — a working run is
//! abandoned (its branch kept, its commits pushed to the remote, its claim let go), a
//! pass waiting to land lets its claim go — and stops.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::core::flight::Invocation;
use crate::core::plan::TaskStatus;
use crate::core::record::{Outcome, Phase};
use crate::core::work::{self, Ending, Round};
use crate::error::{CrewError, ErrorCode, Result};

use super::answer::Status;
use super::runs::{self, Access};
use super::{Context, dispatch, integrate};

pub struct Request {
    /// The plan (default: the only one in `.crew/plans`).
    pub plan: Option<String>,
    /// The fleet's remote; none: `fleet.remote`, and with neither the runner works
    /// alone (plain dispatch and integrate).
    pub remote: Option<String>,
    /// How many runs at once, at most (at least one).
    pub max: usize,
    /// The invocation layer of the routing config (`--backend`, `--set`, ...), for every
    /// dispatch and integration.
    pub invocation: Invocation,
    /// How long a round waits when nothing moved.
    pub poll: Duration,
}

/// What the front end asks the runner to do, read every round (its Ctrl-C).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stop {
    /// Work on.
    Go,
    /// Take nothing new; finish the runs held.
    Finish,
    /// Hand the runs held back now.
    HandBack,
}

/// What the runner tells its front end as it goes.
pub enum Event<'a> {
    /// A task was claimed and dispatched.
    Took { task: &'a str, run: &'a str },
    /// A pass was integrated.
    Landed {
        task: &'a str,
        run: &'a str,
        commit: &'a str,
    },
    /// A task's run failed, or its pass could not land, or it could not be dispatched:
    /// this runner does not take it again.
    Failed {
        task: &'a str,
        run: Option<&'a str>,
        why: &'a str,
    },
    /// A run asks for help: parked for the lead.
    NeedsHelp { task: &'a str, run: &'a str },
    /// A run held was handed back after the second Ctrl-C.
    HandedBack { task: &'a str, run: &'a str },
    /// Ctrl-C was heard: what the runner does now.
    Stopping(Stop),
    /// Something on the side (a sync that failed, a target that could not catch up).
    Warning(&'a str),
}

/// How a task this runner took came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Came {
    /// Still held as the runner stopped: asking for help is told as `needs-help`.
    Working,
    Landed,
    Failed,
    NeedsHelp,
    HandedBack,
}

/// A task this runner took, and how it came out.
#[derive(Debug, Clone, Serialize)]
pub struct Taken {
    pub task: String,
    pub run: Option<String>,
    pub outcome: Came,
    /// The commit that landed it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Why it did not land.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// What a runner did, and where the plan stands as it stops.
#[derive(Debug, Clone, Serialize)]
pub struct Worked {
    pub plan: String,
    /// The fleet's remote, when the runner worked through one.
    pub remote: Option<String>,
    /// This machine's name in the fleet.
    pub machine: Option<String>,
    pub max: usize,
    /// Ctrl-C stopped it.
    pub interrupted: bool,
    pub rounds: u64,
    pub wall_s: f64,
    /// Every task it took, in the order taken.
    pub taken: Vec<Taken>,
    /// `all-done`, `failed`, `needs-help` or `unfinished`.
    pub ending: &'static str,
    /// The tasks the ending names (failed here, asking for help, or not done).
    pub left: Vec<String>,
    /// Every task's derived status as the runner stopped.
    pub tasks: Vec<TaskStatus>,
}

impl Worked {
    /// Exit 0 when every task of the plan is done; 1 when a task failed here (and is
    /// not done); 5 when a run asks for help; 4 when tasks are left undone — blocked by
    /// a gate or a dependency, or left by Ctrl-C.
    pub fn status(&self) -> Status {
        let list = self.left.join(", ");
        match self.ending {
            "all-done" => Status::Ok,
            "needs-help" => Status::Attention,
            "failed" => Status::Failed(CrewError::new(
                ErrorCode::RunFailed,
                format!("tasks of plan {} did not pass: {list}", self.plan),
            )),
            _ => Status::Failed(
                CrewError::new(
                    ErrorCode::PlanUnfinished,
                    format!(
                        "plan {} is not done{}: {list}",
                        self.plan,
                        if self.interrupted {
                            ", the runner was stopped"
                        } else {
                            ", nothing left is ready"
                        }
                    ),
                )
                .with_details(
                    self.tasks
                        .iter()
                        .filter(|t| !t.blockers.is_empty())
                        .map(|t| format!("{}: {}", t.task, t.blockers_text()))
                        .collect(),
                ),
            ),
        }
    }
}

/// What the runner holds and has seen, across rounds.
#[derive(Default)]
struct Held {
    /// Task → run: working, or passed and waiting to land.
    mine: BTreeMap<String, String>,
    given_up: BTreeSet<String>,
    /// Task → run asking for help.
    parked: BTreeMap<String, String>,
    taken: Vec<Taken>,
    /// Task → how many landings of its pass met a remote out of reach or a target that
    /// kept moving.
    tries: BTreeMap<String, u32>,
}

/// How many landings of one pass may meet a remote out of reach, or a target that kept
/// moving, before the runner gives the task up.
const LANDING_TRIES: u32 = 5;

/// Rounds in a row the remote can go unread before the runner says so.
const UNSEEN_ROUNDS: u32 = 10;

impl Held {
    fn came(&mut self, task: &str, run: Option<&str>, outcome: Came) -> &mut Taken {
        self.mine.remove(task);
        match self
            .taken
            .iter()
            .rposition(|t| t.task == task && t.run.as_deref() == run)
        {
            Some(at) => {
                self.taken[at].outcome = outcome;
                &mut self.taken[at]
            }
            None => {
                self.taken.push(Taken {
                    task: task.to_string(),
                    run: run.map(str::to_string),
                    outcome,
                    commit: None,
                    why: None,
                });
                let last = self.taken.len() - 1;
                &mut self.taken[last]
            }
        }
    }

    fn failed(&mut self, task: &str, run: Option<&str>, why: String) {
        self.given_up.insert(task.to_string());
        self.came(task, run, Came::Failed).why = Some(why);
    }
}

/// Works the plan until it has nothing ready or in flight; `stop` is asked every round
/// (and while a round waits) what Ctrl-C asks for, `observe` hears what happens.
pub fn work(
    ctx: &Context,
    req: &Request,
    stop: &dyn Fn() -> Stop,
    observe: &dyn Fn(Event<'_>),
) -> Result<Worked> {
    let started = Instant::now();
    let flight = super::flight::resolve(ctx, &req.invocation)?.flight;
    let plan = super::plans::load(ctx, req.plan.as_deref())?;
    let repo_dir = ctx.workdir()?.to_path_buf();
    let fleet = crate::run::fleet::Fleet::of(&flight, req.remote.as_deref());
    if let Some(fleet) = &fleet
        && !crate::git::sync::remotes(ctx.repo()?).contains(&fleet.remote)
    {
        return Err(CrewError::new(
            ErrorCode::RemoteNotFound,
            format!("no remote {}", fleet.remote),
        )
        .hinted("name one of `git remote`, with --remote or fleet.remote"));
    }
    let target = crate::git::refs::head_branch(ctx.repo()?);
    let max = req.max.max(1);
    let mut held = Held::default();
    let mut heard = Stop::Go;
    let mut rounds: u64 = 0;
    // Rounds in a row the remote could not be read.
    let mut unseen: u32 = 0;
    let mut said: BTreeSet<String> = BTreeSet::new();
    let warn_once = |said: &mut BTreeSet<String>, warning: String| {
        if said.insert(warning.clone()) {
            observe(Event::Warning(&warning));
        }
    };
    let statuses = loop {
        rounds += 1;
        let asked = stop();
        if asked > heard {
            heard = asked;
            observe(Event::Stopping(heard));
        }
        // A fresh look at the repository every round: fetches and landings moved refs.
        let settling = Context::new(ctx.cwd.clone());
        if heard == Stop::HandBack {
            hand_back(&settling, &mut held, observe)?;
        }
        let mut moved = settle(&settling, &mut held, req, &mut heard, observe)?;
        for warning in settling.take_warnings() {
            warn_once(&mut said, warning);
        }
        let mut elsewhere = BTreeSet::new();
        let mut working_elsewhere = BTreeSet::new();
        if let Some(fleet) = &fleet {
            let now = crate::sys::clock::now_millis();
            match crate::run::work::look(&repo_dir, &fleet.remote, target.as_deref(), now) {
                Ok(look) => {
                    unseen = 0;
                    for why in look.notes_unmerged {
                        warn_once(
                            &mut said,
                            format!("the remote's notes were not merged: {why}"),
                        );
                    }
                    if let Some(crate::run::work::CaughtUp::Left(why)) = look.caught_up {
                        warn_once(&mut said, why);
                    }
                    // Every run this runner took is its own, a pass it could not land too.
                    let ours: BTreeSet<&String> = held
                        .mine
                        .values()
                        .chain(held.parked.values())
                        .chain(held.taken.iter().filter_map(|t| t.run.as_ref()))
                        .collect();
                    let theirs: Vec<_> = look
                        .claims
                        .into_iter()
                        .filter(|(_, claim)| claim.as_ref().is_none_or(|c| !ours.contains(&c.run)))
                        .collect();
                    working_elsewhere = theirs
                        .iter()
                        .filter(|(_, c)| c.as_ref().is_some_and(|c| c.waited_for(now)))
                        .map(|(task, _)| task.clone())
                        .collect();
                    elsewhere = theirs.into_iter().map(|(task, _)| task).collect();
                }
                // Out of reach for now: this round goes by what was fetched last; said
                // once it lasts.
                Err(e) => {
                    unseen += 1;
                    if unseen >= UNSEEN_ROUNDS {
                        warn_once(&mut said, crate::fault::chain(&e));
                    }
                }
            }
        }
        let round = Context::new(ctx.cwd.clone());
        let (statuses, _) = super::plans::derive(&round, &plan, &flight, Access::Read)?;
        let mine: BTreeSet<String> = held.mine.keys().cloned().collect();
        let parked: BTreeSet<String> = held.parked.keys().cloned().collect();
        let next = work::next(&Round {
            statuses: &statuses,
            held_elsewhere: &elsewhere,
            working_elsewhere: &working_elsewhere,
            mine: &mine,
            given_up: &held.given_up,
            parked: &parked,
            max,
            stopping: heard != Stop::Go,
        });
        if next.over {
            break statuses;
        }
        for task in &next.take {
            let request = dispatch::Request {
                task: task.clone(),
                plan: Some(plan.id.clone()),
                remote: req.remote.clone(),
                invocation: req.invocation.clone(),
                ..Default::default()
            };
            match dispatch::dispatch(&round, &request) {
                Ok(dispatched) => {
                    for warning in dispatched.warnings {
                        warn_once(&mut said, warning);
                    }
                    if let Some(record) = dispatched.started.record {
                        observe(Event::Took {
                            task,
                            run: &record.run,
                        });
                        held.came(task, Some(&record.run), Came::Working);
                        held.mine.insert(task.clone(), record.run);
                        moved = true;
                    }
                }
                // Claimed elsewhere since the claims were read, a backend at its limit,
                // another dispatch under way, the remote out of reach for now: later.
                Err(e) if transient(e.code) => {}
                Err(e) => {
                    observe(Event::Failed {
                        task,
                        run: None,
                        why: &e.message,
                    });
                    held.failed(task, None, e.message);
                }
            }
        }
        for warning in round.take_warnings() {
            warn_once(&mut said, warning);
        }
        if !moved {
            pause(req.poll, stop, heard);
        }
    };
    // The rows of the runs that did not land (a landing carries its own) reach the
    // remote now, for every machine's ledger.
    if let Some(fleet) = &fleet
        && let Err(e) =
            super::sync::sync(&Context::new(ctx.cwd.clone()), Some(fleet.remote.clone()))
    {
        warn_once(
            &mut said,
            format!(
                "the notes were not pushed to {}: {}",
                fleet.remote, e.message
            ),
        );
    }
    let parked: BTreeSet<String> = held.parked.keys().cloned().collect();
    let (ending, left) = match work::ending(&statuses, &held.given_up, &parked) {
        Ending::AllDone => ("all-done", Vec::new()),
        Ending::Failed(left) => ("failed", left),
        Ending::NeedsHelp(left) => ("needs-help", left),
        Ending::Unfinished(left) => ("unfinished", left),
    };
    Ok(Worked {
        plan: plan.id.clone(),
        remote: fleet.as_ref().map(|f| f.remote.clone()),
        machine: fleet.as_ref().map(|f| f.machine.clone()),
        max,
        interrupted: heard != Stop::Go,
        rounds,
        wall_s: (started.elapsed().as_millis() as f64 / 1000.0),
        taken: held.taken,
        ending,
        left,
        tasks: statuses,
    })
}

/// Refusals that pass: the task is tried again in a later round.
fn transient(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::DispatchRefused | ErrorCode::DispatchBusy | ErrorCode::FetchFailed
    )
}

/// Waits `poll` before the next round, or less when Ctrl-C asks for more than was heard.
fn pause(poll: Duration, stop: &dyn Fn() -> Stop, heard: Stop) {
    let until = Instant::now() + poll;
    while Instant::now() < until {
        std::thread::sleep(Duration::from_millis(50).min(poll));
        if stop() > heard {
            // Asked again: said by the next round. `stop` counts what it was told, so
            // asking once more there gives the same answer.
            return;
        }
    }
}

/// Looks at each run this runner holds: a pass is integrated, a failure given up, a run
/// asking for help parked. Whether anything moved.
fn settle(
    ctx: &Context,
    held: &mut Held,
    req: &Request,
    heard: &mut Stop,
    observe: &dyn Fn(Event<'_>),
) -> Result<bool> {
    let store = runs::settled(ctx)?;
    let mut moved = false;
    for (task, run) in held.mine.clone() {
        let record = match store.load(&run) {
            Ok(Some(record)) => record,
            Ok(None) => {
                let why = format!("run {run} is no longer on file");
                observe(Event::Failed {
                    task: &task,
                    run: Some(&run),
                    why: &why,
                });
                held.failed(&task, Some(&run), why);
                moved = true;
                continue;
            }
            Err(e) => {
                let why = e.to_string();
                observe(Event::Failed {
                    task: &task,
                    run: Some(&run),
                    why: &why,
                });
                held.failed(&task, Some(&run), why);
                moved = true;
                continue;
            }
        };
        if record.phase == Phase::NeedsHelp {
            observe(Event::NeedsHelp {
                task: &task,
                run: &run,
            });
            held.came(&task, Some(&run), Came::NeedsHelp);
            held.parked.insert(task, run);
            moved = true;
            continue;
        }
        if !record.phase.is_final() {
            continue;
        }
        moved = true;
        if record.outcome != Some(Outcome::Pass) {
            let why = format!(
                "{}: {}",
                record.outcome.map_or("ended", |o| o.as_str()),
                record.decision.as_deref().unwrap_or("no decision recorded")
            );
            observe(Event::Failed {
                task: &task,
                run: Some(&run),
                why: &why,
            });
            held.failed(&task, Some(&run), why);
            continue;
        }
        if *heard == Stop::HandBack {
            continue;
        }
        let request = integrate::Request {
            run: run.clone(),
            into: None,
            squash: false,
            force_unverified: false,
            invocation: req.invocation.clone(),
            dry_run: false,
            remote: req.remote.clone(),
        };
        match integrate::integrate(ctx, &request, &|_| {}) {
            Ok(done) => {
                let commit = done.commit.to_string();
                observe(Event::Landed {
                    task: &task,
                    run: &run,
                    commit: &commit,
                });
                held.came(&task, Some(&run), Came::Landed).commit = Some(commit);
            }
            // Ctrl-C stopped its verify of the merged tree: the second Ctrl-C.
            Err(e) if e.code == ErrorCode::Interrupted => {
                *heard = Stop::HandBack;
                observe(Event::Stopping(Stop::HandBack));
            }
            // The remote out of reach for now, or other machines landing all the while:
            // the pass keeps its claim and tries again next round, a few times.
            Err(e)
                if matches!(e.code, ErrorCode::FetchFailed | ErrorCode::TargetKeptMoving)
                    && held.tries.get(&task).copied().unwrap_or(0) + 1 < LANDING_TRIES =>
            {
                *held.tries.entry(task.clone()).or_default() += 1;
                ctx.warn(format!(
                    "{task} (run {run}) did not land yet: {}",
                    e.message
                ));
            }
            Err(e) => {
                observe(Event::Failed {
                    task: &task,
                    run: Some(&run),
                    why: &e.message,
                });
                held.failed(&task, Some(&run), e.message);
            }
        }
    }
    Ok(moved)
}

/// The second Ctrl-C: every run held is handed back. A working run is abandoned (its
/// branch kept; in a fleet its commits pushed and its claim let go as it ends); a pass
/// waiting to land lets its claim go, and stays for the lead to integrate.
fn hand_back(ctx: &Context, held: &mut Held, observe: &dyn Fn(Event<'_>)) -> Result<()> {
    let store = runs::settled(ctx)?;
    let repo_dir = ctx.workdir()?.to_path_buf();
    for (task, run) in held.mine.clone() {
        let live = store
            .load(&run)
            .ok()
            .flatten()
            .is_some_and(|r| !r.phase.is_final());
        if live {
            let request = super::abandon::Request {
                run: run.clone(),
                remote: None,
            };
            if let Err(e) = super::abandon::abandon(ctx, &request) {
                ctx.warn(format!("run {run} could not be abandoned: {}", e.message));
            }
        } else if let Err(e) = crate::run::fleet::let_go(&repo_dir, &store.run_dir(&run)) {
            ctx.warn(format!(
                "the claim of run {run} could not be let go (its lease runs out): {}",
                crate::fault::chain(&e)
            ));
        }
        observe(Event::HandedBack {
            task: &task,
            run: &run,
        });
        held.came(&task, Some(&run), Came::HandedBack);
    }
    Ok(())
}
