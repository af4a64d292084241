#!/usr/bin/env python3
"""On-demand benchmark of a fleet's claims and landings on a loopback remote (not run in CI).

    python3 bench/fleet.py [--runs 15] [--warm 2] [--work DIR] [--keep]

A bare remote made from git-fixtures/crew-repo.sh, served by `git daemon` on 127.0.0.1
(its own process group, killed at the end however the bench ends), and three clones of
it over git://. Each case is a separate process, timed alternately with its reference in
the same run of the bench, after --warm warm-up rounds; medians of --runs, and ratios.

1. claim: `git push --porcelain --atomic --force-with-lease=<ref>: origin <blob>:<ref>`
   of one new ref (the reference); `git crew dispatch` of a fresh task with no remote;
   `git crew dispatch --remote origin` of a fresh task (the claim: fetch the claims,
   decide, push the claim with the serial ref in one atomic push, leased). The worker
   hangs (it is abandoned at the end), so no run's end pushes meanwhile. The claim's own
   cost is the difference of the two dispatches.
2. land: a pass (the `own-file` worker, its scope its one file, its verify `test -f`)
   landed with `git crew integrate RUN --remote origin` (fetch, notes merged, the merge
   on the remote's tip, verified again there since the remote moved, one atomic push of
   main, refs/notes/crew, refs/notes/crew-ledger and the claim's release); against a
   plain `git push --porcelain --atomic` with a lease on each of the same refs (a merge
   commit on main, a note on it in each notes ref, a claim ref deleted: made beforehand,
   untimed, on another clone); and `git crew integrate RUN` of the same kind of pass on a
   third clone, locally (no remote), for scale.
Needs a release build (`cargo build --release`). The scratch folder is removed unless
--keep.
"""

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import BIN, ROOT, hermetic_env, sh  # noqa: E402

SETS = [
    "--set", "fleet.machine=bench-a", "--set", 'fleet.lease="10m"',
    "--set", "backends.hang.concurrency=1000", "--set", 'backends.hang.time_budget="30m"',
    "--set", "backends.own-file.concurrency=1000",
]


def timed(args, cwd, env):
    start = time.perf_counter()
    out = sh(args, cwd, env, check=False)
    ms = (time.perf_counter() - start) * 1000
    if out.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(args), out.stdout.decode(),
                                        out.stderr.decode()))
    return ms, out.stdout.decode()


def git(args, cwd, env):
    return sh(["git"] + args, cwd, env).stdout.decode().strip()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_daemon(base, env):
    port = free_port()
    daemon = subprocess.Popen(
        ["git", "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack",
         "--listen=127.0.0.1", "--port=%d" % port, "--base-path=" + base, base],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        start_new_session=True)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return daemon, port
        except OSError:
            time.sleep(0.05)
    os.killpg(daemon.pid, signal.SIGKILL)
    sys.exit("git daemon did not listen")


def clone(url, work, name, env):
    dir = os.path.join(work, name)
    sh(["git", "clone", "-q", url, dir], work, env)
    sh([BIN, "init"], dir, env)
    return dir


def dispatch(dir, env, task, scope, backend, extra):
    return [BIN, "dispatch", "--task", task, "--scope", scope, "--backend", backend,
            "--prompt", "x"] + extra + SETS


def passes(dir, env, prefix, n, remote):
    """n passes of the own-file worker, each its own task and file, ended."""
    runs = []
    for i in range(n):
        task = "%s%d" % (prefix, i)
        args = dispatch(dir, env, task, "work/%s.txt" % task, "own-file",
                        ["--verify", "test -f work/%s.txt" % task]
                        + (["--remote", "origin"] if remote else []))
        _, out = timed(args, dir, env)
        runs.append(json.loads(out)["run"])
    sh([BIN, "wait", "--timeout", "600s"] + runs, dir, env)
    return runs


def median(samples):
    return round(statistics.median(samples), 2)


def claims(a, b, env, rounds, warm):
    plain, local, remote = [], [], []
    for i in range(rounds):
        blob = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=b, env=env,
                              input=("claim %d\n" % i).encode(), check=True,
                              stdout=subprocess.PIPE).stdout.decode().strip()
        ref = "refs/crew/bench/plain-%d" % i
        ms_plain, _ = timed(["git", "push", "--porcelain", "--atomic",
                             "--force-with-lease=%s:" % ref, "origin",
                             "%s:%s" % (blob, ref)], b, env)
        ms_local, _ = timed(dispatch(a, env, "l%d" % i, "l/%d/**" % i, "hang", []), a, env)
        ms_remote, _ = timed(dispatch(a, env, "r%d" % i, "r/%d/**" % i, "hang",
                                      ["--remote", "origin"]), a, env)
        if i >= warm:
            plain.append(ms_plain)
            local.append(ms_local)
            remote.append(ms_remote)
    return plain, local, remote


def prepare_plain_landing(b, bare, env, i):
    """On clone b: a merge commit on main over the remote's tip, a note on it in each
    notes ref over the remote's, and a claim ref on the remote to delete; the push's
    arguments."""
    git(["fetch", "-q", "origin", "+refs/heads/main:refs/remotes/origin/main",
         "+refs/notes/crew*:refs/notes/crew*"], b, env)
    git(["checkout", "-q", "-B", "main", "origin/main"], b, env)
    old_main = git(["rev-parse", "HEAD"], b, env)
    git(["checkout", "-q", "-b", "side-%d" % i], b, env)
    os.makedirs(os.path.join(b, "plain"), exist_ok=True)
    with open(os.path.join(b, "plain", "%d.txt" % i), "w") as f:
        f.write("plain %d\n" % i)
    git(["add", "plain"], b, env)
    git(["commit", "-q", "-m", "plain %d" % i], b, env)
    git(["checkout", "-q", "main"], b, env)
    git(["merge", "-q", "--no-ff", "-m", "merge plain %d" % i, "side-%d" % i], b, env)
    leases = ["--force-with-lease=refs/heads/main:%s" % old_main]
    specs = ["main"]
    for ref in ["refs/notes/crew", "refs/notes/crew-ledger"]:
        old = sh(["git", "rev-parse", "-q", "--verify", ref], b, env,
                 check=False).stdout.decode().strip()
        git(["notes", "--ref=" + ref, "add", "-f", "-m", '{"run":"plain-%d"}' % i, "HEAD"],
            b, env)
        leases.append("--force-with-lease=%s:%s" % (ref, old))
        specs.append(ref)
    claim = subprocess.run(["git", "hash-object", "-w", "--stdin"], cwd=bare, env=env,
                           input=("plain claim %d\n" % i).encode(), check=True,
                           stdout=subprocess.PIPE).stdout.decode().strip()
    ref = "refs/crew/claims/plain-%d" % i
    git(["update-ref", ref, claim], bare, env)
    leases.append("--force-with-lease=%s:%s" % (ref, claim))
    specs.append(":" + ref)
    return ["git", "push", "--porcelain", "--atomic"] + leases + ["origin"] + specs


def landings(a, b, c, bare, env, rounds, warm):
    remote_runs = passes(a, env, "p", rounds, True)
    local_runs = passes(c, env, "q", rounds, False)
    plain, remote, local, tries = [], [], [], []
    for i in range(rounds):
        push = prepare_plain_landing(b, bare, env, i)
        ms_plain, _ = timed(push, b, env)
        ms_remote, out = timed([BIN, "integrate", remote_runs[i], "--remote", "origin"]
                               + SETS, a, env)
        ms_local, _ = timed([BIN, "integrate", local_runs[i]] + SETS, c, env)
        if i >= warm:
            plain.append(ms_plain)
            remote.append(ms_remote)
            local.append(ms_local)
            tries.append(json.loads(out)["remote"]["tries"])
    return plain, remote, local, tries


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--warm", type=int, default=2)
    ap.add_argument("--work")
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    if not os.path.exists(BIN):
        sys.exit("build first: cargo build --release")
    work = args.work or tempfile.mkdtemp(prefix="crew-bench-fleet-")
    os.makedirs(work, exist_ok=True)
    home = os.path.join(work, "home")
    os.makedirs(home, exist_ok=True)
    env = hermetic_env(home)
    env["TMPDIR"] = os.path.join(work, "tmp")
    os.makedirs(env["TMPDIR"], exist_ok=True)
    origin = os.path.join(work, "origin")
    sh([os.path.join(ROOT, "git-fixtures", "crew-repo.sh"), origin], work, env)
    srv = os.path.join(work, "srv")
    os.makedirs(srv)
    bare = os.path.join(srv, "remote.git")
    sh(["git", "clone", "-q", "--bare", origin, bare], work, env)
    daemon, port = start_daemon(srv, env)
    rounds = args.warm + args.runs
    try:
        url = "git://127.0.0.1:%d/remote.git" % port
        a, b, c = (clone(url, work, name, env) for name in ["a", "b", "c"])
        print("claims ...", file=sys.stderr)
        c_plain, c_local, c_remote = claims(a, b, env, rounds, args.warm)
        live = json.loads(sh([BIN, "status"], a, env).stdout)["runs"]
        for run in live:
            sh([BIN, "abandon", run["run"]], a, env, check=False)
        print("landings ...", file=sys.stderr)
        l_plain, l_remote, l_local, tries = landings(a, b, c, bare, env, rounds, args.warm)
        fsck = sh(["git", "fsck", "--no-progress"], bare, env, check=False).returncode
    finally:
        os.killpg(daemon.pid, signal.SIGKILL)
        daemon.wait()
    claim_plain, claim_local, claim_remote = (median(x) for x in (c_plain, c_local, c_remote))
    land_plain, land_remote, land_local = (median(x) for x in (l_plain, l_remote, l_local))
    claim_cost = round(claim_remote - claim_local, 2)
    result = {
        "runs": args.runs,
        "claim": {
            "git push --atomic --force-with-lease (one new ref)": claim_plain,
            "git crew dispatch (no remote)": claim_local,
            "git crew dispatch --remote origin": claim_remote,
            "the claim (the difference)": claim_cost,
            "ratio claim / git push": round(claim_cost / claim_plain, 2),
        },
        "land": {
            "git push --atomic (main, 2 notes refs, a claim deleted; leased)": land_plain,
            "git crew integrate --remote origin": land_remote,
            "git crew integrate (local, for scale)": land_local,
            "ratio integrate --remote / git push": round(land_remote / land_plain, 2),
            "ratio integrate --remote / integrate": round(land_remote / land_local, 2),
            "tries (max)": max(tries),
        },
        "fsck_exit": fsck,
    }
    print(json.dumps(result, indent=2))
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
