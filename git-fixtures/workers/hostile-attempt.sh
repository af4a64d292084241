#!/bin/sh
# Commits a first part of its task, then tampers with what a fleet's heartbeat reads to
# push the attempt's commits while it runs, by $HOSTILE, and works on for a long time
# ($HANG_SECONDS, 60 unless set):
#  huge-ref   its branch made a symbolic ref to a name of 100000 characters;
#  blob       its branch pointing at a blob;
#  unrelated  its branch pointing at a commit that does not descend from the run's base;
#  symlinks   the commit's object in the quarantine replaced by a symlink to /dev/zero,
#             and a symlinked fanout folder of objects beside it;
#  none       nothing: its branch names the commit.
set -eu
# The commit is made without moving the branch, which moves only once the tampering is
# done: no heartbeat sees the branch before.
mkdir -p "work/$CREW_TASK"
echo "$CREW_RUN" > "work/$CREW_TASK/first.txt"
git add "work/$CREW_TASK/first.txt"
tree=$(git write-tree)
commit=$(git commit-tree -p HEAD -m "first part of $CREW_TASK" "$tree")
common=$(cd "$(git rev-parse --git-common-dir)" && pwd)
ref="$common/refs/heads/crew/$CREW_TASK/$CREW_RUN"
objects=${GIT_OBJECT_DIRECTORY:-$common/objects}
case "${HOSTILE:-none}" in
huge-ref)
	printf 'ref: refs/heads/%0100000d\n' 0 > "$ref" ;;
blob)
	blob=$(echo "not a commit" | git hash-object -w --stdin)
	echo "$blob" > "$ref" ;;
unrelated)
	empty=$(git mktree < /dev/null)
	orphan=$(git commit-tree -m "unrelated" "$empty")
	echo "$orphan" > "$ref" ;;
symlinks)
	file="$objects/$(echo "$commit" | cut -c1-2)/$(echo "$commit" | cut -c3-)"
	rm -f "$file"
	ln -s /dev/zero "$file"
	rm -rf "$objects/ff" || true
	ln -s "$common/objects/pack" "$objects/ff" || true
	echo "$commit" > "$ref" ;;
*)
	echo "$commit" > "$ref" ;;
esac
echo "tampered: ${HOSTILE:-none}" > "$CREW_MANIFEST"
sleep "${HANG_SECONDS:-60}"
