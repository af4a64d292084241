#!/usr/bin/env python3
"""On-demand benchmark of the supervisor's work after a worker (not run in CI).

    python3 bench/sparse.py [--size 30G] [--budget 5] [--runs 3]

A worker that leaves a sparse file of --size (one `truncate`, no disk used) in its scope
and exits at once with a complete footer, under a --budget seconds time budget:
  * with the default `fences.max_file_size` (100 MiB): the file is measured, never read,
    and the run ends as a scope-reject;
  * with the cap lifted above the file (`--set fences.max_file_size=100GiB`): git has
    --size to hash, and the `git add` is stopped at the budget plus the supervisor's own
    bound (10 s).
For each, the time from dispatch to the run's end (`git crew wait` returning), the run's
recorded elapsed time, the budget and the bound side by side, and how much the object
store grew. Needs a release build (`cargo build --release`).
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import BIN, fresh_crew_repo, sh  # noqa: E402

# The supervisor's own bound past the budget (core::oversize::GRACE).
BOUND_S = 10

WORKER = r"""#!/bin/sh
mkdir -p src
truncate -s "$SIZE" src/big.bin
printf '## Result\nLeft src/big.bin.\n## How to verify\ntrue\n## Deferred / concerns\nNone.\n'
"""


def bytes_under(path):
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except FileNotFoundError:
                pass
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="30G")
    ap.add_argument("--budget", type=int, default=5)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    if not os.path.exists(BIN):
        sys.exit("build first: cargo build --release")
    work, env, repo = fresh_crew_repo("crew-bench-sparse")
    worker = os.path.join(work, "sparse.sh")
    with open(worker, "w") as f:
        f.write(WORKER)
    os.chmod(worker, 0o755)
    with open(os.path.join(repo, ".crew", "flight.toml"), "a") as f:
        f.write('\n[backends.sparse]\nadapter = "command"\nargv = ["%s"]\n'
                'concurrency = 2\ntime_budget = "%ds"\nenv = { SIZE = "%s" }\n'
                % (worker, args.budget, args.size))
    objects = os.path.join(repo, ".git", "objects")

    cases = [("default cap (100 MiB)", []),
             ("cap lifted (100 GiB)", ["--set", "fences.max_file_size=100GiB"])]
    n = 0
    for label, extra in cases:
        walls, recorded = [], []
        for _ in range(args.runs):
            n += 1
            before = bytes_under(objects)
            t0 = time.perf_counter()
            out = sh([BIN, "dispatch", "--task", "sparse%d" % n, "--backend", "sparse",
                      "--prompt", "x", "--scope", "src/**", "--json"] + extra, repo, env)
            run = json.loads(out.stdout)["run"]
            sh([BIN, "wait", run, "--timeout", "30m"], repo, env, check=False)
            walls.append(time.perf_counter() - t0)
            status = json.loads(sh([BIN, "show", run, "--json"], repo, env).stdout)["run"]
            recorded.append(status["elapsed_s"])
            grown = bytes_under(objects) - before
            print("%-22s %5.1f s to the end (recorded %2d s; budget %d s + bound %d s), "
                  "outcome %s, store +%.1f KiB: %s"
                  % (label, walls[-1], status["elapsed_s"], args.budget, BOUND_S,
                     status["outcome"], grown / 1024, status["decision"]))
            # The worktree holds the sparse file: remove it before the next run.
            os.remove(os.path.join(status["worktree"], "src", "big.bin"))
        print("%-22s median %.1f s (target: at most %d s)\n"
              % (label, statistics.median(walls), args.budget + BOUND_S))


if __name__ == "__main__":
    main()
