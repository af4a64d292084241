//! The runner's rule (`git crew work`): which of a plan's tasks it takes next, when it
//! stops, and what its end comes to. The facts — the plan's derived status, the claims
//! other machines hold, what this runner holds, failed and parked — come in as values.

use std::collections::BTreeSet;

use crate::core::plan::{TaskState, TaskStatus};

/// What one round of the runner sees.
pub struct Round<'a> {
    /// Every task's derived status, in the plan's order (from the remote's state when
    /// there is a fleet).
    pub statuses: &'a [TaskStatus],
    /// Tasks whose claim on the remote is held by a run that is not this runner's: a
    /// working run whose lease has not run out, a pass awaiting integration, or a claim
    /// that cannot be read. None of them is taken.
    pub held_elsewhere: &'a BTreeSet<String>,
    /// Of those, the tasks whose run works, or passed within a lease and is being landed
    /// (`FleetClaim::waited_for`): it may unblock what depends on it, so the runner waits
    /// for it. An older pass waits for a person (to integrate or abandon it), and an
    /// unreadable claim for someone to remove it: neither is waited for.
    pub working_elsewhere: &'a BTreeSet<String>,
    /// Tasks this runner holds: a run working, or a pass waiting to land.
    pub mine: &'a BTreeSet<String>,
    /// Tasks whose run this runner saw fail (or could not land): it does not take them
    /// again.
    pub given_up: &'a BTreeSet<String>,
    /// Tasks whose run asks for help: parked until the lead answers, never waited for.
    pub parked: &'a BTreeSet<String>,
    /// How many runs this runner may have at once (`--max`).
    pub max: usize,
    /// Ctrl-C came: take nothing new.
    pub stopping: bool,
}

/// What the runner does this round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Next {
    /// The tasks to claim and dispatch, in the plan's order.
    pub take: Vec<String>,
    /// Nothing is left to take or to wait for: the runner stops.
    pub over: bool,
}

/// The ready tasks this runner may take: ready in the derived status, held by no one,
/// not given up or parked here.
pub fn takeable<'a>(round: &'a Round<'_>) -> impl Iterator<Item = &'a str> + 'a {
    round
        .statuses
        .iter()
        .filter(|s| s.status == TaskState::Ready)
        .map(|s| s.task.as_str())
        .filter(|t| {
            !round.held_elsewhere.contains(*t)
                && !round.mine.contains(*t)
                && !round.given_up.contains(*t)
                && !round.parked.contains(*t)
        })
}

/// Decides the round: take ready tasks up to `max` runs at once; stop once this runner
/// holds nothing and nothing is left to take, nor in flight anywhere (a run in flight
/// may unblock what depends on it). After Ctrl-C it takes nothing and stops once it
/// holds nothing, without waiting for other machines.
pub fn next(round: &Round<'_>) -> Next {
    let slots = round.max.saturating_sub(round.mine.len());
    let takeable: Vec<String> = takeable(round).map(str::to_string).collect();
    let take: Vec<String> = if round.stopping {
        Vec::new()
    } else {
        takeable.iter().take(slots).cloned().collect()
    };
    let in_flight = round.statuses.iter().any(|s| {
        s.status != TaskState::Done
            && !round.parked.contains(&s.task)
            && (s.status == TaskState::InFlight || round.working_elsewhere.contains(&s.task))
    });
    let over = round.mine.is_empty()
        && take.is_empty()
        && (round.stopping || (takeable.is_empty() && !in_flight));
    Next { take, over }
}

/// How a runner's work came out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// Every task of the plan is done.
    AllDone,
    /// Tasks whose run failed (or could not land) here and that are not done: exit 1.
    Failed(Vec<String>),
    /// None failed, but runs ask for help: exit 5.
    NeedsHelp(Vec<String>),
    /// None failed or asks for help, but tasks are not done: blocked (a gate without a
    /// passing verdict, a dependency not done) or left when Ctrl-C stopped the runner;
    /// exit 4.
    Unfinished(Vec<String>),
}

/// What the end comes to, from the last derived status: a failure here outweighs a run
/// that asks for help, which outweighs tasks left undone. A task that failed here but
/// was done elsewhere since is not a failure.
pub fn ending(
    statuses: &[TaskStatus],
    given_up: &BTreeSet<String>,
    parked: &BTreeSet<String>,
) -> Ending {
    let undone: Vec<&TaskStatus> = statuses
        .iter()
        .filter(|s| s.status != TaskState::Done)
        .collect();
    let of = |set: &BTreeSet<String>| -> Vec<String> {
        undone
            .iter()
            .filter(|s| set.contains(&s.task))
            .map(|s| s.task.clone())
            .collect()
    };
    let failed = of(given_up);
    if !failed.is_empty() {
        return Ending::Failed(failed);
    }
    let help = of(parked);
    if !help.is_empty() {
        return Ending::NeedsHelp(help);
    }
    if undone.is_empty() {
        Ending::AllDone
    } else {
        Ending::Unfinished(undone.iter().map(|s| s.task.clone()).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn status(task: &str, state: TaskState) -> TaskStatus {
        TaskStatus {
            task: task.into(),
            wave: 1,
            status: state,
            blockers: Vec::new(),
            run: None,
        }
    }

    fn set(tasks: &[&str]) -> BTreeSet<String> {
        tasks.iter().map(|t| t.to_string()).collect()
    }

    fn round<'a>(
        statuses: &'a [TaskStatus],
        sets: &'a [BTreeSet<String>; 4],
        max: usize,
        stopping: bool,
    ) -> Round<'a> {
        Round {
            statuses,
            held_elsewhere: &sets[0],
            working_elsewhere: &sets[0],
            mine: &sets[1],
            given_up: &sets[2],
            parked: &sets[3],
            max,
            stopping,
        }
    }

    #[test]
    fn it_takes_ready_tasks_no_one_holds_in_plan_order_up_to_max() {
        use TaskState::*;
        let statuses = [
            status("a", Done),
            status("b", Ready),
            status("c", Ready),
            status("d", Ready),
            status("e", Blocked),
            status("f", Ready),
            status("g", Ready),
        ];
        let sets = [set(&["c"]), set(&["x"]), set(&["d"]), set(&[])];
        let next = next(&round(&statuses, &sets, 3, false));
        // c is held elsewhere, d failed here, one slot of three is taken by x.
        assert_eq!(next.take, ["b", "f"]);
        assert!(!next.over);
    }

    #[test]
    fn a_pass_held_elsewhere_is_not_taken_and_not_waited_for() {
        use TaskState::*;
        let statuses = [status("a", Ready), status("b", Blocked)];
        let (held, working, none) = (set(&["a"]), set(&[]), set(&[]));
        let round = Round {
            statuses: &statuses,
            held_elsewhere: &held,
            working_elsewhere: &working,
            mine: &none,
            given_up: &none,
            parked: &none,
            max: 2,
            stopping: false,
        };
        let next = next(&round);
        assert!(next.take.is_empty(), "{:?}", next.take);
        assert!(next.over, "a pass awaits a person, not this runner");
    }

    #[test]
    fn it_stops_only_when_nothing_is_held_takeable_or_in_flight_anywhere() {
        use TaskState::*;
        let empty = || [set(&[]), set(&[]), set(&[]), set(&[])];
        // A task in flight elsewhere may unblock its dependents: wait for it.
        let statuses = [status("a", Ready), status("b", Blocked)];
        let sets = [set(&["a"]), set(&[]), set(&[]), set(&[])];
        assert!(!next(&round(&statuses, &sets, 2, false)).over);
        // A local run in flight, the same.
        let statuses = [status("a", InFlight), status("b", Blocked)];
        assert!(!next(&round(&statuses, &empty(), 2, false)).over);
        // Held here: not over.
        let statuses = [status("a", InFlight)];
        let sets = [set(&[]), set(&["a"]), set(&[]), set(&[])];
        assert!(!next(&round(&statuses, &sets, 2, false)).over);
        // Only blocked and done tasks left: over.
        let statuses = [status("a", Done), status("b", Blocked)];
        assert!(next(&round(&statuses, &empty(), 2, false)).over);
        // A run that asks for help is parked, not waited for; its task is not taken.
        let statuses = [status("a", InFlight), status("b", Blocked)];
        let sets = [set(&[]), set(&[]), set(&[]), set(&["a"])];
        assert_eq!(
            next(&round(&statuses, &sets, 2, false)),
            Next {
                take: vec![],
                over: true
            }
        );
        // A failed task is not taken again: over.
        let statuses = [status("a", Ready)];
        let sets = [set(&[]), set(&[]), set(&["a"]), set(&[])];
        assert!(next(&round(&statuses, &sets, 2, false)).over);
        // No slot free: nothing taken, not over.
        let statuses = [status("a", InFlight), status("b", Ready)];
        let sets = [set(&[]), set(&["a"]), set(&[]), set(&[])];
        assert_eq!(
            next(&round(&statuses, &sets, 1, false)),
            Next {
                take: vec![],
                over: false
            }
        );
    }

    #[test]
    fn after_ctrl_c_it_takes_nothing_and_stops_once_it_holds_nothing() {
        use TaskState::*;
        let statuses = [status("a", InFlight), status("b", Ready)];
        let sets = [set(&[]), set(&["a"]), set(&[]), set(&[])];
        assert_eq!(
            next(&round(&statuses, &sets, 4, true)),
            Next {
                take: vec![],
                over: false
            }
        );
        // Holding nothing, it does not wait for other machines' runs.
        let statuses = [status("a", Ready), status("b", Ready)];
        let sets = [set(&["a"]), set(&[]), set(&[]), set(&[])];
        assert!(next(&round(&statuses, &sets, 4, true)).over);
    }

    #[test]
    fn the_ending_weighs_failures_then_help_then_what_is_undone() {
        use TaskState::*;
        let all = [status("a", Done), status("b", Done)];
        assert_eq!(ending(&all, &set(&[]), &set(&[])), Ending::AllDone);
        // A failure here that was done elsewhere since is no failure.
        assert_eq!(ending(&all, &set(&["a"]), &set(&[])), Ending::AllDone);
        let some = [status("a", Done), status("b", Ready), status("c", Blocked)];
        assert_eq!(
            ending(&some, &set(&["b"]), &set(&["c"])),
            Ending::Failed(vec!["b".into()])
        );
        assert_eq!(
            ending(&some, &set(&[]), &set(&["c"])),
            Ending::NeedsHelp(vec!["c".into()])
        );
        assert_eq!(
            ending(&some, &set(&[]), &set(&[])),
            Ending::Unfinished(vec!["b".into(), "c".into()])
        );
    }
}
