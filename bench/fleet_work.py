#!/usr/bin/env python3
"""A plan's wall-clock with one, two and three runners: `git crew work --remote origin`
on one, two or three clones (standing for machines) of a bare repository served by
`git daemon` on 127.0.0.1, started at once, each running at most --max workers; every
worker takes a fixed time (the scripted `slow` worker, SLOW_SECONDS). Reports the median
wall-clock of each fleet size over --repeat fresh remotes, and the speed-up over one
runner.

    cargo build --release
    python3 bench/fleet_work.py [--crew target/release/git-crew] [--tasks 12] [--seconds 2]
                                [--max 2] [--repeat 3]
"""

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "git-fixtures"


def environment(crew, home):
    env = dict(os.environ)
    env.update({
        "PATH": f"{Path(crew).resolve().parent}:{os.environ.get('PATH', '')}",
        "HOME": str(home),
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Bench",
        "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "Bench",
        "GIT_COMMITTER_EMAIL": "bench@example.com",
        "LANG": "C",
        "LC_ALL": "C",
    })
    return env


def git(env, cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True,
                          capture_output=True, text=True).stdout


def plan(tasks):
    out = '[plan]\nid = "p"\n'
    for i in range(1, tasks + 1):
        out += (f'\n[[tasks]]\nid = "t{i:02}"\nwave = 1\nscope = ["src/routes/t{i:02}.rs"]\n'
                f'prompt = "Write src/routes/t{i:02}.rs."\n')
    return out


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def daemon(base, env):
    port = free_port()
    proc = subprocess.Popen(
        ["git", "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack",
         "--listen=127.0.0.1", f"--port={port}", f"--base-path={base}", str(base)],
        env=env, stderr=subprocess.DEVNULL, start_new_session=True)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    raise SystemExit("git daemon did not start")


def stop(proc):
    try:
        os.killpg(proc.pid, 9)
    except ProcessLookupError:
        pass
    proc.wait()


def one(args, env, runners, tmp):
    """A fresh remote and `runners` clones; the wall-clock of the runners working it."""
    root = Path(tmp) / f"fleet-{runners}-{time.monotonic_ns()}"
    root.mkdir()
    origin = root / "origin"
    subprocess.run([str(FIXTURES / "crew-repo.sh"), str(origin)], env=env, check=True,
                   capture_output=True)
    (origin / ".crew/plans").mkdir(parents=True, exist_ok=True)
    (origin / ".crew/plans/p.toml").write_text(plan(args.tasks))
    git(env, origin, "add", ".crew/plans/p.toml")
    git(env, origin, "commit", "-q", "-m", "plan p")
    bare = root / "remote.git"
    git(env, root, "clone", "-q", "--bare", str(origin), str(bare))
    proc, port = daemon(root, env)
    try:
        url = f"git://127.0.0.1:{port}/remote.git"
        clones = []
        for i in range(runners):
            clone = root / f"m{i}"
            git(env, root, "clone", "-q", url, str(clone))
            subprocess.run(["git", "crew", "init", "--json"], cwd=clone, env=env, check=True,
                           capture_output=True)
            clones.append(clone)
        start = time.monotonic()
        procs = [
            subprocess.Popen(
                ["git", "crew", "work", "--plan", "p", "--remote", "origin", "--json",
                 "--max", str(args.max), "--backend", "slow", "--poll", "200ms",
                 "--set", f'backends.slow.env.SLOW_SECONDS="{args.seconds}"',
                 "--set", "backends.slow.concurrency=50",
                 "--set", f"fleet.machine=m{i}"],
                cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                text=True, start_new_session=True)
            for i, clone in enumerate(clones)
        ]
        outs = [p.communicate() for p in procs]
        wall = time.monotonic() - start
        landed = []
        for p, (stdout, stderr) in zip(procs, outs):
            if p.returncode != 0:
                raise SystemExit(f"a runner exited {p.returncode}:\n{stdout}\n{stderr}")
            landed.append(sum(1 for t in json.loads(stdout)["taken"] if t["outcome"] == "landed"))
        if sum(landed) != args.tasks:
            raise SystemExit(f"{sum(landed)} landings for {args.tasks} tasks")
        return wall, landed
    finally:
        stop(proc)
        shutil.rmtree(root, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--crew", default=str(ROOT / "target" / "release" / "git-crew"))
    parser.add_argument("--tasks", type=int, default=12)
    parser.add_argument("--seconds", type=int, default=2)
    parser.add_argument("--max", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="crew-fleet-bench-") as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        env = environment(args.crew, home)
        rows = {}
        for runners in (1, 2, 3):
            walls, shares = [], []
            for _ in range(args.repeat):
                wall, landed = one(args, env, runners, tmp)
                walls.append(wall)
                shares.append(landed)
            rows[runners] = {"median_s": statistics.median(walls), "runs_s": walls,
                             "landed_per_runner": shares}
    base = rows[1]["median_s"]
    ideal = args.tasks * args.seconds / args.max
    result = {
        "tasks": args.tasks, "worker_seconds": args.seconds, "max_per_runner": args.max,
        "repeat": args.repeat,
        "fleets": {
            str(n): {**row, "speed_up": base / row["median_s"],
                     "ideal_s": ideal / n} for n, row in rows.items()
        },
    }
    print(json.dumps(result, indent=2))
    print()
    print("| runners | median s | speed-up | ideal s (work alone) |")
    print("|---:|---:|---:|---:|")
    for n, row in rows.items():
        print(f"| {n} | {row['median_s']:.1f} | {base / row['median_s']:.2f}x | {ideal / n:.1f} |")


if __name__ == "__main__":
    main()
