#!/usr/bin/env python3
"""On-demand benchmark of dispatch and status (not run in CI).

    python3 bench/dispatch.py [--files 50000] [--runs 8] [--records 1000] [--work DIR]

On a repository of --files files it times, side by side:
  * `git worktree add -b <branch> <path>` (the reference), and
  * `git crew dispatch` (worktree, branch, identity, hooks, prompt, live pointer and a
    detached supervisor; the worker is `true`), each on a fresh task;
then, with --records finished runs on record, `git crew status` (median of 40 runs).
Needs a release build (`cargo build --release`).
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import BIN, build_repo, hermetic_env, sh, timed  # noqa: E402


def one(args, cwd, env):
    start = time.perf_counter()
    out = sh(args, cwd, env, check=False)
    ms = (time.perf_counter() - start) * 1000
    if out.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(args), out.stdout.decode(), out.stderr.decode()))
    return ms, out.stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=50000)
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--records", type=int, default=1000)
    ap.add_argument("--work")
    args = ap.parse_args()
    if not os.path.exists(BIN):
        sys.exit("build first: cargo build --release")
    work = args.work or tempfile.mkdtemp(prefix="crew-bench-dispatch-")
    os.makedirs(work, exist_ok=True)
    home = os.path.join(work, "home")
    os.makedirs(home, exist_ok=True)
    env = hermetic_env(home)
    print("building a %d-file repository in %s ..." % (args.files, work), file=sys.stderr)
    repo = build_repo(work, args.files, env)
    sh([BIN, "init"], repo, env)
    with open(os.path.join(repo, ".crew", "flight.toml"), "w") as f:
        f.write('version = 1\ndefault_backend = "noop"\n[backends.noop]\nadapter = "command"\n'
                'argv = ["true"]\nconcurrency = 1000\n')

    git_ms, crew_ms = [], []
    for i in range(args.runs):
        path = os.path.join(work, "plain-wt-%d" % i)
        ms, _ = one(["git", "worktree", "add", "-q", "-b", "bench-%d" % i, path], repo, env)
        git_ms.append(ms)
        sh(["git", "worktree", "remove", "--force", path], repo, env)
        ms, out = one([BIN, "dispatch", "--task", "t%d" % i, "--scope", "d%03d/**" % i,
                       "--prompt", "nothing to do"], repo, env)
        crew_ms.append(ms)
        run = json.loads(out)["run"]
        sh([BIN, "wait", run, "--timeout", "60s"], repo, env, check=False)
        wt = json.loads(sh([BIN, "show", run], repo, env).stdout)["run"]["worktree"]
        sh(["git", "worktree", "remove", "--force", wt], repo, env, check=False)

    # status with --records finished runs on file
    runs_dir = os.path.join(repo, ".git", "crew", "runs")
    sample_name = sorted(n for n in os.listdir(runs_dir) if n.endswith(".json"))[0]
    with open(os.path.join(runs_dir, sample_name)) as f:
        sample = json.load(f)
    for i in range(args.records):
        run = "20260101-%06d-%04x" % (i, i)
        record = dict(sample, run=run, task="task-%d" % i)
        with open(os.path.join(runs_dir, run + ".json"), "w") as f:
            json.dump(record, f)
    status = timed([BIN, "status"], repo, env, 40)
    status_all = timed([BIN, "status", "--all"], repo, env, 10)

    g, c = statistics.median(git_ms), statistics.median(crew_ms)
    print("%-52s %10s" % ("case", "median ms"))
    print("%-52s %10.1f" % ("git worktree add (50,000 files)", g))
    print("%-52s %10.1f" % ("git crew dispatch (50,000 files)", c))
    print("%-52s %10.2f" % ("git crew status (%d runs on record)" % args.records, status["median_ms"]))
    print("%-52s %10.2f" % ("git crew status --all (%d runs on record)" % args.records, status_all["median_ms"]))
    print("\ndispatch / git worktree add: %.2fx (target <= 1.0x)" % (c / g))
    print("status median: %.2f ms (target <= 20 ms)" % status["median_ms"])
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
