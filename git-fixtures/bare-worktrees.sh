#!/usr/bin/env bash
# plain.sh as a bare repository with linked worktrees, the way many keep one checkout per
# branch: DIR/repo.git (bare, core.bare = true) and DIR/main, its worktree of `main`:
# bare-worktrees.sh DIR
set -eu -o pipefail
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$1"
"$here/plain.sh" "$1/origin"
git clone -q --bare "$1/origin" "$1/repo.git"
rm -rf "$1/origin"
git -C "$1/repo.git" remote remove origin
git -C "$1/repo.git" worktree add -q ../main main
