#!/usr/bin/env python3
"""On-demand benchmark of the kernel write fence (not run in CI).

    python3 bench/fence.py [--runs 15] [--modules 400]

Side by side, fenced (Landlock) and with `--set sandbox.enabled=false`:
  * `git crew dispatch --wait` of a worker that only replies (dispatch, supervisor,
    worker start, audit, record): what the fence adds to a run's start and end;
  * the worker's own start: the time from the supervisor's spawn to the worker's first
    instruction is not visible from outside, so the worker prints its start time and the
    bench subtracts the moment dispatch returned;
  * a build inside the worker: `python3 -m compileall` of --modules modules and a
    `unittest` run that writes its caches and temp files, timed by the worker itself.
Needs a release build (`cargo build --release`).
"""

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import BIN, fresh_crew_repo, sh  # noqa: E402

WORKER = r"""#!/bin/sh
start=$(date +%s.%N)
if [ "${BUILD:-0}" = 1 ]; then
  t0=$(date +%s.%N)
  python3 -m compileall -q pkg >/dev/null
  python3 -m unittest discover -q -s pkg -p 'test_*.py' >/dev/null 2>&1
  t1=$(date +%s.%N)
  echo "build $(echo "$t1 - $t0" | bc)"
fi
echo "start $start"
printf '## Result\nok\n## How to verify\ntrue\n## Deferred / concerns\nNone.\n'
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--modules", type=int, default=400)
    args = ap.parse_args()
    if not os.path.exists(BIN):
        sys.exit("build first: cargo build --release")
    work, env, repo = fresh_crew_repo("crew-bench-fence")
    worker = os.path.join(work, "worker.sh")
    with open(worker, "w") as f:
        f.write(WORKER)
    os.chmod(worker, 0o755)
    pkg = os.path.join(repo, "pkg")
    os.makedirs(pkg)
    for i in range(args.modules):
        with open(os.path.join(pkg, "m%04d.py" % i), "w") as f:
            f.write("def f%d(x):\n    return x + %d\n" % (i, i))
    with open(os.path.join(pkg, "test_all.py"), "w") as f:
        f.write("import tempfile, unittest\nclass T(unittest.TestCase):\n"
                "    def test_tmp(self):\n        with tempfile.NamedTemporaryFile() as t:\n"
                "            t.write(b'x')\n")
    with open(os.path.join(repo, ".crew", "flight.toml"), "w") as f:
        f.write('version = 1\ndefault_backend = "w"\n[backends.w]\nadapter = "command"\n'
                'argv = ["%s"]\nconcurrency = 1\ntime_budget = "5m"\n'
                '[backends.b]\nadapter = "command"\nargv = ["%s"]\nconcurrency = 1\n'
                'time_budget = "5m"\nenv = { BUILD = "1" }\n' % (worker, worker))
    sh(["git", "add", "-A"], repo, env)
    sh(["git", "commit", "-q", "-m", "bench"], repo, env)

    results = {}
    n = 0
    for label, extra in [("fenced", []), ("unfenced", ["--set", "sandbox.enabled=false"])]:
        total, start, build = [], [], []
        for backend in ["w"] * args.runs + ["b"] * max(3, args.runs // 3):
            n += 1
            t0 = time.time()
            out = sh([BIN, "dispatch", "--task", "t%d" % n, "--backend", backend, "--prompt", "x",
                      "--scope", "src/**", "--wait"] + extra, repo, env, check=False)
            t1 = time.time()
            record = json.loads(out.stdout)["runs"][0]
            assert record["fence"] == ("none" if extra else record["fence"]), record
            text = sh([BIN, "transcript", record["run"], "--human"], repo, env).stdout.decode()
            fields = dict(line.split(" ", 1) for line in text.splitlines()
                          if line.startswith(("start ", "build ")))
            if backend == "w":
                total.append((t1 - t0) * 1000)
                start.append((float(fields["start"]) - t0) * 1000)
            else:
                build.append(float(fields["build"]) * 1000)
        results[label] = (total, start, build)
    print("| case | fenced median ms | unfenced median ms |")
    print("|---|---|---|")
    names = ["`dispatch --wait`, reply-only worker", "dispatch to the worker's first line",
             "compileall %d modules + unittest, inside the worker" % args.modules]
    for i, name in enumerate(names):
        f = statistics.median(results["fenced"][i])
        u = statistics.median(results["unfenced"][i])
        print("| %s | %.1f | %.1f |" % (name, f, u))


if __name__ == "__main__":
    main()
