//! Whose failure it is when a toolchain step of a run fails — the worktree's setup, a
//! filter that `git add` runs, the pre-commit hook, git's own commit — decided from facts
//! (which step failed, an exit code, whether the same content adds with the filters
//! turned off), never from the words a tool printed. What is the environment's (a tool
//! missing, a path it may not write, a filter or setup that fails) is an infrastructure
//! `error`, which the two-failure rule never counts; a hook that refused the worker's
//! content stays the worker's failure.

use super::record::Outcome;

/// The exit code of a hook that cannot be run: not executable, or its interpreter denied
/// (the shell's and git's convention).
pub const NOT_EXECUTABLE: i32 = 126;
/// The exit code of a hook that runs a program that is not there.
pub const NOT_FOUND: i32 = 127;

/// A filter driver (`filter.<name>.clean` / `.process`) configured for paths being added.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    pub name: String,
    /// Its command (`process` when it has one, else `clean`).
    pub command: String,
    /// The paths being added that carry it (`filter=<name>`).
    pub paths: Vec<String>,
}

/// A git step git-crew runs in a run's worktree that runs the repository's filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GitStep {
    /// `git status` (a tracked file whose stat changed is hashed again, through its
    /// filter).
    Status,
    /// `git add -A` of the work left behind.
    Add,
}

/// A toolchain step that failed, with the facts gathered about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// A git step in the worktree failed. `without_filters`: whether the same step then
    /// succeeded with every filter turned off (into a scratch index and object folder;
    /// `None`: that could not be tried); `filters`: the configured filters the
    /// worktree's paths carry.
    Git {
        step: GitStep,
        output: String,
        without_filters: Option<bool>,
        filters: Vec<Filter>,
    },
    /// `git commit` was refused, and its pre-commit hook, run again on its own, exited
    /// non-zero (`None`: a signal ended it). `hook`: the program it runs (the
    /// repository's hook), when there is one.
    Hook {
        hook: Option<String>,
        exit_code: Option<i32>,
        output: String,
    },
    /// `git commit` was refused, though its pre-commit hook passes on its own: another
    /// hook (commit-msg, which judges git-crew's own message) or git itself.
    Commit { output: String },
}

/// Whose a failure is, and the decision that says so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blame {
    pub outcome: Outcome,
    pub decision: String,
}

/// The last lines of what a tool printed, for people: at most 5 lines and 400 characters.
pub fn tail(output: &str) -> String {
    let lines: Vec<&str> = output
        .lines()
        .map(str::trim_end)
        .filter(|l| !l.trim().is_empty())
        .collect();
    let kept = lines[lines.len().saturating_sub(5)..].join(" / ");
    let count = kept.chars().count();
    if count > 400 {
        let cut: String = kept.chars().skip(count - 400).collect();
        format!("…{cut}")
    } else {
        kept
    }
}

/// `": <tail>"`, or nothing for silent output.
fn said(output: &str) -> String {
    let t = tail(output);
    if t.is_empty() { t } else { format!(": {t}") }
}

/// The first few of `paths`, and how many more.
fn some_paths(paths: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut text = paths
        .iter()
        .take(SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > SHOWN {
        text.push_str(&format!(" and {} more", paths.len() - SHOWN));
    }
    text
}

/// Decides whose failure `failure` is:
/// - `git add` (or `git status`) failed, and succeeds with the filters off: the filters
///   (or git's own index and object store) failed, not the content — an `error` naming
///   each filter, its command and its paths. If `git add` still fails without them, the
///   content itself cannot be added (a file the worker left unreadable): the worker's
///   `fail`; if `git status` still does, git cannot read the worktree as the worker left
///   it: a `scope-reject`, as any tampering with it.
/// - the pre-commit hook exited 126 (cannot be run) or 127 (a program it runs is not
///   there): the environment's `error`, naming the hook. Any other refusal is the hook
///   judging the worker's content: the worker's `fail`.
/// - `git commit` was refused though its pre-commit hook passes on its own: a hook that
///   judges git-crew's own message, or git itself (no identity, a lock it may not
///   take) — not the worker's content, an `error`.
pub fn blame(failure: &Failure) -> Blame {
    let error = |decision: String| Blame {
        outcome: Outcome::Error,
        decision,
    };
    let workers = |decision: String| Blame {
        outcome: Outcome::Fail,
        decision,
    };
    match failure {
        Failure::Git {
            step,
            output,
            without_filters: Some(true),
            filters,
        } => {
            let what = match step {
                GitStep::Status => "git status in the worktree",
                GitStep::Add => "git add of the work left behind",
            };
            if filters.is_empty() {
                return error(format!(
                    "{what} failed, though it succeeds into a scratch index and object folder: git's index or object store, not the worker's work{}",
                    said(output)
                ));
            }
            let named: Vec<String> = filters
                .iter()
                .map(|f| {
                    format!(
                        "the `{}` filter (`{}`) on {}",
                        f.name,
                        f.command,
                        some_paths(&f.paths)
                    )
                })
                .collect();
            error(format!(
                "a toolchain failure, not the worker's: {what} failed in {}, and succeeds with the filters off{}",
                named.join("; "),
                said(output)
            ))
        }
        Failure::Git {
            step: GitStep::Add,
            output,
            ..
        } => workers(format!(
            "git cannot add the work left behind, even with every filter off{}",
            said(output)
        )),
        // git cannot read the worktree, filters or not: what it reads there (its
        // administration, its index) is in the state the worker left.
        Failure::Git {
            step: GitStep::Status,
            output,
            ..
        } => Blame {
            outcome: Outcome::ScopeReject,
            decision: format!(
                "the worktree's administration was tampered with: git cannot read the worktree{}",
                said(output)
            ),
        },
        Failure::Hook {
            hook,
            exit_code: Some(code @ (NOT_EXECUTABLE | NOT_FOUND)),
            output,
        } => {
            let why = if *code == NOT_FOUND {
                "a program it runs (or its interpreter) was not found"
            } else {
                "it, or a program it runs, cannot be executed"
            };
            error(format!(
                "a toolchain failure, not the worker's: the pre-commit hook {} exited {code} ({why}){}",
                hook.as_deref().unwrap_or("(git-crew's run hook)"),
                said(output)
            ))
        }
        Failure::Hook {
            hook,
            exit_code,
            output,
        } => workers(format!(
            "a hook refused the commit of the work left behind: the pre-commit hook{} {}{}",
            hook.as_deref().map(|h| format!(" {h}")).unwrap_or_default(),
            match exit_code {
                Some(code) => format!("exited {code}"),
                None => "was ended by a signal".to_string(),
            },
            said(output)
        )),
        Failure::Commit { output } => error(format!(
            "git-crew's commit of the work left behind was refused, though its pre-commit hook passes: another hook (commit-msg judges git-crew's own message) or git itself, not the worker's content{}",
            said(output)
        )),
    }
}

/// How a run's `[worktree] setup` ended, as facts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetupEnd {
    Exited(Option<i32>),
    /// It ran past its bound and was stopped.
    TimedOut {
        after_s: u64,
    },
    /// It could not be started (the fence could not go up, `sh` is missing).
    NotStarted(String),
}

/// The decision on a setup that did not ready the worktree, or `None` when it did: any
/// failure is the environment's (an `error`), naming the command and its exit code. A
/// setup that exited 0 but left tracked (or unignored) files changed did not ready the
/// worktree either: those changes would be taken for the worker's work.
pub fn setup_problem(command: &str, end: &SetupEnd, changed: &[String]) -> Option<String> {
    let what = match end {
        SetupEnd::Exited(Some(0)) if changed.is_empty() => return None,
        SetupEnd::Exited(Some(0)) => {
            let shown: Vec<&str> = changed.iter().take(10).map(String::as_str).collect();
            format!(
                "exited 0 but changed what git tracks ({}{}): a setup may only add files git ignores",
                shown.join(", "),
                if changed.len() > shown.len() {
                    format!(" and {} more", changed.len() - shown.len())
                } else {
                    String::new()
                }
            )
        }
        SetupEnd::Exited(Some(code)) => format!("exited {code}"),
        SetupEnd::Exited(None) => "was ended by a signal".to_string(),
        SetupEnd::TimedOut { after_s } => {
            format!("ran past its bound ([worktree] setup_timeout, {after_s}s) and was stopped")
        }
        SetupEnd::NotStarted(why) => format!("could not be started: {why}"),
    };
    Some(format!("the worktree setup `{command}` {what}"))
}

/// The run's decision for a setup that failed: the worker was never started.
pub fn setup_decision(problem: &str) -> String {
    format!("{problem}; the worker was not started (an infrastructure error, not the worker's)")
}

/// The files that say a repository's hooks are run by a hook manager installed from npm
/// (its program lives in `node_modules`): (file, manager).
pub const NODE_HOOK_MANAGERS: &[(&str, &str)] = &[
    ("lefthook.yml", "lefthook"),
    ("lefthook.yaml", "lefthook"),
    (".lefthook.yml", "lefthook"),
    (".lefthook.yaml", "lefthook"),
    ("lefthook.toml", "lefthook"),
    ("lefthook.json", "lefthook"),
    (".husky", "husky"),
];

/// What a new run's worktree holds of a Node project's hooks, just after it was made.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeHooks<'a> {
    /// The hook managers whose files are in the worktree ([`NODE_HOOK_MANAGERS`]).
    pub managers: Vec<&'a str>,
    pub package_json: bool,
    /// `node_modules` is there (`.worktreeinclude` brought or linked it).
    pub node_modules: bool,
    /// A `[worktree] setup` will run before the worker starts.
    pub setup: bool,
}

/// The warning for a run whose hooks cannot find their manager: a Node project's hook
/// manager runs from `node_modules`, which a fresh worktree lacks unless a setup installs
/// it or `.worktreeinclude` brings it — without it lefthook skips every hook ("Can't find
/// lefthook in PATH") and husky's hooks fail or reach into the lead's checkout.
pub fn node_hooks_unreachable(hooks: &NodeHooks) -> Option<String> {
    if hooks.managers.is_empty() || !hooks.package_json || hooks.node_modules || hooks.setup {
        return None;
    }
    let mut managers = hooks.managers.clone();
    managers.dedup();
    let names = managers.join(" and ");
    Some(format!(
        "the repository's hooks run {names} from node_modules, which this run's worktree does not have: set `[worktree] setup = \"npm ci\"` in .crew/flight.toml (or bring node_modules with .worktreeinclude), or the worker's commits go unchecked by {names}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filter(name: &str, paths: &[&str]) -> Filter {
        Filter {
            name: name.into(),
            command: format!("{name}-tool clean %f"),
            paths: paths.iter().map(|p| p.to_string()).collect(),
        }
    }

    #[test]
    fn a_filter_that_fails_where_the_content_adds_without_it_is_an_error_naming_it() {
        let b = blame(&Failure::Git {
            step: GitStep::Add,
            output: "fatal: assets/a.bin: clean filter 'lfs' failed\n".into(),
            without_filters: Some(true),
            filters: vec![filter("lfs", &["assets/a.bin", "assets/b.bin"])],
        });
        assert_eq!(b.outcome, Outcome::Error);
        assert!(
            b.decision
                .contains("the `lfs` filter (`lfs-tool clean %f`) on assets/a.bin, assets/b.bin"),
            "{}",
            b.decision
        );
        assert!(b.decision.contains("not the worker's"));
        // No filter on the paths, yet the content adds: git's side, still not the worker's.
        let b = blame(&Failure::Git {
            step: GitStep::Add,
            output: "fatal: Unable to create index.lock: Permission denied".into(),
            without_filters: Some(true),
            filters: vec![],
        });
        assert_eq!(b.outcome, Outcome::Error);
        // A status that runs the filter on a tracked file the checkout left racy.
        let many: Vec<&str> = vec![
            "a.bin", "b.bin", "c.bin", "d.bin", "e.bin", "f.bin", "g.bin",
        ];
        let b = blame(&Failure::Git {
            step: GitStep::Status,
            output: String::new(),
            without_filters: Some(true),
            filters: vec![filter("lfs", &many)],
        });
        assert_eq!(b.outcome, Outcome::Error);
        assert!(
            b.decision
                .contains("git status in the worktree failed in the `lfs` filter"),
            "{}",
            b.decision
        );
        assert!(b.decision.contains("e.bin and 2 more"), "{}", b.decision);
    }

    #[test]
    fn content_that_cannot_be_added_even_without_filters_is_the_workers() {
        for without_filters in [Some(false), None] {
            let b = blame(&Failure::Git {
                step: GitStep::Add,
                output: "error: open(\"secret\"): Permission denied".into(),
                without_filters,
                filters: vec![filter("lfs", &["a.bin"])],
            });
            assert_eq!(b.outcome, Outcome::Fail, "{without_filters:?}");
            assert!(b.decision.contains("cannot add the work left behind"));
            // And a worktree git cannot read even without them is the worker's doing.
            let b = blame(&Failure::Git {
                step: GitStep::Status,
                output: "fatal: bad index file".into(),
                without_filters,
                filters: vec![],
            });
            assert_eq!(b.outcome, Outcome::ScopeReject, "{without_filters:?}");
            assert!(b.decision.contains("tampered with"), "{}", b.decision);
        }
    }

    #[test]
    fn a_hook_that_cannot_run_a_tool_is_an_error_and_one_that_refuses_is_the_workers() {
        for code in [NOT_FOUND, NOT_EXECUTABLE] {
            let b = blame(&Failure::Hook {
                hook: Some("/repo/.git/hooks/pre-commit".into()),
                exit_code: Some(code),
                output: "pre-commit: 3: lint-tool: not found\n".into(),
            });
            assert_eq!(b.outcome, Outcome::Error, "{code}");
            assert!(
                b.decision
                    .contains(&format!("/repo/.git/hooks/pre-commit exited {code}")),
                "{}",
                b.decision
            );
        }
        for code in [Some(1), Some(2), Some(128), None] {
            let b = blame(&Failure::Hook {
                hook: Some("/repo/.git/hooks/pre-commit".into()),
                exit_code: code,
                output: "src/a.rs: not formatted\n".into(),
            });
            assert_eq!(b.outcome, Outcome::Fail, "{code:?}");
            assert!(
                b.decision
                    .starts_with("a hook refused the commit of the work left behind"),
                "{}",
                b.decision
            );
        }
    }

    #[test]
    fn git_crews_own_commit_failing_is_an_error() {
        let b = blame(&Failure::Commit {
            output: "Author identity unknown".into(),
        });
        assert_eq!(b.outcome, Outcome::Error);
    }

    #[test]
    fn a_setup_fails_on_any_exit_but_zero_and_on_changes_to_what_git_tracks() {
        assert_eq!(
            setup_problem("npm ci", &SetupEnd::Exited(Some(0)), &[]),
            None
        );
        let p = setup_problem("npm ci", &SetupEnd::Exited(Some(1)), &[]).unwrap();
        assert_eq!(p, "the worktree setup `npm ci` exited 1");
        let p = setup_problem(
            "npm i",
            &SetupEnd::Exited(Some(0)),
            &["package-lock.json".into()],
        )
        .unwrap();
        assert!(p.contains("package-lock.json"), "{p}");
        let p = setup_problem("sleep 9", &SetupEnd::TimedOut { after_s: 2 }, &[]).unwrap();
        assert!(p.contains("setup_timeout, 2s"), "{p}");
        let p = setup_problem("x", &SetupEnd::Exited(None), &[]).unwrap();
        assert!(p.contains("signal"), "{p}");
        assert!(setup_decision(&p).contains("the worker was not started"));
    }

    #[test]
    fn a_tail_keeps_the_last_lines_within_bounds() {
        let many: String = (0..20).map(|i| format!("line {i}\n")).collect();
        assert_eq!(
            tail(&many),
            "line 15 / line 16 / line 17 / line 18 / line 19"
        );
        let long = "x".repeat(1000);
        assert_eq!(tail(&long).chars().count(), 401);
        assert_eq!(tail("\n\n"), "");
    }

    #[test]
    fn a_node_hook_manager_without_its_node_modules_is_warned_of_once() {
        let bare = NodeHooks {
            managers: vec!["lefthook"],
            package_json: true,
            ..NodeHooks::default()
        };
        let warning = node_hooks_unreachable(&bare).unwrap();
        assert!(
            warning.contains("run lefthook from node_modules"),
            "{warning}"
        );
        assert!(
            warning.contains("[worktree] setup = \"npm ci\""),
            "{warning}"
        );
        // Two files of one manager name it once; two managers are both named.
        let twice = NodeHooks {
            managers: vec!["lefthook", "lefthook", "husky"],
            ..bare.clone()
        };
        let both = node_hooks_unreachable(&twice).unwrap();
        assert!(both.contains("run lefthook and husky from"), "{both}");
        // A setup, node_modules already there, no package.json, or no manager: silence.
        for quiet in [
            NodeHooks {
                setup: true,
                ..bare.clone()
            },
            NodeHooks {
                node_modules: true,
                ..bare.clone()
            },
            NodeHooks {
                package_json: false,
                ..bare.clone()
            },
            NodeHooks {
                managers: Vec::new(),
                ..bare.clone()
            },
        ] {
            assert_eq!(node_hooks_unreachable(&quiet), None, "{quiet:?}");
        }
    }
}
