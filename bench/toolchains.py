#!/usr/bin/env python3
"""On-demand benchmark of everyday toolchains in a run (not run in CI).

    python3 bench/toolchains.py [--runs 5]

  * `[worktree] setup = "npm ci"` in a run, the workers' shared npm cache warm
    (`.git/crew/worker-cache/npm`), as the run result reports it (`setup.elapsed_ms`),
    against the same `npm ci` run by hand in a fresh checkout with the lead's own warm
    cache;
  * a verify that runs a clean `cargo test` of a small crate (two dependencies, the
    crew-shared cargo cache warm, a fresh target folder each time), inside the run's
    fence (`landlock-v7+ns`: write fence, private /tmp, private view of the git dir)
    against the same verify with `--set sandbox.enabled=false`, timed by the verify
    itself.
The scratch repository lives under /var/tmp, as a user's lies outside /tmp. Needs a
release build (`cargo build --release`), cargo, node and npm, and the npm registry.
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
tempfile.tempdir = "/var/tmp"
from run import BIN, fresh_crew_repo, sh  # noqa: E402
from workenv import CARGO_TOML, LIB_RS  # noqa: E402

WORKER = """#!/bin/sh
printf '## Result\\nok\\n## How to verify\\ntrue\\n## Deferred / concerns\\nNone.\\n'
"""

PACKAGE = {
    "name": "app",
    "version": "1.0.0",
    "private": True,
    "devDependencies": {"prettier": "3.3.3", "is-number": "7.0.0", "lint-staged": "15.2.10"},
}

# Times itself: the verify's own clean `cargo test`, in milliseconds, on its stdout.
# The crew-shared cargo cache is named: an unfenced verify does not get the worker's
# variables.
VERIFY = ("t0=$(date +%s%N); CARGO_HOME=$(cd \"$(git rev-parse --git-common-dir)\" && pwd)/crew/worker-cache/cargo "
          "CARGO_TARGET_DIR=$(mktemp -d) cargo test --offline --quiet "
          "--manifest-path app/Cargo.toml >/dev/null 2>&1 || exit 1; "
          "echo \"cargo_ms $(( ($(date +%s%N) - t0) / 1000000 ))\"")


def run(repo, env, n, extra):
    out = sh([BIN, "dispatch", "--task", "t%d" % n, "--prompt", "x", "--scope", "src/**",
              "--wait"] + extra, repo, env, check=False)
    record = json.loads(out.stdout)["runs"][0]
    if record["outcome"] != "pass":
        text = sh([BIN, "transcript", record["run"], "--human"], repo, env, check=False)
        sys.exit("run failed: %s\n%s" % (record, text.stdout.decode()))
    return record


def cargo_ms(repo, env, record):
    text = sh([BIN, "transcript", record["run"], "--human"], repo, env).stdout.decode()
    values = [line.split()[1] for line in text.splitlines() if line.startswith("cargo_ms ")]
    return float(values[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    if not os.path.exists(BIN):
        sys.exit("build first: cargo build --release")
    work, env, repo = fresh_crew_repo("crew-bench-toolchains")
    lead_home = os.path.expanduser("~")
    env["RUSTUP_HOME"] = os.environ.get("RUSTUP_HOME", os.path.join(lead_home, ".rustup"))
    worker = os.path.join(work, "worker.sh")
    with open(worker, "w") as f:
        f.write(WORKER)
    os.chmod(worker, 0o755)
    app = os.path.join(repo, "app")
    os.makedirs(os.path.join(app, "src"))
    with open(os.path.join(app, "Cargo.toml"), "w") as f:
        f.write(CARGO_TOML)
    with open(os.path.join(app, "src", "lib.rs"), "w") as f:
        f.write(LIB_RS)
    with open(os.path.join(repo, "package.json"), "w") as f:
        json.dump(PACKAGE, f)
    with open(os.path.join(repo, ".gitignore"), "a") as f:
        f.write("target/\nnode_modules/\n")
    lead_cargo = dict(env, CARGO_HOME=os.environ.get("CARGO_HOME", os.path.join(lead_home, ".cargo")))
    sh(["cargo", "generate-lockfile", "--manifest-path", "app/Cargo.toml"], repo, lead_cargo)
    lead_npm = dict(env, npm_config_cache=os.path.join(work, "lead-npm-cache"))
    sh(["npm", "install", "--no-audit", "--no-fund", "--package-lock-only"], repo, lead_npm)
    with open(os.path.join(repo, ".crew", "flight.toml"), "w") as f:
        f.write('version = 1\ndefault_backend = "w"\n[backends.w]\nadapter = "command"\n'
                'argv = ["%s"]\nconcurrency = 1\ntime_budget = "10m"\n'
                '[worktree]\nsetup = "npm ci --no-audit --no-fund --prefer-offline"\n' % worker)
    sh(["git", "add", "-A"], repo, env)
    sh(["git", "commit", "-q", "-m", "bench"], repo, env)

    # Warm both caches once: the crew's (a run: its setup fills the npm cache; its verify
    # fetches the crates) and the lead's (by hand).
    n = 1
    run(repo, env, n, ["--verify", "cargo fetch --manifest-path app/Cargo.toml"])
    hand = os.path.join(work, "hand")
    sh(["git", "clone", "-q", repo, hand], work, env)
    sh(["npm", "ci", "--no-audit", "--no-fund"], hand, lead_npm)

    setup_crew, setup_hand = [], []
    for _ in range(args.runs):
        n += 1
        record = run(repo, env, n, [])
        assert record["setup"]["passed"], record["setup"]
        setup_crew.append(float(record["setup"]["elapsed_ms"]))
        shutil.rmtree(os.path.join(hand, "node_modules"), ignore_errors=True)
        t0 = time.time()
        sh(["npm", "ci", "--no-audit", "--no-fund", "--prefer-offline"], hand, lead_npm)
        setup_hand.append((time.time() - t0) * 1000)

    fenced, unfenced = [], []
    for _ in range(args.runs):
        n += 1
        record = run(repo, env, n, ["--verify", VERIFY])
        assert record["fence"].endswith("+ns"), record["fence"]
        fenced.append(cargo_ms(repo, env, record))
        n += 1
        record = run(repo, env, n, ["--verify", VERIFY, "--set", "sandbox.enabled=false"])
        assert record["fence"] == "none", record["fence"]
        unfenced.append(cargo_ms(repo, env, record))

    sc, sh_ = statistics.median(setup_crew), statistics.median(setup_hand)
    f, u = statistics.median(fenced), statistics.median(unfenced)
    print("| case | median ms | against |")
    print("|---|---|---|")
    print("| `[worktree] setup = \"npm ci\"`, workers' npm cache warm | %.0f | %.2fx |" % (sc, sc / sh_))
    print("| the same `npm ci` by hand, the lead's warm cache | %.0f | |" % sh_)
    print("| verify: clean `cargo test`, fenced (`+ns`) | %.0f | %.2fx |" % (f, f / u))
    print("| verify: clean `cargo test`, `sandbox.enabled=false` | %.0f | |" % u)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
