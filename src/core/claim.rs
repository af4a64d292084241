//! Claims on work, decided as values: from dispatch until it ends, a run holds its task
//! and — when its role may commit — its write scope. No two runs hold the same task, nor
//! write scopes that may overlap. Where the claims are kept is `state::claims`' (the live
//! pointers today, a store a fleet of machines shares later); the rule is this one.

use std::fmt;

use crate::core::record::{Phase, RunRecord};
use crate::core::scope::scopes_overlap;

/// What one run holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub run: String,
    pub task: String,
    /// Where the run is, for whoever is refused by it.
    pub phase: Phase,
    /// Its role may commit: only then does its scope hold paths.
    pub writes: bool,
    pub scope: Vec<String>,
}

impl Claim {
    /// What run `record` holds.
    pub fn of(record: &RunRecord) -> Claim {
        Claim {
            run: record.run.clone(),
            task: record.task.clone(),
            phase: record.phase,
            writes: record.role.may_commit(),
            scope: record.scope.clone(),
        }
    }
}

/// What a run about to start wants to hold.
#[derive(Debug, Clone, Copy)]
pub struct Wanted<'a> {
    pub task: &'a str,
    pub writes: bool,
    pub scope: &'a [String],
}

/// Why a claim is refused: another run holds what it wants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Clash {
    /// The task has a run already.
    Task(Claim),
    /// Its write scope may overlap another writing run's: the two globs that may.
    Scope {
        mine: String,
        theirs: String,
        holder: Claim,
    },
}

impl fmt::Display for Clash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Clash::Task(holder) => write!(
                f,
                "task {} already has an in-flight run: {} ({})",
                holder.task,
                holder.run,
                holder.phase.as_str()
            ),
            Clash::Scope {
                mine,
                theirs,
                holder,
            } => write!(
                f,
                "the write scope `{mine}` overlaps `{theirs}` of in-flight run {} (task {})",
                holder.run, holder.task
            ),
        }
    }
}

/// What keeps `wanted` from being claimed among the `held` claims, if anything: its task
/// held by any run first, then — when it writes — a writing run's scope that may overlap
/// its own (the first such, in the order held).
pub fn clash(wanted: &Wanted, held: &[Claim]) -> Option<Clash> {
    if let Some(holder) = held.iter().find(|c| c.task == wanted.task) {
        return Some(Clash::Task(holder.clone()));
    }
    if !wanted.writes {
        return None;
    }
    held.iter().filter(|c| c.writes).find_map(|holder| {
        scopes_overlap(wanted.scope, &holder.scope).map(|(mine, theirs)| Clash::Scope {
            mine,
            theirs,
            holder: holder.clone(),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(run: &str, task: &str, writes: bool, scope: &[&str]) -> Claim {
        Claim {
            run: run.into(),
            task: task.into(),
            phase: Phase::Working,
            writes,
            scope: scope.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn wanted<'a>(task: &'a str, writes: bool, scope: &'a [String]) -> Wanted<'a> {
        Wanted {
            task,
            writes,
            scope,
        }
    }

    #[test]
    fn a_task_is_held_by_one_run_whatever_its_role() {
        let claims = [held("r1", "routes", false, &[])];
        let scope = vec!["docs/**".to_string()];
        let clash = clash(&wanted("routes", true, &scope), &claims).unwrap();
        assert_eq!(clash, Clash::Task(claims[0].clone()));
        assert_eq!(
            clash.to_string(),
            "task routes already has an in-flight run: r1 (working)"
        );
        assert_eq!(super::clash(&wanted("other", true, &scope), &claims), None);
    }

    #[test]
    fn writing_runs_never_share_paths_and_readers_never_clash_on_scope() {
        let claims = [
            held("r1", "a", false, &["src/**"]),
            held("r2", "b", true, &["src/routes/**"]),
        ];
        let scope = vec!["src/routes/users.rs".to_string()];
        let found = clash(&wanted("c", true, &scope), &claims).unwrap();
        assert!(matches!(&found, Clash::Scope { holder, .. } if holder.run == "r2"));
        assert_eq!(
            found.to_string(),
            "the write scope `src/routes/users.rs` overlaps `src/routes/**` of in-flight run r2 (task b)"
        );
        // A run that may not commit holds no paths, and wants none.
        assert_eq!(clash(&wanted("c", false, &scope), &claims), None);
        let apart = vec!["docs/**".to_string()];
        assert_eq!(clash(&wanted("c", true, &apart), &claims), None);
    }

    #[test]
    fn the_task_is_looked_at_before_the_scope() {
        let claims = [
            held("r1", "a", true, &["src/**"]),
            held("r2", "b", true, &["docs/**"]),
        ];
        let scope = vec!["src/x.rs".to_string()];
        assert!(matches!(
            clash(&wanted("b", true, &scope), &claims),
            Some(Clash::Task(holder)) if holder.run == "r2"
        ));
    }

    #[test]
    fn a_claim_is_what_its_record_holds() {
        let mut record = RunRecord::blank("20260101-000000-0001");
        record.task = "t".into();
        record.scope = vec!["src/**".into()];
        record.role = crate::core::scope::Role::Review;
        let claim = Claim::of(&record);
        assert_eq!(
            (claim.run.as_str(), claim.task.as_str()),
            (record.run.as_str(), "t")
        );
        assert!(!claim.writes);
        assert_eq!(claim.scope, record.scope);
    }
}
