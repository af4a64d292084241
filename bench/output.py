#!/usr/bin/env python3
"""On-demand benchmark of bounded output (not run in CI).

    python3 bench/output.py [--mb 400] [--yes-seconds 8]

  * a worker whose reply is --mb megabytes of output and then its footer: the
    supervisor's peak resident memory (VmHWM, polled from /proc while it runs), what is
    left on disk for the attempt, and whether the footer still decided the run;
  * a worker running `yes` until its time budget ends: what is left on disk.
Both with the default `fences.max_output` (8 MiB per stream and attempt). Needs a
release build (`cargo build --release`).
"""

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import BIN, fresh_crew_repo, sh  # noqa: E402

WORKER = r"""#!/bin/sh
mkdir -p src && echo x > src/out.txt
if [ -n "${FLOOD_MB:-}" ]; then
  yes "a line a flooding worker prints" | head -c "${FLOOD_MB}000000"
  printf '\n## Result\nflooded\n## How to verify\ntrue\n## Deferred / concerns\nNone.\n'
else
  yes "a line a flooding worker prints"
fi
"""


def supervisor_peak(repo, env, run):
    """Polls the run's supervisor until it exits; its peak RSS in MiB."""
    pid, peak = None, 0
    while True:
        status = json.loads(sh([BIN, "status", run, "--json"], repo, env).stdout)["runs"][0]
        pid = status.get("supervisor_pid") or pid
        if status["phase"] in ("done", "failed", "timed-out", "rejected", "abandoned"):
            break
        if pid:
            try:
                with open("/proc/%d/status" % pid) as f:
                    for line in f:
                        if line.startswith("VmHWM:"):
                            peak = max(peak, int(line.split()[1]) // 1024)
            except FileNotFoundError:
                pass
        time.sleep(0.05)
    return peak, status


def disk(repo, status):
    run_dir = os.path.join(repo, ".git", "crew", "runs", status["run"])
    total = os.path.getsize(status["transcript"]) if status.get("transcript") else 0
    for name in os.listdir(run_dir):
        if name.startswith("attempt-"):
            total += os.path.getsize(os.path.join(run_dir, name))
    return total / (1024 * 1024)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=400)
    ap.add_argument("--yes-seconds", type=int, default=8)
    args = ap.parse_args()
    if not os.path.exists(BIN):
        sys.exit("build first: cargo build --release")
    work, env, repo = fresh_crew_repo("crew-bench-output")
    worker = os.path.join(work, "flood.sh")
    with open(worker, "w") as f:
        f.write(WORKER)
    os.chmod(worker, 0o755)
    with open(os.path.join(repo, ".crew", "flight.toml"), "a") as f:
        f.write('\n[backends.flood]\nadapter = "command"\nargv = ["%s"]\n'
                'concurrency = 2\ntime_budget = "10m"\n' % worker)

    def dispatch(task, extra):
        out = sh([BIN, "dispatch", "--task", task, "--backend", "flood", "--prompt", "x",
                  "--scope", "src/**", "--json"] + extra, repo, env)
        return json.loads(out.stdout)["run"]

    t0 = time.time()
    run = dispatch("reply", ["--set", 'backends.flood.env.FLOOD_MB="%d"' % args.mb])
    peak, status = supervisor_peak(repo, env, run)
    took = time.time() - t0
    print("%d MB reply: supervisor peak RSS %d MiB, %.1f MiB on disk, outcome %s, "
          "footer %r, %.1f s" % (args.mb, peak, disk(repo, status), status["outcome"],
                                  (status.get("footer") or {}).get("result"), took))
    run = dispatch("yes", ["--set", 'backends.flood.time_budget="%ds"' % args.yes_seconds])
    peak, status = supervisor_peak(repo, env, run)
    print("`yes` for %d s: supervisor peak RSS %d MiB, %.1f MiB on disk, outcome %s"
          % (args.yes_seconds, peak, disk(repo, status), status["outcome"]))


if __name__ == "__main__":
    main()
