//! The in-process stranded-work check (`RunTree::indexed`: what a run's worktree holds
//! beside its commit, found with gix's directory walk and git's ignore rules) against
//! the git-process check, on one run's worktree put in one state after another: build
//! output, ignored folders within folders, negated patterns, the run's own excludes file,
//! untracked files inside ignored folders, changed and hidden tracked files, and what the
//! in-process check leaves to git (a repository inside, a FIFO, a `.gitignore` link).
//! In each it must say what git says, answer where it is expected to, and prune must
//! decide the same.

use std::path::Path;

use serde_json::Value;

use crate::common::{TestEnv, read, write};
use crate::prune::{
    finished, ignoring_repo, integrate_keeping_all, settle_worktree, stranded_looks, worktree,
};

/// One state of the worktree: how it is made, whether the in-process check answers for
/// it, what git says it holds (uncommitted, ignored), and whether prune would remove the
/// worktree.
struct State<'a> {
    what: &'a str,
    make: Box<dyn Fn() + 'a>,
    in_process: bool,
    uncommitted: &'a [&'a str],
    ignored: &'a [&'a str],
    removed: bool,
}

fn strings(paths: &[&str]) -> Vec<String> {
    paths.iter().map(|p| p.to_string()).collect()
}

/// Adds `lines` to the file at `path` (made when missing).
fn append(path: &Path, lines: &str) {
    let before = std::fs::read_to_string(path).unwrap_or_default();
    write(path, &format!("{before}{lines}"));
}

#[test]
fn the_in_process_check_says_what_git_says_of_untracked_and_ignored_files() {
    let env = TestEnv::new();
    let repo = ignoring_repo(&env);
    let run = finished(&env, &repo, "look", "own-file", "work/**", &[]);
    integrate_keeping_all(&env, &repo, &run);
    let wt = worktree(&repo, &run);
    let head = env.git_ok(&wt, &["rev-parse", "HEAD"]);
    let head = head.trim();
    let info_exclude = repo.join(".git/info/exclude");
    let run_exclude = repo.join(".git/crew/runs").join(&run).join("exclude");
    assert!(
        read(&run_exclude).contains("__pycache__/"),
        "the run's excludes file is not at {}",
        run_exclude.display()
    );
    let (info_before, run_before) = (read(&info_exclude), read(&run_exclude));
    let tracked = wt.join("work/look.txt");
    // Back to HEAD, nothing beside its files, the ignore files as they were, and every
    // tracked file settled (none "racily clean", which only git can look into).
    let reset = || {
        env.git(
            &wt,
            &["update-index", "--no-assume-unchanged", "work/look.txt"],
        );
        env.git(&wt, &["update-index", "--no-skip-worktree", "README.md"]);
        write(&info_exclude, &info_before);
        write(&run_exclude, &run_before);
        env.git_ok(&wt, &["read-tree", "--empty"]);
        env.git_ok(&wt, &["reset", "-q", "--hard", head]);
        env.git_ok(&wt, &["clean", "-q", "-ffdx"]);
        settle_worktree(&env, &wt);
    };
    let states: Vec<State> = vec![
        State {
            what: "build output",
            make: Box::new(|| write(&wt.join("target/debug/app"), "binary")),
            in_process: true,
            uncommitted: &[],
            ignored: &["target/"],
            removed: true,
        },
        State {
            what: "ignored folders within folders, and an ignored file in a tracked one",
            make: Box::new(|| {
                write(&wt.join("target/debug/app"), "binary");
                write(&wt.join("work/sub/target/obj/a.o"), "object");
                write(&wt.join("work/sub/.env"), "TOKEN=1");
            }),
            in_process: true,
            uncommitted: &[],
            ignored: &["target/", "work/sub/.env", "work/sub/target/"],
            removed: true,
        },
        State {
            what: "an empty ignored folder",
            make: Box::new(|| std::fs::create_dir_all(wt.join("target")).unwrap()),
            in_process: true,
            uncommitted: &[],
            ignored: &["target/"],
            removed: true,
        },
        State {
            what: "empty untracked folders",
            make: Box::new(|| std::fs::create_dir_all(wt.join("work/empty/deeper")).unwrap()),
            in_process: true,
            uncommitted: &[],
            ignored: &[],
            removed: true,
        },
        State {
            what: "a negated pattern",
            make: Box::new(|| {
                append(&info_exclude, "*.log\n!keep.log\n");
                write(&wt.join("work/a.log"), "log");
                write(&wt.join("work/keep.log"), "kept");
            }),
            in_process: true,
            uncommitted: &["work/keep.log"],
            ignored: &["work/a.log"],
            removed: false,
        },
        State {
            what: "the run's own excludes file",
            make: Box::new(|| {
                append(&run_exclude, "coverage/\n*.tmp\n");
                write(&wt.join("coverage/index.html"), "report");
                write(&wt.join("work/x.tmp"), "scratch");
                write(&wt.join("work/__pycache__/m.cpython-312.pyc"), "bytecode");
            }),
            in_process: true,
            uncommitted: &[],
            ignored: &["coverage/", "work/__pycache__/", "work/x.tmp"],
            removed: true,
        },
        State {
            what: "info/exclude over the run's excludes file, a .gitignore over both",
            make: Box::new(|| {
                append(&run_exclude, "*.tmp\n*.bak\n");
                append(&info_exclude, "!keep.tmp\n");
                write(&wt.join("work/.gitignore"), "!keep.bak\n");
                for file in ["keep.tmp", "x.tmp", "keep.bak", "y.bak"] {
                    write(&wt.join("work").join(file), file);
                }
            }),
            in_process: true,
            uncommitted: &["work/.gitignore", "work/keep.bak", "work/keep.tmp"],
            ignored: &["work/x.tmp", "work/y.bak"],
            removed: false,
        },
        State {
            what: "an untracked file inside an ignored folder",
            make: Box::new(|| {
                write(&wt.join("target/debug/app"), "binary");
                write(&wt.join("target/new.txt"), "new");
            }),
            in_process: true,
            uncommitted: &[],
            ignored: &["target/"],
            removed: true,
        },
        State {
            what: "an untracked file inside an ignored folder that holds a tracked file",
            make: Box::new(|| {
                append(&info_exclude, "vendor/\n");
                write(&wt.join("work/vendor/kept.txt"), "tracked");
                env.git_ok(&wt, &["add", "-f", "work/vendor/kept.txt"]);
                env.git_ok(&wt, &["commit", "-q", "-m", "vendor"]);
                settle_worktree(&env, &wt);
                write(&wt.join("work/vendor/new.txt"), "new");
            }),
            in_process: true,
            uncommitted: &[],
            ignored: &["work/vendor/new.txt"],
            // A commit nothing else keeps.
            removed: false,
        },
        State {
            what: "an untracked file",
            make: Box::new(|| write(&wt.join("work/new.txt"), "new")),
            in_process: true,
            uncommitted: &["work/new.txt"],
            ignored: &[],
            removed: false,
        },
        State {
            what: "untracked and ignored files in one new folder",
            make: Box::new(|| {
                append(&info_exclude, "*.log\n");
                write(&wt.join("newdir/a.txt"), "work");
                write(&wt.join("newdir/b.log"), "log");
            }),
            in_process: true,
            uncommitted: &["newdir/a.txt"],
            ignored: &["newdir/b.log"],
            removed: false,
        },
        State {
            what: "a folder whose files are all ignored",
            make: Box::new(|| {
                append(&info_exclude, "*.log\n");
                write(&wt.join("logs/a.log"), "a");
                write(&wt.join("logs/b.log"), "b");
            }),
            in_process: true,
            uncommitted: &[],
            ignored: &["logs/a.log", "logs/b.log"],
            removed: true,
        },
        State {
            what: "an untracked link, and names with spaces and letters beyond ASCII",
            make: Box::new(|| {
                std::os::unix::fs::symlink("README.md", wt.join("link")).unwrap();
                write(&wt.join("work/with space.txt"), "spaced");
                write(&wt.join("work/\u{fc}n\u{ef}.txt"), "unicode");
            }),
            in_process: true,
            uncommitted: &["link", "work/with space.txt", "work/\u{fc}n\u{ef}.txt"],
            ignored: &[],
            removed: false,
        },
        State {
            what: "a changed tracked file",
            make: Box::new(|| write(&tracked, "changed\n")),
            in_process: false,
            uncommitted: &["work/look.txt"],
            ignored: &[],
            removed: false,
        },
        State {
            what: "an edit to a file marked assume-unchanged, with build output",
            make: Box::new(|| {
                env.git_ok(
                    &wt,
                    &["update-index", "--assume-unchanged", "work/look.txt"],
                );
                write(&tracked, "hidden\n");
                write(&wt.join("target/debug/app"), "binary");
            }),
            in_process: true,
            uncommitted: &[],
            ignored: &["target/"],
            removed: false,
        },
        State {
            what: "a file outside the sparse checkout (skip-worktree)",
            make: Box::new(|| {
                env.git_ok(&wt, &["update-index", "--skip-worktree", "README.md"]);
                write(&wt.join("target/debug/app"), "binary");
            }),
            in_process: false,
            uncommitted: &[],
            ignored: &["target/"],
            removed: false,
        },
        State {
            what: "an untracked repository",
            make: Box::new(|| {
                let inner = wt.join("work/inner");
                env.git_ok(&repo, &["init", "-q", &inner.to_string_lossy()]);
                write(&inner.join("a.txt"), "inner work");
            }),
            in_process: false,
            uncommitted: &["work/inner/"],
            ignored: &[],
            removed: false,
        },
        State {
            what: "a FIFO, which git passes over",
            make: Box::new(|| {
                let made = std::process::Command::new("mkfifo")
                    .arg(wt.join("work/pipe"))
                    .status()
                    .unwrap();
                assert!(made.success());
            }),
            in_process: false,
            uncommitted: &[],
            ignored: &[],
            removed: true,
        },
        State {
            what: "a .gitignore that is a link, which git does not follow",
            make: Box::new(|| {
                write(&wt.join("patterns"), "*.txt\n");
                std::os::unix::fs::symlink("../patterns", wt.join("work/.gitignore")).unwrap();
                write(&wt.join("work/new.txt"), "new");
                write(&wt.join("target/debug/app"), "binary");
            }),
            in_process: false,
            uncommitted: &["patterns", "work/.gitignore", "work/new.txt"],
            ignored: &["target/"],
            removed: false,
        },
    ];

    reset();
    let settled = stranded_looks(&env, &repo, false);
    assert_eq!(settled.len(), 1);
    assert!(settled[0].in_process, "a settled worktree went to git");
    assert_eq!(settled[0].by_git, Default::default());
    for state in &states {
        let what = state.what;
        (state.make)();
        let looks = stranded_looks(&env, &repo, false);
        let look = &looks[0];
        assert_eq!(look.in_process, state.in_process, "{what}: in-process");
        assert_eq!(
            look.by_git.uncommitted,
            strings(state.uncommitted),
            "{what}"
        );
        assert_eq!(look.by_git.ignored, strings(state.ignored), "{what}");
        // And prune decides on what either says: the worktree goes with what git ignores
        // in it named, or stays as stranded work.
        let out = env.crew(&repo, &["prune", "--dry-run"]);
        out.expect_code(0);
        let plan = out.json();
        let listed = |key: &str| -> Option<Value> {
            plan[key]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["run"] == run.as_str())
                .cloned()
        };
        match state.removed {
            true => {
                let removed = listed("removed").unwrap_or_else(|| panic!("{what}: {plan}"));
                assert_eq!(
                    removed["ignored"],
                    serde_json::json!(state.ignored),
                    "{what}"
                );
            }
            false => {
                assert!(listed("stranded").is_some(), "{what}: {plan}");
            }
        }
        reset();
    }
}
