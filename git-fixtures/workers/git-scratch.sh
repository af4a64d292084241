#!/bin/sh
# A worker that uses git the way tools do beyond its branch: it stashes and pops (as
# lint-staged's backup does), tags, makes a scratch branch, and builds a scratch
# repository in its temp folder, then commits its work. Everything it did prints to
# stderr, and it fails when any step fails.
set -eu
mkdir -p src/routes
echo "pub fn crew() {}" > src/routes/crew.rs
git add src/routes/crew.rs
echo "// wip" >> src/lib.rs
git stash push -q -m "worker stash" >&2
git stash list >&2
git stash pop -q >&2
git checkout -q -- src/lib.rs
git tag worker-tag >&2
git branch worker-scratch >&2
git branch -D worker-scratch >&2
git commit -q -m "add the crew route" >&2
scratch="${TMPDIR:-/tmp}/scratch-repo"
git init -q "$scratch"
echo scratch > "$scratch/f"
git -C "$scratch" add f
git -C "$scratch" -c user.name=w -c user.email=w@example.com commit -q -m scratch >&2
git -C "$scratch" rev-parse HEAD > "${TMPDIR:-/tmp}/scratch-head"
echo "scratch commit $(cat "${TMPDIR:-/tmp}/scratch-head")" >&2
cat <<REPLY
## Result
Added src/routes/crew.rs.

## How to verify
test -f src/routes/crew.rs

## Deferred / concerns
None.
REPLY
