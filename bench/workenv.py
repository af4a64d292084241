#!/usr/bin/env python3
"""On-demand benchmark of a worker's own environment (not run in CI).

    python3 bench/workenv.py [--runs 15] [--cargo-runs 5]

  * dispatch to the worker's first line, with the worker's private environment in full
    (its own home made and seeded, the write fence, a private /tmp in its own mount
    namespace: `"fence": "landlock-v7+ns"`) and without the fence and the namespace
    (`--set sandbox.enabled=false`; the home variables are set either way);
  * a clean `cargo test` of a small crate with two dependencies, run by the worker with
    the crew-shared cargo cache warm (CARGO_HOME in `.git/crew/worker-cache/cargo`, a
    fresh target folder in the run's TMPDIR), against the same command run by hand
    with the lead's own warm CARGO_HOME and a fresh target folder.
The scratch repository lives under /var/tmp, as a user's repository would live outside
/tmp. Needs a release build (`cargo build --release`) and cargo on PATH.
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

WORKER = r"""#!/bin/sh
start=$(date +%s.%N)
echo "start $start"
if [ -n "${CARGO_RUN:-}" ]; then
  export CARGO_TARGET_DIR="$TMPDIR/target"
  t0=$(date +%s.%N)
  cargo test $CARGO_RUN --quiet --manifest-path app/Cargo.toml >/dev/null 2>"$TMPDIR/cargo.err" || { echo "cargo failed"; cat "$TMPDIR/cargo.err"; }
  t1=$(date +%s.%N)
  echo "cargo $(echo "$t1 - $t0" | bc)"
  echo "cargo_home $CARGO_HOME"
fi
printf '## Result\nok\n## How to verify\ntrue\n## Deferred / concerns\nNone.\n'
"""

CARGO_TOML = """[package]
name = "app"
version = "0.1.0"
edition = "2021"

[dependencies]
itoa = "1"
memchr = "2"
"""

LIB_RS = """pub fn digits(n: u64) -> String {
    itoa::Buffer::new().format(n).to_string()
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_and_finds() {
        let s = super::digits(1234);
        assert_eq!(memchr::memchr(b'3', s.as_bytes()), Some(2));
    }
}
"""


def fields_of(repo, env, run):
    text = sh([BIN, "transcript", run, "--human"], repo, env).stdout.decode()
    out = {}
    for line in text.splitlines():
        if line.startswith(("start ", "cargo ", "cargo_home ")):
            key, value = line.split(" ", 1)
            out[key] = value
        if line.startswith("cargo failed"):
            sys.exit("cargo failed in the worker:\n" + text)
    return out


def dispatch(repo, env, n, backend, extra):
    t0 = time.time()
    out = sh([BIN, "dispatch", "--task", "t%d" % n, "--backend", backend, "--prompt", "x",
              "--scope", "src/**", "--wait"] + extra, repo, env, check=False)
    record = json.loads(out.stdout)["runs"][0]
    return t0, record


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--cargo-runs", type=int, default=5)
    args = ap.parse_args()
    if not os.path.exists(BIN):
        sys.exit("build first: cargo build --release")
    work, env, repo = fresh_crew_repo("crew-bench-workenv")
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
    lead_cargo = dict(env, CARGO_HOME=os.environ.get("CARGO_HOME", os.path.join(lead_home, ".cargo")))
    sh(["cargo", "generate-lockfile", "--manifest-path", "app/Cargo.toml"], repo, lead_cargo)
    with open(os.path.join(repo, ".crew", "flight.toml"), "w") as f:
        f.write('version = 1\ndefault_backend = "w"\n[backends.w]\nadapter = "command"\n'
                'argv = ["%s"]\nconcurrency = 1\ntime_budget = "10m"\n'
                '[backends.warm]\nadapter = "command"\nargv = ["%s"]\nconcurrency = 1\n'
                'time_budget = "10m"\nenv = { CARGO_RUN = "--locked" }\n'
                '[backends.cargo]\nadapter = "command"\nargv = ["%s"]\nconcurrency = 1\n'
                'time_budget = "10m"\nenv = { CARGO_RUN = "--offline" }\n'
                % (worker, worker, worker))
    with open(os.path.join(repo, ".gitignore"), "a") as f:
        f.write("target/\n")
    sh(["git", "add", "-A"], repo, env)
    sh(["git", "commit", "-q", "-m", "bench"], repo, env)

    n = 0
    first_line = {}
    for label, extra in [("private", []), ("none", ["--set", "sandbox.enabled=false"])]:
        times = []
        for _ in range(args.runs):
            n += 1
            t0, record = dispatch(repo, env, n, "w", extra)
            if label == "private":
                assert record["fence"].endswith("+ns"), record["fence"]
            else:
                assert record["fence"] == "none", record["fence"]
            times.append((float(fields_of(repo, env, record["run"])["start"]) - t0) * 1000)
        first_line[label] = times

    # Warm the crew-shared cargo cache once (it downloads what it lacks), then measure.
    n += 1
    _, record = dispatch(repo, env, n, "warm", [])
    assert record["outcome"] == "pass", record
    in_worker = []
    for _ in range(args.cargo_runs):
        n += 1
        _, record = dispatch(repo, env, n, "cargo", [])
        fields = fields_of(repo, env, record["run"])
        assert "/crew/worker-cache/cargo" in fields["cargo_home"], fields
        in_worker.append(float(fields["cargo"]) * 1000)
    by_hand = []
    for i in range(args.cargo_runs):
        target = os.path.join(work, "hand-target-%d" % i)
        t0 = time.time()
        subprocess.run(["cargo", "test", "--offline", "--quiet", "--manifest-path",
                        "app/Cargo.toml"], cwd=repo, env=dict(lead_cargo, CARGO_TARGET_DIR=target),
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        by_hand.append((time.time() - t0) * 1000)
        shutil.rmtree(target, ignore_errors=True)

    p, u = statistics.median(first_line["private"]), statistics.median(first_line["none"])
    w, h = statistics.median(in_worker), statistics.median(by_hand)
    print("| case | median ms | against |")
    print("|---|---|---|")
    print("| dispatch to the worker's first line, private environment (`+ns`) | %.1f | %+.1f ms |" % (p, p - u))
    print("| dispatch to the worker's first line, no fence, no namespace | %.1f | |" % u)
    print("| clean `cargo test`, worker, warm crew-shared cache | %.1f | %.2fx |" % (w, w / h))
    print("| clean `cargo test`, by hand, the lead's warm cache | %.1f | |" % h)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
