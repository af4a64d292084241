#!/usr/bin/env python3
"""On-demand benchmark of the conflict forecast (not run in CI).

    python3 bench/forecast.py [--files 5000] [--passes 20] [--lines 400] [--runs 20] [--work DIR]

Builds a repository of --files files plus a shared file of --lines lines, and --passes
passes awaiting integration by the scripted `edit-lines` worker: each rewrites one line
of the shared file (its own, 15 lines apart, except the second pass, which rewrites the
first pass's line: one clash) and the first line of a file of its own. Then main moves
(a line of the shared file), so every merge onto the tip is a three-way merge of the
file's content. It times, side by side:

  * `git merge-tree --write-tree` for each run onto main and for each pair of runs (the
    merges the forecast makes), one process each: the median of one, and their sum;
  * `git crew status` (every forecast made afresh: a new process has no cache), median
    and p90 of --runs runs after 3 warm-up runs;
  * in one long-lived process (`target/release/examples/forecast_frames`, the way the
    `watch` console and an MCP server keep their context): the first frame of `watch`,
    which makes every merge, and the later frames, which find them cached.

The forecast agrees with git on every pair (checked here too). Target: the forecast for
20 passes costs at most 3x one `git merge-tree --write-tree` per pair.
Needs `cargo build --release --bins --examples`.
"""

import argparse
import itertools
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import BIN, ROOT, build_repo, hermetic_env, sh, timed  # noqa: E402

FRAMES = os.path.join(ROOT, "target", "release", "examples", "forecast_frames")
WORKER = os.path.join(ROOT, "git-fixtures", "workers", "edit-lines.sh")


def merge_tree_ms(repo, env, a, b):
    start = time.perf_counter()
    out = sh(["git", "merge-tree", "--write-tree", a, b], repo, env, check=False)
    ms = (time.perf_counter() - start) * 1000
    if out.returncode not in (0, 1):
        sys.exit("git merge-tree %s %s failed:\n%s" % (a, b, out.stderr.decode()))
    return ms, out.returncode == 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=5000)
    ap.add_argument("--passes", type=int, default=20)
    ap.add_argument("--lines", type=int, default=400)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--work")
    args = ap.parse_args()
    for path in (BIN, FRAMES):
        if not os.path.exists(path):
            sys.exit("build first: cargo build --release --bins --examples")
    if args.lines < 15 * args.passes + 10:
        sys.exit("--lines must leave 15 lines to each pass: at least %d" % (15 * args.passes + 10))
    work = args.work or tempfile.mkdtemp(prefix="crew-bench-forecast-")
    os.makedirs(work, exist_ok=True)
    home = os.path.join(work, "home")
    os.makedirs(home, exist_ok=True)
    env = hermetic_env(home)
    print("building a %d-file repository in %s ..." % (args.files, work), file=sys.stderr)
    repo = build_repo(work, args.files, env)
    shared = os.path.join(repo, "shared.txt")
    with open(shared, "w") as f:
        f.writelines("line %d\n" % i for i in range(1, args.lines + 1))
    sh(["git", "add", "shared.txt"], repo, env)
    sh(["git", "commit", "-q", "-m", "a shared file"], repo, env)
    sh([BIN, "init"], repo, env)
    with open(os.path.join(repo, ".crew", "flight.toml"), "w") as f:
        f.write('version = 1\ndefault_backend = "edit"\n[backends.edit]\nadapter = "command"\n'
                'argv = ["%s", "{prompt_file}"]\nconcurrency = 4\ntime_budget = "60s"\n' % WORKER)

    print("dispatching %d passes ..." % args.passes, file=sys.stderr)
    runs = []
    for i in range(args.passes):
        line = 5 + 15 * (0 if i == 1 else i)
        own = "d%03d/f000.txt" % i
        prompt = "EDIT shared.txt:%d pass %d\nEDIT %s:1 pass %d" % (line, i, own, i)
        out = sh([BIN, "dispatch", "--task", "t%d" % i, "--scope", "shared.txt", "--scope", own,
                  "--verify", "true", "--prompt", prompt], repo, env)
        run = json.loads(out.stdout)["run"]
        sh([BIN, "wait", run, "--timeout", "60s"], repo, env, check=False)
        shown = json.loads(sh([BIN, "show", run], repo, env).stdout)["run"]
        if shown["outcome"] != "pass":
            sys.exit("run %s did not pass: %s" % (run, shown["decision"]))
        runs.append((run, shown["branch"]))
    with open(shared) as f:
        text = f.read()
    with open(shared, "w") as f:
        f.write(text.replace("line 2\n", "line two\n", 1))
    sh(["git", "commit", "-q", "-am", "main moves on"], repo, env)

    # What the forecast says, once, checked against git.
    status = json.loads(sh([BIN, "status", "--json"], repo, env).stdout)
    forecasts = {r["run"]: r["forecast"] for r in status["runs"] if r.get("forecast")}
    if len(forecasts) != args.passes:
        sys.exit("%d forecasts for %d passes" % (len(forecasts), args.passes))

    # git merge-tree for each run onto main and each pair; the agreement checked on each.
    onto_ms, pair_ms, disagree = [], [], 0
    for run, branch in runs:
        ms, conflicts = merge_tree_ms(repo, env, "main", branch)
        onto_ms.append(ms)
        disagree += forecasts[run]["merges_cleanly"] == conflicts
    for (a, ab), (b, bb) in itertools.combinations(runs, 2):
        ms, conflicts = merge_tree_ms(repo, env, ab, bb)
        pair_ms.append(ms)
        disagree += (b in forecasts[a]["conflicts_with"]) != conflicts
    clashes = sum(len(f["conflicts_with"]) for f in forecasts.values()) // 2

    crew = timed([BIN, "status", "--json"], repo, env, args.runs)
    frames = json.loads(sh([FRAMES, repo, "10"], repo, env).stdout)

    one = statistics.median(pair_ms + onto_ms)
    pairs = len(pair_ms)
    per_pair = one * pairs
    all_merges = sum(pair_ms) + sum(onto_ms)
    print("%d passes, %d pairs, %d clash(es), %d disagreement(s) with git" %
          (args.passes, pairs, clashes, disagree))
    print("%-66s %10s" % ("case", "ms"))
    print("%-66s %10.2f" % ("one `git merge-tree --write-tree` (median of %d)" % (pairs + len(onto_ms)), one))
    print("%-66s %10.1f" % ("`git merge-tree --write-tree` x %d pairs (median x pairs)" % pairs, per_pair))
    print("%-66s %10.1f" % ("`git merge-tree --write-tree`, every pair and every run onto main (sum)",
                            all_merges))
    print("%-66s %10.2f" % ("`git crew status` (every forecast made afresh; median)", crew["median_ms"]))
    print("%-66s %10.2f" % ("`git crew status` (p90)", crew["p90_ms"]))
    print("%-66s %10.2f" % ("first `watch` frame in a long-lived process (%d merges)" %
                            frames["merged_first"], frames["first_ms"]))
    print("%-66s %10.2f" % ("later frames, merges cached (median)", frames["later_median_ms"]))
    print("\nforecast (whole `git crew status`) / one merge-tree per pair: %.2fx (target <= 3x)" %
          (crew["median_ms"] / per_pair))
    if disagree:
        sys.exit("the forecast disagrees with git merge-tree")
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
