//! The outcome ledger: one JSON Lines row per finished run, metadata only (no prompt, no
//! output, no file content). `at` comes first, so a line union of two ledgers sorts
//! chronologically; every row carries its run id, so no two rows ever merge.

use serde::{Deserialize, Serialize};

use super::record::{Outcome, RunRecord};

/// One row (SPEC §2 `ledger`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Row {
    pub at: String,
    pub run: String,
    pub attempt: u32,
    pub task: String,
    pub backend: String,
    pub model: Option<String>,
    pub effort: Option<String>,
    pub tier: Option<String>,
    #[serde(deserialize_with = "crate::core::scope::role_or_implement")]
    pub role: crate::core::scope::Role,
    pub worker: Option<String>,
    /// What the worker said: `done`, `help` or `none`.
    pub claimed: String,
    /// What was measured.
    pub outcome: Option<Outcome>,
    pub reward: Option<f64>,
    /// What decided the verify (`exit` or `reward`) and the verify command's exit code;
    /// absent without a verify, and on rows written before they were kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_decided_by: Option<super::record::DecidedBy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_exit_code: Option<i32>,
    pub size_h: Option<f64>,
    pub wall_s: u64,
    pub files_changed: usize,
    pub scope_changed: bool,
    /// What the two-failure rule counts this row under: the model, or `backend:<name>`
    /// for a backend that names no model. Rows written before the key existed derive it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    /// On the row integrate appends: the integration commit. Such a row records an
    /// event, not another attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub integrated: Option<String>,
    /// What the run spent, every attempt together: tokens and dollars, numbers only
    /// (`cost_usd` null when unpriced); absent when the worker reported nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<crate::core::usage::Usage>,
}

impl Row {
    /// The row for a finished run.
    pub fn of(record: &RunRecord) -> Row {
        Row {
            at: super::stamp::format_seconds(record.finished_at.unwrap_or(record.started_at)),
            run: record.run.clone(),
            attempt: record.attempts,
            task: record.task.clone(),
            backend: record.backend.clone(),
            model: record.model.clone(),
            effort: record.effort.clone(),
            tier: record.tier.clone(),
            role: record.role,
            worker: record.worker.clone(),
            claimed: record.claimed().to_string(),
            outcome: record.outcome,
            reward: record.verify.as_ref().map(|v| v.reward),
            verify_decided_by: record.verify.as_ref().and_then(|v| v.decided_by),
            verify_exit_code: record.verify.as_ref().and_then(|v| v.exit_code),
            size_h: record.size_h,
            wall_s: record.elapsed_s,
            files_changed: record.diff.files.len(),
            scope_changed: record.scope_changed,
            key: Some(failure_key(record.model.as_deref(), &record.backend)),
            integrated: None,
            usage: record.usage.as_ref().map(|u| u.total),
        }
    }

    /// What the two-failure rule counts this row under (see [`failure_key`]).
    pub fn failure_key(&self) -> String {
        self.key
            .clone()
            .unwrap_or_else(|| failure_key(self.model.as_deref(), &self.backend))
    }

    /// Whether this row counts as a failure for the two-failure rule: every measured
    /// outcome but a pass — a scope rejection included; an abandoned run (the lead's
    /// decision), an infrastructure error (not the model's doing) and a handoff (never a
    /// row) are not.
    pub fn is_failure(&self) -> bool {
        !matches!(
            self.outcome,
            Some(Outcome::Pass) | Some(Outcome::Abandoned) | Some(Outcome::Error) | None
        )
    }
}

/// What failures are counted under: the model, or `backend:<name>` when the backend
/// names none (a `command` backend), so a model-less worker is bounded too.
pub fn failure_key(model: Option<&str>, backend: &str) -> String {
    match model {
        Some(model) => model.to_string(),
        None => format!("backend:{backend}"),
    }
}

/// The size buckets of `ledger stats`, in worker-hours: (label, upper bound).
pub const BUCKETS: &[(&str, f64)] = &[
    ("<=0.5h", 0.5),
    ("<=1h", 1.0),
    ("<=2h", 2.0),
    ("<=4h", 4.0),
    ("<=8h", 8.0),
    (">8h", f64::INFINITY),
];

/// Success at one size bucket.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Bucket {
    pub size: String,
    pub runs: usize,
    pub passes: usize,
    pub success_rate: f64,
    pub spend: SpendStats,
}

/// What a set of runs spent, from the usage their rows carry: tokens and dollars per run
/// and per verified pass (a pass its verify confirmed). The failures' spend counts toward
/// what the passes cost. A figure is null where it would rest on a guess: per pass, when
/// a run reported no usage (tokens) or no price (dollars); per run, over the runs that
/// reported one.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct SpendStats {
    /// Runs whose usage is known.
    pub reported: usize,
    /// Runs whose cost is known.
    pub priced: usize,
    pub verified_passes: usize,
    pub tokens: u64,
    pub cost_usd: Option<f64>,
    pub tokens_per_run: Option<f64>,
    pub cost_per_run_usd: Option<f64>,
    pub tokens_per_verified_pass: Option<f64>,
    pub cost_per_verified_pass_usd: Option<f64>,
}

impl SpendStats {
    pub fn of(rows: &[&Row]) -> SpendStats {
        let usages: Vec<&crate::core::usage::Usage> =
            rows.iter().filter_map(|r| r.usage.as_ref()).collect();
        let costs: Vec<f64> = usages.iter().filter_map(|u| u.cost_usd).collect();
        let verified_passes = rows
            .iter()
            .filter(|r| r.outcome == Some(Outcome::Pass) && r.reward.is_some())
            .count();
        let tokens = usages
            .iter()
            .fold(0u64, |sum, u| sum.saturating_add(u.tokens()));
        let cost: f64 = costs.iter().sum();
        let per = |total: f64, n: usize| (n > 0).then(|| total / n as f64);
        let all_reported = usages.len() == rows.len();
        let all_priced = costs.len() == rows.len();
        SpendStats {
            reported: usages.len(),
            priced: costs.len(),
            verified_passes,
            tokens,
            cost_usd: (!costs.is_empty()).then_some(cost),
            tokens_per_run: per(tokens as f64, usages.len()),
            cost_per_run_usd: per(cost, costs.len()),
            tokens_per_verified_pass: per(tokens as f64, verified_passes).filter(|_| all_reported),
            cost_per_verified_pass_usd: per(cost, verified_passes).filter(|_| all_priced),
        }
    }
}

/// What the ledger says of one agent configuration (backend, model, effort).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ConfigStats {
    pub backend: String,
    pub model: Option<String>,
    pub effort: Option<String>,
    pub runs: usize,
    pub passes: usize,
    pub pass_rate: f64,
    pub by_size: Vec<Bucket>,
    /// The largest size (worker-hours) at which the success rate is still at least 50%:
    /// the upper bound of the largest such bucket (for the open bucket, the largest size
    /// seen in it).
    pub horizon_h: Option<f64>,
    /// Actual over estimated hours, summed over the passing runs that had a size.
    pub speed_factor: Option<f64>,
    /// How often a `done` claim was a verified pass.
    pub claim_accuracy: Option<f64>,
    /// Runs left out because their scope changed.
    pub excluded_scope_changed: usize,
    /// What the configuration's runs spent.
    pub spend: SpendStats,
}

/// Whether a row measured the configuration: not an integration event, an abandoned run
/// or an infrastructure error (the lead's own abandons and handoffs are not measurements
/// of the worker).
pub fn measured(row: &Row) -> bool {
    row.integrated.is_none()
        && !matches!(
            row.outcome,
            None | Some(Outcome::Abandoned) | Some(Outcome::Error)
        )
}

/// A standing worker's measured rows: how many, how many passed, and the pass rate when
/// it has any.
pub fn worker_pass_rate(rows: &[Row], worker: &str) -> (usize, usize, Option<f64>) {
    let mine: Vec<&Row> = rows
        .iter()
        .filter(|r| r.worker.as_deref() == Some(worker) && measured(r))
        .collect();
    let passes = mine
        .iter()
        .filter(|r| r.outcome == Some(Outcome::Pass))
        .count();
    (
        mine.len(),
        passes,
        (!mine.is_empty()).then(|| passes as f64 / mine.len() as f64),
    )
}

fn ratio(a: usize, b: usize) -> f64 {
    if b == 0 {
        0.0
    } else {
        ((a as f64 / b as f64) * 1000.0).round() / 1000.0
    }
}

/// `ledger stats`: per configuration, in (backend, model, effort) order. Two loops, never
/// one: this is the configurations' side (speed factor, horizon); [`estimate`] is the
/// tasks' side. A run whose scope changed is left out of both.
pub fn stats(rows: &[Row]) -> Vec<ConfigStats> {
    type Key = (String, Option<String>, Option<String>);
    let mut groups: std::collections::BTreeMap<Key, Vec<&Row>> = Default::default();
    // One verdict per attempt: a later row of the same (run, attempt) — a scope
    // rejection found at integrate — replaces the earlier one.
    let mut last: std::collections::HashMap<(&str, u32), &Row> = Default::default();
    for row in rows.iter().filter(|r| measured(r)) {
        let key = (row.run.as_str(), row.attempt);
        if last
            .get(&key)
            .is_none_or(|seen| super::stamp::cmp(&seen.at, &row.at).is_le())
        {
            last.insert(key, row);
        }
    }
    let mut attempts: Vec<&Row> = last.into_values().collect();
    attempts.sort_by(|a, b| super::stamp::cmp(&a.at, &b.at).then(a.run.cmp(&b.run)));
    for row in attempts {
        groups
            .entry((row.backend.clone(), row.model.clone(), row.effort.clone()))
            .or_default()
            .push(row);
    }
    groups
        .into_iter()
        .map(|((backend, model, effort), all)| {
            let excluded = all.iter().filter(|r| r.scope_changed).count();
            let rows: Vec<&Row> = all.into_iter().filter(|r| !r.scope_changed).collect();
            let pass = |r: &Row| r.outcome == Some(Outcome::Pass);
            let passes = rows.iter().filter(|r| pass(r)).count();
            let mut by_size = Vec::new();
            let mut horizon = None;
            let mut reached_limit = false;
            let mut lower = 0.0;
            for (label, upper) in BUCKETS {
                let in_bucket: Vec<&&Row> = rows
                    .iter()
                    .filter(|r| r.size_h.is_some_and(|s| s > lower && s <= *upper))
                    .collect();
                lower = *upper;
                if in_bucket.is_empty() {
                    continue;
                }
                let p = in_bucket.iter().filter(|r| pass(r)).count();
                let rate = ratio(p, in_bucket.len());
                if rate < 0.5 {
                    // The horizon ends where success first drops below half: a lucky
                    // run at a larger size does not extend it.
                    reached_limit = true;
                } else if !reached_limit {
                    horizon = Some(if upper.is_finite() {
                        *upper
                    } else {
                        in_bucket
                            .iter()
                            .filter_map(|r| r.size_h)
                            .fold(0.0, f64::max)
                    });
                }
                by_size.push(Bucket {
                    size: label.to_string(),
                    runs: in_bucket.len(),
                    passes: p,
                    success_rate: rate,
                    spend: SpendStats::of(&in_bucket.iter().map(|r| **r).collect::<Vec<_>>()),
                });
            }
            let sized: Vec<&&Row> = rows
                .iter()
                .filter(|r| pass(r) && r.size_h.is_some())
                .collect();
            let estimated: f64 = sized.iter().filter_map(|r| r.size_h).sum();
            let actual: f64 = sized.iter().map(|r| r.wall_s as f64 / 3600.0).sum();
            let speed_factor =
                (estimated > 0.0).then(|| ((actual / estimated) * 1000.0).round() / 1000.0);
            let claims: Vec<&&Row> = rows.iter().filter(|r| r.claimed == "done").collect();
            let verified = claims
                .iter()
                .filter(|r| pass(r) && r.reward.is_some_and(|w| w >= 1.0))
                .count();
            ConfigStats {
                backend,
                model,
                effort,
                runs: rows.len(),
                passes,
                pass_rate: ratio(passes, rows.len()),
                by_size,
                horizon_h: horizon,
                speed_factor,
                claim_accuracy: (!claims.is_empty()).then(|| ratio(verified, claims.len())),
                excluded_scope_changed: excluded,
                spend: SpendStats::of(&rows),
            }
        })
        .collect()
}

/// A task's estimate from its normalised actuals (the tasks' loop): the mean, over its
/// passing runs, of each run's hours divided by its configuration's speed factor; the
/// planned size when there is none.
pub fn estimate(planned: Option<f64>, task_rows: &[&Row], stats: &[ConfigStats]) -> Option<f64> {
    let normalised: Vec<f64> = task_rows
        .iter()
        .filter(|r| measured(r) && !r.scope_changed && r.outcome == Some(Outcome::Pass))
        .filter_map(|r| {
            let factor = stats
                .iter()
                .find(|s| s.backend == r.backend && s.model == r.model && s.effort == r.effort)
                .and_then(|s| s.speed_factor)
                .filter(|f| *f > 0.0)?;
            Some(r.wall_s as f64 / 3600.0 / factor)
        })
        .collect();
    if normalised.is_empty() {
        return planned;
    }
    let mean = normalised.iter().sum::<f64>() / normalised.len() as f64;
    Some((mean * 1000.0).round() / 1000.0)
}

/// What the two-failure rule needs of one task's rows: per failure key, the failures and
/// the tier of the latest row that names one. Built from the rows, or from a task's head
/// note alone (`core::ledger_notes::tally`): the same either way.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    pub failures: std::collections::BTreeMap<String, usize>,
    /// Per failure key: the stamp and the tier of the latest row with a tier.
    pub tiers: std::collections::BTreeMap<String, (String, String)>,
}

impl Tally {
    /// The tally of `task`'s rows among `rows` (oldest first).
    pub fn of_rows(rows: &[Row], task: &str) -> Tally {
        let mut tally = Tally::default();
        for row in rows.iter().filter(|r| r.task == task) {
            tally.add(row);
        }
        tally
    }

    /// Takes in one more row (of the task), later than those before it or not.
    pub fn add(&mut self, row: &Row) {
        let key = row.failure_key();
        if row.is_failure() {
            *self.failures.entry(key.clone()).or_default() += 1;
        }
        if let Some(tier) = &row.tier {
            self.note_tier(&key, &row.at, tier);
        }
    }

    /// `tier` at `at` for `key`, kept when it is the latest seen (a later one of the same
    /// instant wins, as it would in time order).
    pub fn note_tier(&mut self, key: &str, at: &str, tier: &str) {
        let newer = self
            .tiers
            .get(key)
            .is_none_or(|(seen, _)| super::stamp::cmp(seen, at).is_le());
        if newer {
            self.tiers
                .insert(key.to_string(), (at.to_string(), tier.to_string()));
        }
    }

    /// The failures counted under `key`.
    pub fn failures(&self, key: &str) -> usize {
        self.failures.get(key).copied().unwrap_or(0)
    }

    /// The tier of the latest row under `key` that names one.
    pub fn tier(&self, key: &str) -> Option<&str> {
        self.tiers.get(key).map(|(_, tier)| tier.as_str())
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
        record.finished_at = Some("2026-01-01T00:10:00Z".parse().unwrap());
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

    fn row(size: f64, wall_h: f64, outcome: Outcome, claimed: &str, reward: Option<f64>) -> Row {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let mut r = Row::of(&RunRecord::example());
        r.run = format!(
            "r{}",
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        r.backend = "codex".into();
        r.model = Some("m".into());
        r.size_h = Some(size);
        r.wall_s = (wall_h * 3600.0) as u64;
        r.outcome = Some(outcome);
        r.claimed = claimed.into();
        r.reward = reward;
        r
    }

    fn spent(mut r: Row, tokens: u64, cost: Option<f64>) -> Row {
        r.usage = Some(crate::core::usage::Usage {
            input_tokens: tokens - 100,
            output_tokens: 100,
            cost_usd: cost,
            ..Default::default()
        });
        r
    }

    #[test]
    fn stats_give_tokens_and_dollars_per_run_and_per_verified_pass_by_hand() {
        use Outcome::*;
        let rows = vec![
            // <=1h: a verified pass ($0.30), a failure ($0.50), a pass on its footer
            // alone ($0.20, not verified).
            spent(row(1.0, 0.5, Pass, "done", Some(1.0)), 3000, Some(0.30)),
            spent(row(1.0, 0.5, Fail, "done", Some(0.0)), 5000, Some(0.50)),
            spent(row(0.5, 0.2, Pass, "done", None), 2000, Some(0.20)),
            // <=2h: two verified passes, one of them unpriced.
            spent(row(2.0, 1.0, Pass, "done", Some(1.0)), 10_000, Some(1.00)),
            spent(row(2.0, 1.0, Pass, "done", Some(1.0)), 6000, None),
        ];
        let stats = stats(&rows);
        let spend = &stats[0].spend;
        assert_eq!(
            (spend.reported, spend.priced, spend.verified_passes),
            (5, 4, 3)
        );
        assert_eq!(spend.tokens, 26_000);
        assert_eq!(spend.tokens_per_run, Some(5200.0));
        // Dollars over the priced runs: $2.00 over 4.
        assert!((spend.cost_usd.unwrap() - 2.0).abs() < 1e-9);
        assert!((spend.cost_per_run_usd.unwrap() - 0.5).abs() < 1e-9);
        // Per verified pass: every token of every run, over 3 verified passes; no dollar
        // figure, as one run's cost is unknown.
        assert!((spend.tokens_per_verified_pass.unwrap() - 26_000.0 / 3.0).abs() < 1e-9);
        assert_eq!(spend.cost_per_verified_pass_usd, None);
        // By size: <=0.5h has no verified pass; <=1h paid $0.80 for its one.
        let bucket = |label: &str| {
            &stats[0]
                .by_size
                .iter()
                .find(|b| b.size == label)
                .unwrap()
                .spend
        };
        assert_eq!(bucket("<=0.5h").cost_per_verified_pass_usd, None);
        assert!((bucket("<=1h").cost_per_verified_pass_usd.unwrap() - 0.80).abs() < 1e-9);
        assert_eq!(bucket("<=2h").cost_per_verified_pass_usd, None);
        assert_eq!(bucket("<=2h").tokens_per_verified_pass, Some(8000.0));
        // A run that reported nothing leaves the per-pass figures unknown.
        let mut silent = rows[..2].to_vec();
        silent.push(row(1.0, 0.5, Pass, "done", Some(1.0)));
        let spend = &super::stats(&silent)[0].spend;
        assert_eq!(spend.tokens_per_verified_pass, None);
        assert_eq!(spend.cost_per_verified_pass_usd, None);
        assert!((spend.cost_per_run_usd.unwrap() - 0.40).abs() < 1e-9);
    }

    #[test]
    fn stats_give_the_horizon_the_speed_factor_and_claim_accuracy_by_hand() {
        use Outcome::*;
        let mut rows = vec![
            // <=1h: 2 of 2 pass.
            row(1.0, 0.5, Pass, "done", Some(1.0)),
            row(0.8, 0.4, Pass, "done", None),
            // <=2h: 1 of 2.
            row(2.0, 3.0, Pass, "done", Some(1.0)),
            row(2.0, 1.0, Fail, "done", Some(0.0)),
            // <=4h: 0 of 1.
            row(4.0, 2.0, Timeout, "none", None),
        ];
        // Left out: an integration event, an abandon, a scope change.
        let mut event = rows[0].clone();
        event.integrated = Some("c".into());
        let mut abandoned = rows[0].clone();
        abandoned.outcome = Some(Abandoned);
        let mut changed = row(8.0, 1.0, Pass, "done", Some(1.0));
        changed.scope_changed = true;
        rows.extend([event, abandoned, changed]);
        let s = &stats(&rows)[0];
        assert_eq!((s.runs, s.passes), (5, 3));
        assert_eq!(s.pass_rate, 0.6);
        assert_eq!(
            s.by_size
                .iter()
                .map(|b| (b.size.as_str(), b.runs, b.passes, b.success_rate))
                .collect::<Vec<_>>(),
            [
                ("<=1h", 2, 2, 1.0),
                ("<=2h", 2, 1, 0.5),
                ("<=4h", 1, 0, 0.0)
            ]
        );
        // Success is still 50% at 2 h, not at 4 h.
        assert_eq!(s.horizon_h, Some(2.0));
        // A lucky 8-hour run beyond the drop does not extend it.
        let mut lucky = rows.clone();
        lucky.push(row(8.0, 8.0, Pass, "done", Some(1.0)));
        assert_eq!(stats(&lucky)[0].horizon_h, Some(2.0));
        // A scope rejection found at integrate replaces that attempt's pass.
        let mut rejected = rows.clone();
        let mut reject = rows[0].clone();
        reject.at = "2027-01-01T00:00:00Z".into();
        reject.outcome = Some(ScopeReject);
        rejected.push(reject);
        let r = &stats(&rejected)[0];
        assert_eq!((r.runs, r.passes), (5, 2));
        // Passing, sized: (0.5 + 0.4 + 3.0) / (1.0 + 0.8 + 2.0) = 3.9 / 3.8.
        assert_eq!(s.speed_factor, Some(1.026));
        // Four `done` claims, two of them verified passes.
        assert_eq!(s.claim_accuracy, Some(0.5));
        assert_eq!(s.excluded_scope_changed, 1);

        // The task's loop: 0.5 h actual at factor 1.026 is 0.487 neutral hours.
        let mine = [&rows[0]];
        assert_eq!(estimate(Some(1.0), &mine, &stats(&rows)), Some(0.487));
        assert_eq!(estimate(Some(1.0), &[], &stats(&rows)), Some(1.0));
    }
}
