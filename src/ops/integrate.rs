//! `integrate`: audit a finished run against its scope, merge it onto its target away
//! from the checkout, record it, clean up (SPEC §5.9); `dry_run`: the plan that would
//! land, with nothing changed.

use serde_json::json;

use crate::core::flight::Invocation;
use crate::error::{CrewError, ErrorCode, Result};
use crate::run::integrate::{self, Done, Step};

use super::{Context, runs};

pub struct Request {
    /// A run address (see [`runs::resolve`]).
    pub run: String,
    /// The branch to integrate into (default: the branch the run was cut from).
    pub into: Option<String>,
    pub squash: bool,
    pub force_unverified: bool,
    /// The invocation layer of the routing config (`--set`).
    pub invocation: Invocation,
    pub dry_run: bool,
    /// Land through this git remote (a fleet sharing it): merge onto the remote's tip of
    /// the target and push the target, the notes and the claim's release in one atomic
    /// push. `None`: `fleet.remote` when set, else a local integrate.
    pub remote: Option<String>,
}

/// What an integration tells a front end as it goes.
pub enum Event<'a> {
    /// A step begins.
    Step {
        step: Step,
        run: &'a str,
        /// The target as people name it (`the target` until it is known).
        into: &'a str,
    },
    /// Something to say on the side: a gate that holds the task under `warn`.
    Warning(&'a str),
}

/// What `integrate` prints as data (SPEC §2 `integrate`): what landed, or under
/// `--dry-run` the plan it would apply, with nothing changed.
#[derive(serde::Serialize, schemars::JsonSchema)]
#[serde(untagged)]
#[allow(clippy::large_enum_variant)] // built once, printed, dropped
pub enum Output<'a> {
    WouldLand {
        dry_run: bool,
        #[serde(flatten)]
        landing: &'a crate::core::integrate::Landing,
    },
    Landed(Landed<'a>),
}

/// What `integrate` prints of a run that landed.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct Landed<'a> {
    pub run: &'a str,
    pub task: &'a str,
    pub into: &'a str,
    pub commit: String,
    pub parents: &'a [String],
    pub squash: bool,
    pub applied_as: &'static str,
    pub completed: bool,
    /// Merged by hand before (a resolved conflict): `commit` brought it in, recorded now.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub by_hand: bool,
    pub links_outside_scope: &'a [String],
    pub forced_unverified: bool,
    pub merged_verify: Option<&'a crate::core::record::Verify>,
    pub files: &'a [String],
    pub noted: Vec<String>,
    pub attempts_ref: &'a str,
    pub cleanup: &'a crate::run::landing::Cleaned,
    /// Landed through a fleet's remote (`--remote`, `fleet.remote`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote: Option<Box<ThroughRemote<'a>>>,
}

/// How a run landed through a fleet's remote.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct ThroughRemote<'a> {
    pub name: &'a str,
    /// Merges built: one more after each push another machine beat.
    pub tries: usize,
    /// The refs moved on the remote in the one atomic push.
    pub pushed: &'a [String],
    /// The task's claim was let go in that push.
    pub released_claim: bool,
    /// The target's branch here: `fast-forwarded`, `up-to-date`, `absent` or `left`.
    pub local_target: &'static str,
    /// Why it was left where it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub left_because: Option<&'a str>,
}

impl<'a> ThroughRemote<'a> {
    fn of(through: &'a crate::run::integrate::remote::Through) -> ThroughRemote<'a> {
        use crate::core::fleet::LocalTarget;
        let (local_target, left_because) = match &through.local {
            LocalTarget::Absent => ("absent", None),
            LocalTarget::UpToDate => ("up-to-date", None),
            LocalTarget::FastForward => ("fast-forwarded", None),
            LocalTarget::Left(why) => ("left", Some(why.as_str())),
        };
        ThroughRemote {
            name: &through.remote,
            tries: through.tries,
            pushed: &through.pushed,
            released_claim: through.released,
            local_target,
            left_because,
        }
    }
}

/// What `integrate` prints as data of `done`.
pub fn output(done: &Done) -> Output<'_> {
    let landing = &done.landing;
    if done.dry_run {
        return Output::WouldLand {
            dry_run: true,
            landing,
        };
    }
    Output::Landed(Landed {
        run: &done.record.run,
        task: &done.record.task,
        into: &landing.into,
        commit: done.commit.to_string(),
        parents: &landing.parents,
        squash: !matches!(landing.applied_as, "merge" | "fast-forward"),
        applied_as: landing.applied_as,
        completed: done.completed,
        by_hand: landing.by_hand,
        links_outside_scope: &landing.links_outside_scope,
        forced_unverified: done
            .record
            .integration
            .as_ref()
            .is_some_and(|i| i.forced_unverified),
        merged_verify: done.merged_verify.as_ref(),
        files: &landing.files,
        noted: done.noted.iter().map(ToString::to_string).collect(),
        attempts_ref: &done.attempts_ref,
        cleanup: &done.cleanup,
        remote: done.remote.as_ref().map(|t| Box::new(ThroughRemote::of(t))),
    })
}

/// Integrates the run; `observe` hears of each step as it begins, and of warnings.
pub fn integrate(ctx: &Context, request: &Request, observe: &dyn Fn(Event<'_>)) -> Result<Done> {
    let flight = super::flight::resolve(ctx, &request.invocation)?.flight;
    let repo = ctx.repo()?;
    if let Some(into) = &request.into
        && !crate::git::refs::is_branch_name(into)
    {
        return Err(CrewError::new(
            ErrorCode::BadBranch,
            format!("`{into}` is not a valid branch name"),
        ));
    }
    let repo_dir = ctx.workdir()?.to_path_buf();
    let store = runs::settled(ctx)?;
    let run = runs::resolve(&store, &request.run)?;
    let record = store.load(&run).ok().flatten();
    let session_reuse = record
        .as_ref()
        .and_then(|r| flight.backends.get(&r.backend))
        .and_then(|b| b.session_reuse)
        .unwrap_or(false);
    // The gates: a task a gate holds is not integrated under `strict`; the verdicts of
    // the gates on its wave go into the run record.
    let mut gates = Vec::new();
    if let Some(record) = &record
        && let Some(plan_name) = &record.plan
        && let Ok(plan) = super::plans::load(ctx, Some(plan_name))
        && let Some(task) = plan.task(&record.task)
    {
        let facts = crate::core::plan::Facts {
            verdicts: crate::run::plans::verdicts(repo, &plan).map_err(CrewError::from)?,
            enforce: flight.gates.enforce,
            on_fail: flight.gates.on_fail,
            ..Default::default()
        };
        if let Some(warning) = crate::core::plan::gate_hold(&plan, task, &facts, "integrated")
            .map_err(CrewError::from)?
        {
            observe(Event::Warning(&warning));
        }
        for gate in plan
            .gates
            .iter()
            .filter(|g| g.gates_waves.contains(&task.wave))
        {
            gates.push(json!({"gate": gate.id, "verdict": facts.verdicts.get(&gate.id)}));
        }
    }
    // Through a fleet's remote: `--remote`, else `fleet.remote`.
    let remote = crate::run::fleet::Fleet::of(&flight, request.remote.as_deref()).map(|f| f.remote);
    if let Some(remote) = &remote {
        let remotes = crate::git::sync::remotes(repo);
        if !remotes.contains(remote) {
            return Err(
                CrewError::new(ErrorCode::RemoteNotFound, format!("no remote {remote}")).hinted(
                    format!(
                        "remotes here: {}",
                        if remotes.is_empty() {
                            "none".to_string()
                        } else {
                            remotes.join(", ")
                        }
                    ),
                ),
            );
        }
    }
    let applied = integrate::Request {
        gates,
        run,
        into: request.into.clone(),
        squash: request.squash,
        force_unverified: request.force_unverified,
        cleanup: flight.worktree.cleanup,
        session_reuse,
        by: identity(repo),
        dry_run: request.dry_run,
        remote,
    };
    // A verify of the merged tree runs here: what it starts comes back to this process
    // and goes when it ends, and Ctrl-C stops it and removes its checkout.
    let _subreaper = crate::sys::process::subreaper();
    let into = (request.into.clone())
        .or_else(|| record.as_ref().and_then(|r| r.base_ref.clone()))
        .unwrap_or_else(|| "the target".into());
    let done = integrate::integrate(&repo_dir, repo, &store, &applied, &|step| {
        observe(Event::Step {
            step,
            run: &applied.run,
            into: &into,
        });
    })
    .map_err(CrewError::from)?
    .map_err(CrewError::from)?;
    Ok(done)
}

/// `Name <email>` of whoever integrates (the configured committer).
fn identity(repo: &crate::git::Repository) -> String {
    crate::git::config::committer(repo).unwrap_or_else(|| "unknown".to_string())
}
