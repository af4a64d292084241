//! The two-failure rule (SPEC §5.8), kept by the orchestrator from the ledger: fewer than
//! `fences.needs_help_after_failures` (2) failures of a (task, key) → continue; that many
//! with a higher tier configured → escalate to it; that many at the top tier → a human
//! report. The key is the model, or `backend:<name>` for a backend that names no model.

use serde::Serialize;

use super::flight::Flight;
use super::ledger::{Row, Tally};

/// The backend and model to move to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Next {
    pub tier: String,
    pub backend: String,
    pub model: Option<String>,
}

/// What should-stop decided.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Decision {
    Continue,
    EscalateTier,
    HumanReport,
}

/// The verdict for one (task, model).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub decision: Decision,
    pub tier: String,
    pub failures: usize,
    pub next: Option<Next>,
}

/// The verdict when the ledger alone settles it: no failure yet (any threshold lets the
/// task continue), and the tier known from `tier` or from the task's latest row under
/// `key` that names one. `None` when the flight config is needed.
pub fn settled_by_ledger(tally: &Tally, key: &str, tier: Option<&str>) -> Option<Verdict> {
    if tally.failures(key) > 0 {
        return None;
    }
    let tier = match tier {
        Some(tier) => tier.to_string(),
        None => tally.tier(key)?.to_string(),
    };
    Some(Verdict {
        decision: Decision::Continue,
        tier,
        failures: 0,
        next: None,
    })
}

/// Decides from the task's tally of its ledger rows. `key` is a model, or
/// `backend:<name>`; `tier` is the tier it runs at — when not given, the tier of that
/// backend (or of the first backend, by name, using that model), else the lowest tier.
/// The threshold is `fences.needs_help_after_failures`.
pub fn should_stop(tally: &Tally, flight: &Flight, key: &str, tier: Option<&str>) -> Verdict {
    let failures = tally.failures(key);
    let threshold = flight.fences.needs_help_after_failures.max(1) as usize;
    let tier = tier
        .map(String::from)
        .or_else(|| {
            match key.strip_prefix("backend:") {
                Some(name) => flight.backends.get(name),
                None => flight
                    .backends
                    .values()
                    .find(|b| b.model.as_deref() == Some(key)),
            }
            .and_then(|b| b.tier.clone())
        })
        .or_else(|| flight.tiers.first().cloned())
        .unwrap_or_default();
    if failures < threshold {
        return Verdict {
            decision: Decision::Continue,
            tier,
            failures,
            next: None,
        };
    }
    let position = flight.tiers.iter().position(|t| *t == tier).unwrap_or(0);
    let next = flight.tiers[position + 1..].iter().find_map(|higher| {
        flight
            .backends
            .iter()
            .find(|(_, b)| b.tier.as_deref() == Some(higher.as_str()))
            .map(|(name, b)| Next {
                tier: higher.clone(),
                backend: name.clone(),
                model: b.model.clone(),
            })
    });
    Verdict {
        decision: if next.is_some() {
            Decision::EscalateTier
        } else {
            Decision::HumanReport
        },
        tier,
        failures,
        next,
    }
}

/// The human report (SPEC §5.8): tried / observed / hypothesis / what to look at.
pub fn human_report(task: &str, model: &str, rows: &[Row]) -> String {
    let mine: Vec<&Row> = rows.iter().filter(|r| r.task == task).collect();
    let mut tried = String::new();
    for row in &mine {
        tried.push_str(&format!(
            "- {} run {} on {} / {} (tier {}): claimed {}, measured {}\n",
            row.at,
            row.run,
            row.backend,
            row.model.as_deref().unwrap_or("-"),
            row.tier.as_deref().unwrap_or("-"),
            row.claimed,
            row.outcome
                .map_or("-".to_string(), |o| serde_json::to_value(o)
                    .ok()
                    .and_then(|v| v.as_str().map(String::from))
                    .unwrap_or_default()),
        ));
    }
    let claimed_done = mine
        .iter()
        .filter(|r| r.claimed == "done" && r.is_failure())
        .count();
    format!(
        "# Human report: task {task}\n\n\
         The ledger holds metadata only (who ran, outcomes, sizes); it has no prompt, no model\n\
         output and no file content. Read the runs' transcripts (`git crew transcript RUN`)\n\
         for what the workers saw and said.\n\n\
         ## Tried\n{tried}\n\
         ## Observed\n{} failed runs at the top tier for model {model}; {claimed_done} of them \
         claimed to be done.\n\n\
         ## Hypothesis\nThe task is beyond what the configured workers can do as stated: too large, \
         underspecified, or its verify command and its prompt disagree.\n\n\
         ## What a stronger model or a human should look at\nThe task statement and its verify \
         command side by side; the last run's footer (`git crew show RUN`) and its diff; whether \
         the task should be split.\n",
        mine.iter().filter(|r| r.is_failure()).count()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::flight::{Invocation, LayerSource, resolve};
    use crate::core::record::{Outcome, RunRecord};

    fn row(task: &str, model: &str, outcome: Outcome) -> Row {
        let mut record = RunRecord::example();
        record.task = task.into();
        record.model = Some(model.into());
        record.outcome = Some(outcome);
        Row::of(&record)
    }

    fn flight() -> Flight {
        let text = "[backends.low]\nadapter = \"command\"\nargv = [\"x\"]\nmodel = \"small\"\ntier = \"low\"\n[backends.codex]\ntier = \"high\"\nmodel = \"big\"\n[backends.claude]\ntier = \"mid\"\n";
        let layer = LayerSource {
            layer: crate::core::flight::Layer::Project,
            origin: "p".into(),
            text: text.into(),
            has_lines: true,
        };
        resolve(&[layer], &Invocation::default()).unwrap().flight
    }

    #[test]
    fn the_ledger_settles_a_continue_without_the_config() {
        let mut rows = vec![row("t", "small", Outcome::Pass)];
        rows[0].tier = Some("low".into());
        let v = settled_by_ledger(&Tally::of_rows(&rows, "t"), "small", None).unwrap();
        assert_eq!(
            (v.decision.clone(), v.tier.as_str(), v.failures),
            (Decision::Continue, "low", 0)
        );
        assert_eq!(
            v,
            should_stop(&Tally::of_rows(&rows, "t"), &flight(), "small", None)
        );
        // No row names the tier: the config decides.
        assert!(settled_by_ledger(&Tally::of_rows(&rows, "t"), "other", None).is_none());
        // A failure: the threshold is in the config.
        rows.push(row("t", "small", Outcome::Fail));
        assert!(settled_by_ledger(&Tally::of_rows(&rows, "t"), "small", Some("low")).is_none());
    }

    #[test]
    fn the_threshold_is_the_configs_and_a_model_less_backend_is_counted_by_name() {
        let mut flight = flight();
        flight.fences.needs_help_after_failures = 3;
        let rows = [
            row("t", "small", Outcome::Fail),
            row("t", "small", Outcome::Fail),
        ];
        assert_eq!(
            should_stop(&Tally::of_rows(&rows, "t"), &flight, "small", None).decision,
            Decision::Continue
        );
        // A backend without a model: its rows count under `backend:<name>`.
        let mut record = RunRecord::example();
        record.task = "t".into();
        record.model = None;
        record.backend = "low".into();
        record.outcome = Some(Outcome::Fail);
        let rows = [Row::of(&record), Row::of(&record)];
        assert_eq!(rows[0].failure_key(), "backend:low");
        let v = should_stop(
            &Tally::of_rows(&rows, "t"),
            &self::flight(),
            "backend:low",
            None,
        );
        assert_eq!(v.failures, 2);
        assert_eq!(v.tier, "low");
        assert_eq!(v.decision, Decision::EscalateTier);
        // An old row without a key derives it.
        let mut old = rows[0].clone();
        old.key = None;
        assert_eq!(old.failure_key(), "backend:low");
    }

    #[test]
    fn fewer_than_two_failures_continue_and_handoffs_or_abandons_do_not_count() {
        let rows = [
            row("t", "small", Outcome::Fail),
            row("t", "small", Outcome::Abandoned),
            row("t", "other", Outcome::Fail),
        ];
        let v = should_stop(&Tally::of_rows(&rows, "t"), &flight(), "small", None);
        assert_eq!(v.decision, Decision::Continue);
        assert_eq!(v.failures, 1);
        assert_eq!(v.tier, "low");
    }

    #[test]
    fn two_failures_escalate_to_the_next_tier_with_a_backend() {
        let rows = [
            row("t", "small", Outcome::Fail),
            row("t", "small", Outcome::ScopeReject),
        ];
        let v = should_stop(&Tally::of_rows(&rows, "t"), &flight(), "small", None);
        assert_eq!(v.decision, Decision::EscalateTier);
        assert_eq!(
            v.next,
            Some(Next {
                tier: "mid".into(),
                backend: "claude".into(),
                model: Some("claude-sonnet-5".into())
            })
        );
    }

    #[test]
    fn two_failures_at_the_top_tier_ask_for_a_human() {
        let rows = [
            row("t", "big", Outcome::Timeout),
            row("t", "big", Outcome::FooterReject),
        ];
        let v = should_stop(&Tally::of_rows(&rows, "t"), &flight(), "big", Some("high"));
        assert_eq!(v.decision, Decision::HumanReport);
        assert_eq!(v.next, None);
        let report = human_report("t", "big", &rows);
        for heading in [
            "## Tried",
            "## Observed",
            "## Hypothesis",
            "## What a stronger model or a human should look at",
        ] {
            assert!(report.contains(heading), "{heading}");
        }
        assert!(report.contains("metadata only"));
    }
}
