#!/bin/sh
# Commits twice itself (the second commit's hook reads the first from the run's object
# quarantine), then tries the object store: overwrite an object the repository has (by
# $OBJECTS: `existing`; in a private view of the git dir the write lands in its
# quarantine, as an object under a false name), or drop a loose object under a false name into its quarantine
# and point a commit at it (`false-name`).
set -eu
mkdir -p src/routes
echo "one $CREW_RUN" > src/routes/a.rs
git add -A && git commit -q -m one
echo "two $CREW_RUN" > src/routes/b.rs
git add -A && git commit -q -m two && echo "second commit: ok"
common=$(cd "$(git rev-parse --git-common-dir)" && pwd)
# The run's quarantine: named by GIT_OBJECT_DIRECTORY, or (in a private view of the git
# dir) the upper layer of the store, at its real place in the run's folder.
quarantine=${GIT_OBJECT_DIRECTORY:-$common/crew/runs/$CREW_RUN/objects}
case "${OBJECTS:-}" in
existing)
	blob=$(git rev-parse HEAD~2:README.md)
	file="$common/objects/$(echo "$blob" | cut -c1-2)/$(echo "$blob" | cut -c3-)"
	evil=$(printf 'EVIL\n' | git hash-object --stdin -w)
	efile="$quarantine/$(echo "$evil" | cut -c1-2)/$(echo "$evil" | cut -c3-)"
	if cp "$efile" "$file" 2>/dev/null || mv -f "$efile" "$file" 2>/dev/null; then
		echo "existing: WROTE"
	else
		echo "existing: refused"
	fi ;;
false-name)
	# A blob whose content is not what its name says, under the name of a new blob.
	real=$(printf 'real content\n' | git hash-object --stdin -w)
	fake=$(printf 'fake content\n' | git hash-object --stdin)
	rdir="$quarantine/$(echo "$real" | cut -c1-2)"
	fdir="$quarantine/$(echo "$fake" | cut -c1-2)"
	mkdir -p "$fdir"
	cp "$rdir/$(echo "$real" | cut -c3-)" "$fdir/$(echo "$fake" | cut -c3-)"
	git update-index --add --cacheinfo "100644,$fake,src/routes/fake.rs"
	git commit -q -m fake && echo "false-name: committed" ;;
esac
printf '## Result\nDone.\n## How to verify\ntrue\n## Deferred / concerns\nNone.\n'
