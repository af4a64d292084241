#!/usr/bin/env python3
"""On-demand benchmark of git-crew's hot paths (not run in CI).

    python3 bench/run.py [--files 50000] [--staged 1000] [--runs 40] [--work DIR]

Builds a repository of --files files, a crew worktree whose scope covers --staged
modified and staged files, and times side by side (median and p90 of --runs runs):

  * `git diff --cached --name-only` in the crew worktree (the reference);
  * `git-crew hook pre-commit` in the crew worktree (the scope check);
  * `git-crew hook pre-commit` in a plain checkout (no live run, and one live run);
  * the same check run through the hook managers people use, where they install here:
    the pre-commit framework (PyPI) and lefthook (npm);
  * `git-crew footer` on a 64 MiB transcript.

Needs a release build (`cargo build --release`); the binary is taken from
target/release/git-crew.
"""

import argparse
import json
import os
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


def crew_worktree(repo, work, staged, env):
    sh(["git", "config", "extensions.worktreeConfig", "true"], repo, env)
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
    return wt, dirs


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
    ap.add_argument("--files", type=int, default=50000)
    ap.add_argument("--staged", type=int, default=1000)
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--work")
    ap.add_argument("--no-managers", action="store_true")
    args = ap.parse_args()
    if not os.path.exists(BIN):
        sys.exit("build first: cargo build --release")
    work = args.work or tempfile.mkdtemp(prefix="crew-bench-")
    os.makedirs(work, exist_ok=True)
    home = os.path.join(work, "home")
    os.makedirs(home, exist_ok=True)
    env = hermetic_env(home)

    print("building a %d-file repository in %s ..." % (args.files, work), file=sys.stderr)
    repo = build_repo(work, args.files, env)
    wt, dirs = crew_worktree(repo, work, args.staged, env)
    hook = [BIN, "hook", "pre-commit"]
    results = {}
    results["git diff --cached --name-only (crew worktree)"] = timed(
        ["git", "diff", "--cached", "--name-only"], wt, env, args.runs)
    results["git-crew hook pre-commit (crew worktree)"] = timed(hook, wt, env, args.runs)
    results["git-crew hook pre-commit (plain checkout)"] = timed(hook, repo, env, args.runs)
    results["git status --porcelain (plain checkout, for scale)"] = timed(
        ["git", "status", "--porcelain", "--untracked-files=no"], repo, env, args.runs)

    live = os.path.join(repo, ".git", "crew", "live")
    os.makedirs(live, exist_ok=True)
    with open(os.path.join(live, "r1.json"), "w") as f:
        json.dump({"run": "r1", "task": "bench", "scope": ["d%03d/**" % d for d in range(dirs)]}, f)
    results["git-crew hook pre-commit (plain checkout, one live run)"] = timed(hook, repo, env, args.runs)
    os.remove(os.path.join(live, "r1.json"))

    if not args.no_managers:
        tools = try_install_managers(work, env)
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

    transcript = os.path.join(work, "transcript.log")
    with open(transcript, "wb") as f:
        line = b"worker output line with some words in it, and a bit more text to fill the line\n"
        block = line * 1024
        for _ in range((64 << 20) // len(block)):
            f.write(block)
        f.write(b"## Result\ndone\n## How to verify\nrun it\n## Deferred / concerns\nnone\n")
    results["git-crew footer (64 MiB transcript)"] = timed(
        [BIN, "footer", transcript], work, env, max(5, args.runs // 4))

    width = max(len(k) for k in results)
    print("%-*s  %10s  %10s  %s" % (width, "case", "median ms", "p90 ms", "exit"))
    for name, r in results.items():
        print("%-*s  %10.2f  %10.2f  %d" % (width, name, r["median_ms"], r["p90_ms"], r["exit"]))
    ref = results["git diff --cached --name-only (crew worktree)"]["median_ms"]
    crew = results["git-crew hook pre-commit (crew worktree)"]["median_ms"]
    print("\ncrew-worktree hook / git diff --cached: %.2fx (target <= 1.0x)" % (crew / ref))
    print("plain-checkout hook median: %.2f ms (target <= 10 ms)"
          % results["git-crew hook pre-commit (plain checkout)"]["median_ms"])
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
