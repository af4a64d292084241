//! Where the claims runs hold on their tasks and scopes are kept (the rule is
//! `core::claim`'s). [`Claims`] is the seam: the local [`RunStore`] keeps a run's claim
//! as its live pointer — taken at dispatch under the dispatch turn, let go when the run's
//! record is filed (`RunStore::finish`) or its dispatch is taken back; a fleet of
//! machines will keep them in a store they share, behind the same trait.

use super::error::Result;
use crate::core::claim::{Claim, Clash, Wanted, clash};
use crate::core::record::RunRecord;
use crate::state::runs::RunStore;

/// A keeper of run claims.
pub trait Claims {
    /// Every claim held now.
    fn held(&self) -> Result<Vec<Claim>>;

    /// The claim that holds `task`, if one does.
    fn holder(&self, task: &str) -> Result<Option<Claim>> {
        Ok(self.held()?.into_iter().find(|c| c.task == task))
    }

    /// Takes the claim of `record`'s run on its task and scope, recording the run as it
    /// stands; the clash, and nothing taken, when another run holds either. Called in
    /// the dispatch turn: nothing else claims meanwhile.
    fn claim(&self, record: &RunRecord) -> Result<Result<(), Clash>>;

    /// Lets go of run `run`'s claim (a dispatch taken back); nothing when it holds none.
    fn release(&self, run: &str) -> Result<()>;
}

impl Claims for RunStore {
    fn held(&self) -> Result<Vec<Claim>> {
        Ok(self.live()?.iter().map(Claim::of).collect())
    }

    fn claim(&self, record: &RunRecord) -> Result<Result<(), Clash>> {
        let others: Vec<Claim> = self
            .held()?
            .into_iter()
            .filter(|c| c.run != record.run)
            .collect();
        let wanted = Wanted {
            task: &record.task,
            writes: record.role.may_commit(),
            scope: &record.scope,
        };
        if let Some(clash) = clash(&wanted, &others) {
            return Ok(Err(clash));
        }
        // The live pointer is the claim.
        self.write_live(record)?;
        Ok(Ok(()))
    }

    fn release(&self, run: &str) -> Result<()> {
        match std::fs::remove_file(self.live_path(run)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.into()),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::record::Phase;

    fn record(run: &str, task: &str, scope: &str) -> RunRecord {
        let mut record = RunRecord::blank(run);
        record.task = task.into();
        record.scope = vec![scope.into()];
        record.phase = Phase::Working;
        record
    }

    #[test]
    fn the_local_store_keeps_a_claim_as_the_runs_live_pointer() {
        let dir = tempfile::tempdir().unwrap();
        let store = RunStore::new(dir.path());
        let first = record("20260101-000000-0001", "routes", "src/routes/**");
        assert_eq!(store.claim(&first).unwrap(), Ok(()));
        assert!(store.live_path(&first.run).is_file());
        assert_eq!(store.held().unwrap(), vec![Claim::of(&first)]);
        assert_eq!(store.holder("routes").unwrap(), Some(Claim::of(&first)));
        assert_eq!(store.holder("other").unwrap(), None);

        // The same task, or a scope that may overlap: refused, and nothing written.
        let same_task = record("20260101-000000-0002", "routes", "docs/**");
        assert!(matches!(
            store.claim(&same_task).unwrap(),
            Err(Clash::Task(holder)) if holder.run == first.run
        ));
        let overlapping = record("20260101-000000-0003", "users", "src/**");
        assert!(matches!(
            store.claim(&overlapping).unwrap(),
            Err(Clash::Scope { holder, .. }) if holder.run == first.run
        ));
        assert!(!store.live_path(&same_task.run).exists());
        assert!(!store.live_path(&overlapping.run).exists());

        // A run's own claim never clashes with itself: it is written again as it stands.
        let mut moved = first.clone();
        moved.phase = Phase::Queued;
        assert_eq!(store.claim(&moved).unwrap(), Ok(()));
        assert_eq!(store.held().unwrap()[0].phase, Phase::Queued);

        store.release(&first.run).unwrap();
        assert!(store.held().unwrap().is_empty());
        // Let go twice: nothing to do.
        store.release(&first.run).unwrap();
        assert_eq!(store.claim(&overlapping).unwrap(), Ok(()));
    }
}
