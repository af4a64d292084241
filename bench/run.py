#!/usr/bin/env python3
"""On-demand benchmark of git-crew's hot paths (not run in CI).

    python3 bench/run.py [--sizes 10000,50000,200000] [--files 50000] [--staged 1000]
                         [--live 5,100] [--runs 40] [--work DIR] [--bin PATH]
                         [--no-managers] [--no-footer] [--only worktree|main|all]
                         [--added-only]

The pre-commit check, each case against `git diff --cached --name-only` on the same
index in the same run of the bench, alternately, each a separate process (median of
--runs after 3 warm-up runs of each):

  * in a crew worktree, at each of --sizes files (directories of 100 files), with
    --staged modified and staged files in its scope;
  * in the main checkout of the --files repository, with each of --live live runs and
    1 or --staged staged files. The live runs are one real run, dispatched with a worker
    that waits, and copies of its live pointer made by bench/prune.py's generator (the
    run id, task and scope rewritten: run i holds `d<i>/**`, so the staged files in
    d000.. are held by the first runs), which is what the hook reads of a live run;
  * in a plain checkout with no live run, with `git status` for scale;
  * the same check run through the hook managers people use, where they install here:
    the pre-commit framework (PyPI) and lefthook (npm);
  * `git-crew footer` on a 64 MiB transcript.

Each index is left as `git commit` leaves it for its pre-commit hook: staged with
`git add`, then `git write-tree`, which brings the cache tree up to date and rewrites the
index, as a commit does before it runs the hook; and with `index.recordEndOfIndexEntries`
on, as `git crew init` sets it. `--added-only` skips the `write-tree` (the index as `git
add` leaves it, when the hook is run by hand): the hook then reads the entries.

The hook is run as the installed shim runs it: `git-crew-hook pre-commit`, the binary of
the hook's code alone built beside git-crew (for a --bin built before it, `git-crew hook
pre-commit`). Each row gives wall-clock medians and, in its last three columns, the
median CPU time of each process itself (user and system, as the kernel accounts the
reaped child): the wall clock includes this side's spawn and pipes, the same for both.

Needs a release build (`cargo build --release`); the binary is taken from
target/release/git-crew unless --bin names another (to measure a build before a change
against the same repositories). The scratch repositories are removed at the end unless
--work names the folder.
"""

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release", "git-crew")


def sh(args, cwd, env=None, check=True, stdin=None):
    return subprocess.run(args, cwd=cwd, env=env, check=check, stdin=stdin,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def timed(args, cwd, env, runs, stdin_path=None):
    samples = []
    for _ in range(3):  # warm the page cache
        with open(stdin_path or os.devnull, "rb") as stdin:
            sh(args, cwd, env, check=False, stdin=stdin)
    for _ in range(runs):
        with open(stdin_path or os.devnull, "rb") as stdin:
            start = time.perf_counter()
            out = sh(args, cwd, env, check=False, stdin=stdin)
            samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return {
        "median_ms": round(statistics.median(samples), 2),
        "p90_ms": round(samples[int(len(samples) * 0.9) - 1], 2),
        "exit": out.returncode,
    }


def hermetic_env(home):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "CREW_"))}
    env.update({
        "HOME": home,
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com",
        "PATH": os.path.dirname(BIN) + os.pathsep + os.environ.get("PATH", ""),
    })
    return env


def fresh_crew_repo(prefix):
    """A scratch folder with a hermetic HOME and an initialised plain.sh repository in it:
    (work, env, repo)."""
    work = tempfile.mkdtemp(prefix=prefix)
    home = os.path.join(work, "home")
    os.makedirs(home)
    env = hermetic_env(home)
    repo = os.path.join(work, "repo")
    sh([os.path.join(ROOT, "git-fixtures", "plain.sh"), repo], work, env)
    sh([BIN, "init"], repo, env)
    return work, env, repo


def build_repo(work, files, env):
    repo = os.path.join(work, "repo")
    sh(["git", "init", "-q", "-b", "main", repo], work, env)
    per_dir = 100
    for i in range(files):
        d = os.path.join(repo, "d%03d" % (i // per_dir))
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "f%03d.txt" % (i % per_dir)), "w") as f:
            f.write("line %d\n" % i)
    sh(["git", "add", "-A"], repo, env)
    sh(["git", "commit", "-q", "-m", "fixture"], repo, env)
    return repo


# Whether the index is left as `git add` leaves it rather than as `git commit` does.
ADDED_ONLY = False


def as_commit_leaves_it(cwd, env):
    """The cache tree brought up to date and the index rewritten, as `git commit` does
    before its pre-commit hook runs."""
    if not ADDED_ONLY:
        sh(["git", "write-tree"], cwd, env)


def crew_worktree(repo, work, staged, env):
    sh(["git", "config", "extensions.worktreeConfig", "true"], repo, env)
    sh(["git", "config", "index.recordEndOfIndexEntries", "true"], repo, env)
    wt = os.path.join(work, "wt")
    sh(["git", "worktree", "add", "-q", "-b", "crew/bench/r1", wt], repo, env)
    dirs = (staged + 99) // 100
    for key, value in [("crew.run", "r1"), ("crew.task", "bench"), ("crew.role", "implement")]:
        sh(["git", "config", "--worktree", key, value], wt, env)
    for d in range(dirs):
        sh(["git", "config", "--worktree", "--add", "crew.scope", "d%03d/**" % d], wt, env)
    changed = 0
    for d in range(dirs):
        for f in range(100):
            if changed == staged:
                break
            with open(os.path.join(wt, "d%03d" % d, "f%03d.txt" % f), "a") as fh:
                fh.write("changed\n")
            changed += 1
    sh(["git", "add", "-A"], wt, env)
    as_commit_leaves_it(wt, env)
    return wt, dirs


def child_cpu_ms():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (usage.ru_utime + usage.ru_stime) * 1000


def alternate(cases, cwd, env, runs, cpu=None):
    """Medians (ms) of each (name, argv) case, run alternately, each a separate process,
    after 3 warm-up runs of each; and each case's last exit code. With `cpu` (a dict),
    also the median CPU time of the process itself (user and system, from the kernel's
    accounting of the reaped child: the spawn and the pipes on this side are left out),
    by name."""
    samples = {name: [] for name, _ in cases}
    cpu_samples = {name: [] for name, _ in cases}
    exits = {}
    for _ in range(3):
        for _, args in cases:
            sh(args, cwd, env, check=False, stdin=subprocess.DEVNULL)
    for _ in range(runs):
        for name, args in cases:
            before = child_cpu_ms()
            start = time.perf_counter()
            out = sh(args, cwd, env, check=False, stdin=subprocess.DEVNULL)
            samples[name].append((time.perf_counter() - start) * 1000)
            cpu_samples[name].append(child_cpu_ms() - before)
            exits[name] = out.returncode
    if cpu is not None:
        cpu.update({name: statistics.median(v) for name, v in cpu_samples.items()})
    return {name: statistics.median(v) for name, v in samples.items()}, exits


GIT_DIFF = ["git", "diff", "--cached", "--name-only"]


def hook_argv(binary):
    """What the pre-commit shim runs: `git-crew-hook pre-commit` where that binary is
    built beside `binary`, else `git-crew hook pre-commit` (a build from before it)."""
    quick = os.path.join(os.path.dirname(binary), "git-crew-hook")
    if os.path.exists(quick):
        return [quick, "pre-commit"]
    return [binary, "hook", "pre-commit"]


def against_git(label, binary, cwd, env, runs, rows):
    """The hook against git diff --cached on the same index: one row of the table."""
    cpu = {}
    medians, exits = alternate([("git", GIT_DIFF), ("hook", hook_argv(binary))],
                               cwd, env, runs, cpu)
    if exits["git"] != 0 or exits["hook"] != 0:
        sys.exit("%s: git exited %d, the hook %d" % (label, exits["git"], exits["hook"]))
    row = (label, medians["git"], medians["hook"], medians["hook"] / medians["git"],
           cpu["git"], cpu["hook"], cpu["hook"] / cpu["git"] if cpu["git"] else float("nan"))
    print("| %s | %.2f | %.2f | %.2fx | %.2f | %.2f | %.2fx |" % row, flush=True)
    rows.append(row)


def worktree_cases(binary, work, sizes, staged, runs, rows):
    for files in sizes:
        folder = os.path.join(work, "wt-%d" % files)
        os.makedirs(folder)
        home = os.path.join(folder, "home")
        os.makedirs(home)
        env = hermetic_env(home)
        start = time.perf_counter()
        repo = build_repo(folder, files, env)
        wt, _ = crew_worktree(repo, folder, staged, env)
        print("  (%d files set up in %.1f s)" % (files, time.perf_counter() - start),
              file=sys.stderr)
        against_git("crew worktree, %s files, %s staged in scope"
                    % ("{:,}".format(files), "{:,}".format(staged)), binary, wt, env, runs, rows)
        shutil.rmtree(folder, ignore_errors=True)


def stage(repo, env, count):
    """Exactly `count` files of d000.. modified and staged in the main checkout."""
    sh(["git", "reset", "-q"], repo, env)
    sh(["git", "checkout", "-q", "--", "."], repo, env)
    for n in range(count):
        with open(os.path.join(repo, "d%03d" % (n // 100), "f%03d.txt" % (n % 100)), "a") as f:
            f.write("staged by the lead\n")
    sh(["git", "add", "-A", "--", "d*"], repo, env)
    as_commit_leaves_it(repo, env)


def main_checkout_cases(binary, work, files, staged, lives, runs, rows):
    """The main checkout with live runs: one real run and copies of its live pointer."""
    from prune import TASK, Copier  # noqa: E402 (prune imports this module)

    folder = os.path.join(work, "main")
    os.makedirs(folder)
    home = os.path.join(folder, "home")
    os.makedirs(home)
    env = hermetic_env(home)
    env["PATH"] = os.path.dirname(binary) + os.pathsep + env["PATH"]
    repo = build_repo(folder, files, env)
    sh([binary, "init"], repo, env)
    # As init sets it (set here too for a --bin built before init did).
    sh(["git", "config", "index.recordEndOfIndexEntries", "true"], repo, env)
    idle = os.path.join(folder, "idle.sh")
    with open(idle, "w") as f:
        f.write("#!/bin/sh\nexec sleep 3600\n")
    os.chmod(idle, 0o755)
    with open(os.path.join(repo, ".crew", "flight.toml"), "w") as f:
        f.write('version = 1\ndefault_backend = "idle"\n[backends.idle]\nadapter = "command"\n'
                'argv = ["%s", "{prompt_file}"]\nconcurrency = 4\ntime_budget = "2h"\n' % idle)
    sh(["git", "add", ".crew/flight.toml"], repo, env)
    sh(["git", "commit", "-q", "-m", "crew config"], repo, env)
    start = time.perf_counter()
    out = sh([binary, "dispatch", "--task", TASK, "--scope", "d000/**", "--prompt", "wait"],
             repo, env)
    run = json.loads(out.stdout)["run"]
    print("  (one live run dispatched in %.1f s)" % (time.perf_counter() - start),
          file=sys.stderr)
    try:
        copier = Copier(repo, run, env)
        for count in (1, staged):
            stage(repo, env, count)
            for live in lives:
                copier.grow_live(live, lambda i: ["d%03d/**" % i])
                against_git("main checkout, %s files, %d live runs, %s staged"
                            % ("{:,}".format(files), live, "{:,}".format(count)),
                            binary, repo, env, runs, rows)
    finally:
        sh([binary, "abandon", run], repo, env, check=False)


def try_install_managers(work, env):
    tools = {}
    venv = os.path.join(work, "venv")
    try:
        sh([sys.executable, "-m", "venv", venv], work, env)
        sh([os.path.join(venv, "bin", "pip"), "install", "-q", "pre-commit"], work, env)
        tools["pre-commit"] = os.path.join(venv, "bin", "pre-commit")
    except (subprocess.CalledProcessError, OSError) as e:
        print("pre-commit framework not installed here:", e, file=sys.stderr)
    npm_dir = os.path.join(work, "npm")
    try:
        os.makedirs(npm_dir, exist_ok=True)
        sh(["npm", "install", "--silent", "--prefix", npm_dir, "lefthook"], work, env)
        tools["lefthook"] = os.path.join(npm_dir, "node_modules", ".bin", "lefthook")
    except (subprocess.CalledProcessError, OSError) as e:
        print("lefthook not installed here:", e, file=sys.stderr)
    return tools


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="10000,50000,200000",
                    help="files in the repositories of the crew-worktree cases")
    ap.add_argument("--files", type=int, default=50000,
                    help="files in the repository of the main-checkout and other cases")
    ap.add_argument("--staged", type=int, default=1000)
    ap.add_argument("--live", default="5,100", help="live runs in the main-checkout cases")
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--work")
    ap.add_argument("--bin", default=BIN)
    ap.add_argument("--only", choices=["worktree", "main", "all"], default="all",
                    help="the crew-worktree cases, the main-checkout cases, or everything")
    ap.add_argument("--no-managers", action="store_true")
    ap.add_argument("--no-footer", action="store_true")
    ap.add_argument("--added-only", action="store_true",
                    help="leave each index as git add leaves it, not as git commit does")
    args = ap.parse_args()
    global ADDED_ONLY
    ADDED_ONLY = args.added_only
    binary = os.path.abspath(args.bin)
    if not os.path.exists(binary):
        sys.exit("build first: cargo build --release")
    work = args.work or tempfile.mkdtemp(prefix="crew-bench-")
    os.makedirs(work, exist_ok=True)
    try:
        rows = []
        print("| case | git diff --cached ms | hook pre-commit ms | hook / git "
              "| git CPU ms | hook CPU ms | hook / git, CPU |")
        print("|---|---:|---:|---:|---:|---:|---:|", flush=True)
        if args.only in ("worktree", "all"):
            worktree_cases(binary, work, [int(s) for s in args.sizes.split(",")],
                           args.staged, args.runs, rows)
        if args.only in ("main", "all"):
            main_checkout_cases(binary, work, args.files, args.staged,
                                [int(s) for s in args.live.split(",")], args.runs, rows)
        if args.only == "all":
            other_cases(binary, work, args)
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


def other_cases(binary, work, args):
    """A plain checkout with no live run, the hook managers and the footer."""
    folder = os.path.join(work, "other")
    os.makedirs(folder)
    home = os.path.join(folder, "home")
    os.makedirs(home, exist_ok=True)
    env = hermetic_env(home)
    env["PATH"] = os.path.dirname(binary) + os.pathsep + env["PATH"]
    print("building a %d-file repository in %s ..." % (args.files, folder), file=sys.stderr)
    repo = build_repo(folder, args.files, env)
    wt, _ = crew_worktree(repo, folder, args.staged, env)
    hook = hook_argv(binary)
    results = {}
    results["git diff --cached --name-only (crew worktree)"] = timed(
        ["git", "diff", "--cached", "--name-only"], wt, env, args.runs)
    results["git-crew hook pre-commit (crew worktree)"] = timed(hook, wt, env, args.runs)
    results["git-crew hook pre-commit (plain checkout)"] = timed(hook, repo, env, args.runs)
    results["git status --porcelain (plain checkout, for scale)"] = timed(
        ["git", "status", "--porcelain", "--untracked-files=no"], repo, env, args.runs)

    if not args.no_managers:
        tools = try_install_managers(folder, env)
        if "pre-commit" in tools:
            with open(os.path.join(wt, ".pre-commit-config.yaml"), "w") as f:
                f.write("repos:\n- repo: local\n  hooks:\n  - id: git-crew-scope\n"
                        "    name: git-crew scope\n    entry: git-crew hook pre-commit\n"
                        "    language: system\n    pass_filenames: false\n    always_run: true\n")
            results["pre-commit run git-crew-scope (crew worktree)"] = timed(
                [tools["pre-commit"], "run", "git-crew-scope"], wt, env, args.runs)
        if "lefthook" in tools:
            with open(os.path.join(wt, "lefthook.yml"), "w") as f:
                f.write("pre-commit:\n  commands:\n    scope:\n      run: git-crew hook pre-commit\n")
            results["lefthook run pre-commit (crew worktree)"] = timed(
                [tools["lefthook"], "run", "pre-commit"], wt, env, args.runs)

    if not args.no_footer:
        transcript = os.path.join(folder, "transcript.log")
        with open(transcript, "wb") as f:
            line = b"worker output line with some words in it, and a bit more text to fill the line\n"
            block = line * 1024
            for _ in range((64 << 20) // len(block)):
                f.write(block)
            f.write(b"## Result\ndone\n## How to verify\nrun it\n## Deferred / concerns\nnone\n")
        results["git-crew footer (64 MiB transcript)"] = timed(
            [binary, "footer", transcript], folder, env, max(5, args.runs // 4))

    print()
    width = max(len(k) for k in results)
    print("%-*s  %10s  %10s  %s" % (width, "case", "median ms", "p90 ms", "exit"))
    for name, r in results.items():
        print("%-*s  %10.2f  %10.2f  %d" % (width, name, r["median_ms"], r["p90_ms"], r["exit"]))
    print("plain-checkout hook median: %.2f ms (target <= 10 ms)"
          % results["git-crew hook pre-commit (plain checkout)"]["median_ms"])


if __name__ == "__main__":
    main()
