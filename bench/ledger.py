#!/usr/bin/env python3
"""On-demand benchmark of the ledger (not run in CI).

    python3 bench/ledger.py [--tasks 10000] [--rows 100000] [--writers 16] [--each 50]
                            [--one-task 100000] [--sync-notes 10000] [--changed 10]
                            [--runs 40] [--only spread,writers,one-task,sync]

Every case runs as a separate process, timed side by side with git's nearest operation
in the same run of the bench (alternately, after 3 warm-up runs); medians, and the ratio
of the two.

1. spread: a ledger of --rows rows over --tasks tasks in refs/notes/crew-ledger (written
   with `git fast-import` as the fanned-out tree git itself writes, in the format before
   segments), then `git notes --ref=crew-ledger show <blob of crew-task:T>` against
   `git crew should-stop --task T --model M` on the same task.
2. writers: --writers processes appending --each rows each to one task at once
   (target/release/examples/ledger_writers) and reports lost rows and rows/s.
3. one-task: one task of --one-task rows, laid out as that many appends lay it out (head,
   carry, segments; `ledger_writers --fill`): should-stop against `git notes show` of the
   task's latest note (its head); one row appended (`ledger_writers --append`, one
   process, the notes ref put back before each) to a task of 10 rows and to the
   --one-task task, and to one whose next row rolls its head; should-stop on the same
   rows as one note in the format before segments (what a ledger holds until its first
   append after the upgrade rolls it).
4. sync: a bare remote and a clone with --sync-notes notes (10 rows each); the remote got
   --changed notes changed by another clone, this clone --changed others (half of them
   the same notes). `git crew sync` against `git fetch` + `git notes merge -s
   cat_sort_uniq` + `git push` of the same refs, both sides put back before each run.
Needs `cargo build --release --bins --examples`. The scratch folder is removed unless
--keep.
"""

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import BIN, ROOT, fresh_crew_repo, sh  # noqa: E402

WRITERS = os.path.join(ROOT, "target", "release", "examples", "ledger_writers")


def blob_id(text):
    data = text.encode()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def old_row(task, i, outcome):
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
            old_row(task, i, "fail" if i % 4 == 0 else "pass") + "\n" for i in range(per))
    write_notes(repo, env, "refs/notes/crew-ledger", notes)
    return per


def once(cmds, cwd, env):
    """Runs the commands one after the other; the seconds they took together."""
    start = time.perf_counter()
    for cmd in cmds:
        out = subprocess.run(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        if out.returncode not in (0, 5):
            sys.exit("%s failed (%d):\n%s" % (" ".join(cmd), out.returncode,
                                               out.stderr.decode()))
    return time.perf_counter() - start


def alternate(cases, runs, env, reset=None):
    """{name: (cwd, [argv, ...])} timed alternately, `reset()` before each timed case
    (not timed); {name: median ms}."""
    samples = {name: [] for name in cases}
    for i in range(3 + runs):
        for name, (cwd, cmds) in cases.items():
            if reset:
                reset()
            t = once(cmds, cwd, env)
            if i >= 3:
                samples[name].append(t * 1000)
    return {name: round(statistics.median(v), 2) for name, v in samples.items()}


def spread(args, work, env):
    repo = os.path.join(work, "spread")
    init_repo(repo, env)
    print("spread: %d rows over %d tasks ..." % (args.rows, args.tasks), file=sys.stderr)
    per = build_ledger(repo, env, args.tasks, args.rows)
    task = "task-%05d" % (args.tasks // 2)
    t = alternate({
        "git_notes_show": (repo, [["git", "notes", "--ref=crew-ledger", "show",
                                   blob_id("crew-task:" + task)]]),
        "should_stop": (repo, [[BIN, "should-stop", "--task", task, "--model", "m0"]]),
    }, args.runs, env)
    check = sh([BIN, "should-stop", "--task", task, "--model", "m0"], repo, env, check=False)
    verdict = json.loads(check.stdout)
    return {"rows": args.rows, "tasks": args.tasks, "rows_per_task": per, "ms": t,
            "should_stop_vs_git": round(t["should_stop"] / t["git_notes_show"], 2),
            "verdict": {k: verdict[k] for k in ("decision", "failures")}}


def writers(args, work, env):
    repo = os.path.join(work, "writers")
    init_repo(repo, env)
    out = subprocess.run([WRITERS, repo, str(args.writers), str(args.each)], env=env,
                         capture_output=True, check=True)
    return json.loads(out.stdout)


def fill(repo, env, task, rows, fail_every, until_full=False):
    cmd = [WRITERS, "--fill", repo, task, str(rows), str(fail_every)]
    if until_full:
        cmd.append("--until-full")
    out = subprocess.run(cmd, env=env, capture_output=True, check=True)
    return json.loads(out.stdout)


def one_task(args, work, env):
    repo = os.path.join(work, "one-task")
    init_repo(repo, env)
    n = args.one_task
    print("one-task: %d rows in one task ..." % n, file=sys.stderr)
    # One row in 50 a failure of m0: 2,000 failures, every one of them counted.
    layout = {
        "big": fill(repo, env, "big", n, 50),
        "small": fill(repo, env, "small", 10, 50),
        "full": fill(repo, env, "full", n, 50, until_full=True),
    }
    # The same rows as one note, as git-crew wrote them before segments.
    old = os.path.join(work, "old.jsonl")
    with open(old, "w") as f:
        for i in range(n):
            f.write(old_row("old", i, "fail" if i % 50 == 0 else "pass") + "\n")
    old_blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=repo, env=env,
                              input=b"crew-task:old", capture_output=True,
                              check=True).stdout.decode().strip()
    sh(["git", "notes", "--ref=crew-ledger", "add", "-f", "-F", old, old_blob], repo, env)
    tip = git_out(["rev-parse", "refs/notes/crew-ledger"], repo, env)

    def reset():
        sh(["git", "update-ref", "refs/notes/crew-ledger", tip], repo, env)

    head = blob_id("crew-task:big")
    reads = alternate({
        "git_notes_show_head": (repo, [["git", "notes", "--ref=crew-ledger", "show", head]]),
        "should_stop": (repo, [[BIN, "should-stop", "--task", "big", "--model", "m0"]]),
        "git_notes_show_old_note": (repo, [["git", "notes", "--ref=crew-ledger", "show",
                                            old_blob]]),
        "should_stop_old_note": (repo, [[BIN, "should-stop", "--task", "old",
                                         "--model", "m0"]]),
    }, args.runs, env)
    appends = alternate({
        "append_at_10": (repo, [[WRITERS, "--append", repo, "small"]]),
        "append_at_%d" % n: (repo, [[WRITERS, "--append", repo, "big"]]),
        "append_that_rolls": (repo, [[WRITERS, "--append", repo, "full"]]),
    }, args.runs, env, reset)
    reset()
    listed = alternate({
        "ledger_task": (repo, [[BIN, "ledger", "--task", "big", "--json"]]),
    }, max(3, args.runs // 8), env)
    verdicts = {}
    for task in ("big", "old"):
        out = sh([BIN, "should-stop", "--task", task, "--model", "m0"], repo, env, check=False)
        verdicts[task] = {k: json.loads(out.stdout)[k] for k in ("decision", "failures")}
    rows = json.loads(sh([BIN, "ledger", "--task", "big"], repo, env).stdout)["rows"]
    return {
        "layout": layout, "reads_ms": reads, "appends_ms": appends, "listed_ms": listed,
        "should_stop_vs_git_notes_show_head":
            round(reads["should_stop"] / reads["git_notes_show_head"], 2),
        "append_at_%d_vs_at_10" % n:
            round(appends["append_at_%d" % n] / appends["append_at_10"], 2),
        "append_that_rolls_vs_at_10":
            round(appends["append_that_rolls"] / appends["append_at_10"], 2),
        "verdicts": verdicts, "rows_listed": len(rows),
    }


def sync(args, work, env):
    n, k = args.sync_notes, args.changed
    remote = os.path.join(work, "remote.git")
    sh(["git", "init", "-q", "--bare", remote], work, env)
    a = os.path.join(work, "sync-a")
    init_repo(a, env)
    sh(["git", "remote", "add", "origin", remote], a, env)
    sh(["git", "push", "-q", "origin", "main"], a, env)
    print("sync: %d notes ..." % n, file=sys.stderr)
    build_ledger(a, env, n, n * 10)
    sh(["git", "push", "-q", "origin", "refs/notes/crew-ledger"], a, env)
    # The other clone changes k notes and pushes; this one changes k others, half of
    # them the same.
    b = os.path.join(work, "sync-b")
    sh(["git", "clone", "-q", remote, b], work, env)
    sh(["git", "fetch", "-q", "origin", "refs/notes/*:refs/notes/*"], b, env)
    for t in range(k):
        sh([WRITERS, "--append", b, "task-%05d" % t], b, env)
    sh(["git", "push", "-q", "origin", "refs/notes/crew-ledger"], b, env)
    theirs = git_out(["rev-parse", "refs/notes/crew-ledger"], b, env)
    for t in range(k // 2, k // 2 + k):
        sh([WRITERS, "--append", a, "task-%05d" % t], a, env)
    ours = git_out(["rev-parse", "refs/notes/crew-ledger"], a, env)
    # git's own, from a clone in the same state.
    g = os.path.join(work, "sync-git")
    sh(["git", "clone", "-q", remote, g], work, env)
    sh(["git", "fetch", "-q", a, "refs/notes/crew-ledger:refs/notes/crew-ledger"], g, env)

    def reset():
        sh(["git", "update-ref", "refs/notes/crew-ledger", theirs], remote, env)
        for repo in (a, g):
            sh(["git", "update-ref", "refs/notes/crew-ledger", ours], repo, env)
            sh(["git", "update-ref", "-d", "refs/notes/remotes/origin/crew-ledger"], repo, env,
               check=False)

    tracking = "refs/notes/remotes/origin/crew-ledger"
    t = alternate({
        "git_fetch_notes_merge_push": (g, [
            ["git", "fetch", "-q", "origin", "+refs/notes/crew-ledger:" + tracking],
            ["git", "notes", "--ref=crew-ledger", "merge", "-q", "-s", "cat_sort_uniq",
             tracking],
            ["git", "push", "-q", "origin", "refs/notes/crew-ledger"],
        ]),
        "crew_sync": (a, [[BIN, "sync", "origin"]]),
    }, args.runs, env, reset)
    # Both merges give the same notes: git's (not pushed), then git-crew's.
    reset()
    for cmd in (["git", "fetch", "-q", "origin", "+refs/notes/crew-ledger:" + tracking],
                ["git", "notes", "--ref=crew-ledger", "merge", "-q", "-s", "cat_sort_uniq",
                 tracking]):
        sh(cmd, g, env)
    out = json.loads(sh([BIN, "sync", "origin"], a, env).stdout)
    ledger = [r for r in out["refs"] if r["ref"] == "refs/notes/crew-ledger"][0]
    same = notes_lines(g, env) == notes_lines(a, env)
    return {"notes": n, "changed_each_side": k, "ms": t,
            "sync_vs_git": round(t["crew_sync"] / t["git_fetch_notes_merge_push"], 2),
            "merge": ledger["merge"], "unioned": ledger["unioned"],
            "same_notes_as_git": same}


def notes_lines(repo, env):
    """Every note of refs/notes/crew-ledger as its set of lines."""
    listed = git_out(["notes", "--ref=crew-ledger", "list"], repo, env).splitlines()
    blobs = [line.split()[0] for line in listed]
    out = subprocess.run(["git", "cat-file", "--batch"], cwd=repo, env=env,
                         input=("\n".join(blobs) + "\n").encode(), capture_output=True,
                         check=True).stdout.decode()
    result, pos = [], 0
    for _ in blobs:
        header_end = out.index("\n", pos)
        size = int(out[pos:header_end].split()[2])
        body = out[header_end + 1:header_end + 1 + size]
        result.append(sorted(set(l for l in body.splitlines() if l.strip())))
        pos = header_end + 1 + size + 1
    return {line.split()[1]: lines for line, lines in zip(listed, result)}


def git_out(args, cwd, env):
    return sh(["git"] + args, cwd, env).stdout.decode().strip()


def init_repo(repo, env):
    sh([os.path.join(ROOT, "git-fixtures", "plain.sh"), repo], os.path.dirname(repo), env)
    sh([BIN, "init"], repo, env)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=10000)
    ap.add_argument("--rows", type=int, default=100000)
    ap.add_argument("--writers", type=int, default=16)
    ap.add_argument("--each", type=int, default=50)
    ap.add_argument("--one-task", type=int, default=100000)
    ap.add_argument("--sync-notes", type=int, default=10000)
    ap.add_argument("--changed", type=int, default=10)
    ap.add_argument("--runs", type=int, default=40)
    ap.add_argument("--only", default="spread,writers,one-task,sync")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    for path in (BIN, WRITERS):
        if not os.path.exists(path):
            sys.exit("build first: cargo build --release --bins --examples")
    work, env, _ = fresh_crew_repo("crew-bench-ledger-")
    cases = {"spread": spread, "writers": writers, "one-task": one_task, "sync": sync}
    results = {}
    try:
        for name in args.only.split(","):
            results[name] = cases[name](args, work, env)
            print(json.dumps({name: results[name]}), file=sys.stderr)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
