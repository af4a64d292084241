//! Integrating a run, decided in pure code: whether it may land (commits of its own, a
//! verdict that holds for its tip), how it lands (merge, squash or range), whether the
//! merged tree is verified again, the run record note that goes on the integration commit
//! and on every worker commit, the roster and completed-run index of
//! `docs/state/crew.json`, and what cleanup may remove. `run::integrate` gathers the facts
//! and applies the decisions (and prints them, unapplied, under `--dry-run`).

use std::path::PathBuf;

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::flight::WorktreeCleanup;
use super::record::{Footer, Outcome, RunRecord, Verify};

/// Where the roster and completed-run index live, in the target branch's tree.
pub const STATE_FILE: &str = "docs/state/crew.json";

/// The run record note (SPEC §2), as `git notes --ref=crew show <commit>` prints it: one
/// line of JSON, `run` first, so a line union of two clones' notes never merges two
/// records into one.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunNote {
    pub run: String,
    pub task: String,
    pub role: crate::core::scope::Role,
    pub backend: Option<String>,
    pub model: Option<String>,
    pub effort: Option<String>,
    pub tier: Option<String>,
    pub scope: Vec<String>,
    pub base: String,
    pub attempts: Option<u32>,
    pub footer: Option<Footer>,
    pub verify: Option<Verify>,
    pub integrated_at: String,
    pub integrated_by: String,
    pub gates: Vec<Value>,
    /// The write fence the run's processes ran inside (`landlock-v<ABI>` or `none`).
    pub fence: Option<String>,
    /// Integrated without a passing verify.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub forced_unverified: bool,
    /// What an audit found outside the run's fences (a plain merge is never refused).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub violations: Vec<String>,
    /// What the run spent (tokens and dollars, every attempt together).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<crate::core::usage::Usage>,
}

impl RunNote {
    /// The note for a finished run.
    pub fn of(record: &RunRecord, integrated_at: &str, integrated_by: &str) -> RunNote {
        RunNote {
            run: record.run.clone(),
            task: record.task.clone(),
            role: record.role,
            backend: Some(record.backend.clone()),
            model: record.model.clone(),
            effort: record.effort.clone(),
            tier: record.tier.clone(),
            scope: record.scope.clone(),
            base: record.base.clone(),
            attempts: Some(record.attempts),
            footer: record.footer.clone(),
            verify: record.verify.clone(),
            integrated_at: integrated_at.to_string(),
            integrated_by: integrated_by.to_string(),
            gates: Vec::new(),
            fence: record.fence.clone(),
            forced_unverified: false,
            violations: Vec::new(),
            usage: record.usage.as_ref().map(|u| u.total),
        }
    }

    pub fn to_line(&self) -> String {
        // Serialising plain data with string keys cannot fail.
        serde_json::to_string(self).expect("a run note serialises") + "\n"
    }
}

/// A problem with the state file already on the target branch.
#[derive(Debug, thiserror::Error)]
#[error("{STATE_FILE} on the target is not a git-crew state file: {0}")]
pub struct BadStateFile(String);

/// The new `docs/state/crew.json`: the one on the target (if any) with this run added to
/// the completed runs (replacing an earlier entry of the same run) and the roster
/// recounted from them. Session ids are local facts and never written here.
pub fn state_file(
    existing: Option<&[u8]>,
    record: &RunRecord,
    note: &RunNote,
    session_reuse: bool,
) -> Result<String, BadStateFile> {
    let mut state = match existing {
        None => Map::new(),
        Some(bytes) => match serde_json::from_slice::<Value>(bytes) {
            Ok(Value::Object(map)) => map,
            Ok(_) => return Err(BadStateFile("it is not a JSON object".into())),
            Err(e) => return Err(BadStateFile(e.to_string())),
        },
    };
    let mut runs = match state.remove("runs") {
        None => Vec::new(),
        Some(Value::Array(runs)) => runs,
        Some(_) => return Err(BadStateFile("`runs` is not a list".into())),
    };
    runs.retain(|r| r.get("run").and_then(Value::as_str) != Some(record.run.as_str()));
    runs.push(json!({
        "run": record.run,
        "task": record.task,
        "role": record.role,
        "backend": record.backend,
        "model": record.model,
        "effort": record.effort,
        "tier": record.tier,
        "session_reuse": session_reuse,
        "attempts": record.attempts,
        "base": record.base,
        "scope": record.scope,
        "outcome": record.outcome,
        "reward": record.verify.as_ref().map(|v| v.reward),
        "forced_unverified": note.forced_unverified,
        "files": record.diff.files.len(),
        "insertions": record.diff.insertions,
        "deletions": record.diff.deletions,
        "wall_s": record.elapsed_s,
        "integrated_at": note.integrated_at,
        "integrated_by": note.integrated_by,
    }));
    runs.sort_by(|a, b| {
        let key = |v: &Value| {
            (
                v.get("integrated_at")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                v.get("run")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            )
        };
        key(a).cmp(&key(b))
    });
    let roster = roster(&runs);
    let mut out = Map::new();
    out.insert("version".into(), json!(1));
    out.insert("roster".into(), roster);
    out.insert("runs".into(), Value::Array(runs));
    // Keys other tools added stay.
    for (key, value) in state {
        if !matches!(key.as_str(), "version" | "roster") {
            out.insert(key, value);
        }
    }
    Ok(serde_json::to_string_pretty(&Value::Object(out)).expect("JSON values serialise") + "\n")
}

/// Whether a state file already lists `run` among its completed runs.
pub fn lists_run(state: &[u8], run: &str) -> bool {
    serde_json::from_slice::<Value>(state).is_ok_and(|v| {
        v["runs"]
            .as_array()
            .is_some_and(|runs| runs.iter().any(|r| r["run"].as_str() == Some(run)))
    })
}

/// Backends and models with what they brought in, counted from the completed runs.
fn roster(runs: &[Value]) -> Value {
    let mut backends = Map::new();
    let mut models = Map::new();
    for run in runs {
        let backend = run.get("backend").and_then(Value::as_str).unwrap_or("?");
        let model = run.get("model").and_then(Value::as_str);
        let entry = backends.entry(backend.to_string()).or_insert_with(|| {
            json!({"models": [], "session_reuse": false, "integrated_runs": 0, "verified_runs": 0})
        });
        bump(entry, "integrated_runs");
        if !run
            .get("forced_unverified")
            .and_then(Value::as_bool)
            .unwrap_or(false)
        {
            bump(entry, "verified_runs");
        }
        if run.get("session_reuse").and_then(Value::as_bool) == Some(true) {
            entry["session_reuse"] = json!(true);
        }
        if let Some(model) = model {
            if let Some(list) = entry["models"].as_array_mut()
                && !list.iter().any(|m| m == model)
            {
                list.push(json!(model));
            }
            let m = models
                .entry(model.to_string())
                .or_insert_with(|| json!({"integrated_runs": 0}));
            bump(m, "integrated_runs");
        }
    }
    json!({"backends": backends, "models": models})
}

fn bump(value: &mut Value, key: &str) {
    let n = value.get(key).and_then(Value::as_u64).unwrap_or(0);
    value[key] = json!(n + 1);
}

/// Why a run was not integrated; nothing was changed.
#[derive(Debug)]
pub enum Refusal {
    NotFound(String),
    /// Still in flight.
    Live(String),
    Unverified(String),
    /// Paths outside the run's scope, each with the reason.
    Scope(Vec<String>),
    /// A run merged by hand whose merge (`commit`) changed paths outside its scope.
    HandScope {
        run: String,
        commit: String,
        violations: Vec<String>,
    },
    AlreadyIntegrated(String),
    /// The run's branch has no commits.
    Nothing(String),
    /// The run's branch does not descend from its base.
    Rewritten(String),
    /// The local run record disagrees with the run's seal, or has none.
    Tampered(String),
    NoTarget(String),
    Dirty(PathBuf),
    /// git refused to fast-forward the checkout of the target.
    Checkout(PathBuf, String),
    Conflict {
        into: String,
        /// The run's branch, for a merge by hand.
        branch: String,
        paths: Vec<String>,
    },
    /// Verify failed on the merged tree.
    MergedVerify(String),
    /// The target moved under every attempt to land on it.
    KeptMoving(String),
    BadState(String),
}

/// A run whose branch holds no commits of its own has nothing to integrate (the output
/// of a review or investigate run is its manifest).
pub fn admit_commits(record: &RunRecord, no_commits: bool) -> Result<(), Refusal> {
    if !no_commits {
        return Ok(());
    }
    let why = if matches!(record.role.as_str(), "review" | "investigate") {
        format!(" (the output of a {} run is its manifest)", record.role)
    } else {
        String::new()
    };
    Err(Refusal::Nothing(format!(
        "run {} made no commits: there is nothing to integrate{why}",
        record.run
    )))
}

/// Whether the run counts as verified at `run_tip`, or why it may not land. The verdict
/// holds for the commit verify ran on: a branch that moved since is not verified. A pass
/// is a pass: verified, or — when the lead dispatched it with no verify command (sealed)
/// — accepted on its footer, for the commit it was accepted at. `force` lets an
/// unverified run through (its note says so): the result is then `false`.
pub fn verdict(record: &RunRecord, run_tip: &str, force: bool) -> Result<bool, Refusal> {
    let moved = record
        .verified_tip
        .as_deref()
        .is_some_and(|tip| tip != run_tip);
    let accepted_on_footer = record.verify_command.is_none() && record.verify.is_none();
    let verified = record.outcome == Some(Outcome::Pass)
        && (record.verify.as_ref().is_some_and(|v| v.passed) || accepted_on_footer)
        && !moved;
    if !verified && !force {
        let reason = if moved {
            format!(
                "run {}'s branch moved since verify passed on {}",
                record.run,
                record.verified_tip.as_deref().unwrap_or_default()
            )
        } else {
            unverified_reason(record)
        };
        return Err(Refusal::Unverified(reason));
    }
    Ok(verified)
}

fn unverified_reason(record: &RunRecord) -> String {
    let run = &record.run;
    match (&record.verify, record.outcome) {
        (Some(v), _) if !v.passed => {
            format!("run {run} failed verify ({})", v.grounds())
        }
        (None, Some(Outcome::Pass)) => {
            format!("run {run} has no verify result (it had no verify command)")
        }
        (_, Some(outcome)) => format!(
            "run {run} ended {} ({})",
            record.phase.as_str(),
            serde_json::to_value(outcome)
                .ok()
                .and_then(|v| v.as_str().map(String::from))
                .unwrap_or_default()
        ),
        (_, None) => format!("run {run} has no outcome"),
    }
}

/// How a run's commits land on the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    /// One commit with the target as its only parent.
    pub squash: bool,
    /// `merge`, `squash`, or `range` (the target did not contain the run's base: exactly
    /// base..tip is applied, as one commit).
    pub applied_as: &'static str,
}

impl Shape {
    /// A target that contains the run's base gets the branch merged in (or squashed, on
    /// request). One that does not (reset below the base, another branch) gets exactly the
    /// run's own change as one commit: never the history the branch was cut from.
    pub fn of(contains_base: bool, squash_requested: bool) -> Shape {
        match (contains_base, squash_requested) {
            (false, _) => Shape {
                squash: true,
                applied_as: "range",
            },
            (true, true) => Shape {
                squash: true,
                applied_as: "squash",
            },
            (true, false) => Shape {
                squash: false,
                applied_as: "merge",
            },
        }
    }
}

/// The verify command to run again on the merged tree: a verified run whose target moved
/// since its base.
pub fn reverify(record: &RunRecord, verified: bool, target_is_base: bool) -> Option<&str> {
    record
        .verify_command
        .as_deref()
        .filter(|_| verified && !target_is_base)
}

/// What `worktree.cleanup` allows once a run is integrated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cleanup {
    pub remove_worktree: bool,
    pub delete_branch: bool,
}

/// `never` keeps everything; `conservative` removes the worktree and keeps the branch;
/// `eager` removes both. Either only when the worktree holds nothing uncommitted and its
/// commits are kept by `refs/crew/attempts/<run>` — cleanup never loses work.
pub fn cleanup(policy: WorktreeCleanup, worktree_clean: bool, commits_kept: bool) -> Cleanup {
    let safe = worktree_clean && commits_kept;
    match policy {
        WorktreeCleanup::Eager => Cleanup {
            remove_worktree: safe,
            delete_branch: safe,
        },
        WorktreeCleanup::Conservative => Cleanup {
            remove_worktree: safe,
            delete_branch: false,
        },
        WorktreeCleanup::Never => Cleanup {
            remove_worktree: false,
            delete_branch: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_note_is_one_line_with_run_first_and_the_spec_fields() {
        let record = RunRecord::example();
        let note = RunNote::of(&record, "2026-01-01T00:00:00Z", "A <a@x>");
        let line = note.to_line();
        assert!(line.starts_with("{\"run\":\"r\""), "{line}");
        assert_eq!(line.matches('\n').count(), 1);
        let value: Value = serde_json::from_str(&line).unwrap();
        for key in [
            "run",
            "task",
            "role",
            "backend",
            "model",
            "effort",
            "tier",
            "scope",
            "base",
            "attempts",
            "footer",
            "verify",
            "integrated_at",
            "integrated_by",
            "gates",
        ] {
            assert!(value.get(key).is_some(), "missing {key}");
        }
        assert!(value.get("forced_unverified").is_none());
    }

    #[test]
    fn the_state_file_keeps_other_runs_and_recounts_the_roster() {
        let mut a = RunRecord::example();
        a.model = Some("m1".into());
        let note = RunNote::of(&a, "2026-01-01T00:00:00Z", "A");
        let first = state_file(None, &a, &note, true).unwrap();
        let mut b = RunRecord::example();
        b.run = "s".into();
        b.model = Some("m2".into());
        let mut note_b = RunNote::of(&b, "2026-01-02T00:00:00Z", "A");
        note_b.forced_unverified = true;
        let second = state_file(Some(first.as_bytes()), &b, &note_b, false).unwrap();
        // Integrating `a` again replaces its entry.
        let third = state_file(Some(second.as_bytes()), &a, &note, true).unwrap();
        let value: Value = serde_json::from_str(&third).unwrap();
        let runs: Vec<&str> = value["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["run"].as_str().unwrap())
            .collect();
        assert_eq!(runs, ["r", "s"]);
        let script = &value["roster"]["backends"]["script"];
        assert_eq!(script["integrated_runs"], 2);
        assert_eq!(script["verified_runs"], 1);
        assert_eq!(script["models"], json!(["m1", "m2"]));
        assert_eq!(script["session_reuse"], true);
        assert_eq!(value["roster"]["models"]["m2"]["integrated_runs"], 1);
        assert!(!third.contains("session\""), "no session ids: {third}");
    }

    #[test]
    fn a_state_file_that_is_not_ours_is_refused_not_overwritten() {
        let r = RunRecord::example();
        let note = RunNote::of(&r, "t", "A");
        assert!(state_file(Some(b"[1,2]"), &r, &note, false).is_err());
        assert!(state_file(Some(b"{nope"), &r, &note, false).is_err());
        assert!(state_file(Some(br#"{"runs": 3}"#), &r, &note, false).is_err());
        let kept = state_file(Some(br#"{"owner": "team"}"#), &r, &note, false).unwrap();
        assert!(kept.contains("\"owner\": \"team\""));
        assert!(lists_run(kept.as_bytes(), "r"));
        assert!(!lists_run(kept.as_bytes(), "s"));
        assert!(!lists_run(b"nope", "r"));
    }

    #[test]
    fn cleanup_never_removes_what_is_not_kept() {
        use WorktreeCleanup::{Conservative, Eager, Never};
        assert_eq!(
            cleanup(Eager, true, true),
            Cleanup {
                remove_worktree: true,
                delete_branch: true
            }
        );
        assert!(!cleanup(Eager, false, true).remove_worktree);
        assert!(!cleanup(Eager, true, false).delete_branch);
        assert!(!cleanup(Conservative, true, true).delete_branch);
        assert!(cleanup(Conservative, true, true).remove_worktree);
        assert!(!cleanup(Never, true, true).remove_worktree);
    }

    #[test]
    fn a_run_lands_only_with_commits_and_a_verdict_for_its_tip() {
        let mut record = RunRecord::example();
        record.role = crate::core::scope::Role::Review;
        assert!(matches!(
            admit_commits(&record, true),
            Err(Refusal::Nothing(m)) if m.contains("its manifest")
        ));
        assert!(admit_commits(&record, false).is_ok());
        record.outcome = Some(Outcome::Pass);
        record.verify_command = Some("t".into());
        record.verify = Some(Verify {
            command: "t".into(),
            reward: 1.0,
            passed: true,
            problem: None,
            decided_by: Some(crate::core::record::DecidedBy::Exit),
            exit_code: Some(0),
        });
        record.verified_tip = Some("aa".into());
        assert!(verdict(&record, "aa", false).unwrap());
        assert!(matches!(
            verdict(&record, "bb", false),
            Err(Refusal::Unverified(m)) if m.contains("moved since verify passed on aa")
        ));
        assert!(!verdict(&record, "bb", true).unwrap());
        record.verify.as_mut().unwrap().passed = false;
        assert!(matches!(
            verdict(&record, "aa", false),
            Err(Refusal::Unverified(m)) if m.contains("failed verify")
        ));
        // No verify command: accepted on its footer, at the commit it was accepted at.
        record.verify = None;
        record.verify_command = None;
        assert!(verdict(&record, "aa", false).unwrap());
    }

    #[test]
    fn the_shape_of_a_landing_and_when_the_merge_is_verified_again() {
        assert_eq!(Shape::of(true, false).applied_as, "merge");
        assert!(!Shape::of(true, false).squash);
        assert_eq!(Shape::of(true, true).applied_as, "squash");
        assert_eq!(
            Shape::of(false, false),
            Shape {
                squash: true,
                applied_as: "range"
            }
        );
        let mut record = RunRecord::example();
        record.verify_command = Some("make test".into());
        assert_eq!(reverify(&record, true, false), Some("make test"));
        assert_eq!(reverify(&record, true, true), None);
        assert_eq!(reverify(&record, false, false), None);
    }
}
