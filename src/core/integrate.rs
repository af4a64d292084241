//! Integrating a run, decided in pure code: whether it may land ([`admit`]: every refusal
//! before the merge, as a value), what the merge is built as ([`onto`]: merge, squash or
//! range, and the new `docs/state/crew.json`), what follows it ([`after_merge`]: the audit
//! of the merged tree, the parents, whether the merged tree is verified again; then
//! [`reverified`] and [`advance_failed`]), a merge made by hand ([`by_hand`]), the run
//! record note that goes on the integration commit and on every worker commit, and what
//! cleanup may remove. `run::integrate` gathers the facts and applies the [`Landing`]
//! these return; `--dry-run` prints that same value, unapplied.

use std::path::PathBuf;

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::flight::WorktreeCleanup;
use super::record::{Footer, Integration, Outcome, RunRecord, Verify};
use super::scope::Change;
use super::seal::Sealed;

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
#[derive(Debug, Clone, PartialEq)]
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
    /// The fleet's remote refused the landing's push (a hook, a protected ref): what it
    /// said. Nothing moved there.
    RemoteRefused(String),
    /// The fleet's remote cannot be fetched from or pushed to: what git said.
    Unreachable(String),
    /// The task's claim on the fleet's remote is another run's now (this run's lease ran
    /// out and another machine took the task over).
    ClaimTakenOver(String),
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cleanup {
    pub remove_worktree: bool,
    pub delete_branch: bool,
    /// Why the worktree stays whatever the policy (`None`: nothing in it is at risk).
    pub kept_because: Option<String>,
}

/// `never` keeps everything; `conservative` removes the worktree and keeps the branch;
/// `eager` removes both. Either only when the worktree holds nothing uncommitted and its
/// commits are kept by `refs/crew/attempts/<run>` — cleanup never loses work.
pub fn cleanup(policy: WorktreeCleanup, worktree_clean: bool, commits_kept: bool) -> Cleanup {
    let safe = worktree_clean && commits_kept;
    let kept_because = if !worktree_clean {
        Some("the worktree has uncommitted changes (or a repository checked out in it)".into())
    } else if !commits_kept {
        Some("the worktree has commits that were not integrated".into())
    } else {
        None
    };
    let (remove_worktree, delete_branch) = match policy {
        WorktreeCleanup::Eager => (safe, safe),
        WorktreeCleanup::Conservative => (safe, false),
        WorktreeCleanup::Never => (false, false),
    };
    Cleanup {
        remove_worktree,
        delete_branch,
        kept_because,
    }
}

/// What the caller asked of integrate.
#[derive(Debug, Clone, PartialEq)]
pub struct Asked {
    /// `--into`: the branch to land on.
    pub into: Option<String>,
    pub squash: bool,
    pub force_unverified: bool,
    /// Decide everything and say what would land; change nothing.
    pub dry_run: bool,
    /// Whether the run's backend keeps sessions (for the roster).
    pub session_reuse: bool,
    /// `worktree.cleanup`.
    pub cleanup: WorktreeCleanup,
}

/// What integrate found out about a run before deciding whether it may land.
#[derive(Debug, Clone)]
pub struct Facts {
    /// The run asked for.
    pub run: String,
    pub asked: Asked,
    /// Its live pointer is there: it is still in flight.
    pub live: bool,
    /// Its record (`None`: there is none).
    pub record: Option<RunRecord>,
    /// The integration the record names still stands: its commit is on a branch. One
    /// merged into a branch since deleted landed nowhere, and the run may be integrated.
    pub standing: bool,
    /// Its seal (`None`: it has none).
    pub seal: Option<Sealed>,
    /// Its commits, looked at only once [`admit_record`] takes the record (a record its
    /// seal does not vouch for names a branch and a base nobody checked). `None`: neither
    /// its branch nor `refs/crew/attempts/<run>` holds them.
    pub branch: Option<Branch>,
}

/// A run's commits, against the branch it would land on.
#[derive(Debug, Clone, PartialEq)]
pub struct Branch {
    /// The run's tip (its branch's, or what `refs/crew/attempts/<run>` keeps) and base,
    /// as full object ids.
    pub tip: String,
    pub base: String,
    /// The branch HEAD is on (`None`: detached), the target of a run cut from no branch.
    pub head: Option<String>,
    /// The tip descends from the base (a branch that does not was rewritten).
    pub descends: bool,
    /// The tip of the [`target`] branch (`None`: there is no such branch).
    pub target: Option<String>,
    /// The target contains the tip already: the run was merged by hand.
    pub merged: bool,
    /// Every path the branch changed itself, from its own base, whatever the hooks let
    /// through: the audit's input. Not looked at for a run merged by hand, which is
    /// audited from the commit that brought it in.
    pub changes: Vec<Change>,
}

/// The branch a run lands on: `--into`, else the branch it was cut from, else HEAD's.
pub fn target(asked: &Asked, record: &RunRecord, head: Option<&str>) -> Option<String> {
    (asked.into.clone())
        .or_else(|| record.base_ref.clone())
        .or_else(|| head.map(String::from))
}

/// The record integrate may decide on: a run that has ended, that is not integrated
/// already (into a branch that still holds it), and whose record agrees with its seal —
/// every fact decided on later must be the one dispatch sealed.
pub fn admit_record(facts: &Facts) -> Result<&RunRecord, Refusal> {
    let run = &facts.run;
    if facts.live {
        let phase = facts
            .record
            .as_ref()
            .map_or("in flight", |r| r.phase.as_str());
        return Err(Refusal::Live(format!("run {run} is still {phase}")));
    }
    let Some(record) = &facts.record else {
        return Err(Refusal::NotFound(format!("no run {run}")));
    };
    if let Some(done) = &record.integration
        && facts.standing
    {
        return Err(already(run, done));
    }
    let Some(sealed) = &facts.seal else {
        return Err(Refusal::Tampered(format!(
            "run {run} has no seal (refs/crew/sealed/{run}): nothing vouches for its record"
        )));
    };
    let differs = sealed.differences(record);
    if !differs.is_empty() {
        return Err(Refusal::Tampered(format!(
            "run {run}'s record disagrees with its seal on {}: it was changed after dispatch",
            differs.join(", ")
        )));
    }
    Ok(record)
}

/// Whether a run may land, and how it goes on: every refusal before the merge. A run its
/// target contains already is recorded as merged by hand, never refused forever.
pub fn admit(facts: &Facts) -> Result<Plan, Refusal> {
    let record = admit_record(facts)?;
    let run = &facts.run;
    let Some(branch) = &facts.branch else {
        return Err(Refusal::NotFound(format!(
            "run {run}'s branch {} is gone",
            record.branch
        )));
    };
    admit_commits(record, branch.tip == branch.base)?;
    let Some(into) = target(&facts.asked, record, branch.head.as_deref()) else {
        return Err(Refusal::NoTarget(
            "the run was not cut from a branch and HEAD is detached".into(),
        ));
    };
    // A branch that does not descend from its base was rewritten (a parentless commit, a
    // rebase onto something else): what it would bring is not the run's work.
    if !branch.descends {
        return Err(Refusal::Rewritten(format!(
            "run {run}'s branch {} no longer descends from its base {}: it was rewritten",
            record.branch, branch.base
        )));
    }
    let route = if let (true, Some(target)) = (branch.merged, &branch.target) {
        Route::ByHand {
            target: target.clone(),
        }
    } else {
        let violations = audit(record, &branch.changes);
        if !violations.is_empty() {
            return Err(Refusal::Scope(violations));
        }
        Route::Merge {
            verified: verdict(record, &branch.tip, facts.asked.force_unverified)?,
        }
    };
    let mut record = record.clone();
    // Merged into a branch that is gone (a trial merge, say): it landed nowhere.
    record.integration = None;
    Ok(Plan {
        run: run.clone(),
        record,
        into,
        base: branch.base.clone(),
        tip: branch.tip.clone(),
        route,
        asked: facts.asked.clone(),
    })
}

/// The scope audit of `changes` against the run's fences: each path outside them, with
/// the reason.
pub fn audit(record: &RunRecord, changes: &[Change]) -> Vec<String> {
    super::scope::check_commit(&record.identity(), changes)
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// What [`admit`] decided: the run lands on `into`, by a merge integrate builds or, merged
/// by hand before, recorded from the commit that brought it in.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub run: String,
    /// The run's record, as its seal vouches for it (an integration that no longer
    /// stands forgotten).
    pub record: RunRecord,
    pub into: String,
    pub base: String,
    pub tip: String,
    pub route: Route,
    pub asked: Asked,
}

/// How a run lands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// A merge onto the target's tip, built away from anyone's checkout. `verified`:
    /// false when `--force-unverified` lets an unverified run through (its note says so).
    Merge { verified: bool },
    /// The target contains the run already: the commit that brought it in is audited and
    /// recorded as the hooks record a hand merge. `target`: the target's tip that
    /// contains it.
    ByHand { target: String },
}

impl Plan {
    /// Verified, or `--force-unverified` (a run merged by hand is judged by its record).
    pub fn verified(&self) -> bool {
        !matches!(self.route, Route::Merge { verified: false })
    }

    /// The run record note integrate writes, stamped `at` by `by`.
    pub fn note(&self, at: &str, by: &str, gates: Vec<Value>) -> RunNote {
        let mut note = RunNote::of(&self.record, at, by);
        note.forced_unverified = !self.verified();
        note.gates = gates;
        note
    }
}

/// Under the integrate turn, before anything is built: whoever held the turn before may
/// have integrated this very run (`standing`: the record's integration, when it still
/// stands).
pub fn turn(plan: &Plan, standing: Option<&Integration>) -> Result<(), Refusal> {
    match standing {
        Some(done) => Err(already(&plan.run, done)),
        None => Ok(()),
    }
}

/// How often integrate builds the merge again on a target that moved under it.
pub const TRIES: usize = 5;

/// The target as integrate finds it each time it builds the merge.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// Its tip.
    pub tip: String,
    /// It contains the run's tip.
    pub contains_run: bool,
    /// It contains the run's base.
    pub contains_base: bool,
    /// Where it is checked out with uncommitted changes to tracked files.
    pub dirty_checkout: Option<PathBuf>,
    /// Its `docs/state/crew.json`.
    pub state_file: Option<Vec<u8>>,
}

/// What the merge is built as, on the target's tip.
#[derive(Debug, Clone, PartialEq)]
pub struct Onto {
    /// The target's tip the merge is built on.
    pub tip: String,
    pub shape: Shape,
    /// The merge base to use instead of the common ancestor: the run's base, for a target
    /// that does not contain it (exactly base..tip is applied).
    pub range_from: Option<String>,
    /// The new `docs/state/crew.json`, written inside the merge.
    pub state_file: String,
}

/// Whether the merge may be built on the target as it is now (`None`: the branch is
/// gone), and how. `note` is the run record note the state file lists the run with.
pub fn onto(plan: &Plan, note: &RunNote, target: Option<&Target>) -> Result<Onto, Refusal> {
    let (run, into) = (&plan.run, &plan.into);
    let Some(target) = target else {
        return Err(Refusal::NoTarget(format!("no branch {into}")));
    };
    if target.contains_run {
        return Err(Refusal::AlreadyIntegrated(format!(
            "{into} already contains run {run}'s commits (merged by hand?)"
        )));
    }
    if let Some(wt) = &target.dirty_checkout {
        return Err(Refusal::Dirty(wt.clone()));
    }
    if (target.state_file.as_deref()).is_some_and(|bytes| lists_run(bytes, run)) {
        // Landed before (an integrate that died before its bookkeeping, say).
        return Err(Refusal::AlreadyIntegrated(format!(
            "{into}'s {STATE_FILE} already lists run {run}"
        )));
    }
    let state = state_file(
        target.state_file.as_deref(),
        &plan.record,
        note,
        plan.asked.session_reuse,
    )
    .map_err(|e| Refusal::BadState(e.to_string()))?;
    Ok(Onto {
        tip: target.tip.clone(),
        shape: Shape::of(target.contains_base, plan.asked.squash),
        range_from: (!target.contains_base).then(|| plan.base.clone()),
        state_file: state,
    })
}

/// The merge integrate built: `T` is its tree, as the caller holds it.
#[derive(Debug, Clone, PartialEq)]
pub enum Built<T> {
    /// A clean merge, with every path it changes on the target's tip (the state file,
    /// git-crew's own, aside).
    Clean { tree: T, applied: Vec<Change> },
    /// The paths that conflict.
    Conflicts(Vec<String>),
}

/// What lands: the plan integrate applies, and what `--dry-run` prints of it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct Landing {
    pub run: String,
    pub task: String,
    pub into: String,
    /// The parents of the commit that lands (or that brought the run in).
    pub parents: Vec<String>,
    /// `merge`, `squash`, `range` (the target did not contain the run's base: exactly
    /// base..tip, as one commit), or — merged by hand — `merge` or `fast-forward`.
    pub applied_as: &'static str,
    /// Every path the target's tip changes (the state file aside).
    pub files: Vec<String>,
    /// Symlinks the run adds that point outside its scope (inside the repository).
    pub links_outside_scope: Vec<String>,
    /// Merged by hand before: recorded, not merged again.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub by_hand: bool,
    /// Lands without a passing verify (the note says so).
    pub forced_unverified: bool,
    /// The verify command run again on the merged tree before the target moves: the
    /// target moved since the run's base (`null`: it did not, or the run is not verified).
    pub reverify: Option<String>,
    /// One commit with the target as its only parent.
    #[serde(skip)]
    pub squash: bool,
    /// The message of the commit integrate writes.
    #[serde(skip)]
    pub message: String,
}

/// What follows the merge: a conflict or a path of the merged tree outside the scope
/// refuses it (the audited diff is the applied diff); otherwise the commit to write, and
/// whether the merged tree is verified again before the target moves.
pub fn after_merge<T>(plan: &Plan, onto: &Onto, built: Built<T>) -> Result<(T, Landing), Refusal> {
    let record = &plan.record;
    let (tree, applied) = match built {
        Built::Conflicts(paths) => {
            return Err(Refusal::Conflict {
                into: plan.into.clone(),
                branch: record.branch.clone(),
                paths,
            });
        }
        Built::Clean { tree, applied } => (tree, applied),
    };
    let violations = audit(record, &applied);
    if !violations.is_empty() {
        return Err(Refusal::Scope(violations));
    }
    let squash = onto.shape.squash;
    let parents = match squash {
        true => vec![onto.tip.clone()],
        false => vec![onto.tip.clone(), plan.tip.clone()],
    };
    let landing = Landing {
        run: plan.run.clone(),
        task: record.task.clone(),
        into: plan.into.clone(),
        parents,
        applied_as: onto.shape.applied_as,
        links_outside_scope: super::scope::Scope::new(&record.scope)
            .map(|s| super::scope::links_leaving_scope(&s, &applied))
            .unwrap_or_default(),
        files: applied.into_iter().map(|c| c.path).collect(),
        by_hand: false,
        forced_unverified: !plan.verified(),
        reverify: reverify(record, plan.verified(), onto.tip == plan.base).map(String::from),
        squash,
        message: message(record, &plan.into, squash),
    };
    Ok((tree, landing))
}

/// How the verify of the merged tree came out.
#[derive(Debug, Clone, PartialEq)]
pub enum Reverified {
    Done(Verify),
    /// It ran out of time.
    Timeout,
    /// The throwaway checkout was not readied (why): nothing was verified.
    SetupFailed(String),
}

/// A verify of the merged tree that did not pass refuses the landing; the target is
/// untouched.
pub fn reverified(plan: &Plan, outcome: Reverified) -> Result<Verify, Refusal> {
    let (run, into) = (&plan.run, &plan.into);
    match outcome {
        Reverified::Done(result) if result.passed => Ok(result),
        Reverified::Done(result) => Err(Refusal::MergedVerify(format!(
            "verify failed on the merge of run {run} onto {into} ({}); {into} is untouched",
            result.grounds()
        ))),
        Reverified::Timeout => Err(Refusal::MergedVerify(format!(
            "verify timed out on the merge of run {run} onto {into}; {into} is untouched"
        ))),
        Reverified::SetupFailed(problem) => Err(Refusal::MergedVerify(format!(
            "the merge of run {run} onto {into} was not verified: {problem}; {into} is untouched"
        ))),
    }
}

/// What follows a target that git would not advance.
#[derive(Debug, Clone, PartialEq)]
pub enum Advance {
    /// The target moved under us (someone committed): build the merge again.
    Retry,
    Refused(Refusal),
    /// Nothing explains it: the error stands.
    Failed,
}

/// git would not advance the target (`error`): a target that moved is merged again; a
/// checkout git would not fast-forward (an untracked file in the way, say) refuses, with
/// nothing moved.
pub fn advance_failed(target_moved: bool, checkout: Option<PathBuf>, error: String) -> Advance {
    match (target_moved, checkout) {
        (true, _) => Advance::Retry,
        (false, Some(wt)) => Advance::Refused(Refusal::Checkout(wt, error)),
        (false, None) => Advance::Failed,
    }
}

/// The target moved under every one of the [`TRIES`].
pub fn kept_moving(plan: &Plan) -> Refusal {
    let (run, into) = (&plan.run, &plan.into);
    Refusal::KeptMoving(format!(
        "{into} kept moving while run {run} was being integrated; nothing was changed"
    ))
}

/// A run merged by hand, as integrate found it in its target.
#[derive(Debug, Clone, PartialEq)]
pub struct Hand {
    /// The commit on the target's first-parent line that brought the run in.
    pub commit: String,
    pub parents: Vec<String>,
    /// `commit` is a commit of the run's branch (a fast-forward).
    pub fast_forward: bool,
    /// The paths `commit` changed (from its first parent, or from the run's base for a
    /// fast-forward).
    pub files: Vec<String>,
    /// Those outside the run's scope, each with the reason.
    pub violations: Vec<String>,
}

/// A run merged by hand is recorded as the hooks record a hand merge — unless the commit
/// that brought it in changed paths outside its scope (a scope rejection).
pub fn by_hand(plan: &Plan, hand: Hand) -> Result<Landing, Refusal> {
    if !hand.violations.is_empty() {
        return Err(Refusal::HandScope {
            run: plan.run.clone(),
            commit: hand.commit,
            violations: hand.violations,
        });
    }
    Ok(Landing {
        run: plan.run.clone(),
        task: plan.record.task.clone(),
        into: plan.into.clone(),
        parents: hand.parents,
        applied_as: if hand.fast_forward {
            "fast-forward"
        } else {
            "merge"
        },
        files: hand.files,
        links_outside_scope: Vec::new(),
        by_hand: true,
        // Merged without the verdict integrate would have asked for, as
        // `--force-unverified` is recorded.
        forced_unverified: !verdict(&plan.record, &plan.tip, true).unwrap_or(false),
        reverify: None,
        squash: false,
        message: String::new(),
    })
}

/// A run integrated already, into `done.into`.
pub fn already(run: &str, done: &Integration) -> Refusal {
    Refusal::AlreadyIntegrated(format!(
        "run {run} was integrated into {} as {}",
        done.into, done.commit
    ))
}

impl Refusal {
    /// A scope rejection of the run's own branch, which the ledger counts (once per run)
    /// unless nothing may change (`--dry-run`). One by hand is recorded where it is found.
    pub fn counts_as_scope_reject(&self) -> bool {
        matches!(self, Refusal::Scope(_))
    }
}

/// The message of the commit integrate writes: the run, the head of its footer's result,
/// and trailers naming the run and task.
pub fn message(record: &RunRecord, into: &str, squash: bool) -> String {
    let how = if squash { "squash" } else { "merge" };
    let mut text = format!(
        "crew: {how} run {} (task {}) into {into}\n",
        record.run, record.task
    );
    if let Some(footer) = &record.footer {
        let result: Vec<&str> = footer.result.lines().take(12).collect();
        if !result.is_empty() {
            text.push('\n');
            text.push_str(&result.join("\n"));
            text.push('\n');
        }
    }
    text.push_str(&format!(
        "\nCrew-Run: {}\nCrew-Task: {}\n",
        record.run, record.task
    ));
    text
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
                delete_branch: true,
                kept_because: None,
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

    // The rules of admit, onto, after_merge and what follows: a passing run, then each
    // fact that refuses it.

    use crate::core::scope::ChangeKind;

    const BASE: &str = "1111111111111111111111111111111111111111";
    const TIP: &str = "2222222222222222222222222222222222222222";
    const MAIN: &str = "3333333333333333333333333333333333333333";

    fn passed() -> Verify {
        Verify {
            command: "make test".into(),
            reward: 1.0,
            passed: true,
            problem: None,
            decided_by: Some(crate::core::record::DecidedBy::Exit),
            exit_code: Some(0),
        }
    }

    /// A run that passed verify at its tip, cut from main.
    fn verified_run() -> RunRecord {
        let mut record = RunRecord::example();
        record.base = BASE.into();
        record.base_ref = Some("main".into());
        record.verify_command = Some("make test".into());
        record.verify = Some(passed());
        record.verified_tip = Some(TIP.into());
        record
    }

    fn asked() -> Asked {
        Asked {
            into: None,
            squash: false,
            force_unverified: false,
            dry_run: false,
            session_reuse: false,
            cleanup: WorktreeCleanup::Conservative,
        }
    }

    /// Everything integrate gathers about `record`, sealed as it stands, its branch one
    /// commit inside its scope on top of main's old tip.
    fn facts_of(record: RunRecord) -> Facts {
        Facts {
            run: record.run.clone(),
            asked: asked(),
            live: false,
            seal: Some(Sealed::of(&record).with_verdict(&record)),
            record: Some(record),
            standing: false,
            branch: Some(Branch {
                tip: TIP.into(),
                base: BASE.into(),
                head: Some("main".into()),
                descends: true,
                target: Some(MAIN.into()),
                merged: false,
                changes: vec![Change::new("src/a.rs", ChangeKind::Added)],
            }),
        }
    }

    fn facts() -> Facts {
        facts_of(verified_run())
    }

    /// Seals the record as it stands now (a change made before dispatch sealed it).
    fn reseal(facts: &mut Facts) {
        let record = facts.record.as_ref().unwrap();
        facts.seal = Some(Sealed::of(record).with_verdict(record));
    }

    fn branch(facts: &mut Facts) -> &mut Branch {
        facts.branch.as_mut().unwrap()
    }

    fn refused(facts: &Facts) -> Refusal {
        admit(facts).unwrap_err()
    }

    fn plan() -> Plan {
        admit(&facts()).unwrap()
    }

    fn integration() -> Integration {
        Integration {
            commit: "c0ffee".into(),
            into: "main".into(),
            at: "t".into(),
            by: "A".into(),
            squash: false,
            forced_unverified: false,
        }
    }

    #[test]
    fn a_verified_run_is_admitted_to_merge_onto_the_branch_it_was_cut_from() {
        let plan = plan();
        assert_eq!(plan.route, Route::Merge { verified: true });
        assert_eq!((plan.run.as_str(), plan.into.as_str()), ("r", "main"));
        assert_eq!((plan.base.as_str(), plan.tip.as_str()), (BASE, TIP));
        assert!(plan.verified());
        let note = plan.note(
            "2026-01-01T00:00:00Z",
            "A <a@x>",
            vec![json!({"gate": "g"})],
        );
        assert!(!note.forced_unverified);
        assert_eq!(note.gates, vec![json!({"gate": "g"})]);
    }

    #[test]
    fn a_run_in_flight_is_refused_first() {
        let mut facts = facts();
        facts.live = true;
        facts.seal = None;
        facts.record.as_mut().unwrap().phase = crate::core::record::Phase::Verifying;
        assert_eq!(
            refused(&facts),
            Refusal::Live("run r is still verifying".into())
        );
        facts.record = None;
        assert_eq!(
            refused(&facts),
            Refusal::Live("run r is still in flight".into())
        );
    }

    #[test]
    fn a_run_with_no_record_is_not_found() {
        let mut facts = facts();
        facts.record = None;
        assert_eq!(refused(&facts), Refusal::NotFound("no run r".into()));
    }

    #[test]
    fn an_integration_that_stands_refuses_and_one_that_landed_nowhere_is_forgotten() {
        let mut facts = facts();
        facts.record.as_mut().unwrap().integration = Some(integration());
        facts.standing = true;
        assert_eq!(
            refused(&facts),
            Refusal::AlreadyIntegrated("run r was integrated into main as c0ffee".into())
        );
        // Merged into a branch since deleted: the run may land, and its record no longer
        // says it did.
        facts.standing = false;
        assert_eq!(admit(&facts).unwrap().record.integration, None);
    }

    #[test]
    fn a_record_its_seal_does_not_vouch_for_is_tampered() {
        let mut facts = facts();
        facts.seal = None;
        // Its branch is not even looked at: what the record names is not trusted.
        facts.branch = None;
        assert_eq!(
            refused(&facts),
            Refusal::Tampered(
                "run r has no seal (refs/crew/sealed/r): nothing vouches for its record".into()
            )
        );
        let mut facts = self::facts();
        facts.record.as_mut().unwrap().scope = vec!["**".into()];
        assert_eq!(
            refused(&facts),
            Refusal::Tampered(
                "run r's record disagrees with its seal on scope: it was changed after dispatch"
                    .into()
            )
        );
        assert!(admit_record(&facts).is_err());
        assert!(admit_record(&self::facts()).is_ok());
    }

    #[test]
    fn a_run_whose_commits_are_gone_is_not_found() {
        let mut facts = facts();
        facts.branch = None;
        assert_eq!(
            refused(&facts),
            Refusal::NotFound("run r's branch crew/t/r is gone".into())
        );
    }

    #[test]
    fn a_branch_with_no_commits_of_its_own_has_nothing_to_integrate() {
        let mut facts = facts();
        branch(&mut facts).tip = BASE.into();
        assert_eq!(
            refused(&facts),
            Refusal::Nothing("run r made no commits: there is nothing to integrate".into())
        );
    }

    #[test]
    fn the_target_is_into_else_the_branch_it_was_cut_from_else_heads() {
        let mut facts = facts();
        facts.record.as_mut().unwrap().base_ref = None;
        reseal(&mut facts);
        branch(&mut facts).head = Some("dev".into());
        assert_eq!(admit(&facts).unwrap().into, "dev");
        facts.asked.into = Some("release".into());
        assert_eq!(admit(&facts).unwrap().into, "release");
        facts.asked.into = None;
        branch(&mut facts).head = None;
        assert_eq!(
            refused(&facts),
            Refusal::NoTarget("the run was not cut from a branch and HEAD is detached".into())
        );
        assert_eq!(
            target(&asked(), &verified_run(), Some("dev")).as_deref(),
            Some("main")
        );
    }

    #[test]
    fn a_branch_that_does_not_descend_from_its_base_was_rewritten() {
        let mut facts = facts();
        branch(&mut facts).descends = false;
        assert_eq!(
            refused(&facts),
            Refusal::Rewritten(format!(
                "run r's branch crew/t/r no longer descends from its base {BASE}: it was rewritten"
            ))
        );
    }

    #[test]
    fn a_run_its_target_contains_is_recorded_as_merged_by_hand_whatever_its_verdict() {
        let mut facts = facts();
        branch(&mut facts).merged = true;
        // The hand merge is audited from the commit that brought it in, not from here;
        // and it is judged by its record, never refused for it.
        branch(&mut facts).changes = vec![Change::new("docs/x.md", ChangeKind::Added)];
        facts
            .record
            .as_mut()
            .unwrap()
            .verify
            .as_mut()
            .unwrap()
            .passed = false;
        reseal(&mut facts);
        assert_eq!(
            admit(&facts).unwrap().route,
            Route::ByHand {
                target: MAIN.into()
            }
        );
    }

    #[test]
    fn a_branch_that_changed_paths_outside_its_scope_is_a_scope_violation() {
        let mut facts = facts();
        branch(&mut facts)
            .changes
            .push(Change::new("docs/x.md", ChangeKind::Added));
        match refused(&facts) {
            Refusal::Scope(violations) => {
                assert_eq!(violations.len(), 1, "{violations:?}");
                assert!(violations[0].contains("docs/x.md"), "{violations:?}");
            }
            other => panic!("{other:?}"),
        }
        assert!(refused(&facts).counts_as_scope_reject());
    }

    #[test]
    fn an_unverified_run_is_refused_unless_forced_and_the_note_says_so() {
        let mut facts = facts();
        // Its branch moved since verify passed.
        branch(&mut facts).tip = "4444444444444444444444444444444444444444".into();
        assert!(matches!(
            refused(&facts),
            Refusal::Unverified(m) if m.contains("moved since verify passed")
        ));
        facts.asked.force_unverified = true;
        let plan = admit(&facts).unwrap();
        assert_eq!(plan.route, Route::Merge { verified: false });
        assert!(plan.note("t", "A", Vec::new()).forced_unverified);
    }

    #[test]
    fn the_first_refusal_in_order_wins() {
        // Tampered, gone, no commits, rewritten, out of scope and unverified at once: the
        // seal speaks first.
        let mut facts = facts();
        facts
            .record
            .as_mut()
            .unwrap()
            .verify
            .as_mut()
            .unwrap()
            .passed = false;
        branch(&mut facts).descends = false;
        branch(&mut facts)
            .changes
            .push(Change::new("docs/x.md", ChangeKind::Added));
        assert!(matches!(refused(&facts), Refusal::Tampered(_)));
        reseal(&mut facts);
        assert!(matches!(refused(&facts), Refusal::Rewritten(_)));
        branch(&mut facts).descends = true;
        assert!(matches!(refused(&facts), Refusal::Scope(_)));
        branch(&mut facts).changes.pop();
        assert!(matches!(refused(&facts), Refusal::Unverified(_)));
    }

    #[test]
    fn a_run_integrated_while_it_waited_its_turn_is_refused() {
        let plan = plan();
        assert_eq!(turn(&plan, None), Ok(()));
        assert_eq!(
            turn(&plan, Some(&integration())),
            Err(Refusal::AlreadyIntegrated(
                "run r was integrated into main as c0ffee".into()
            ))
        );
    }

    fn main_tip() -> Target {
        Target {
            tip: MAIN.into(),
            contains_run: false,
            contains_base: true,
            dirty_checkout: None,
            state_file: None,
        }
    }

    fn onto_main(plan: &Plan, target: Option<&Target>) -> Result<Onto, Refusal> {
        let note = plan.note("2026-01-01T00:00:00Z", "A", Vec::new());
        onto(plan, &note, target)
    }

    #[test]
    fn the_merge_is_built_on_the_target_as_it_is_now() {
        let plan = plan();
        let built = onto_main(&plan, Some(&main_tip())).unwrap();
        assert_eq!(built.tip, MAIN);
        assert_eq!(built.shape, Shape::of(true, false));
        assert_eq!(built.range_from, None);
        assert!(lists_run(built.state_file.as_bytes(), "r"));
        // A target below the run's base gets exactly base..tip.
        let below = Target {
            contains_base: false,
            ..main_tip()
        };
        let built = onto_main(&plan, Some(&below)).unwrap();
        assert_eq!(built.shape.applied_as, "range");
        assert_eq!(built.range_from.as_deref(), Some(BASE));
        let mut squash = plan.clone();
        squash.asked.squash = true;
        assert_eq!(
            onto_main(&squash, Some(&main_tip()))
                .unwrap()
                .shape
                .applied_as,
            "squash"
        );
    }

    #[test]
    fn the_target_refuses_a_merge_when_it_is_gone_has_the_run_or_is_dirty() {
        let plan = plan();
        assert_eq!(
            onto_main(&plan, None),
            Err(Refusal::NoTarget("no branch main".into()))
        );
        let has_run = Target {
            contains_run: true,
            ..main_tip()
        };
        assert_eq!(
            onto_main(&plan, Some(&has_run)),
            Err(Refusal::AlreadyIntegrated(
                "main already contains run r's commits (merged by hand?)".into()
            ))
        );
        let dirty = Target {
            dirty_checkout: Some(PathBuf::from("/lead")),
            ..main_tip()
        };
        assert_eq!(
            onto_main(&plan, Some(&dirty)),
            Err(Refusal::Dirty(PathBuf::from("/lead")))
        );
        let listed = Target {
            state_file: Some(br#"{"runs": [{"run": "r"}]}"#.to_vec()),
            ..main_tip()
        };
        assert_eq!(
            onto_main(&plan, Some(&listed)),
            Err(Refusal::AlreadyIntegrated(format!(
                "main's {STATE_FILE} already lists run r"
            )))
        );
        let foreign = Target {
            state_file: Some(b"[1, 2]".to_vec()),
            ..main_tip()
        };
        assert!(matches!(
            onto_main(&plan, Some(&foreign)),
            Err(Refusal::BadState(m)) if m.contains("not a JSON object")
        ));
    }

    fn clean(applied: Vec<Change>) -> Built<&'static str> {
        Built::Clean {
            tree: "tree",
            applied,
        }
    }

    #[test]
    fn a_clean_merge_inside_the_scope_lands_with_its_parents_and_message() {
        let plan = plan();
        let onto = onto_main(&plan, Some(&main_tip())).unwrap();
        let mut link = Change::new("src/link", ChangeKind::Added);
        link.link_target = Some("docs/secret".into());
        let applied = vec![Change::new("src/a.rs", ChangeKind::Added), link];
        let (tree, landing) = after_merge(&plan, &onto, clean(applied)).unwrap();
        assert_eq!(tree, "tree");
        assert_eq!(landing.parents, [MAIN, TIP]);
        assert_eq!(landing.applied_as, "merge");
        assert!(!landing.squash);
        assert_eq!(landing.files, ["src/a.rs", "src/link"]);
        assert_eq!(landing.links_outside_scope, ["src/link -> docs/secret"]);
        assert!(!landing.by_hand && !landing.forced_unverified);
        assert!(
            landing
                .message
                .starts_with("crew: merge run r (task t) into main\n"),
            "{}",
            landing.message
        );
        assert!(landing.message.ends_with("\nCrew-Run: r\nCrew-Task: t\n"));
        // The target moved since the run's base: verified again.
        assert_eq!(landing.reverify.as_deref(), Some("make test"));

        // A squash has the target as its only parent.
        let mut squash = plan.clone();
        squash.asked.squash = true;
        let onto = onto_main(&squash, Some(&main_tip())).unwrap();
        let (_, landing) = after_merge(&squash, &onto, clean(Vec::new())).unwrap();
        assert_eq!(landing.parents, [MAIN]);
        assert!(landing.squash);
        assert!(landing.message.starts_with("crew: squash run r"));
    }

    #[test]
    fn the_merged_tree_is_verified_again_only_for_a_verified_run_whose_target_moved() {
        let plan = plan();
        let at_base = Target {
            tip: BASE.into(),
            ..main_tip()
        };
        let onto = onto_main(&plan, Some(&at_base)).unwrap();
        let (_, landing) = after_merge(&plan, &onto, clean(Vec::new())).unwrap();
        assert_eq!(landing.reverify, None);
        let mut forced = plan.clone();
        forced.route = Route::Merge { verified: false };
        let onto = onto_main(&forced, Some(&main_tip())).unwrap();
        let (_, landing) = after_merge(&forced, &onto, clean(Vec::new())).unwrap();
        assert_eq!(landing.reverify, None);
        assert!(landing.forced_unverified);
    }

    #[test]
    fn a_conflict_or_a_merged_tree_outside_the_scope_refuses() {
        let plan = plan();
        let onto = onto_main(&plan, Some(&main_tip())).unwrap();
        assert_eq!(
            after_merge(
                &plan,
                &onto,
                Built::<()>::Conflicts(vec!["src/a.rs".into()])
            )
            .unwrap_err(),
            Refusal::Conflict {
                into: "main".into(),
                branch: "crew/t/r".into(),
                paths: vec!["src/a.rs".into()],
            }
        );
        // The audited diff is the applied diff.
        let outside = clean(vec![Change::new("docs/x.md", ChangeKind::Modified)]);
        assert!(matches!(
            after_merge(&plan, &onto, outside).unwrap_err(),
            Refusal::Scope(v) if v.len() == 1 && v[0].contains("docs/x.md")
        ));
    }

    #[test]
    fn a_verify_of_the_merged_tree_that_does_not_pass_leaves_the_target_untouched() {
        let plan = plan();
        assert_eq!(reverified(&plan, Reverified::Done(passed())), Ok(passed()));
        let mut failed = passed();
        failed.passed = false;
        failed.exit_code = Some(1);
        assert!(matches!(
            reverified(&plan, Reverified::Done(failed)),
            Err(Refusal::MergedVerify(m))
                if m.starts_with("verify failed on the merge of run r onto main (")
                    && m.ends_with("); main is untouched")
        ));
        assert_eq!(
            reverified(&plan, Reverified::Timeout),
            Err(Refusal::MergedVerify(
                "verify timed out on the merge of run r onto main; main is untouched".into()
            ))
        );
        assert_eq!(
            reverified(&plan, Reverified::SetupFailed("npm ci failed".into())),
            Err(Refusal::MergedVerify(
                "the merge of run r onto main was not verified: npm ci failed; main is untouched"
                    .into()
            ))
        );
    }

    #[test]
    fn a_target_that_will_not_advance_is_merged_again_refused_or_an_error() {
        let lead = Some(PathBuf::from("/lead"));
        assert_eq!(
            advance_failed(true, lead.clone(), "e".into()),
            Advance::Retry
        );
        assert_eq!(
            advance_failed(false, lead, "untracked file in the way".into()),
            Advance::Refused(Refusal::Checkout(
                PathBuf::from("/lead"),
                "untracked file in the way".into()
            ))
        );
        assert_eq!(advance_failed(false, None, "e".into()), Advance::Failed);
        assert_eq!(
            kept_moving(&plan()),
            Refusal::KeptMoving(
                "main kept moving while run r was being integrated; nothing was changed".into()
            )
        );
    }

    fn hand(violations: Vec<String>) -> Hand {
        Hand {
            commit: "c0ffee".into(),
            parents: vec![MAIN.into(), TIP.into()],
            fast_forward: false,
            files: vec!["src/a.rs".into()],
            violations,
        }
    }

    #[test]
    fn a_hand_merge_is_recorded_unless_it_changed_paths_outside_the_scope() {
        let mut facts = facts();
        branch(&mut facts).merged = true;
        let plan = admit(&facts).unwrap();
        let landing = by_hand(&plan, hand(Vec::new())).unwrap();
        assert!(landing.by_hand);
        assert_eq!(landing.applied_as, "merge");
        assert_eq!(landing.parents, [MAIN, TIP]);
        assert_eq!(landing.files, ["src/a.rs"]);
        assert!(!landing.forced_unverified);
        let ff = Hand {
            fast_forward: true,
            ..hand(Vec::new())
        };
        assert_eq!(by_hand(&plan, ff).unwrap().applied_as, "fast-forward");
        assert_eq!(
            by_hand(&plan, hand(vec!["docs/x.md: outside".into()])),
            Err(Refusal::HandScope {
                run: "r".into(),
                commit: "c0ffee".into(),
                violations: vec!["docs/x.md: outside".into()],
            })
        );
        // Merged without a passing verify at its tip: recorded as forced.
        let mut unverified = plan.clone();
        unverified.record.verify.as_mut().unwrap().passed = false;
        assert!(
            by_hand(&unverified, hand(Vec::new()))
                .unwrap()
                .forced_unverified
        );
    }

    #[test]
    fn cleanup_says_why_it_keeps_a_worktree() {
        use WorktreeCleanup::{Conservative, Never};
        assert_eq!(cleanup(Conservative, true, true).kept_because, None);
        assert!(
            cleanup(Conservative, false, true)
                .kept_because
                .unwrap()
                .contains("uncommitted changes")
        );
        assert!(
            cleanup(Never, true, false)
                .kept_because
                .unwrap()
                .contains("commits that were not integrated")
        );
    }

    #[test]
    fn the_dry_run_prints_the_landing_with_the_fields_it_always_had() {
        let plan = plan();
        let onto = onto_main(&plan, Some(&main_tip())).unwrap();
        let (_, landing) = after_merge(&plan, &onto, clean(Vec::new())).unwrap();
        let value = serde_json::to_value(&landing).unwrap();
        let keys: Vec<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            [
                "run",
                "task",
                "into",
                "parents",
                "applied_as",
                "files",
                "links_outside_scope",
                "forced_unverified",
                "reverify"
            ]
        );
    }
}
