//! The outcome ledger: one JSON Lines row per finished run, metadata only (no prompt, no
//! output, no file content). `at` comes first, so a line union of two ledgers sorts
//! chronologically; every row carries its run id, so no two rows ever merge.

use serde::{Deserialize, Serialize};

use super::record::{Outcome, RunRecord};

/// One row (SPEC §2 `ledger`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    pub at: String,
    pub run: String,
    pub attempt: u32,
    pub task: String,
    pub backend: String,
    pub model: Option<String>,
    pub effort: Option<String>,
    pub tier: Option<String>,
    pub role: String,
    pub worker: Option<String>,
    /// What the worker said: `done`, `help` or `none`.
    pub claimed: String,
    /// What was measured.
    pub outcome: Option<Outcome>,
    pub reward: Option<f64>,
    pub size_h: Option<f64>,
    pub wall_s: u64,
    pub files_changed: usize,
    pub scope_changed: bool,
    /// On the row integrate appends: the integration commit. Such a row records an
    /// event, not another attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrated: Option<String>,
}

impl Row {
    /// The row for a finished run.
    pub fn of(record: &RunRecord) -> Row {
        Row {
            at: record
                .finished_at
                .clone()
                .unwrap_or_else(|| record.started_at.clone()),
            run: record.run.clone(),
            attempt: record.attempts,
            task: record.task.clone(),
            backend: record.backend.clone(),
            model: record.model.clone(),
            effort: record.effort.clone(),
            tier: record.tier.clone(),
            role: record.role.clone(),
            worker: None,
            claimed: record.claimed().to_string(),
            outcome: record.outcome,
            reward: record.verify.as_ref().map(|v| v.reward),
            size_h: None,
            wall_s: record.elapsed_s,
            files_changed: record.diff.files.len(),
            scope_changed: false,
            integrated: None,
        }
    }

    /// Whether this row counts as a failure for the two-failure rule: every measured
    /// outcome but a pass — a scope rejection included; an abandoned run (the lead's
    /// decision) and a handoff (never a row) are not.
    pub fn is_failure(&self) -> bool {
        !matches!(
            self.outcome,
            Some(Outcome::Pass) | Some(Outcome::Abandoned) | None
        )
    }
}

/// Parses a ledger note; lines that are not rows are skipped.
pub fn parse(text: &str) -> Vec<Row> {
    text.lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_put_at_first_and_round_trip() {
        let mut record = RunRecord::example();
        record.finished_at = Some("2026-01-01T00:10:00Z".into());
        record.outcome = Some(Outcome::ScopeReject);
        let row = Row::of(&record);
        let line = serde_json::to_string(&row).unwrap();
        assert!(
            line.starts_with("{\"at\":\"2026-01-01T00:10:00Z\",\"run\":\"r\""),
            "{line}"
        );
        assert_eq!(
            parse(&format!("{line}\nnot json\n{line}\n")),
            [row.clone(), row.clone()]
        );
        assert!(row.is_failure());
        let mut pass = row.clone();
        pass.outcome = Some(Outcome::Pass);
        assert!(!pass.is_failure());
        pass.outcome = Some(Outcome::Abandoned);
        assert!(!pass.is_failure());
    }
}
