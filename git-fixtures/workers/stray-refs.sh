#!/bin/sh
# Does its task, and makes refs in its task's ref folder beside its branch:
# crew/<task>/hotfix holding a change outside its scope (a commit made off its branch,
# past the hooks), and crew/<task>/a/b in nested folders. With STRAY_HANG set it then
# waits to be killed instead of replying (TMPDIR/strays-made says the refs are there).
set -eu
index="$TMPDIR/stray-index"
GIT_INDEX_FILE=$index git read-tree HEAD
blob=$(echo "hotfix by a worker" | git hash-object -w --stdin)
GIT_INDEX_FILE=$index git update-index --add --cacheinfo "100644,$blob,README.md"
tree=$(GIT_INDEX_FILE=$index git write-tree)
hotfix=$(git commit-tree "$tree" -p HEAD -m "hotfix outside the scope")
git branch "crew/$CREW_TASK/hotfix" "$hotfix"
blob=$(echo "nested" | git hash-object -w --stdin)
GIT_INDEX_FILE=$index git update-index --add --cacheinfo "100644,$blob,docs/nested.md"
tree=$(GIT_INDEX_FILE=$index git write-tree)
nested=$(git commit-tree "$tree" -p "$hotfix" -m "nested")
git update-ref "refs/heads/crew/$CREW_TASK/a/b" "$nested"
echo "$hotfix $nested" > "$TMPDIR/strays-made"
if [ -n "${STRAY_HANG:-}" ]; then
	sleep 300 &
	wait
fi
mkdir -p src/routes
echo "pub fn crew() {}" > src/routes/crew.rs
printf '## Result\nAdded src/routes/crew.rs.\n## How to verify\ntest -f src/routes/crew.rs\n## Deferred / concerns\nNone.\n'
