//! `init`: set git-crew up in the repository (or take it down), or show what it would
//! do.

use crate::error::{CrewError, ErrorCode, Result};
use crate::run::install::{self, Preview, Setup};
use crate::run::prune::Pruned;

use super::Context;

pub struct Request {
    pub uninstall: bool,
    /// With `uninstall`: prune every finished run first, as `prune --all` does.
    pub purge: bool,
    /// Show what an install would do; change nothing.
    pub dry_run: bool,
    /// Also write the agent files a lead loads: the Claude Code skill, the `AGENTS.md`
    /// section and the MCP server's registration for Claude Code and codex.
    pub agents: bool,
}

pub enum Inited {
    /// What an install would do (`dry_run`).
    Preview(Preview),
    /// What init (or its uninstall) did, and what the purge pruned.
    Done {
        setup: Setup,
        pruned: Option<Pruned>,
    },
}

/// Sets git-crew up (or takes it down); refused (exit 4) from a run's worktree.
pub fn init(ctx: &Context, request: &Request) -> Result<Inited> {
    let repo = ctx.repo()?;
    let workdir = ctx.workdir()?.to_path_buf();
    // The runs' worktrees go first, so that the uninstall can take back the config they
    // no longer need (`extensions.worktreeConfig`); a refusal of init stops both.
    install::refusal(repo, &workdir).map_or(Ok(()), |r| Err(CrewError::from(r)))?;
    if request.dry_run {
        let preview = install::preview(repo, &workdir, request.agents)?.map_err(CrewError::from)?;
        return Ok(Inited::Preview(preview));
    }
    let pruned = if request.purge {
        let all = crate::run::prune::Request {
            all: true,
            older_than_s: None,
            dry_run: false,
        };
        Some(super::prune::prune(ctx, all)?)
    } else {
        None
    };
    let setup = install::init(repo, &workdir, request.uninstall, request.agents)?
        .map_err(CrewError::from)?;
    Ok(Inited::Done { setup, pruned })
}

/// Why init does nothing, as the error SPEC §2 names for it.
impl From<install::Refusal> for CrewError {
    fn from(r: install::Refusal) -> CrewError {
        use install::Refusal;
        match r {
            Refusal::InsideRunWorktree { workdir, main } => CrewError::new(ErrorCode::InsideRunWorktree,
                format!(
                    "{} is the worktree of a git-crew run: init works on the repository, not on a run",
                    workdir.display()
                ),
            )
            .hinted(format!(
                "run it in the main checkout: git -C {} crew init",
                main.display()
            )),
            Refusal::HookInTheWay(taken) => {
                CrewError::new(ErrorCode::HookInTheWay, taken.to_string()).hinted(
                    format!(
                        "move or remove {} by hand, then run git crew init again",
                        taken.moved.display()
                    ),
                )
            }
        }
    }
}
