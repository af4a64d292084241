#!/bin/sh
# A worker that brings the moved target into its branch before its own work: it waits for
# the lead's signal (a `.go` file in the lead's checkout), merges main, then works.
set -eu
lead=$(cd "$CREW_WORKTREE/../../../.." && pwd)
i=0
while [ ! -f "$lead/.go" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
git merge -q --no-edit main
mkdir -p src/routes
echo "pub fn crew() {}" > src/routes/crew.rs
printf '## Result\nMerged main, added crew.rs.\n## How to verify\ntrue\n## Deferred / concerns\nNone.\n'
