//! What the lead decided about a run, sealed where its worker cannot write it: the facts
//! fixed at dispatch (task, role, scope, base, target, branch, verify command, fence) and
//! the verdict the supervisor or `git crew verify` reached. Every decision about a run —
//! integrate, post-merge, verify — takes these from the seal and refuses a local run
//! record that disagrees with it. Pure: `git::seal` stores it.

use serde::{Deserialize, Serialize};

use super::record::{Outcome, RunRecord};

/// The sealed facts of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sealed {
    pub run: String,
    pub task: String,
    pub role: crate::core::scope::Role,
    pub scope: Vec<String>,
    pub base: String,
    /// The branch the run was cut from: integrate's default target.
    pub base_ref: Option<String>,
    pub branch: String,
    pub worktree: String,
    pub verify_command: Option<String>,
    /// The verdict, once the run has one.
    #[serde(default)]
    pub verdict: Option<Verdict>,
}

/// What the run's verify (or its end) came to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    pub outcome: Option<Outcome>,
    pub passed: Option<bool>,
    pub verified_tip: Option<String>,
}

impl Sealed {
    /// Who the run is, for a scope check, as dispatch sealed it.
    pub fn identity(&self) -> super::scope::RunIdentity {
        super::scope::RunIdentity {
            run: self.run.clone(),
            task: self.task.clone(),
            role: self.role.to_string(),
            scope: self.scope.clone(),
        }
    }

    /// The facts of a run as dispatch decided them.
    pub fn of(record: &RunRecord) -> Sealed {
        Sealed {
            run: record.run.clone(),
            task: record.task.clone(),
            role: record.role,
            scope: record.scope.clone(),
            base: record.base.clone(),
            base_ref: record.base_ref.clone(),
            branch: record.branch.clone(),
            worktree: record.worktree.clone(),
            verify_command: record.verify_command.clone(),
            verdict: None,
        }
    }

    /// The same facts with the record's verdict.
    pub fn with_verdict(mut self, record: &RunRecord) -> Sealed {
        self.verdict = Some(Verdict {
            outcome: record.outcome,
            passed: record.verify.as_ref().map(|v| v.passed),
            verified_tip: record.verified_tip.clone(),
        });
        self
    }

    /// Puts the sealed facts back into `record` (a live pointer or record the worker could
    /// have written), returning the names of those that differed. The verdict is left
    /// alone: the caller is about to decide it.
    pub fn restore(&self, record: &mut RunRecord) -> Vec<&'static str> {
        let differed: Vec<&'static str> = self
            .differences(record)
            .into_iter()
            .filter(|f| !matches!(*f, "outcome" | "verify" | "verified_tip"))
            .collect();
        record.run.clone_from(&self.run);
        record.task.clone_from(&self.task);
        record.role.clone_from(&self.role);
        record.scope.clone_from(&self.scope);
        record.base.clone_from(&self.base);
        record.base_ref.clone_from(&self.base_ref);
        record.branch.clone_from(&self.branch);
        record.worktree.clone_from(&self.worktree);
        record.verify_command.clone_from(&self.verify_command);
        differed
    }

    /// Every field where the local record disagrees with the seal (empty when it agrees).
    /// A record that claims a verdict the seal does not have disagrees too.
    pub fn differences(&self, record: &RunRecord) -> Vec<&'static str> {
        let mut out = Vec::new();
        let mut check = |same: bool, name: &'static str| {
            if !same {
                out.push(name);
            }
        };
        check(self.run == record.run, "run");
        check(self.task == record.task, "task");
        check(self.role == record.role, "role");
        check(self.scope == record.scope, "scope");
        check(self.base == record.base, "base");
        check(self.base_ref == record.base_ref, "base_ref");
        check(self.branch == record.branch, "branch");
        check(self.worktree == record.worktree, "worktree");
        check(
            self.verify_command == record.verify_command,
            "verify_command",
        );
        let claimed = Verdict {
            outcome: record.outcome,
            passed: record.verify.as_ref().map(|v| v.passed),
            verified_tip: record.verified_tip.clone(),
        };
        match &self.verdict {
            Some(sealed) => {
                check(sealed.outcome == claimed.outcome, "outcome");
                check(sealed.passed == claimed.passed, "verify");
                check(sealed.verified_tip == claimed.verified_tip, "verified_tip");
            }
            None => {
                // Without a sealed verdict (a run ended by abandon or the reaper), the
                // record may not claim a pass.
                check(
                    claimed.outcome != Some(Outcome::Pass) && claimed.passed != Some(true),
                    "outcome",
                );
            }
        }
        out
    }
}

/// A stand-in for the live run `run` whose pointer cannot be read (`why`): it still holds
/// the task and scope it was dispatched with — from its seal, or every path when it has
/// none — so nothing else is dispatched over it (fail closed), and it is shown by name.
pub fn stand_in(run: &str, sealed: Option<&Sealed>, why: String) -> RunRecord {
    let mut record = RunRecord::blank(run);
    match sealed {
        Some(s) => {
            s.restore(&mut record);
        }
        None => record.scope = vec!["**".to_string()],
    }
    record.decision = Some(format!("its live pointer cannot be read: {why}"));
    record.unreadable = Some(why);
    record
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::record::Verify;

    fn live() -> RunRecord {
        RunRecord {
            outcome: None,
            ..RunRecord::example()
        }
    }

    #[test]
    fn a_record_that_agrees_has_no_differences() {
        let mut record = live();
        let sealed = Sealed::of(&record);
        assert!(sealed.differences(&record).is_empty());
        record.outcome = Some(Outcome::Pass);
        record.verify = Some(Verify {
            command: "true".into(),
            reward: 1.0,
            passed: true,
            problem: None,
            decided_by: Some(crate::core::record::DecidedBy::Exit),
            exit_code: Some(0),
        });
        record.verified_tip = Some("abc".into());
        let sealed = sealed.with_verdict(&record);
        assert!(sealed.differences(&record).is_empty());
    }

    #[test]
    fn restore_puts_the_sealed_facts_back_and_names_them() {
        let record = live();
        let sealed = Sealed::of(&record);
        let mut tampered = record.clone();
        tampered.task = "other".into();
        tampered.scope = vec!["**".into()];
        tampered.worktree = "/elsewhere".into();
        tampered.outcome = Some(Outcome::Fail);
        assert_eq!(sealed.restore(&mut tampered), ["task", "scope", "worktree"]);
        assert_eq!(tampered.task, record.task);
        assert_eq!(tampered.scope, record.scope);
        assert_eq!(tampered.worktree, record.worktree);
        assert_eq!(tampered.outcome, Some(Outcome::Fail));
        assert!(sealed.restore(&mut tampered).is_empty());
    }

    #[test]
    fn every_tampered_fact_is_named() {
        let record = live();
        let sealed = Sealed::of(&record).with_verdict(&record);
        let mut tampered = record.clone();
        tampered.scope = vec!["**".into()];
        tampered.base = "0000".into();
        tampered.outcome = Some(Outcome::Pass);
        tampered.verify_command = Some("true".into());
        assert_eq!(
            sealed.differences(&tampered),
            ["scope", "base", "verify_command", "outcome"]
        );
        // No sealed verdict: a claimed pass is a difference, anything else is not.
        let unsealed = Sealed::of(&record);
        assert_eq!(
            unsealed.differences(&tampered)[..3],
            ["scope", "base", "verify_command"]
        );
        assert!(unsealed.differences(&tampered).contains(&"outcome"));
        assert!(unsealed.differences(&record).is_empty());
    }
}
