#!/usr/bin/env python3
"""On-demand benchmark of prune and doctor with many finished runs (not run in CI).

    python3 bench/prune.py [--sizes 100,1000,5000] [--repeat 5] [--work DIR] [--bin PATH]
                           [--keep] [--ignored]

Makes one real run — dispatched (a scripted worker writes one file and commits), waited
for and integrated with its worktree kept (`worktree.cleanup=never`), so `prune` would
remove its worktree and branch — then copies it until the repository holds each of
--sizes finished runs. A copy is the template run's record and run folder, its seal
(`refs/crew/sealed/<run>`, the blob rewritten for the copy), its branch and
`refs/crew/attempts/<run>` (a commit of its own with the template's tree, merged into
main by a merge commit of its own, all written with one `git fast-import`), and its
worktree with its administration under `.git/worktrees/` (files copied, the index
refreshed so its stat data match the copy). Notes are not copied: neither command reads
the ledger or audit notes. Refs stay loose, as runs leave them. With --ignored, every
worktree also holds build output git ignores (`target/debug/app`, ignored through
`.git/info/exclude`), as a worktree a build or a verify ran in does.

At each size it times, alternately, `git for-each-ref` (every ref of the repository,
the reference), `git crew prune --dry-run` and `git crew doctor`, each as a separate
process, and prints the medians and the ratios to `for-each-ref` from the same run.
The scratch repository (some 150,000 files at 5,000 runs) is removed at the end unless
--keep. Needs a release build (`cargo build --release`).
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
from run import BIN, ROOT, hermetic_env, sh  # noqa: E402

TASK = "benchtemplate"


def git(args, cwd, env, stdin=None):
    out = subprocess.run(["git"] + args, cwd=cwd, env=env, input=stdin,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if out.returncode != 0:
        sys.exit("git %s failed:\n%s" % (" ".join(args), out.stderr.decode()))
    return out.stdout.decode().strip()


def crew(binary, args, cwd, env, check=True):
    out = subprocess.run([binary] + args, cwd=cwd, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if check and out.returncode != 0:
        sys.exit("git-crew %s failed (%d):\n%s%s" % (" ".join(args), out.returncode,
                                                     out.stdout.decode(), out.stderr.decode()))
    return out


def template(binary, work, env, ignored):
    """A repository with one real run, integrated with its worktree kept: (repo, run).
    With `ignored`, its worktree holds build output git ignores (`target/`)."""
    repo = os.path.join(work, "repo")
    sh([os.path.join(ROOT, "git-fixtures", "plain.sh"), repo], work, env)
    crew(binary, ["init"], repo, env)
    worker = os.path.join(ROOT, "git-fixtures", "workers", "own-file.sh")
    with open(os.path.join(repo, ".crew", "flight.toml"), "w") as f:
        f.write('version = 1\ndefault_backend = "own"\n[backends.own]\nadapter = "command"\n'
                'argv = ["%s", "{prompt_file}"]\nconcurrency = 4\ntime_budget = "60s"\n' % worker)
    git(["add", ".crew/flight.toml"], repo, env)
    git(["commit", "-q", "-m", "crew config"], repo, env)
    out = crew(binary, ["dispatch", "--task", TASK, "--scope", "work/**", "--prompt", "x"], repo, env)
    run = json.loads(out.stdout)["run"]
    crew(binary, ["wait", run, "--timeout", "60s"], repo, env, check=False)
    crew(binary, ["integrate", run, "--set", "worktree.cleanup=never"], repo, env)
    if ignored:
        with open(os.path.join(repo, ".git", "info", "exclude"), "a") as f:
            f.write("target/\n")
        build = os.path.join(repo, ".git", "crew", "worktrees", run, "target", "debug")
        os.makedirs(build)
        with open(os.path.join(build, "app"), "w") as f:
            f.write("binary\n")
    return repo, run


class Copier:
    """Copies the template run until the repository holds a given number of them."""

    def __init__(self, repo, run, env):
        self.repo, self.run, self.env = repo, run, env
        self.common = os.path.join(repo, ".git")
        self.state = os.path.join(self.common, "crew")
        # A finished template's record, or a live one's pointer (bench/run.py).
        record = os.path.join(self.state, "runs", run + ".json")
        if not os.path.exists(record):
            record = os.path.join(self.state, "live", run + ".json")
        with open(record) as f:
            self.record = f.read()
        self.branch = "crew/%s/%s" % (TASK, run)
        self.tip = git(["rev-parse", "refs/heads/" + self.branch], repo, env)
        self.tree = git(["rev-parse", self.tip + "^{tree}"], repo, env)
        self.parent = git(["rev-parse", self.tip + "^"], repo, env)
        self.seal = git(["cat-file", "blob", "refs/crew/sealed/" + run], repo, env)
        self.count = 1

    def names(self, i):
        run = "20250101-%06d-%04x" % (i, i % 0x10000)
        task = "bench-%05d" % i
        return run, task

    def rewrite(self, text, run, task):
        return text.replace(self.run, run).replace(TASK, task)

    def grow(self, total):
        want = list(range(self.count, total))
        if not want:
            return
        main_tip = git(["rev-parse", "refs/heads/main"], self.repo, self.env)
        main_tree = git(["rev-parse", "refs/heads/main^{tree}"], self.repo, self.env)
        stream = []
        ident = "bench <bench@example.com> 1767225600 +0000"
        for n, i in enumerate(want):
            run, task = self.names(i)
            seal = self.rewrite(self.seal, run, task).encode()
            stream.append(b"blob\nmark :%d\ndata %d\n" % (3 * n + 1, len(seal)) + seal + b"\n")
            msg = ("work of %s\n" % run).encode()
            stream.append(b"commit refs/heads/%s\nmark :%d\ncommitter %s\ndata %d\n%s\n"
                          b"from %s\nM 040000 %s \"\"\n\n" % (
                              ("crew/%s/%s" % (task, run)).encode(), 3 * n + 2, ident.encode(),
                              len(msg), msg, self.parent.encode(), self.tree.encode()))
            msg = ("Merge %s\n" % run).encode()
            stream.append(b"commit refs/heads/main\nmark :%d\ncommitter %s\ndata %d\n%s\n"
                          b"%smerge :%d\nM 040000 %s \"\"\n\n" % (
                              3 * n + 3, ident.encode(), len(msg), msg,
                              (b"from %s\n" % main_tip.encode()) if n == 0 else b"",
                              3 * n + 2, main_tree.encode()))
        marks = os.path.join(self.common, "bench-marks")
        subprocess.run(["git", "fast-import", "--quiet", "--export-marks=" + marks],
                       cwd=self.repo, env=self.env, input=b"".join(stream), check=True)
        ids = {}
        with open(marks) as f:
            for line in f:
                mark, oid = line.split()
                ids[int(mark[1:])] = oid
        os.remove(marks)
        updates = []
        for n, i in enumerate(want):
            run, task = self.names(i)
            updates.append("update refs/crew/sealed/%s %s\n" % (run, ids[3 * n + 1]))
            updates.append("update refs/crew/attempts/%s %s\n" % (run, ids[3 * n + 2]))
            self.copy_files(run, task)
        git(["update-ref", "--stdin"], self.repo, self.env, stdin="".join(updates).encode())
        # The worktrees' indexes, refreshed against their copied files.
        for i in want:
            run, _ = self.names(i)
            admin = os.path.join(self.common, "worktrees", run)
            wt = os.path.join(self.state, "worktrees", run)
            git(["--git-dir=" + admin, "--work-tree=" + wt, "update-index", "-q", "--refresh"],
                wt, self.env)
        self.count = total

    def grow_live(self, total, scope):
        """For a live template run: copies of its live pointer until `total` runs are live
        (copies past `total` are removed), copy i's scope `scope(i)`. A live pointer is
        what the pre-commit hook and status read of a live run; nothing else is copied."""
        live = os.path.join(self.state, "live")
        for i in range(1, max(total, self.count)):
            run, task = self.names(i)
            path = os.path.join(live, run + ".json")
            if i >= total:
                if os.path.exists(path):
                    os.remove(path)
                continue
            record = json.loads(self.rewrite(self.record, run, task))
            record["scope"] = scope(i)
            with open(path + ".tmp", "w") as f:
                json.dump(record, f, indent=2)
            os.rename(path + ".tmp", path)
        self.count = total

    def copy_files(self, run, task):
        with open(os.path.join(self.state, "runs", run + ".json"), "w") as f:
            f.write(self.rewrite(self.record, run, task))
        src_dir = os.path.join(self.state, "runs", self.run)
        if os.path.isdir(src_dir):
            shutil.copytree(src_dir, os.path.join(self.state, "runs", run), symlinks=True)
        wt = os.path.join(self.state, "worktrees", run)
        shutil.copytree(os.path.join(self.state, "worktrees", self.run), wt, symlinks=True)
        admin = os.path.join(self.common, "worktrees", run)
        shutil.copytree(os.path.join(self.common, "worktrees", self.run), admin, symlinks=True)
        with open(os.path.join(wt, ".git"), "w") as f:
            f.write("gitdir: %s\n" % admin)
        with open(os.path.join(admin, "gitdir"), "w") as f:
            f.write("%s\n" % os.path.join(wt, ".git"))
        with open(os.path.join(admin, "HEAD"), "w") as f:
            f.write("ref: refs/heads/crew/%s/%s\n" % (task, run))
        config = os.path.join(admin, "config.worktree")
        with open(config) as f:
            text = f.read()
        with open(config, "w") as f:
            f.write(self.rewrite(text, run, task))


def once(args, cwd, env):
    start = time.perf_counter()
    out = subprocess.run(args, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return (time.perf_counter() - start) * 1000, out


def measure(binary, repo, env, size, repeat):
    cases = [
        ("git for-each-ref", ["git", "for-each-ref"]),
        ("git crew prune --dry-run", [binary, "prune", "--dry-run"]),
        ("git crew doctor", [binary, "doctor"]),
    ]
    # What each says, once: every copy would go, nothing is stranded, doctor is content.
    _, out = once(cases[1][1], repo, env)
    plan = json.loads(out.stdout)
    if len(plan["removed"]) != size or plan["stranded"]:
        sys.exit("prune --dry-run did not list %d runs to remove: %s" % (size, out.stdout[:400]))
    _, out = once(cases[2][1], repo, env)
    if out.returncode != 0:
        sys.exit("doctor failed (%d): %s" % (out.returncode, out.stdout[:400]))
    samples = {name: [] for name, _ in cases}
    for _ in range(repeat):
        for name, args in cases:
            ms, out = once(args, repo, env)
            if out.returncode != 0:
                sys.exit("%s failed: %s" % (name, out.stderr.decode()))
            samples[name].append(ms)
    medians = {name: statistics.median(v) for name, v in samples.items()}
    refs = medians["git for-each-ref"]
    for name, _ in cases:
        print("| %s | %s | %.1f | %.1fx |" % (
            name, "{:,}".format(size), medians[name], medians[name] / refs), flush=True)
    return medians


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100,1000,5000")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--work")
    ap.add_argument("--bin", default=BIN)
    ap.add_argument("--keep", action="store_true", help="keep the scratch repository")
    ap.add_argument("--ignored", action="store_true",
                    help="every worktree holds build output git ignores (target/)")
    args = ap.parse_args()
    binary = os.path.abspath(args.bin)
    if not os.path.exists(binary):
        sys.exit("build first: cargo build --release")
    work = args.work or tempfile.mkdtemp(prefix="crew-bench-prune-")
    os.makedirs(work, exist_ok=True)
    home = os.path.join(work, "home")
    os.makedirs(home, exist_ok=True)
    env = hermetic_env(home)
    env["PATH"] = os.path.dirname(binary) + os.pathsep + env["PATH"]
    print("making the template run in %s ..." % work, file=sys.stderr)
    repo, run = template(binary, work, env, args.ignored)
    copier = Copier(repo, run, env)
    print("| case | finished runs | median ms | against for-each-ref |")
    print("|---|---:|---:|---:|")
    try:
        for size in [int(s) for s in args.sizes.split(",")]:
            start = time.perf_counter()
            copier.grow(size)
            print("  (%d runs copied in %.1f s)" % (size, time.perf_counter() - start),
                  file=sys.stderr)
            measure(binary, repo, env, size, args.repeat)
    finally:
        # 5,000 worktrees are some 150,000 files.
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
