#!/usr/bin/env python3
"""On-demand benchmark of dispatch, integrate and status (not run in CI).

    python3 bench/dispatch.py [--files 50000] [--runs 8] [--records 1000] [--work DIR]
    python3 bench/dispatch.py --scale [--sizes 1000,5000] [--repeat 7] [--parallel 32]
                              [--rounds 5] [--work DIR] [--keep] [--bin PATH]
                              [--only dispatch|integrate]

On a repository of --files files it times, side by side:
  * `git worktree add -b <branch> <path>` (the reference), and
  * `git crew dispatch` (worktree, branch, identity, hooks, prompt, live pointer and a
    detached supervisor; the worker is `true`), each on a fresh task;
then, with --records finished runs on record, `git crew status` (median of 40 runs).

With --scale, on `git-fixtures/plain.sh`'s repository, every figure next to git's
nearest operation in the same run, each case a separate process, alternately:
  * `git crew dispatch` (worker `true`) against `git worktree add -b`, in a fresh
    repository and in one holding each of --sizes finished runs (bench/prune.py's
    generator: one real run, integrated with its worktree kept, copied with its refs,
    record, run folder and worktree);
  * --parallel dispatches of disjoint scopes started at once against as many
    `git worktree add` at once: the slowest of each round, median of --rounds; the
    worker sleeps through the burst (as a real one works for minutes), and, apart, the
    worker is `true` (its supervisor files the run during the burst);
  * `git crew integrate` of a finished pass (a scripted worker wrote one file; no
    verify, so none again; cleanup removes its worktree) against `git merge --no-ff` of
    a branch of one commit, both into the lead's checked-out `main`, at each size.
Needs a release build (`cargo build --release`).
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import BIN, ROOT, build_repo, hermetic_env, sh, timed  # noqa: E402


def one(args, cwd, env):
    start = time.perf_counter()
    out = sh(args, cwd, env, check=False)
    ms = (time.perf_counter() - start) * 1000
    if out.returncode != 0:
        sys.exit("failed: %s\n%s%s" % (" ".join(args), out.stdout.decode(), out.stderr.decode()))
    return ms, out.stdout


FLIGHT = ('version = 1\ndefault_backend = "own"\n'
          '[backends.own]\nadapter = "command"\nargv = ["%s", "{prompt_file}"]\n'
          'concurrency = 1000\ntime_budget = "60s"\n'
          '[backends.noop]\nadapter = "command"\nargv = ["true"]\nconcurrency = 1000\n'
          '[backends.nap]\nadapter = "command"\nargv = ["sleep", "5"]\nconcurrency = 1000\n'
          % os.path.join(ROOT, "git-fixtures", "workers", "own-file.sh"))


def git(args, cwd, env):
    out = sh(["git"] + args, cwd, env, check=False)
    if out.returncode != 0:
        sys.exit("git %s failed:\n%s" % (" ".join(args), out.stderr.decode()))
    return out.stdout.decode().strip()


def configure(repo, env):
    """The flight both repositories dispatch with, committed: the lead's checkout stays
    clean for integrate."""
    with open(os.path.join(repo, ".crew", "flight.toml"), "w") as f:
        f.write(FLIGHT)
    git(["add", ".crew/flight.toml"], repo, env)
    git(["commit", "-q", "-m", "bench flight"], repo, env)


class Scale:
    """The cases of --scale on one repository, numbered so that no name repeats."""

    def __init__(self, repo, env, work):
        self.repo, self.env, self.work = repo, env, work
        self.n = 0
        # `git worktree add`s at once that failed and were made again.
        self.retried = 0

    def next(self):
        self.n += 1
        return self.n

    def crew_json(self, args):
        ms, out = one([BIN] + args, self.repo, self.env)
        return ms, json.loads(out)

    def settle(self, run):
        sh([BIN, "wait", run, "--timeout", "120s"], self.repo, self.env, check=False)

    def worktree_add(self):
        """`git worktree add -b`, timed; then removed, untimed."""
        i = self.next()
        path = os.path.join(self.work, "plain-wt-%d" % i)
        ms, _ = one(["git", "worktree", "add", "-q", "-b", "bench-wt-%d" % i, path],
                    self.repo, self.env)
        git(["worktree", "remove", "--force", path], self.repo, self.env)
        git(["branch", "-q", "-D", "bench-wt-%d" % i], self.repo, self.env)
        return ms

    def dispatch(self):
        """`git crew dispatch` of a fresh task (worker `true`), timed; waited for, untimed."""
        i = self.next()
        ms, out = self.crew_json(["dispatch", "--task", "bench-d%d" % i, "--scope",
                                  "bench/d%d/**" % i, "--backend", "noop", "--prompt", "x"])
        self.settle(out["run"])
        return ms

    def merge_no_ff(self):
        """`git merge --no-ff` of a branch of one commit (one new file), made untimed."""
        i = self.next()
        index = os.path.join(self.work, "bench-index")
        ienv = dict(self.env, GIT_INDEX_FILE=index)
        git(["read-tree", "HEAD"], self.repo, ienv)
        path = os.path.join(self.work, "blob")
        with open(path, "w") as f:
            f.write("merged by git %d\n" % i)
        blob = git(["hash-object", "-w", path], self.repo, self.env)
        git(["update-index", "--add", "--cacheinfo", "100644,%s,work/git-%d.txt" % (blob, i)],
            self.repo, ienv)
        tree = git(["write-tree"], self.repo, ienv)
        os.remove(index)
        commit = git(["commit-tree", tree, "-p", "HEAD", "-m", "work %d" % i], self.repo,
                     self.env)
        git(["update-ref", "refs/heads/bench-m%d" % i, commit], self.repo, self.env)
        # git's own merge: git-crew's post-merge hook (the audit of a merge made by hand)
        # is not git's cost.
        ms, _ = one(["git", "-c", "core.hooksPath=/dev/null", "merge", "--no-ff", "--no-edit",
                     "-q", "bench-m%d" % i], self.repo, self.env)
        return ms

    def integrate(self):
        """`git crew integrate` of a pass (dispatched and waited for, untimed)."""
        i = self.next()
        _, out = self.crew_json(["dispatch", "--task", "bench-i%d" % i, "--scope",
                                 "work/bench-i%d.txt" % i, "--backend", "own", "--prompt",
                                 "x"])
        run = out["run"]
        self.settle(run)
        ms, out = self.crew_json(["integrate", run])
        if out.get("cleanup", {}).get("worktree") != "removed":
            sys.exit("integrate did not remove the worktree: %s" % out)
        return ms

    def again(self, args, i, k):
        """A `git worktree add` of `at_once` that failed, cleaned up and run again until it
        succeeds: its output."""
        path = os.path.join(self.work, "par-%d-%d" % (i, k))
        for _ in range(10):
            shutil.rmtree(path, ignore_errors=True)
            sh(["git", "worktree", "prune"], self.repo, self.env, check=False)
            sh(["git", "branch", "-q", "-D", "bench-p%d-%d" % (i, k)], self.repo, self.env,
               check=False)
            out = sh(args, self.repo, self.env, check=False)
            if out.returncode == 0:
                self.retried += 1
                return out.stdout, out.stderr
        sys.exit("git worktree add kept failing: %s" % out.stderr.decode())

    def at_once(self, count, crew, backend="nap"):
        """`count` dispatches (or `git worktree add`) started at once: the slowest, ms.
        The dispatches' worker is `backend`'s: `nap` sleeps through the burst, as a real
        worker would; `noop` (`true`) ends at once, its supervisor's filing in the burst."""
        i = self.next()
        procs = []
        for k in range(count):
            if crew:
                args = [BIN, "dispatch", "--task", "bench-p%d-%d" % (i, k), "--scope",
                        "bench/p%d-%d/**" % (i, k), "--backend", backend, "--prompt", "x"]
            else:
                args = ["git", "worktree", "add", "-q", "-b", "bench-p%d-%d" % (i, k),
                        os.path.join(self.work, "par-%d-%d" % (i, k))]
            procs.append((time.perf_counter(), subprocess.Popen(
                args, cwd=self.repo, env=self.env, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE)))
        slowest = 0.0
        outs = []
        for k, (started, p) in enumerate(procs):
            out, err = p.communicate()
            if p.returncode != 0 and not crew:
                # `git worktree add` reads every registration while others are being
                # written, and can fail on one half made ("failed to read .../commondir"):
                # it is made again, the time counted from the first start.
                out, err = self.again(args_of(p), i, k)
            slowest = max(slowest, (time.perf_counter() - started) * 1000)
            if p.returncode != 0 and crew:
                sys.exit("failed at once: %s%s" % (out.decode(), err.decode()))
            outs.append(out)
        # Untimed: the runs end, the plain worktrees go.
        for k, out in enumerate(outs):
            if crew:
                self.settle(json.loads(out)["run"])
            else:
                git(["worktree", "remove", "--force",
                     os.path.join(self.work, "par-%d-%d" % (i, k))], self.repo, self.env)
                git(["branch", "-q", "-D", "bench-p%d-%d" % (i, k)], self.repo, self.env)
        return slowest


def args_of(process):
    return process.args


def alternately(cases, repeat):
    """Runs each (name, fn) once per round, `repeat` rounds (one warm-up first): the
    median of each."""
    for _, fn in cases:
        fn()
    samples = {name: [] for name, _ in cases}
    for _ in range(repeat):
        for name, fn in cases:
            samples[name].append(fn())
    return {name: statistics.median(v) for name, v in samples.items()}


def scale(args):
    import prune  # noqa: E402  (bench/prune.py: the generator)
    global BIN
    BIN = os.path.abspath(args.bin)
    work = args.work or tempfile.mkdtemp(prefix="crew-bench-scale-")
    os.makedirs(work, exist_ok=True)
    home = os.path.join(work, "home")
    os.makedirs(home, exist_ok=True)
    env = hermetic_env(home)
    env["PATH"] = os.path.dirname(BIN) + os.pathsep + env["PATH"]
    rows = []

    def report(label, medians, pairs):
        for name, ref in pairs:
            rows.append((label, name, medians[name], medians[name] / medians[ref], ref))
            print("| %s | %s | %.1f | %.2fx %s |" % (
                label, name, medians[name], medians[name] / medians[ref], ref), flush=True)

    try:
        print("| repository | case | median ms | against git |")
        print("|---|---|---:|---:|")
        fresh = os.path.join(work, "fresh")
        sh([os.path.join(ROOT, "git-fixtures", "plain.sh"), fresh], work, env)
        sh([BIN, "init"], fresh, env)
        configure(fresh, env)
        f = Scale(fresh, env, work)
        dispatching = args.only in ("all", "dispatch")
        integrating = args.only in ("all", "integrate")
        if dispatching:
            m = alternately([("git worktree add", f.worktree_add),
                             ("git crew dispatch", f.dispatch)], args.repeat)
            report("fresh", m, [("git worktree add", "git worktree add"),
                                ("git crew dispatch", "git worktree add")])
            fresh_dispatch = m["git crew dispatch"]
        if integrating:
            m = alternately([("git merge --no-ff", f.merge_no_ff),
                             ("git crew integrate", f.integrate)], args.repeat)
            report("fresh", m, [("git merge --no-ff", "git merge --no-ff"),
                                ("git crew integrate", "git merge --no-ff")])
            fresh_integrate = m["git crew integrate"]
        if dispatching:
            par = "%d at once, slowest" % args.parallel
            git_par = "git worktree add, " + par
            nap = "git crew dispatch, " + par + " (worker sleeps)"
            noop = "git crew dispatch, " + par + " (worker `true`)"
            m = alternately([(git_par, lambda: f.at_once(args.parallel, False)),
                             (nap, lambda: f.at_once(args.parallel, True, "nap")),
                             (noop, lambda: f.at_once(args.parallel, True, "noop"))],
                            args.rounds)
            report("fresh", m, [(git_par, git_par), (nap, git_par), (noop, git_par)])
            print("  (%d of the git worktree adds at once failed on a half-made "
                  "registration and were run again, timed from their first start)"
                  % f.retried, file=sys.stderr)

        big = os.path.join(work, "big")
        os.makedirs(big)
        repo, run = prune.template(BIN, big, env, False)
        configure(repo, env)
        copier = prune.Copier(repo, run, env)
        b = Scale(repo, env, big)
        for size in [int(s) for s in args.sizes.split(",")]:
            started = time.perf_counter()
            copier.grow(size)
            print("  (%d runs copied in %.1f s)" % (size, time.perf_counter() - started),
                  file=sys.stderr)
            label = "{:,} finished runs".format(size)
            if dispatching:
                m = alternately([("git worktree add", b.worktree_add),
                                 ("git crew dispatch", b.dispatch)], args.repeat)
                report(label, m, [("git worktree add", "git worktree add"),
                                  ("git crew dispatch", "git worktree add")])
                print("  dispatch at %s / in the fresh repository: %.2fx (target <= 1.2x)"
                      % (label, m["git crew dispatch"] / fresh_dispatch), file=sys.stderr)
            if integrating:
                m = alternately([("git merge --no-ff", b.merge_no_ff),
                                 ("git crew integrate", b.integrate)], args.repeat)
                report(label, m, [("git merge --no-ff", "git merge --no-ff"),
                                  ("git crew integrate", "git merge --no-ff")])
                print("  integrate at %s / in the fresh repository: %.2fx" % (
                    label, m["git crew integrate"] / fresh_integrate), file=sys.stderr)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=50000)
    ap.add_argument("--runs", type=int, default=8)
    ap.add_argument("--records", type=int, default=1000)
    ap.add_argument("--work")
    ap.add_argument("--scale", action="store_true",
                    help="dispatch and integrate with many runs, and dispatches at once")
    ap.add_argument("--sizes", default="1000,5000")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--parallel", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--keep", action="store_true", help="keep the scratch repositories")
    ap.add_argument("--bin", default=BIN, help="the git-crew binary (--scale)")
    ap.add_argument("--only", choices=["all", "dispatch", "integrate"], default="all",
                    help="--scale: the dispatch cases, the integrate cases, or both")
    args = ap.parse_args()
    if not os.path.exists(args.bin):
        sys.exit("build first: cargo build --release")
    if args.scale:
        scale(args)
        return
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
