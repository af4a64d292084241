#!/usr/bin/env python3
"""On-demand benchmark of the ledger (not run in CI).

    python3 bench/ledger.py [--tasks 10000] [--rows 100000] [--writers 16] [--each 50]

1. Builds a ledger of --rows rows over --tasks tasks in refs/notes/crew-ledger (written
   with `git fast-import` as the fanned-out tree git itself writes), then times, as separate
   processes (median and p90 of 40 runs after 3 warm-up runs):
     * `git notes --ref=crew-ledger show <blob of crew-task:T>` (the reference), and
     * `git crew should-stop --task T --model M` on the same task.
2. Runs --writers processes appending --each rows each to one task's note at once
   (target/release/examples/ledger_writers) and reports lost rows and rows/s.
Needs `cargo build --release --bins --examples`.
"""

import argparse
import hashlib
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import BIN, ROOT, fresh_crew_repo, sh, timed  # noqa: E402

WRITERS = os.path.join(ROOT, "target", "release", "examples", "ledger_writers")


def blob_id(text):
    data = text.encode()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def row(task, i, outcome):
    return json.dumps({
        "at": "2026-01-01T00:%02d:%02dZ" % (i // 60 % 60, i % 60), "run": "r-%s-%d" % (task, i),
        "attempt": 1, "task": task, "backend": "codex", "model": "m%d" % (i % 3),
        "effort": "high", "tier": "mid", "role": "implement", "worker": None,
        "claimed": "done", "outcome": outcome, "reward": 0.0, "size_h": 1.0, "wall_s": 60,
        "files_changed": 3, "scope_changed": False,
    }, separators=(",", ":"))


def write_notes(repo, env, ref, notes):
    """Writes {annotated object id: text} as the notes commit of `ref`, as git lays out a
    notes tree of this size (one fan-out level), with `git fast-import`."""
    lines = ["commit %s" % ref, "committer bench <b@x> 0 +0000", "data 5", "bench"]
    for key, text in notes.items():
        data = text.encode()
        lines += ["M 100644 inline %s/%s" % (key[:2], key[2:]), "data %d" % len(data),
                  data.decode()]
    stream = ("\n".join(lines) + "\n").encode()
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo, env=env, input=stream,
                   check=True)


def build_ledger(repo, env, tasks, rows):
    per = rows // tasks
    notes = {}
    for t in range(tasks):
        task = "task-%05d" % t
        notes[blob_id("crew-task:" + task)] = "".join(
            row(task, i, "fail" if i % 4 == 0 else "pass") + "\n" for i in range(per))
    write_notes(repo, env, "refs/notes/crew-ledger", notes)
    return per


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=10000)
    ap.add_argument("--rows", type=int, default=100000)
    ap.add_argument("--writers", type=int, default=16)
    ap.add_argument("--each", type=int, default=50)
    ap.add_argument("--runs", type=int, default=40)
    args = ap.parse_args()
    for path in (BIN, WRITERS):
        if not os.path.exists(path):
            sys.exit("build first: cargo build --release --bins --examples")
    _, env, repo = fresh_crew_repo("crew-bench-ledger-")
    print("writing %d rows over %d tasks ..." % (args.rows, args.tasks), file=sys.stderr)
    per = build_ledger(repo, env, args.tasks, args.rows)
    task = "task-%05d" % (args.tasks // 2)
    git = timed(["git", "notes", "--ref=crew-ledger", "show", blob_id("crew-task:" + task)],
                repo, env, args.runs)
    crew = timed([BIN, "should-stop", "--task", task, "--model", "m0"], repo, env, args.runs)
    check = sh([BIN, "should-stop", "--task", task, "--model", "m0"], repo, env, check=False)
    verdict = json.loads(check.stdout)
    results = {
        "rows": args.rows, "tasks": args.tasks, "rows_per_task": per,
        "git_notes_show": git, "should_stop": crew,
        "should_stop_vs_git": round(crew["median_ms"] / git["median_ms"], 2),
        "verdict": {k: verdict[k] for k in ("decision", "failures")},
    }
    out = subprocess.run([WRITERS, repo, str(args.writers), str(args.each)], env=env,
                         capture_output=True, check=True)
    results["writers"] = json.loads(out.stdout)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
