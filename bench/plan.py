#!/usr/bin/env python3
"""On-demand benchmark of `git crew plan status` (not run in CI).

    python3 bench/plan.py [--tasks 500] [--runs 2000] [--samples 40]

Builds a plan of --tasks tasks in 10 waves (each task depends on one of the wave before,
each wave held by a gate, half the gates passed) and --runs recorded runs: ledger rows
spread over the tasks in refs/notes/crew-ledger, the first half of the tasks integrated
(listed in docs/state/crew.json in HEAD). Then times `git crew plan status` (median and
p90 of --samples runs after 3 warm-up runs; and, separately, right after the ledger
changed, when the learnt stats are recomputed), with `git status` on the same repository
for scale. Needs a release build (`cargo build --release`).
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ledger import blob_id, write_notes  # noqa: E402
from run import BIN, fresh_crew_repo, sh, timed  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=500)
    ap.add_argument("--runs", type=int, default=2000)
    ap.add_argument("--samples", type=int, default=40)
    args = ap.parse_args()
    if not os.path.exists(BIN):
        sys.exit("build first: cargo build --release")
    _, env, repo = fresh_crew_repo("crew-bench-plan-")

    waves = 10
    per_wave = args.tasks // waves
    lines = ['[plan]', 'id = "big"', '']
    for t in range(args.tasks):
        wave = t // per_wave + 1
        lines += ['[[tasks]]', 'id = "t%04d"' % t, 'wave = %d' % wave,
                  'scope = ["src/t%04d/**"]' % t, 'prompt = "task %d"' % t,
                  'size = %.1f' % (0.5 + (t % 8) * 0.5)]
        if wave > 1:
            lines.append('depends_on = ["t%04d"]' % (t - per_wave))
        lines.append('')
    for w in range(1, waves):
        lines += ['[[gates]]', 'id = "g%d"' % w, 'closes_wave = %d' % w,
                  'gates_waves = [%d]' % (w + 1), '']
    os.makedirs(os.path.join(repo, ".crew", "plans"), exist_ok=True)
    with open(os.path.join(repo, ".crew", "plans", "big.toml"), "w") as f:
        f.write("\n".join(lines))
    done = [{"run": "r%05d" % t, "task": "t%04d" % t, "backend": "codex", "model": "m",
             "integrated_at": "2026-01-01T00:00:00Z"} for t in range(args.tasks // 2)]
    os.makedirs(os.path.join(repo, "docs", "state"), exist_ok=True)
    with open(os.path.join(repo, "docs", "state", "crew.json"), "w") as f:
        json.dump({"version": 1, "roster": {}, "runs": done}, f, indent=2)
    sh(["git", "add", "-A"], repo, env)
    sh(["git", "commit", "-q", "-m", "plan and state"], repo, env)

    # The ledger: --runs rows over the tasks.
    rows = {}
    for i in range(args.runs):
        task = "t%04d" % (i % args.tasks)
        rows.setdefault(task, []).append(json.dumps({
            "at": "2026-01-01T00:%02d:%02dZ" % (i // 60 % 60, i % 60), "run": "x%05d" % i,
            "attempt": 1, "task": task, "backend": "codex", "model": "m", "effort": "high",
            "tier": "mid", "role": "implement", "worker": None, "claimed": "done",
            "outcome": "pass" if i % 3 else "fail", "reward": 1.0, "size_h": 1.0,
            "wall_s": 1800 + i % 900, "files_changed": 2, "scope_changed": False,
        }, separators=(",", ":")))
    write_notes(repo, env, "refs/notes/crew-ledger",
                {blob_id("crew-task:" + task): "".join(r + "\n" for r in task_rows)
                 for task, task_rows in rows.items()})
    for w in range(1, waves, 2):
        sh([BIN, "gate", "record", "g%d" % w, "--verdict", "pass", "--evidence", "bench"],
           repo, env)

    out = sh([BIN, "plan", "status"], repo, env, check=False)
    status = json.loads(out.stdout)
    counts = {}
    for t in status["tasks"]:
        counts[t["status"]] = counts.get(t["status"], 0) + 1
    cache = os.path.join(repo, ".git", "crew", "cache", "ledger-learnt.json")
    cold = []
    for _ in range(10):
        if os.path.exists(cache):
            os.remove(cache)
        start = time.perf_counter()
        sh([BIN, "plan", "status"], repo, env)
        cold.append((time.perf_counter() - start) * 1000)
    results = {
        "tasks": args.tasks, "runs": args.runs, "statuses": counts,
        "plan_status": timed([BIN, "plan", "status"], repo, env, args.samples),
        "plan_status_ledger_changed": {"median_ms": round(statistics.median(cold), 2)},
        "git_status": timed(["git", "status", "--porcelain"], repo, env, args.samples),
    }
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
