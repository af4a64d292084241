//! The summary reflex (SPEC §7): a title line and exactly four lines — WHAT, WHY, HOW,
//! WHEN — each at most two lines, about one wave at dispatch, at completion, or as a
//! micro-plan. Pure: the caller gathers the wave's facts.

use serde::Serialize;

use super::plan::{Gate, Verdict};
use super::text::count;

/// When the summary is given: a value of the flight config (`summary.at`).
pub use crate::core::flight::SummaryAt as At;

/// One task of the wave, as the summary sees it.
#[derive(Debug, Clone, Default)]
pub struct WaveTask {
    pub id: String,
    pub status: String,
    pub run: Option<String>,
    /// The integration commit, once integrated.
    pub commit: Option<String>,
    pub backend: Option<String>,
    pub model: Option<String>,
    pub effort: Option<String>,
    pub scope: Vec<String>,
    /// The standing worker: tasks of one worker run one after the other.
    pub worker: Option<String>,
    /// Hours, from the plan's size and the ledger's speed factors.
    pub estimate_h: Option<f64>,
    /// Seconds the run took, when it ended.
    pub wall_s: Option<u64>,
    /// What its run spent, when it reported it.
    pub usage: Option<crate::core::usage::Usage>,
}

/// Everything the summary says, gathered.
#[derive(Debug, Clone, Default)]
pub struct WaveFacts {
    pub plan: String,
    pub north_star: Option<String>,
    pub wave: u32,
    pub tasks: Vec<WaveTask>,
    /// The gates that hold this wave, with their latest verdicts.
    pub gated_by: Vec<(Gate, Option<Verdict>)>,
    /// The gate that closes this wave, with its latest verdict.
    pub closing: Option<(Gate, Option<Verdict>)>,
}

/// The four lines, and the title above them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Summary {
    pub title: String,
    pub what: String,
    pub why: String,
    pub how: String,
    pub when: String,
    /// At completion: whether the closing gate's evidence could be stated.
    pub complete: Option<bool>,
}

fn hours(h: f64) -> String {
    if h < 1.0 {
        format!("{:.0} min", h * 60.0)
    } else {
        format!("{h:.1} h")
    }
}

/// What the wave's runs spent, when any reported it: tokens, and dollars when every
/// reported spend is priced.
fn spend(tasks: &[WaveTask]) -> Option<String> {
    use crate::core::usage::{Usage, dollars};
    let usages: Vec<&Usage> = tasks.iter().filter_map(|t| t.usage.as_ref()).collect();
    if usages.is_empty() {
        return None;
    }
    let total = usages.iter().fold(Usage::default(), |sum, u| sum.plus(u));
    let silent = tasks
        .iter()
        .filter(|t| t.run.is_some() && t.usage.is_none())
        .count();
    let mut text = format!(
        "spent {} tokens, {}",
        total.tokens(),
        total.cost_usd.map_or("unpriced".to_string(), dollars)
    );
    if silent > 0 {
        text.push_str(&format!(
            " ({} reported none)",
            count(silent, "run", "runs")
        ));
    }
    Some(text)
}

/// The summary of a wave at `at`.
pub fn summarize(f: &WaveFacts, at: At) -> Summary {
    let n = f.tasks.len();
    let title = match at {
        At::Dispatch => {
            let working = f.tasks.iter().filter(|t| t.status == "in-flight").count();
            let ready = f.tasks.iter().filter(|t| t.status == "ready").count();
            // Before the dispatch nobody works yet: say what is about to start.
            let who = match working {
                0 => format!("{} ready, none started yet", count(ready, "task", "tasks")),
                n => count(n, "worker", "workers"),
            };
            format!("Dispatching wave {} — {who}", f.wave)
        }
        At::Completion => {
            let done = f.tasks.iter().filter(|t| t.status == "done").count();
            format!(
                "Wave {} completion — {done} of {} done",
                f.wave,
                count(n, "task", "tasks")
            )
        }
        At::MicroPlan => format!(
            "Micro-plan for wave {} — {}",
            f.wave,
            count(n, "task", "tasks")
        ),
    };
    let what = f
        .tasks
        .iter()
        .map(|t| match at {
            At::Completion => match (&t.run, &t.commit) {
                (Some(run), Some(commit)) => {
                    format!(
                        "{} → run {run} @ {}",
                        t.id,
                        commit.chars().take(8).collect::<String>()
                    )
                }
                (Some(run), None) => format!("{} → run {run} ({})", t.id, t.status),
                _ => format!("{} ({})", t.id, t.status),
            },
            At::Dispatch => match &t.run {
                Some(run) => format!("{} (run {run})", t.id),
                None => format!("{} ({})", t.id, t.status),
            },
            At::MicroPlan => match t.estimate_h {
                Some(h) => format!("{} ({}, {})", t.id, hours(h), t.status),
                None => format!("{} ({})", t.id, t.status),
            },
        })
        .collect::<Vec<_>>()
        .join("; ");
    let closing = f.closing.as_ref();
    let (why, complete) = match at {
        At::Completion => match closing {
            Some((gate, Some(v))) => (
                format!(
                    "gate {} {}: {}",
                    gate.id,
                    if v.passed() { "passed" } else { "failed" },
                    v.evidence
                ),
                Some(v.passed()),
            ),
            Some((gate, None)) => (
                format!(
                    "incomplete: gate {} has no verdict yet{}",
                    gate.id,
                    gate.required_evidence
                        .as_ref()
                        .map(|e| format!(" (needs: {e})"))
                        .unwrap_or_default()
                ),
                Some(false),
            ),
            None => (
                format!(
                    "incomplete: no gate closes wave {}, so no evidence can be stated",
                    f.wave
                ),
                Some(false),
            ),
        },
        _ => {
            let passed: Vec<String> = f
                .gated_by
                .iter()
                .filter_map(|(g, v)| {
                    v.as_ref()
                        .filter(|v| v.passed())
                        .map(|v| format!("gate {} passed: {}", g.id, v.evidence))
                })
                .collect();
            let held: Vec<String> = f
                .gated_by
                .iter()
                .filter(|(_, v)| !v.as_ref().is_some_and(Verdict::passed))
                .map(|(g, _)| format!("gate {} has not passed", g.id))
                .collect();
            let mut parts = Vec::new();
            if !held.is_empty() {
                parts.push(held.join("; "));
            }
            if !passed.is_empty() {
                parts.push(passed.join("; "));
            }
            if parts.is_empty() {
                parts.push(format!("no gate holds wave {}", f.wave));
            }
            if let Some(star) = &f.north_star {
                parts.push(format!("toward: {star}"));
            }
            (parts.join("; "), None)
        }
    };
    let mut configs: Vec<String> = Vec::new();
    for t in &f.tasks {
        let mut c = format!("backend {}", t.backend.as_deref().unwrap_or("(default)"));
        if let Some(model) = &t.model {
            c.push_str(&format!(" model {model}"));
        }
        if let Some(effort) = &t.effort {
            c.push_str(&format!(" effort {effort}"));
        }
        if !configs.contains(&c) {
            configs.push(c);
        }
    }
    let scopes: Vec<String> = f
        .tasks
        .iter()
        .filter(|t| !t.scope.is_empty())
        .map(|t| format!("{}: {}", t.id, t.scope.join(" ")))
        .collect();
    let how = format!(
        "{}; one worktree and branch per run, write scopes enforced by hooks{}",
        configs.join(", "),
        if scopes.is_empty() {
            String::new()
        } else {
            format!(" ({})", scopes.join("; "))
        }
    );
    let gate_name = closing.map_or_else(
        || format!("no gate closes wave {}", f.wave),
        |(g, _)| format!("closed by gate {}", g.id),
    );
    let when = match at {
        At::Completion => {
            let wall = f.tasks.iter().filter_map(|t| t.wall_s).max();
            match wall {
                Some(s) => format!("longest run took {}; {gate_name}", hours(s as f64 / 3600.0)),
                None => format!("no run has ended yet; {gate_name}"),
            }
        }
        _ => {
            let estimates: Vec<f64> = f.tasks.iter().filter_map(|t| t.estimate_h).collect();
            let unknown = f.tasks.len() - estimates.len();
            // Tasks of one standing worker run one after the other; the rest in parallel.
            let mut lanes: std::collections::BTreeMap<&str, f64> = Default::default();
            for t in &f.tasks {
                let lane = t.worker.as_deref().unwrap_or(t.id.as_str());
                *lanes.entry(lane).or_default() += t.estimate_h.unwrap_or(0.0);
            }
            let longest = lanes.values().copied().fold(0.0, f64::max);
            let mut text = if estimates.is_empty() {
                "no size given, no estimate".to_string()
            } else {
                format!(
                    "about {} (the longest lane: runs go in parallel, one worker's in turn)",
                    hours(longest)
                )
            };
            if unknown > 0 && !estimates.is_empty() {
                text.push_str(&format!(
                    ", {} without a size",
                    count(unknown, "task", "tasks")
                ));
            }
            format!("{text}; {gate_name}")
        }
    };
    let when = match spend(&f.tasks) {
        Some(spent) => format!("{when}; {spent}"),
        None => when,
    };
    Summary {
        title,
        what,
        why,
        how,
        when,
        complete,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate() -> Gate {
        Gate {
            id: "g1".into(),
            measure: None,
            required_evidence: Some("under 3 s".into()),
            closes_wave: Some(1),
            gates_waves: vec![2],
        }
    }

    fn facts() -> WaveFacts {
        WaveFacts {
            plan: "v1".into(),
            north_star: None,
            wave: 1,
            tasks: vec![
                WaveTask {
                    id: "routes".into(),
                    status: "in-flight".into(),
                    run: Some("r1".into()),
                    backend: Some("codex".into()),
                    model: Some("m".into()),
                    effort: Some("high".into()),
                    scope: vec!["src/routes/**".into()],
                    estimate_h: Some(2.0),
                    ..WaveTask::default()
                },
                WaveTask {
                    id: "docs".into(),
                    status: "in-flight".into(),
                    run: Some("r2".into()),
                    backend: Some("codex".into()),
                    model: Some("m".into()),
                    effort: Some("high".into()),
                    scope: vec!["docs/**".into()],
                    estimate_h: Some(0.5),
                    ..WaveTask::default()
                },
            ],
            gated_by: vec![],
            closing: Some((gate(), None)),
        }
    }

    #[test]
    fn four_lines_after_a_title_at_dispatch() {
        let s = summarize(&facts(), At::Dispatch);
        let text = s.render(100);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "Dispatching wave 1 — 2 workers");
        assert_eq!(lines[1], "WHAT   routes (run r1); docs (run r2)");
        assert_eq!(lines[2], "WHY    no gate holds wave 1");
        assert!(
            lines[3].starts_with("HOW    backend codex model m effort high; one worktree"),
            "{lines:?}"
        );
        let when = text
            .split("WHEN   ")
            .nth(1)
            .unwrap()
            .replace("\n       ", " ");
        assert_eq!(
            when,
            "about 2.0 h (the longest lane: runs go in parallel, one worker's in turn); closed by gate g1"
        );
        // Before the dispatch, nobody works yet: the title counts what is ready.
        let mut before = facts();
        for t in &mut before.tasks {
            t.status = "ready".into();
        }
        assert_eq!(
            summarize(&before, At::Dispatch).title,
            "Dispatching wave 1 — 2 tasks ready, none started yet"
        );
        // Two tasks of one standing worker run in turn: their estimates add up.
        let mut same = facts();
        for t in &mut same.tasks {
            t.worker = Some("w".into());
        }
        assert!(
            summarize(&same, At::Dispatch)
                .when
                .starts_with("about 2.5 h")
        );
        assert!(lines.len() <= 9);
    }

    #[test]
    fn completion_carries_the_gate_evidence_or_reads_incomplete() {
        let mut f = facts();
        for t in &mut f.tasks {
            t.status = "done".into();
            t.commit = Some("0123456789abcdef".into());
            t.wall_s = Some(5400);
        }
        let s = summarize(&f, At::Completion);
        assert_eq!(s.complete, Some(false));
        assert_eq!(
            s.why,
            "incomplete: gate g1 has no verdict yet (needs: under 3 s)"
        );
        f.closing = Some((
            gate(),
            Some(Verdict {
                at: "t".into(),
                plan: "v1".into(),
                gate: "g1".into(),
                verdict: crate::core::plan::GateVerdict::Pass,
                evidence: "2.1 s".into(),
                link: None,
                measured_at: None,
                by: None,
            }),
        ));
        let s = summarize(&f, At::Completion);
        assert_eq!(s.complete, Some(true));
        assert_eq!(s.why, "gate g1 passed: 2.1 s");
        assert_eq!(
            s.what,
            "routes → run r1 @ 01234567; docs → run r2 @ 01234567"
        );
        assert_eq!(s.when, "longest run took 1.5 h; closed by gate g1");
        // The wave's spend: tokens, and dollars only when every part is priced.
        f.tasks[0].usage = Some(crate::core::usage::Usage {
            input_tokens: 20_000,
            output_tokens: 500,
            cost_usd: Some(0.25),
            ..Default::default()
        });
        assert_eq!(
            summarize(&f, At::Completion).when,
            "longest run took 1.5 h; closed by gate g1; spent 20500 tokens, $0.25 (1 run reported none)"
        );
        f.tasks[1].usage = Some(crate::core::usage::Usage {
            input_tokens: 1000,
            ..Default::default()
        });
        assert_eq!(
            summarize(&f, At::Completion).when,
            "longest run took 1.5 h; closed by gate g1; spent 21500 tokens, unpriced"
        );
    }
}
